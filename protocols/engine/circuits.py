"""The circuits of a session on additive shares (:class:`protocols.engine.session.Session`):
products, the sign of a shared value, the bits of a sum, the lift of shares from one ring to a
wider one, and the argmax of shared keys. Nothing here is opened; every message is a value
masked by a Beaver triple (:meth:`Session.exchange`).

``p0`` and ``p1`` hold additive shares mod ``2^K`` of signed values (two's complement,
``|x| < 2^(K - 2)``), and the session's batch holds their triples, per ring
(:mod:`protocols.engine.triples`): every circuit takes its AND triples and its word triples
from the pool of the ring it computes in.

**Products** (:func:`multiply`) are Beaver's, one round; **AND** (:func:`and_`) too, on XOR
shares of bits.

**Less than zero** (:func:`less_than_zero`: shares of ``[x < 0]``): each party splits its own
share into bits, so the bits of ``x_0`` and ``x_1`` are XOR shares of nothing yet; the sign of
``x = x_0 + x_1`` is ``x_{0,K-1} ⊕ x_{1,K-1} ⊕ carry_{K-1}``. The carry into the top bit is
the reduction, most significant first, of the pairs ``(g_i, p_i)`` (generate ``g_i = x_{0,i}
∧ x_{1,i}``; propagate ``p_i = x_{0,i} ⊕ x_{1,i}``, local) by ``(g, p) ∘ (g', p') = (g ⊕ (p ∧
g'), p ∧ p')`` (:func:`carry_out`): a tree of ``⌈log2 (K - 1)⌉`` levels, the carry-lookahead
of a parallel-prefix adder. A generate is an AND of the two parties' *own* bits, so it takes
an own-bit triple (:func:`own_and`: ``p0``'s ``a_0``, ``p1``'s ``b_1``, shares of ``a_0 ∧
b_1``; one random OT, one bit opened each way); a merge's two ANDs share ``p``, so they take
one paired triple (:func:`pair_and`: ``p`` masked and opened once; two random OTs, one each
way): per ``K``-bit comparison ``K - 1`` of the first and ``K - 2`` of the second, where
plain AND triples would take twice the OTs. The sign bit, XOR-shared, becomes
additive by the bit of a selection triple (:func:`bit_to_ring`, below): one round, no
product. Eight rounds in ``Z_{2^64}`` for any number of values at once. This is the two-party
share-to-bits comparison of a boolean adder over the parties' own bit decompositions (as in
the A2B conversions of ABY: Demmler, Schneider, Zohner, NDSS 2015): it uses no edaBits
(Escudero, Ghosh, Keller, Rachuri, Rotaru, CRYPTO 2020), no truncation-based comparison of
Catrina and de Hoogh (SCN 2010) and not Rabbit's (Makri, Rotaru, Vercauteren, Smart,
ASIACRYPT 2021).

**Bits of a sum** (:func:`sum_bits`): the same pairs combined by a prefix computation (Kogge
and Stone, IEEE Trans. Computers 1973) give every carry, hence XOR shares of every bit of
``x_0 + x_1 mod 2^w`` (``1 + ⌈log2 w⌉`` rounds); :func:`prefix_or` marks, in ``⌈log2 w⌉``
rounds, each position at or below a one, which locates the top bit.

**Lift** (:func:`lift`): shares mod ``2^w`` of an unsigned ``w``-bit value become shares in a
wider ring as ``x_0 + x_1 - 2^w c``, ``c`` the carry out of the ``w``-bit sum, made additive
in the wider ring: no wrap bit is ever opened.

**Argmax** (:func:`argmax`) is a tournament over the candidates of each row, the earlier
candidate kept on a tie (the plain learners' rule: the first best in order wins): ``⌈log2 m⌉``
comparisons deep, each followed by one round that carries the winner's key and index: the
comparison's sign bit, still XOR-shared, selects the differences directly (:func:`select`,
one *selection triple* ``(a, [a], w, [a w])`` per element: the bit ``a`` both XOR- and
additively shared), so no product makes the bit additive first; ``8 ⌈log2 m⌉`` rounds for
every row at once. Keys are integers, or fractions ``n/d`` (``d > 0``) compared by the sign
of ``n d' - n' d`` (one more round of products per level). A selection triple costs a dealer
two ring elements of corrections, and two OTs of one or two ring elements when ``p0`` and
``p1`` make it themselves (:func:`protocols.engine.triples.ot_selects`), where a Beaver
triple takes two Gilboa products of as many OTs as the ring has bits.

References: D. Beaver, *Efficient multiparty protocols using circuit randomization*, CRYPTO
1991; P. M. Kogge, H. S. Stone, *A parallel algorithm for the efficient solution of a general
class of recurrence equations*, IEEE Trans. Computers 1973 (the prefix adder).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import numpy as np

from protocols.engine.ring import RING64, Ring
from protocols.engine.triples import Own, Paired, Select, Triple


class Session(Protocol):
    """What a circuit needs of its session (:class:`protocols.engine.session.Session`): which
    of the two parties this is, the triples of the current batch, and the exchange of masked
    values with the other."""

    @property
    def role(self) -> int: ...

    def word_triple(self, n: int, ring: Ring) -> Triple: ...

    def and_triple(self, shape: tuple[int, ...], ring: Ring) -> Triple: ...

    def select_triple(self, n: int, ring: Ring) -> Select: ...

    def own_triple(self, shape: tuple[int, ...], ring: Ring) -> Own: ...

    def pair_triple(self, shape: tuple[int, ...], ring: Ring) -> Paired: ...

    async def exchange(self, tag: str, mine: np.ndarray, ring: Ring | None) -> np.ndarray: ...

    async def row_wise(self, circuit: Any, x: np.ndarray, *args: Any) -> np.ndarray | None: ...


__all__ = [
    "Session",
    "and_",
    "argmax",
    "bit_to_ring",
    "carry_out",
    "less_than_zero",
    "lift",
    "multiply",
    "prefix_or",
    "sum_bits",
    "tournament",
]


def tournament(count: int) -> list[int]:
    """How many pairs each round of a tournament over ``count`` candidates plays."""
    out = []
    while count > 1:
        out.append(count // 2)
        count = count // 2 + count % 2
    return out


def _distances(width: int) -> list[int]:
    """The distances of a prefix computation over ``width`` positions: 1, 2, 4, ..."""
    out, d = [], 1
    while d < width:
        out.append(d)
        d *= 2
    return out


async def multiply(s: Session, x: np.ndarray, y: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """Additive shares of ``x y``, element by element (Beaver, one round)."""
    if (dry := await s.row_wise(multiply, x, y, tag, ring)) is not None:
        return dry
    a, b, c = s.word_triple(x.size, ring)
    opened = await s.exchange(tag, ring.reduce(np.concatenate([x - a, y - b])), ring)
    d, e = opened[: x.size], opened[x.size :]
    z = c + d * b + e * a
    return ring.reduce(z + d * e if s.role == 0 else z)


async def and_(s: Session, x: np.ndarray, y: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """XOR shares (``uint8``) of ``x ∧ y`` (Beaver's AND, one round), the triples from the
    pool of ``ring``."""
    a, b, c = s.and_triple(x.shape, ring)
    opened = await s.exchange(tag, np.concatenate([x ^ a, y ^ b], axis=1), None)
    d, e = opened[:, : x.shape[1]], opened[:, x.shape[1] :]
    z = c ^ (d & b) ^ (e & a)
    return z ^ (d & e) if s.role == 0 else z


async def own_and(s: Session, mine: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """XOR shares (``uint8``) of ``x_0 ∧ x_1``, ``x_0`` the bits ``mine`` of ``p0`` and
    ``x_1`` those of ``p1``, each its own: an own-bit triple (``p0``'s ``a_0``, ``p1``'s
    ``b_1``, shares of ``a_0 ∧ b_1``), each party opening its bits masked by its part; one
    round, one bit each way, where an AND of shared bits opens two."""
    mask, c = s.own_triple(mine.shape, ring)
    mine_open = mine ^ mask
    theirs = (await s.exchange(tag, mine_open, None)) ^ mine_open
    if s.role == 0:  # d = x_0 ⊕ a_0 (mine), e = x_1 ⊕ b_1 (theirs)
        return c ^ (theirs & mask) ^ (mine_open & theirs)
    return c ^ (theirs & mask)


async def pair_and(
    s: Session, x: np.ndarray, y: np.ndarray, y2: np.ndarray, tag: str, ring: Ring
) -> tuple[np.ndarray, np.ndarray]:
    """XOR shares (``uint8``) of ``x ∧ y`` and ``x ∧ y2``: one paired triple per element,
    ``x`` opened once (masked by ``a``); one round, three bits each way, where two ANDs open
    four."""
    a, b, b2, c, c2 = s.pair_triple(x.shape, ring)
    w = x.shape[1]
    opened = await s.exchange(tag, np.concatenate([x ^ a, y ^ b, y2 ^ b2], axis=1), None)
    d, e, e2 = opened[:, :w], opened[:, w : 2 * w], opened[:, 2 * w :]
    z, z2 = c ^ (d & b) ^ (e & a), c2 ^ (d & b2) ^ (e2 & a)
    if s.role == 0:
        return z ^ (d & e), z2 ^ (d & e2)
    return z, z2


async def carry_out(s: Session, low: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """XOR shares (``uint8``) of the carry out of ``x_0 + x_1`` for each row of ``low``: this
    party's own bits of its summand, ``n x width``, the most significant first (the module
    docstring's reduction of generate/propagate pairs; ``1 + ⌈log2 width⌉`` rounds)."""
    # generate: x0_i ∧ x1_i, the two parties' own bits
    g = await own_and(s, low, f"{tag}/gen", ring)
    p = low  # propagate: x0_i ⊕ x1_i, XOR-shared as it is
    for level, width in enumerate(tournament(low.shape[1])):
        hi_g, hi_p = g[:, 0 : 2 * width : 2], p[:, 0 : 2 * width : 2]
        lo_g, lo_p = g[:, 1 : 2 * width : 2], p[:, 1 : 2 * width : 2]
        and_g, and_p = await pair_and(s, hi_p, lo_g, lo_p, f"{tag}/and{level}", ring)
        new_g, new_p = hi_g ^ and_g, and_p
        if g.shape[1] % 2:
            new_g = np.concatenate([new_g, g[:, -1:]], axis=1)
            new_p = np.concatenate([new_p, p[:, -1:]], axis=1)
        g, p = new_g, new_p
    return g[:, 0]


async def bit_to_ring(s: Session, bit: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """Additive shares in ``ring`` of an XOR-shared bit ``b``, by the bit of a selection
    triple (``a``, XOR- and additively shared; its ``w`` unused): the parties open ``d = b
    ⊕ a``, and ``b = d + (1 - 2d)[a]``. One round, one bit each way, no product."""
    a, shared_a, _, _ = s.select_triple(len(bit), ring)
    d = ring.array(await s.exchange(tag, np.ascontiguousarray(bit ^ a), None))
    own_d = d if s.role == 0 else ring.zeros(len(bit))
    return ring.reduce(own_d + ring.reduce(ring.constant(1, len(bit)) - 2 * d) * shared_a)


async def sum_bits(
    s: Session, low: np.ndarray, tag: str, ring: Ring
) -> tuple[np.ndarray, np.ndarray]:
    """XOR shares (``uint8``) of the bits of ``x_0 + x_1 mod 2^width`` and of its carry out,
    for each row of ``low``: this party's own bits of its summand, ``n x width``, the
    *least* significant first. The carries are a prefix computation (Kogge and Stone) of the
    pairs ``(g_i, p_i)`` by the operator of the module docstring: ``1 + ⌈log2 width⌉``
    rounds, two ANDs per position and round."""
    g = await own_and(s, low, f"{tag}/gen", ring)
    own = low  # the bits' own propagates: the sum bit is p_i ⊕ carry_i
    p = low
    for level, d in enumerate(_distances(low.shape[1])):
        and_g, and_p = await pair_and(s, np.ascontiguousarray(p[:, d:]), g[:, :-d], p[:, :-d],
                                      f"{tag}/pre{level}", ring)  # fmt: skip
        g = np.concatenate([g[:, :d], g[:, d:] ^ and_g], axis=1)
        p = np.concatenate([p[:, :d], and_p], axis=1)
    carries = np.concatenate([np.zeros_like(g[:, :1]), g[:, :-1]], axis=1)
    return own ^ carries, g[:, -1]


async def prefix_or(s: Session, bits: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """XOR shares of ``o_i = b_i ∨ b_{i+1} ∨ ... ∨ b_{w-1}`` for each row of XOR-shared bits
    ``bits`` (``n x w``, least significant first): whether a one stands at ``i`` or above.
    ``a ∨ b = a ⊕ b ⊕ (a ∧ b)``; ``⌈log2 w⌉`` rounds."""
    o = bits
    for level, d in enumerate(_distances(bits.shape[1])):
        both = await and_(s, o[:, :-d], o[:, d:], f"{tag}/or{level}", ring)
        o = np.concatenate([o[:, :-d] ^ o[:, d:] ^ both, o[:, -d:]], axis=1)
    return o


async def less_than_zero(s: Session, x: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """Additive shares of ``[x < 0]`` for each value of this party's shares ``x`` (the
    module docstring's sign by carry: ``2 + ⌈log2 (K - 1)⌉`` rounds, eight for ``K = 64``)."""
    if (dry := await s.row_wise(less_than_zero, x, tag, ring)) is not None:
        return dry
    return await bit_to_ring(s, await sign_bit(s, x, tag, ring), f"{tag}/b2a", ring)


async def sign_bit(s: Session, x: np.ndarray, tag: str, ring: Ring) -> np.ndarray:
    """XOR shares (``uint8``) of ``[x < 0]`` (:func:`less_than_zero` before the bit is made
    additive)."""
    if (dry := await s.row_wise(sign_bit, x, tag, ring)) is not None:
        return dry
    bits = ring.bits_of(ring.array(x) if not ring.wide else x)
    top = ring.bits - 1
    carry = await carry_out(s, bits[:, top - 1 :: -1], tag, ring)
    return bits[:, top] ^ carry


async def select(
    s: Session, bit: np.ndarray, x: np.ndarray, tag: str, ring: Ring
) -> tuple[np.ndarray, np.ndarray]:
    """Additive shares of ``b x`` for each row of ``x`` (``n x k``, this party's shares)
    and its XOR-shared bit ``b`` (``n``), and of ``b`` itself: one round, one selection
    triple ``(a, [a], w, [a w])`` per element. The parties open ``d = b ⊕ a`` and ``e = x -
    w``; then ``b = d + (1 - 2d)[a]`` and ``b x = d e + d [w] + (1 - 2d)(e [a] + [a w])``,
    linear in the triple's shares."""
    n, k = x.shape
    a, shared_a, w, c = s.select_triple(n * k, ring)
    a, shared_a, w, c = (t.reshape(n, k) for t in (a, shared_a, w, c))
    flips, opened = await asyncio.gather(
        s.exchange(f"{tag}/d", np.ascontiguousarray(np.repeat(bit[:, None], k, axis=1) ^ a),
                   None),
        s.exchange(f"{tag}/e", ring.reduce(x - w), ring),
    )  # fmt: skip
    d = ring.array(flips)
    sign = ring.reduce(ring.constant(1, d.shape) - 2 * d)
    own_d = d if s.role == 0 else ring.zeros(d.shape)
    b = ring.reduce(own_d + sign * shared_a)  # shares of the bit, element by element
    product = ring.reduce(own_d * opened + d * w + sign * (opened * shared_a + c))
    return product, b[:, 0]


async def lift(s: Session, x: np.ndarray, width: int, tag: str, ring: Ring) -> np.ndarray:
    """Shares in ``ring`` of the integers whose shares mod ``2^width`` this party holds in
    ``x`` (unsigned, ``width`` < the ring's bits): ``x_0 + x_1 - 2^width c`` with ``c`` the
    carry out of the ``width``-bit sum (:func:`carry_out`), made additive in the ring. Above
    64 bits, ``x`` holds the elements of ``Ring(width)`` (a multiple of 64 bits)."""
    if (dry := await s.row_wise(lift, x, width, tag, ring)) is not None:
        return dry
    if width > 64:
        bits = np.ascontiguousarray(Ring(width).bits_of(x)[:, ::-1])
        values = ring.array(x)
    else:
        words = np.asarray(x, dtype=np.uint64)
        bits = ((words[:, None] >> np.arange(width - 1, -1, -1, dtype=np.uint64))
                & np.uint64(1)).astype(np.uint8)  # fmt: skip
        values = ring.array(words)
    carry = await carry_out(s, bits, tag, ring)
    c = await bit_to_ring(s, carry, f"{tag}/b2a", ring)
    return ring.reduce(values - (c << width if ring.wide else c << np.uint64(width)))


async def argmax(
    s: Session, keys: np.ndarray, tag: str, *, denominators: np.ndarray | None = None,
    ring: Ring = RING64, with_key: bool = False,
) -> Any:  # fmt: skip
    """Additive shares of the index of the largest key of each row of ``keys`` (``rows x
    candidates``, this party's shares), the first on a tie; with ``denominators`` the keys
    are the fractions ``keys / denominators``; with ``with_key`` also the shares of the
    largest key (``(index, key)``). Nothing is opened."""
    rows, count = keys.shape
    key = ring.array(keys)
    den = None if denominators is None else ring.array(denominators)
    index = np.tile(ring.array(np.arange(count)), (rows, 1))
    if s.role == 1:
        index = ring.zeros(index.shape)
    for level, pairs in enumerate(tournament(count)):
        left, right = slice(0, 2 * pairs, 2), slice(1, 2 * pairs, 2)
        kl, kr = key[:, left].reshape(-1), key[:, right].reshape(-1)
        il, ir = index[:, left].reshape(-1), index[:, right].reshape(-1)
        deltas = [kr - kl, ir - il]
        if den is not None:
            dl, dr = den[:, left].reshape(-1), den[:, right].reshape(-1)
            prods = await multiply(s, np.concatenate([kl, kr]), np.concatenate([dr, dl]),
                                   f"{tag}/cross{level}", ring)  # fmt: skip
            diff = prods[: kl.size] - prods[kl.size :]  # kl dr - kr dl
            deltas.append(dr - dl)
        else:
            diff = kl - kr
        beta = await sign_bit(s, ring.reduce(diff), f"{tag}/cmp{level}", ring)
        # the right one wins only when the left is strictly smaller: ties keep the earlier
        product, _ = await select(s, beta, ring.reduce(np.stack(deltas, axis=1)),
                                  f"{tag}/sel{level}", ring)  # fmt: skip
        moved = [product[:, j] for j in range(len(deltas))]
        arrays = [key, index, *([den] if den is not None else [])]
        new = [ring.reduce(a[:, left].reshape(-1) + m).reshape(rows, pairs)
               for a, m in zip(arrays, moved, strict=True)]  # fmt: skip
        if key.shape[1] % 2:  # the odd one out goes on to the next round as it is
            new = [np.concatenate([c, a[:, -1:]], axis=1) for c, a in zip(new, arrays, strict=True)]
        key, index = new[0], new[1]
        den = new[2] if den is not None else None
    return (index[:, 0], key[:, 0]) if with_key else index[:, 0]
