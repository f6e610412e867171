"""Secure sum among k parties (the ring protocol cited by Vaidya & Clifton as [17, 10]).

Roles: k >= 2 parties ``P_1 .. P_k`` in a ring that starts at the *receiver*.

* Input: each party ``P_i`` holds an integer ``x_i``; all agree on the modulus ``m``.
* The receiver draws ``r`` uniformly from ``0 .. m-1`` and sends ``x_1 + r mod m`` to the
  next party; each party adds its ``x_i mod m`` and passes the value on; the last party
  returns the total to the receiver, who subtracts ``r``.
* Output: ``sum(x_i) mod m`` to the receiver, or to every party with ``reveal="all"``.

Leakage: every value a non-receiver sees is ``r + (partial sum) mod m`` with ``r`` uniform and
unknown to it, hence uniform whatever the inputs (tested statistically). The receiver learns
the sum; with ``reveal="all"`` so does everyone. The ledger records exactly that:
``secure-sum/result`` for each party that learns it. Security assumes no collusion between
the two ring neighbours of a party (semi-honest, non-colluding, as in the paper).

References: B. Schneier, *Applied Cryptography*, 2nd ed., Wiley 1995, and M. Kantarcioglu, C.
Clifton, *Privacy-preserving distributed mining of association rules on horizontally
partitioned data*, IEEE TKDE 16 (2004): Vaidya & Clifton's [17, 10].
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from mpc.crypto import randomness
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.party import Party
from mpc.runtime.view import declared, uniform

__all__ = ["RESULT", "RING", "secure_sum"]

#: what a party receives (the ring's modulus is set per call)
RING = uniform(
    "secure-sum/ring",
    "the running sum plus the receiver's uniform r, mod m (the receiver: the total plus r, "
    "which its r opens)",
    opens="secure-sum/result",
)
RESULT = declared("secure-sum/result", "the sum, announced by the receiver (reveal='all')")


async def secure_sum(
    party: Party,
    x: int,
    *,
    modulus: int,
    parties: Sequence[str] | None = None,
    receiver: str | None = None,
    reveal: str = "all",
    tag: str = "secure-sum",
    rng: random.Random | None = None,
) -> int | None:
    """Run the ring secure sum; return the sum to whoever may learn it, else ``None``.

    ``parties`` defaults to the whole deployment; ``receiver`` to its first party;
    ``reveal`` is ``"receiver"`` or ``"all"``.
    """
    ring = list(parties) if parties is not None else list(party.parties)
    if len(ring) < 2:
        raise ConfigError(f"secure sum needs at least 2 parties, got {ring}")
    if modulus < 2:
        raise ConfigError(f"secure sum modulus must be >= 2, got {modulus}")
    if reveal not in ("receiver", "all"):
        raise ConfigError(f"reveal must be 'receiver' or 'all', got {reveal!r}")
    receiver = receiver or ring[0]
    if receiver not in ring or party.name not in ring:
        raise ConfigError(f"receiver {receiver!r} and {party.name!r} must be in the ring {ring}")
    start = ring.index(receiver)
    ring = ring[start:] + ring[:start]
    me = ring.index(party.name)
    succ = ring[(me + 1) % len(ring)]
    pred = ring[me - 1]
    m = modulus
    ring_receipt = dataclasses.replace(RING, modulus=m)

    with party.phase(tag):
        if me == 0:
            r = (rng or randomness.SecureRandom(f"{tag}/r")).randrange(m)
            await party.send(succ, f"{tag}/ring", (x + r) % m)
            total = await party.recv(pred, f"{tag}/ring", ring_receipt)
            _check_residue(total, m, pred)
            result: int | None = (total - r) % m
            party.ledger.record("secure-sum/result", result, step=tag)
            if reveal == "all":
                await party.broadcast(f"{tag}/result", result, ring[1:])
            return result
        partial = await party.recv(pred, f"{tag}/ring", ring_receipt)  # uniform mod m
        _check_residue(partial, m, pred)
        await party.send(succ, f"{tag}/ring", (partial + x) % m)
        if reveal != "all":
            return None
        result = await party.recv(receiver, f"{tag}/result", RESULT)
        _check_residue(result, m, receiver)
        party.ledger.record("secure-sum/result", result, step=tag)
        return result


def _check_residue(value: object, m: int, sender: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < m:
        raise ProtocolError(f"secure sum: {sender} sent {value!r}; expected an int in [0, {m})")
