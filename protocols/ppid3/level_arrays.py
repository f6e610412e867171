"""The arrays of PPID3's level driver (:mod:`protocols.ppid3.levels`) in the ring of its
counts (:class:`protocols.engine.ring.Ring`, ``Z_{2^16}`` or ``Z_{2^32}``): a site's one-hot
columns, the row-wise outer product that makes a child's shares, and the blocks of counts an
attribute's bits govern.

Network-free: the driver, the dealer and the helping sites (:mod:`protocols.engine.dealing`)
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

__all__ = ["one_hot_columns"]


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
