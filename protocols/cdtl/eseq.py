"""ESEQ, the encrypted join key of anatomization: ``ESEQ = E_k(salt, s)`` (Mancuhan & Clifton,
Definition 4), sealed and opened by the client only.

Each tuple's ESEQ is a :func:`~mpc.crypto.sealed.seal` under the client's key of
``salt || s || r``: a 16-byte random salt (from the OS), the tuple's sequence number ``s`` in
``ST`` and its original row ``r`` (so that the client's join restores the original order),
with associated data naming the table and the tuple's group ``GID``: an ESEQ moved to another
table or group fails authentication. Every ESEQ has :data:`ESEQ_BYTES` bytes, so its length
tells the CDBS nothing.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence

import numpy as np

from mpc.crypto.sealed import (
    OVERHEAD,
    ClientKey,
    associated_data,
    extend_associated_data_each,
    open_rows,
    seal,
)

__all__ = ["ESEQ_BYTES", "SALT_BYTES", "eseq_aads", "open_eseq_blobs", "seal_eseq"]

#: The random salt of ``E_k(salt, s)`` (Definition 4); AES-GCM's random nonce already makes
#: equal sequence numbers encrypt differently, the salt keeps the paper's form.
SALT_BYTES = 16
_ESEQ_FIELDS = struct.Struct(">QQ")  # s, r
_ESEQ_PLAINTEXT = SALT_BYTES + _ESEQ_FIELDS.size
#: Length of every ESEQ blob: the sealed ``salt || s || r``.
ESEQ_BYTES = OVERHEAD + _ESEQ_PLAINTEXT


def eseq_aads(table_name: str, gids: Sequence[int]) -> dict[int, bytes]:
    """The associated data of an ESEQ of table ``table_name`` in each group of ``gids``:
    ``associated_data("anatomization/ESEQ", table_name, gid)``, the common prefix encoded
    once, and remembered for the table's most recent groups (a client opens the ESEQs of one
    table leaf by leaf)."""
    known = _ESEQ_AADS.get(table_name)
    if known is None:
        if len(_ESEQ_AADS) >= _ESEQ_AAD_TABLES:
            _ESEQ_AADS.pop(next(iter(_ESEQ_AADS)))
        known = _ESEQ_AADS[table_name] = {}
    distinct = set(gids)
    new = list(distinct.difference(known))
    if new:
        if len(known) + len(new) > _ESEQ_AAD_GROUPS:
            known.clear()
            new = list(distinct)
        prefix = associated_data("anatomization/ESEQ", table_name)
        known.update(zip(new, extend_associated_data_each(prefix, new), strict=True))
    return known


#: table name -> group -> ESEQ associated data, for the last few tables (bounded memory)
_ESEQ_AADS: dict[str, dict[int, bytes]] = {}
_ESEQ_AAD_TABLES = 8
_ESEQ_AAD_GROUPS = 1 << 20


def seal_eseq(
    key: ClientKey, table_name: str, gid: np.ndarray, seq: np.ndarray, order: np.ndarray
) -> np.ndarray:
    """The ESEQs of the tuples ``order`` (original rows, in IT's order): row ``i`` seals
    ``salt || seq[r] || r`` for ``r = order[i]`` under the associated data of its group
    ``gid[r]``. A ``(len(order), ESEQ_BYTES)`` uint8 array."""
    eseq = np.empty((len(order), ESEQ_BYTES), dtype=np.uint8)
    aads = eseq_aads(table_name, gid.tolist())
    for i, r in enumerate(order.tolist()):
        plaintext = os.urandom(SALT_BYTES) + _ESEQ_FIELDS.pack(int(seq[r]), r)
        eseq[i] = np.frombuffer(seal(key, plaintext, aads[int(gid[r])]), dtype=np.uint8)
    return eseq


def open_eseq_blobs(
    eseq: np.ndarray, gid: np.ndarray, table_name: str, key: ClientKey
) -> tuple[np.ndarray, np.ndarray]:
    """The sequence numbers ``s`` and original rows ``r`` sealed in the rows of ``eseq``
    (each of :data:`ESEQ_BYTES` bytes; ``gid`` their groups). Any ESEQ that does not open
    under ``key`` with its table's and group's associated data raises the sealing layer's
    one opaque error."""
    gids = gid.tolist()
    aads = eseq_aads(table_name, gids)
    # every ESEQ has ESEQ_BYTES (checked when IT was built): so every plaintext has
    # _ESEQ_PLAINTEXT bytes, salt || s || r with s and r big-endian 64-bit
    joined = b"".join(open_rows(key, eseq, list(map(aads.__getitem__, gids))))
    fields = np.frombuffer(joined, dtype=">u8").reshape(-1, _ESEQ_PLAINTEXT // 8)
    s_r = fields[:, SALT_BYTES // 8 :].astype(np.int64)
    return s_r[:, 0].copy(), s_r[:, 1].copy()
