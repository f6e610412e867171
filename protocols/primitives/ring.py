"""The rings ``Z_{2^K}`` of secure comparison (:mod:`protocols.primitives.secure_comparison`):
``K = 64`` as numpy ``uint64`` (wrapping arithmetic for free), wider rings (``K`` a multiple
of 64) as numpy object arrays of Python integers reduced mod ``2^K`` after every operation.

A wide ring exists for exact scores: a Gini score compared as cross-multiplied fractions
(:mod:`protocols.ppid3.shared_scores`) has products of ``2 |V|`` factors ``8 n_v + 1``, far
past 64 bits for a four-valued attribute on a thousand rows (:func:`ring_for_bits` picks the
ring from a public bound). The work on such values is per node and candidate, not per row,
so Python integers cost little.

On the wire an element is ``K / 64`` little-endian ``uint64`` words (:meth:`Ring.pack`), so a
message is checked for its dtype and shape like any other array. Network-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array

__all__ = ["RING64", "Ring", "ring_for_bits"]

U64 = np.uint64


@dataclass(frozen=True)
class Ring:
    """``Z_{2^bits}``; ``bits`` is a multiple of 64. Values are signed in two's complement
    (``|x| < 2^(bits - 2)`` for a comparison)."""

    bits: int = 64

    def __post_init__(self) -> None:
        if self.bits < 64 or self.bits % 64:
            raise ConfigError(f"a comparison ring has a multiple of 64 bits, got {self.bits}")

    @property
    def limbs(self) -> int:
        return self.bits // 64

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
        if arr.dtype.kind == "i":
            return arr.astype(np.int64).astype(U64)
        if arr.dtype.kind == "u":
            return arr.astype(U64)
        flat = [int(v) & (2**64 - 1) for v in arr.reshape(-1)]
        return np.asarray(flat, dtype=U64).reshape(arr.shape)

    def reduce(self, x: np.ndarray) -> np.ndarray:
        """``x`` mod ``2^bits`` (a no-op for ``uint64``)."""
        if not self.wide:
            return x
        return np.bitwise_and(np.asarray(x, dtype=object), self.mask)

    def zeros(self, shape: int | tuple[int, ...]) -> np.ndarray:
        if not self.wide:
            return np.zeros(shape, dtype=U64)
        out = np.empty(shape, dtype=object)
        out.fill(0)
        return out

    def constant(self, value: int, shape: int | tuple[int, ...]) -> np.ndarray:
        out = self.zeros(shape)
        out[...] = value & self.mask if self.wide else U64(value & (2**64 - 1))
        return out

    def signed(self, x: np.ndarray) -> list[int]:
        """The values of ``x`` as signed Python integers (for checks and tests)."""
        half = 1 << (self.bits - 1)
        return [(int(v) ^ half) - half for v in np.asarray(x).reshape(-1)]

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
            return words.reshape(shape).astype(U64)
        data = np.ascontiguousarray(words.astype("<u8")).tobytes()
        size = self.bits // 8
        out = np.empty(len(data) // size, dtype=object)
        out[:] = [int.from_bytes(data[i : i + size], "little") for i in range(0, len(data), size)]
        return out.reshape(shape)

    def bits_of(self, x: np.ndarray) -> np.ndarray:
        """The bits of each of the ``n`` elements of ``x``: ``n x bits`` ``uint8``, the least
        significant first."""
        words = np.ascontiguousarray(self.to_words(x).astype("<u8"))
        return np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")

    def random(self, stream: SeedStream, n: int) -> np.ndarray:
        """The next ``n`` uniform elements of ``stream``."""
        return self.from_words(stream.words(n * self.limbs).reshape(n, self.limbs), (n,))

    # ---------------------------------------------------------------- the wire

    def pack(self, x: np.ndarray) -> dict[str, Any]:
        return pack_array(self.to_words(x))

    def unpack(self, body: object, shape: tuple[int, ...], sender: str, what: str) -> np.ndarray:
        n = int(np.prod(shape))
        words = unpack_array(body, U64, (n, self.limbs), sender, what)
        return self.from_words(words, shape)


RING64 = Ring(64)


def ring_for_bits(bound_bits: int) -> Ring:
    """The smallest ring whose signed values (``|x| < 2^(K - 2)``) hold every value of at
    most ``bound_bits`` bits."""
    if bound_bits < 0:
        raise ProtocolError(f"a bound of {bound_bits} bits")
    k = max(64, -(-(bound_bits + 2) // 64) * 64)
    return Ring(k)
