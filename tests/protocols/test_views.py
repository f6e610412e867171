"""The record-swap view test (:mod:`tests.views`) for every system and every party: what a
party receives, under every receipt, must not change when two records it cannot tell apart
swap the rest of their data.

Each case runs the system as processes over CurveZMQ on small tables: a base run and, for
every party, a run on the table with one such pair swapped (``MPC_VIEW=1`` puts each party's
whole view in its report).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mpc.learners.tree import to_json
from parties.api import RunResult, run_system

from .. import datasets
from ..conftest import ROOT
from ..views import cached, check_swap, read_table, swap_pair, write_table

pytestmark = pytest.mark.processes

WEATHER = ROOT / "mpc" / "datasets" / "data" / "weather.csv"
#: each run's deadline: a weather run takes about 11 s alone and three to four times that
#: beside other test workers on two cores
RUN_DEADLINE = 90


@pytest.fixture(autouse=True)
def _record_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPC_VIEW", "1")


def _same_tree(a: RunResult, b: RunResult) -> bool:
    return a.tree is not None and b.tree is not None and to_json(a.tree) == to_json(b.tree)


#: (counts, helper, partition, class column): every PPID3 count backend and helper
PPID3_CASES = {
    "psi": ("psi", None, "outlook,temperature;humidity,windy"),
    "fast-ot": ("fast", "ot", "outlook,temperature;humidity,windy"),
    "fast-dealer": ("fast", "dealer", "outlook,temperature;humidity,windy"),
    "fast-sites": ("fast", "sites", "outlook;temperature;humidity,windy"),
    "tree-dealer": ("fast", "dealer", "outlook,temperature;humidity,windy"),
    "tree-sites": ("fast", "sites", "outlook;temperature;humidity,windy"),
    "tree-ot": ("fast", "ot", "outlook,temperature;humidity,windy"),
    "tree-entropy": ("fast", "sites", "outlook;temperature;humidity,windy"),
}
#: the sections of docs/leakage.md that list what the parties of each case receive
PPID3_VARIANTS = {
    "psi": "ppid3-psi",
    "fast-ot": "ppid3-fast-ot",
    "fast-dealer": "ppid3-fast-dealer",
    "fast-sites": "ppid3-fast-sites",
    "tree-dealer": "ppid3-reveal-tree-dealer",
    "tree-sites": "ppid3-reveal-tree-sites",
    "tree-ot": "ppid3-reveal-tree-ot",
    "tree-entropy": "ppid3-reveal-tree-sites",  # (the same messages as with Gini)
}


def _site_columns(partition: str, class_column: str) -> dict[str, list[str]]:
    groups = [g.split(",") for g in partition.split(";")]
    cols = {f"site{i + 1}": g for i, g in enumerate(groups)}
    cols[f"site{len(groups)}"] = [*cols[f"site{len(groups)}"], class_column]
    return cols


@pytest.mark.timeout(600)  # several runs, each with its own deadline
@pytest.mark.parametrize("case", sorted(PPID3_CASES))
def test_ppid3_views_do_not_change_when_records_a_site_cannot_tell_apart_swap(
    case: str, tmp_path: Path
) -> None:
    counts, helper, partition = PPID3_CASES[case]
    header, rows = read_table(WEATHER)
    visible = _site_columns(partition, "play")
    if helper == "dealer":
        visible["dealer"] = []

    def run(table: Path) -> Any:
        options: dict[str, Any] = {"counts": counts}
        if helper is not None:
            options["helper"] = helper
        options["reveal"] = "tree" if case.startswith("tree") else "counts"
        if case == "tree-entropy":
            options["split_criterion"] = "entropy-fixed"
        return run_system(
            "ppid3", csv=str(table), class_column="play", partition=partition,
            timeout=RUN_DEADLINE, **options,
        )  # fmt: skip

    run_once = cached(run)

    for party, cols in visible.items():
        base, swapped, _, _ = swap_pair(header, rows, cols)
        check_swap(
            run_once,
            party,
            write_table(tmp_path / f"{party}-base.csv", header, base),
            write_table(tmp_path / f"{party}-swapped.csv", header, swapped),
            expect_same=_same_tree,
            variant=PPID3_VARIANTS[case],
        )


# ----------------------------------------------------------------------------- Hybrid-ID3


def _synthetic_table(path: Path, n: int = 80, seed: int = 5) -> tuple[list[str], list[list[str]]]:
    """A small public test table: four nominal attributes of 2-3 values and a class that
    depends on two of them (so that the tree has a few levels)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    header = ["a", "b", "c", "d", "y"]
    rows = []
    for _ in range(n):
        a, b = str(rng.integers(3)), str(rng.integers(2))
        c, d = str(rng.integers(3)), str(rng.integers(2))
        y = "yes" if (a == "0") ^ (c == "1") ^ (rng.random() < 0.1) else "no"
        rows.append([a, b, c, d, y])
    write_table(path, header, rows)
    return header, rows


def _hybrid_layout(table: Path, options: dict[str, Any]) -> dict[str, Any]:
    """What the test needs of a Hybrid-ID3 plan: each party's columns, the row position of
    every record id in its own file (its coins follow it), and its number of coin groups."""
    import csv
    import io

    from parties.api import system_options
    from parties.systems.registry import get_system

    system = get_system("hybrid-id3")
    plan = system.plan(system_options(system, csv=str(table), class_column="y", **options))
    out: dict[str, Any] = {"columns": {}, "position": {}, "groups": {}}
    setup = plan.context["setup"]
    for spec in plan.parties:
        if spec.role not in ("alice", "bob"):
            continue
        text = spec.csv if spec.csv is not None else spec.data["csv"]
        rows = list(csv.reader(io.StringIO(text)))
        out["columns"][spec.name] = rows[0][1:]
        out["position"][spec.name] = {r[0]: i for i, r in enumerate(rows[1:])}
        out["groups"][spec.name] = len(setup.groups[spec.name])
    return out


def _coin_rows(seed: int, n: int, groups: int, theta: float) -> list[tuple[bool, ...]]:
    """A party's seeded coins, one row per row of its own file (as
    :func:`protocols.hybrid.randomized_response.disguise` draws them)."""
    import numpy as np

    truth = np.random.default_rng(seed).random(n * groups) < theta
    return [tuple(r) for r in truth.reshape(n, groups).tolist()]


@pytest.mark.timeout(600)  # several runs, each with its own deadline
def test_hybrid_views_do_not_change_when_records_a_party_cannot_tell_apart_swap(
    tmp_path: Path,
) -> None:
    """Alice and Bob each receive the other's disguised table (declared, row by row): the
    swapped records are chosen so that it tells the viewer the same, the disguised rows of
    the two records exchanging places; everything else must be exactly the same."""
    header, rows = _synthetic_table(tmp_path / "joined.csv")
    theta, seeds = 0.7, {"alice": 11, "bob": 23}
    options: dict[str, Any] = {
        "theta": theta, "window": 2, "test_split": 0,
        "coin_seeds": f"{seeds['alice']},{seeds['bob']}",
    }  # fmt: skip
    layout = _hybrid_layout(tmp_path / "joined.csv", options)
    n = len(rows)
    coins = {p: _coin_rows(seeds[p], n, layout["groups"][p], theta) for p in ("alice", "bob")}

    def coin(p: str, row: int) -> tuple[bool, ...]:
        return coins[p][layout["position"][p][str(row + 1)]]

    def run(table: Path) -> Any:
        return run_system(
            "hybrid-id3", csv=str(table), class_column="y", timeout=RUN_DEADLINE, **options
        )

    run_once = cached(run)

    everything = list(range(len(header)))
    for viewer, other in (("alice", "bob"), ("bob", "alice"), ("dealer", None)):
        mine = [header.index(c) for c in layout["columns"][viewer]] if other else []
        theirs = [header.index(c) for c in layout["columns"][other]] if other else everything
        pair = next(
            (a, b)
            for a in range(n)
            for b in range(a + 1, n)
            if [rows[a][i] for i in mine] == [rows[b][i] for i in mine]
            and [rows[a][i] for i in theirs] != [rows[b][i] for i in theirs]
            and coin("alice", a) == coin("alice", b)
            and coin("bob", a) == coin("bob", b)
        )
        a, b = pair
        swapped = [list(r) for r in rows]
        for i in theirs:
            swapped[a][i], swapped[b][i] = rows[b][i], rows[a][i]
        check_swap(
            run_once,
            viewer,
            write_table(tmp_path / f"{viewer}-base.csv", header, rows),
            write_table(tmp_path / f"{viewer}-swapped.csv", header, swapped),
            expect_same=_same_tree,
            variant="hybrid-id3-dealer",
        )


# ----------------------------------------------------------------------------- cdtl


def _votes_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    schema = datasets.schema("house-votes-84")
    header = [c["name"] for c in sorted(schema["columns"], key=lambda c: c["index"])]
    votes = datasets.folder("house-votes-84") / "house-votes-84.data"
    rows = [line.split(",") for line in votes.read_text().split()]
    write_table(path, header, rows)
    return header, rows


@pytest.mark.timeout(600)  # several runs, each with its own deadline
def test_cdtl_cdbs_view_does_not_change_when_tuples_it_sees_alike_swap_their_sensitive_values(
    tmp_path: Path,
) -> None:
    """The CDBS sees every tuple's identifying attributes and class, the groups and each
    group's sensitive values (declared): two tuples alike in all of that, which swap their
    sensitive values, must leave its view the same (the client's anatomization seeded by the
    client's own seed, so that both runs group alike)."""
    from parties.programs.cdtl_tables import cdtl_folds

    header, rows = _votes_csv(tmp_path / "votes.csv")
    cls, sensitive = "Class Name", "physician-fee-freeze"
    c, s = header.index(cls), header.index(sensitive)
    cv, seed = 2, 0
    import numpy as np

    for a in range(len(rows) - 1):
        base = [list(r) for r in rows]
        other = next(v for v in ("y", "n", "?") if v != base[a][s])
        base[a + 1] = [*base[a][:s], other, *base[a][s + 1 :]]
        folds = cdtl_folds(np.array([r[c] for r in base], dtype=object), cv, seed)
        together = all((a in f["test"]) == (a + 1 in f["test"]) for f in folds)
        pruned = together and all(
            (f["train"].index(a) in f["prune"]) == (f["train"].index(a + 1) in f["prune"])
            for f in folds
            if a in f["train"]
        )
        if together and pruned:
            break
    swapped = [list(r) for r in base]
    swapped[a][s], swapped[a + 1][s] = base[a + 1][s], base[a][s]

    def run(table: Path) -> Any:
        return run_system(
            "cdtl", csv=str(table), class_column=cls, sensitive=sensitive, l=2, cv=cv,
            seed=seed, anatomy_seed=7, timeout=RUN_DEADLINE,
        )  # fmt: skip

    run_once = cached(run)

    first, _ = check_swap(
        run_once,
        "cdbs",
        write_table(tmp_path / "base.csv", header, base),
        write_table(tmp_path / "swapped.csv", header, swapped),
        variant="cdtl",
    )
    assert any(m["receipt"] == "cdtl/request" for m in first["view"]["messages"])


# ----------------------------------------------------------------------------- protocol demos


def _same_view(
    system: str, party: str, first: dict[str, Any], second: dict[str, Any], variant: str
) -> None:
    """Two runs of ``system`` whose inputs differ only where ``party`` cannot tell: its view
    is the same (and every party's receipts are those docs/leakage.md lists for
    ``variant``)."""
    from ..views import (
        assert_documented,
        canonical_view,
        differences,
        joint_failures,
        own_seed,
        randomness_fixed,
        undeclared,
        uniformity_failures,
    )

    with randomness_fixed():
        runs = [run_system(system, timeout=RUN_DEADLINE, **first)]
    with randomness_fixed(own_seed(party)):
        runs.append(run_system(system, timeout=RUN_DEADLINE, **second))
    for r in runs:
        assert r.ok, r.error
        assert_documented(variant, r)
        rep = r.reports[party]
        assert not undeclared(rep) and not uniformity_failures(rep)
    diff = differences(*(canonical_view(r.reports[party]) for r in runs))
    assert not diff, f"{system}: {party}'s view depends on what it may not learn:\n" + "\n".join(
        diff
    )
    joint = joint_failures(*(r.reports[party] for r in runs))
    assert not joint, f"{system}: {party}'s view beside its own randomness:\n" + "\n".join(joint)


@pytest.mark.parametrize(
    ("party", "inputs"),
    [("site1", ("5,6,7", "5,1,12")), ("site2", ("5,6,7", "1,6,11")), ("site3", ("5,6,7", "9,2,7"))],
)
def test_secure_sum_views_depend_on_the_others_only_through_the_sum(
    party: str, inputs: tuple[str, str]
) -> None:
    _same_view("secure-sum", party, {"inputs": inputs[0]}, {"inputs": inputs[1]}, "secure-sum")


@pytest.mark.parametrize(
    ("party", "flags"), [("site1", ("1,0,1", "1,1,0")), ("site3", ("1,0,1", "0,1,1"))]
)
def test_is_r_empty_views_depend_on_the_others_only_through_the_answer(
    party: str, flags: tuple[str, str]
) -> None:
    _same_view("is-r-empty", party, {"flags": flags[0]}, {"flags": flags[1]}, "is-r-empty")


def test_psi_ca_views_depend_on_the_other_set_only_through_its_size_and_the_overlap(
    tmp_path: Path,
) -> None:
    """site2 (the receiver) learns the intersection size and the other's set size: another
    set of the same size and overlap leaves its view the same; likewise for site1."""
    mine = [f"e{i}" for i in range(12)]
    theirs = [[*mine[:5], *(f"x{i}" for i in range(9))], [*mine[3:8], *(f"y{i}" for i in range(9))]]
    files = []
    for i, other in enumerate(theirs):
        a, b = tmp_path / f"other{i}.txt", tmp_path / "mine.txt"
        a.write_text("\n".join(other) + "\n")
        b.write_text("\n".join(mine) + "\n")
        files.append(f"{a},{b}")
    _same_view("psi-ca", "site2", {"sets": files[0]}, {"sets": files[1]}, "psi-ca")
    swapped = [",".join(reversed(f.split(","))) for f in files]
    _same_view(
        "psi-ca", "site1", {"sets": swapped[0], "receiver": "site2"},
        {"sets": swapped[1], "receiver": "site2"}, "psi-ca",
    )  # fmt: skip


@pytest.mark.parametrize("party", ["site1", "site2", "site3"])
def test_psi_views_depend_on_the_other_sets_only_through_the_intersection_and_the_sizes(
    party: str, tmp_path: Path
) -> None:
    """Across processes: each site's view, its own randomness fixed, is the same for two
    inputs with its own set, the intersection, every set's size and the running size the
    last site learns (|S1 ∩ S2|) the same, whose other records differ."""
    common = [f"c{i}" for i in range(6)]
    a = [[*common, "x1", "x2", "x3", "x4"], [*common, "x1", "x2", "y1", "y2"],
         [*common, "z1", "z2", "z3"]]  # fmt: skip
    b = [[*common, "x1", "x2", "x3", "x4"], [*common, "x3", "x4", "w1", "w2"],
         [*common, "v1", "v2", "v3"]]  # fmt: skip
    me = int(party[-1]) - 1
    b[me] = a[me]
    files = []
    for tag, sets in (("a", a), ("b", b)):
        paths = [tmp_path / f"{tag}{i}.txt" for i in range(3)]
        for path, s in zip(paths, sets, strict=True):
            path.write_text("\n".join(s) + "\n")
        files.append(",".join(map(str, paths)))
    _same_view("psi", party, {"sets": files[0]}, {"sets": files[1]}, "psi")


@pytest.mark.parametrize("party", ["bob", "dealer"])
def test_dot_product_views_of_bob_and_the_dealer_depend_on_no_vector(party: str) -> None:
    _same_view(
        "dot-product", party, {"n": 200, "seed": 1}, {"n": 200, "seed": 2}, "dot-product-dealer"
    )


# ----------------------------------------------------------------------------- classification


def _path(tree: dict[str, Any], record: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The branches a record takes down a JSON tree (:func:`mpc.learners.tree.to_json`)."""
    out = []
    while "children" in tree and record.get(tree["attribute"]) in tree["children"]:
        value = record[tree["attribute"]]
        out.append((tree["attribute"], value))
        tree = tree["children"][value]
    return tuple(out)


@pytest.mark.timeout(600)  # several runs, each with its own deadline
def test_ppid3_classification_views_depend_only_on_each_record_s_path(tmp_path: Path) -> None:
    """Algorithm 8 tells each site which records reach its nodes, and the class site each
    record's leaf (declared): two new records with the same path that a site sees alike,
    which swap the rest of their data, leave every site's view of the classification the
    same."""
    import itertools

    header, rows = read_table(WEATHER)
    partition = "outlook,temperature;humidity,windy"
    model = tmp_path / "model"
    trained = run_system(
        "ppid3", csv=str(WEATHER), class_column="play", partition=partition, model_out=str(model),
        counts="psi", timeout=RUN_DEADLINE,
    )  # fmt: skip
    assert trained.ok and trained.tree is not None
    tree = to_json(trained.tree)
    attrs = header[:-1]
    domains = [sorted({r[i] for r in rows}) for i in range(len(attrs))]
    new = [list(v) for v in itertools.product(*domains)]
    visible = {"site1": ["outlook", "temperature"], "site2": ["humidity", "windy"]}

    def run(table: Path) -> Any:
        return run_system(
            "ppid3-classify", csv=str(table), model=str(model),
            predictions_out=str(tmp_path / "predictions.csv"), timeout=RUN_DEADLINE,
        )  # fmt: skip

    run_once = cached(run)

    for party, cols in visible.items():
        idx = [attrs.index(c) for c in cols]
        a, b = next(
            (a, b)
            for a in range(len(new))
            for b in range(a + 1, len(new))
            if [new[a][i] for i in idx] == [new[b][i] for i in idx]
            and _path(tree, dict(zip(attrs, new[a], strict=True)))
            == _path(tree, dict(zip(attrs, new[b], strict=True)))
        )
        swapped = [list(r) for r in new]
        swapped[a], swapped[b] = new[b], new[a]
        check_swap(
            run_once,
            party,
            write_table(tmp_path / f"{party}-new.csv", attrs, new),
            write_table(tmp_path / f"{party}-new-swapped.csv", attrs, swapped),
            variant="ppid3-classify",
        )


@pytest.mark.timeout(600)  # several runs, each with its own deadline
def test_hybrid_classification_views_depend_only_on_each_record_s_prediction(
    tmp_path: Path,
) -> None:
    """Classifying with a saved Hybrid-ID3 tree tells the deliverer (bob) each record's
    predicted class and alice and the dealer nothing: two new records that a party sees
    alike, with the same prediction, which swap the rest of their data, leave its view the
    same."""
    import itertools

    from mpc.learners.tree import predict_one

    header, rows = _synthetic_table(tmp_path / "joined.csv")
    model = tmp_path / "model"
    trained = run_system(
        "hybrid-id3", csv=str(tmp_path / "joined.csv"), class_column="y", theta=0.7,
        test_split=0, model_out=str(model), timeout=RUN_DEADLINE,
    )  # fmt: skip
    assert trained.ok and trained.tree is not None
    tree = trained.tree
    attrs = header[:-1]
    domains = [sorted({r[i] for r in rows}) for i in range(len(attrs))]
    new = [list(v) for v in itertools.product(*domains)]
    columns = _hybrid_layout(tmp_path / "joined.csv", {"theta": 0.7, "test_split": 0})["columns"]

    def predicted(r: list[str]) -> str:
        return str(predict_one(tree, dict(zip(attrs, r, strict=True))))

    def run(table: Path) -> Any:
        return run_system(
            "hybrid-id3-classify", csv=str(table), model=str(model),
            predictions_out=str(tmp_path / "predictions.csv"), timeout=RUN_DEADLINE,
        )  # fmt: skip

    run_once = cached(run)

    doc = to_json(tree)

    def path(r: list[str]) -> tuple[tuple[str, str], ...]:
        return _path(doc, dict(zip(attrs, r, strict=True)))

    for party in ("alice", "bob", "dealer"):
        idx = [attrs.index(c) for c in columns.get(party, []) if c in attrs]
        alike = [
            (a, b)
            for a in range(len(new))
            for b in range(a + 1, len(new))
            if [new[a][i] for i in idx] == [new[b][i] for i in idx]
            and predicted(new[a]) == predicted(new[b])
        ]
        # records that end at different terminals, if any: only the class may be told
        a, b = max(alike, key=lambda ab: path(new[ab[0]]) != path(new[ab[1]]))
        swapped = [list(r) for r in new]
        swapped[a], swapped[b] = new[b], new[a]
        check_swap(
            run_once,
            party,
            write_table(tmp_path / f"{party}-new.csv", attrs, new),
            write_table(tmp_path / f"{party}-new-swapped.csv", attrs, swapped),
            variant="hybrid-id3-classify",
        )


# ----------------------------------------------------------------------------- many swaps


def _real_table(name: str, path: Path) -> tuple[list[str], list[list[str]], str]:
    """A UCI table (the package's copy) as one CSV with a header, and its class column."""
    folder, schema = datasets.folder(name), datasets.schema(name)
    header = [c["name"] for c in sorted(schema["columns"], key=lambda c: c["index"])]
    data = next(f for f in schema["files"] if f.endswith(".data"))
    rows = [line.split(",") for line in (folder / data).read_text().split()]
    cls = schema["class_column"]["name"]
    write_table(path, header, rows)
    return header, rows, cls


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(
    ("dataset", "counts", "helper", "sites"),
    [
        ("house-votes-84", "fast", "sites", 3),
        ("car", "fast", "ot", 2),
        ("tic-tac-toe", "psi", None, 2),
    ],
)
def test_ppid3_views_over_many_random_swaps_on_real_tables(
    dataset: str, counts: str, helper: str | None, sites: int, tmp_path: Path
) -> None:
    """The record-swap test with random pairs (8 per site; 3 with the slower set-intersection
    counts), drawn among the pairs of records a site sees alike, on real tables: every swap
    must leave the site's view the same."""
    import random

    from ..views import canonical_view, differences, uniformity_failures

    header, rows, cls = _real_table(dataset, tmp_path / "joined.csv")
    attrs = [h for h in header if h != cls]
    per = -(-len(attrs) // sites)
    groups = [attrs[i : i + per] for i in range(0, len(attrs), per)]
    partition = ";".join(",".join(g) for g in groups)
    options: dict[str, Any] = {"counts": counts, "reveal": "counts"}
    options.update({"helper": helper} if helper else {})

    def run(table: Path) -> Any:
        got = run_system(
            "ppid3", csv=str(table), class_column=cls, partition=partition, timeout=120,
            **options,
        )  # fmt: skip
        assert got.ok, got.error
        return got

    base = run(tmp_path / "joined.csv")
    rng = random.Random(f"{dataset}-swaps")
    for i, group in enumerate(groups):
        party = f"site{i + 1}"
        visible = [*group, cls] if i == len(groups) - 1 else group
        idx = [header.index(c) for c in visible]
        rest = [j for j in range(len(header)) if j not in idx]
        by_key: dict[tuple[str, ...], list[int]] = {}
        for r, row in enumerate(rows):
            by_key.setdefault(tuple(row[j] for j in idx), []).append(r)
        candidates = [
            (a, b)
            for same in by_key.values()
            for k, a in enumerate(same)
            for b in same[k + 1 :]
            if any(rows[a][j] != rows[b][j] for j in rest)
        ]
        for a, b in rng.sample(candidates, min(8 if counts == "fast" else 3, len(candidates))):
            swapped = [list(r) for r in rows]
            for j in rest:
                swapped[a][j], swapped[b][j] = rows[b][j], rows[a][j]
            other = run(write_table(tmp_path / f"{party}-{a}-{b}.csv", header, swapped))
            assert _same_tree(base, other)
            assert not uniformity_failures(other.reports[party])
            diff = differences(
                canonical_view(base.reports[party]), canonical_view(other.reports[party])
            )
            assert not diff, (
                f"{dataset}: swapping records {a} and {b} changed {party}'s view:\n"
                + ("\n".join(diff))
            )


@pytest.mark.parametrize(
    "variant",
    [
        "hybrid-id3-paillier",
        "dot-product-paillier",
        "cdtl-classify",
        "cdbs-load",
        "secure-argmax",
        "secure-argmax-sites",
        "secure-argmax-ot",
        "ppid3-reveal-tree-classify",
        "ppid3-reveal-tree-shuffles",
    ],
)
def test_the_other_configurations_receive_only_what_the_page_lists(
    variant: str, tmp_path: Path
) -> None:
    """The configurations the record-swap tests above do not run (Paillier dot products, a
    later cdtl session, several clients on one CDBS, the secure argmax with each helper,
    classification without a path from saved parts, numbers counted by shuffles): every
    party receives only what docs/leakage.md lists, nothing undeclared, and uniform payloads
    that look uniform; and
    each party, its randomness fixed, receives nothing uniform that repeats when the same
    inputs run again (the joint-view test)."""
    from ..views import (
        _leakage_script,
        assert_documented,
        joint_failures,
        own_seed,
        randomness_fixed,
        undeclared,
        uniformity_failures,
    )

    script = _leakage_script()
    v = script.VARIANTS[variant]
    options = dict(v.options)
    if v.prepare is not None:  # a model to classify with, made once
        options.update(v.prepare(tmp_path))
    with randomness_fixed():
        run = run_system(v.system, timeout=60, **options)
    assert run.ok, run.error
    assert_documented(variant, run)
    for name, report in run.reports.items():
        assert not undeclared(report), (name, undeclared(report))
        assert not uniformity_failures(report), (name, uniformity_failures(report))
    # the same inputs again, one party's randomness as in the first run, everyone else's
    # fresh: nothing uniform it receives may repeat
    for name in run.reports:
        with randomness_fixed(own_seed(name)):
            again = run_system(v.system, timeout=60, **options)
        assert again.ok, again.error
        joint = joint_failures(run.reports[name], again.reports[name])
        assert not joint, f"{variant}: {name}'s view beside its own randomness:\n" + (
            "\n".join(joint)
        )
