"""Secure comparison and argmax on additive shares, as a protocol of its own: two parties
``p0`` and ``p1`` holding additive shares of a ``rows x candidates`` table of keys find the
first largest key of every row, and only the winners are opened, to the parties that should
learn them. The building block that lets a learner pick the best split without opening a
count or a score (PPID3's ``--reveal tree``).

The circuits are the engine's (:mod:`protocols.engine.circuits`: the sign of a shared value by
a carry-lookahead over the parties' own bits, a tournament whose ties keep the earlier
candidate, integer keys or fractions ``n/d`` compared by cross products), run in one batch of a
:class:`~protocols.engine.session.Session`, whose triples come from the run's preprocessing
(:mod:`protocols.engine.preprocessing`): a dealer, a third site, or oblivious transfer between
the two. Keys are signed integers of the ring (``|x| < 2^62`` in ``Z_{2^64}``), or fractions
with ``d > 0`` and ``|n d'|`` within the ring.

What each party receives: ``p0`` and ``p1``, the preprocessing's messages (uniform: seeds and
corrections from a dealing party, ``compare/dealt``, or the messages of OT extension), each
other's masked values (``compare/masked``, uniform) and, where a party learns the winners, the
other's share of them through the pair's door (:mod:`protocols.engine.opening`; with its own
share they open the winners, which its ledger records as ``compare/winners``). Every party
records the public shape (``compare/shape``). A dealing party receives the pair's requests
(public shapes) and nothing else.

References: D. Beaver, *Efficient multiparty protocols using circuit randomization*, CRYPTO
1991 (the products); the comparison and argmax circuits of :mod:`protocols.engine.circuits`.
"""

from __future__ import annotations

import numpy as np

from mpc.errors import ProtocolError
from mpc.runtime.party import Party
from protocols.engine.circuits import tournament
from protocols.engine.opening import opening
from protocols.engine.ring import RING64, Ring
from protocols.engine.session import Session, TripleSource

__all__ = ["WINNERS", "secure_argmax", "tournament"]

WINNERS = opening(
    "compare/winner-shares",
    "p0's or p1's share of the winners, re-randomised (to a party that learns them)",
    opens="compare/winners",
)


async def _best(
    s: Session, keys: np.ndarray, denominators: np.ndarray | None, ring: Ring
) -> np.ndarray:
    return await s.argmax(keys, "argmax", denominators=denominators, ring=ring)


async def secure_argmax(
    party: Party, keys: np.ndarray | None, *, shape: tuple[int, int], dealing: TripleSource,
    pair: tuple[str, str], tag: str, denominators: np.ndarray | None = None,
    fractions: bool = False, reveal_to: tuple[str, ...] | None = None, ring: Ring = RING64,
) -> np.ndarray | None:  # fmt: skip
    """The whole argmax for any party of the run: ``pair``'s two parties (holding additive
    shares ``keys``, and ``denominators`` when ``fractions``) find the winner of each of the
    ``shape[0]`` rows of ``shape[1]`` candidates with the triples of ``dealing`` and open it
    to ``reveal_to`` (default: both). Every party records the public shape
    (``compare/shape``), those that learn the winners record them (``compare/winners``).
    Returns the winners (int64) to those, None to the others."""
    rows, count = shape
    party.ledger.record("compare/shape", [rows, count], step=tag)
    s = Session(party, dealing, ring, pair=pair)
    await s.start(f"{tag}/open-key")
    to = reveal_to if reveal_to is not None else pair
    index = None
    if s.active:
        if keys is None or keys.shape != shape or (fractions and denominators is None):
            raise ProtocolError(
                f"{party.name}: its shares of the keys do not have the shape {shape}"
            )
        index = await s.batch(tag, _best, keys, denominators if fractions else None, ring)
    got = await s.open(index, rows, to=to, tag=f"{tag}/winners", receipt=WINNERS, ring=ring)
    if got is None:
        return None
    winners = np.asarray(got, dtype=np.int64)
    party.ledger.record("compare/winners", winners.tolist(), step=tag)
    return winners
