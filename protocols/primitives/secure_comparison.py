"""Secure comparison and argmax on additive shares: the building block that lets a learner
pick the best split without opening a count or a score.

Two parties ``p0`` and ``p1`` hold additive shares mod ``2^64`` of signed values (two's
complement, ``|x| < 2^62``). They need correlated randomness, Beaver triples over ``Z_2``
(AND triples) and over ``Z_{2^64}``, which comes from one of three *helpers*
(:data:`HELPERS`):

* ``dealer``: a commodity server deals it (it draws two seeds from its OS generator, one per
  party; ``p0`` expands its seed, ``p1`` its own and receives the corrections that complete
  each triple). The dealer receives nothing; trusted to collude with neither party;
* ``sites``: the same, dealt by a third site (``k >= 3`` sites, honest majority: no two
  colluding);
* ``ot``: no third party at all (any ``k >= 2``): ``p0`` and ``p1`` make the triples
  themselves by oblivious transfer (IKNP extension, :mod:`protocols.ot.iknp`): an AND triple
  from two random OTs, ``p0`` sending, whose random choice bits are ``p1``'s ``b_1`` and
  ``a_1`` and whose message pairs define ``p0``'s ``a_0 = u_0 ⊕ u_1`` and ``b_0 = v_0 ⊕ v_1``
  (``a_0 ∧ b_1 = u_0 ⊕ u_{b_1}``, ``a_1 ∧ b_0 = v_0 ⊕ v_{a_1}``); word triples by Gilboa's
  products (:func:`protocols.ot.gilboa.beaver_triples`). Semi-honest parties.

**Less than zero** (:func:`less_than_zero`: shares of ``[x < 0]``): each party splits its
own share into bits, so the bits of ``x_0`` and ``x_1`` are XOR shares of nothing yet; the
sign of ``x = x_0 + x_1`` is ``x_{0,63} ⊕ x_{1,63} ⊕ carry_63``. The carry into bit 63 is the
reduction, most significant first, of the pairs ``(g_i, p_i)`` (generate ``g_i = x_{0,i} ∧
x_{1,i}``, one AND; propagate ``p_i = x_{0,i} ⊕ x_{1,i}``, local) by ``(g, p) ∘ (g', p') = (g ⊕
(p ∧ g'), p ∧ p')``: six levels of two ANDs. The sign bit, XOR-shared, becomes additive with
one product: ``m = m_0 + m_1 - 2 m_0 m_1``. Eight rounds (one for the generates, six, one)
for any number of values at once; every opening is a value masked by a triple.

**Bits of a sum** (:func:`sum_bits`): the same pairs combined by a prefix computation
(Kogge and Stone) give every carry, hence XOR shares of every bit of ``x_0 + x_1 mod 2^w``
(``1 + ⌈log2 w⌉`` rounds); :func:`prefix_or` marks, in ``⌈log2 w⌉`` rounds, each position
at or below a one, which locates the top bit (the fixed-point ``n log n`` of
:mod:`protocols.ppid3.shared_entropy`). :func:`bit_to_ring` turns XOR-shared bits into
additive shares in any ring, one product each.

**Products** (:func:`multiply`) are Beaver's, one round. **Argmax** (:func:`argmax`) is a
tournament over the candidates of each row, the earlier candidate kept on a tie (the plain
learners' rule: the first best in order wins): ``⌈log2 m⌉`` comparisons deep, each followed
by one round of products that carries the winner's key and index, so ``9 ⌈log2 m⌉`` rounds
for every row at once. Keys are integers, or fractions ``n/d`` (``d > 0``) compared by the
sign of ``n d' - n' d`` (one more round of products per level); ``|n d'|`` must stay below
``2^62``. Only the winners are opened, to the parties that should learn them.

What each party receives: ``p0`` and ``p1``, from the helper, a seed and corrections
(uniform), or, with ``ot``, the messages of OT extension (uniform); from each other, masked
values (uniform) and, to a party that learns the winners, the other's shares of them (uniform;
with its own they open the winners, the outcome, which its ledger records as
``compare/winners``). A dealing helper receives nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.engine.opening import Pair, open_shares, opening
from protocols.engine.ring import RING64, Ring
from protocols.ot.gilboa import beaver_triples, wide_beaver_triples
from protocols.ot.iknp import (
    ExtensionReceiver,
    ExtensionSender,
    extension_receiver,
    extension_sender,
    random_ots_receive,
    random_ots_send,
)

__all__ = [
    "BITS",
    "DEALT",
    "HELPERS",
    "MASKED",
    "WINNERS",
    "Needs",
    "Pool",
    "argmax",
    "argmax_needs",
    "deal_pool",
    "less_than_zero",
    "ltz_needs",
    "make_pool",
    "multiply",
    "open_winners",
    "receive_pool",
    "secure_argmax",
    "tournament",
]

#: the ring: additive shares mod 2^64; values are signed, |x| < 2^62
BITS = 64
U64 = np.uint64

#: where the correlated randomness comes from, and the trust each needs
HELPERS = {
    "dealer": "semi-honest p0 and p1; the dealer colludes with neither",
    "sites": "semi-honest sites, no two colluding; a third site deals",
    "ot": "semi-honest p0 and p1; no third party (oblivious transfer)",
}

#: what a party receives
DEALT = uniform(
    "compare/dealt",
    "the helper's correlated randomness: a seed (p0), or a seed and corrections (p1)",
)
MASKED = uniform(
    "compare/masked", "the other party's values or bits plus a mask this party does not know"
)
WINNERS = opening(
    "compare/winner-shares",
    "p0's or p1's share of the winners, re-randomised (to a party that learns them)",
    opens="compare/winners",
)


# ----------------------------------------------------------------------------- randomness


def _stream(seed: object) -> SeedStream:
    try:
        return SeedStream(seed)
    except ValueError:
        raise ProtocolError("a seed of correlated randomness must be 32 bytes") from None


#: a Beaver triple of a batch: ``a``, ``b`` and ``c = a b`` (words) or ``a ∧ b`` (bits)
Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Needs:
    """How many AND triples (``bits``) and word triples (``words``) a batch uses."""

    bits: int = 0
    words: int = 0

    def __add__(self, other: Needs) -> Needs:
        return Needs(self.bits + other.bits, self.words + other.words)


class Pool:
    """One party's shares of a batch's triples, handed out in the order the protocol uses
    them; :meth:`finished` checks that the batch used them all (the helper and the parties
    planned the same batch)."""

    def __init__(self, bits: Triple, words: Triple) -> None:
        self._bits, self._words = bits, words
        self._b = self._w = 0

    def and_triple(self, shape: tuple[int, int]) -> Triple:
        n = shape[0] * shape[1]
        if self._b + n > len(self._bits[0]):
            raise ProtocolError("the batch needs more AND triples than were made")
        out = tuple(t[self._b : self._b + n].reshape(shape) for t in self._bits)
        self._b += n
        return out  # type: ignore[return-value]

    def word_triple(self, n: int) -> Triple:
        if self._w + n > len(self._words[0]):
            raise ProtocolError("the batch needs more word triples than were made")
        out = tuple(t[self._w : self._w + n] for t in self._words)
        self._w += n
        return out  # type: ignore[return-value]

    def finished(self) -> None:
        if self._b != len(self._bits[0]) or self._w != len(self._words[0]):
            raise ProtocolError("the batch used fewer triples than were made")


def _reduction_widths(width: int) -> list[int]:
    """How many combinations each level of the reduction of ``width`` bit pairs makes: the
    reduction pairs them off as a tournament does."""
    return tournament(width)


def carry_needs(n: int, width: int) -> Needs:
    """The AND triples of :func:`carry_out` on ``n`` values of ``width`` bits."""
    return Needs(n * width + n * sum(2 * w for w in _reduction_widths(width)))


def ltz_needs(n: int, ring: Ring = RING64) -> Needs:
    """The triples of :func:`less_than_zero` on ``n`` values."""
    return carry_needs(n, ring.bits - 1) + Needs(words=n)


def lift_needs(n: int, width: int) -> Needs:
    """The triples of :func:`lift` on ``n`` values of ``width`` bits."""
    return carry_needs(n, width) + Needs(words=n)


def tournament(count: int) -> list[int]:
    """How many pairs each round of a tournament over ``count`` candidates plays."""
    out = []
    while count > 1:
        out.append(count // 2)
        count = count // 2 + count % 2
    return out


def argmax_needs(rows: int, count: int, fractions: bool, ring: Ring = RING64) -> Needs:
    """The triples of :func:`argmax` over ``rows`` rows of ``count`` keys."""
    total = Needs()
    for pairs in tournament(count):
        n = rows * pairs
        total += Needs(words=2 * n) if fractions else Needs()
        total += ltz_needs(n, ring) + Needs(words=(3 if fractions else 2) * n)
    return total


async def deal_pool(
    party: Party, p0: str, p1: str, tag: str, needs: Needs, ring: Ring = RING64
) -> None:
    """A dealing helper's part: two fresh seeds, ``p0``'s triples expanded from its seed,
    ``p1``'s ``a, b`` from its own and its ``c`` sent as a correction. It receives nothing."""
    seeds = (randomness.seed(f"{tag}/p0"), randomness.seed(f"{tag}/p1"))
    s0, s1 = SeedStream(seeds[0]), SeedStream(seeds[1])
    w = needs.words
    a0, b0, c0 = s0.bits(needs.bits), s0.bits(needs.bits), s0.bits(needs.bits)
    wa0, wb0, wc0 = ring.random(s0, w), ring.random(s0, w), ring.random(s0, w)
    a1, b1 = s1.bits(needs.bits), s1.bits(needs.bits)
    wa1, wb1 = ring.random(s1, w), ring.random(s1, w)
    c1 = ((a0 ^ a1) & (b0 ^ b1)) ^ c0
    wc1 = ring.reduce((wa0 + wa1) * (wb0 + wb1) - wc0)
    await party.send(p0, f"{tag}/dealt", {"seed": seeds[0], "bits": None, "words": None})
    await party.send(p1, f"{tag}/dealt", {
        "seed": seeds[1],
        "bits": pack_array(np.packbits(c1)) if needs.bits else None,
        "words": ring.pack(wc1) if needs.words else None,
    })  # fmt: skip


async def receive_pool(
    party: Party, helper: str, tag: str, role: int, needs: Needs, ring: Ring = RING64
) -> Pool:
    """A party's triples from a dealing ``helper``: expanded from its seed (and, ``p1``,
    completed by the corrections)."""
    body = await party.recv(helper, f"{tag}/dealt", DEALT)
    if not isinstance(body, dict):
        raise ProtocolError(f"{party.name}: {helper} sent malformed randomness at {tag}")
    s = _stream(body.get("seed"))
    if role == 0:
        if body.get("bits") is not None or body.get("words") is not None:
            raise ProtocolError(f"{party.name}: {helper} sent p0 corrections at {tag}")
        bits = (s.bits(needs.bits), s.bits(needs.bits), s.bits(needs.bits))
        w = needs.words
        words = (ring.random(s, w), ring.random(s, w), ring.random(s, w))
        return Pool(bits, words)
    packed = (
        unpack_array(body.get("bits"), np.uint8, ((needs.bits + 7) // 8,), helper, "bits")
        if needs.bits else np.zeros(0, np.uint8)
    )  # fmt: skip
    wc = (ring.unpack(body.get("words"), (needs.words,), helper, "words")
          if needs.words else ring.zeros(0))  # fmt: skip
    a, b = s.bits(needs.bits), s.bits(needs.bits)
    wa, wb = ring.random(s, needs.words), ring.random(s, needs.words)
    return Pool((a, b, np.unpackbits(packed)[: needs.bits]), (wa, wb, wc))


async def ot_session(
    party: Party, other: str, role: int, tag: str
) -> ExtensionSender | ExtensionReceiver:
    """An OT-extension session of ``p0`` (its sender) and ``p1`` for :func:`ot_pool`: 128
    base OTs, then as many batches as the pools ask for (each batch a fresh nonce)."""
    if role == 0:
        return await extension_sender(party, other, tag=f"{tag}/ot")
    return await extension_receiver(party, other, tag=f"{tag}/ot")


async def ot_pool(
    party: Party, other: str, role: int, tag: str, needs: Needs, ring: Ring = RING64,
    session: ExtensionSender | ExtensionReceiver | None = None,
) -> Pool:  # fmt: skip
    """``p0``'s and ``p1``'s triples made between them by oblivious transfer (the module
    docstring): ``p0`` sends, ``2 needs.bits`` random OTs and ``needs.words`` Gilboa
    triples, in ``session`` (:func:`ot_session`; a new one without)."""
    n = needs.bits
    bits: Triple
    if session is None:
        session = await ot_session(party, other, role, tag)
    if role == 0:
        assert isinstance(session, ExtensionSender)
        if n:
            x0, x1 = await random_ots_send(party, session, 2 * n)
            u0, u1 = x0[:n, 0] & 1, x1[:n, 0] & 1
            v0, v1 = x0[n:, 0] & 1, x1[n:, 0] & 1
            a, b = u0 ^ u1, v0 ^ v1
            bits = (a, b, (a & b) ^ u0 ^ v0)
        else:
            bits = (np.zeros(0, np.uint8),) * 3
        words = await _ot_words(party, other, needs.words, session, tag, ring)
    else:
        session_r = session
        assert isinstance(session_r, ExtensionReceiver)
        if n:
            choices, x = await random_ots_receive(party, session_r, 2 * n)
            b, a = choices[:n].astype(np.uint8), choices[n:].astype(np.uint8)
            bits = (a, b, (a & b) ^ (x[:n, 0] & 1) ^ (x[n:, 0] & 1))
        else:
            bits = (np.zeros(0, np.uint8),) * 3
        words = await _ot_words(party, other, needs.words, session_r, tag, ring)
    return Pool(bits, words)


async def _ot_words(
    party: Party, other: str, n: int, session: ExtensionSender | ExtensionReceiver, tag: str,
    ring: Ring = RING64,
) -> Triple:  # fmt: skip
    if not n:
        return (ring.zeros(0),) * 3
    if ring.wide:  # Gilboa's products with pads as wide as the ring
        la, lb, cross = await wide_beaver_triples(
            party, other, n, bits=ring.bits, session=session, tag=f"{tag}/ot-words"
        )
        a, b, z = (ring.from_words(x, (n,)) for x in (la, lb, cross))
        return a, b, ring.reduce(a * b + z)
    t = await beaver_triples(party, other, n, session=session, tag=f"{tag}/ot-words")
    return t.a, t.b, t.c


async def make_pool(
    party: Party, *, helper: str, method: str, p0: str, p1: str, tag: str, needs: Needs,
    ring: Ring = RING64,
) -> Pool | None:  # fmt: skip
    """The batch's triples for any party: a dealing helper deals them (and gets None),
    ``p0`` and ``p1`` receive them, or with ``method="ot"`` make them together (``Z_{2^64}``
    only)."""
    if method not in HELPERS:
        raise ConfigError(f"the helper must be one of {list(HELPERS)}, got {method!r}")
    if method == "ot":
        role, other = (0, p1) if party.name == p0 else (1, p0)
        return await ot_pool(party, other, role, tag, needs, ring)
    if party.name == helper:
        await deal_pool(party, p0, p1, tag, needs, ring)
        return None
    return await receive_pool(party, helper, tag, 0 if party.name == p0 else 1, needs, ring)


# --------------------------------------------------------------------------- the parties


async def _open(
    party: Party, other: str, tag: str, mine: np.ndarray, ring: Ring = RING64
) -> np.ndarray:
    """Send this party's masked share, receive the other's: the opened value (``+`` for
    ring words, ``⊕`` for bits, ``uint8``)."""
    if mine.dtype == np.uint8:
        packed = np.packbits(mine)
        await party.send(other, tag, pack_array(packed))
        theirs = unpack_array(
            await party.recv(other, tag, MASKED), np.uint8, packed.shape, other, tag
        )
        return mine ^ np.unpackbits(theirs)[: mine.size].reshape(mine.shape)
    await party.send(other, tag, ring.pack(mine))
    theirs = ring.unpack(await party.recv(other, tag, MASKED), mine.shape, other, tag)
    return ring.reduce(mine + theirs)


async def _and(
    party: Party, role: int, other: str, tag: str, x: np.ndarray, y: np.ndarray, pool: Pool
) -> np.ndarray:
    """XOR shares of ``x ∧ y`` (Beaver's AND, one round)."""
    a, b, c = pool.and_triple(x.shape)
    opened = await _open(party, other, tag, np.concatenate([x ^ a, y ^ b], axis=1))
    d, e = opened[:, : x.shape[1]], opened[:, x.shape[1] :]
    z = c ^ (d & b) ^ (e & a)
    return z ^ (d & e) if role == 0 else z


async def multiply(
    party: Party, x: np.ndarray, y: np.ndarray, pool: Pool, *, role: int, other: str, tag: str,
    ring: Ring = RING64,
) -> np.ndarray:  # fmt: skip
    """Additive shares of ``x y``, element by element (Beaver, one round)."""
    a, b, c = pool.word_triple(x.size)
    opened = await _open(party, other, tag, ring.reduce(np.concatenate([x - a, y - b])), ring)
    d, e = opened[: x.size], opened[x.size :]
    z = c + d * b + e * a
    return ring.reduce(z + d * e if role == 0 else z)


async def carry_out(
    party: Party, low: np.ndarray, pool: Pool, *, role: int, other: str, tag: str
) -> np.ndarray:
    """XOR shares (``uint8``) of the carry out of ``x_0 + x_1`` for each row of ``low``: this
    party's own bits of its summand, ``n x width``, the most significant first (the module
    docstring's reduction of generate/propagate pairs; ``1 + ⌈log2 width⌉`` rounds)."""
    zero = np.zeros_like(low)
    # generate: x0_i ∧ x1_i, the two parties' own bits as XOR shares of (x0_i) and (x1_i)
    g = await _and(party, role, other, f"{tag}/gen", low if role == 0 else zero,
                   zero if role == 0 else low, pool)  # fmt: skip
    p = low  # propagate: x0_i ⊕ x1_i, XOR-shared as it is
    for level, width in enumerate(_reduction_widths(low.shape[1])):
        hi_g, hi_p = g[:, 0 : 2 * width : 2], p[:, 0 : 2 * width : 2]
        lo_g, lo_p = g[:, 1 : 2 * width : 2], p[:, 1 : 2 * width : 2]
        both = await _and(party, role, other, f"{tag}/and{level}",
                          np.concatenate([hi_p, hi_p], axis=1),
                          np.concatenate([lo_g, lo_p], axis=1), pool)  # fmt: skip
        new_g, new_p = hi_g ^ both[:, :width], both[:, width:]
        if g.shape[1] % 2:
            new_g = np.concatenate([new_g, g[:, -1:]], axis=1)
            new_p = np.concatenate([new_p, p[:, -1:]], axis=1)
        g, p = new_g, new_p
    return g[:, 0]


async def bit_to_ring(
    party: Party, bit: np.ndarray, pool: Pool, *, role: int, other: str, tag: str, ring: Ring
) -> np.ndarray:
    """Additive shares in ``ring`` of an XOR-shared bit: ``m_0 + m_1 - 2 m_0 m_1``."""
    mine = ring.array(bit.astype(np.int64))
    zeros = ring.zeros(len(bit))
    both = await multiply(party, mine if role == 0 else zeros, zeros if role == 0 else mine,
                          pool, role=role, other=other, tag=tag, ring=ring)  # fmt: skip
    return ring.reduce(mine - 2 * both)


def _distances(width: int) -> list[int]:
    """The distances of a prefix computation over ``width`` positions: 1, 2, 4, ..."""
    out, d = [], 1
    while d < width:
        out.append(d)
        d *= 2
    return out


def sum_bits_needs(n: int, width: int) -> Needs:
    """The AND triples of :func:`sum_bits` on ``n`` values of ``width`` bits."""
    return Needs(n * width + n * sum(2 * (width - d) for d in _distances(width)))


def prefix_or_needs(n: int, width: int) -> Needs:
    """The AND triples of :func:`prefix_or` on ``n`` values of ``width`` bits."""
    return Needs(n * sum(width - d for d in _distances(width)))


async def sum_bits(
    party: Party, low: np.ndarray, pool: Pool, *, role: int, other: str, tag: str
) -> tuple[np.ndarray, np.ndarray]:
    """XOR shares (``uint8``) of the bits of ``x_0 + x_1 mod 2^width`` and of its carry out,
    for each row of ``low``: this party's own bits of its summand, ``n x width``, the
    *least* significant first. The carries are a prefix computation (Kogge and Stone) of the
    pairs ``(g_i, p_i)`` by the operator of the module docstring: ``1 + ⌈log2 width⌉``
    rounds, two ANDs per position and round."""
    zero = np.zeros_like(low)
    g = await _and(party, role, other, f"{tag}/gen", low if role == 0 else zero,
                   zero if role == 0 else low, pool)  # fmt: skip
    own = low  # the bits' own propagates: the sum bit is p_i ⊕ carry_i
    p = low
    for level, d in enumerate(_distances(low.shape[1])):
        both = await _and(party, role, other, f"{tag}/pre{level}",
                          np.concatenate([p[:, d:], p[:, d:]], axis=1),
                          np.concatenate([g[:, :-d], p[:, :-d]], axis=1), pool)  # fmt: skip
        w = low.shape[1] - d
        g = np.concatenate([g[:, :d], g[:, d:] ^ both[:, :w]], axis=1)
        p = np.concatenate([p[:, :d], both[:, w:]], axis=1)
    carries = np.concatenate([np.zeros_like(g[:, :1]), g[:, :-1]], axis=1)
    return own ^ carries, g[:, -1]


async def prefix_or(
    party: Party, bits: np.ndarray, pool: Pool, *, role: int, other: str, tag: str
) -> np.ndarray:
    """XOR shares of ``o_i = b_i ∨ b_{i+1} ∨ ... ∨ b_{w-1}`` for each row of XOR-shared bits
    ``bits`` (``n x w``, least significant first): whether a one stands at ``i`` or above.
    ``a ∨ b = a ⊕ b ⊕ (a ∧ b)``; ``⌈log2 w⌉`` rounds."""
    o = bits
    for level, d in enumerate(_distances(bits.shape[1])):
        both = await _and(party, role, other, f"{tag}/or{level}", o[:, :-d], o[:, d:], pool)
        o = np.concatenate([o[:, :-d] ^ o[:, d:] ^ both, o[:, -d:]], axis=1)
    return o


async def less_than_zero(
    party: Party, x: np.ndarray, pool: Pool, *, role: int, other: str, tag: str,
    ring: Ring = RING64,
) -> np.ndarray:  # fmt: skip
    """Additive shares of ``[x < 0]`` for each value of this party's shares ``x`` (the
    module docstring's sign by carry: ``2 + ⌈log2 (K - 1)⌉`` rounds, eight for ``K = 64``)."""
    bits = ring.bits_of(ring.array(x) if not ring.wide else x)
    top = ring.bits - 1
    carry = await carry_out(party, bits[:, top - 1 :: -1], pool, role=role, other=other, tag=tag)
    sign = bits[:, top] ^ carry  # XOR shares of the sign bit
    return await bit_to_ring(party, sign, pool, role=role, other=other, tag=f"{tag}/b2a",
                              ring=ring)  # fmt: skip


async def lift(
    party: Party, x: np.ndarray, width: int, pool: Pool, *, role: int, other: str, tag: str,
    ring: Ring,
) -> np.ndarray:  # fmt: skip
    """Shares in ``ring`` of the integers whose shares mod ``2^width`` this party holds in
    ``x`` (unsigned, ``width`` < the ring's bits): ``x_0 + x_1 - 2^width c`` with ``c`` the
    carry out of the ``width``-bit sum (:func:`carry_out`), made additive in the ring. Above
    64 bits, ``x`` holds the elements of ``Ring(width)`` (a multiple of 64 bits)."""
    if width > 64:
        bits = np.ascontiguousarray(Ring(width).bits_of(x)[:, ::-1])
        values = ring.array(x)
    else:
        words = np.asarray(x, dtype=np.uint64)
        bits = ((words[:, None] >> np.arange(width - 1, -1, -1, dtype=np.uint64))
                & np.uint64(1)).astype(np.uint8)  # fmt: skip
        values = ring.array(words)
    carry = await carry_out(party, bits, pool, role=role, other=other, tag=tag)
    c = await bit_to_ring(party, carry, pool, role=role, other=other, tag=f"{tag}/b2a",
                           ring=ring)  # fmt: skip
    return ring.reduce(values - (c << width if ring.wide else c << np.uint64(width)))


async def argmax(
    party: Party, keys: np.ndarray, pool: Pool, *, role: int, other: str, tag: str,
    denominators: np.ndarray | None = None, ring: Ring = RING64, with_key: bool = False,
) -> Any:  # fmt: skip
    """Additive shares of the index of the largest key of each row of ``keys`` (``rows x
    candidates``, this party's shares), the first on a tie; with ``denominators`` the keys
    are the fractions ``keys / denominators``; with ``with_key`` also the shares of the
    largest key (``(index, key)``). Nothing is opened: :func:`open_winners`."""
    rows, count = keys.shape
    key = ring.array(keys)
    den = None if denominators is None else ring.array(denominators)
    index = np.tile(ring.array(np.arange(count)), (rows, 1))
    if role == 1:
        index = ring.zeros(index.shape)
    for level, pairs in enumerate(tournament(count)):
        left, right = slice(0, 2 * pairs, 2), slice(1, 2 * pairs, 2)
        kl, kr = key[:, left].reshape(-1), key[:, right].reshape(-1)
        il, ir = index[:, left].reshape(-1), index[:, right].reshape(-1)
        deltas = [kr - kl, ir - il]
        if den is not None:
            dl, dr = den[:, left].reshape(-1), den[:, right].reshape(-1)
            prods = await multiply(
                party, np.concatenate([kl, kr]), np.concatenate([dr, dl]), pool, role=role,
                other=other, tag=f"{tag}/cross{level}", ring=ring,
            )  # fmt: skip
            diff = prods[: kl.size] - prods[kl.size :]  # kl dr - kr dl
            deltas.append(dr - dl)
        else:
            diff = kl - kr
        deltas = [ring.reduce(d) for d in deltas]
        beta = await less_than_zero(party, ring.reduce(diff), pool, role=role, other=other,
                                    tag=f"{tag}/cmp{level}", ring=ring)  # fmt: skip
        # the right one wins only when the left is strictly smaller: ties keep the earlier
        moved = np.split(
            await multiply(party, np.tile(beta, len(deltas)), np.concatenate(deltas), pool,
                           role=role, other=other, tag=f"{tag}/sel{level}", ring=ring),
            len(deltas),
        )  # fmt: skip
        arrays = [key, index, *([den] if den is not None else [])]
        new = [ring.reduce(a[:, left].reshape(-1) + m).reshape(rows, pairs)
               for a, m in zip(arrays, moved, strict=True)]  # fmt: skip
        if key.shape[1] % 2:  # the odd one out goes on to the next round as it is
            new = [np.concatenate([c, a[:, -1:]], axis=1) for c, a in zip(new, arrays, strict=True)]
        key, index = new[0], new[1]
        den = new[2] if den is not None else None
    return (index[:, 0], key[:, 0]) if with_key else index[:, 0]


async def open_winners(
    pair: Pair, index: np.ndarray | None, n: int, *, tag: str, to: tuple[str, ...],
    ring: Ring = RING64,
) -> np.ndarray | None:  # fmt: skip
    """Open the ``n`` shared winners to the parties named in ``to``, through the pair's door
    (re-randomised: :func:`protocols.engine.opening.open_shares`; ``pair`` has agreed its
    key). Returns them (int64) to those, None elsewhere."""
    got = await open_shares(pair, index, n, to=to, tag=f"{tag}/winners", receipt=WINNERS,
                            ring=ring)  # fmt: skip
    return None if got is None else np.asarray(got, dtype=np.int64)


async def secure_argmax(
    party: Party, keys: np.ndarray | None, *, shape: tuple[int, int], p0: str, p1: str,
    helper: str | None, method: str = "dealer", tag: str,
    denominators: np.ndarray | None = None, fractions: bool = False,
    reveal_to: tuple[str, ...] | None = None, ring: Ring = RING64,
) -> np.ndarray | None:  # fmt: skip
    """The whole argmax for any party: the triples from ``helper`` (``method`` ``"dealer"``
    or ``"sites"``: it deals) or by oblivious transfer (``"ot"``: no helper); ``p0`` and
    ``p1`` (holding additive shares ``keys``, and ``denominators`` when ``fractions``) find
    the winner of each of the ``shape[0]`` rows of ``shape[1]`` candidates and open it to
    ``reveal_to`` (default: both). Every party records the public shape (``compare/shape``),
    those that learn the winners record them (``compare/winners``). Returns the winners
    (int64) to those, None to the others."""
    rows, count = shape
    party.ledger.record("compare/shape", [rows, count], step=tag)
    pair = Pair(party, p0, p1)
    await pair.agree(f"{tag}/open-key")
    needs = argmax_needs(rows, count, fractions, ring)
    pool = await make_pool(party, helper=helper or "", method=method, p0=p0, p1=p1, tag=tag,
                           needs=needs, ring=ring)  # fmt: skip
    if pool is None:
        return None
    if keys is None or keys.shape != shape or (fractions and denominators is None):
        raise ProtocolError(f"{party.name}: its shares of the keys do not have the shape {shape}")
    role, other = (0, p1) if party.name == p0 else (1, p0)
    index = await argmax(party, keys, pool, role=role, other=other, tag=tag,
                         denominators=denominators if fractions else None, ring=ring)  # fmt: skip
    pool.finished()
    winners = await open_winners(pair, index, rows, tag=tag, ring=ring,
                                 to=reveal_to if reveal_to is not None else (p0, p1))  # fmt: skip
    if winners is not None:
        party.ledger.record("compare/winners", winners.tolist(), step=tag)
    return winners
