"""Hybrid-ID3: the estimator agrees with Theorem 1's fast method, SMC counts equal the true
counts, ω = all (and SMC-only) gives plain ID3's tree, ledgers hold only what Section 3.2
allows, the ``hybrid-id3`` system runs across three processes, and no party but Alice can
rebuild Alice's coins (``--seed`` seeds public choices only; a coin seed stays in its party's own
input file)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import itertools
import json
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import Discretizer, Table, weather
from mpc.errors import ConfigError
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import to_json
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork
from parties.cli.main import build_parser
from parties.own_data import read_own_table
from parties.own_party import OwnParty, load_deployment, own_party
from parties.programs.hybrid import (
    COIN_SEED_KEY,
    COINS_OS,
    COINS_SEEDED,
    TrainingParams,
    make_groups,
    party_codes,
    party_coins,
    table_groups,
)
from parties.programs.hybrid import run as hybrid_run
from parties.systems.hybrid import (
    HybridOptions,
    hybrid_plan,
    make_setup,
    parse_coin_seeds,
    split_attributes,
)
from protocols.hybrid.dot_session import DotSession, serve_helper
from protocols.hybrid.hybrid_id3 import (
    ALICE,
    BOB,
    DEALER,
    ESTIMATE_READINGS,
    MINERS,
    Estimator,
    HybridSetup,
    exchange_disguised,
    hybrid_id3,
    rows_digest,
)
from protocols.hybrid.randomized_response import binary_encode, disguise, estimate_counts
from protocols.ppid3.ppid3 import check_tree_equal
from protocols.primitives.dot_product import METHODS
from protocols.primitives.record_alignment import order_key

from .. import datasets
from ..conftest import run_mpc, run_mpc_json

PARTY_LABELS = {
    "hybrid/disguised",
    "hybrid/estimated-gains",
    "hybrid/estimated-counts",
    "hybrid/exact-counts",
    "hybrid/tree",
}
#: a party process also aligns its records with the other's, agrees on the domains and binds
#: the model's parts
PROCESS_LABELS = PARTY_LABELS | {
    "record-alignment/sizes",
    "record-alignment/common",
    "record-alignment/order",
    "psi-ca/set-sizes",
    "psi-ca/counts",
    "hybrid/domains",
    "hybrid/model",
}


def random_table(rng: np.random.Generator, n: int, t: int, classes: int) -> Table:
    cols = []
    for _ in range(t):
        k = int(rng.integers(2, 5))
        cols.append(np.array([f"v{int(x)}" for x in rng.integers(0, k, n)], dtype=object))
    # the class depends on the first two columns, with noise, so trees have some depth
    y = (
        np.array([int(c[1:]) for c in cols[0]]) + np.array([int(c[1:]) for c in cols[-1]])
    ) % classes
    noise = rng.random(n) < 0.15
    y = np.where(noise, rng.integers(0, classes, n), y)
    return Table(
        name="random",
        attributes=tuple(f"a{j}" for j in range(t)),
        kinds=("nominal",) * t,
        columns=tuple(cols),
        target=np.array([f"c{int(v)}" for v in y], dtype=object),
        class_name="class",
        source="hypothesis",
    )


def run_trees(
    table: Table,
    *,
    theta: float,
    groups: int,
    window: int,
    modes: tuple[str, ...] = ("randomization-only", "hybrid", "smc-only"),
    method: str = "dealer",
    seed: int = 0,
    max_depth: int | None = None,
    estimates: str = "clipped",
    miner: str = "both",
) -> tuple[HybridSetup, dict[str, Any], dict[str, Party]]:
    alice, bob = split_attributes(list(table.attributes), seed)
    setup = make_setup(table, alice, bob, theta=theta, groups=groups, seed=seed)
    codes = {p: party_codes(setup, table, p) for p in (ALICE, BOB)}
    smc = [m for m in modes if m != "randomization-only"]

    async def party_program(party: Party) -> Any:
        if party.name == DEALER:
            return await serve_helper(party, [f"t/{m}" for m in smc], method)
        view = await exchange_disguised(party, setup, codes[party.name], rng=seed + len(party.name))
        est = Estimator(setup, party.name, codes[party.name], view)
        out = {}
        for mode in modes:
            dot: Any = None
            if mode != "randomization-only":
                dot = DotSession(method, f"t/{mode}")
            out[mode] = await hybrid_id3(
                party,
                setup,
                est,
                codes[party.name],
                mode=mode,
                window=window,
                dot=dot,
                max_depth=max_depth,
                tag=f"t/{mode}",
                estimates=estimates,
                miner=miner,
            )
            if dot is not None:
                await dot.close(party)
        return out

    names = [ALICE, BOB] + ([DEALER] if METHODS[method].helper else [])
    results, parties = asyncio.run(
        run_in_memory(names, party_program, roles={n: n for n in names}, timeout=60)
    )
    return setup, results, parties


def plain_tree(table: Table, setup: HybridSetup, max_depth: int | None = None) -> dict[str, Any]:
    sites = {a: (0 if o == ALICE else 1) for a, o in setup.attributes}
    plain = ID3Classifier(max_depth=max_depth).fit(table, attribute_order=setup.names, sites=sites)
    return to_json(plain.tree_)


# ----------------------------------------------------------------------------- estimation


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    theta=st.sampled_from([0.2, 0.35, 0.65, 0.9]),
    groups=st.integers(1, 3),
)
def test_estimator_equals_the_fast_method_of_theorem_1(
    seed: int, theta: float, groups: int
) -> None:
    """Each party's estimate of ``N(path ∧ A = v ∧ class = C)`` for the other's disguised
    ``A`` is the randomized-response module's O(m) estimate with its own exact conditions as
    masks."""
    rng = np.random.default_rng(seed)
    table = random_table(rng, 60, 5, 2)
    alice, bob = split_attributes(list(table.attributes), seed)
    setup = make_setup(table, alice, bob, theta=theta, groups=groups, seed=seed)
    codes = {p: party_codes(setup, table, p) for p in (ALICE, BOB)}

    async def program(party: Party) -> Any:
        view = await exchange_disguised(party, setup, codes[party.name], rng=seed)
        return view, Estimator(setup, party.name, codes[party.name], view)

    res, _ = asyncio.run(run_in_memory([ALICE, BOB], program, roles={ALICE: ALICE, BOB: BOB}))
    view, est = res[BOB]
    a_path, a_cand = alice[0], alice[-1]
    b_cols = setup.columns_of(BOB)
    path = [(a_path, 0), (bob[0], 1)]
    got = est.counts(path, a_cand)
    layout, groups_bits = view.layout, view.layout.groups(setup.groups[ALICE])
    y = codes[BOB][:, b_cols.index(setup.class_name)]
    own = codes[BOB][:, b_cols.index(bob[0])] == 1
    masks = np.stack([own & (y == c) for c in range(len(setup.classes))])
    for v in range(len(setup.domains[a_cand])):
        conj = layout.conjunction(
            {a_path: setup.domains[a_path][0], a_cand: setup.domains[a_cand][v]}
        )
        want = estimate_counts(view.bits, [conj], groups_bits, theta, masks=masks)[0]
        np.testing.assert_allclose(got[v], want, atol=1e-6)
    # Alice's side: Bob's candidate, path condition and class are all disguised, in one group
    # or in several (with the table's groups, the candidate and the class often share one)
    a_view, a_est = res[ALICE]
    b_path, b_cand = bob[0], bob[-1]
    got = a_est.counts([(b_path, 1), (alice[0], 0)], b_cand)
    groups_bits = a_view.layout.groups(setup.groups[BOB])
    own = codes[ALICE][:, setup.columns_of(ALICE).index(alice[0])] == 0
    for v, c in itertools.product(range(len(setup.domains[b_cand])), range(2)):
        conj = a_view.layout.conjunction(
            {b_path: setup.domains[b_path][1], b_cand: setup.domains[b_cand][v],
             setup.class_name: setup.classes[c]}
        )  # fmt: skip
        want = estimate_counts(a_view.bits, [conj], groups_bits, theta, masks=own)[0]
        np.testing.assert_allclose(got[v, c], want, atol=1e-6)


def test_theta_one_estimates_are_the_true_counts() -> None:
    table = random_table(np.random.default_rng(3), 80, 6, 3)
    setup, results, _ = run_trees(
        table, theta=1.0, groups=2, window=1, modes=("randomization-only",)
    )
    # with θ = 1 nothing is disguised, so randomization-only is plain ID3
    assert check_tree_equal(results[ALICE]["randomization-only"].tree, plain_tree(table, setup))


def test_theta_one_half_is_refused() -> None:
    table = weather()
    alice, bob = split_attributes(list(table.attributes), 0)
    with pytest.raises(ConfigError, match="Theorem 2"):
        make_setup(table, alice, bob, theta=0.5, groups=1, seed=0)


# ----------------------------------------------------------------------------- exactness


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(20, 90),
    t=st.integers(2, 6),
    classes=st.integers(2, 3),
    groups=st.integers(1, 3),
    theta=st.sampled_from([0.3, 0.45, 0.8]),
    max_depth=st.sampled_from([None, 2]),
)
def test_smc_only_and_full_window_equal_plain_id3(
    seed: int, n: int, t: int, classes: int, groups: int, theta: float, max_depth: int | None
) -> None:
    table = random_table(np.random.default_rng(seed), n, t, classes)
    setup, results, _ = run_trees(
        table,
        theta=theta,
        groups=groups,
        window=t,
        modes=("hybrid", "smc-only"),
        seed=seed,
        max_depth=max_depth,
    )
    plain = plain_tree(table, setup, max_depth)
    for party in (ALICE, BOB):
        assert check_tree_equal(results[party]["smc-only"].tree, plain)
        assert check_tree_equal(results[party]["hybrid"].tree, plain)
    assert results[ALICE]["hybrid"].dot_products == results[ALICE]["smc-only"].dot_products
    assert results[ALICE]["hybrid"].smc_gains == results[ALICE]["smc-only"].smc_gains
    # ω = every attribute computes every gain by SMC: C = 1 (when a split was made at all)
    assert results[ALICE]["hybrid"].smc_share in (None, 1.0)


def test_exact_counts_are_the_true_counts_and_the_window_saves_dot_products() -> None:
    table = random_table(np.random.default_rng(11), 120, 6, 2)
    setup, results, parties = run_trees(table, theta=0.3, groups=2, window=1)
    hyb, smc = results[ALICE]["hybrid"], results[ALICE]["smc-only"]
    assert hyb.dot_products < smc.dot_products
    codes = {a: np.asarray(table.column(a), dtype=str) for a in setup.names}
    y = np.asarray(table.target, dtype=str)
    checked = 0
    for entry in parties[ALICE].ledger.entries:
        if entry.label != "hybrid/exact-counts" or entry.step.startswith("t/smc-only"):
            continue
        node = entry.value["node"]
        if node == 0:
            continue
        split_entry = next(e for e in hyb.log if e["node"] == node)
        rows = _rows_of_node(hyb.tree, node, codes)
        for a, counts in entry.value["counts"].items():
            want = [
                [int(((codes[a] == v) & (y == c) & rows).sum()) for c in setup.classes]
                for v in setup.domains[a]
            ]
            assert counts == want, (node, a)
            checked += 1
        assert split_entry["split"] in entry.value["counts"]
    assert checked > 0


# ----------------------------------------------------------------------------- the cost C


def _hand_table() -> Table:
    """24 rows, every combination of a0 in {x, y, z} and binary a1, a2, a3 once; the class is
    yes at a0 = x, no at a0 = y and a1's value at a0 = z. ID3 splits the root on a0 (gain 2/3;
    a1 0.08, a2 and a3 0), then the node a0 = z on a1, whose children are pure."""
    rows = list(itertools.product("xyz", "pq", "pq", "pq"))
    labels = ["yes" if r[0] == "x" else "no" if r[0] == "y" else "yes" if r[1] == "p" else "no"
              for r in rows]  # fmt: skip
    return Table(
        name="hand",
        attributes=("a0", "a1", "a2", "a3"),
        kinds=("nominal",) * 4,
        columns=tuple(np.array([r[j] for r in rows], dtype=object) for j in range(4)),
        target=np.array(labels, dtype=object),
        class_name="class",
        source="test",
    )


@pytest.mark.parametrize(
    ("window", "by_smc"), [(1, 1 + 1), (2, 2 + 2), (3, 3 + 3), (4, 4 + 3), (9, 4 + 3)]
)
def test_c_is_the_share_of_gain_computations_done_by_smc(window: int, by_smc: int) -> None:
    """Section 5.4's C counted by hand on a tree with two splits: the root computes the gains
    of its 4 candidates, the node a0 = z of the 3 left, 7 in all; the hybrid computes
    ``min(ω, 4) + min(ω, 3)`` of them by SMC, SMC-only all 7, randomization-only none. θ = 1
    (nothing disguised) makes all three trees ID3's."""
    _, results, _ = run_trees(_hand_table(), theta=1.0, groups=1, window=window)
    hybrid, smc, rand = (results[ALICE][m] for m in ("hybrid", "smc-only", "randomization-only"))
    for res in (hybrid, smc, rand):
        assert res.tree["attribute"] == "a0" and res.tree["children"]["z"]["attribute"] == "a1"
        assert res.gain_computations == 7
    assert hybrid.smc_gains == by_smc and hybrid.smc_share == by_smc / 7
    assert smc.smc_gains == 7 and smc.smc_share == 1.0
    assert rand.smc_gains == 0 and rand.smc_share == 0.0
    assert results[BOB]["hybrid"].smc_share == hybrid.smc_share


def _split_depths(node: dict[str, Any], depth: int = 0) -> list[int]:
    if "attribute" not in node:
        return []
    below = [d for c in node["children"].values() for d in _split_depths(c, depth + 1)]
    return [depth, *below]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    t=st.integers(3, 6),
    window=st.integers(1, 4),
    theta=st.sampled_from([0.3, 0.45, 0.8]),
)
def test_c_counts_the_candidates_of_every_split(
    seed: int, t: int, window: int, theta: float
) -> None:
    """Every node of the tree that splits chose among the ``t - depth`` attributes not yet on
    its path and computed ``min(ω, t - depth)`` of their gains by SMC."""
    table = random_table(np.random.default_rng(seed), 60, t, 2)
    _, results, _ = run_trees(
        table, theta=theta, groups=2, window=window, modes=("hybrid",), seed=seed
    )
    res = results[ALICE]["hybrid"]
    depths = _split_depths(res.tree)
    assert res.gain_computations == sum(t - d for d in depths)
    assert res.smc_gains == sum(min(window, t - d) for d in depths)


# ----------------------------------------------------------------------------- the groups g


def test_g_groups_are_dealt_across_the_whole_table() -> None:
    """The paper's g (Section 4): the table's t columns (attributes and class) in g groups of
    sizes differing by at most one; each party's coin groups are its parts of them."""
    alice, bob, cls = ["a1", "a3", "a5"], ["a0", "a2", "a4"], "class"
    t = 7
    mine = {ALICE: set(alice), BOB: {*bob, cls}}
    for seed, g in itertools.product((0, 3, 8), range(1, t + 1)):
        whole = table_groups(alice, bob, cls, g, seed)
        assert len(whole) == g
        assert sorted(a for grp in whole for a in grp) == sorted([*alice, *bob, cls])
        assert max(map(len, whole)) - min(map(len, whole)) <= 1
        dealt = make_groups(alice, bob, cls, g, seed)
        assert dealt == make_groups(alice, bob, cls, g, seed, grouping="table")
        for p in (ALICE, BOB):
            parts = [[a for a in grp if a in mine[p]] for grp in whole]
            assert dealt[p] == [part for part in parts if part]
        assert g <= len(dealt[ALICE]) + len(dealt[BOB]) <= min(2 * g, t)
    # g = 1: one group, which each party holds a part of; g = t: a group per column
    assert make_groups(alice, bob, cls, 1, 5) == {ALICE: [alice], BOB: [[*bob, cls]]}
    single = make_groups(alice, bob, cls, t, 5)
    assert sorted(single[ALICE]) == [[a] for a in sorted(alice)]
    assert sorted(single[BOB]) == [[a] for a in sorted([*bob, cls])]
    for bad in (0, t + 1):
        with pytest.raises(ConfigError, match="between 1 and t = 7"):
            make_groups(alice, bob, cls, bad, 0)
    with pytest.raises(ConfigError, match="--grouping must be one of table, party"):
        make_groups(alice, bob, cls, 2, 0, grouping="site")


def test_g_groups_per_party_are_unchanged() -> None:
    """``grouping = "party"``: each party's own columns (Bob's with the class) in
    ``min(g, its columns)`` groups, exactly as this option dealt them before the paper's
    reading became the default."""
    a, b = ["outlook", "humidity"], ["temperature", "windy"]
    assert make_groups(a, b, "play", 2, 0, grouping="party") == {
        ALICE: [["outlook"], ["humidity"]], BOB: [["temperature", "play"], ["windy"]]
    }  # fmt: skip
    assert make_groups(a, b, "play", 2, 7, grouping="party") == {
        ALICE: [["humidity"], ["outlook"]], BOB: [["temperature", "play"], ["windy"]]
    }  # fmt: skip
    assert make_groups(a, b, "play", 9, 0, grouping="party") == {
        ALICE: [["outlook"], ["humidity"]], BOB: [["temperature"], ["windy"], ["play"]]
    }  # fmt: skip


def test_grouping_is_an_option_of_the_command_line_and_the_deployment(tmp_path: Path) -> None:
    """``--grouping table`` (the default) deals the weather table's t = 5 columns; ``--groups
    6`` is refused before any party starts; ``--grouping party`` reads g per party. A
    deployment file with an integer ``groups`` reads it as its ``grouping`` says."""
    one = _plan("--groups", "1")
    assert one.params["grouping"] == "table"
    alice, bob = (list(one.context["setup"].columns_of(p)) for p in (ALICE, BOB))
    assert json.loads(one.params["groups"]) == {ALICE: [alice], BOB: [bob]}
    every = json.loads(_plan("--groups", "5").params["groups"])
    assert all(len(g) == 1 for gs in every.values() for g in gs)
    assert sum(map(len, every.values())) == 5
    with pytest.raises(ConfigError, match="t = 5"):
        _plan("--groups", "6")
    per_party = _plan("--groups", "6", "--grouping", "party")
    assert per_party.params["grouping"] == "party"
    assert json.loads(per_party.params["groups"])[ALICE] == [[a] for a in alice]

    def params(extra: str) -> TrainingParams:
        parties = "".join(
            f'[[party]]\nname = "{n}"\nrole = "{n}"\nendpoint = "tcp://127.0.0.1:{6001 + i}"\n'
            f'public_key = "keys/{n}.public"\n' + (f"columns = {json.dumps(c)}\n" if c else "")
            for i, (n, c) in enumerate(
                [(ALICE, ["outlook", "humidity"]), (BOB, ["temperature", "windy"]), (DEALER, [])]
            )
        )
        path = tmp_path / "deployment.toml"
        path.write_text(
            '[deployment]\ntimeout = 5\n[protocol]\nname = "hybrid-id3"\n[protocol.params]\n'
            f'class = "play"\ngroups = 5\n{extra}\n{parties}'
        )
        return TrainingParams.from_config(load_deployment(path))

    table = params("")
    assert table.grouping == "table"
    assert sorted(table.groups[ALICE]) == [["humidity"], ["outlook"]]  # g = t: one per column
    assert sorted(table.groups[BOB]) == [["play"], ["temperature"], ["windy"]]
    assert params('grouping = "party"').groups == make_groups(
        ["outlook", "humidity"], ["temperature", "windy"], "play", 5, 0, grouping="party"
    )
    with pytest.raises(ConfigError, match="grouping must be one of"):
        params('grouping = "site"')


def _rows_of_node(tree: dict[str, Any], number: int, codes: dict[str, np.ndarray]) -> np.ndarray:
    """The training rows at node ``number`` (pre-order numbering, as Hybrid-ID3 numbers)."""
    counter = [0]

    def visit(node: dict[str, Any], rows: np.ndarray) -> np.ndarray | None:
        if counter[0] == number:
            return rows
        counter[0] += 1
        for value, child in node.get("children", {}).items():
            found = visit(child, rows & (codes[node["attribute"]] == value))
            if found is not None:
                return found
        return None

    n = len(next(iter(codes.values())))
    found = visit(tree, np.ones(n, dtype=bool))
    assert found is not None
    return found


def test_paillier_dot_products_give_the_same_tree() -> None:
    table = weather()
    setup, results, _ = run_trees(
        table, theta=0.8, groups=1, window=4, modes=("smc-only",), method="paillier"
    )
    assert check_tree_equal(results[BOB]["smc-only"].tree, plain_tree(table, setup))


# ----------------------------------------------------------------------------- leakage


def test_ledgers_hold_only_what_section_3_allows() -> None:
    table = random_table(np.random.default_rng(5), 70, 5, 2)
    _, _, parties = run_trees(table, theta=0.7, groups=2, window=2)
    for name in (ALICE, BOB):
        labels = {e.label for e in parties[name].ledger.entries}
        assert labels <= PARTY_LABELS, labels - PARTY_LABELS
        disguised = [e for e in parties[name].ledger.entries if e.label == "hybrid/disguised"]
        assert len(disguised) == 1 and disguised[0].value["from"] != name
    assert {e.label for e in parties[DEALER].ledger.entries} == {"dot-product/shape"}


def test_what_alice_receives_is_disguised_or_masked() -> None:
    """Bob's disguised table differs from his true encoding in about 1 - θ of the groups, and
    no dot-product message to Alice is Bob's raw 0/1 matrix."""
    table = random_table(np.random.default_rng(8), 400, 4, 2)
    alice, bob = split_attributes(list(table.attributes), 8)
    setup = make_setup(table, alice, bob, theta=0.7, groups=1, seed=8)
    codes = {p: party_codes(setup, table, p) for p in (ALICE, BOB)}

    async def program(party: Party) -> Any:
        return await exchange_disguised(party, setup, codes[party.name])

    res, _ = asyncio.run(run_in_memory([ALICE, BOB], program, roles={ALICE: ALICE, BOB: BOB}))
    cols = setup.columns_of(BOB)
    true_bits, _ = binary_encode(
        {a: [setup.domains[a][c] for c in codes[BOB][:, j]] for j, a in enumerate(cols)},
        {a: list(setup.domains[a]) for a in cols},
        code=setup.code,
    )
    flipped = (res[ALICE].bits != true_bits).all(axis=1)  # one group: all bits or none
    kept = (res[ALICE].bits == true_bits).all(axis=1)
    assert (flipped | kept).all()
    assert 0.2 < flipped.mean() < 0.4  # 1 - θ = 0.3, n = 400


# ----------------------------------------------------------------------------- processes


@pytest.mark.datasets
@pytest.mark.processes
@pytest.mark.timeout(120)
def test_hybrid_id3_system_across_three_processes() -> None:
    code, doc = run_mpc_json(
        "run", "hybrid-id3", "--dataset", "weather", "--theta", "0.8", "--window", "2",
        "--seed", "1", "--test-split", "0.3", deadline=100,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc
    r = doc["result"]
    assert r["smc_only_identical_to_plain"] is True
    assert 0 < r["smc_dot_products"] <= r["smc_only_dot_products"]
    assert r["dot_product_ratio"] == r["smc_dot_products"] / r["smc_only_dot_products"]
    assert 0 < r["smc_gains"] <= r["gain_computations"]
    assert r["cost_ratio_C"] == r["smc_gains"] / r["gain_computations"]
    assert set(doc["parties"]) == {ALICE, BOB, DEALER}
    for name in (ALICE, BOB):
        labels = {e["label"] for e in doc["parties"][name]["ledger"]}
        assert PARTY_LABELS <= labels <= PROCESS_LABELS, labels ^ PROCESS_LABELS
        assert doc["parties"][name]["metrics"]["crypto"]["dot_products"] > 0
    assert {e["label"] for e in doc["parties"][DEALER]["ledger"]} == {"dot-product/shape"}


@pytest.mark.processes
@pytest.mark.timeout(60)
def test_theta_one_half_fails_before_any_party_starts() -> None:
    code, out, err = run_mpc("run", "hybrid-id3", "--theta", "0.5", deadline=50)
    assert code == 2
    assert "Theorem 2" in err and "started" not in out + err


# ----------------------------------------------------------------------------- the coins
#
# Alice's disguise protects her data from Bob (and from the dealer) only while her coins are
# hers alone. The attacker below is Bob or the dealer: it reads every file its party can read
# in the deployment and everything its party received, takes every integer it finds there as
# a candidate seed (and the seeds a party might derive from one: x, x + 1, 2x, 2x + 1, ...),
# rebuilds Alice's coins from each with the release's own coin code, and un-flips the disguised
# table it holds. Without the coins it can do no better than read the disguised table as it is,
# which is right in a fraction θ of the groups.


def _alice_bits(cfg_dir: Path) -> tuple[np.ndarray, list[list[int]], list[str]]:
    """Alice's true bit table in her own file's row order (the test's oracle: her own private
    input file, read and encoded as her process does), her bit groups and her record ids."""
    cfg = load_deployment(cfg_dir / "deployment.toml")
    me = own_party(cfg, ALICE)
    if me.data is not None and me.data.suffix == ".json":  # --coin-seeds: the CSV inside
        csv = cfg_dir / "alice-from-json.csv"
        csv.write_text(json.loads(me.data.read_text())["csv"])
        me = dataclasses.replace(me, data=csv)
    own, _ = read_own_table(me, class_column=None)
    table = own.table
    if "continuous" in table.kinds:
        table = Discretizer.fit(table, int(cfg.params["bins"])).transform(table)
    domains = {a: sorted({str(v) for v in table.column(a)}) for a in table.attributes}
    bits, layout = binary_encode(
        {a: [str(v) for v in table.column(a)] for a in table.attributes},
        domains,
        code=str(cfg.params["code"]),
    )
    groups = json.loads(cfg.params["groups"])[ALICE]
    return bits, layout.groups(groups), [str(i) for i in own.ids]


def _views(cfg_dir: Path, names: Iterable[str]) -> dict[str, str]:
    """Every file the parties ``names`` can read in a kept deployment: the deployment file,
    their own input files, reports and logs."""
    paths = [cfg_dir / "deployment.toml"]
    for n in names:
        paths += [cfg_dir / "data" / f"{n}.{x}" for x in ("csv", "json")]
        paths += [cfg_dir / "reports" / f"{n}.json", cfg_dir / "logs" / f"{n}.log"]
    return {str(p.relative_to(cfg_dir)): p.read_text() for p in paths if p.exists()}


def _candidate_seeds(texts: Iterable[str]) -> set[int]:
    """Every integer written in ``texts`` and the seeds a party might derive from it."""
    found = {int(t) for text in texts for t in re.findall(r"\d+", text) if len(t) <= 18}
    out: set[int] = set()
    for x in found:
        out |= {x, x + 1, max(x - 1, 0), 2 * x, 2 * x + 1, 2 * x + 2, 3 * x, x * x}
    return out


def _rebuilt(received: np.ndarray, groups: list[list[int]], theta: float, seed: int) -> np.ndarray:
    """Alice's bits as an attacker who takes ``seed`` for her coin seed reads them: her coins
    drawn as :func:`protocols.hybrid.randomized_response.disguise` draws seeded coins, then undone
    (``received`` in the order the coins were drawn in: Alice's file order)."""
    group_of = np.empty(received.shape[1], dtype=np.intp)
    for k, g in enumerate(groups):
        group_of[g] = k
    truth = np.random.default_rng(seed).random(received.shape[0] * len(groups)) < theta
    flip = ~truth.reshape(received.shape[0], len(groups))[:, group_of]
    return np.asarray(received ^ flip.astype(np.uint8))


def _received_by_bob(cfg_dir: Path, alice_ids: list[str]) -> np.ndarray:
    """The disguised table Alice sends Bob, tapped off the wire of a run of the party programs
    (:func:`parties.programs.hybrid.run`, what each party process runs) over the kept
    deployment file and input files, on the in-memory transport; its rows put back into
    Alice's file order with the order key, computed from the tapped key shares."""
    cfg = load_deployment(cfg_dir / "deployment.toml")
    network = InMemoryNetwork()
    seen: list[np.ndarray] = []
    shares: dict[str, bytes] = {}

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if (sender, receiver) == (ALICE, BOB) and env.tag == "hybrid/disguise":
            seen.append(env.body)
        if env.tag == "record-alignment/key-share" and sender in (ALICE, BOB):
            shares[sender] = env.body

    network.taps.append(tap)

    def program(me: OwnParty) -> Any:
        return lambda party: hybrid_run(party, cfg, me)

    asyncio.run(
        run_in_memory(
            cfg.names,
            {p.name: program(own_party(cfg, p.name)) for p in cfg.parties},
            roles={p.name: p.role for p in cfg.parties},
            timeout=60,
            network=network,
        )
    )
    assert len(seen) == 1
    key = order_key([shares[ALICE], shares[BOB]])
    keyed = [hmac.new(key, i.encode(), hashlib.sha256).digest() for i in alice_ids]
    order = sorted(range(len(alice_ids)), key=keyed.__getitem__)  # common row t -> file row
    in_file_order = np.empty_like(seen[0])
    in_file_order[order] = seen[0]
    return in_file_order


@pytest.mark.processes
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("theta", "options"),
    [
        (0.7, ["--groups", "3"]),
        (0.7, ["--code", "onehot", "--groups", "1", "--window", "1"]),
        (0.8, ["--groups", "16", "--test-split", "0.5", "--bins", "3"]),
    ],
    ids=["paired-3-groups", "onehot-1-group", "16-groups-theta-0.8"],
)
def test_bob_and_the_dealer_cannot_rebuild_alices_coins_from_what_they_see(
    tmp_path: Path, theta: float, options: list[str]
) -> None:
    """``mpc run hybrid-id3 --seed 5``: no seed that Bob or the dealer can find in the files
    they can read or in what they receive rebuilds Alice's coins. The process run is checked
    through Bob's ledger (the digest of the table he received); the fraction of Alice's bits
    an attacker recovers is measured on a tapped run of the same party programs over the same
    deployment: about θ (reading the disguised table as it is), far from 1."""
    datasets.needs("house-votes-84")
    run = tmp_path / "run"
    code, out, err = run_mpc(
        "run", "hybrid-id3", "--dataset", "house-votes-84", "--seed", "5", *options,
        "--theta", str(theta), "--max-depth", "2", "--keep", str(run), "--json", deadline=150,
    )  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and doc["ok"], err
    true_bits, groups, ids = _alice_bits(run)
    views = _views(run, [BOB, DEALER])
    assert {"deployment.toml", "data/bob.csv", "reports/bob.json", "logs/bob.log"} <= set(views)
    candidates = _candidate_seeds([*views.values(), out, err])
    assert {5, 10, 11} <= candidates

    # the process run: Bob's ledger has the digest of the rows of the disguised table he
    # received (in sorted order: the common record order is new in every run)
    (entry,) = [e for e in doc["parties"][BOB]["ledger"] if e["label"] == "hybrid/disguised"]
    digest = entry["value"]["rows_sha256"]
    rebuilt = [
        c for c in candidates if rows_digest(disguise(true_bits, groups, theta, c)) == digest
    ]
    assert rebuilt == [], f"Alice's coins rebuilt from the seeds {rebuilt} Bob/dealer can see"

    # the bits: what Bob receives, un-flipped with every candidate's coins
    received = _received_by_bob(run, ids)
    as_is = float((received == true_bits).mean())
    best = max(
        float((_rebuilt(received, groups, theta, c) == true_bits).mean()) for c in candidates
    )
    # the disguise: right in a fraction θ of the coins, one coin per record and group, each
    # coin deciding its group's bits; five standard deviations of the fraction of right bits
    # (a false alarm about once in 3.5 million runs)
    sizes = np.array([len(g) for g in groups], dtype=float)
    weight = float((sizes**2).sum() / sizes.sum() ** 2)  # 1 / the number of equal groups
    tolerance = 5 * (theta * (1 - theta) * weight / true_bits.shape[0]) ** 0.5
    assert abs(as_is - theta) < tolerance, (as_is, theta, tolerance)
    assert best < theta + tolerance, f"an attacker recovers {best:.1%} of Alice's bits"
    params = tomllib.loads((run / "deployment.toml").read_text())["protocol"]["params"]
    assert not {k for k in params if "seed" in k or "coin" in k}, params
    assert doc["result"]["coins"] == {ALICE: COINS_OS, BOB: COINS_OS}


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_a_coin_seed_is_only_in_its_partys_own_input_file(tmp_path: Path) -> None:
    """``--coin-seeds A,B``: Alice's value is in Alice's input file and nowhere else in the
    deployment (deployment file, other input files, keys, reports, logs) nor in ``mpc run``'s
    output; likewise Bob's. The reports say only that the coins were seeded."""
    run = tmp_path / "run"
    seeds = {ALICE: "918273645", BOB: "564738291"}
    code, out, err = run_mpc(
        "run", "hybrid-id3", "--seed", "3", "--coin-seeds", f"{seeds[ALICE]},{seeds[BOB]}",
        "--keep", str(run), "--json", deadline=100,
    )  # fmt: skip
    doc = json.loads(out)
    assert code == 0 and doc["ok"], err
    assert doc["result"]["coins"] == {ALICE: COINS_SEEDED, BOB: COINS_SEEDED}
    for name in (ALICE, BOB):
        assert doc["parties"][name]["result"]["coins"] == COINS_SEEDED
    files = sorted(p for p in run.rglob("*") if p.is_file())
    assert run / "deployment.toml" in files and run / "reports" / "bob.json" in files
    for name, value in seeds.items():
        own = run / "data" / f"{name}.json"
        assert json.loads(own.read_text())[COIN_SEED_KEY] == int(value)
        holders = [str(p.relative_to(run)) for p in files if value.encode() in p.read_bytes()]
        assert holders == [str(own.relative_to(run))], (name, holders)
        assert value not in out + err
    # and the seed is the one Alice's coins came from: drawn in her file's row order
    true_bits, groups, _ = _alice_bits(run)
    (entry,) = [e for e in doc["parties"][BOB]["ledger"] if e["label"] == "hybrid/disguised"]
    redone = disguise(true_bits, groups, 0.7, int(seeds[ALICE]))
    assert rows_digest(redone) == entry["value"]["rows_sha256"]


@pytest.mark.processes
@pytest.mark.timeout(150)
def test_coin_seeds_reproduce_the_disguised_tables_and_os_coins_do_not() -> None:
    """Two runs with the same ``--coin-seeds`` send the same disguised rows (each record keeps
    its coins: they are drawn in the party's file order; the digests of the rows in the
    receivers' ledgers); two runs without send different ones."""

    def digests(*extra: str) -> tuple[str, str]:
        code, doc = run_mpc_json(
            "run", "hybrid-id3", "--dataset", "house-votes-84", "--seed", "2", "--groups", "2",
            "--test-split", "0.2", "--max-depth", "2", *extra, deadline=60,
        )  # fmt: skip
        assert code == 0 and doc["ok"], doc["parties"]
        got = []
        for name in (ALICE, BOB):  # the rows: the common record order is new in every run
            (e,) = [e for e in doc["parties"][name]["ledger"] if e["label"] == "hybrid/disguised"]
            got.append(e["value"]["rows_sha256"])
        return got[0], got[1]

    seeded = [digests("--coin-seeds", "101,202") for _ in range(2)]
    assert seeded[0] == seeded[1]
    # another seed of Bob's changes Bob's table (received by Alice) and nothing of Alice's
    other = digests("--coin-seeds", "101,203")
    assert other[1] == seeded[0][1] and other[0] != seeded[0][0]
    os_coins = [digests() for _ in range(2)]
    assert os_coins[0][0] != os_coins[1][0] and os_coins[0][1] != os_coins[1][1]


def _plan(*args: str) -> Any:
    return hybrid_plan(
        HybridOptions.from_namespace(build_parser().parse_args(["run", "hybrid-id3", *args]))
    )


def test_the_public_seed_goes_to_public_choices_and_coin_seeds_to_their_owners_only() -> None:
    """``--seed`` changes the split, partition and groups and nothing in a party's input file
    but its columns; ``--coin-seeds`` adds each party's own value to its own input file only
    (a JSON object around its CSV), and the deployment's parameters hold neither."""
    plain = _plan("--seed", "4", "--groups", "2")
    seeded = _plan("--seed", "4", "--groups", "2", "--coin-seeds", "17,29")
    assert plain.params == seeded.params
    assert not {k for k in seeded.params if "seed" in k or "coin" in k}
    data = {s.name: s.data for s in seeded.parties}
    assert data[ALICE] is not None and data[BOB] is not None
    assert data[ALICE][COIN_SEED_KEY] == 17 and data[BOB][COIN_SEED_KEY] == 29
    assert data[DEALER] is None  # the dealer has no private input
    assert all(s.data is None and s.csv is not None for s in plain.parties if s.name != DEALER)
    assert "17" not in json.dumps([seeded.params, data[BOB], [s.entries for s in seeded.parties]])
    assert plain.params["groups"] != _plan("--seed", "5", "--groups", "2").params["groups"]


def test_coin_seeds_are_checked() -> None:
    assert parse_coin_seeds(None) is None
    assert parse_coin_seeds("3, 4") == {ALICE: 3, BOB: 4}
    for bad in ("3", "3,4,5", "a,b", "-1,4", ""):
        with pytest.raises(ConfigError, match="two non-negative integers"):
            parse_coin_seeds(bad)
    with pytest.raises(ConfigError, match="rebuild the other's coins"):
        parse_coin_seeds("7,7")
    me = OwnParty("alice", "alice", "tcp://127.0.0.1:1", "", None)
    assert party_coins({"codes": []}, me) == (None, COINS_OS)
    rng, label = party_coins({COIN_SEED_KEY: 12}, me)
    assert label == COINS_SEEDED and rng is not None
    assert rng.random() == np.random.default_rng(12).random()
    for bad_seed in (-1, True, "12", 1.5):
        with pytest.raises(ConfigError, match=COIN_SEED_KEY):
            party_coins({COIN_SEED_KEY: bad_seed}, me)


# ----------------------------------------------------------------------------- the baseline


def _leaf_counts(node: dict[str, Any]) -> list[float]:
    if "children" not in node:
        return [float(x) for x in node["counts"].values()]
    return [*node["counts"].values(), *(x for c in node["children"].values()
                                        for x in _leaf_counts(c))]  # fmt: skip


def test_raw_estimates_give_negative_counts_that_the_clipped_reading_never_shows() -> None:
    """The readings of the randomization-only baseline change what they say: with raw
    estimates (``raw``, ``raw-leaves``) some node of the tree has a negative estimated count,
    which the clipped readings (``clipped``, ``raw-gains``) never show; the trees differ."""
    table = random_table(np.random.default_rng(4), 300, 6, 2)
    trees, negative = {}, {}
    for estimates in ESTIMATE_READINGS:
        _, res, _ = run_trees(table, theta=0.45, groups=3, window=2, seed=4, estimates=estimates,
                              modes=("randomization-only",))  # fmt: skip
        tree = res[ALICE]["randomization-only"].tree
        assert tree == res[BOB]["randomization-only"].tree  # one tree at both parties
        trees[estimates] = tree
        negative[estimates] = min(_leaf_counts(tree)) < 0
    assert negative == {"clipped": False, "raw": True, "raw-gains": False, "raw-leaves": True}
    assert trees["raw"] != trees["clipped"]


def test_a_single_miner_decides_with_its_own_estimates_only() -> None:
    """``miner="bob"``: the baseline's splits and leaves are Bob's estimates alone (Alice's
    still travel, so that both build the tree); the tree differs from the averaged one and
    from Alice's."""
    table = random_table(np.random.default_rng(7), 300, 6, 2)
    trees = {}
    for miner in MINERS:
        _, res, _ = run_trees(table, theta=0.45, groups=3, window=2, seed=7, miner=miner,
                                    modes=("randomization-only",))  # fmt: skip
        assert res[ALICE]["randomization-only"].tree == res[BOB]["randomization-only"].tree
        trees[miner] = res[ALICE]["randomization-only"].tree
    assert len({json.dumps(t, sort_keys=True) for t in trees.values()}) == 3
    with pytest.raises(ConfigError, match="miner must be one of"):
        run_trees(table, theta=0.45, groups=3, window=2, miner="carol",
                  modes=("randomization-only",))  # fmt: skip
