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
  v_0 ⊕ v_{a_1}``); word triples by Gilboa's products (:mod:`protocols.ot.gilboa`), with pads
  as wide as the ring past 64 bits.

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

from dataclasses import dataclass, field

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
    ExtensionReceiver,
    ExtensionSender,
    extension_receiver,
    extension_sender,
    random_ots_receive,
    random_ots_send,
)

__all__ = [
    "DEALT",
    "Needs",
    "Pool",
    "Pools",
    "Triple",
    "deal_triples",
    "ot_session",
    "ot_triples",
    "receive_triples",
]

#: what p0 and p1 receive from a dealing party
DEALT = uniform(
    "compare/dealt",
    "the helper's correlated randomness: a seed (p0), or a seed and corrections (p1)",
)

#: a Beaver triple of a batch: ``a``, ``b`` and ``c = a b`` (words) or ``a ∧ b`` (bits)
Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Needs:
    """How many AND triples (``bits``) and word triples (``words``) a batch uses."""

    bits: int = 0
    words: int = 0

    def __add__(self, other: Needs) -> Needs:
        return Needs(self.bits + other.bits, self.words + other.words)

    def __bool__(self) -> bool:
        return bool(self.bits or self.words)


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
    await party.send(p0, f"{tag}/dealt", {"seed": seeds[0], "bits": None, "words": None})
    await party.send(p1, f"{tag}/dealt", {
        "seed": seeds[1],
        "bits": pack_array(np.packbits(c1)) if needs.bits else None,
        "words": ring.pack(wc1) if needs.words else None,
    })  # fmt: skip


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
        if body.get("bits") is not None or body.get("words") is not None:
            raise ProtocolError(f"{party.name}: {dealer} sent p0 corrections at {tag}")
        bits = (s.bits(needs.bits), s.bits(needs.bits), s.bits(needs.bits))
        w = needs.words
        words = (ring.random(s, w), ring.random(s, w), ring.random(s, w))
        return Pool(bits, words)
    packed = (
        unpack_array(body.get("bits"), np.uint8, ((needs.bits + 7) // 8,), dealer, "bits")
        if needs.bits else np.zeros(0, np.uint8)
    )  # fmt: skip
    wc = (ring.unpack(body.get("words"), (needs.words,), dealer, "words")
          if needs.words else ring.zeros(0))  # fmt: skip
    a, b = s.bits(needs.bits), s.bits(needs.bits)
    wa, wb = ring.random(s, needs.words), ring.random(s, needs.words)
    return Pool((a, b, np.unpackbits(packed)[: needs.bits]), (wa, wb, wc))


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
    else:
        assert isinstance(session, ExtensionReceiver)
        if n:
            choices, x = await random_ots_receive(party, session, 2 * n)
            b, a = choices[:n].astype(np.uint8), choices[n:].astype(np.uint8)
            bits = (a, b, (a & b) ^ (x[:n, 0] & 1) ^ (x[n:, 0] & 1))
        else:
            bits = (np.zeros(0, np.uint8),) * 3
    words = await _ot_words(party, other, needs.words, session, tag, ring)
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
    if ring.bits != 64:
        raise ProtocolError(f"no triples by oblivious transfer in Z_2^{ring.bits}")
    t = await beaver_triples(party, other, n, session=session, tag=f"{tag}/ot-words")
    return t.a, t.b, t.c
