"""Private set intersection among k >= 2 sites by batched oblivious PRFs: the last site learns
which of its own elements every site holds, and the running sizes below; no other site
learns anything but the sizes of the sets; a site's elements never leave it except as tags
under a PRF key that site ``P_k`` never holds or, for the common elements, as the output.

Sites ``P_1 .. P_k`` in ``party.parties`` order; ``I_j = S_1 ∩ ... ∩ S_j`` (``I_k`` the
intersection). Each ``P_j`` (``j < k``) holds a fresh OPRF key ``K_j``
(:mod:`protocols.primitives.batched_oprf`) with which the next site obtains tags of its own
elements: ``F_{K_j}(x)`` for every ``x`` of ``S_{j+1}``, ``P_j`` learning nothing. The last site
``P_k`` is the one that compares, by a chain:

1. ``P_1`` sends ``P_k`` the tags ``F_{K_1}(S_1)`` (three per element, one per candidate
   bin), in a random order of its own;
2. for ``j = 2 .. k-1``: ``P_j`` sends ``P_k`` its own tags ``F_{K_{j-1}}(S_j)``, in a random
   order ``π_j`` of its own; ``P_k`` finds which of them are among the tags of ``I_{j-1}`` it
   holds (under ``K_{j-1}``), the bits ``b_j[p] = [π_j(p) ∈ I_j]``; then, by an OT per element
   (:mod:`protocols.ot.iknp`) in which ``P_k`` chooses ``b_j[p]``, ``P_j`` gives ``P_k`` the tags
   ``F_{K_j}(π_j(p))`` of its elements in the same order, each masked by the pad of the OT's
   message 1: ``P_k`` unmasks exactly the tags of ``I_j`` under ``K_j``;
3. ``P_k`` compares its own tags ``F_{K_{k-1}}(S_k)`` with the tags of ``I_{k-1}``: which of its
   elements every site holds.

What each site receives and learns (semi-honest sites, no two colluding; the OPRF's and the
OT's assumptions):

* ``P_1 .. P_{k-1}``: the base-OT messages and the matrices of the OPRF and OT extensions, all
  masked by keys they lack (uniform whatever the sets): nothing but the sizes, which the
  caller has every site announce;
* ``P_k``: tags under keys ``K_1 .. K_{k-2}`` it never holds, in orders it cannot map, which
  show it only which tags match: the sizes ``|I_j|``, ``j = 2 .. k-1`` (declared,
  ``intersection/running``, as SecretFlow's three-party ECDH PSI shows its first two parties'
  intersection size to the third); under ``K_{k-1}``, whose tags it has for its own elements,
  the tags of ``I_{k-1}`` only: which of its elements are in ``I_k`` (``intersection/members``,
  the output), and ``|I_{k-1}|``. The OT masks hide the tags of the elements outside ``I_j``.

The caller (:func:`protocols.primitives.record_alignment.align_records`) tells every other
site the intersection, which each then holds in full.

Cost: ``k - 1`` OPRFs (one per site but the first, of its set's size), ``k - 2`` OT batches of
``|S_j|`` OTs, and three SHA-256 tags per element at each site but the last: linear in the sets,
with no public-key operation but the base OTs (512 per OPRF between neighbours, 128 per
middle site's OTs with the last site).

References: V. Kolesnikov, R. Kumaresan, M. Rosulek, N. Trieu, *Efficient batched oblivious
PRF with applications to private set intersection*, CCS 2016 (the two-site protocol, which
the chain extends to ``k`` sites by the running intersection the last site holds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import numpy as np

from mpc.crypto.cuckoo import HASHES
from mpc.errors import ProtocolError
from mpc.runtime.party import Party
from mpc.runtime.view import Receipt, uniform
from protocols.ot.checks import check_array
from protocols.ot.iknp import (
    CHUNK_OTS,
    extend_as_receiver,
    extend_as_sender,
    extension_receiver,
    extension_sender,
    split_batches,
)
from protocols.primitives.batched_oprf import (
    ELEMENT_BYTES,
    TAG_BYTES,
    oprf_receive,
    oprf_send,
)
from protocols.primitives.psi_ca import os_permutation

__all__ = ["FIRST_TAGS", "MASKED_TAGS", "SITE_TAGS", "intersection_members"]

#: what the last site receives
FIRST_TAGS = uniform(
    "intersection/first-tags",
    "the first site's tags of its elements under its OPRF key, in an order of its own",
    elements=True,
)
FIRST_TAGS_OPENED = uniform(
    "intersection/first-tags-opened",
    "the first site's tags of its elements under the key this site has its own tags under",
    opens="intersection/members",
    elements=True,
)
SITE_TAGS = uniform(
    "intersection/site-tags",
    "a middle site's tags of its elements under the previous site's OPRF key, in an order of "
    "its own",
    elements=True,
)
MASKED_TAGS = uniform(
    "intersection/masked-tags",
    "a middle site's tags under its own OPRF key, each masked by an OT pad this site holds "
    "for the elements of the running intersection only",
)
MASKED_TAGS_OPENED = uniform(
    "intersection/masked-tags-opened",
    "the last middle site's tags under the key this site has its own tags under, masked by "
    "OT pads this site holds for the running intersection",
    opens="intersection/members",
)

#: tag rows per message (16 MiB)
ROWS_PER_MESSAGE = 2**20


def _matches(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Which rows of ``mine`` (``(n, 16)`` uint8) are among the rows of ``theirs``: their
    first 8 bytes compared as integers, candidates confirmed on all 16."""
    a = np.ascontiguousarray(mine).view("<u8").reshape(-1, 2)
    b = np.ascontiguousarray(theirs).view("<u8").reshape(-1, 2)
    hit = np.isin(a[:, 0], b[:, 0])
    if hit.any():
        near = b[np.isin(b[:, 0], a[hit, 0])]
        full = {(int(x), int(y)) for x, y in near}
        hit[hit] = [(int(x), int(y)) in full for x, y in a[hit]]
    return hit


async def _send_rows(party: Party, peer: str, step: str, rows: np.ndarray) -> None:
    for c, start in enumerate(range(0, len(rows), ROWS_PER_MESSAGE)):
        await party.send(peer, f"{step}/{c}", rows[start : start + ROWS_PER_MESSAGE])


async def _recv_rows(party: Party, peer: str, step: str, n: int, receipt: Receipt) -> np.ndarray:
    parts = [np.empty((0, TAG_BYTES), dtype=np.uint8)]
    for c, start in enumerate(range(0, n, ROWS_PER_MESSAGE)):
        got = await party.recv(peer, f"{step}/{c}", receipt)
        size = min(ROWS_PER_MESSAGE, n - start)
        parts.append(check_array(got, np.uint8, (size, TAG_BYTES), peer, "tags", f"{step}/{c}"))
    return np.concatenate(parts)


async def _masked_tags_send(party: Party, peer: str, tags: np.ndarray, *, tag: str) -> None:
    """Every element's tags, masked by the pad of OT message 1 (the receiver chooses)."""
    session = await extension_sender(party, peer, tag=tag)
    flat = tags.reshape(len(tags), HASHES * TAG_BYTES)
    sizes = split_batches(len(flat), CHUNK_OTS)

    def answer(c: int, _h0: object, h1: np.ndarray) -> np.ndarray:
        start = c * CHUNK_OTS
        return flat[start : start + sizes[c]] ^ h1

    await extend_as_sender(party, session, sizes, answer, blocks=HASHES, ones_only=True)


async def _masked_tags_receive(
    party: Party, peer: str, choose: np.ndarray, receipt: Receipt, *, tag: str
) -> np.ndarray:
    """The tags of the elements ``choose`` marks, unmasked: ``(3 sum(choose), 16)``."""
    session = await extension_receiver(party, peer, tag=tag)
    sizes = split_batches(len(choose), CHUNK_OTS)
    width = HASHES * TAG_BYTES
    got: list[np.ndarray] = [np.empty((0, width), dtype=np.uint8)]

    def settle(c: int, bits: np.ndarray, h: np.ndarray, reply: object, step: str) -> None:
        z = check_array(reply, np.uint8, (sizes[c], width), peer, "masked tags", step)
        keep = bits.astype(bool)
        got.append(z[keep] ^ h[keep])

    await extend_as_receiver(
        party, session, sizes, lambda c: choose[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]],
        settle, blocks=HASHES, reply=receipt,
    )  # fmt: skip
    return np.concatenate(got).reshape(-1, TAG_BYTES)


async def intersection_members(
    party: Party, elements: np.ndarray, sizes: Mapping[str, int], *, tag: str = "intersection"
) -> np.ndarray | None:
    """The chain of the module docstring among ``party.parties``, in that order, each site
    bringing its elements (``(n, 16)`` uint8, distinct: keyed hashes of its record ids) and
    every site's set size (``sizes``, announced before). Returns, at the last site, which of
    its rows every site holds (a boolean mask); None at every other site. The last site's
    ledger gets the running sizes and the number of its members."""
    names = list(party.parties)
    k, me = len(names), names.index(party.name)
    if k < 2:
        raise ProtocolError("a set intersection needs at least two sites")
    mine = np.ascontiguousarray(elements, dtype=np.uint8).reshape(-1, ELEMENT_BYTES)
    last = names[-1]
    with party.phase(tag):
        if me == 0:
            key = await oprf_send(party, names[1], sizes[names[1]], tag=f"{tag}/oprf1")
            tags = key.tags(mine)[os_permutation(len(mine), f"{tag}/order")]
            party.metrics.count("sha256", HASHES * len(mine))
            await _send_rows(party, last, f"{tag}/first", tags.reshape(-1, TAG_BYTES))
            return None
        if me < k - 1:
            order = os_permutation(len(mine), f"{tag}/order")
            mine = mine[order]
            own, key = await asyncio.gather(
                oprf_receive(party, names[me - 1], mine, tag=f"{tag}/oprf{me}"),
                oprf_send(party, names[me + 1], sizes[names[me + 1]], tag=f"{tag}/oprf{me + 1}"),
            )
            await _send_rows(party, last, f"{tag}/site{me + 1}", own)
            party.metrics.count("sha256", HASHES * len(mine))
            await _masked_tags_send(party, last, key.tags(mine), tag=f"{tag}/ot{me + 1}")
            return None
        return await _compare(party, mine, sizes, tag)


async def _compare(
    party: Party, mine: np.ndarray, sizes: Mapping[str, int], tag: str
) -> np.ndarray:
    """The last site's part: its own tags, then the running intersection along the chain."""
    names = list(party.parties)
    k = len(names)
    own = await oprf_receive(party, names[-2], mine, tag=f"{tag}/oprf{k - 1}")
    first = FIRST_TAGS_OPENED if k == 2 else FIRST_TAGS
    running_tags = await _recv_rows(party, names[0], f"{tag}/first", HASHES * sizes[names[0]],
                                    first)  # fmt: skip
    running: dict[str, int] = {}
    for j in range(2, k):
        site = names[j - 1]
        theirs = await _recv_rows(party, site, f"{tag}/site{j}", sizes[site], SITE_TAGS)
        inside = _matches(theirs, running_tags)
        running[str(j)] = int(inside.sum())
        receipt = MASKED_TAGS_OPENED if j == k - 1 else MASKED_TAGS
        running_tags = await _masked_tags_receive(party, site, inside, receipt,
                                                  tag=f"{tag}/ot{j}")  # fmt: skip
    members = _matches(own, running_tags)
    if running:  # the sizes of I_j = S_1 ∩ ... ∩ S_j, by j (1-based)
        party.ledger.record("intersection/running", running, step=f"{tag}/site{k - 1}")
    party.ledger.record("intersection/members", int(members.sum()), step=tag)
    return members
