"""Correlated OTs of vectors over a ring (``Z_{2^16}``, ``Z_{2^32}`` or ``Z_{2^64}``) and the
products they make, on the sessions of :mod:`protocols.ot.iknp`.

* :func:`vector_ots_send` / :func:`vector_ots_receive`: each vector OT is one IKNP OT whose
  hashes are stretched to as many 16-byte blocks as the vector needs, under distinct tweaks;
  the sender sends one correction vector per OT;
* :func:`one_hot_products_send` / :func:`one_hot_products_receive`: a party's one-hot rows
  times the other party's vectors, summed by group of rows;
* :func:`ring_products_send` / :func:`ring_products_receive`: Gilboa products with vector
  correlations (one correlated vector OT per bit of the scalar side).

Batches hold at most :data:`~protocols.ot.iknp.PAD_BLOCKS` hash blocks, so memory stays a few
MiB whatever the width. What each party receives: the IKNP matrices and corrections
(uniform, :mod:`protocols.ot.iknp`); what it learns: sizes only (:mod:`protocols.ot`).

References: Y. Ishai, J. Kilian, K. Nissim, E. Petrank, *Extending oblivious transfers
efficiently*, CRYPTO 2003 (the OTs, their pads stretched); N. Gilboa, *Two party RSA key
generation*, CRYPTO 1999 (the products by a scalar's bits).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpc.crypto.prg import BLOCK
from mpc.errors import ConfigError
from mpc.runtime.party import Party
from protocols.ot.checks import check_array, check_count, choice_bits
from protocols.ot.iknp import (
    CHUNK_OTS,
    PAD_BLOCKS,
    ExtensionReceiver,
    ExtensionSender,
    extend_as_receiver,
    extend_as_sender,
    record_ots,
    split_batches,
)

#: unsigned rings a vector OT or a ring product may compute in: ``Z_{2^16}``, ``Z_{2^32}``,
#: ``Z_{2^64}``
RING_DTYPES = (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))


#: elements of the correlations of one call of :func:`ring_products_send` (its pieces): bounds
#: the memory of a product to a few arrays of this many ring elements
PIECE_ELEMENTS = 2**22


def _ring_dtype(dtype: Any) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt not in RING_DTYPES:
        raise ConfigError(f"a ring must be one of {[str(d) for d in RING_DTYPES]}, got {dt}")
    return dt


def _blocks_per_ot(width: int, dtype: np.dtype[Any]) -> int:
    """Hash blocks per vector OT: each gives 16 bytes of pad."""
    return max(1, -(-width * dtype.itemsize // BLOCK))


def _pads(h: np.ndarray, width: int, dtype: np.dtype[Any]) -> np.ndarray:
    """``n`` vectors of ``width`` ring elements from the ``(n, 16 r)`` hashes ``h`` (a view
    where the width fills the blocks, else a contiguous copy)."""
    pads = np.ascontiguousarray(h).view(dtype.newbyteorder("<"))
    if pads.dtype == dtype and pads.shape[1] == width:
        return pads
    # a copy: numpy's in-place operations on such strided views are not to be trusted. A pad
    # of 2, 4 or 8 bytes moves as one element (numpy copies a short row element by element)
    size = width * dtype.itemsize
    if size in (2, 4, 8) and dtype == dtype.newbyteorder("<"):
        word = np.ascontiguousarray(h).view(f"<u{size}")[:, 0]
        return np.ascontiguousarray(word).view(dtype).reshape(len(h), width)
    return np.ascontiguousarray(pads[:, :width], dtype=dtype)


def _per_batch(blocks: int) -> int:
    """Vector OTs per batch: :data:`PAD_BLOCKS` hash blocks' worth (one OT at least, at most
    :data:`CHUNK_OTS`), so that a batch's pads stay a few MiB whatever the width."""
    return max(1, min(CHUNK_OTS, PAD_BLOCKS // blocks))


async def vector_ots_send(party: Party, session: ExtensionSender, delta: np.ndarray) -> np.ndarray:
    """Correlated OTs of vectors over a ring (``Z_{2^16}``, ``Z_{2^32}`` or ``Z_{2^64}``, the
    dtype of ``delta``) as the sender: ``delta`` is ``n x w``, one correlation vector per OT;
    returns the uniform ``x`` (``n x w``) such that the receiver gets ``x + bits * delta``.
    Each vector OT is one IKNP OT whose hashes are stretched to ``⌈w · itemsize / 16⌉``
    blocks under distinct tweaks (:class:`CorrelationRobustHash`): the pads ``x^0, x^1``.
    The sender sends ``τ = x^1 - x^0 - Δ``: ``w · itemsize`` bytes beside the 16 of the
    OT's column of ``u``. Ledger ``ot/vector`` (``ots``, ``width``)."""
    if delta.ndim != 2:
        raise ConfigError(f"delta must be an n x w array, got shape {delta.shape}")
    dtype = _ring_dtype(delta.dtype)
    n, w = delta.shape
    r = _blocks_per_ot(w, dtype)
    per = _per_batch(r)
    counts = split_batches(n, per)
    out = np.empty((n, w), dtype=dtype)

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
        part = slice(c * per, c * per + counts[c])
        x0 = _pads(h0, w, dtype)
        out[part] = x0
        tau = _pads(h1, w, dtype)
        tau -= x0
        tau -= delta[part]
        return tau

    await extend_as_sender(party, session, counts, answer, blocks=r)
    record_ots(party, "ot/vector", session, "sender", ots=n, width=w)
    return out


async def vector_ots_receive(
    party: Party, session: ExtensionReceiver, choices: Any, width: int, dtype: Any
) -> np.ndarray:
    """Correlated OTs of vectors as the receiver with ``choices`` (``n`` bits): ``y = x +
    choices * delta`` (``n x width``, in the ring of ``dtype``) for the sender's ``x`` and
    ``delta`` (:func:`vector_ots_send`)."""
    bits = choice_bits(choices, "choices")
    dt = _ring_dtype(dtype)
    w = check_count(width, "the width")
    n = len(bits)
    r = _blocks_per_ot(w, dt)
    per = _per_batch(r)
    counts = split_batches(n, per)
    out = np.empty((n, w), dtype=dt)

    def chosen(c: int) -> np.ndarray:
        return bits[c * per : c * per + counts[c]]

    def settle(c: int, _bits_c: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
        part = slice(c * per, c * per + counts[c])
        tau = check_array(tau, dt, (counts[c], w), session.peer, "the corrections τ", step)
        y = _pads(h, w, dt)
        y -= tau * bits[part, None].astype(dt)  # x^1 - τ = x^0 + Δ where the bit is 1
        out[part] = y

    await extend_as_receiver(party, session, counts, chosen, settle, blocks=r)
    record_ots(party, "ot/vector", session, "receiver", ots=n, width=w)
    return out


def _one_hot_batches(n: int, s: int, blocks: int) -> tuple[int, list[int]]:
    """Rows per batch of :func:`one_hot_products_send` (``s`` OTs a row, one at least) and the
    rows of each batch."""
    per = max(1, PAD_BLOCKS // (blocks * s))
    return per, split_batches(n, per)


def _add_by_group(out: np.ndarray, x: np.ndarray, first: int, group: int) -> None:
    """``out[g] += `` the rows of ``x`` (rows ``first..`` of the whole) in group ``g``
    (consecutive runs of ``group`` rows)."""
    row, end = first, first + len(x)
    while row < end:
        g = row // group
        stop = min(end, (g + 1) * group)
        out[g] += x[row - first : stop - first].sum(axis=0, dtype=out.dtype)
        row = stop


async def one_hot_products_send(
    party: Party,
    session: ExtensionSender,
    D: np.ndarray,
    s: int,
    *,
    take: np.ndarray | None = None,
    group: int | None = None,
) -> np.ndarray:
    """Products of one-hot rows and vectors, as the side holding the vectors: ``D`` is
    ``N x w`` (a ring dtype) and row ``i`` of the product uses ``D[take[i]]`` (``take``:
    ``n`` row numbers, ``range(N)`` by default); the receiver
    (:func:`one_hot_products_receive`) holds ``n`` choices ``v_i`` in ``[0, s)``. The two
    outputs add up to ``e_{v_i} ⊗ D[take[i]]`` (``n x s x w``), or with ``group`` to their
    sums over consecutive runs of ``group`` rows (``n / group x s x w``).

    ``s`` OTs a row and one vector of ``w`` elements: the ``s`` OTs give this side the
    stretched pads ``x_j = x_j^1`` (its shares are ``-x_j``); the receiver chooses 1 in all
    but OT ``v_i``, so it holds every ``x_j`` but ``x_{v_i}``; this side sends ``c = D[.] +
    Σ_j x_j`` and the receiver's row ``v_i`` is ``c - Σ_{j ≠ v_i} x_j = D[.] + x_{v_i}``. The
    receiver never sees ``x_{v_i}``, so ``c`` is uniform to it; the choices are hidden by the
    OTs. Against one vector OT per entry of the one-hot row (``s`` vectors of ``w`` sent a
    row), the vector crosses once: ``16 s + w l`` bytes a row instead of ``s (16 + w l)``
    (``l`` bytes an element), the better for ``s >= 3`` and ``w l > 16``."""
    if D.ndim != 2 or s < 1:
        raise ConfigError(f"D must be N x w and s >= 1, got shape {D.shape}, s={s}")
    dtype = _ring_dtype(D.dtype)
    w = D.shape[1]
    take = np.arange(len(D)) if take is None else np.asarray(take)
    n = len(take)
    if group is not None and (group < 1 or n % group):
        raise ConfigError(f"{n} rows do not fall into groups of {group}")
    r = _blocks_per_ot(w, dtype)
    per, counts = _one_hot_batches(n, s, r)
    out = np.zeros((n // group, s, w) if group else (n, s, w), dtype=dtype)

    def answer(c: int, _h0: np.ndarray | None, h1: np.ndarray) -> np.ndarray:
        first = c * per
        x = _pads(h1, w, dtype).reshape(counts[c], s, w)
        corrections = D[take[first : first + counts[c]]] + x.sum(axis=1, dtype=dtype)
        np.negative(x, out=x)
        if group:
            _add_by_group(out, x, first, group)
        else:
            out[first : first + counts[c]] = x
        return corrections

    await extend_as_sender(party, session, [s * k for k in counts], answer, blocks=r,
                            ones_only=True)  # fmt: skip
    record_ots(party, "ot/one-hot", session, "sender", rows=n, values=s, width=w)
    return out


async def one_hot_products_receive(
    party: Party,
    session: ExtensionReceiver,
    v: np.ndarray,
    s: int,
    width: int,
    dtype: Any,
    *,
    group: int | None = None,
) -> np.ndarray:
    """The chooser's side of :func:`one_hot_products_send`: ``v`` (``n`` integers in ``[0,
    s)``); returns this side's shares (``n x s x width``, or their sums by ``group``)."""
    v = np.asarray(v)
    if v.ndim != 1 or (len(v) and (v.min() < 0 or v.max() >= s)):
        raise ConfigError(f"the choices must be a 1-d array of integers in [0, {s})")
    dt = _ring_dtype(dtype)
    w = check_count(width, "the width")
    n = len(v)
    if group is not None and (group < 1 or n % group):
        raise ConfigError(f"{n} rows do not fall into groups of {group}")
    r = _blocks_per_ot(w, dt)
    per, counts = _one_hot_batches(n, s, r)
    out = np.zeros((n // group, s, w) if group else (n, s, w), dtype=dt)
    values = np.arange(s)

    def chosen(c: int) -> np.ndarray:
        rows = v[c * per : c * per + counts[c]]
        return (values[None, :] != rows[:, None]).reshape(-1).astype(np.uint8)

    def settle(c: int, _bits_c: np.ndarray, h: np.ndarray, corr: Any, step: str) -> None:
        first, k = c * per, counts[c]
        corr = check_array(corr, dt, (k, w), session.peer, "the corrections c", step)
        y = _pads(h, w, dt).reshape(k, s, w)
        rows, mine = np.arange(k), v[first : first + k]
        y[rows, mine] = 0
        y[rows, mine] = corr - y.sum(axis=1, dtype=dt)
        if group:
            _add_by_group(out, y, first, group)
        else:
            out[first : first + k] = y

    await extend_as_receiver(party, session, [s * k for k in counts], chosen, settle, blocks=r)
    record_ots(party, "ot/one-hot", session, "receiver", rows=n, values=s, width=w)
    return out


def _pieces(n_groups: int, per_group: int) -> list[slice]:
    """Groups in pieces of at most :data:`PIECE_ELEMENTS` correlation elements (at least one
    group a piece)."""
    step = max(1, PIECE_ELEMENTS // max(1, per_group))
    return [slice(s, min(n_groups, s + step)) for s in range(0, n_groups, step)]


async def ring_products_send(
    party: Party, session: ExtensionSender, Y: np.ndarray, *, group: int = 1
) -> np.ndarray:
    """Gilboa products with vector correlations, in the ring of ``Y``'s dtype, as the side
    that holds the vectors: ``Y`` is ``n x w``; the receiver
    (:func:`ring_products_receive`) holds ``n`` scalars ``x``. The two outputs add up to
    ``x[i] * Y[i]``, summed over consecutive groups of ``group`` rows (``n / group x w``).
    One vector OT of width ``w`` per bit of each ``x[i]`` (``Δ = Y[i] 2^k``).

    In ``Z_{2^l}`` directly: the bits above ``l`` of ``x`` and the products would only add
    multiples of ``2^l``, so this equals the ``Z_{2^64}`` products of :func:`ot_multiply`
    truncated to ``l`` bits (``2^l`` divides ``2^64``), at ``l`` OTs a product instead of 64."""
    if Y.ndim != 2 or group < 1 or Y.shape[0] % group:
        raise ConfigError(f"Y must be n x w with n a multiple of group={group}, got {Y.shape}")
    dtype = _ring_dtype(Y.dtype)
    bits = dtype.itemsize * 8
    shifts = np.arange(bits, dtype=dtype)
    n, w = Y.shape
    out = np.empty((n // group, w), dtype=dtype)
    for piece in _pieces(n // group, group * bits * w):
        rows = Y[piece.start * group : piece.stop * group]
        delta = (rows[:, None, :] << shifts[None, :, None]).reshape(-1, w)
        x = await vector_ots_send(party, session, delta)
        out[piece] = -x.reshape(-1, group * bits, w).sum(axis=1, dtype=dtype)
    party.ledger.record("ot/ring-products", {"peer": session.peer, "role": "vectors",
                                             "products": n, "width": w, "group": group},
                        step=session.tag)  # fmt: skip
    return out


async def ring_products_receive(
    party: Party, session: ExtensionReceiver, x: np.ndarray, width: int, *, group: int = 1
) -> np.ndarray:
    """The scalar side of :func:`ring_products_send`: ``x`` (``n``, a ring dtype) chooses by
    its bits; returns this side's shares (``n / group x width``)."""
    if x.ndim != 1 or group < 1 or len(x) % group:
        raise ConfigError(f"x must be 1-d with a length a multiple of {group}, got {x.shape}")
    dtype = _ring_dtype(x.dtype)
    bits = dtype.itemsize * 8
    shifts = np.arange(bits, dtype=dtype)
    n = len(x)
    out = np.empty((n // group, width), dtype=dtype)
    for piece in _pieces(n // group, group * bits * width):
        rows = x[piece.start * group : piece.stop * group]
        chosen = ((rows[:, None] >> shifts[None, :]) & dtype.type(1)).reshape(-1)
        y = await vector_ots_receive(party, session, chosen, width, dtype)
        out[piece] = y.reshape(-1, group * bits, width).sum(axis=1, dtype=dtype)
    party.ledger.record("ot/ring-products", {"peer": session.peer, "role": "scalars",
                                             "products": n, "width": width, "group": group},
                        step=session.tag)  # fmt: skip
    return out
