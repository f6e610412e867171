"""The arrays of PPID3's level driver (:mod:`protocols.ppid3.levels`) in the ring of its
counts (:class:`protocols.engine.ring.Ring`, ``Z_{2^16}`` or ``Z_{2^32}``): a site's one-hot
columns, the row-wise outer product that makes a child's shares, and the blocks of counts an
attribute's bits govern.

Network-free: the driver, the dealer and the helping sites (:mod:`protocols.engine.dealing`)
all compute with these functions, and they are unit-tested alone.

* :func:`one_hot_columns` — ``X^T``, the one-hot rows of every attribute of a site;
* :func:`threshold_tables` — the two sides of every threshold of an attribute split at one,
  from its per-code counts (or shares of them);
* :func:`outer_product` — ``T[v, c, t] = a[v, t] * b[parents[v]*p + c, t]``;
* :func:`expand_blocks` — per-(attribute, node) bits as the mask of the count blocks they
  govern;
* :func:`dealt` — an array of a dealing party's message, sent whole or as a seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["one_hot_columns", "threshold_tables"]


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


def threshold_tables(per_code: np.ndarray, at: Sequence[int] | np.ndarray) -> np.ndarray:
    """The two-row count tables (``len(at) x 2 x classes``) of the thresholds at indices
    ``at`` of an attribute whose ``(K + 1) x classes`` counts are per code (the number of
    thresholds below a value): row 0 the codes ``<= i``, row 1 the rest. Prefix sums: linear,
    so they hold of shares as of counts (in the ring's arithmetic)."""
    cum = np.cumsum(per_code, axis=0, dtype=per_code.dtype)
    idx = np.asarray(at, dtype=np.int64)
    below = cum[idx]
    return np.stack([below, cum[-1][None, :] - below], axis=1)
