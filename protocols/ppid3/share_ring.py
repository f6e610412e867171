"""The ring of PPID3's level driver (:mod:`protocols.ppid3.levels`): additive shares in
``Z_{2^16}`` or ``Z_{2^32}``, uniform ring elements expanded from seeds, exact ring products
with float64 BLAS, and the row-wise outer product that makes a child's shares.

Network-free: the driver, the dealer and the helping sites (:mod:`protocols.ppid3.level_dealing`)
all compute with these functions, and they are unit-tested alone.

* :func:`ring_dtype` — ``Z_{2^16}`` below ``2^16`` rows, ``Z_{2^32}`` below ``2^21`` (a count
  never exceeds the number of rows, so every count is exact in the ring);
* :func:`ring_random` — a uniform array from a 32-byte seed (AES-256-CTR keystream): how masks
  travel as seeds;
* :func:`ring_matmul` — ``a @ b`` in the ring: 16-bit limbs as float64, whose products summed
  over fewer than ``2^21`` terms stay below ``2^53``, hence exact;
* :func:`outer_product` — ``T[v, c, t] = a[v, t] * b[parents[v]*p + c, t]``;
* :func:`expand_blocks` — per-(attribute, node) bits as the mask of the count blocks they
  govern.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import unpack_array

__all__ = [
    "ROW_BLOCK",
    "Left",
    "expand_blocks",
    "one_hot_columns",
    "outer_product",
    "ring_dtype",
    "ring_left",
    "ring_matmul",
    "ring_random",
]


def ring_dtype(n_rows: int) -> type[np.unsignedinteger[Any]]:
    """The ring of the shares: ``Z_{2^16}`` below ``2^16`` rows, else ``Z_{2^32}`` (a count
    never exceeds the number of rows, so it is exact in the ring)."""
    if n_rows < 2**16:
        return np.uint16
    if n_rows < 2**21:
        return np.uint32
    raise ConfigError(f"{n_rows} rows: the share ring supports fewer than 2^21 rows")


def ring_random(seed: bytes, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Uniform ring elements expanded from a 32-byte ``seed`` (AES-256-CTR keystream,
    :class:`mpc.crypto.prg.SeedStream`)."""
    try:
        return SeedStream(seed).array(shape, dtype)
    except ValueError:
        raise ProtocolError("a mask seed must be 32 bytes") from None


Left = tuple[Any, tuple[np.ndarray, ...]]  # (ring dtype, float64 16-bit limbs, or the array)

#: rows of the inner dimension converted to float64 limbs at a time when a 32-bit operand is
#: kept as it is (:func:`ring_left`): bounds a product's temporaries to a few such blocks
ROW_BLOCK = 2**15


def ring_left(a: np.ndarray) -> Left:
    """``a`` prepared as the left operand of :func:`ring_matmul`, for a matrix that multiplies
    many right-hand sides: in ``Z_{2^16}`` its float64 copy (four times its size); in
    ``Z_{2^32}`` (a million rows) the array itself, whose two 16-bit limbs ``ring_matmul``
    makes a block of :data:`ROW_BLOCK` rows at a time: float64 limbs of an ``m x N``
    operand would take 16 bytes an element, several GiB a site at a million rows."""
    if a.dtype == np.uint16:
        return a.dtype, (a.astype(np.float64),)
    if a.dtype == np.uint32:
        return a.dtype, (a,)
    raise ProtocolError(f"no ring of dtype {a.dtype}")


def _limbs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The low and high 16-bit limbs of a ``uint32`` array as float64: strided reads of its
    ``uint16`` view (little-endian), no masked or shifted temporaries."""
    if x.strides[-1] != x.itemsize:  # a transposed operand: its (small) block made contiguous
        x = np.ascontiguousarray(x)
    halves = x.view(np.dtype("<u2")).reshape(*x.shape, 2)
    return halves[..., 0].astype(np.float64), halves[..., 1].astype(np.float64)


def ring_matmul(a: np.ndarray | Left, b: np.ndarray, *, binary: bool = False) -> np.ndarray:
    """``a @ b`` in the ring of their dtype, exactly, with float64 BLAS: 16-bit limbs whose
    products summed over fewer than ``2^21`` terms stay below ``2^53``. ``a`` may be
    prepared by :func:`ring_left`. In ``Z_{2^32}`` the inner dimension goes a block of
    :data:`ROW_BLOCK` at a time (each block's sums below ``2^47``), the blocks' products
    added in ``Z_{2^64}``: per block one product of ``a``'s low limb with both limbs of ``b``
    side by side and one of its high limb with ``b``'s low limb (the high-high product
    vanishes mod ``2^32``). With ``binary`` (``a`` holds only 0 and 1, such as a one-hot
    matrix) one product per block with ``b`` whole: ``2^21`` sums of 32-bit values stay
    below ``2^53``."""
    dtype, limbs = ring_left(a) if isinstance(a, np.ndarray) else a
    if b.dtype != dtype or limbs[0].shape[1] != b.shape[0]:
        raise ProtocolError(f"ring product of {dtype}{limbs[0].shape} and {b.dtype}{b.shape}")
    if b.shape[0] >= 2**21:
        raise ConfigError("ring products support fewer than 2^21 rows")
    if dtype == np.uint16:
        return (limbs[0] @ b.astype(np.float64)).astype(np.uint64).astype(np.uint16)
    (raw,) = limbs
    cols = b.shape[1]
    out = np.zeros((raw.shape[0], cols), dtype=np.uint64)
    for start in range(0, b.shape[0], ROW_BLOCK):
        block = raw[:, start : start + ROW_BLOCK]
        if binary:
            out += (block.astype(np.float64) @ b[start : start + ROW_BLOCK].astype(np.float64)
                    ).astype(np.uint64)  # fmt: skip
            continue
        a0, a1 = _limbs(block)
        b0, b1 = _limbs(b[start : start + ROW_BLOCK])
        both = (a0 @ np.concatenate([b0, b1], axis=1)).astype(np.uint64)
        out += both[:, :cols]
        out += (both[:, cols:] + (a1 @ b0).astype(np.uint64)) << np.uint64(16)
    return out.astype(np.uint32)


def one_hot_columns(
    codes: np.ndarray, sizes: Sequence[int], dtype: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``X^T``, the one-hot rows of every attribute of a site (``codes[:, j]`` indexes the
    ``sizes[j]`` values of attribute ``j``), in column order, and the row offset of each
    attribute (``sum(sizes) x N`` and ``len(sizes) + 1``)."""
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = codes.shape[0]
    xt = np.zeros((int(offsets[-1]), n), dtype=dtype)
    for j in range(len(sizes)):
        xt[offsets[j] + codes[:, j], np.arange(n)] = 1
    return xt, offsets


def outer_product(a: np.ndarray, b: np.ndarray, parents: np.ndarray, p: int) -> np.ndarray:
    """``T[v, c, t] = a[v, t] * b[parents[v]*p + c, t]`` (``V x p x N``, in the ring): each
    row of ``a`` times the ``p`` rows of ``b`` of its parent, elementwise. (Arrays are kept
    with the ``N`` rows of the table as their last, contiguous axis.)"""
    out = b.reshape(-1, p, b.shape[1])[parents]
    out *= a[:, None, :]
    return out


def expand_blocks(bits: np.ndarray, blocks: Sequence[int], p: int) -> np.ndarray:
    """Per-(attribute, node) bits (``L x B``) as the ``sum(blocks) x B*p`` mask of the count
    blocks they govern (``blocks``: each attribute's number of values; ``p`` classes)."""
    return np.repeat(np.repeat(bits, list(blocks), axis=0), p, axis=1)


def outer_shares(
    a: np.ndarray | None, b: np.ndarray | None, parents: np.ndarray, p: int, masks: dict[str, Any]
) -> np.ndarray:
    """One side of the shares of :func:`outer_product` of ``A`` and ``B`` (``masks``: this
    side's randomness ``R``, ``r`` and the other side's masked input)."""
    if a is not None:  # the side holding A: ra - Ra (x) (B + Rb)
        out = outer_product(masks["R"], masks["other"], parents, p)
        return np.subtract(masks["r"], out, out=out)
    assert b is not None  # the side holding B: (A + Ra) (x) B + rb
    out = outer_product(masks["other"], b, parents, p)
    return np.add(out, masks["r"], out=out)


def dealt(got: Any, key: str, shape: tuple[int, ...], dtype: Any, dealer: str, what: str) -> Any:
    """The array ``key`` of a dealing party's message ``got``: a 32-byte seed expanded by
    :func:`protocols.ppid3.share_ring.ring_random`, or the array itself (packed)."""
    if not isinstance(got, dict) or key not in got:
        raise ProtocolError(f"{dealer} sent no {what} (correlated randomness)")
    value = got[key]
    if isinstance(value, bytes):
        return ring_random(value, shape, dtype)
    return unpack_array(value, dtype, shape, dealer, what)
