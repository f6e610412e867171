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

from .conftest import ROOT
from .views import check_swap, read_table, swap_pair, write_table

pytestmark = pytest.mark.processes

WEATHER = ROOT / "mpc" / "datasets" / "data" / "weather.csv"


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
}


def _site_columns(partition: str, class_column: str) -> dict[str, list[str]]:
    groups = [g.split(",") for g in partition.split(";")]
    cols = {f"site{i + 1}": g for i, g in enumerate(groups)}
    cols[f"site{len(groups)}"] = [*cols[f"site{len(groups)}"], class_column]
    return cols


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
        return run_system(
            "ppid3", csv=str(table), class_column="play", partition=partition, timeout=30,
            **options,
        )  # fmt: skip

    for party, cols in visible.items():
        base, swapped, _, _ = swap_pair(header, rows, cols)
        check_swap(
            run,
            party,
            write_table(tmp_path / f"{party}-base.csv", header, base),
            write_table(tmp_path / f"{party}-swapped.csv", header, swapped),
            expect_same=_same_tree,
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
    from parties.systems import get_system

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
    :func:`protocols.randomized_response.disguise` draws them)."""
    import numpy as np

    truth = np.random.default_rng(seed).random(n * groups) < theta
    return [tuple(r) for r in truth.reshape(n, groups).tolist()]


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
        return run_system("hybrid-id3", csv=str(table), class_column="y", timeout=30, **options)

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
            run,
            viewer,
            write_table(tmp_path / f"{viewer}-base.csv", header, rows),
            write_table(tmp_path / f"{viewer}-swapped.csv", header, swapped),
            expect_same=_same_tree,
        )


# ----------------------------------------------------------------------------- cdtl

VOTES = ROOT.parent / "shared" / "datasets" / "house-votes-84"


def _votes_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    import json

    schema = json.loads((VOTES / "schema.json").read_text())
    header = [c["name"] for c in sorted(schema["columns"], key=lambda c: c["index"])]
    rows = [line.split(",") for line in (VOTES / "house-votes-84.data").read_text().split()]
    write_table(path, header, rows)
    return header, rows


def test_cdtl_cdbs_view_does_not_change_when_tuples_it_sees_alike_swap_their_sensitive_values(
    tmp_path: Path,
) -> None:
    """The CDBS sees every tuple's identifying attributes and class, the groups and each
    group's sensitive values (declared): two tuples alike in all of that, which swap their
    sensitive values, must leave its view the same (the client's anatomization seeded by the
    client's own seed, so that both runs group alike)."""
    from parties.cdtl_tables import cdtl_folds

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
            seed=seed, anatomy_seed=7, timeout=30,
        )  # fmt: skip

    first, _ = check_swap(
        run,
        "cdbs",
        write_table(tmp_path / "base.csv", header, base),
        write_table(tmp_path / "swapped.csv", header, swapped),
    )
    assert any(m["receipt"] == "cdtl/request" for m in first["view"]["messages"])
