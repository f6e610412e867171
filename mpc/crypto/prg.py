"""The symmetric primitives of oblivious-transfer extension (:mod:`protocols.ot`), with no
network: the PRG ``G`` (AES-128 in counter mode, one key per seed: :class:`Prg`,
:func:`prg_rows`), the tweakable correlation-robust hash ``H`` of Guo, Katz, Wang & Yu
(IEEE S&P 2020; :class:`CorrelationRobustHash`) and the bit-matrix transpose of IKNP
(:func:`transpose_bits`). ``κ = 128`` (:data:`KAPPA`) matches the ~128-bit security of
Curve25519. :class:`SeedStream` expands a 32-byte seed into uniform words and bits, drawn in
order (how correlated randomness travels as seeds). Keys and seeds come from the caller
(:mod:`mpc.crypto.randomness`); nothing here draws randomness.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.errors import ConfigError

__all__ = [
    "BLOCK",
    "KAPPA",
    "CorrelationRobustHash",
    "Prg",
    "SeedStream",
    "prg_rows",
    "transpose_bits",
]

#: κ, the computational security parameter: 128 base OTs, 128-bit seeds and AES-128, matching
#: the ~128-bit security of Curve25519.
KAPPA = 128
#: Bytes of a seed, a hash output and a random-OT message (κ bits).
BLOCK = KAPPA // 8
_DOMAIN_REKEY = b"mpc/ot/iknp/v1/rekeyed"


class Prg:
    """``G``: each 16-byte seed of ``seeds`` expanded by AES-128 in counter mode, the counter
    block of batch ``use`` and block ``i`` being ``use`` and ``i`` as two big-endian 64-bit
    words (the keystream of AES-128-CTR with the nonce ``use || 0``). One ECB context per seed,
    made once and reused for every batch: a batch costs the AES blocks alone. A seed is never
    expanded twice under the same ``use`` (the session's batch numbers). ``repr`` shows no
    seed."""

    __slots__ = ("_ciphers",)

    def __init__(self, seeds: np.ndarray) -> None:
        self._ciphers = [Cipher(algorithms.AES(seed.tobytes()), modes.ECB()).encryptor()
                         for seed in seeds]  # fmt: skip

    def __repr__(self) -> str:
        return f"Prg(seeds={len(self._ciphers)})"

    def rows(self, use: int, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of every seed's stream for batch ``use``: ``(r, nbytes)``."""
        n_blocks = -(-nbytes // BLOCK)
        counters = np.empty((n_blocks, 2), dtype=">u8")
        counters[:, 0] = use
        counters[:, 1] = np.arange(n_blocks, dtype=np.uint64)
        data = counters.tobytes()
        width = n_blocks * BLOCK
        # rows written in order into one buffer; each write may use the room of the next row,
        # which update_into asks for (a block more) but never touches beyond its input's size
        flat = bytearray(len(self._ciphers) * width + BLOCK - 1)
        view = memoryview(flat)
        for i, cipher in enumerate(self._ciphers):
            cipher.update_into(data, view[i * width : (i + 1) * width + BLOCK - 1])
        out = np.frombuffer(flat, dtype=np.uint8, count=len(self._ciphers) * width)
        out = out.reshape(-1, width)
        return out if nbytes == width else np.ascontiguousarray(out[:, :nbytes])


def prg_rows(seeds: np.ndarray, use: int, nbytes: int) -> np.ndarray:
    """``G`` once (:class:`Prg`): each 16-byte seed expanded to ``nbytes``, an ``(r, nbytes)``
    array, equal to AES-128-CTR under the seed with the initial counter block ``use || 0``."""
    return Prg(seeds).rows(use, nbytes)


class CorrelationRobustHash:
    """``H(j, x) = π(y) ⊕ y`` with ``y = π(x) ⊕ j`` on 16-byte rows, ``π`` AES-128 under a
    public key fixed for the session: the tweakable correlation robust hash ``π(π(x) ⊕ j) ⊕
    π(x)`` of Guo, Katz, Wang & Yu 2020 (``π`` modelled as a random permutation), xor-ed with
    the public tweak ``j``, which changes nothing of its security and saves a pass over the
    output. The tweak of row ``j`` of batch ``use`` is ``(j, use)`` as two little-endian
    64-bit words: distinct for every OT of a session."""

    __slots__ = ("_encrypt", "_key", "_templates")

    def __init__(self, key: bytes) -> None:
        if len(key) != BLOCK:
            raise ConfigError(f"the hash key must be {BLOCK} bytes, got {len(key)}")
        self._key = key
        self._encrypt = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        self._templates: dict[tuple[int, int], np.ndarray] = {}

    def rekeyed(self, use: int, block: int) -> Any:
        """``π_{use, block}``: AES-128 (an ECB encryptor) under the key ``SHA-256(domain, the
        session key, use, block)``, public like the session key, a different permutation
        for every batch number and pad block. ``x ↦ π_{use,b}(x) ⊕ x`` (MMO with the tweak
        in the key) is the re-keyed correlation-robust hash of :mod:`protocols.ot.one_hot`
        (AES as an ideal cipher)."""
        if not (0 <= use < 2**64 and 0 <= block < 2**32):
            raise ConfigError(f"no key for batch {use}, block {block}")
        data = _DOMAIN_REKEY + self._key + use.to_bytes(8, "big") + block.to_bytes(4, "big")
        key = hashlib.sha256(data).digest()[:BLOCK]
        return Cipher(algorithms.AES(key), modes.ECB()).encryptor()

    def __repr__(self) -> str:
        return "CorrelationRobustHash(<session key>)"

    def _tweaks(self, m: int, blocks: int) -> np.ndarray:
        """The tweaks' first words, ``j + b 2^32`` (``m blocks``), kept for the last few
        shapes (batches repeat their sizes)."""
        got = self._templates.get((m, blocks))
        if got is None:
            got = (
                np.arange(m, dtype=np.uint64)[:, None]
                + (np.arange(blocks, dtype=np.uint64)[None, :] << np.uint64(32))
            ).reshape(-1)
            if len(self._templates) >= 4:
                self._templates.pop(next(iter(self._templates)))
            self._templates[(m, blocks)] = got
        return got

    def _pi(self, rows: np.ndarray) -> np.ndarray:
        out = bytearray(rows.nbytes + BLOCK - 1)  # update_into wants room for a block more
        n = self._encrypt.update_into(np.ascontiguousarray(rows).data, out)
        return np.frombuffer(out, dtype=np.uint8, count=n).reshape(rows.shape)

    def prefix(self, rows: np.ndarray, first: int = 0) -> np.ndarray:
        """``π(x) ⊕ (j, 0)`` for the ``(m, 16)`` uint8 rows ``x`` (``j = first + `` the row's
        index), as an ``(m, 2)`` uint64 array: the part of ``y = π(x) ⊕ (j + b 2^32, use)``
        that does not depend on the block ``b`` or the batch ``use``, kept by callers that
        hash the same rows under many batch numbers (:mod:`protocols.ot.one_hot`)."""
        m = len(rows)
        if first + m > 2**32:
            raise ConfigError(f"cannot index {first + m} rows in the tweaks (at most 2^32)")
        y = self._pi(rows).view("<u8").reshape(m, 2).astype(np.uint64)
        y[:, 0] ^= np.arange(first, first + m, dtype=np.uint64)
        return y

    def __call__(self, rows: np.ndarray, use: int, blocks: int = 1) -> np.ndarray:
        """Hash an ``(m, 16)`` uint8 array row by row into ``blocks`` blocks each: ``(m, 16
        blocks)``, block ``b`` of row ``j`` under the tweak ``(j + b 2^32, use)`` (``m + m
        blocks`` AES blocks). Stretching a row this way gives a vector OT any width from one
        IKNP OT: every tweak of a session stays distinct (``j < 2^32``)."""
        m = len(rows)
        if m >= 2**32 or blocks < 1:
            raise ConfigError(f"cannot hash {m} rows into {blocks} blocks each")
        # as 64-bit words and long axes (numpy is slow on short ones): π(x) repeated per block
        y = self._pi(rows).view("<u8").reshape(m, 2)
        if blocks > 1:
            y = np.repeat(y, blocks, axis=0)
        y[:, 0] ^= self._tweaks(m, blocks)
        y[:, 1] ^= np.uint64(use)
        out = self._pi(y.view(np.uint8))
        np.bitwise_xor(out.view("<u8"), y.reshape(-1, 2), out=out.view("<u8"))
        return out.reshape(m, blocks * BLOCK)


#: the swaps of a 64 x 64 bit transpose: for each distance ``d``, the mask of the low ``d``
#: bits of every ``2d`` (Hacker's Delight, 7-3, on 64-bit words)
_SWAPS = tuple(
    (d, np.uint64(sum(((1 << d) - 1) << (2 * d * i) for i in range(32 // d))))
    for d in (32, 16, 8, 4, 2, 1)
)


#: bytes of columns transposed at a time (512 KiB of a 128-row matrix): the passes over a
#: slice stay in the cache, twice as fast as passes over a whole batch's matrix
_TRANSPOSE_COLUMNS = 4096


def transpose_bits(matrix: np.ndarray) -> np.ndarray:
    """The transpose of a bit matrix: ``matrix`` is ``(k, n/8)`` uint8, row ``i`` holding bits
    ``0..n-1`` little-endian (``np.packbits(..., bitorder="little")``); the result is ``(n,
    k/8)`` uint8 the same way. ``k`` and ``n`` must be multiples of 64.

    Words of 64 bits move whole (numpy is slow moving single bytes): a reorder of rows, the
    64 x 64 transposes of every block by masked swaps between words, and a reorder of words;
    a slice of :data:`_TRANSPOSE_COLUMNS` bytes of columns at a time. About 5.5 ms for ``128
    x 2^18`` bits (the byte-plane transposes it replaced took 9), a twentieth of
    ``unpackbits``/``packbits``."""
    if matrix.ndim != 2 or matrix.dtype != np.uint8 or matrix.shape[0] % 64 or matrix.shape[1] % 8:
        raise ConfigError(
            f"transpose_bits needs a uint8 matrix of k x n/8 bytes with k and n multiples of 64, "
            f"got {matrix.dtype} of shape {matrix.shape}"
        )
    k, nb = matrix.shape
    if nb > _TRANSPOSE_COLUMNS:  # column slices: each one's passes stay in the cache
        out = np.empty((nb * 8, k // 8), dtype=np.uint8)
        for start in range(0, nb, _TRANSPOSE_COLUMNS):
            part = np.ascontiguousarray(matrix[:, start : start + _TRANSPOSE_COLUMNS])
            out[start * 8 : start * 8 + part.shape[1] * 8] = _transpose_bits(part)
        return out
    return _transpose_bits(matrix)


def _transpose_bits(matrix: np.ndarray) -> np.ndarray:
    """Every 64 x 64 block of bits transposed in place as 64 words, all blocks at once: six
    rounds of masked swaps between the words ``d`` apart, ``d = 32 .. 1`` (each round the
    same six numpy passes over half of the words, into buffers made once)."""
    k, nb = matrix.shape
    H, G = k // 64, nb // 8
    words = np.ascontiguousarray(matrix).view("<u8").reshape(H, 64, G)
    # a copy always (with one block of rows the reorder alone would be a view of matrix)
    x = np.array(words.transpose(1, 0, 2), dtype=np.uint64, order="C").reshape(64, H * G)
    t = np.empty((32, H * G), dtype=np.uint64)
    u = np.empty_like(t)
    for d, mask in _SWAPS:
        v = x.reshape(32 // d, 2, d, -1)  # rows whose bit d is 0 (lo) and 1 (hi)
        lo, hi = v[:, 0], v[:, 1]
        tt, uu = t.reshape(32 // d, d, -1), u.reshape(32 // d, d, -1)
        np.right_shift(lo, np.uint64(d), out=tt)
        tt ^= hi
        tt &= mask
        hi ^= tt
        np.left_shift(tt, np.uint64(d), out=uu)
        lo ^= uu
    # x[i][h, g]: bits 64 h .. 64 h + 63 of column 64 g + i
    out = np.ascontiguousarray(x.reshape(64, H, G).transpose(2, 0, 1)).astype("<u8", copy=False)
    return out.reshape(G * 64, H).view(np.uint8)


class SeedStream:
    """The AES-256-CTR keystream of a 32-byte seed (zero nonce), read in order as uniform
    little-endian integers (:meth:`array`, :meth:`words`) and bits (:meth:`bits`): two
    holders of one seed draw the same values by making the same draws."""

    def __init__(self, seed: object) -> None:
        if not isinstance(seed, bytes) or len(seed) != 32:
            raise ValueError("a seed must be 32 bytes")
        self._enc = Cipher(algorithms.AES(seed), modes.CTR(bytes(16))).encryptor()

    def array(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """The next uniform array of ``shape`` and unsigned integer ``dtype``."""
        dt = np.dtype(dtype)
        data = self._enc.update(bytes(int(np.prod(shape)) * dt.itemsize))
        return np.frombuffer(data, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)

    def words(self, n: int) -> np.ndarray:
        """The next ``n`` uniform ``uint64`` values."""
        return self.array((n,), np.uint64)

    def bits(self, n: int) -> np.ndarray:
        """The next ``n`` uniform bits, as ``uint8`` 0/1."""
        data = np.frombuffer(self._enc.update(bytes((n + 7) // 8)), dtype=np.uint8)
        return np.unpackbits(data)[:n]
