"""Beaver's triples, as two parties ``p0`` and ``p1`` consume them: AND triples over ``Z_2``
and word triples over any ring of :mod:`protocols.engine.ring`, a batch at a time.

* :class:`Needs` — how many of each a batch uses; :class:`Pool` — one party's shares of a
  batch, handed out in the order the protocol uses them (:meth:`Pool.finished` checks that
  the batch used them all: the two parties and whoever made the triples planned the same
  batch); :class:`Pools` — a batch's pools, one per ring;
* made by a dealing party (:func:`deal_triples`, :func:`receive_triples`): two fresh seeds
  from its own generator, ``p0``'s triples expanded from its seed, ``p1``'s ``a, b`` from its
  own and its ``c`` sent as a correction; the dealing party receives nothing;
* or by ``p0`` and ``p1`` themselves by oblivious transfer (:func:`ot_triples`, over an
  IKNP session, :func:`ot_session`): an AND triple from two random OTs, ``p0`` sending, whose
  random choice bits are ``p1``'s ``b_1`` and ``a_1`` and whose message pairs define ``p0``'s
  ``a_0 = u_0 ⊕ u_1`` and ``b_0 = v_0 ⊕ v_1`` (``a_0 ∧ b_1 = u_0 ⊕ u_{b_1}``, ``a_1 ∧ b_0 =
  v_0 ⊕ v_{a_1}``); an own-bit triple (``p0``'s ``a_0``, ``p1``'s ``b_1``, for an AND of the
  two parties' own bits) from one, a paired triple (``a ∧ b`` and ``a ∧ b'``) from one each
  way of two-bit messages (:func:`ot_and_triples`); word triples by Gilboa's products
  (:mod:`protocols.ot.gilboa`), with pads as wide as the ring past 64 bits.

Which of the two a run uses is its preprocessing's choice
(:mod:`protocols.engine.preprocessing`); how many a protocol needs, a dry run of the protocol
itself says (:class:`protocols.engine.session.Session`).

What each party receives: ``p0`` and ``p1``, from a dealing party, a seed and corrections
(``compare/dealt``, uniform), or, with oblivious transfer, the messages of OT extension
(uniform, :mod:`protocols.ot`). A dealing party receives nothing here.

References: D. Beaver, *Efficient multiparty protocols using circuit randomization*, CRYPTO
1991 (the triples); N. Gilboa, *Two party RSA key generation*, CRYPTO 1999 (products by
oblivious transfer); Y. Ishai, J. Kilian, K. Nissim, E. Petrank, *Extending oblivious
transfers efficiently*, CRYPTO 2003 (the OT extension they run on).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import SeedStream
from mpc.errors import ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.engine.ring import RING64, Ring
from protocols.ot.gilboa import beaver_triples, wide_beaver_triples
from protocols.ot.iknp import (
    CHUNK_OTS,
    PAD_BLOCKS,
    ExtensionReceiver,
    ExtensionSender,
    extend_as_receiver,
    extend_as_sender,
    extension_receiver,
    extension_sender,
    random_bits_receive,
    random_bits_send,
    record_ots,
    split_batches,
)

__all__ = [
    "DEALT",
    "Needs",
    "Own",
    "Paired",
    "Pool",
    "Pools",
    "Triple",
    "deal_triples",
    "extras_dealt",
    "ot_session",
    "ot_triples",
    "receive_triples",
    "selects_dealt",
]

#: what p0 and p1 receive from a dealing party
DEALT = uniform(
    "compare/dealt",
    "the helper's correlated randomness: a seed (p0), or a seed and corrections (p1)",
)

#: a Beaver triple of a batch: ``a``, ``b`` and ``c = a b`` (words) or ``a ∧ b`` (bits)
Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


#: an own-bit AND triple of a batch, one party's part: ``p0``'s ``a_0`` and share of ``a_0 ∧
#: b_1``, ``p1``'s ``b_1`` and its share (for ``x_0 ∧ x_1`` of the two parties' own bits)
Own = tuple[np.ndarray, np.ndarray]

#: a paired AND triple: XOR shares of ``a``, ``b``, ``b'``, ``a ∧ b`` and ``a ∧ b'`` (two
#: ANDs with one operand in common, which is opened once)
Paired = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: a selection triple of a batch: ``a`` (an XOR-shared bit, ``uint8``), ``[a]`` (the same bit
#: shared additively in the ring), ``w`` and ``[a w]`` (ring elements)
Select = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Needs:
    """How many AND triples (``bits``), word triples (``words``), selection triples
    (``selects``), own-bit AND triples (``owns``) and paired AND triples (``pairs``) a batch
    uses."""

    bits: int = 0
    words: int = 0
    selects: int = 0
    owns: int = 0
    pairs: int = 0

    def __add__(self, other: Needs) -> Needs:
        return Needs(self.bits + other.bits, self.words + other.words,
                     self.selects + other.selects, self.owns + other.owns,
                     self.pairs + other.pairs)  # fmt: skip

    def __bool__(self) -> bool:
        return bool(self.bits or self.words or self.selects or self.owns or self.pairs)


class Pool:
    """One party's shares of a batch's triples, handed out in the order the protocol uses
    them; :meth:`finished` checks that the batch used them all (the helper and the parties
    planned the same batch)."""

    def __init__(
        self, bits: Triple, words: Triple, selects: Select | None = None,
        owns: Own | None = None, pairs: Paired | None = None,
    ) -> None:  # fmt: skip
        self._bits, self._words = bits, words
        self._selects = selects
        self._owns = owns if owns is not None else (np.zeros(0, np.uint8),) * 2
        self._pairs = pairs if pairs is not None else (np.zeros(0, np.uint8),) * 5
        self._b = self._w = self._s = self._o = self._p = 0

    def own_triple(self, shape: tuple[int, int]) -> Own:
        n = shape[0] * shape[1]
        if self._o + n > len(self._owns[0]):
            raise ProtocolError("the batch needs more own-bit AND triples than were made")
        out = tuple(t[self._o : self._o + n].reshape(shape) for t in self._owns)
        self._o += n
        return out  # type: ignore[return-value]

    def pair_triple(self, shape: tuple[int, int]) -> Paired:
        n = shape[0] * shape[1]
        if self._p + n > len(self._pairs[0]):
            raise ProtocolError("the batch needs more paired AND triples than were made")
        out = tuple(t[self._p : self._p + n].reshape(shape) for t in self._pairs)
        self._p += n
        return out  # type: ignore[return-value]

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

    def select_triple(self, n: int) -> Select:
        made = 0 if self._selects is None else len(self._selects[0])
        if self._s + n > made:
            raise ProtocolError("the batch needs more selection triples than were made")
        assert self._selects is not None
        out = tuple(t[self._s : self._s + n] for t in self._selects)
        self._s += n
        return out  # type: ignore[return-value]

    def finished(self) -> None:
        made = 0 if self._selects is None else len(self._selects[0])
        if (self._b != len(self._bits[0]) or self._w != len(self._words[0]) or self._s != made
                or self._o != len(self._owns[0]) or self._p != len(self._pairs[0])):  # fmt: skip
            raise ProtocolError("the batch used fewer triples than were made")


@dataclass
class Pools:
    """A batch's pools, one per ring (by its bits); AND triples come from the pool of
    ``Z_{2^64}``."""

    by_bits: dict[int, Pool] = field(default_factory=dict)

    def of(self, ring: Ring) -> Pool:
        pool = self.by_bits.get(ring.bits)
        if pool is None:
            raise ProtocolError(f"the batch made no triples in Z_2^{ring.bits}")
        return pool

    def finished(self) -> None:
        for pool in self.by_bits.values():
            pool.finished()


# ----------------------------------------------------------------------------- dealt


def _stream(seed: object) -> SeedStream:
    try:
        return SeedStream(seed)
    except ValueError:
        raise ProtocolError("a seed of correlated randomness must be 32 bytes") from None


async def deal_triples(
    party: Party, p0: str, p1: str, tag: str, needs: Needs, ring: Ring = RING64
) -> None:
    """A dealing party's part: two fresh seeds, ``p0``'s triples expanded from its seed,
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
    _, (_, sa1, _, sc1) = selects_dealt(s0, s1, needs.selects, ring)
    corrections = np.concatenate([sa1, sc1])
    _, ((_, oc1), (*_, pc1, pc21)) = extras_dealt(s0, s1, needs)
    none = dict.fromkeys(("bits", "words", "selects", "owns", "pairs"))
    await party.send(p0, f"{tag}/dealt", {"seed": seeds[0], **none})
    await party.send(p1, f"{tag}/dealt", {
        "seed": seeds[1],
        "bits": pack_array(np.packbits(c1)) if needs.bits else None,
        "words": ring.pack(wc1) if needs.words else None,
        "selects": ring.pack(corrections) if needs.selects else None,
        "owns": pack_array(np.packbits(oc1)) if needs.owns else None,
        "pairs": pack_array(np.packbits(np.concatenate([pc1, pc21]))) if needs.pairs else None,
    })  # fmt: skip


def extras_dealt(
    s0: SeedStream, s1: SeedStream, needs: Needs
) -> tuple[tuple[Own, Paired], tuple[Own, Paired]]:
    """A dealer's arithmetic of the own-bit and paired AND triples, after the selection
    triples of the streams: ``p0``'s all from its seed; ``p1``'s bits from its own, its
    shares of the products made to fit (its corrections). Returns both parties' triples."""
    n, m = needs.owns, needs.pairs
    a0, c0 = s0.bits(n), s0.bits(n)
    pa0, pb0, pb20, pc0, pc20 = (s0.bits(m) for _ in range(5))
    b1 = s1.bits(n)
    pa1, pb1, pb21 = (s1.bits(m) for _ in range(3))
    a = pa0 ^ pa1
    return (((a0, c0), (pa0, pb0, pb20, pc0, pc20)),
            ((b1, (a0 & b1) ^ c0), (pa1, pb1, pb21, (a & (pb0 ^ pb1)) ^ pc0,
                                     (a & (pb20 ^ pb21)) ^ pc20)))  # fmt: skip


def own_extras(
    s: SeedStream, needs: Needs, role: int, owns: np.ndarray | None, pairs: np.ndarray | None
) -> tuple[Own, Paired]:
    """A party's own-bit and paired AND triples from its seed (the order of
    :func:`extras_dealt`): all at ``p0``; at ``p1`` its bits and the dealer's corrections
    ``owns`` and ``pairs``."""
    n, m = needs.owns, needs.pairs
    if role == 0:
        return (s.bits(n), s.bits(n)), tuple(s.bits(m) for _ in range(5))  # type: ignore[return-value]
    assert owns is not None and pairs is not None
    b1 = s.bits(n)
    pa, pb, pb2 = (s.bits(m) for _ in range(3))
    return (b1, owns), (pa, pb, pb2, pairs[:m], pairs[m:])


def selects_dealt(s0: SeedStream, s1: SeedStream, n: int, ring: Ring) -> tuple[Select, Select]:
    """A dealer's arithmetic of ``n`` selection triples, after the other triples of the
    streams: ``p0``'s ``a_0, [a]_0, w_0, [a w]_0`` and ``p1``'s ``a_1, w_1`` from their
    seeds, ``p1``'s ``[a]_1, [a w]_1`` made to fit (its corrections). Returns both
    parties' triples."""
    a0, sa0, w0, c0 = s0.bits(n), ring.random(s0, n), ring.random(s0, n), ring.random(s0, n)
    a1, w1 = s1.bits(n), ring.random(s1, n)
    a = ring.array(a0 ^ a1)
    return (a0, sa0, w0, c0), (a1, ring.reduce(a - sa0), w1, ring.reduce(a * (w0 + w1) - c0))


def own_selects(s: SeedStream, n: int, ring: Ring, role: int, fixed: np.ndarray | None) -> Select:
    """A party's selection triples from its seed (the dealer's order of
    :func:`selects_dealt`): all four at ``p0``; at ``p1`` its ``a_1, w_1`` and the
    dealer's corrections ``fixed``."""
    if role == 0:
        return s.bits(n), ring.random(s, n), ring.random(s, n), ring.random(s, n)
    assert fixed is not None
    a, w = s.bits(n), ring.random(s, n)
    return a, fixed[:n], w, fixed[n:]


async def receive_triples(
    party: Party, dealer: str, tag: str, role: int, needs: Needs, ring: Ring = RING64
) -> Pool:
    """A party's triples from the dealing party ``dealer``: expanded from its seed (and, at
    ``p1``, completed by the corrections)."""
    body = await party.recv(dealer, f"{tag}/dealt", DEALT)
    if not isinstance(body, dict):
        raise ProtocolError(f"{party.name}: {dealer} sent malformed randomness at {tag}")
    s = _stream(body.get("seed"))
    if role == 0:
        if any(body.get(k) is not None for k in ("bits", "words", "selects", "owns", "pairs")):
            raise ProtocolError(f"{party.name}: {dealer} sent p0 corrections at {tag}")
        bits = (s.bits(needs.bits), s.bits(needs.bits), s.bits(needs.bits))
        w = needs.words
        words = (ring.random(s, w), ring.random(s, w), ring.random(s, w))
        selects = own_selects(s, needs.selects, ring, 0, None)
        return Pool(bits, words, selects, *own_extras(s, needs, 0, None, None))
    packed = (
        unpack_array(body.get("bits"), np.uint8, ((needs.bits + 7) // 8,), dealer, "bits")
        if needs.bits else np.zeros(0, np.uint8)
    )  # fmt: skip
    wc = (ring.unpack(body.get("words"), (needs.words,), dealer, "words")
          if needs.words else ring.zeros(0))  # fmt: skip
    fixed = (ring.unpack(body.get("selects"), (2 * needs.selects,), dealer, "selects")
             if needs.selects else ring.zeros(0))  # fmt: skip
    owns = _bits_of(body.get("owns"), needs.owns, dealer, "owns")
    pairs = _bits_of(body.get("pairs"), 2 * needs.pairs, dealer, "pairs")
    a, b = s.bits(needs.bits), s.bits(needs.bits)
    wa, wb = ring.random(s, needs.words), ring.random(s, needs.words)
    selects = own_selects(s, needs.selects, ring, 1, fixed)
    return Pool((a, b, np.unpackbits(packed)[: needs.bits]), (wa, wb, wc), selects,
                *own_extras(s, needs, 1, owns, pairs))  # fmt: skip


def _bits_of(body: Any, n: int, dealer: str, what: str) -> np.ndarray:
    """``n`` bits packed in ``body`` (none for ``n = 0``)."""
    if not n:
        return np.zeros(0, np.uint8)
    return np.unpackbits(unpack_array(body, np.uint8, ((n + 7) // 8,), dealer, what))[:n]


# ----------------------------------------------------------------------------- by OT


async def ot_session(
    party: Party, other: str, role: int, tag: str
) -> ExtensionSender | ExtensionReceiver:
    """An OT-extension session of ``p0`` (its sender) and ``p1`` for :func:`ot_triples`: 128
    base OTs, then as many batches as the pools ask for (each batch a fresh nonce)."""
    if role == 0:
        return await extension_sender(party, other, tag=f"{tag}/ot")
    return await extension_receiver(party, other, tag=f"{tag}/ot")


async def ot_triples(
    party: Party, other: str, role: int, tag: str, needs: Needs, ring: Ring = RING64,
    session: ExtensionSender | ExtensionReceiver | None = None,
    back: ExtensionSender | ExtensionReceiver | None = None,
) -> Pool:  # fmt: skip
    """``p0``'s and ``p1``'s triples made between them by oblivious transfer (the module
    docstring): ``p0`` sends, ``2 needs.bits`` random OTs and ``needs.words`` Gilboa
    triples, in ``session`` (:func:`ot_session`; a new one without); the selection triples
    take ``session`` and ``back``, a session the other way (``p1`` sending: one made here
    without)."""
    if session is None:
        session = await ot_session(party, other, role, tag)
    if (needs.selects or needs.pairs) and back is None:
        back = await ot_session(party, other, 1 - role, f"{tag}/back")
    bits, owns, pairs = await ot_and_triples(party, role, needs, session, back)
    words = await _ot_words(party, other, needs.words, session, tag, ring)
    selects = None
    if needs.selects:
        assert back is not None
        selects = await ot_selects(party, role, needs.selects, session, back, tag, ring)
    return Pool(bits, words, selects, owns, pairs)


async def _random_bits(
    party: Party, session: ExtensionSender | ExtensionReceiver, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random OTs of two-bit messages (the low bits of the first byte of each):
    the sender's pair ``(x0, x1)``, the receiver's ``(choices, x_choice)``."""
    if not m:
        z = np.zeros(0, np.uint8)
        return z, z
    if isinstance(session, ExtensionSender):
        return await random_bits_send(party, session, m, 2)
    return await random_bits_receive(party, session, m, 2)


async def ot_and_triples(
    party: Party, role: int, needs: Needs, session: ExtensionSender | ExtensionReceiver,
    back: ExtensionSender | ExtensionReceiver | None,
) -> tuple[Triple, Own, Paired]:  # fmt: skip
    """The AND triples of ``needs`` by random OTs (the module docstring), ``p0`` sending in
    ``session``: two per AND triple; one per own-bit triple (``p0``'s ``a_0 = u_0 ⊕ u_1``,
    ``p1``'s ``b_1`` its choice, ``a_0 ∧ b_1 = u_0 ⊕ u_{b_1}``); and for a paired triple
    one each way, of two bits each: ``p1`` choosing its ``a_1`` from ``p0``'s pair, whose
    differences are ``p0``'s ``b_0, b'_0``, and ``p0`` its ``a_0`` over ``back`` from
    ``p1``'s, whose differences are ``p1``'s ``b_1, b'_1``: the four cross products of
    ``a ∧ b`` and ``a ∧ b'`` from two OTs, where two AND triples take four."""
    n, o, m = needs.bits, needs.owns, needs.pairs
    first, second = await _random_bits(party, session, 2 * n + o + m)
    ours, theirs = first[:0], first[:0]
    if m:
        if back is None:
            raise ProtocolError("paired AND triples need an OT session each way")
        ours, theirs = await _random_bits(party, back, m)
    if role == 0:  # first, second: the pairs of p0's messages; ours: its choices over back
        d = first ^ second
        u0, v0, w0 = first[:n] & 1, first[n : 2 * n] & 1, first[2 * n :]
        a, b = d[:n] & 1, d[n : 2 * n] & 1
        bits = (a, b, (a & b) ^ u0 ^ v0)
        owns = (d[2 * n : 2 * n + o] & 1, w0[:o] & 1)
        pb = d[2 * n + o :]
        cross = w0[o:] ^ theirs  # p0's shares of a_1 b_0, b'_0 and of a_0 b_1, b'_1
        pa = ours
    else:  # first: its choices, second: the messages chosen; ours, theirs: back's pair
        a, b = first[n : 2 * n], first[:n]
        bits = (a, b, (a & b) ^ (second[:n] & 1) ^ (second[n : 2 * n] & 1))
        owns = (first[2 * n : 2 * n + o], second[2 * n : 2 * n + o] & 1)
        pa, pb = first[2 * n + o :], ours ^ theirs
        cross = second[2 * n + o :] ^ ours
    c = ((pa * 3) & pb) ^ cross  # the two products, in bits 0 and 1
    pairs = (pa, pb & 1, pb >> 1, c & 1, c >> 1)
    return bits, owns, pairs


async def ot_selects(
    party: Party, role: int, n: int, session: ExtensionSender | ExtensionReceiver,
    back: ExtensionSender | ExtensionReceiver, tag: str, ring: Ring,
) -> Select:  # fmt: skip
    """``n`` selection triples by correlated OTs of ring elements (:func:`ring_cots_send`),
    one each way per triple: each party draws its ``a_i`` and ``w_i``; with ``a = a_0 ⊕ a_1
    = a_0 + a_1 - 2 a_0 a_1``, ``p1`` choosing by ``a_1`` gets ``x + a_1 (a_0, (1 - 2a_0)
    w_0)`` for ``p0``'s ``x``, which gives both shares of ``a_0 a_1`` and of ``a w_0 = a_0 w_0
    + a_1 (1 - 2a_0) w_0``; ``p0`` choosing by ``a_0`` over ``back`` gets ``x' + a_0 (1 -
    2a_1) w_1``, the shares of ``a w_1``. Two OTs and three ring elements of corrections per
    triple, where a Beaver triple takes two Gilboa products of as many OTs as the ring has
    bits."""
    a = randomness.bits(n, f"{tag}/select-a")
    w = ring.random(randomness.seed(f"{tag}/select-w"), n)
    ai = ring.array(a)
    flipped = ring.reduce((ring.constant(1, n) - 2 * ai) * w)  # (1 - 2 a_i) w_i
    if role == 0:
        assert isinstance(session, ExtensionSender) and isinstance(back, ExtensionReceiver)
        x, y = await asyncio.gather(
            ring_cots_send(party, session, np.stack([ai, flipped], axis=1), ring),
            ring_cots_receive(party, back, a, 1, ring),
        )
        shared_a = ring.reduce(ai + 2 * x[:, 0])
        c = ring.reduce(ai * w - x[:, 1] + y[:, 0])
    else:
        assert isinstance(session, ExtensionReceiver) and isinstance(back, ExtensionSender)
        y, x = await asyncio.gather(
            ring_cots_receive(party, session, a, 2, ring),
            ring_cots_send(party, back, flipped[:, None], ring),
        )
        shared_a = ring.reduce(ai - 2 * y[:, 0])
        c = ring.reduce(y[:, 1] + ai * w - x[:, 0])
    party.metrics.count("select_triples", n)
    return a, shared_a, w, c


def _ring_pads(h: np.ndarray, k: int, ring: Ring) -> np.ndarray:
    """``m x k`` ring elements from the ``(m, 16 r)`` hash blocks ``h``."""
    limbs, size = ring.limbs, max(ring.bits, 64) // 8
    words = np.ascontiguousarray(np.ascontiguousarray(h).view("<u8")[:, : k * limbs])
    if ring.bits < 64:
        words = words & np.uint64(ring.mask)
    assert size * k <= h.shape[1]
    return ring.from_words(words.reshape(-1, limbs), (len(h), k))


def _cot_batches(m: int, k: int, ring: Ring) -> tuple[int, int, list[int]]:
    """Hash blocks per OT of ``k`` ring elements, OTs per batch and the batches' sizes."""
    blocks = max(1, -(-k * ring.limbs * 8 // 16))
    per = max(1, min(CHUNK_OTS, PAD_BLOCKS // blocks))
    return blocks, per, split_batches(m, per)


async def ring_cots_send(
    party: Party, session: ExtensionSender, delta: np.ndarray, ring: Ring
) -> np.ndarray:
    """Correlated OTs of ``k`` elements of ``ring`` as the sender, any ring, ``delta`` ``m x
    k``: returns the uniform ``x`` such that the receiver gets ``x + bit delta``; sends ``τ
    = x^1 - x^0 - Δ`` computed in the ring (each IKNP OT's hashes stretched to the width)."""
    m, k = delta.shape
    blocks, per, sizes = _cot_batches(m, k, ring)
    out = ring.zeros((m, k))

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> dict[str, object]:
        part = slice(c * per, c * per + sizes[c])
        x0 = _ring_pads(h0, k, ring)
        out[part] = x0
        return ring.pack(ring.reduce(_ring_pads(h1, k, ring) - x0 - delta[part]))

    await extend_as_sender(party, session, sizes, answer, blocks=blocks)
    record_ots(party, "ot/vector", session, "sender", ots=m, width=k)
    return out


async def ring_cots_receive(
    party: Party, session: ExtensionReceiver, choices: np.ndarray, k: int, ring: Ring
) -> np.ndarray:
    """Correlated OTs of ``k`` ring elements as the receiver with ``choices`` (``m`` bits):
    ``x + choices delta`` (``m x k``) for the sender's ``x`` and ``delta``
    (:func:`ring_cots_send`)."""
    m = len(choices)
    blocks, per, sizes = _cot_batches(m, k, ring)
    out = ring.zeros((m, k))

    def chosen(c: int) -> np.ndarray:
        return choices[c * per : c * per + sizes[c]]

    def settle(c: int, bits: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
        part = slice(c * per, c * per + sizes[c])
        t = ring.unpack(tau, (sizes[c], k), session.peer, step)
        picked = t * ring.array(bits)[:, None]
        out[part] = ring.reduce(_ring_pads(h, k, ring) - picked)

    await extend_as_receiver(party, session, sizes, chosen, settle, blocks=blocks)
    record_ots(party, "ot/vector", session, "receiver", ots=m, width=k)
    return out


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
    if ring.bits != 64:
        raise ProtocolError(f"no triples by oblivious transfer in Z_2^{ring.bits}")
    t = await beaver_triples(party, other, n, session=session, tag=f"{tag}/ot-words")
    return t.a, t.b, t.c
