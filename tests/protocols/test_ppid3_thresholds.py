"""PPID3 with numbers split at a threshold (``x <= t`` / ``x > t``, :mod:`mpc.learners.id3`'s
rules): both ways of counting grow the plain learner's tree with ``splits="threshold"`` for
every helper and 2-5 sites, on random numeric tables with ties, repeated values, a single
value and missing values, with exact thresholds and with bins' cut points."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import Partition, Table, partition, split_vertically
from mpc.learners.criteria import CRITERIA
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import to_json
from mpc.runtime.local import run_in_memory
from mpc.runtime.view import ViewRecorder
from protocols.engine.dealing import Sites
from protocols.engine.preprocessing import PREPROCESSING
from protocols.engine.ring import Ring
from protocols.ppid3.distribution_counts import SiteView, table_view
from protocols.ppid3.levels import DEALER, REVEALS, ppid3_levels, serve_level_dealer
from protocols.ppid3.ppid3 import assemble, check_tree_equal

from ..views import canonical_view, differences, joint_failures, uniformity_failures
from .test_reveal_tree import own_randomness


def threshold_views(table: Table, part: Partition, bins: int | None) -> list[SiteView]:
    """Every site's view, its continuous columns split at a threshold."""
    out = []
    for i, sd in enumerate(split_vertically(table, part)):
        out.append(table_view(f"site{i + 1}", sd.table, sd.tids, with_class=i == part.class_site,
                              thresholds=True, bins=bins))  # fmt: skip
    return out


def run_thresholds(
    table: Table, part: Partition, *, reveal: str, helper: str, bins: int | None = None,
    max_depth: int | None = None, mss: int | None = None, criterion: str | None = None,
    record: bool = False, fixed: dict[str, bytes] | None = None,
    shuffle_from: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    """PPID3 level by level in memory with threshold splits; the plain tree beside it
    (``shuffle_from``: numbers of more codes counted by shuffles, with ``--reveal tree``)."""
    views = threshold_views(table, part, bins)
    names = [v.name for v in views]
    grower = REVEALS[reveal]
    crit = criterion or grower.default_criterion
    parties = [*names, DEALER] if helper == "dealer" else names

    async def program(p: Any) -> Any:
        with own_randomness(p.name, fixed):
            return await party_program(p)

    async def party_program(p: Any) -> Any:
        if record:
            p.view = ViewRecorder()
        if p.name == DEALER:
            return await serve_level_dealer(p, names, dtype=Ring.for_rows(table.n_rows).dtype)
        tree, _ = await ppid3_levels(
            Sites(p, names).as_party(), views[names.index(p.name)],
            class_site=names[part.class_site], attribute_counts=[len(s) for s in part.sites],
            preprocessing=PREPROCESSING[helper], max_depth=max_depth, min_samples_split=mss,
            reveal=grower, criterion=CRITERIA[crit], shuffle_from=shuffle_from,
        )  # fmt: skip
        return tree

    results, by_name = asyncio.run(run_in_memory(parties, program, timeout=120))
    results.pop(DEALER, None)
    view = assemble({n: r.to_dict() for n, r in results.items()},
                    {n: i for i, n in enumerate(names)})  # fmt: skip
    site_of = {a: i for i, s in enumerate(part.sites) for a in s}
    plain = ID3Classifier(splits="threshold", bins=bins, max_depth=max_depth,
                          min_samples_split=mss, criterion=crit)  # fmt: skip
    plain.fit(table, attribute_order=list(part.attributes), sites=site_of)
    return {"view": view, "plain": to_json(plain.tree_), "parties": by_name}


@st.composite
def numeric_tables(draw: st.DrawFn) -> tuple[Table, Partition]:
    """Random tables of numbers (few distinct values: ties and repeats; sometimes one value;
    some missing) and a nominal column or none, over 2-5 sites."""
    n = draw(st.integers(1, 30))
    n_num = draw(st.integers(1, 3))
    n_nom = draw(st.integers(2 - min(n_num, 2), 2))  # two attributes at least
    cols: list[Any] = []
    kinds = []
    for _ in range(n_num):
        distinct = draw(st.integers(1, 6))
        values = draw(st.lists(st.integers(0, distinct - 1), min_size=n, max_size=n))
        x = np.asarray(values, dtype=np.float64) * 1.5 - 2.0
        missing = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        if draw(st.booleans()):
            x[np.asarray(missing, dtype=bool)] = np.nan
        cols.append(x)
        kinds.append("continuous")
    for j in range(n_nom):
        cols.append(np.asarray(draw(st.lists(st.sampled_from(["u", "v", "w"][: j + 2]),
                                             min_size=n, max_size=n)), dtype=object))  # fmt: skip
        kinds.append("nominal")
    n_classes = draw(st.integers(2, 3))
    y = np.asarray(draw(st.lists(st.sampled_from([f"c{c}" for c in range(n_classes)]),
                                 min_size=n, max_size=n)), dtype=object)  # fmt: skip
    attrs = [f"a{j}" for j in range(len(cols))]
    table = Table("numbers", attrs, kinds, cols, y, "class", "hypothesis")
    k = draw(st.integers(2, min(5, len(attrs))))
    scheme = draw(st.sampled_from(["contiguous", "round-robin", "random:1"]))
    return table, partition(attrs, k, scheme, class_site=draw(st.integers(0, k - 1)))


def _assert_same(out: dict[str, Any], *, counts: bool) -> None:
    assert check_tree_equal(out["view"], out["plain"], counts=counts), (out["view"], out["plain"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numeric_tables(), st.sampled_from([None, 2]), st.sampled_from([None, 3]),
       st.sampled_from([None, 3]))  # fmt: skip
def test_the_paper_s_counts_grow_the_plain_threshold_tree(
    case: tuple[Table, Partition], max_depth: int | None, bins: int | None, mss: int | None
) -> None:
    table, part = case
    helper = "sites" if part.k >= 3 else "dealer"
    out = run_thresholds(table, part, reveal="counts", helper=helper, bins=bins,
                         max_depth=max_depth, mss=mss)  # fmt: skip
    _assert_same(out, counts=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numeric_tables(), st.sampled_from([None, 2]), st.sampled_from([None, 3]),
       st.sampled_from(["gini", "entropy-fixed"]), st.sampled_from([None, 0, 3]))  # fmt: skip
def test_only_the_tree_grows_the_plain_threshold_tree(
    case: tuple[Table, Partition], max_depth: int | None, bins: int | None, criterion: str,
    shuffle_from: int | None,
) -> None:  # fmt: skip
    """With one-hot columns, and with the numbers (all, or those of more than 3 codes)
    counted by shuffles."""
    table, part = case
    helper = "sites" if part.k >= 3 else "dealer"
    out = run_thresholds(table, part, reveal="tree", helper=helper, bins=bins,
                         max_depth=max_depth, criterion=criterion,
                         shuffle_from=shuffle_from)  # fmt: skip
    _assert_same(out, counts=False)


_SITES_AND_HELPERS = [(2, "dealer"), (2, "ot"), (3, "sites"), (3, "ot"), (5, "sites")]


@pytest.mark.parametrize(
    ("reveal", "k", "helper"),
    [(r, k, h) for r in ("counts", "tree") for k, h in _SITES_AND_HELPERS]
    # a shuffle has a helper: with ot the numbers always take one-hot columns
    + [("tree-shuffled", k, h) for k, h in _SITES_AND_HELPERS if h != "ot"],
)
def test_every_helper_and_2_to_5_sites_on_numbers(reveal: str, k: int, helper: str) -> None:
    rng = np.random.default_rng(k)
    n = 60
    cols: list[Any] = [np.round(rng.normal(size=n), 1) for _ in range(4)]
    cols[0][:5] = np.nan
    cols.append(rng.choice(np.array(["p", "q", "r"], dtype=object), n))
    y = np.where(cols[1] + 0.5 * np.nan_to_num(cols[0]) > 0, "yes", "no").astype(object)
    y[rng.random(n) < 0.1] = "maybe"
    attrs = [f"a{j}" for j in range(5)]
    table = Table("numbers", attrs, ["continuous"] * 4 + ["nominal"], cols, y, "class", "test")
    part = partition(attrs, k, "round-robin", class_site=k - 1)
    shuffles = 0 if reveal == "tree-shuffled" else None
    out = run_thresholds(table, part, reveal=reveal.removesuffix("-shuffled"), helper=helper,
                         max_depth=4, shuffle_from=shuffles)  # fmt: skip
    _assert_same(out, counts=reveal == "counts")
    depth_of_numbers = str(out["view"]).count("'threshold'")
    assert depth_of_numbers >= 3  # a number split, and split again below


def _threshold_twin(seed: int) -> tuple[Table, Table, Partition]:
    """Two numeric tables with different class counts but the same Gini threshold tree; the
    class site (the third, which folds its shares into ``p0``'s and ``p1``'s) holds a number
    of many thresholds, so that its shares of their two sides are many words."""
    rng = np.random.default_rng(seed)
    attrs = ["a0", "a1", "a2"]
    kinds = ["nominal", "continuous", "continuous"]
    for _ in range(500):
        cols: list[Any] = [rng.choice(["u", "v"], size=40).astype(object)]
        cols += [rng.integers(0, 12, 40).astype(np.float64) for _ in range(2)]
        y = rng.choice(["no", "yes"], size=40).astype(object)
        first = Table("twin", attrs, kinds, cols, y, "class", "test")
        y2 = y.copy()
        flip = rng.integers(0, 40, size=3)
        y2[flip] = np.where(y2[flip] == "yes", "no", "yes")
        second = Table("twin", attrs, kinds, [c.copy() for c in cols], y2, "class", "test")
        part = partition(attrs, 3, class_site=2)
        site_of = {a: i for i, s in enumerate(part.sites) for a in s}
        learner = ID3Classifier(max_depth=2, criterion="gini", splits="threshold", bins=None)
        trees = [to_json(learner.fit(tab, attribute_order=attrs, sites=site_of).tree_)
                 for tab in (first, second)]  # fmt: skip
        if (check_tree_equal(trees[0], trees[1], counts=False) and (y2 != y).any()
                and "threshold" in trees[0]):  # fmt: skip
            return first, second, part
    raise AssertionError("no twin found")


#: the helpers of the view tests; "-shuffled": every number counted by shuffles
VIEW_HELPERS = ["dealer", "sites", "ot", "dealer-shuffled", "sites-shuffled"]


def _helper(case: str) -> tuple[str, int | None]:
    return case.removesuffix("-shuffled"), 0 if case.endswith("-shuffled") else None


@pytest.mark.parametrize("case", VIEW_HELPERS)
def test_two_numeric_tables_with_the_same_tree_look_the_same_to_every_party(
    case: str,
) -> None:
    """``--reveal tree`` with threshold splits: different class counts on each side of
    every threshold, the same tree; every party's public and declared messages, uniform
    skeletons and ledger are the same, and every uniform payload passes the chi-square test:
    the prefix sums stay on shares, and only the chosen threshold is opened."""
    first, second, part = _threshold_twin(3)
    helper, shuffles = _helper(case)
    a, b = (run_thresholds(tab, part, reveal="tree", helper=helper, max_depth=2, record=True,
                           shuffle_from=shuffles) for tab in (first, second))  # fmt: skip
    _assert_same(a, counts=False)
    for name in a["parties"]:
        ra, rb = a["parties"][name].report(), b["parties"][name].report()
        assert differences(canonical_view(ra), canonical_view(rb)) == [], name
        assert uniformity_failures(ra) == [] and uniformity_failures(rb) == [], name
        assert a["parties"][name].ledger.to_list() == b["parties"][name].ledger.to_list()


@pytest.mark.parametrize("case", VIEW_HELPERS)
def test_the_threshold_twins_look_the_same_to_each_party_beside_its_own_randomness(
    case: str,
) -> None:
    """The joint-view test of threshold splits: with one party's randomness fixed, its
    public and declared messages and ledger are the same for both twins, and its uniform
    payloads neither repeat between them nor differ in distribution (a share that is uniform
    alone but repeats beside the receiver's own randomness fails here)."""
    first, second, part = _threshold_twin(3)
    helper, shuffles = _helper(case)
    seed = bytes(range(32))
    names = [f"site{i + 1}" for i in range(part.k)] + ([DEALER] if helper == "dealer" else [])
    failures = {}
    for name in names:
        ra, rb = (
            run_thresholds(tab, part, reveal="tree", helper=helper, max_depth=2, record=True,
                           fixed={name: seed}, shuffle_from=shuffles)["parties"][name].report()
            for tab in (first, second)
        )  # fmt: skip
        bad = differences(canonical_view(ra), canonical_view(rb)) + joint_failures(ra, rb)
        bad += uniformity_failures(ra) + uniformity_failures(rb)
        if bad:
            failures[name] = bad
    assert failures == {}


def test_a_number_of_too_many_thresholds_is_refused_naming_it(monkeypatch: Any) -> None:
    """A column whose every distinct value is a candidate and whose one-hot columns would be
    too large is refused before any message, naming it and the bins that do it."""
    from protocols.ppid3 import level_grower

    monkeypatch.setattr(level_grower, "MAX_ONE_HOT", 500)
    n = 40
    x = np.arange(n, dtype=np.float64)
    y = np.asarray(["a", "b"] * (n // 2), dtype=object)
    cols: list[Any] = [x, np.asarray(["u", "v"] * (n // 2), dtype=object)]
    table = Table("wide", ["id_like", "kind"], ["continuous", "nominal"], cols, y, "class", "t")
    part = partition(["id_like", "kind"], 2, class_site=1)
    with pytest.raises(Exception, match=r"'id_like' has 39 candidate thresholds.*--bins 256"):
        run_thresholds(table, part, reveal="tree", helper="dealer")
    with pytest.raises(Exception, match=r"'id_like' has 39.*count them by shuffles"):
        run_thresholds(table, part, reveal="tree", helper="ot", shuffle_from=0)
    out = run_thresholds(table, part, reveal="tree", helper="dealer", bins=4)
    _assert_same(out, counts=False)
    # counted by shuffles, every distinct value stays a candidate: no one-hot columns at all
    numbered = Table("wide", ["id_like", "kind"], ["continuous", "nominal"], cols,
                     np.where(x < 13, "a", "b").astype(object), "class", "t")  # fmt: skip
    out = run_thresholds(numbered, part, reveal="tree", helper="dealer", shuffle_from=0)
    _assert_same(out, counts=False)
    assert "'threshold': 12.0" in str(out["view"])


@pytest.mark.parametrize("helper", ["dealer", "ot"])
def test_a_level_s_argmax_in_batches_of_few_candidates_grows_the_same_tree(
    helper: str, monkeypatch: Any
) -> None:
    """A level's nodes in groups of at most 3 candidates per batch of the argmax (one node a
    batch, whatever its candidates): the plain learner's tree still."""
    from protocols.ppid3 import reveal_tree

    monkeypatch.setattr(reveal_tree, "CANDIDATES_PER_BATCH", 3)
    rng = np.random.default_rng(5)
    n = 50
    cols: list[Any] = [np.round(rng.normal(size=n), 1) for _ in range(2)]
    cols.append(rng.choice(np.array(["p", "q", "r"], dtype=object), n))
    y = np.where(cols[0] + 0.3 * cols[1] > 0, "yes", "no").astype(object)
    table = Table("numbers", ["a0", "a1", "a2"], ["continuous", "continuous", "nominal"], cols,
                  y, "class", "test")  # fmt: skip
    part = partition(["a0", "a1", "a2"], 2, "round-robin", class_site=1)
    out = run_thresholds(table, part, reveal="tree", helper=helper, max_depth=3)
    _assert_same(out, counts=False)
    assert str(out["view"]).count("'threshold'") >= 2
