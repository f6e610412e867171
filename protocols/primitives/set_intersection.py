"""Private set intersection among k >= 2 sites by commutative encryption: each site learns
which of its own elements every site holds, and the sizes below; a site's elements outside
the intersection never leave it except encrypted under a key of its own that no one else
holds.

Every site ``P_j`` draws a fresh X25519 key ``k_j`` for this invocation (the commutative cipher
``E_k(x) = k·x`` of :mod:`protocols.primitives.psi_ca`, on points hashed from the elements).
With ``K_j = k_1 ... k_j`` and ``I_j = S_1 ∩ ... ∩ S_j`` (so ``I_k`` is the intersection), the
*running intersection* ``T_j = E_{K_j}(I_j)``, in an order no one can map, travels down the
chain of sites:

1. ``P_1`` sends ``T_1 = E_{k_1}(S_1)``, shuffled, to ``P_2``;
2. for ``j = 2 .. k``: ``P_j`` sends ``E_{k_j}(S_j)``, in its own order, to ``P_1``; it goes
   ``P_1 -> P_2 -> ... -> P_{j-1} -> P_j``, each site adding its key, and the last of them
   shuffles it unless ``j = k``. ``P_j`` adds ``k_j`` to ``T_{j-1}`` (received from ``P_{j-1}``)
   and compares: the elements of its set under ``K_j`` that are in ``T_{j-1}`` under ``K_j``
   are ``T_j``, which it shuffles and sends to ``P_{j+1}`` (for ``j < k``). At ``j = k`` its set
   came back in its own order, so ``P_k`` learns which of its own elements are in ``I_k``.

What each site receives and learns (semi-honest sites, no two colluding; DDH on Curve25519's
prime-order subgroup):

* every site the sizes of every site's set (they pass by it, as in PSI-CA), declared;
* ``P_j`` (``j >= 2``) the size of ``I_{j-1}`` (the running intersection it receives) and, for
  ``j < k``, of ``I_j``: declared leakage (``intersection/running``), as SecretFlow's
  three-party ECDH PSI shows its first two parties' intersection size to the third;
* ``P_k`` which of its elements are in the intersection (``intersection/members``): the output;
* nothing else: a site sees another's elements only under a key it does not hold (the
  owner's, ``k_j``), and the running intersections only under keys it lacks or in an order
  shuffled by a site it is not; no site holds two sets under the same keys except ``P_j``,
  whose own set came back shuffled (``j < k``), so it counts, and cannot say which.

The caller (:func:`protocols.primitives.record_alignment.align_records`) tells every other
site the intersection, which each then holds in full.

Cost: ``P_i`` encrypts its own set once, every later site's set once (``Σ_{j > i} |S_j|``)
and the running intersection it receives: about ``Σ_j j |S_j|`` X25519 operations in all,
``k + 1`` messages per later site deep.

References: C. Meadows, *A more efficient cryptographic matchmaking protocol for use in the
absence of a continuously available third party*, IEEE S&P 1986; B. A. Huberman, M. Franklin,
T. Hogg, *Enhancing privacy and trust in electronic communities*, ACM EC 1999 (the
Diffie-Hellman PSI); the chain of running intersections follows the three-party ECDH PSI of
SecretFlow's ``psi`` (``ecdh-3pc``), for any number of sites.
"""

from __future__ import annotations

import numpy as np

from mpc.crypto.curve25519 import ELEMENT_BYTES, InvalidPoint, X25519Key
from mpc.errors import PeerMisbehaved, ProtocolError
from mpc.runtime.expect import array
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.primitives.psi_ca import shuffled

__all__ = ["BACK", "HOP", "POINTS", "RUNNING", "intersection_members"]

#: what a site receives
HOP = uniform(
    "intersection/hop",
    "a later site's set on its way round, under that site's key and the earlier sites' keys",
    elements=True,
)
BACK = uniform(
    "intersection/back",
    "this site's set under every earlier site's key (shuffled unless this site is the last)",
    elements=True,
)
RUNNING = uniform(
    "intersection/running",
    "the elements every earlier site holds, under their keys, shuffled (its size declared)",
    opens="intersection/running",
    elements=True,
)


#: a set of points: ``(m, 32)`` bytes
POINTS = array("u", ndim=2, width=ELEMENT_BYTES)


def _points(got: np.ndarray, sender: str, step: str) -> np.ndarray:
    if got.dtype != np.uint8 and len(got):
        raise ProtocolError(f"set intersection: {sender} sent, at {step}, {got.dtype} points")
    return np.ascontiguousarray(got, dtype=np.uint8).reshape(-1, ELEMENT_BYTES)


def _encrypt(party: Party, key: X25519Key, rows: np.ndarray, sender: str, step: str) -> np.ndarray:
    party.metrics.count("x25519", len(rows))
    if not len(rows):
        return rows
    try:
        return key.encrypt_many(rows)
    except InvalidPoint as exc:  # no honest site sends one
        raise PeerMisbehaved(
            f"{party.name}: set intersection: {sender} sent, at {step}, a set whose {exc}",
            peer=sender,
            step=step,
        ) from None


def _as_keys(rows: np.ndarray) -> np.ndarray:
    """Each 32-byte row as one comparable value."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8).reshape(-1, ELEMENT_BYTES)
    return rows.view(np.dtype((np.void, ELEMENT_BYTES))).reshape(-1)


async def intersection_members(
    party: Party, points: np.ndarray, *, tag: str = "intersection"
) -> np.ndarray | None:
    """The chain of running intersections (the module docstring) among ``party.parties``, in
    that order, each site bringing its elements hashed onto the curve (``points``, ``(n, 32)``
    uint8, distinct). Returns, at the last site, which of its rows every site holds (a boolean
    mask); None at every other site. A site's ledger gets the running sizes it saw; the last
    site's, the number of its members."""
    names = list(party.parties)
    k, me = len(names), names.index(party.name)
    if k < 2:
        raise ProtocolError("a set intersection needs at least two sites")
    key = X25519Key.generate(f"{tag}/key")
    mine = np.ascontiguousarray(points, dtype=np.uint8).reshape(-1, ELEMENT_BYTES)
    running: dict[str, int] = {}
    members: np.ndarray | None = None
    with party.phase(tag):
        own = _encrypt(party, key, mine, party.name, tag)
        if me == 0:
            await party.send(names[1], f"{tag}/running1", shuffled(own, f"{tag}/shuffle"))
        else:  # this site's set starts its way round at the first site
            await party.send(names[0], f"{tag}/set{me}/hop0", own)
        # the set of every later site passes through this one, in turn
        for j in range(me + 1, k):
            prev = names[j] if me == 0 else names[me - 1]
            step = f"{tag}/set{j}/hop{me}"
            got = _points(await party.recv(prev, step, HOP, expect=POINTS), prev, step)
            out = _encrypt(party, key, got, prev, step)
            if me == j - 1:  # the last on its way: back to its owner, shuffled unless last
                out = out if j == k - 1 else shuffled(out, f"{tag}/shuffle")
                await party.send(names[j], f"{tag}/set{j}/back", out)
            else:
                await party.send(names[me + 1], f"{tag}/set{j}/hop{me + 1}", out)
        if me >= 1:
            prev = names[me - 1]
            step = f"{tag}/set{me}/back"
            full = _points(await party.recv(prev, step, BACK, expect=POINTS), prev, step)
            if len(full) != len(mine):
                raise PeerMisbehaved(
                    f"{party.name}: set intersection: {prev} sent back {len(full)} elements "
                    f"of this site's {len(mine)}", peer=prev, step=step,
                )  # fmt: skip
            step = f"{tag}/running{me}"
            before = _points(await party.recv(prev, step, RUNNING, expect=POINTS), prev, step)
            running[f"{me}"] = len(before)
            theirs = _encrypt(party, key, before, prev, step)
            inside = np.isin(_as_keys(full), _as_keys(theirs))
            if me < k - 1:
                t = shuffled(full[inside], f"{tag}/shuffle")
                running[f"{me + 1}"] = len(t)
                await party.send(names[me + 1], f"{tag}/running{me + 1}", t)
            else:
                members = inside
    if running:  # the sizes of I_j = S_1 ∩ ... ∩ S_j this site saw, by j (1-based)
        party.ledger.record("intersection/running", running, step=f"{tag}/running{me}")
    if members is not None:
        party.ledger.record("intersection/members", int(members.sum()), step=tag)
    return members
