"""PPID3 revealing only the tree (``protocols.ppid3.reveal_tree``, ``--reveal tree``): the tree
equals plain ID3 with Gini for every helper and 2-5 sites; every ledger holds the tree's
decisions only; two tables with the same tree but different counts look the same to every
party; the Gini fractions on shares equal the plain scores."""

from __future__ import annotations

import asyncio
import contextlib
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mpc.crypto import randomness
from mpc.datasets import Partition, Table, partition, weather
from mpc.errors import ConfigError
from mpc.learners.criteria import CRITERIA, FractionCriterion
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import Split, to_json
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.transport import InMemoryNetwork
from mpc.runtime.view import ViewRecorder
from protocols.engine.dealing import Sites
from protocols.engine.preprocessing import PREPROCESSING, LocalPreprocessing, preprocessing_of
from protocols.engine.ring import RING64, Ring
from protocols.engine.session import Session
from protocols.ppid3 import oblivious_classify
from protocols.ppid3.fraction_argmax import argmax_plan, fraction_argmax
from protocols.ppid3.levels import DEALER, REVEALS, ppid3_levels, serve_level_dealer
from protocols.ppid3.oblivious_classify import classify_obliviously
from protocols.ppid3.ppid3 import assemble, check_tree_equal
from protocols.ppid3.reveal_tree import SharedCounts
from protocols.ppid3.shared_scores import final_rings, fraction_rings, fraction_sums

from .. import datasets
from ..views import canonical_view, differences, uniformity_failures
from .test_ppid3 import _views, tables

#: what a site's ledger may hold in this mode: the tree's decisions and public structure
SITE_LABELS = {"ppid3/structure", "reveal/stops", "reveal/labels", "reveal/splits",
               "fast-counts/helped", "fast-counts/done"}  # fmt: skip


def run_reveal(
    table: Table, part: Partition, *, helper: str = "dealer", max_depth: int | None = None,
    mss: int | None = None, record: bool = False, criterion: str = "gini",
    fixed: dict[str, bytes] | None = None, row_block: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    """``--reveal tree`` in memory; the plain tree with the same criterion beside it; ``opened``:
    what every party other than the first two sites could open by adding the two messages they send
    it under one tag (:func:`_tap_openings`). ``fixed``: the parties whose randomness is fixed
    (:func:`mpc.crypto.randomness.fixed`), with their seeds."""
    views = _views(table, part)
    names = [v.name for v in views]
    class_site = names[part.class_site]
    parties = [*names, DEALER] if helper == "dealer" else names

    async def program(p: Any) -> Any:
        with own_randomness(p.name, fixed):
            return await party_program(p)

    async def party_program(p: Any) -> Any:
        if record:
            p.view = ViewRecorder()
        if p.name == DEALER:
            return await serve_level_dealer(p, names, dtype=Ring.for_rows(table.n_rows).dtype)
        view = views[names.index(p.name)]
        tree, _ = await ppid3_levels(
            Sites(p, names).as_party(), view, class_site=class_site,
            attribute_counts=[len(s) for s in part.sites], preprocessing=PREPROCESSING[helper],
            max_depth=max_depth, min_samples_split=mss, reveal=SharedCounts,
            criterion=CRITERIA[criterion], row_block=row_block,
        )  # fmt: skip
        return tree

    network = InMemoryNetwork()
    opened = _tap_openings(network, names[0], names[1])
    results, by_name = asyncio.run(run_in_memory(parties, program, timeout=120, network=network))
    results.pop(DEALER, None)
    view = assemble(
        {n: r.to_dict() for n, r in results.items()}, {n: i for i, n in enumerate(names)}
    )
    site_of = {a: i for i, s in enumerate(part.sites) for a in s}
    plain = ID3Classifier(max_depth=max_depth, min_samples_split=mss, criterion=criterion).fit(
        table, attribute_order=list(part.attributes), sites=site_of
    )
    return {"view": view, "plain": to_json(plain.tree_), "parties": by_name, "names": names,
            "opened": opened}  # fmt: skip


def own_randomness(name: str, fixed: dict[str, bytes] | None) -> Any:
    """The party ``name``'s randomness fixed to its seed in ``fixed``, or its own."""
    seed = (fixed or {}).get(name)
    return contextlib.nullcontext() if seed is None else randomness.fixed(seed)


def _tap_openings(network: InMemoryNetwork, p0: str, p1: str) -> dict[tuple[str, str], Any]:
    """Every value a party other than ``p0`` and ``p1`` can open: for each (receiver, tag)
    under which it receives an array from both, their sum as integers mod ``2^(64 limbs)``
    (both hold additive shares in a ring of 64-bit limbs)."""
    got: dict[tuple[str, str], dict[str, Any]] = {}
    opened: dict[tuple[str, str], Any] = {}

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        body = env.body
        if sender not in (p0, p1) or receiver in (p0, p1) or not isinstance(body, dict):
            return
        if not isinstance(body.get("parts"), list) or len(body.get("shape", [])) != 2:
            return
        words = np.concatenate(body["parts"]).reshape(body["shape"])
        ints = [sum(int(w) << (64 * i) for i, w in enumerate(row)) for row in words]
        seen = got.setdefault((receiver, env.tag), {})
        seen[sender] = ints
        if len(seen) == 2:
            bits = 64 * words.shape[1]
            opened[(receiver, env.tag)] = [(a + b) % 2**bits for a, b in
                                           zip(seen[p0], seen[p1], strict=True)]  # fmt: skip

    network.taps.append(tap)
    return opened


def _assert_same_tree(out: dict[str, Any]) -> None:
    assert check_tree_equal(out["view"], out["plain"], counts=False), (out["view"], out["plain"])


def _assert_ledgers(out: dict[str, Any]) -> None:
    """Every site's ledger holds the tree's decisions only, the same at every site; the
    dealer's, requests."""
    decisions = None
    for name, party in out["parties"].items():
        labels = set(party.ledger.labels())
        if name == DEALER:
            assert labels <= {"fast-counts/request", "fast-counts/done"}, labels
            continue
        # with --helper ot, the sizes of the oblivious transfers and the pair's public requests
        sizes = {x for x in labels if x.startswith("ot/")} | {"levels/ot-request"}
        assert labels <= SITE_LABELS | sizes, labels - SITE_LABELS - sizes
        mine = [(e["label"], e["value"]) for e in party.ledger.to_list()
                if e["label"].startswith("reveal/")]  # fmt: skip
        assert decisions is None or mine == decisions, name
        decisions = mine


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([None, 1, 2]), st.sampled_from([None, 3]))
def test_reveal_tree_equals_plain_gini_on_random_tables(
    case: tuple[Table, Partition], max_depth: int | None, mss: int | None
) -> None:
    table, part = case
    helper = "sites" if part.k >= 3 else "dealer"
    out = run_reveal(table, part, helper=helper, max_depth=max_depth, mss=mss)
    _assert_same_tree(out)
    _assert_ledgers(out)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([None, 2]), st.sampled_from([None, 3]))
def test_reveal_tree_equals_plain_entropy_fixed_on_random_tables(
    case: tuple[Table, Partition], max_depth: int | None, mss: int | None
) -> None:
    """Information gain with the fixed-point ``n log n`` on shares: the plain learner's
    ``entropy-fixed`` tree, with each helper."""
    table, part = case
    helper = "sites" if part.k >= 3 else "dealer"
    out = run_reveal(table, part, helper=helper, max_depth=max_depth, mss=mss,
                     criterion="entropy-fixed")  # fmt: skip
    _assert_same_tree(out)
    _assert_ledgers(out)


@pytest.mark.parametrize(
    ("k", "helper", "criterion", "seed"),
    [(2, "dealer", "gini", 3), (3, "dealer", "gini", 3), (3, "sites", "gini", 3),
     (4, "sites", "gini", 3), (5, "sites", "gini", 3), (2, "dealer", "entropy-fixed", 5),
     (3, "sites", "entropy-fixed", 5), (2, "ot", "entropy-fixed", 5)],
)  # fmt: skip
def test_reveal_tree_on_car_for_each_helper_criterion_and_2_to_5_sites(
    k: int, helper: str, criterion: str, seed: int
) -> None:
    t, _ = datasets.table("car")
    part = partition(t.attributes, k, f"random:{seed}", class_site=k - 1)
    out = run_reveal(t, part, helper=helper, max_depth=3, mss=87, criterion=criterion)
    _assert_same_tree(out)
    _assert_ledgers(out)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([1, 2, 5]), st.sampled_from(["gini", "entropy-fixed"]))
def test_a_site_s_rows_in_ranges_grow_the_same_tree(
    case: tuple[Table, Partition], block: int, criterion: str
) -> None:
    """Every site's rows in ranges of ``block`` (the last one shorter), each range's products
    with their own tags and dealt randomness, the counts summed over the ranges: the plain
    learner's tree, the same ledgers."""
    table, part = case
    helper = "sites" if part.k >= 3 else "dealer"
    out = run_reveal(table, part, helper=helper, max_depth=3, criterion=criterion,
                     row_block=block)  # fmt: skip
    _assert_same_tree(out)
    _assert_ledgers(out)


@pytest.mark.parametrize(("helper", "reveal", "says"), [
    ("ot", "tree", "oblivious-transfer products are set up over all"),
    ("dealer", "counts", "takes a site's rows whole"),
])  # fmt: skip
def test_rows_in_ranges_are_refused_where_the_products_take_them_whole(
    helper: str, reveal: str, says: str
) -> None:
    t = weather()
    part = partition(t.attributes, 2, class_site=1)
    views = _views(t, part)
    names = [v.name for v in views]

    async def program(p: Any) -> Any:
        if p.name == DEALER:
            return await serve_level_dealer(p, names, dtype=Ring.for_rows(t.n_rows).dtype)
        return await ppid3_levels(
            Sites(p, names).as_party(), views[names.index(p.name)], class_site=names[1],
            attribute_counts=[len(s) for s in part.sites], preprocessing=PREPROCESSING[helper],
            reveal=REVEALS[reveal], row_block=4,
        )  # fmt: skip

    parties = [*names, DEALER] if helper == "dealer" else names
    with pytest.raises(ConfigError, match=says):
        asyncio.run(run_in_memory(parties, program, timeout=30))


def test_reveal_tree_full_weather_tree_with_a_middle_class_site() -> None:
    t = weather()
    part = partition(t.attributes, 3, class_site=1)
    out = run_reveal(t, part, helper="sites")
    _assert_same_tree(out)
    _assert_ledgers(out)


@pytest.mark.parametrize("k", [2, 3])
def test_reveal_tree_with_helper_ot_no_third_party(k: int) -> None:
    """No one deals: the products' randomness and the comparisons' triples (over the wide
    ring too) by oblivious transfer between the sites."""
    t = weather()
    part = partition(t.attributes, k, class_site=k - 1)
    out = run_reveal(t, part, helper="ot", mss=3)
    _assert_same_tree(out)
    _assert_ledgers(out)


def _same_tree_twin(seed: int) -> tuple[Table, Table, Partition]:
    """Two random tables with different counts at the root but the same Gini tree."""
    rng = np.random.default_rng(seed)
    attrs = ["a0", "a1", "a2"]
    for _ in range(500):
        cols = [rng.choice(["u", "v", "w"], size=40).astype(object) for _ in attrs]
        y = rng.choice(["no", "yes"], size=40).astype(object)
        first = Table("twin", attrs, ["nominal"] * 3, cols, y, "class", "test")
        y2 = y.copy()
        flip = rng.integers(0, 40, size=3)
        y2[flip] = np.where(y2[flip] == "yes", "no", "yes")
        second = Table("twin", attrs, ["nominal"] * 3, [c.copy() for c in cols], y2, "class", "t")
        part = partition(attrs, 3, class_site=2)
        site_of = {a: i for i, s in enumerate(part.sites) for a in s}
        learner = ID3Classifier(max_depth=2, criterion="gini")
        trees = [to_json(learner.fit(tab, attribute_order=attrs, sites=site_of).tree_)
                 for tab in (first, second)]  # fmt: skip
        if check_tree_equal(trees[0], trees[1], counts=False) and (y2 != y).any():
            return first, second, part
    raise AssertionError("no twin found")


@pytest.mark.parametrize("helper", ["dealer", "sites"])
def test_two_tables_with_the_same_tree_look_the_same_to_every_party(helper: str) -> None:
    """Different class counts everywhere, the same tree: every party's public and declared
    messages, uniform skeletons and ledger are the same, and every uniform payload passes
    the chi-square test (the view of a party is the tree, and nothing of the counts)."""
    first, second, part = _same_tree_twin(5)
    a = run_reveal(first, part, helper=helper, max_depth=2, record=True)
    b = run_reveal(second, part, helper=helper, max_depth=2, record=True)
    _assert_same_tree(a)
    for name in a["parties"]:
        ra, rb = a["parties"][name].report(), b["parties"][name].report()
        assert differences(canonical_view(ra), canonical_view(rb)) == [], name
        assert uniformity_failures(ra) == [] and uniformity_failures(rb) == [], name
        assert a["parties"][name].ledger.to_list() == b["parties"][name].ledger.to_list()
    # what a third party can open from p0's and p1's messages is the tree's decisions
    assert a["opened"] and a["opened"] == b["opened"]
    assert {tag.rsplit("/", 1)[1] for _, tag in a["opened"]} <= {"stops", "labels", "splits"}


_COUNT = st.one_of(st.integers(0, 3), st.integers(0, 300), st.integers(0, 2**21))
_CANDIDATE = st.lists(st.lists(_COUNT, min_size=2, max_size=2), min_size=1, max_size=6)


#: at the bounds: 2^21 rows split evenly over 6 values, every value pure (the largest
#: denominator and numerator the rings are sized for), tied with its twin, beside a
#: candidate of one value (the smallest fraction)
_EDGE = [[[2**18 * 4 // 3, 0]] * 3 + [[0, 2**18 * 4 // 3]] * 3] * 2 + [[[2**20, 2**20]]]
#: the same at the share ring's bound, 2^32 - 4 rows
_EDGE32 = [[[(2**32 - 1) // 6, 0]] * 3 + [[0, (2**32 - 1) // 6]] * 3] * 2 + [
    [[2**31 - 2, 2**31 - 2]]
]


@pytest.mark.parametrize("name", ["gini", "gini-impurity"])
@settings(max_examples=20, deadline=None)
@given(st.lists(st.lists(_CANDIDATE, min_size=1, max_size=5), min_size=1, max_size=3))
@example(nodes=[_EDGE, _EDGE[::-1]])
@example(nodes=[_EDGE32, _EDGE32[::-1]])
def test_fractions_and_argmax_on_shares_pick_the_plain_first_best(
    name: str, nodes: list[list[list[list[int]]]]
) -> None:
    """For each fraction criterion, each node's argmax over the shared fractions is the
    plain criterion's first best score (ties often, with counts of 0-3, empty branches
    too): the sums of fractions run each round in its own ring
    (64 to 192 bits here), a finished candidate staying in its last; each node's tournament
    orders its candidates by their bounds and compares each pair in the ring it needs (up to
    384 bits here), lifting the fractions that enter a wider ring."""
    candidates = [c for node in nodes for c in node]
    widest = max(len(c) for c in candidates)
    rows = max(sum(sum(r) for r in c) for c in candidates)
    blocks = np.zeros((len(candidates), widest, 2), dtype=np.uint64)
    for i, c in enumerate(candidates):
        blocks[i, : len(c)] = c
    mask = np.random.default_rng(0).integers(0, 2**64, size=blocks.shape, dtype=np.uint64)
    shares = (mask, blocks - mask)
    lengths = [len(x) for x in candidates]
    criterion = CRITERIA[name]
    assert isinstance(criterion, FractionCriterion)
    rings = fraction_rings(rows, lengths, criterion)
    plan = argmax_plan(rows, [[len(c) for c in node] for node in nodes],
                       final_rings(lengths, rings), criterion)  # fmt: skip
    real = np.arange(widest)[None, :] < np.asarray(lengths)[:, None]

    async def choose(s: Session) -> Any:
        terms, dens = await criterion.shared_terms(s, shares[s.role], RING64)
        num, den = await fraction_sums(s, terms[real], dens[real], lengths, rings)
        return await fraction_argmax(s, num, den, plan, "b")

    local = LocalPreprocessing()

    async def program(party: Any) -> Any:
        s = Session(Sites(party, ["s0", "s1"]).as_party(), local.triples)
        return await s.batch("t", choose)

    results, _ = asyncio.run(run_in_memory(["s0", "s1"], program, timeout=60))
    got = RING64.signed(RING64.reduce(results["s0"] + results["s1"]))
    want = []
    for node in nodes:
        scores: list[Fraction] = [criterion.score(np.asarray(c)) for c in node]
        want.append(scores.index(max(scores)))
    assert got == want


@given(st.lists(st.lists(st.integers(1, 42), min_size=1, max_size=14), min_size=1, max_size=4),
       st.integers(1, 10**7))  # fmt: skip
def test_the_argmax_plan_gives_each_pair_a_ring_that_holds_it_and_the_widest_a_bye(
    nodes: list[list[int]], rows: int
) -> None:
    """Every pair of the plan is compared in a ring that holds its cross products, shifted
    past the indices, signed; every candidate plays, after its fractions are known; a
    node's widest candidate, if its bounds are above all others', plays once, in the node's
    last pair; between ``⌈log2 m⌉`` and ``m - 1`` rounds for ``m`` candidates, and
    ``⌈log2 m⌉`` when they are all of one width."""
    gini = CRITERIA["gini"]
    assert isinstance(gini, FractionCriterion)
    plan = argmax_plan(rows, nodes, [64] * sum(len(n) for n in nodes), gini)
    bound = dict(enumerate(gini.fraction_bounds(rows, v) for n in nodes for v in n))
    played: dict[int, int] = {}  # slot -> the pair it played in (its out slot)
    for steps in plan.rounds:
        known = set(bound)
        for step in steps:
            for left, right, out in step.pairs:
                assert left in known and right in known  # made in an earlier round
                (nl, dl), (nr, dr) = bound[left], bound[right]
                assert step.ring.bits >= max(nl + dr, nr + dl) + plan.shift + 3
                assert plan.rings[out] == step.ring.bits
                bound[out] = (max(nl, nr), max(dl, dr))
                played[left] = played[right] = out
    deepest = max(len(n) for n in nodes)
    assert (deepest - 1).bit_length() <= len(plan.rounds) <= max(deepest - 1, 0)
    if all(len(set(n)) == 1 for n in nodes):
        assert len(plan.rounds) == (deepest - 1).bit_length()
    at, alone = 0, set()
    for n, winner in zip(nodes, plan.winners, strict=True):
        if len(n) == 1:
            alone.add(at)
        else:
            first = [gini.fraction_bounds(rows, v) for v in n]
            top = max(range(len(n)), key=lambda i: sum(first[i]))
            if all(first[top][0] > b[0] and first[top][1] > b[1]
                   for i, b in enumerate(first) if i != top):  # fmt: skip
                assert played[at + top] == winner
        at += len(n)
    assert {s for s in played if s < at} == set(range(at)) - alone


def test_the_argmax_plan_compares_narrow_candidates_in_narrow_rings() -> None:
    """On Adult's 48,842 rows, a node with three two-valued candidates and the 42 countries:
    the two-valued ones meet in 128-bit rings, and the countries, after two byes, meet their
    winner once, in 640 bits (a single ring for all would be that of the widest pair, and a
    balanced tournament would compare the countries twice)."""
    gini = CRITERIA["gini"]
    assert isinstance(gini, FractionCriterion)
    plan = argmax_plan(48_842, [[2, 42, 2, 2]], [64, 576, 64, 64], gini)
    assert [[(s.ring.bits, s.pairs) for s in r] for r in plan.rounds] == [
        [(128, [(0, 2, 4)])], [(128, [(3, 4, 5)])], [(640, [(5, 1, 6)])]]  # fmt: skip
    assert plan.winners == [6]
    assert sorted({step.ring.bits for steps in plan.rounds for step in steps}) == [128, 640]


# ----------------------------------------------------------------------------- classification


def run_classify(
    table: Table, part: Partition, new: Table, *, helper: str = "sites",
    max_depth: int | None = None, record: bool = False, network: InMemoryNetwork | None = None,
    fixed: dict[str, bytes] | None = None, deliver_to: str | None = None, scores: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Train with ``--reveal tree`` in memory, then classify the rows of ``new`` without a
    path, delivered to ``deliver_to`` (the last site by default), with ``scores`` the class
    counts of each record's terminal too (``"scores"``: the receiver's); ``fixed`` as for
    :func:`run_reveal`, for the whole run."""
    got_scores: list[dict[str, int]] = []
    views = _views(table, part)
    new_views = _views(new, part)
    names = [v.name for v in views]
    class_site = names[part.class_site]
    deliver_to = deliver_to or names[-1]

    async def program(p: Any) -> Any:
        with own_randomness(p.name, fixed):
            return await party_program(p)

    async def party_program(p: Any) -> Any:
        if p.name == DEALER:
            await serve_level_dealer(p, names, dtype=Ring.for_rows(table.n_rows).dtype)
            if record:
                p.view = ViewRecorder()
            return await serve_level_dealer(p, names, dtype=np.uint64, requests="classify/req")
        i = names.index(p.name)
        site = Sites(p, names).as_party()
        tree, _ = await ppid3_levels(
            site, views[i], class_site=class_site, attribute_counts=[len(s) for s in part.sites],
            preprocessing=PREPROCESSING[helper], max_depth=max_depth, reveal=SharedCounts,
        )  # fmt: skip
        if record:
            p.view = ViewRecorder()
        v = new_views[i]
        cols = {a: [v.domains[j][c] for c in v.codes[:, j]] for j, a in enumerate(v.attributes)}
        return await preprocessing_of(helper).beside(
            site,
            lambda dealing: classify_obliviously(
                site, tree, cols, new.n_rows, class_site=class_site, deliver_to=deliver_to,
                dealing=dealing, scores_out=(got_scores if p.name == deliver_to else [])
                if scores else None),
            requests="classify/req",
        )  # fmt: skip

    parties = [*names, DEALER] if helper == "dealer" else names
    results, by_name = asyncio.run(run_in_memory(parties, program, timeout=120,
                                                 network=network))  # fmt: skip
    site_of = {a: i for i, s in enumerate(part.sites) for a in s}
    plain = ID3Classifier(max_depth=max_depth, criterion="gini").fit(
        table, attribute_order=list(part.attributes), sites=site_of
    )
    others = [results[n] for n in names if n != deliver_to]
    return {"predictions": results[deliver_to], "plain": [str(v) for v in plain.predict(new)],
            "others": others, "parties": by_name, "scores": got_scores,
            "plain_tree": plain.tree_}  # fmt: skip


def _with_unseen(table: Table, rng: np.random.Generator) -> Table:
    """``table``'s rows in another order, a third of their values replaced by values never
    seen in training (such a record stops at the node that tests it)."""
    cols = []
    for col in table.columns:
        c = np.asarray(col, dtype=object)[rng.permutation(table.n_rows)]
        c[rng.random(len(c)) < 0.3] = "never-seen"
        cols.append(c)
    return Table("new", table.attributes, table.kinds, cols, table.target, table.class_name, "t")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([None, 2]))
def test_classification_without_a_path_equals_plain_prediction(
    case: tuple[Table, Partition], max_depth: int | None
) -> None:
    table, part = case
    new = _with_unseen(table, np.random.default_rng(table.n_rows))
    chunk = oblivious_classify.CHUNK_ELEMENTS
    oblivious_classify.CHUNK_ELEMENTS = 16  # the records go in several chunks
    try:
        out = run_classify(table, part, new, helper="sites" if part.k >= 3 else "dealer",
                           max_depth=max_depth)  # fmt: skip
    finally:
        oblivious_classify.CHUNK_ELEMENTS = chunk
    assert out["predictions"] == out["plain"]
    assert all(o is None for o in out["others"])  # only the asking party learns them


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_scores_are_the_class_counts_of_each_record_s_terminal_in_the_plain_tree(
    case: tuple[Table, Partition],
) -> None:
    """With scores, the receiver gets, per record, the class counts of the node of the plain
    tree that classifies it (its leaf, or the node where a value never seen stops it),
    selected on shares: over several chunks, with unseen values."""
    table, part = case
    new = _with_unseen(table, np.random.default_rng(table.n_rows + 1))
    chunk = oblivious_classify.CHUNK_ELEMENTS
    oblivious_classify.CHUNK_ELEMENTS = 16
    try:
        out = run_classify(table, part, new, helper="sites" if part.k >= 3 else "dealer",
                           scores=True)  # fmt: skip
    finally:
        oblivious_classify.CHUNK_ELEMENTS = chunk
    plain = to_json(out["plain_tree"])
    expected = []
    for r in range(new.n_rows):
        node = plain
        while "children" in node:
            child = node["children"].get(
                str(new.columns[new.attributes.index(node["attribute"])][r])
            )
            if child is None:
                break
            node = child
        expected.append({c: int(k) for c, k in node["counts"].items()})
    classes = sorted({c for d in expected for c in d})
    got = [{c: d.get(c, 0) for c in classes} for d in out["scores"]]
    assert got == [{c: d.get(c, 0) for c in classes} for d in expected]


def test_a_third_site_sends_its_bits_at_most_two_chunks_ahead_of_p1() -> None:
    """Many chunks of records: a site other than ``p0`` and ``p1`` sends a chunk's bits only
    once ``p1`` has finished the chunk two before (without it, Adult's test set piled 278 MB
    of bits and triples at ``p1``, over the runtime's bound)."""
    t = weather()
    part = partition(t.attributes, 3, class_site=2)
    network = InMemoryNetwork()
    done: set[int] = set()
    early: list[int] = []

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        tag = decode(frames).tag
        chunk = tag.split("/c")[-1].split("/")[0] if "/c" in tag else ""
        if not chunk.isdigit():
            return
        if sender == "site2" and tag.endswith("/done"):
            done.add(int(chunk))
        elif sender == "site3" and tag.endswith("/bits") and int(chunk) - 2 not in done | {-1, -2}:
            early.append(int(chunk))

    network.taps.append(tap)
    chunk = oblivious_classify.CHUNK_ELEMENTS
    oblivious_classify.CHUNK_ELEMENTS = 8  # one record a chunk: 14 chunks
    try:
        out = run_classify(t, part, t, helper="sites", network=network)
    finally:
        oblivious_classify.CHUNK_ELEMENTS = chunk
    assert out["predictions"] == out["plain"]
    assert done == set(range(t.n_rows)) and early == []


def test_classifying_two_records_with_the_same_prediction_looks_the_same_to_every_site() -> None:
    """Two different records (different paths) with the same predicted class: every site's
    view of their classification is the same, and only the asking site's ledger has the
    predictions."""
    t = weather()
    part = partition(t.attributes, 3, class_site=2)
    plain = ID3Classifier(criterion="gini").fit(
        t, attribute_order=list(part.attributes),
        sites={a: i for i, s in enumerate(part.sites) for a in s},
    )  # fmt: skip
    pred = [str(v) for v in plain.predict(t)]
    first = next(i for i in range(t.n_rows) if pred[i] == "yes")
    second = next(i for i in range(t.n_rows) if pred[i] == "yes"
                  and _path(plain.tree_, t, i) != _path(plain.tree_, t, first))  # fmt: skip
    views = []
    for i in (first, second):
        out = run_classify(t, part, t.subset([i]), record=True)
        assert out["predictions"] == ["yes"]
        views.append({n: p.report() for n, p in out["parties"].items()})
    for name in views[0]:
        assert differences(canonical_view(views[0][name]), canonical_view(views[1][name])) == []
        assert uniformity_failures(views[0][name]) == []


def _path(tree: Any, table: Table, i: int) -> list[str]:
    """The branches record ``i`` takes in a plain tree."""
    out = []
    node = tree
    while isinstance(node, Split):
        value = str(table.column(node.attribute)[i])
        out.append(f"{node.attribute}={value}")
        node = node.children[value]
    return out
