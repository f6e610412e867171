"""Secure comparison and argmax (the engine's circuits, protocols/engine/circuits.py, and the
protocol of protocols/primitives/secure_comparison.py): exact against the plain computation
over random inputs and at the edges (ties, zero, the largest values the ring allows), each
party's view only what is declared (the masked messages uniform whatever the inputs, the
helper receiving public requests only), and the run across processes (``mpc run
secure-argmax``)."""

from __future__ import annotations

import asyncio
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from mpc.crypto import randomness
from mpc.runtime.codec import decode
from mpc.runtime.local import InMemoryNetwork, run_in_memory
from mpc.runtime.view import ViewRecorder
from protocols.engine import circuits
from protocols.engine.preprocessing import local_pools, preprocessing_of
from protocols.engine.ring import RING64, Ring
from protocols.engine.session import CountingSession, Session
from protocols.engine.triples import Needs, ot_triples
from protocols.primitives import secure_comparison as sc

from ..conftest import run_mpc_json
from ..views import canonical_view, differences, uniformity_failures

LIMIT = 2**62 - 1
NAMES = ["p0", "p1", "dealer"]


def share(values: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(values, dtype=np.int64).astype(np.uint64)
    a = rng.integers(0, 2**64, size=x.shape, dtype=np.uint64)
    return a, x - a


#: the tag prefix of the pair's requests for triples in these tests
REQUESTS = "t/req"


def on_pairs(
    names: list[str],
    body: Any,
    method: str = "dealer",
    network: InMemoryNetwork | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``body(party, dealing)`` at every party but the dealer, with the triples of the
    preprocessing ``method`` (the dealer serving the pair's requests, its view recorded), in
    memory."""
    how = preprocessing_of(method)

    async def program(party: Any) -> Any:
        if party.name == "dealer":
            party.view = ViewRecorder()
            return await how.serve(party, ["p0", "p1"], dtype=np.uint64, requests=REQUESTS)
        return await how.beside(party, lambda dealing: body(party, dealing), requests=REQUESTS)

    return asyncio.run(run_in_memory(names, program, network=network, timeout=30))


def run_ltz(values: list[int], method: str = "dealer") -> np.ndarray:
    s0, s1 = share(values, np.random.default_rng(len(values)))
    names = NAMES if method != "ot" else NAMES[:2]

    async def body(party: Any, dealing: Any) -> Any:
        s = Session(party, dealing)
        return await s.batch("t", lambda s: s.ltz(s0 if s.role == 0 else s1, "ltz"))

    results, _ = on_pairs(names, body, method)
    return (results["p0"] + results["p1"]).astype(np.int64)


def run_argmax(
    keys: Any, denominators: Any = None, network: InMemoryNetwork | None = None,
    reveal_to: tuple[str, ...] | None = None, method: str = "dealer",
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    keys = np.asarray(keys, dtype=np.int64)
    rng = np.random.default_rng(keys.size)
    k = share(keys, rng)
    d = share(denominators, rng) if denominators is not None else (None, None)
    fractions = denominators is not None

    async def body(party: Any, dealing: Any) -> Any:
        party.view = ViewRecorder()  # after the handshake: the protocol's messages only
        i = {"p0": 0, "p1": 1}.get(party.name)
        return await sc.secure_argmax(
            party, None if i is None else k[i], shape=keys.shape, dealing=dealing,
            pair=("p0", "p1"), tag="cmp", denominators=None if i is None else d[i],
            fractions=fractions, reveal_to=reveal_to,
        )  # fmt: skip

    names = NAMES if method != "ot" else NAMES[:2]
    return on_pairs(names, body, method, network)


signed = st.integers(-LIMIT, LIMIT)
edges = st.sampled_from([0, 1, -1, LIMIT, -LIMIT, 2**32, -(2**32), 2**61, -(2**61)])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(signed, edges), min_size=1, max_size=40))
def test_less_than_zero_is_exact(values: list[int]) -> None:
    assert run_ltz(values).tolist() == [int(v < 0) for v in values]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4).flatmap(lambda rows: st.integers(1, 9).flatmap(
    lambda count: st.lists(st.lists(st.one_of(st.integers(-5, 5), signed), min_size=count,
                                    max_size=count), min_size=rows, max_size=rows))))  # fmt: skip
def test_argmax_is_the_first_largest_key(keys: list[list[int]]) -> None:
    results, _ = run_argmax(keys)
    expected = np.asarray(keys).argmax(axis=1).tolist()  # numpy: the first largest
    assert results["p0"].tolist() == expected and results["p1"].tolist() == expected
    assert not isinstance(results["dealer"], np.ndarray)  # the dealer learns no winner


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3).flatmap(lambda rows: st.integers(1, 7).flatmap(
    lambda count: st.tuples(
        st.lists(st.lists(st.integers(0, 2**20), min_size=count, max_size=count),
                 min_size=rows, max_size=rows),
        st.lists(st.lists(st.integers(1, 2**20), min_size=count, max_size=count),
                 min_size=rows, max_size=rows),
    ))))  # fmt: skip
def test_argmax_of_fractions_compares_them_exactly(problem: Any) -> None:
    nums, dens = problem
    results, _ = run_argmax(nums, dens)
    expected = []
    for n_row, d_row in zip(nums, dens, strict=True):
        values = [Fraction(n, d) for n, d in zip(n_row, d_row, strict=True)]
        expected.append(values.index(max(values)))
    assert results["p0"].tolist() == expected


def test_without_a_third_party_by_oblivious_transfer() -> None:
    """The triples made by p0 and p1 themselves (``ot``): the same results, no helper."""
    rng = np.random.default_rng(5)
    values = [0, 1, -1, LIMIT, -LIMIT, *rng.integers(-(2**62), 2**62, 60).tolist()]
    assert run_ltz(values, "ot").tolist() == [int(v < 0) for v in values]
    keys = rng.integers(-50, 50, size=(20, 11))
    keys[:, 7] = keys.max(axis=1)  # a tie with an earlier one in some rows
    results, parties = run_argmax(keys, method="ot")
    assert results["p0"].tolist() == keys.argmax(axis=1).tolist()
    nums, dens = rng.integers(0, 1000, (5, 4)), rng.integers(1, 1000, (5, 4))
    results, _ = run_argmax(nums, dens, method="ot")
    assert results["p0"].tolist() == (nums / dens).argmax(axis=1).tolist()
    assert set(parties) == {"p0", "p1"}


def test_ties_everywhere_and_one_candidate() -> None:
    results, _ = run_argmax([[7, 7, 7, 7, 7, 7, 7], [0, 0, 0, 0, 0, 0, 1]])
    assert results["p0"].tolist() == [0, 6]
    results, _ = run_argmax([[3, 5, 5], [2, 1, 1]], [[1, 2, 2], [2, 1, 1]])  # 3, 5/2 ; 1, 1
    assert results["p0"].tolist() == [0, 0]
    results, _ = run_argmax([[-4], [LIMIT]])
    assert results["p0"].tolist() == [0, 0]


def test_ledgers_hold_the_shape_and_the_winners_only_where_revealed() -> None:
    results, parties = run_argmax([[1, 9, 3], [4, 4, 2]], reveal_to=("p0",))
    shape = {"label": "compare/shape", "value": [2, 3], "step": "cmp"}
    winners = {"label": "compare/winners", "value": [1, 0], "step": "cmp"}
    assert parties["p0"].ledger.to_list() == [shape, winners]
    assert parties["p1"].ledger.to_list() == [shape] and results["p1"] is None
    dealer = parties["dealer"]  # only the pair's requests, public shapes
    assert {e["label"] for e in dealer.ledger.to_list()} == {"fast-counts/request",
                                                            "fast-counts/done"}  # fmt: skip
    assert {r["receipt"] for r in dealer.received() if not r["receipt"].startswith("runtime/")
            } == {"fast-counts/request"}  # fmt: skip


def test_two_tables_with_the_same_winners_look_the_same_to_every_party() -> None:
    """Each party's view (what it received, by receipt, and its ledger) is the same for two
    different tables whose rows have the same winners: nothing but the outcome shows."""
    rng = np.random.default_rng(11)
    first = rng.integers(-(2**40), 2**40, size=(30, 9))
    winners = first.argmax(axis=1)
    second = rng.integers(-(2**40), 2**40, size=(30, 9))
    second[np.arange(30), winners] = second.max(axis=1) + 1 + rng.integers(0, 9, 30)
    assert (second.argmax(axis=1) == winners).all() and (second != first).any()
    _, a = run_argmax(first)
    _, b = run_argmax(second)
    for name in NAMES:
        ra, rb = a[name].report(), b[name].report()
        assert differences(canonical_view(ra), canonical_view(rb)) == [], name
        assert uniformity_failures(ra) == [] and uniformity_failures(rb) == [], name
    # and a different outcome is seen, in the ledgers of the parties that learn it
    third = first.copy()
    third[0, (winners[0] + 1) % 9] = first[0].max() + 1
    _, c = run_argmax(third)
    assert differences(canonical_view(a["p0"].report()), canonical_view(c["p0"].report()))


def _masked(keys: np.ndarray) -> dict[str, list[np.ndarray]]:
    """Every masked message each party receives from the other, as bytes."""
    network = InMemoryNetwork()
    seen: dict[str, list[np.ndarray]] = {"p0": [], "p1": []}

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        opening = env.tag.startswith("cmp/") and not env.tag.endswith(
            ("/winners", "/dealt", "/open-key")) and "/req/" not in env.tag  # fmt: skip
        if sender in ("p0", "p1") and receiver in seen and opening:
            seen[receiver].append(np.concatenate(env.body["parts"]).view(np.uint8))

    network.taps.append(tap)
    run_argmax(keys, network=network)
    return seen


@pytest.mark.parametrize("fill", ["zeros", "equal", "increasing"])
def test_what_p0_and_p1_receive_from_each_other_is_uniform_whatever_the_keys(fill: str) -> None:
    """Every byte p0 and p1 send each other (openings of masked values and bits) is uniform:
    the same chi-square bound for all-zero keys, all-equal keys and sorted keys."""
    keys = {
        "zeros": np.zeros((64, 8), dtype=np.int64),
        "equal": np.full((64, 8), 12345, dtype=np.int64),
        "increasing": np.tile(np.arange(8), (64, 1)),
    }[fill]
    seen = _masked(keys)
    for party, chunks in seen.items():
        data = np.concatenate(chunks)
        observed = np.bincount(data, minlength=256)
        # fair masks fail this with probability 1e-9 per party; a byte never masked fails it
        assert chisquare(observed).pvalue > 1e-9, (party, fill)


def test_a_bias_in_the_masks_would_be_seen() -> None:
    """The uniformity check is able to fail: the openings with one mask bit forced to 0."""
    data = np.random.default_rng(3).integers(0, 256, 200_000).astype(np.uint8) & np.uint8(0x7F)
    assert chisquare(np.bincount(data, minlength=256)).pvalue < 1e-12


@pytest.mark.processes
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("helper", "holders", "dealer"), [
    ("dealer", ("p0", "p1"), "dealer"), ("sites", ("site1", "site2"), "site3"),
    ("ot", ("p0", "p1"), None),
])  # fmt: skip
def test_mpc_run_secure_argmax_across_processes(
    helper: str, holders: tuple[str, str], dealer: str | None
) -> None:
    code, out = run_mpc_json(
        "run", "secure-argmax", "--rows", "30", "--candidates", "7", "--fractions",
        "--helper", helper, "--json", deadline=90,
    )  # fmt: skip
    assert code == 0, out
    result = out["result"]
    assert result["correct"] is True and result["rows"] == 30 and result["candidates"] == 7
    # a dealing party receives the runtime's public messages only; the two holders uniform
    # ones, and the first the winners
    kinds = {n: {r["receipt"]: r["kind"] for r in p["received"]}
             for n, p in out["parties"].items()}  # fmt: skip
    first, second = holders
    assert set(kinds) == {*holders, *([dealer] if dealer else [])}
    if dealer is not None:  # the pair's requests only: public shapes
        assert set(kinds[dealer]) - {"runtime/hello", "runtime/ready", "runtime/bye"} == {
            "fast-counts/request"}  # fmt: skip
        assert kinds[second]["compare/dealt"] == "uniform"
    assert kinds[second]["compare/masked"] == kinds[first]["compare/winner-shares"] == "uniform"
    assert "compare/winner-shares" not in kinds[second]
    assert all(k in ("public", "uniform") for p in kinds.values() for k in p.values())
    # what the first learns last is the winners (beside it, as a site that may deal, the
    # other sites' closing messages)
    learned = [e["label"] for e in out["parties"][first]["ledger"]
               if not e["label"].startswith("fast-counts/")]  # fmt: skip
    assert learned[-1] == "compare/winners", learned


# ----------------------------------------------------------------------------- wide rings


def share_wide(values: Any, ring: Ring, rng: np.random.Generator) -> tuple[Any, Any]:
    x = ring.array(np.asarray([int(v) for v in values], dtype=object))
    top = ring.bits - 62
    a = ring.array(np.asarray([int(rng.integers(0, 2**62)) << top ^ int(rng.integers(0, 2**62))
                               for _ in values], dtype=object))  # fmt: skip
    return a, ring.reduce(x - a)


def run_pair(names: list[str], body: Any) -> dict[str, Any]:
    """``body(session)`` as one batch of p0's and p1's session, with a dealer's triples."""

    async def pair(party: Any, dealing: Any) -> Any:
        s = Session(party, dealing)
        await s.start("key")
        return await s.batch("t", body)

    results, _ = on_pairs(names, pair)
    return results


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([128, 192, 1024]), st.data())
def test_wide_less_than_zero_and_argmax_are_exact(bits: int, data: Any) -> None:
    ring = Ring(bits)
    limit = 2 ** (bits - 2) - 1
    values = data.draw(st.lists(st.one_of(st.integers(-limit, limit),
                                          st.sampled_from([0, 1, -1, limit, -limit])),
                                min_size=1, max_size=12))  # fmt: skip
    s0, s1 = share_wide(values, ring, np.random.default_rng(len(values)))

    async def ltz(s: Session) -> Any:
        return await s.ltz(s0 if s.role == 0 else s1, "ltz", ring)

    out = run_pair(NAMES, ltz)
    assert ring.signed(ring.reduce(out["p0"] + out["p1"])) == [int(v < 0) for v in values]
    # fractions past 64 bits: n/d with d > 0, |n d'| within the ring
    half = 2 ** ((bits - 4) // 2)
    nums = data.draw(st.lists(st.integers(0, half), min_size=2, max_size=6))
    dens = data.draw(st.lists(st.integers(1, half), min_size=len(nums), max_size=len(nums)))
    n0, n1 = share_wide(nums, ring, np.random.default_rng(1))
    d0, d1 = share_wide(dens, ring, np.random.default_rng(2))

    async def amax(s: Session) -> Any:
        k, d = (n0, d0) if s.role == 0 else (n1, d1)
        return await s.argmax(k.reshape(1, -1), "a", denominators=d.reshape(1, -1), ring=ring)

    out = run_pair(NAMES, amax)
    values_f = [Fraction(a, b) for a, b in zip(nums, dens, strict=True)]
    assert ring.signed(ring.reduce(out["p0"] + out["p1"])) == [values_f.index(max(values_f))]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([16, 32]), st.sampled_from([64, 128]), st.data())
def test_lift_turns_shares_mod_2_to_the_width_into_ring_shares(
    width: int, bits: int, data: Any
) -> None:
    ring = Ring(bits)
    values = data.draw(st.lists(st.integers(0, 2**width - 1), min_size=1, max_size=20))
    rng = np.random.default_rng(len(values))
    dtype = np.uint16 if width == 16 else np.uint32
    x = np.asarray(values, dtype=dtype)
    a = rng.integers(0, 2**width, size=x.shape).astype(dtype)
    shares = (a, (x - a).astype(dtype))

    async def body(s: Session) -> Any:
        return await s.lift(shares[s.role], width, "l", ring)

    out = run_pair(NAMES, body)
    assert ring.signed(ring.reduce(out["p0"] + out["p1"])) == values


@pytest.mark.parametrize("bits", [128, 192])
def test_oblivious_transfer_makes_wide_triples_and_a_wide_argmax(bits: int) -> None:
    """Gilboa's products with pads as wide as the ring: the word triples multiply, and an
    argmax of fractions past 64 bits is exact with no helper at all."""
    ring = Ring(bits)

    async def program(party: Any) -> Any:
        role, other = (0, "p1") if party.name == "p0" else (1, "p0")
        return await ot_triples(party, other, role, "t", Needs(3, 40), ring)

    results, _ = asyncio.run(run_in_memory(NAMES[:2], program, timeout=60))
    pools = [results["p0"], results["p1"]]
    (a0, b0, c0), (a1, b1, c1) = (p.word_triple(40) for p in pools)
    assert ring.reduce(c0 + c1).tolist() == ring.reduce((a0 + a1) * (b0 + b1)).tolist()
    (x0, y0, z0), (x1, y1, z1) = (p.and_triple((1, 3)) for p in pools)
    assert ((z0 ^ z1) == ((x0 ^ x1) & (y0 ^ y1))).all()
    half = 2 ** ((bits - 4) // 2)
    nums, dens = [half - 5, half - 3, 1], [half - 1, half - 2, 3]  # the second is largest
    n0, n1 = share_wide(nums, ring, np.random.default_rng(3))
    d0, d1 = share_wide(dens, ring, np.random.default_rng(4))

    async def amax(party: Any, dealing: Any) -> Any:
        s = Session(party, dealing)
        await s.start("key")
        k, d = (n0, d0) if s.role == 0 else (n1, d1)
        index = await s.batch(
            "m", lambda s: s.argmax(k.reshape(1, -1), "a", denominators=d.reshape(1, -1), ring=ring)
        )
        return await s.open(index, 1, to=("p0",), tag="m/winners", receipt=sc.WINNERS, ring=ring)

    results, _ = on_pairs(NAMES[:2], amax, "ot")
    assert results["p0"] == [1]


def _selects_hold(pools: list[Any], n: int, ring: Ring) -> None:
    """``n`` selection triples of the two pools: ``[a]`` is the XOR-shared bit ``a``, and
    ``[a w]`` is ``a`` times ``w``, in ``ring``."""
    (a0, sa0, w0, c0), (a1, sa1, w1, c1) = (p.select_triple(n) for p in pools)
    a = (a0 ^ a1).astype(np.int64)
    assert set(np.unique(a0).tolist()) <= {0, 1} and set(np.unique(a1).tolist()) <= {0, 1}
    assert ring.signed(ring.reduce(sa0 + sa1)) == a.tolist()
    assert ring.reduce(c0 + c1).tolist() == ring.reduce(ring.array(a) * (w0 + w1)).tolist()


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([16, 64, 128, 192]), st.integers(1, 300))
def test_selection_triples_by_oblivious_transfer_multiply(bits: int, n: int) -> None:
    """``p0`` and ``p1`` make selection triples by two correlated OTs each (one each way):
    the bit's two sharings agree and ``[a w]`` is its product with ``w``, in every ring."""
    ring = Ring(bits)

    async def program(party: Any) -> Any:
        role, other = (0, "p1") if party.name == "p0" else (1, "p0")
        return await ot_triples(party, other, role, "t", Needs(0, 0, n), ring)

    results, _ = asyncio.run(run_in_memory(NAMES[:2], program, timeout=60))
    pools = [results["p0"], results["p1"]]
    _selects_hold(pools, n, ring)
    for p in pools:
        p.finished()


@pytest.mark.parametrize("method", ["dealer", "ot"])
@pytest.mark.parametrize("bits", [64, 128])
def test_a_shared_bit_selects_shared_values_and_comes_out_additive(method: str, bits: int) -> None:
    """``select``: shares of ``b x`` (each of ``k`` values of a row) and of ``b`` for an
    XOR-shared bit ``b``, with a dealer's or the pair's own selection triples."""
    ring = Ring(bits)
    rng = np.random.default_rng(bits)
    n, k = 40, 3
    b = rng.integers(0, 2, n).astype(np.uint8)
    b0 = rng.integers(0, 2, n).astype(np.uint8)
    values = [[int(v) for v in row] for row in rng.integers(-(2**40), 2**40, (n, k))]
    x0, x1 = share_wide([v for row in values for v in row], ring, rng)
    names = NAMES if method == "dealer" else NAMES[:2]

    async def body(party: Any, dealing: Any) -> Any:
        s = Session(party, dealing)
        bit, x = (b0, x0) if s.role == 0 else (b0 ^ b, x1)
        return await s.batch("t", lambda s: circuits.select(s, bit, x.reshape(n, k), "sel", ring))

    results, _ = on_pairs(names, body, method)
    (p0, c0), (p1, c1) = results["p0"], results["p1"]
    assert ring.signed(ring.reduce(c0 + c1)) == b.astype(int).tolist()
    got = ring.signed(ring.reduce(p0 + p1).reshape(-1))
    assert got == [v * int(bit) for row, bit in zip(values, b, strict=True) for v in row]


def _extras_hold(pools: list[Any], owns: int, pairs: int) -> None:
    """The own-bit triples give shares of ``a_0 ∧ b_1`` (each party's own bit), the paired
    ones shares of ``a ∧ b`` and ``a ∧ b'`` with ``a`` in common."""
    (a0, c0), (b1, c1) = (p.own_triple((1, owns)) for p in pools)
    assert ((c0 ^ c1) == (a0 & b1)).all()
    (x0, y0, v0, z0, w0), (x1, y1, v1, z1, w1) = (p.pair_triple((pairs, 1)) for p in pools)
    x = x0 ^ x1
    assert ((z0 ^ z1) == (x & (y0 ^ y1))).all() and ((w0 ^ w1) == (x & (v0 ^ v1))).all()
    for bits in (a0, b1, x0, x1, y0, y1, v0, v1):
        assert set(np.unique(bits).tolist()) <= {0, 1}
    if owns + pairs > 200:  # the bits are not constant: each half is drawn, not fixed
        assert 0.3 < float(np.mean(np.concatenate([a0.ravel(), x.ravel(), v0.ravel()]))) < 0.7
    for p in pools:
        p.finished()


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300), st.sampled_from(["ot", "local"]))
def test_own_bit_and_paired_and_triples_multiply(owns: int, pairs: int, how: str) -> None:
    """An own-bit triple by one random OT (``p0`` sending), a paired one by one each way
    of two bits each, and the same triples as a dealer's arithmetic makes them."""
    needs = Needs(0, 0, 0, owns, pairs)
    if how == "local":
        _extras_hold(list(local_pools(needs, RING64)), owns, pairs)
        return

    async def program(party: Any) -> Any:
        role, other = (0, "p1") if party.name == "p0" else (1, "p0")
        return await ot_triples(party, other, role, "t", needs, RING64)

    results, parties = asyncio.run(run_in_memory(NAMES[:2], program, timeout=60))
    _extras_hold([results["p0"], results["p1"]], owns, pairs)
    ots = parties["p0"].metrics.crypto.get("ot_extended", 0)
    assert ots == owns + 2 * pairs  # own: one OT (p0 sending); pair: one each way


@pytest.mark.parametrize("bits", [64, 192])
def test_a_comparison_takes_own_bit_triples_for_its_generates_and_paired_ones_for_its_merges(
    bits: int,
) -> None:
    """A dry run of the sign of ``n`` values in ``Z_2^K`` counts ``K - 1`` own-bit triples
    per value (the generates) and ``K - 2`` paired ones (the merges of a reduction over
    ``K - 1`` positions), and no AND triple of shared bits: half the OTs of plain ANDs."""
    ring, n = Ring(bits), 5

    async def program(party: Any) -> Any:
        counting = CountingSession(Session(party, preprocessing_of("dealer")))
        x = ring.zeros(n) if ring.wide else np.zeros(n, dtype=np.uint64)
        await circuits.sign_bit(counting, x, "t", ring)
        return counting.needs

    results, _ = asyncio.run(run_in_memory(NAMES[:2], program, timeout=60))
    needs = results["p0"][bits]
    assert (needs.bits, needs.owns, needs.pairs) == (0, n * (bits - 1), n * (bits - 2))


def _ltz_openings(values: list[int], method: str, p1_seed: bytes) -> dict[str, np.ndarray]:
    """The masked openings ``p1`` receives from ``p0`` in a sign of ``values`` (the same
    shares every time), ``p1``'s own randomness fixed by ``p1_seed``, by tag."""
    s0, s1 = share(values, np.random.default_rng(7))
    network = InMemoryNetwork()
    seen: dict[str, np.ndarray] = {}

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if (sender, receiver) == ("p0", "p1") and "/ltz/" in env.tag:
            seen[env.tag] = np.unpackbits(np.concatenate(env.body["parts"]).view(np.uint8))

    network.taps.append(tap)

    async def body(party: Any, dealing: Any) -> Any:
        s = Session(party, dealing)
        if party.name != "p1":
            return await s.batch("t", lambda s: s.ltz(s0, "ltz"))
        with randomness.fixed(p1_seed):
            return await s.batch("t", lambda s: s.ltz(s1, "ltz"))

    on_pairs(NAMES if method != "ot" else NAMES[:2], body, method, network=network)
    return seen


@pytest.mark.parametrize("method", ["dealer", "ot"])
def test_what_p1_receives_in_a_comparison_does_not_repeat_with_its_own_randomness_fixed(
    method: str,
) -> None:
    """The same shares twice, ``p1``'s randomness fixed: every opening it receives from
    ``p0`` (the generates' own bits, the merges' paired bits, the bit made additive) agrees
    with the other run's no more than chance would have it. A party that sent its share's
    bits unmasked would repeat them exactly: its share is uniform, so only this test sees
    it."""
    values = list(range(-64, 64))
    own = bytes(range(32))
    first, second = (_ltz_openings(values, method, own) for _ in range(2))
    assert first.keys() == second.keys() and any(k.endswith("/gen") for k in first)
    for tag, bits in first.items():
        agree = float(np.mean(bits == second[tag]))
        # chance: 1/2, within five standard deviations of the binomial (128 bits at least)
        assert agree < 0.5 + 2.5 / np.sqrt(len(bits)), (tag, agree)
