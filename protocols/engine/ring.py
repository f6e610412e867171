"""The one ring of every protocol that computes on additive shares: ``Z_{2^K}`` for ``K`` 16,
32, 64 or a multiple of 64.

* ``Z_{2^16}`` and ``Z_{2^32}``: numpy ``uint16`` / ``uint32``, the rings of counts (a count
  never exceeds the number of rows): :meth:`Ring.for_rows` picks the smallest that holds
  every count of a table, so that the bulk of shared data (one share per row and class, per
  node) stays small on the wire. Their products of matrices are exact with float64 BLAS
  (:meth:`Ring.matmul`);
* ``Z_{2^64}``: numpy ``uint64``, whose wrapping arithmetic is the ring's (comparisons, the
  terms of scores);
* wider rings, ``K`` a multiple of 64: numpy object arrays of Python integers reduced mod
  ``2^K`` after every operation, for exact scores (a Gini fraction's cross products grow
  past 64 bits; :meth:`Ring.for_bits` picks the ring from a public bound). The work on them
  is per node and candidate, not per row, so Python integers cost little.

Values are signed in two's complement where a protocol compares them (``|x| < 2^(K - 2)``).
On the wire an element of ``Z_{2^16}`` or ``Z_{2^32}`` is itself (an array of its dtype), one
of ``Z_{2^64}`` and wider ``K / 64`` little-endian ``uint64`` words (:meth:`Ring.pack`), so a
message is checked for its dtype and shape like any other array. Uniform elements come from a
32-byte seed or a :class:`mpc.crypto.prg.SeedStream` (:meth:`Ring.random`): how masks travel
as seeds. Network-free.

References: none (the arithmetic of ``Z_{2^K}``); the exact products of matrices in float64
by 16-bit limbs (:meth:`Ring.matmul`) are this module's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array

__all__ = [
    "FLOAT_EXACT_TERMS",
    "MAX_ROWS",
    "RING16",
    "RING32",
    "RING64",
    "ROW_BLOCK",
    "Left",
    "Ring",
    "ring_for_bits",
]

U64 = np.uint64

#: the rows a ring of counts may hold: every count is at most the rows, so ``Z_{2^32}`` holds
#: each exactly below ``2^32`` rows (:meth:`Ring.for_rows`); the products of matrices sum their
#: inner dimension a block at a time, so they stay exact at any number of rows
MAX_ROWS = 2**32
#: rows of the inner dimension converted to float64 limbs at a time in ``Z_{2^32}``: bounds a
#: product's temporaries to a few such blocks (each block's sums stay below ``2^47``)
ROW_BLOCK = 2**15
#: terms one float64 product of 16-bit limbs sums exactly (each below ``2^32``, the sum below
#: ``2^53``); ``Z_{2^16}`` products of longer inner dimensions go a block of this at a time
FLOAT_EXACT_TERMS = 2**21

#: an operand of :meth:`Ring.matmul` prepared once for many products (:meth:`Ring.left`):
#: ``(dtype, limbs)``, the float64 copy of a ``Z_{2^16}`` matrix or the ``Z_{2^32}`` array
Left = tuple[Any, tuple[np.ndarray, ...]]

_DTYPES = {16: np.uint16, 32: np.uint32, 64: np.uint64}


@dataclass(frozen=True)
class Ring:
    """``Z_{2^bits}``; ``bits`` is 16, 32, 64 or a multiple of 64."""

    bits: int = 64

    def __post_init__(self) -> None:
        if self.bits not in (16, 32) and (self.bits < 64 or self.bits % 64):
            raise ConfigError(f"a ring has 16, 32, 64 or a multiple of 64 bits, not {self.bits}")

    # ---------------------------------------------------------------- choosing one

    @classmethod
    def for_rows(cls, n_rows: int) -> Ring:
        """The ring of the counts of a table of ``n_rows`` rows: ``Z_{2^16}`` below ``2^16``
        rows, else ``Z_{2^32}`` below ``2^32`` (a count never exceeds the rows, so it is
        exact)."""
        if n_rows < 2**16:
            return RING16
        if n_rows < MAX_ROWS:
            return RING32
        raise ConfigError(
            f"{n_rows:,} rows: the share ring of counts holds fewer than 2^32 rows "
            f"({MAX_ROWS - 1:,} at most)"
        )

    @classmethod
    def of(cls, dtype: Any) -> Ring:
        """The ring whose elements have numpy ``dtype`` (``uint16``, ``uint32``, ``uint64``)."""
        dt = np.dtype(dtype)
        for bits, d in _DTYPES.items():
            if dt == np.dtype(d):
                return Ring(bits)
        raise ProtocolError(f"no ring of dtype {dt}")

    # ---------------------------------------------------------------- properties

    @property
    def dtype(self) -> Any:
        """The numpy dtype of the ring's elements (object for a wide ring)."""
        return _DTYPES.get(self.bits, object)

    @property
    def limbs(self) -> int:
        """64-bit words per element on the wire (one for 64 bits and below)."""
        return max(1, self.bits // 64)

    @property
    def wide(self) -> bool:
        return self.bits > 64

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    # ---------------------------------------------------------------- values

    def array(self, values: Any) -> np.ndarray:
        """``values`` (ints, an int array) as ring elements (reduced; negatives wrap).
        Python integers go through object arrays: numpy would turn a list mixing values
        below and above ``2^63`` into floats."""
        arr = values if isinstance(values, np.ndarray) else np.array(values, dtype=object)
        if self.wide:
            return self.reduce(arr.astype(object))
        dtype = self.dtype
        if arr.dtype.kind == "i":
            return arr.astype(np.int64).astype(U64).astype(dtype)
        if arr.dtype.kind == "u":
            return arr.astype(dtype)
        flat = [int(v) & self.mask for v in arr.reshape(-1)]
        return np.asarray(flat, dtype=dtype).reshape(arr.shape)

    def reduce(self, x: np.ndarray) -> np.ndarray:
        """``x`` mod ``2^bits`` (a no-op for the numpy rings)."""
        if not self.wide:
            return x
        return np.bitwise_and(np.asarray(x, dtype=object), self.mask)

    def zeros(self, shape: int | tuple[int, ...]) -> np.ndarray:
        if not self.wide:
            return np.zeros(shape, dtype=self.dtype)
        out = np.empty(shape, dtype=object)
        out.fill(0)
        return out

    def constant(self, value: int, shape: int | tuple[int, ...]) -> np.ndarray:
        out = self.zeros(shape)
        out[...] = value & self.mask if self.wide else self.dtype(value & self.mask)
        return out

    def signed(self, x: np.ndarray) -> list[int]:
        """The values of ``x`` as signed Python integers (for checks and tests)."""
        half = 1 << (self.bits - 1)
        return [(int(v) ^ half) - half for v in np.asarray(x).reshape(-1)]

    def random(self, source: bytes | SeedStream, shape: int | tuple[int, ...]) -> np.ndarray:
        """Uniform elements of ``shape`` from a 32-byte seed or the next ones of a
        :class:`~mpc.crypto.prg.SeedStream` (AES-256-CTR keystream)."""
        if not isinstance(source, SeedStream):
            try:
                source = SeedStream(source)
            except ValueError:
                raise ProtocolError("a mask seed must be 32 bytes") from None
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        if not self.wide:
            return source.array(dims, self.dtype)
        n = int(np.prod(dims))
        return self.from_words(source.words(n * self.limbs).reshape(n, self.limbs), dims)

    # ---------------------------------------------------------------- words and bits

    def to_words(self, x: np.ndarray) -> np.ndarray:
        """``x`` (``n`` elements) as an ``n x limbs`` ``uint64`` array, little-endian."""
        flat = np.asarray(x).reshape(-1)
        if not self.wide:
            return flat.astype(U64).reshape(-1, 1)
        size = self.bits // 8
        data = b"".join(int(v).to_bytes(size, "little") for v in flat)
        return np.frombuffer(data, dtype="<u8").astype(U64).reshape(-1, self.limbs)

    def from_words(self, words: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """The inverse of :meth:`to_words`."""
        if not self.wide:
            return words.reshape(shape).astype(self.dtype)
        data = np.ascontiguousarray(words.astype("<u8")).tobytes()
        size = self.bits // 8
        out = np.empty(len(data) // size, dtype=object)
        out[:] = [int.from_bytes(data[i : i + size], "little") for i in range(0, len(data), size)]
        return out.reshape(shape)

    def bits_of(self, x: np.ndarray) -> np.ndarray:
        """The bits of each of the ``n`` elements of ``x``: ``n x bits`` ``uint8``, the least
        significant first."""
        words = np.ascontiguousarray(self.to_words(x).astype("<u8"))
        out = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
        return out[:, : self.bits]

    # ---------------------------------------------------------------- the wire

    def pack(self, x: np.ndarray) -> dict[str, Any]:
        """``x`` for a message: the array itself in ``Z_{2^16}`` and ``Z_{2^32}``, its words
        in ``Z_{2^64}`` and wider."""
        if self.bits < 64:
            return pack_array(np.ascontiguousarray(x, dtype=self.dtype))
        return pack_array(self.to_words(x))

    def unpack(self, body: object, shape: tuple[int, ...], sender: str, what: str) -> np.ndarray:
        """The inverse of :meth:`pack`, checked for its dtype and ``shape`` (a
        :class:`~mpc.errors.ProtocolError` naming ``sender`` and ``what`` otherwise)."""
        if self.bits < 64:
            return unpack_array(body, self.dtype, shape, sender, what)
        n = int(np.prod(shape))
        words = unpack_array(body, U64, (n, self.limbs), sender, what)
        return self.from_words(words, shape)

    # ---------------------------------------------------------------- products of matrices

    def left(self, a: np.ndarray) -> Left:
        """``a`` prepared as the left operand of :meth:`matmul`, for a matrix that multiplies
        many right-hand sides: in ``Z_{2^16}`` its float64 copy (four times its size); in
        ``Z_{2^32}`` (a million rows) the array itself, whose two 16-bit limbs :meth:`matmul`
        makes a block of :data:`ROW_BLOCK` rows at a time: float64 limbs of an ``m x N``
        operand would take 16 bytes an element, several GiB a site at a million rows."""
        if self.bits not in (16, 32) or a.dtype != self.dtype:
            raise ProtocolError(f"no matrix product of {a.dtype} in Z_2^{self.bits}")
        if self.bits == 16:
            return a.dtype, (a.astype(np.float64),)
        return a.dtype, (a,)

    def matmul(self, a: np.ndarray | Left, b: np.ndarray, *, binary: bool = False) -> np.ndarray:
        """``a @ b`` in ``Z_{2^16}`` or ``Z_{2^32}``, exactly, with float64 BLAS: 16-bit
        limbs whose products summed over fewer than ``2^21`` terms stay below ``2^53``, at
        any inner dimension below ``2^32``. ``a`` may be prepared by :meth:`left`. In
        ``Z_{2^16}`` one product, or past :data:`FLOAT_EXACT_TERMS` rows one per block of
        them, the blocks added in ``Z_{2^64}``. In ``Z_{2^32}`` the inner dimension goes a block of
        :data:`ROW_BLOCK` at a time (each block's sums below ``2^47``), the blocks' products
        added in ``Z_{2^64}``: per block one product of ``a``'s low limb with both limbs of
        ``b`` side by side and one of its high limb with ``b``'s low limb (the high-high
        product vanishes mod ``2^32``). With ``binary`` (``a`` holds only 0 and 1, such as a
        one-hot matrix) one product per block with ``b`` whole: ``2^21`` sums of 32-bit
        values stay below ``2^53``."""
        dtype, limbs = self.left(a) if isinstance(a, np.ndarray) else a
        if b.dtype != dtype or limbs[0].shape[1] != b.shape[0]:
            raise ProtocolError(f"ring product of {dtype}{limbs[0].shape} and {b.dtype}{b.shape}")
        if b.shape[0] >= MAX_ROWS:
            raise ConfigError(f"ring products sum fewer than 2^32 terms, not {b.shape[0]:,}")
        if self.bits == 16:
            (left,) = limbs
            acc = np.zeros((left.shape[0], b.shape[1]), dtype=U64)
            for start in range(0, b.shape[0], FLOAT_EXACT_TERMS):
                stop = start + FLOAT_EXACT_TERMS
                acc += (left[:, start:stop] @ b[start:stop].astype(np.float64)).astype(U64)
            return acc.astype(np.uint16)
        (raw,) = limbs
        cols = b.shape[1]
        out = np.zeros((raw.shape[0], cols), dtype=U64)
        for start in range(0, b.shape[0], ROW_BLOCK):
            block = raw[:, start : start + ROW_BLOCK]
            if binary:
                out += (block.astype(np.float64) @ b[start : start + ROW_BLOCK].astype(np.float64)
                        ).astype(U64)  # fmt: skip
                continue
            a0, a1 = _limbs(block)
            b0, b1 = _limbs(b[start : start + ROW_BLOCK])
            both = (a0 @ np.concatenate([b0, b1], axis=1)).astype(U64)
            out += both[:, :cols]
            out += (both[:, cols:] + (a1 @ b0).astype(U64)) << U64(16)
        return out.astype(np.uint32)


def _limbs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The low and high 16-bit limbs of a ``uint32`` array as float64: strided reads of its
    ``uint16`` view (little-endian), no masked or shifted temporaries."""
    if x.strides[-1] != x.itemsize:  # a transposed operand: its (small) block made contiguous
        x = np.ascontiguousarray(x)
    halves = x.view(np.dtype("<u2")).reshape(*x.shape, 2)
    return halves[..., 0].astype(np.float64), halves[..., 1].astype(np.float64)


RING16 = Ring(16)
RING32 = Ring(32)
RING64 = Ring(64)


def ring_for_bits(bound_bits: int) -> Ring:
    """The smallest ring of 64 bits or more whose signed values (``|x| < 2^(K - 2)``) hold
    every value of at most ``bound_bits`` bits."""
    if bound_bits < 0:
        raise ProtocolError(f"a bound of {bound_bits} bits")
    k = max(64, -(-(bound_bits + 2) // 64) * 64)
    return Ring(k)
