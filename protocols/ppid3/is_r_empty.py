"""IsREmpty — Vaidya & Clifton, *Privacy-Preserving Decision Trees over Vertically
Partitioned Data*, Algorithm 2 ("Are any attributes left?").

Roles: k >= 2 sites ``P_1 .. P_k`` in deployment order; ``P_1`` is the calling site and
``P_k`` the last.

* Input: each site's flag ``AR_i`` (1 if it has attributes remaining, else 0); the domain
  size ``m > k`` of the secure sum.
* Steps (numbers are the algorithm's lines):
  1-2. ``P_1`` draws ``r`` uniformly from ``0 .. m-1`` and sends ``r + AR_1 mod m`` to ``P_2``;
  3-8. each ``P_i`` adds ``AR_i``; ``P_k`` ends with ``r'``;
  9-11. ``P_1`` and ``P_k`` draw fresh commutative keys ``E_1``, ``E_k``; ``P_1`` sends
  ``E_1(r)``; ``P_k`` answers with ``E_k(E_1(r))`` and ``E_k(r')``;
  12. ``P_1`` compares ``E_1(E_k(r'))`` with ``E_k(E_1(r))``: equal iff ``r' = r`` iff no
  attribute remains. ``P_1`` then announces the answer (the tree structure that PPID3 builds
  is known to every site, so every site needs it).
* Output: ``True`` iff ``sum(AR_i) == 0``, to every site.

Leakage (Lemma 1): nothing but the answer. Sites ``P_2 .. P_k`` see ``r + partial sum mod m``,
uniform; ``P_k`` sees ``E_1(r)``, and ``P_1`` sees ``E_k(r')`` and ``E_k(E_1(r))``, which under
DDH reveal only whether ``r = r'``. Every site's ledger holds ``is-r-empty/result``.
"""

from __future__ import annotations

import dataclasses
import random

from mpc.crypto import randomness
from mpc.crypto.commutative import MODP_2048, CommutativeKey, SafePrimeGroup
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.expect import boolean, integer
from mpc.runtime.party import Party
from mpc.runtime.view import declared, uniform

__all__ = ["DEFAULT_DOMAIN", "E1_R", "EK", "RESULT", "SUM", "is_r_empty"]

#: what a site receives (the sum's modulus is set per call)
SUM = uniform("is-r-empty/sum", "r plus the flags of the sites before, mod m (r uniform)")
E1_R = uniform("is-r-empty/E1(r)", "P1's commutative encryption of r (P_k)")
EK = uniform(
    "is-r-empty/Ek",
    "E_k(E_1(r)) and E_k(r') (P1): equal after P1's own encryption iff no attribute is left",
    opens="is-r-empty/result",
)
RESULT = declared("is-r-empty/result", "the answer, as the tree's structure shows it")

#: Domain size m of the sum; any m > k is correct, a large one costs nothing.
DEFAULT_DOMAIN = 2**32


async def is_r_empty(
    party: Party,
    AR: int,
    *,
    m: int = DEFAULT_DOMAIN,
    tag: str = "is-r-empty",
    group: SafePrimeGroup = MODP_2048,
    rng: random.Random | None = None,
) -> bool:
    """Algorithm 2 from the point of view of ``party``; returns whether R is empty."""
    sites = party.parties
    k = len(sites)
    if AR not in (0, 1):
        raise ConfigError(f"IsREmpty: flag AR must be 0 or 1, got {AR!r}")
    if not k < m < group.q - 2:
        raise ConfigError(f"IsREmpty: domain size m must satisfy k={k} < m < q-2, got m={m}")
    rng = rng or randomness.SecureRandom(f"{tag}/r")
    i = sites.index(party.name)
    P1, Pk = sites[0], sites[-1]
    sum_receipt = dataclasses.replace(SUM, modulus=m)

    with party.phase(tag):
        if i == 0:
            r = rng.randrange(m)  # line 1
            await party.send(sites[1], f"{tag}/sum", (r + AR) % m)  # line 2
            E1 = CommutativeKey.generate(group, rng=rng)  # line 9
            await party.send(Pk, f"{tag}/E1(r)", E1.encrypt(group.encode(r)))  # line 10
            party.metrics.count("modexp", 1)
            reply = await party.recv(Pk, f"{tag}/Ek", EK)  # line 11
            Ek_E1_r, Ek_r_prime = _two_elements(reply, group, Pk)
            empty = E1.encrypt(Ek_r_prime) == Ek_E1_r  # line 12
            party.metrics.count("modexp", 1)
            party.ledger.record("is-r-empty/result", empty, step=tag)
            await party.broadcast(f"{tag}/result", empty)
            return bool(empty)

        r_prime = await party.recv(  # lines 4 / 7
            sites[i - 1], f"{tag}/sum", sum_receipt, expect=integer(0, m - 1)
        )
        r_prime = (r_prime + AR) % m  # lines 5 / 8
        if i < k - 1:
            await party.send(sites[i + 1], f"{tag}/sum", r_prime)
        else:
            Ek = CommutativeKey.generate(group, rng=rng)  # line 9
            E1_r = await party.recv(P1, f"{tag}/E1(r)", E1_R)
            if not group.is_element(E1_r):
                raise ProtocolError(f"IsREmpty: {P1} sent a value outside the group")
            await party.send(P1, f"{tag}/Ek", [Ek.encrypt(E1_r), Ek.encrypt(group.encode(r_prime))])
            party.metrics.count("modexp", 2)
        empty = await party.recv(P1, f"{tag}/result", RESULT, expect=boolean())
        party.ledger.record("is-r-empty/result", empty, step=tag)
        return empty


def _two_elements(reply: object, group: SafePrimeGroup, sender: str) -> tuple[object, object]:
    if not (
        isinstance(reply, list) and len(reply) == 2 and all(group.is_element(y) for y in reply)
    ):
        raise ProtocolError(f"IsREmpty: {sender} must send two group elements")
    return reply[0], reply[1]
