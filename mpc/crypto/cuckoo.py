"""Cuckoo hashing with three hash functions, the placement of a batched oblivious PRF's
receiver (:mod:`protocols.primitives.batched_oprf`): ``n`` distinct 16-byte elements into
``m ≈ 1.27 n`` bins, at most one per bin, each in one of its three candidate bins
``h_0(x), h_1(x), h_2(x)``. Nothing here is secret: the hash functions are AES-128 under a
key hashed from a public seed (:func:`candidate_bins`); the placement (:func:`cuckoo_table`)
is the party's own and never leaves it.

With three hash functions and ``1.27 n`` bins, placement fails with probability below
about ``2^-40`` with no stash (Pinkas, Schneider, Tkachenko & Yanai, EUROCRYPT 2019, by
experiments extrapolated to large tables); :class:`CuckooFailure` says so, and the caller
draws a new seed.

Placement is the random walk of cuckoo hashing, vectorised: in each round every element not
yet placed takes an empty candidate bin if one is left (the first of several contenders), and
the others each evict the occupant of one of their bins, chosen at random, which tries again
in the next round. A million elements take about 150 rounds and 0.3 s. The random choices
come from the OS; they protect nothing (the placement never leaves its party).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.crypto import randomness
from mpc.errors import ConfigError

__all__ = ["HASHES", "LOAD", "CuckooFailure", "bins_for", "candidate_bins", "cuckoo_table"]

#: hash functions per element
HASHES = 3
#: bins per element (``m = 1.27 n``: failure below ``2^-40`` without a stash)
LOAD = 1.27
#: bins come in multiples of this (the OPRF's bit-matrix transposes take multiples of 512)
BIN_MULTIPLE = 512
#: rounds of evictions before placement is declared failed (a million elements take ~150)
_MAX_ROUNDS = 5000
_DOMAIN = b"mpc/cuckoo/v1"
_ELEMENT_BYTES = 16


class CuckooFailure(ConfigError):
    """The elements could not be placed under this seed (probability below ``2^-40``)."""


def bins_for(n: int) -> int:
    """The number of bins for ``n`` elements: ``1.27 n`` rounded up to a multiple of 512."""
    if n < 0:
        raise ConfigError(f"cannot hash {n} elements")
    return max(BIN_MULTIPLE, -(-math.ceil(LOAD * n) // BIN_MULTIPLE) * BIN_MULTIPLE)


def candidate_bins(elements: np.ndarray, seed: bytes, m: int) -> np.ndarray:
    """The three candidate bins of every element: ``(n, 3)`` int64, from the first three
    32-bit words of AES-128 of the element under a key hashed from ``seed`` (``mod m``; the
    bias of ``2^32 mod m`` is below ``m / 2^32``)."""
    rows = np.ascontiguousarray(elements, dtype=np.uint8).reshape(-1, _ELEMENT_BYTES)
    key = hashlib.sha256(_DOMAIN + seed).digest()[:16]
    out = bytearray(rows.nbytes + 15)
    n = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update_into(rows.data, out)
    words = np.frombuffer(out, dtype="<u4", count=n // 4).reshape(-1, 4)[:, :HASHES]
    return (words.astype(np.int64) % m).astype(np.int64)


def cuckoo_table(bins: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Place every element (row ``i`` of ``bins``, its candidate bins) in one of its bins:
    ``(table, slot)``, ``table[b]`` the element in bin ``b`` (``-1`` if empty) and ``slot[i]``
    which of its hash functions placed element ``i``. Raises :class:`CuckooFailure` when
    :data:`_MAX_ROUNDS` rounds leave elements unplaced."""
    n = len(bins)
    if n > m:
        raise CuckooFailure(f"{n} elements do not fit in {m} bins")
    table = np.full(m, -1, dtype=np.int64)
    pending = np.arange(n, dtype=np.int64)
    for _ in range(_MAX_ROUNDS):
        pending = _into_empty_bins(table, bins, pending)
        if not len(pending):
            break
        # every element left evicts the occupant of one of its bins, chosen at random
        choice = np.frombuffer(randomness.token_bytes(len(pending), "cuckoo"), np.uint8) % HASHES
        taken, first = np.unique(bins[pending, choice], return_index=True)
        evicted = table[taken]
        table[taken] = pending[first]
        left = np.ones(len(pending), dtype=bool)
        left[first] = False
        pending = np.concatenate([pending[left], evicted])
    else:
        raise CuckooFailure(f"{len(pending)} of {n} elements could not be placed in {m} bins")
    occupied = np.flatnonzero(table >= 0)
    slot = np.empty(n, dtype=np.int8)
    slot[table[occupied]] = np.argmax(bins[table[occupied]] == occupied[:, None], axis=1)
    return table, slot


def _into_empty_bins(table: np.ndarray, bins: np.ndarray, pending: np.ndarray) -> np.ndarray:
    """One pass over the three hash functions: each element of ``pending`` whose candidate
    bin is empty takes it (the first of several); returns the elements still unplaced."""
    for i in range(HASHES):
        if not len(pending):
            break
        b = bins[pending, i]
        empty = np.flatnonzero(table[b] < 0)
        taken, first = np.unique(b[empty], return_index=True)
        table[taken] = pending[empty[first]]
        placed = np.zeros(len(pending), dtype=bool)
        placed[empty[first]] = True
        pending = pending[~placed]
    return pending
