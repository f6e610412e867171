"""Oblivious transfer: the network-free pieces (the point arithmetic, the bit-matrix transpose,
the PRG and the hash) alone, then base OT, extended random and correlated OT, Gilboa products
and Beaver triples against the plain answer over the in-memory network; uniform messages on
the wire (chi-square at the 1% level, with the OS generator replaced by a seeded one so that
each test sees the same bytes on every run); and refusals of what no honest peer sends."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from mpc.crypto import montgomery, prg
from mpc.crypto.curve25519 import on_curve
from mpc.errors import ConfigError, MPCError, PeerMisbehaved, ProtocolError
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork
from mpc.runtime.view import public as _public
from protocols.ot import base_ot, checks, gilboa, iknp, vector_ot

#: the receipt of this test's own messages
ANY = _public("test/message", "a message of this test")

U64 = 2**64 - 1
P = 2**255 - 19
#: the u-coordinates of Curve25519's points of order 2, 4 and 8 (those on the curve)
LOW_ORDER = [
    0,
    1,
    325606250916557431795983626356110631294008115727848805560023387167927233504,
    39382357235489614581723060781553021112529911719440698176882885853963445705823,
]
#: a point of the twist (not of the curve): u = 2
TWIST_U = 2

PartyMain = Callable[[Party], Awaitable[Any]]


def run_pair(
    alice: PartyMain, bob: PartyMain, *, network: InMemoryNetwork | None = None
) -> tuple[dict[str, Any], dict[str, Party]]:
    return asyncio.run(
        run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}, network=network, timeout=20)
    )


def words(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, size=n, dtype=np.uint64)


def u_of(key: X25519PrivateKey) -> int:
    return int.from_bytes(key.public_key().public_bytes_raw(), "little")


@pytest.fixture
def seeded(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Replace the OS generator by a seeded stream (tests only): the protocols then send the
    same bytes on every run, so a chi-square test has one fixed outcome."""

    def seed(value: int) -> None:
        rng = np.random.default_rng(value)
        monkeypatch.setattr(secrets, "token_bytes", lambda n=32: rng.bytes(n))

    return seed


# --------------------------------------------------------------------------- network-free pieces


def test_prime_order_subgroup_membership() -> None:
    g = montgomery.lift_point(9, 0)  # the base point
    t8 = montgomery.lift_point(LOW_ORDER[2], 0)  # a point of order 8
    assert g is not None and t8 is not None
    assert montgomery.in_prime_order_subgroup(9)
    for key in (bytes(32), bytes(range(32)), b"\xff" * 32):
        assert montgomery.in_prime_order_subgroup(u_of(X25519PrivateKey.from_private_bytes(key)))
    assert not any(montgomery.in_prime_order_subgroup(u) for u in LOW_ORDER)
    assert not montgomery.in_prime_order_subgroup(
        montgomery.point_add(g, t8)[0]
    )  # a low-order component


keys = st.binary(min_size=32, max_size=32).map(X25519PrivateKey.from_private_bytes)


@settings(max_examples=30, deadline=None)
@given(keys, keys, st.integers(0, 1), st.integers(0, 1))
def test_point_arithmetic(k1: X25519PrivateKey, k2: X25519PrivateKey, s1: int, s2: int) -> None:
    assume(u_of(k1) != u_of(k2))
    p1, p2 = montgomery.lift_point(u_of(k1), s1), montgomery.lift_point(u_of(k2), s2)
    assert p1 is not None and p2 is not None and p1[1] & 1 == s1
    assert montgomery.decode_point(montgomery.encode_point(p1)) == p1
    total = montgomery.point_add(p1, p2)
    assert montgomery.lift_point(total[0], total[1] & 1) == total  # on the curve
    assert total == montgomery.point_add(p2, p1)
    assert montgomery.point_add(total, montgomery.point_neg(p2)) == p1
    # the sum of two points of the prime-order subgroup stays in it
    assert montgomery.in_prime_order_subgroup(total[0])


def test_lift_point_refuses_the_twist_and_non_canonical_u() -> None:
    assert montgomery.lift_point(TWIST_U, 0) is None and not on_curve(TWIST_U)
    assert montgomery.lift_point(P + 1, 0) is None
    assert montgomery.decode_point(b"\xff" * 32) is None
    assert montgomery.lift_point(0, 1) is None  # v = 0 has no odd sign
    with pytest.raises(ValueError, match="different u"):
        p = montgomery.lift_point(9, 0)
        assert p is not None
        montgomery.point_add(p, montgomery.point_neg(p))


def transpose_reference(matrix: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(matrix, axis=1, bitorder="little")
    return np.packbits(bits.T, axis=1, bitorder="little")


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_transpose_bits_matches_unpackbits(k64: int, n64: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 256, size=(64 * k64, 8 * n64), dtype=np.uint8)
    out = prg.transpose_bits(matrix)
    assert out.shape == (64 * n64, 8 * k64)
    np.testing.assert_array_equal(out, transpose_reference(matrix))
    np.testing.assert_array_equal(prg.transpose_bits(out), matrix)


def test_transpose_bits_of_a_large_matrix_slices_its_work() -> None:
    matrix = np.random.default_rng(3).integers(0, 256, size=(128, 2**15), dtype=np.uint8)
    np.testing.assert_array_equal(prg.transpose_bits(matrix), transpose_reference(matrix))


@pytest.mark.parametrize("shape", [(128, 7), (100, 8), (64,)])
def test_transpose_bits_refuses_shapes_that_are_not_multiples_of_64(shape: tuple[int]) -> None:
    with pytest.raises(ConfigError, match="multiples of 64"):
        prg.transpose_bits(np.zeros(shape, dtype=np.uint8))


def test_prg_streams_differ_per_seed_and_per_use_and_repeat_exactly() -> None:
    seeds = np.frombuffer(bytes(range(32)), np.uint8).reshape(2, 16)
    a = prg.prg_rows(seeds, 0, 64)
    assert a.shape == (2, 64) and not (a[0] == a[1]).all()
    assert not (a == prg.prg_rows(seeds, 1, 64)).all(axis=1).any()
    np.testing.assert_array_equal(a, prg.prg_rows(seeds, 0, 64))
    np.testing.assert_array_equal(a[:, :16], prg.prg_rows(seeds, 0, 16))  # a prefix of one stream


def test_hash_depends_on_the_row_index_and_the_batch() -> None:
    h = prg.CorrelationRobustHash(bytes(16))
    rows = np.zeros((4, 16), dtype=np.uint8)  # four equal rows
    out = h(rows, 0)
    assert len({bytes(r) for r in out}) == 4
    assert not (out == h(rows, 1)).all(axis=1).any()
    np.testing.assert_array_equal(out, h(rows, 0))
    assert "key" in repr(h) and "00" not in repr(h)


# --------------------------------------------------------------------------- base OT


@settings(max_examples=8, deadline=None)
@given(st.lists(st.booleans(), min_size=0, max_size=24))
def test_base_ots_deliver_the_chosen_key_and_hide_the_other(choices: list[bool]) -> None:
    n = len(choices)
    results, parties = run_pair(
        lambda p: base_ot.base_ots_send(p, "bob", n),
        lambda p: base_ot.base_ots_receive(p, "alice", choices),
    )
    k0, k1 = results["alice"]
    k = results["bob"]
    assert k.shape == (n, 16)
    for i, c in enumerate(choices):
        assert bytes(k[i]) == bytes((k1 if c else k0)[i])
        assert bytes(k[i]) != bytes((k0 if c else k1)[i])
    assert parties["alice"].metrics.crypto["base_ot"] == n
    for name, role in (("alice", "sender"), ("bob", "receiver")):
        entries = parties[name].ledger.to_list()
        peer = "bob" if name == "alice" else "alice"
        assert entries == [
            {"label": "ot/base", "value": {"peer": peer, "role": role, "ots": n}, "step": "ot"}
        ]


# --------------------------------------------------------------------------- extension


async def sessions(p: Party) -> iknp.ExtensionSender | iknp.ExtensionReceiver:
    if p.name == "alice":
        return await iknp.extension_sender(p, "bob")
    return await iknp.extension_receiver(p, "alice")


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 700), st.booleans(), st.integers(0, 2**32 - 1))
def test_random_ots_match_the_choice_bits(m: int, chosen: bool, seed: int) -> None:
    bits = np.random.default_rng(seed).integers(0, 2, size=m)

    async def alice(p: Party) -> Any:
        session = await iknp.extension_sender(p, "bob")
        return await iknp.random_ots_send(p, session, m)

    async def bob(p: Party) -> Any:
        session = await iknp.extension_receiver(p, "alice")
        return await iknp.random_ots_receive(p, session, m, choices=bits if chosen else None)

    results, _ = run_pair(alice, bob)
    x0, x1 = results["alice"]
    r, x = results["bob"]
    assert x0.shape == x1.shape == x.shape == (m, 16) and r.shape == (m,)
    if chosen:
        np.testing.assert_array_equal(r, bits)
    np.testing.assert_array_equal(x, np.where(r[:, None] == 1, x1, x0))
    assert not (x == np.where(r[:, None] == 1, x0, x1)).all(axis=1).any()


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 900), st.sampled_from(["per-ot", "one", "zero", "max"]), st.integers(0, 99))
def test_correlated_ots_give_x_plus_b_delta(m: int, kind: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    delta = {
        "per-ot": words(rng, m),
        "one": np.full(m, int(words(rng, 1)[0]), dtype=np.uint64),
        "zero": np.zeros(m, dtype=np.uint64),
        "max": np.full(m, U64, dtype=np.uint64),
    }[kind]
    bits = rng.integers(0, 2, size=m).astype(bool)

    async def alice(p: Party) -> Any:
        return await iknp.correlated_ots_send(p, await iknp.extension_sender(p, "bob"), delta)

    async def bob(p: Party) -> Any:
        return await iknp.correlated_ots_receive(p, await iknp.extension_receiver(p, "alice"), bits)

    results, _ = run_pair(alice, bob)
    x, y = results["alice"], results["bob"]
    assert x.dtype == y.dtype == np.uint64
    np.testing.assert_array_equal(y, x + bits.astype(np.uint64) * delta)


def test_one_session_serves_many_batches_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small batches: several in flight (the window), three calls on one session."""
    monkeypatch.setattr(iknp, "CHUNK_OTS", 128)
    rng = np.random.default_rng(11)
    m = 1000  # 8 batches
    delta, bits = words(rng, m), rng.integers(0, 2, size=m)

    async def alice(p: Party) -> Any:
        s = await iknp.extension_sender(p, "bob")
        first = await iknp.correlated_ots_send(p, s, delta)
        pairs = await iknp.random_ots_send(p, s, 300)
        second = await iknp.correlated_ots_send(p, s, delta)
        return first, pairs, second, repr(s)

    async def bob(p: Party) -> Any:
        s = await iknp.extension_receiver(p, "alice")
        first = await iknp.correlated_ots_receive(p, s, bits)
        chosen = await iknp.random_ots_receive(p, s, 300)
        second = await iknp.correlated_ots_receive(p, s, bits)
        return first, chosen, second

    results, parties = run_pair(alice, bob)
    x1, (m0, m1), x2, text = results["alice"]
    y1, (r, m_r), y2 = results["bob"]
    np.testing.assert_array_equal(y1, x1 + bits.astype(np.uint64) * delta)
    np.testing.assert_array_equal(y2, x2 + bits.astype(np.uint64) * delta)
    assert not np.array_equal(x1, x2)  # fresh batches, fresh outputs
    np.testing.assert_array_equal(m_r, np.where(r[:, None] == 1, m1, m0))
    assert "batches=19" in text and "seed" not in text
    assert parties["alice"].metrics.crypto["ot_extended"] == 2300
    assert parties["alice"].metrics.crypto["base_ot"] == 128


# --------------------------------------------------------------------------- Gilboa, Beaver

uint64s = st.lists(
    st.one_of(st.sampled_from([0, 1, 2**63, U64]), st.integers(0, U64)), min_size=0, max_size=40
)


def multiply(
    a: np.ndarray, b: np.ndarray, *, network: InMemoryNetwork | None = None
) -> tuple[dict[str, Any], dict[str, Party]]:
    return run_pair(
        lambda p: gilboa.ot_multiply(p, "bob", a, "A"),
        lambda p: gilboa.ot_multiply(p, "alice", b, "B"),
        network=network,
    )


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_gilboa_shares_add_up_to_every_product(data: st.DataObject) -> None:
    a = np.array(data.draw(uint64s), dtype=np.uint64)
    b = np.array(data.draw(st.lists(st.integers(0, U64), min_size=len(a), max_size=len(a))),
                 dtype=np.uint64)  # fmt: skip
    results, _ = multiply(a, b)
    za, zb = results["alice"], results["bob"]
    assert za.dtype == zb.dtype == np.uint64 and za.shape == a.shape
    plain = [x * y % 2**64 for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert [int(x) for x in za + zb] == plain


def test_gilboa_extremes_and_a_vector_over_several_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gilboa, "CHUNK_PRODUCTS", 100)
    edge = [0, 1, 2, 2**63, U64, U64 - 1]
    a = np.array([x for x in edge for _ in edge] * 10, dtype=np.uint64)
    b = np.array([y for _ in edge for y in edge] * 10, dtype=np.uint64)  # 360: 4 batches
    results, parties = multiply(a, b)
    np.testing.assert_array_equal(results["alice"] + results["bob"], a * b)
    for name, role in (("alice", "A"), ("bob", "B")):
        party = parties[name]
        assert party.metrics.crypto["ot_extended"] == 64 * 360
        assert party.metrics.crypto["ot_products"] == 360
        assert party.ledger.labels() == ["ot/base", "ot/multiply"]
        assert party.ledger.entries[1].value == {
            "peer": "bob" if name == "alice" else "alice",
            "role": role,
            "products": 360,
        }


def test_bytes_per_product() -> None:
    n = 2000
    rng = np.random.default_rng(5)
    _, parties = multiply(words(rng, n), words(rng, n))
    sent_a = parties["alice"].metrics.bytes_sent["bob"]  # τ: 64 x 8 bytes per product
    sent_b = parties["bob"].metrics.bytes_sent["alice"]  # u: 64 x 16 / k bytes per product
    k = iknp.K_BITS
    assert 512 * n < sent_a < 512 * n + 128 * 66 + 2000
    assert 1024 * n // k < sent_b < 1024 * n // k + 32 * (k - 1) * 128 // k + 32 + 2000


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 300))
def test_beaver_triples_multiply(n: int) -> None:
    results, parties = run_pair(
        lambda p: gilboa.beaver_triples(p, "bob", n), lambda p: gilboa.beaver_triples(p, "alice", n)
    )
    t0, t1 = results["alice"], results["bob"]
    assert len(t0) == len(t1) == n and repr(t0) == f"BeaverTriples(n={n})"
    a, b = t0.a + t1.a, t0.b + t1.b
    np.testing.assert_array_equal(t0.c + t1.c, a * b)
    assert parties["alice"].ledger.labels() == ["ot/base", "ot/multiply", "ot/beaver"]
    assert parties["bob"].ledger.entries[-1].value == {"peer": "alice", "role": "B", "triples": n}


def test_beaver_triples_on_a_given_session() -> None:
    async def alice(p: Party) -> Any:
        s = await iknp.extension_sender(p, "bob")
        return [await gilboa.beaver_triples(p, "bob", 50, session=s) for _ in range(2)]

    async def bob(p: Party) -> Any:
        s = await iknp.extension_receiver(p, "alice")
        return [await gilboa.beaver_triples(p, "alice", 50, session=s) for _ in range(2)]

    results, _ = run_pair(alice, bob)
    for t0, t1 in zip(results["alice"], results["bob"], strict=True):
        np.testing.assert_array_equal(t0.c + t1.c, (t0.a + t1.a) * (t0.b + t1.b))


def test_protocols_draw_no_numpy_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("oblivious transfer drew from a numpy random generator")

    a = np.arange(20, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    b = a[::-1].copy()
    for name in ("default_rng", "Generator", "RandomState", "randint", "bytes"):
        monkeypatch.setattr(np.random, name, refuse)
    results, _ = multiply(a, b)
    np.testing.assert_array_equal(results["alice"] + results["bob"], a * b)


@pytest.mark.parametrize(
    ("values", "role"),
    [
        (np.arange(3, dtype=np.int64), "A"),
        (np.zeros((2, 2), dtype=np.uint64), "B"),
        (np.zeros(2, dtype=np.uint64), "C"),
    ],
)
def test_ot_multiply_refuses_bad_parameters(values: np.ndarray, role: Any) -> None:
    async def program(p: Party) -> Any:
        return await gilboa.ot_multiply(p, "bob", values, role)

    async def idle(p: Party) -> None:
        return None

    with pytest.raises(ConfigError, match=r"^(values|role) must"):
        run_pair(program, idle)


def test_choices_must_be_bits() -> None:
    with pytest.raises(ConfigError, match="bits"):
        checks.choice_bits([0, 2, 1], "choices")
    assert checks.choice_bits([], "choices").shape == (0,)


# --------------------------------------------------------------------------- uniform messages


def pvalue(data: np.ndarray) -> float:
    """Chi-square p-value of the byte values of ``data`` against the uniform distribution."""
    counts = np.bincount(np.ascontiguousarray(data).view(np.uint8).reshape(-1), minlength=256)
    return float(chisquare(counts).pvalue)


def tapped(network: InMemoryNetwork) -> list[tuple[str, str, Any]]:
    seen: list[tuple[str, str, Any]] = []

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if env.kind == "msg":
            seen.append((sender, env.tag, env.body))

    network.taps.append(tap)
    return seen


def test_the_uniformity_check_catches_structure() -> None:
    rng = np.random.default_rng(1)
    assert pvalue(rng.integers(0, 256, size=2**16, dtype=np.uint8)) > 0.01
    unmasked = np.packbits(rng.integers(0, 2, size=2**19) & rng.integers(0, 2, size=2**19))
    assert pvalue(unmasked) < 0.01  # bits biased to 1/4: far from uniform bytes
    assert pvalue(np.arange(2**14, dtype=np.uint64) * np.uint64(3)) < 0.01


@pytest.mark.parametrize("c", [0, 1])
def test_base_ot_receiver_points_are_uniform_whatever_the_choices(
    c: int, seeded: Callable[[int], None]
) -> None:
    seeded(100 + c)
    network = InMemoryNetwork()
    seen = tapped(network)
    n = 256
    run_pair(
        lambda p: base_ot.base_ots_send(p, "bob", n),
        lambda p: base_ot.base_ots_receive(p, "alice", [c] * n),
        network=network,
    )
    (points,) = [body for sender, tag, body in seen if tag == "ot/base/b"]
    assert points.shape == (n, 32)
    # every byte, the sign of v (the top bit) included, is uniform
    assert pvalue(points) > 0.01
    signs = int((points[:, 31] >> 7).sum())
    assert 100 < signs < 156
    # and every B lies in the prime-order subgroup, as a fresh key does: a sender that
    # multiplies by the group order learns nothing about c
    for row in points[:16]:
        assert montgomery.in_prime_order_subgroup(int.from_bytes(row.tobytes(), "little") % 2**255)


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("choices", ["zeros", "ones", "alternating"])
def test_extension_matrix_u_is_uniform_whatever_the_choices(
    choices: str, k: int, seeded: Callable[[int], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(iknp, "K_BITS", k)
    seeded({"zeros": 1, "ones": 2, "alternating": 3}[choices] + 10 * k)
    m = 2**14
    bits = {"zeros": np.zeros(m), "ones": np.ones(m), "alternating": np.arange(m) % 2}[choices]
    network = InMemoryNetwork()
    seen = tapped(network)

    async def alice(p: Party) -> Any:
        return await iknp.random_ots_send(p, await iknp.extension_sender(p, "bob"), m)

    async def bob(p: Party) -> Any:
        s = await iknp.extension_receiver(p, "alice")
        return await iknp.random_ots_receive(p, s, m, choices=bits.astype(int))

    run_pair(alice, bob, network=network)
    (u,) = [body for sender, tag, body in seen if sender == "bob" and tag.endswith("/u")]
    assert u.shape == (128 // k, m // 8)
    assert pvalue(u) > 0.01
    columns = np.packbits(np.unpackbits(u, axis=1, bitorder="little").T, axis=1)
    assert pvalue(columns) > 0.01  # the columns, row by row
    assert [body for sender, tag, body in seen if tag.endswith("/reply")] == [None]
    sums = [body for sender, tag, body in seen if tag.endswith("/puncture")]
    assert len(sums) == (k > 1) and all(x.shape == (128 // k, k - 1, 2, 16) for x in sums)


@pytest.mark.parametrize("a_fill", [0, 1, U64])
@pytest.mark.parametrize("b_fill", [0, U64])
def test_multiplication_messages_are_uniform_whatever_the_inputs(
    a_fill: int, b_fill: int, seeded: Callable[[int], None]
) -> None:
    seeded(a_fill % 1000 + b_fill % 7)
    n = 512
    network = InMemoryNetwork()
    seen = tapped(network)
    a = np.full(n, a_fill, dtype=np.uint64)
    b = np.full(n, b_fill, dtype=np.uint64)
    results, _ = multiply(a, b, network=network)
    np.testing.assert_array_equal(results["alice"] + results["bob"], a * b)
    (u,) = [body for s, tag, body in seen if s == "bob" and tag.startswith("ot/mul/0/u")]
    (tau,) = [body for s, tag, body in seen if s == "alice" and tag == "ot/mul/0/reply"]
    assert u.shape == (128 // iknp.K_BITS, 64 * n // 8) and tau.shape == (64 * n,)
    assert pvalue(u) > 0.01, "what A sees"
    assert pvalue(tau) > 0.01, "what B sees"
    # A's share alone is uniform too (B's is its difference from a product)
    assert pvalue(results["alice"]) > 0.01


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 300),
    st.integers(1, 9),
    st.integers(1, 40),
    st.sampled_from([np.uint16, np.uint32, np.uint64]),
    st.sampled_from([None, 1, 3]),
    st.integers(0, 2**32 - 1),
)
def test_one_hot_products_add_up_to_the_one_hot_rows_times_the_vectors(
    n: int, s: int, w: int, dtype: Any, group: int | None, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    n -= n % (group or 1)
    assume(n > 0)
    vectors = rng.integers(0, np.iinfo(dtype).max, size=(5, w), dtype=np.uint64, endpoint=True)
    vectors = vectors.astype(dtype)
    take = rng.integers(0, 5, size=n)
    v = rng.integers(0, s, size=n)

    async def alice(p: Party) -> Any:
        session = await iknp.extension_sender(p, "bob")
        return await vector_ot.one_hot_products_send(p, session, vectors, s, take=take, group=group)

    async def bob(p: Party) -> Any:
        session = await iknp.extension_receiver(p, "alice")
        return await vector_ot.one_hot_products_receive(p, session, v, s, w, dtype, group=group)

    results, _ = run_pair(alice, bob)
    want = np.eye(s, dtype=dtype)[v][:, :, None] * vectors[take][:, None, :]  # wraps in the ring
    if group:
        want = want.reshape(n // group, group, s, w).sum(axis=1, dtype=dtype)
    got = results["alice"] + results["bob"]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("choice", ["first", "last", "mixed"])
def test_one_hot_corrections_are_uniform_whatever_the_choices_and_the_vectors(
    choice: str, seeded: Callable[[int], None]
) -> None:
    """The chooser sees ``D[t] + Σ_j x_j``: uniform even when every choice and every vector is
    the same, since the one pad it lacks masks it."""
    seeded({"first": 11, "last": 12, "mixed": 13}[choice])
    n, s, w = 4096, 4, 8
    v = {"first": np.zeros(n), "last": np.full(n, s - 1), "mixed": np.arange(n) % s}[choice]
    zeros = np.zeros((n, w), dtype=np.uint16)  # all-zero data: nothing to hide behind
    network = InMemoryNetwork()
    seen = tapped(network)

    async def alice(p: Party) -> Any:
        session = await iknp.extension_sender(p, "bob")
        return await vector_ot.one_hot_products_send(p, session, zeros, s)

    async def bob(p: Party) -> Any:
        session = await iknp.extension_receiver(p, "alice")
        return await vector_ot.one_hot_products_receive(p, session, v.astype(int), s, w, np.uint16)

    results, _ = run_pair(alice, bob, network=network)
    corrections = [body for sender, tag, body in seen if sender == "alice" and "/reply" in tag]
    assert corrections and all(c.shape[1] == w for c in corrections)
    assert pvalue(np.concatenate(corrections)) > 0.01, "what the chooser sees"
    (u,) = [body for sender, tag, body in seen if sender == "bob" and tag.endswith("/u")]
    assert pvalue(u) > 0.01, "what the vectors' side sees"
    assert not (results["alice"] + results["bob"]).any()  # and the products are zero


# --------------------------------------------------------------------------- hostile peers


def run_hostile(honest: PartyMain, hostile: PartyMain) -> BaseException:
    """Run alice honest against bob hostile; return the error alice raised."""
    errors: dict[str, BaseException] = {}

    async def recording(p: Party) -> Any:
        try:
            return await honest(p)
        except BaseException as exc:
            errors[p.name] = exc
            raise

    with pytest.raises(MPCError):
        run_pair(recording, hostile)
    return errors["alice"]


async def _wait_for_abort(p: Party) -> None:
    await p.recv("alice", "never sent", ANY)


@pytest.mark.parametrize(
    ("u", "why"),
    [(x, "low order") for x in LOW_ORDER]
    + [(TWIST_U, "twist"), (P + 1, "not canonical"), ("G + T8", "low-order component")],
)
def test_a_receiver_refuses_a_bad_public_key_naming_the_peer(u: int | str, why: str) -> None:
    if u == "G + T8":  # on the curve, of order 8q: it would mark B where the choice is 1
        g, t8 = montgomery.lift_point(9, 0), montgomery.lift_point(LOW_ORDER[2], 0)
        assert g is not None and t8 is not None
        data = montgomery.encode_point(montgomery.point_add(g, t8))
    else:
        assert isinstance(u, int)
        data = u.to_bytes(32, "little")

    async def hostile(p: Party) -> None:
        await p.send("alice", "ot/base/a", data)
        await _wait_for_abort(p)

    err = run_hostile(lambda p: base_ot.base_ots_receive(p, "bob", [0, 1, 1]), hostile)
    assert isinstance(err, PeerMisbehaved) and err.peer == "bob", err
    assert "bob sent, at ot/base/a, a public key A" in str(err) and why in str(err), err


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("order 2", "low order"),
        ("order 8", "low order"),
        ("A", "±A"),
        ("-A", "±A"),
        ("twist", "twist"),
        ("ff", "not canonical"),
    ],
)
def test_a_sender_refuses_a_bad_point_naming_the_peer(bad: str, why: str) -> None:
    async def hostile(p: Party) -> None:
        header = await p.recv("alice", "ot/base/a", ANY)
        a = montgomery.decode_point(header)
        assert a is not None
        row = {
            "order 2": (0).to_bytes(32, "little"),
            "order 8": LOW_ORDER[2].to_bytes(32, "little"),
            "A": header,
            "-A": montgomery.encode_point(montgomery.point_neg(a)),
            "twist": TWIST_U.to_bytes(32, "little"),
            "ff": b"\xff" * 32,
        }[bad]
        g = montgomery.lift_point(9, 0)  # the base point: valid, and not ±A
        assert g is not None
        good = montgomery.encode_point(g)
        rows = np.frombuffer(good * 2 + row, np.uint8).reshape(3, 32)
        await p.send("alice", "ot/base/b", rows)
        await _wait_for_abort(p)

    err = run_hostile(lambda p: base_ot.base_ots_send(p, "bob", 3), hostile)
    assert isinstance(err, PeerMisbehaved) and err.peer == "bob", err
    assert "bob sent, at ot/base/b" in str(err) and why in str(err), err


@pytest.mark.parametrize(
    "body",
    [np.zeros((128, 8), dtype=np.uint16), np.zeros((64, 8), dtype=np.uint8), b"u", None],
)
def test_an_extension_sender_refuses_a_malformed_matrix(body: Any) -> None:
    async def honest(p: Party) -> Any:
        s = await iknp.extension_sender(p, "bob")
        return await iknp.correlated_ots_send(p, s, np.zeros(64, dtype=np.uint64))

    async def hostile(p: Party) -> None:
        await iknp.extension_receiver(p, "alice")
        await p.send("alice", "ot/0/u", body)
        await _wait_for_abort(p)

    err = run_hostile(honest, hostile)
    assert isinstance(err, ProtocolError) and "bob sent, at ot/0/u, a matrix u" in str(err), err


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 300), st.integers(1, 3), st.data())
def test_limb_sums_add_every_k_rows_modulo_the_ring(limbs: int, k: int, p: int, data: Any) -> None:
    """The sums of a wide product's pads (:func:`protocols.ot.gilboa._limb_sums`) equal
    Python's sums mod ``2^(64 limbs)``, carries across limbs included (all-ones limbs)."""
    top = 2 ** (64 * limbs) - 1
    values = data.draw(st.lists(st.one_of(st.just(top), st.integers(0, top)), min_size=p * k,
                                max_size=p * k))  # fmt: skip
    raw = b"".join(v.to_bytes(8 * limbs, "little") for v in values)
    x = np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(p * k, limbs)
    got = gilboa._limb_sums(x, k)
    for i in range(p):
        want = sum(values[i * k : (i + 1) * k]) & top
        assert int.from_bytes(got[i].astype("<u8").tobytes(), "little") == want


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 40), st.integers(0, 2), st.data())
def test_limb_diff_subtracts_modulo_the_ring(limbs: int, m: int, k: int, data: Any) -> None:
    """``a - b - c`` on limbs (:func:`protocols.ot.gilboa._limb_diff`, the corrections of a
    wide product) equals Python's mod ``2^(64 limbs)``, borrows across limbs included."""
    top = 2 ** (64 * limbs) - 1
    value = st.one_of(st.just(0), st.just(top), st.integers(0, top))
    rows = data.draw(st.lists(st.lists(value, min_size=k + 1, max_size=k + 1), min_size=m,
                              max_size=m))  # fmt: skip

    def limbs_of(col: list[int]) -> np.ndarray:
        raw = b"".join(v.to_bytes(8 * limbs, "little") for v in col)
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(m, limbs)

    arrays = [limbs_of([r[i] for r in rows]) for i in range(k + 1)]
    got = gilboa._limb_diff(*arrays)
    for i, r in enumerate(rows):
        want = (r[0] - sum(r[1:])) & top
        assert int.from_bytes(got[i].astype("<u8").tobytes(), "little") == want


def _wide_limbs(values: list[int], limbs: int) -> np.ndarray:
    raw = b"".join(v.to_bytes(8 * limbs, "little") for v in values)
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(len(values), limbs)


def _wide_value(row: np.ndarray) -> int:
    return int.from_bytes(row.astype("<u8").tobytes(), "little")


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([128, 192, 320]), st.data())
def test_wide_gilboa_products_are_exact_and_send_cut_corrections(bits: int, data: Any) -> None:
    """Products over ``Z_{2^bits}`` by :func:`protocols.ot.gilboa.wide_ot_multiply` add up
    to every product, extremes included; the sender's corrections are ``64 L (L + 1) / 2``
    limbs a product (the ``k``-th OT cut to the limbs that hold ``2^(bits - k)``), not
    ``bits L``."""
    top, limbs = 2**bits - 1, bits // 64
    value = st.one_of(st.sampled_from([0, 1, 2, top, top - 1, 2 ** (bits - 1)]),
                      st.integers(0, top))  # fmt: skip
    n = data.draw(st.integers(1, 12))
    a = data.draw(st.lists(value, min_size=n, max_size=n))
    b = data.draw(st.lists(value, min_size=n, max_size=n))

    async def alice(p: Party) -> Any:
        session = await iknp.extension_sender(p, "bob", tag="w")
        start = p.metrics.bytes_sent["bob"]
        out = await gilboa.wide_ot_multiply(p, "bob", _wide_limbs(a, limbs), "A", bits=bits,
                                            session=session)  # fmt: skip
        return out, p.metrics.bytes_sent["bob"] - start

    async def bob(p: Party) -> Any:
        session = await iknp.extension_receiver(p, "alice", tag="w")
        return await gilboa.wide_ot_multiply(p, "alice", _wide_limbs(b, limbs), "B", bits=bits,
                                             session=session)  # fmt: skip

    results, _ = run_pair(alice, bob)
    (za, sent), zb = results["alice"], results["bob"]
    got = [(_wide_value(x) + _wide_value(y)) & top for x, y in zip(za, zb, strict=True)]
    assert got == [x * y & top for x, y in zip(a, b, strict=True)]
    cut = 8 * 64 * limbs * (limbs + 1) // 2 * n
    assert cut <= sent < cut + 4096


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 900), st.sampled_from([1, 2, 8]))
def test_random_bit_ots_keep_the_low_bits_of_the_chosen_message(m: int, width: int) -> None:
    async def alice(p: Party) -> Any:
        return await iknp.random_bits_send(p, await iknp.extension_sender(p, "bob"), m, width)

    async def bob(p: Party) -> Any:
        return await iknp.random_bits_receive(p, await iknp.extension_receiver(p, "alice"), m,
                                              width)  # fmt: skip

    results, _ = run_pair(alice, bob)
    (x0, x1), (r, x) = results["alice"], results["bob"]
    assert x0.shape == x1.shape == x.shape == r.shape == (m,)
    assert int(max(x0.max(initial=0), x1.max(initial=0))) < 2**width
    np.testing.assert_array_equal(x, np.where(r == 1, x1, x0))
    if m > 200:  # the other message is not the chosen one: they differ about half the time
        assert 0.3 < float(np.mean(x0 != x1)) * (2**width) / (2**width - 1) < 1.7
