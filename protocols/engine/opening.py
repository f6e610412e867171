"""The one door through which two parties, ``p0`` and ``p1``, open what they computed on
additive shares: every value they open, to any party, goes through :func:`open_shares`.

``p0`` and ``p1`` hold additive shares mod ``2^K`` of values computed with correlated
randomness, Beaver triples among it, which a third party may have dealt (a commodity server,
or a third site). A Beaver product's output share ``z_i = c_i + d b_i + e a_i (+ d e)`` is a
fixed function of the multiplied values once the triple ``(a, b, c)`` is known: the party
that dealt the triple and received both output shares could solve for what was multiplied
(every comparison of a tournament, every count a stopping test read). A share that is uniform
on its own is not uniform beside the triple its receiver dealt.

So no share leaves the pair as it was computed. Once per run ``p0`` draws a key ``κ`` from
its own generator and sends it to ``p1`` over their encrypted channel (:meth:`Pair.agree`);
no other party ever holds it. To open ``n`` values ``x = x_0 + x_1`` under a tag ``t`` to a
party outside the pair, both expand the same zero-sharing ``r = PRF_κ(t)`` (``n`` ring
elements: AES-256-CTR under ``HMAC-SHA256(κ, t)``) and send it ``x_0 + r`` and ``x_1 - r``: a
uniformly random sharing of ``x`` given ``x``, whatever the receiver dealt, since it cannot
know ``r``. A tag is used for one opening only, so no ``r`` is used twice. To ``p0`` or
``p1`` itself the other sends its share as it is: the receiver holds its own share, so the
other's is ``x`` less it, nothing more, and neither of the two ever deals the pair's
randomness (a pair that only opens to itself needs no key).

What each party receives: ``p1`` the key (uniform, ``open/pair-key``); every receiver of an
opening outside the pair, ``p0``'s and ``p1``'s re-randomised shares under the opening's
receipt, and ``p0`` or ``p1``, the other's share (uniform; with each other, or with its own,
they open what the receipt's ``opens`` names, which the caller records on its ledger).
Trust: ``p0`` and ``p1`` do not collude (together they hold every value); a receiver that
colludes with ``p1`` (who knows ``r``) learns ``p0``'s share, which is why the helper that
deals ``p0``'s and ``p1``'s randomness must collude with neither.

Network: one message of ``n`` ring elements from each of ``p0`` and ``p1`` to each receiver;
no round between ``p0`` and ``p1`` beyond the key, once.

References: D. Beaver, *Efficient multiparty protocols using circuit randomization*, CRYPTO
1991 (the triples and their output shares); re-randomising shares by a pseudorandom
zero-sharing before they are output is the output step of share-based protocols such as
R. Cramer, I. Damgård, Y. Ishai, *Share conversion, pseudorandom secret-sharing and
applications to secure computation*, TCC 2005 (pseudorandom zero-sharing from shared keys).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.expect import raw
from mpc.runtime.party import Party
from mpc.runtime.view import Receipt, uniform
from protocols.engine.ring import RING64, Ring

__all__ = ["OPENINGS", "PAIR_KEY", "Pair", "open_shares", "open_values", "opening"]

PAIR_KEY = uniform(
    "open/pair-key", "p0's fresh key of the zero-sharings that re-randomise what p0 and p1 open"
)

#: every receipt of an opening (:func:`opening`), by name: the shares of a result that p0 and
#: p1 send out, which only :func:`open_shares` sends
OPENINGS: dict[str, Receipt] = {}

_DOMAIN = b"mpc/open/v1/"


def opening(name: str, what: str, *, opens: str) -> Receipt:
    """The receipt of one kind of opening: ``p0``'s or ``p1``'s re-randomised share of
    values whose sum the receiver learns (its ledger's ``opens``)."""
    receipt = uniform(name, what, opens=opens, shared=True)
    OPENINGS[name] = receipt
    return receipt


@dataclass
class Pair:
    """``p0`` and ``p1`` of ``party``'s deployment, and at ``p0`` and ``p1`` their key of
    the zero-sharings (:meth:`agree`). Every party of a protocol makes the same pair."""

    party: Party
    p0: str
    p1: str
    _key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.p0 == self.p1 or not {self.p0, self.p1} <= set(self.party.parties):
            raise ConfigError(f"a pair of two of {self.party.parties}, not {self.p0}, {self.p1}")

    @property
    def active(self) -> bool:
        """Whether this party is ``p0`` or ``p1``."""
        return self.party.name in (self.p0, self.p1)

    @property
    def role(self) -> int:
        return 0 if self.party.name == self.p0 else 1

    @property
    def other(self) -> str:
        return self.p1 if self.role == 0 else self.p0

    async def agree(self, tag: str) -> None:
        """``p0`` draws the key and sends it to ``p1``; the other parties do nothing."""
        if not self.active:
            return
        if self.role == 0:
            self._key = randomness.seed(tag)
            await self.party.send(self.p1, tag, self._key)
        else:
            self._key = await self.party.recv(self.p0, tag, PAIR_KEY, expect=raw(32))

    def zero_share(self, tag: str, n: int, ring: Ring) -> np.ndarray:
        """This party's part of the zero-sharing of the opening ``tag``: ``r`` at ``p0``,
        ``-r`` at ``p1``."""
        if self._key is None:
            raise ProtocolError(f"{self.party.name}: an opening before p0 and p1 agreed a key")
        seed = hmac.new(self._key, _DOMAIN + tag.encode(), hashlib.sha256).digest()
        r = ring.random(SeedStream(seed), n)
        return r if self.role == 0 else ring.reduce(-r)


async def open_shares(
    pair: Pair,
    shares: np.ndarray | None,
    n: int,
    *,
    to: Sequence[str],
    tag: str,
    receipt: Receipt,
    ring: Ring = RING64,
) -> list[int] | None:
    """Open ``n`` values that ``p0`` and ``p1`` hold as ``shares`` (in ``ring``; None at the
    other parties) to the parties ``to``, re-randomised for those outside the pair (the module
    docstring). Returns the values (signed) to each party of ``to``, None elsewhere."""
    values = await open_values(pair, shares, n, to=to, tag=tag, receipt=receipt, ring=ring)
    return None if values is None else ring.signed(values)


async def open_values(
    pair: Pair,
    shares: np.ndarray | None,
    n: int,
    *,
    to: Sequence[str],
    tag: str,
    receipt: Receipt,
    ring: Ring = RING64,
) -> np.ndarray | None:
    """:func:`open_shares` with the values as ring elements (unsigned), for the callers
    that compute on them."""
    if receipt.name not in OPENINGS:
        raise ConfigError(f"{receipt.name} is not the receipt of an opening (opening())")
    party = pair.party
    targets = list(dict.fromkeys(to))
    if n == 0:
        return ring.zeros(0) if party.name in targets else None
    if pair.active:
        if shares is None or len(shares) != n:
            raise ProtocolError(f"{party.name}: {n} values to open at {tag}, not {shares!r:.40}")
        mine = ring.reduce(np.asarray(shares))
        outside = [r for r in targets if r not in (pair.p0, pair.p1)]
        if outside:
            masked = ring.pack(ring.reduce(mine + pair.zero_share(tag, n, ring)))
            for receiver in outside:
                await party.send(receiver, tag, masked)
        if pair.other in targets:
            await party.send(pair.other, tag, ring.pack(mine))
        if party.name not in targets:
            return None
        theirs = ring.unpack(await party.recv(pair.other, tag, receipt), (n,), pair.other, tag)
        return ring.reduce(mine + theirs)
    if party.name not in targets:
        return None
    got = await party.gather([pair.p0, pair.p1], tag, receipt)
    a, b = (ring.unpack(got[s], (n,), s, tag) for s in (pair.p0, pair.p1))
    return ring.reduce(a + b)
