"""The arrays of PPID3's level driver (:mod:`protocols.ppid3.levels`) in the ring of its
counts (:class:`protocols.engine.ring.Ring`, ``Z_{2^16}`` or ``Z_{2^32}``): a site's one-hot
columns, the row-wise outer product that makes a child's shares, and the blocks of counts an
attribute's bits govern.

Network-free: the driver, the dealer and the helping sites (:mod:`protocols.ppid3.level_dealing`)
all compute with these functions, and they are unit-tested alone.

* :func:`one_hot_columns` — ``X^T``, the one-hot rows of every attribute of a site;
* :func:`outer_product` — ``T[v, c, t] = a[v, t] * b[parents[v]*p + c, t]``;
* :func:`expand_blocks` — per-(attribute, node) bits as the mask of the count blocks they
  govern;
* :func:`dealt` — an array of a dealing party's message, sent whole or as a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.errors import ProtocolError
from mpc.runtime.chunks import unpack_array
from protocols.engine.ring import Ring

__all__ = ["dealt", "expand_blocks", "one_hot_columns", "outer_product", "outer_shares"]


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
    :meth:`protocols.engine.ring.Ring.random`, or the array itself (packed)."""
    if not isinstance(got, dict) or key not in got:
        raise ProtocolError(f"{dealer} sent no {what} (correlated randomness)")
    value = got[key]
    if isinstance(value, bytes):
        return Ring.of(dtype).random(value, shape)
    return unpack_array(value, dtype, shape, dealer, what)
