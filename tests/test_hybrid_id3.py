"""Hybrid-ID3: the estimator agrees with Theorem 1's fast method, SMC counts equal the true
counts, ω = all (and SMC-only) gives plain ID3's tree, ledgers hold only what Section 3.2
allows, and the ``hybrid-id3`` system runs across three processes."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import Table, weather
from mpc.errors import ConfigError
from mpc.id3 import ID3Classifier
from mpc.local import run_in_memory
from mpc.runtime import Party
from mpc.tree import to_json
from parties.hybrid_system import make_setup, party_codes, split_attributes
from protocols.hybrid_id3 import (
    ALICE,
    BOB,
    DEALER,
    DealerDot,
    Estimator,
    HybridSetup,
    exchange_disguised,
    hybrid_id3,
    paillier_dot,
    serve_dealer,
)
from protocols.ppid3 import check_tree_equal
from protocols.randomized_response import binary_encode, estimate_counts

from .conftest import run_mpc, run_mpc_json

PARTY_LABELS = {
    "hybrid/disguised",
    "hybrid/estimated-gains",
    "hybrid/estimated-counts",
    "hybrid/exact-counts",
    "hybrid/tree",
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
) -> tuple[HybridSetup, dict[str, Any], dict[str, Party]]:
    alice, bob = split_attributes(list(table.attributes), seed)
    setup = make_setup(table, alice, bob, theta=theta, groups=groups, seed=seed)
    codes = {p: party_codes(setup, table, p) for p in (ALICE, BOB)}
    smc = [m for m in modes if m != "randomization-only"]

    async def party_program(party: Party) -> Any:
        if party.name == DEALER:
            return await serve_dealer(party, [f"t/{m}" for m in smc])
        view = await exchange_disguised(party, setup, codes[party.name], rng=seed + len(party.name))
        est = Estimator(setup, party.name, codes[party.name], view)
        out = {}
        for mode in modes:
            dot: Any = None
            if mode != "randomization-only":
                dot = DealerDot(f"t/{mode}") if method == "dealer" else paillier_dot()
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
            )
            if isinstance(dot, DealerDot):
                await dot.close(party)
        return out

    names = [ALICE, BOB] + ([DEALER] if method == "dealer" else [])
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
    """Bob's estimate of ``N(path ∧ A = v ∧ class = C)`` for Alice's disguised ``A`` is the
    randomized-response module's O(m) estimate with Bob's exact conditions as masks."""
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
    assert r["cost_ratio"] == r["smc_dot_products"] / r["smc_only_dot_products"]
    assert 0 < r["smc_gains"] <= r["smc_only_gains"]
    assert set(doc["parties"]) == {ALICE, BOB, DEALER}
    for name in (ALICE, BOB):
        labels = {e["label"] for e in doc["parties"][name]["ledger"]}
        assert labels <= PARTY_LABELS
        assert doc["parties"][name]["metrics"]["crypto"]["dot_products"] > 0
    assert {e["label"] for e in doc["parties"][DEALER]["ledger"]} == {"dot-product/shape"}


@pytest.mark.processes
@pytest.mark.timeout(60)
def test_theta_one_half_fails_before_any_party_starts() -> None:
    code, out, err = run_mpc("run", "hybrid-id3", "--theta", "0.5", deadline=50)
    assert code == 2
    assert "Theorem 2" in err and "started" not in out + err
