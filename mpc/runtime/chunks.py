"""Large arrays in message bodies: a flat array cut into frames of bounded size.

The codec (:mod:`mpc.runtime.codec`) refuses any frame over the deployment's frame limit, so
a protocol that sends a big matrix sends it as :func:`pack_array`'s ``{"shape", "parts"}``:
the flat data in parts of at most :data:`CHUNK_BYTES`, each its own frame. The receiver calls
:func:`unpack_array` with the dtype and shape it expects (``None`` for a dimension of any
positive size); anything else is a :class:`~mpc.errors.ProtocolError` naming the sender::

    await party.send(peer, "masked", pack_array(x + r))
    y = unpack_array(await party.recv(peer, "masked", MASKED), np.uint64, x.shape, peer, "x + r")
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.errors import ProtocolError

__all__ = ["CHUNK_BYTES", "checked_shape", "pack_array", "unpack_array"]

#: Largest part of an array that one frame carries; bigger arrays travel as several frames.
CHUNK_BYTES = 4 * 1024 * 1024


def pack_array(arr: np.ndarray) -> dict[str, Any]:
    """``arr`` as ``{"shape", "parts"}``: its flat data in parts of at most CHUNK_BYTES."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    step = max(1, CHUNK_BYTES // flat.itemsize)
    return {
        "shape": list(arr.shape),
        "parts": [flat[i : i + step] for i in range(0, flat.size, step)],
    }


def unpack_array(
    body: object,
    dtype: type[np.generic] | np.dtype[Any],
    shape: Sequence[int | None],
    sender: str,
    what: str,
) -> np.ndarray:
    """The array :func:`pack_array` made, checked: ``dtype`` exactly, ``shape`` dimension by
    dimension (``None``: any positive size). ``sender`` and ``what`` name it in errors."""
    if not isinstance(body, dict) or not isinstance(body.get("parts"), list):
        raise ProtocolError(f"{sender} sent a malformed {what}")
    dims = checked_shape(body.get("shape"), shape, sender, what)
    parts = body["parts"]
    if not all(
        isinstance(p, np.ndarray) and p.dtype == np.dtype(dtype) and p.ndim == 1 for p in parts
    ):
        raise ProtocolError(f"{sender} sent {what} that is not {np.dtype(dtype)} data")
    flat = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    if flat.size != math.prod(dims):
        raise ProtocolError(f"{sender} sent {flat.size} values for {what} of shape {dims}")
    return flat.reshape(dims)


def checked_shape(
    value: object, shape: Sequence[int | None], sender: str, what: str
) -> tuple[int, ...]:
    """``value`` (a shape as received) as a tuple, if it matches ``shape`` (``None``: any
    positive size); else a :class:`~mpc.errors.ProtocolError` naming ``sender`` and ``what``."""
    if (
        not isinstance(value, list)
        or len(value) != len(shape)
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value)
        or any(want is not None and d != want for d, want in zip(value, shape, strict=True))
    ):
        expected = "(" + ", ".join("any" if d is None else str(d) for d in shape) + ")"
        raise ProtocolError(
            f"{sender} sent {what} of shape {value!r}, expected {expected}; "
            "do the parties agree on the sizes (rows, columns) of this step?"
        )
    return tuple(value)
