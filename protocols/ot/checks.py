"""The checks of the oblivious-transfer protocols: every array a party receives has the dtype
and shape the protocol fixes (:func:`check_array`), sizes are sane (:func:`check_count`),
choice bits are bits (:func:`choice_bits`); a peer that sends anything else is named
(:func:`misbehaved`, :class:`~mpc.errors.PeerMisbehaved`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mpc.errors import ConfigError, PeerMisbehaved, ProtocolError


def check_array(
    obj: object, dtype: Any, shape: tuple[int, ...], peer: str, what: str, step: str
) -> np.ndarray:
    if not isinstance(obj, np.ndarray) or obj.dtype != np.dtype(dtype) or obj.shape != shape:
        got = (
            f"a {obj.dtype} array of shape {obj.shape}"
            if isinstance(obj, np.ndarray)
            else type(obj).__name__
        )
        raise ProtocolError(
            f"OT: {peer} sent, at {step}, {what} that is not a {np.dtype(dtype)} array of shape "
            f"{shape} (got {got}); the parties disagree about the protocol or its sizes"
        )
    return obj


def misbehaved(peer: str, step: str, detail: str) -> PeerMisbehaved:
    return PeerMisbehaved(f"OT: {peer} sent, at {step}, {detail}", peer=peer, step=step)


def check_count(n: int, what: str) -> int:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 0:
        raise ConfigError(f"{what} must be an integer >= 0, got {n!r}")
    return int(n)


def choice_bits(choices: Any, what: str) -> np.ndarray:
    bits = np.asarray(choices)
    if bits.size == 0 and bits.ndim == 1:
        return np.zeros(0, dtype=np.uint8)
    if (
        bits.ndim != 1
        or not (bits.dtype == np.bool_ or np.issubdtype(bits.dtype, np.integer))
        or not ((bits == 0) | (bits == 1)).all()
    ):
        raise ConfigError(f"{what} must be a 1-d array of bits (0/1 or bool), got {bits!r:.80}")
    return bits.astype(np.uint8)
