"""Record alignment: vertically partitioned sites check that they hold the same records and
agree on one order of them, without showing each other their record ids.

Vaidya & Clifton assume that every site holds the same transactions under common transaction
ids, in the same order (Section 3). Real organisations hold files in their own row order,
keyed by a record id they share (a customer number, a national id). Before training, and
again before classifying new records, :func:`align_records` runs among the sites only (never
the dealer):

1. **sizes**: every site tells the others how many records it holds;
2. **order**: every site draws a 32-byte key share from the OS and sends it to the other
   sites; the order key is SHA-256 of the shares in site order, known to the sites only. Each
   site sorts its records by HMAC-SHA256(order key, id): the common order, uniformly random
   to anyone without the key and unrelated to any site's row order. A record's position in
   it is its transaction id ``0 .. n-1``;
3. **equality**: each site hashes its sorted keyed hashes into one digest, and the sites run
   the set-intersection cardinality protocol of :mod:`protocols.primitives.psi_ca` on these
   one-element sets; the first site learns whether all digests are equal and tells the others. Equal
   digests mean equal id sets and the same order everywhere. The digests travel only under
   PSI-CA's fresh keys: a site never sees another's digest, which it could otherwise test
   guesses of the difference against (its own set minus one id, ...);
4. **only when they differ**: the sites run PSI-CA on the hashed ids themselves, so that the
   first site learns the size of the intersection and tells the others, and every site stops
   with the same :class:`RecordMismatch`, which says how many ids each site holds and how many
   all of them hold, never which.

What each site learns (ledger): every site's number of records (``record-alignment/sizes``);
whether the id sets are equal, and the intersection size (``record-alignment/common``: on an
equal run it is ``n``, which every site already knew); as the PSI-CA receiver, the first site
also learns whether every sub-collection of the digests are equal and, on unequal sets, the
intersection sizes of every sub-collection of sites (``psi-ca/counts``, see
:mod:`protocols.primitives.psi_ca`: with three sites, the pairwise overlaps); that an order key was
agreed (``record-alignment/order``; its shares are not put on record). On equal sets nothing
else is learned: every site already holds every id. On unequal sets the run stops before any
data is used, having revealed only the counts; with ``common`` it goes on with the records
every site holds instead (step 4 is then the set intersection of
:mod:`protocols.primitives.set_intersection`, with what it declares: the last site learns
the running sizes, every site which of its records are common).

Cost on equal sets: one HMAC per record, a sort, and PSI-CA on one element per site (``k``
X25519 operations per site), plus 3 small all-to-all messages; a million records take a few
seconds. Unequal sets add PSI-CA on the ids: ``k * sum(n_i)`` X25519 operations in all; with
``common``, the batched OPRFs of the set intersection instead, linear in the records with no
public-key operation but the base OTs (a million ids at each of three sites in about 19 s).

References: J. Vaidya, C. Clifton, *Secure set intersection cardinality with application to
association rule mining*, J. Computer Security 13 (2005) (the equality test, on one-element
sets); H. Krawczyk, M. Bellare, R. Canetti, RFC 2104, *HMAC* (the keyed order).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.curve25519 import ELEMENT_BYTES, hash_to_curve
from mpc.errors import ConfigError, PeerMisbehaved
from mpc.runtime.expect import array, boolean, integer, raw
from mpc.runtime.party import Party
from mpc.runtime.view import declared, uniform
from protocols.primitives.psi_ca import GroupInput, set_intersection_cardinality
from protocols.primitives.set_intersection import intersection_members

__all__ = [
    "COMMON",
    "EQUAL",
    "INTERSECTION",
    "KEY_SHARE",
    "SIZE",
    "Alignment",
    "RecordMismatch",
    "align_records",
    "order_key",
]

#: what a site receives
SIZE = declared("record-alignment/size", "the sender's number of records")
KEY_SHARE = uniform("record-alignment/key-share", "the sender's random share of the order key")
EQUAL = declared("record-alignment/equal", "whether every site holds the same record ids")
COMMON = declared(
    "record-alignment/common", "how many record ids every site holds (sets that differ only)"
)


def _how_many(body: object) -> int:
    """A list of keyed hashes as compared across runs: how many (their key is fresh)."""
    return len(body) if hasattr(body, "__len__") else -1


INTERSECTION = declared(
    "record-alignment/intersection",
    "the keyed hashes of the record ids every site holds, from the last site, sorted",
    canonical=_how_many,
)

#: the domain under which record ids are hashed onto the curve (apart from PPID3's tids)
ID_DOMAIN = b"mpc/record-ids/v1"
#: the domain under which a site's id-set digest is hashed onto the curve
DIGEST_DOMAIN = b"mpc/record-id-set/v1"
_SHARE_BYTES = 32


class RecordMismatch(ConfigError):
    """The sites' record id sets differ; the message gives only counts."""


@dataclass(frozen=True)
class Alignment:
    """One site's result: ``order[t]`` is the row of this site's file holding record ``t`` of
    the common order (so ``rows[order]`` puts the file in the common order); ``n`` records in
    it, of the ``held`` in the site's file (fewer on the intersection)."""

    order: np.ndarray
    n: int
    held: int = -1


def order_key(shares: Sequence[bytes]) -> bytes:
    """The order key from every site's share, in site order."""
    h = hashlib.sha256(b"mpc/record-order/v1")
    for s in shares:
        h.update(len(s).to_bytes(2, "big") + s)
    return h.digest()


def _keyed(key: bytes, ids: Sequence[str]) -> list[bytes]:
    return [hmac.new(key, i.encode(), hashlib.sha256).digest() for i in ids]


def _mismatch(names: Sequence[str], sizes: dict[str, int], common: int) -> RecordMismatch:
    held = ", ".join(f"{n} {sizes[n]}" for n in names)
    odd = ", ".join(f"{n} {sizes[n] - common}" for n in names if sizes[n] != common)
    message = (
        f"the sites do not hold the same records: {common} record ids are held by every site "
        f"(ids held: {held}; held by some sites only: {odd}); every site must list the same "
        "records under the same ids (which ids differ is not revealed)"
    )
    return RecordMismatch(message, public=message)  # counts only, which every site learns


async def align_records(
    party: Party, ids: Sequence[str], *, tag: str = "record-alignment", common: bool = False
) -> Alignment:
    """Check that every party of ``party`` (the sites) holds the same record ids and return
    this site's rows in the common order; raises :class:`RecordMismatch` (at every site) when
    the sets differ, or, with ``common``, goes on with the records every site holds: a private
    set intersection (:mod:`protocols.primitives.set_intersection`, after which the last site
    tells the others the intersection as keyed hashes), each site learning which of its
    records are common and the running sizes that protocol declares. ``ids`` must be distinct
    (checked: a repeat is this site's own error)."""
    names = list(party.parties)
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{party.name}: its record ids repeat; every record needs its own id")
    first = names[0]
    with party.phase(tag):
        await party.broadcast(f"{tag}/size", len(ids))
        sizes = {party.name: len(ids)}
        for sender in party.peers:
            sizes[sender] = await party.recv(sender, f"{tag}/size", SIZE, expect=integer(lo=0))
        sizes = {n: sizes[n] for n in names}
        party.ledger.record(f"{tag}/sizes", sizes, step=f"{tag}/size")

        share = randomness.token_bytes(_SHARE_BYTES, f"order-key/{tag}")
        await party.broadcast(f"{tag}/key-share", share)
        shares = {party.name: share}
        for sender in party.peers:
            shares[sender] = await party.recv(
                sender, f"{tag}/key-share", KEY_SHARE, expect=raw(_SHARE_BYTES)
            )
        keyed = _keyed(order_key([shares[n] for n in names]), ids)
        order = np.asarray(sorted(range(len(ids)), key=keyed.__getitem__), dtype=np.int64)
        digest = hashlib.sha256(b"".join(keyed[i] for i in order)).digest()

        # equal sets <=> equal digests, compared under PSI-CA's fresh keys: no site sees
        # another's digest (which it could test guesses of the difference against)
        point = np.frombuffer(hash_to_curve(digest, DIGEST_DOMAIN), dtype=np.uint8)
        (same,) = await set_intersection_cardinality(
            party,
            [GroupInput(first, [point.reshape(1, ELEMENT_BYTES)], label="id-set digest")],
            tag=f"{tag}/digest",
        )
        equal = await _announce(party, first, None if same is None else int(same.sum()) == 1,
                                f"{tag}/equal")  # fmt: skip
        if equal and len(set(sizes.values())) == 1:
            count = len(ids)
        elif common:  # the records every site holds, and only those, from here on
            inside = await _intersection(party, keyed, sizes, tag)
            order = order[inside[order]]
            count = len(order)
            if count == 0:
                message = "no record id is held by every site: there is nothing to learn from"
                raise RecordMismatch(message, public=message)
        else:  # count the difference for the error message (never which ids differ)
            count = await _common_count(party, ids, first, tag)
        party.ledger.record(f"{tag}/common", count, step=f"{tag}/common")
        if not common and (not equal or any(n != count for n in sizes.values())):
            raise _mismatch(names, sizes, count)
        party.ledger.record(
            f"{tag}/order", "a common order by keyed hashes (key from every site's share)",
            step=f"{tag}/equal",
        )  # fmt: skip
        if party.view is not None:  # the positions of later messages name these records
            party.view.record_ids = [ids[i] for i in order]
    return Alignment(order, len(order), len(ids))


async def _intersection(
    party: Party, keyed: Sequence[bytes], sizes: Mapping[str, int], tag: str
) -> np.ndarray:
    """Which of this site's records every site holds: the last site learns it by
    :func:`~protocols.primitives.set_intersection.intersection_members` (on the first 16
    bytes of the keyed hashes, the same at every site for the same id) and sends every
    other site the keyed hashes of those records, sorted (the order key is the sites'; each
    site holds every one of them)."""
    names = list(party.parties)
    elements = np.frombuffer(b"".join(h[:16] for h in keyed), dtype=np.uint8).reshape(-1, 16)
    members = await intersection_members(party, elements, sizes, tag=f"{tag}/intersection")
    last = names[-1]
    if party.name == last:
        assert members is not None
        common = b"".join(sorted(keyed[int(i)] for i in np.flatnonzero(members)))
        rows = np.frombuffer(common, dtype=np.uint8).reshape(-1, _SHARE_BYTES)
        for peer in party.peers:
            await party.send(peer, f"{tag}/intersection", rows)
        inside = members
    else:
        got = await party.recv(last, f"{tag}/intersection", INTERSECTION,
                               expect=array("u", ndim=2, width=_SHARE_BYTES))  # fmt: skip
        data = np.ascontiguousarray(got, dtype=np.uint8).tobytes()
        common_set = {data[i : i + _SHARE_BYTES] for i in range(0, len(data), _SHARE_BYTES)}
        inside = np.fromiter((h in common_set for h in keyed), dtype=bool, count=len(keyed))
        if int(inside.sum()) != len(common_set):
            raise PeerMisbehaved(
                f"{party.name}: record alignment: {last} named {len(common_set)} records as "
                f"held by every site, of which this site holds {int(inside.sum())}",
                peer=last, step=f"{tag}/intersection",
            )  # fmt: skip
    party.ledger.record(f"{tag}/intersection", {"held": len(keyed), "common": int(inside.sum())},
                        step=f"{tag}/intersection")  # fmt: skip
    return inside


async def _announce(party: Party, first: str, value: bool | None, tag: str) -> bool:
    """The first site's boolean, told to every site."""
    if party.name == first:
        assert value is not None
        await party.broadcast(tag, value)
        return value
    answer: bool = await party.recv(first, tag, EQUAL, expect=boolean())
    return answer


async def _common_count(party: Party, ids: Sequence[str], first: str, tag: str) -> int:
    """The size of the intersection of every site's id set, learned by the first site by
    PSI-CA on the hashed ids and told to the others."""
    hashed = np.frombuffer(
        b"".join(hash_to_curve(i.encode(), ID_DOMAIN) for i in ids), dtype=np.uint8
    ).reshape(-1, ELEMENT_BYTES)
    (counts,) = await set_intersection_cardinality(
        party, [GroupInput(first, [hashed], label="record ids")], tag=f"{tag}/psi-ca"
    )
    if party.name == first:
        assert counts is not None
        common = int(counts.sum())
        await party.broadcast(f"{tag}/common", common)
        return common
    size: int = await party.recv(first, f"{tag}/common", COMMON, expect=integer(0, len(ids)))
    return size
