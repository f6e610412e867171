"""Products of one party's one-hot data, fixed for a session, and the other party's vectors,
by oblivious transfer with no third party: the *chooser* holds, for ``n`` records, one value
``v_{j,t}`` in ``[0, s_j)`` per attribute ``j`` (the one-hot rows ``X_j``, ``n x s_j``); the
*vector side* holds, at each use, an ``n x w`` matrix ``D`` over a ring ``Z_{2^l}``; the two
outputs add up to ``X^T D``, every attribute's ``s_j x w`` block (``Σ_t e_{v_{j,t}} ⊗ D[t]``).
PPID3's level driver computes an owner's counts ``X_s^T Z_h`` with it
(:mod:`protocols.engine.ot_dealing`): the owner's attribute values never change during a run,
only the holder's shares do.

**Setup, once per session** (:func:`one_hot_chooser`, :func:`one_hot_vectors`). The chooser
announces the sizes ``s_j`` (public), then one IKNP OT per (attribute, value, record) over a
session of :mod:`protocols.ot.iknp`, choosing ``[u ≠ v_{j,t}]`` for value ``u``:
``n Σ_j s_j`` OTs. Neither side hashes yet: each keeps its rows
(:func:`~protocols.ot.iknp.kept_rows_send`): the vector side ``q_i ⊕ s`` for every
OT ``i``, the chooser ``t_i`` where it chose 1 (there ``t_i = q_i ⊕ s``); where it chose 0
(``u = v_{j,t}``) it holds ``q_i`` and cannot form ``q_i ⊕ s`` without the sender's secret
``s``. Kept as ``π(row) ⊕ (i, 0)``: 16 bytes per OT at each side.

**A use** (:meth:`OneHotVectors.products`, :meth:`OneHotChooser.products`). Both sides reserve
the session's next batch number ``use``. The pad of OT ``i`` is ``w`` ring elements long, 16
bytes (``e`` elements) per block ``b``: ``x_i[b] = π_{use,b}(y_i) + y_i`` with ``y_i = π(q_i
⊕ s) ⊕ (i, 0)`` (kept), ``π`` the session's fixed-key AES and ``π_{use,b}`` AES under a key
hashed from the session key, ``use`` and ``b``
(:meth:`~protocols.ot.iknp.CorrelationRobustHash.rekeyed`); ``+`` adds the 16
bytes lane by lane in the ring (the Davies-Meyer feed-forward with addition, as in SHA-2's
compression function): the sums of the ``y_i``, the same at every use, are computed once.
For each attribute the vector side keeps ``-Σ_t x_{j,t,u}`` as its share of row ``u`` and
sends one *correction* per record, ``c_{j,t} = D[t] + Σ_u x_{j,t,u}``. The chooser knows every
pad of record ``t`` but ``x_{j,t,v}`` (``v = v_{j,t}``), so it sets row ``u ≠ v`` to
``x_{j,t,u}`` and row ``v`` to ``c_{j,t} - Σ_{u ≠ v} x_{j,t,u} = D[t] + x_{j,t,v}``: the two
rows add up to ``[u = v] D[t]``. Summed over the records: ``X_j^T D``. One message per
attribute, from the vector side: ``n w`` ring elements; nothing goes back.

This is the one-hot product of :func:`~protocols.ot.iknp.one_hot_products_send`
with its OTs made once and their pads stretched: every (use, block) has its own key, so the
pads of every use are independent and uniform, exactly as if each OT's pad were one long
vector cut into the uses' pieces (the way one IKNP OT is stretched to a wide pad in
:func:`~protocols.ot.iknp.vector_ots_send`). What makes this cheap: the ``16 n Σ
s_j`` bytes of IKNP matrix, the PRG, the bit transposes and the acknowledgements are paid once
per session instead of once per use; a use costs the pads (one AES block per 16 bytes of pad
at each side; the chooser skips the pad it cannot form) and ``n w l`` bytes per attribute.

**What each side learns.** The setup: the vector side receives the IKNP matrix ``u``, each
row masked by a PRG stream of a base-OT seed it lacks (uniform whatever the choices), and the
sizes ``s_j`` (public); the chooser receives acknowledgements. A use: the chooser receives
the corrections ``c_{j,t} = D[t] + Σ_u x_{j,t,u}``, each masked by the pad ``x_{j,t,v}`` that
the hash keeps from it (it would need ``s``), fresh for every use and every record:
uniform, whatever ``D`` and the choices. The vector side receives nothing. The outputs are
additive shares; the vector side's is ``-Σ_t x``, uniform to the chooser apart from what
the product gives it. (The chooser does know, per record, the vector side's pads of every
value but its own: those rows of the product are zero, and the pads are independent of
``D``.) Ledger: ``ot/one-hot-setup`` (``records``, ``sizes``) and
``ot/one-hot-use`` (``width``), with ``peer`` and ``role``, at both sides: sizes only.

Security assumptions: semi-honest parties; CDH on Curve25519 (the base OTs); AES-128 as a
pseudorandom generator (the IKNP expansion) and as an ideal cipher: ``π`` a random
permutation and ``π_K`` independent random permutations for the public keys ``K`` of the
uses and blocks, so that ``y ↦ π_K(y) + y`` is correlation robust (the re-keyed
Matyas-Meyer-Oseas / Davies-Meyer hash; the chooser would have to evaluate ``π`` at the
unknown ``q_i ⊕ s``). The chooser's values must not change during a session (new values need
a new session: reusing rows with new choices would need correcting choice bits, which this
module does not do). Not secure against an active party (:mod:`protocols.ot.iknp`).

Randomness: none is drawn here besides the session's (OS generator); every pad is a hash of
the session's rows. Both sides must call the uses of a session in the same order.

References: Y. Ishai, J. Kilian, K. Nissim, E. Petrank, *Extending oblivious transfers
efficiently*, CRYPTO 2003 (the OTs, made once, their pads stretched per use); C. Guo, J. Katz,
X. Wang, Y. Yu, *Efficient and secure multiparty computation from fixed-key block ciphers*,
IEEE S&P 2020 (the fixed-key hash).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.party import Party
from mpc.runtime.view import public, uniform
from protocols.ot.iknp import (
    BLOCK,
    ExtensionReceiver,
    ExtensionSender,
    kept_rows_receive,
    kept_rows_send,
)

#: what a party receives in a one-hot OT session
SIZES = public(
    "ot/one-hot-sizes", "the chooser's numbers of records and of values of its attributes"
)
CORRECTIONS = uniform(
    "ot/one-hot-corrections",
    "the vector side's corrections of a product, masked by OT pads",
)

__all__ = [
    "CORRECTIONS",
    "PAD_BYTES",
    "SIZES",
    "OneHotChooser",
    "OneHotVectors",
    "one_hot_chooser",
    "one_hot_vectors",
    "records_per_slice",
]

#: bytes of pads hashed by one AES call: one block of the pads of ``PAD_BYTES / 16`` kept rows
#: (:func:`records_per_slice`). The products go value by value and block by block, so that a
#: call's pads and the slice of corrections they are added to stay in the processor's cache
#: (512 KiB: the two make half of a 2 MiB L2), and each call hashes enough to make its own
#: cost small
PAD_BYTES = 2**19


def records_per_slice() -> int:
    """Kept rows hashed by one AES call: :data:`PAD_BYTES` of one block of their pads, 64
    rows at least."""
    return max(64, PAD_BYTES // BLOCK)


#: rings of the vectors: ``Z_{2^16}``, ``Z_{2^32}``, ``Z_{2^64}``
RINGS = (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))


def _ring(dtype: Any) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt not in RINGS:
        raise ConfigError(f"the vectors' ring must be one of {[str(d) for d in RINGS]}, got {dt}")
    return dt


def _sizes(sizes: Any, what: str) -> list[int]:
    if not (
        isinstance(sizes, list | tuple)
        and sizes
        and all(isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 1
                for s in sizes)
    ):  # fmt: skip
        raise ConfigError(f"{what} must be a non-empty list of integers >= 1, got {sizes!r:.80}")
    return [int(s) for s in sizes]


def _layout(cols: int, dtype: np.dtype[Any]) -> tuple[int, int]:
    """``(e, blocks)``: ring elements per 16-byte pad block, and the blocks of a width."""
    e = BLOCK // dtype.itemsize
    return e, max(1, -(-cols // e))


class _Pads:
    """The pads of one use without their feed-forward: block ``b`` of the pad of a kept row
    ``x`` is ``π_{use,b}(x) + x`` (:meth:`~protocols.ot.iknp.CorrelationRobustHash.
    rekeyed`, ``+`` lane by lane in the ring); :meth:`block` computes ``π_{use,b}(x)`` for a
    slice of rows into a buffer reused from slice to slice. The callers only ever need sums
    of pads, and the sums of the ``x`` are the same for every use and block: they are
    computed once (:func:`_lanes`) and added to the sums, which spares a pass over every
    pad."""

    def __init__(self, session: ExtensionSender | ExtensionReceiver, use: int, blocks: int,
                 dtype: np.dtype[Any]) -> None:  # fmt: skip
        self.dtype = dtype.newbyteorder("<")
        self.ciphers = [session.hash.rekeyed(use, b) for b in range(blocks)]
        self.records = records_per_slice()
        self.out = bytearray(self.records * BLOCK + BLOCK)
        self.view = memoryview(self.out)

    def block(self, b: int, x: np.ndarray) -> np.ndarray:
        """Block ``b`` of the pads of the kept rows ``x`` (``k x 2`` uint64, contiguous):
        ``(k, e)`` ring elements, valid until the next call."""
        k = len(x)
        if len(self.out) < k * BLOCK + BLOCK:
            self.out = bytearray(k * BLOCK + BLOCK)
            self.view = memoryview(self.out)
        # update_into asks for a block more room than the input, and writes the input's size
        self.ciphers[b].update_into(x.reshape(-1).view(np.uint8), self.view[: k * BLOCK + BLOCK])
        o = np.frombuffer(self.out, dtype=self.dtype, count=BLOCK // self.dtype.itemsize * k)
        return o.reshape(k, -1)


def _sum_rows(x: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    """The sum of the rows of ``x`` (``k x m``, contiguous) in the ring ``dt``: ``m``
    elements. Rows of a few elements are first laid side by side into rows of about 2,048
    (numpy adds long rows at memory speed, short ones an element at a time: 512 KiB of
    8-element rows in 30 us so, 220 us as they are)."""
    k, m = x.shape
    c = max(1, 2048 // max(1, m))
    full = k - k % c
    total = np.add.reduce(x[:full].reshape(-1, c * m), axis=0, dtype=dt)
    total = np.add.reduce(total.reshape(c, m), axis=0, dtype=dt)
    if full < k:
        total += np.add.reduce(x[full:], axis=0, dtype=dt)
    return total


def _lanes(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Kept rows (``... x 2`` uint64) as ``16 / l`` ring elements each (``... x e``)."""
    return np.ascontiguousarray(x).view(np.uint8).view(dtype.newbyteorder("<")).astype(dtype)


class OneHotVectors:
    """The vector side of a session (the IKNP sender): its kept rows of every OT, per
    attribute ``s_j x n``. Made by :func:`one_hot_vectors`; ``repr`` shows sizes only."""

    __slots__ = ("_rows", "_sums", "n", "session", "sizes", "starts")

    def __init__(self, session: ExtensionSender, sizes: Sequence[int], n: int,
                 kept: np.ndarray) -> None:  # fmt: skip
        self.session, self.sizes, self.n = session, list(sizes), n
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self._rows = [kept[self.starts[j] * n : self.starts[j + 1] * n].reshape(s, n, 2)
                      for j, s in enumerate(self.sizes)]  # fmt: skip
        self._sums: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"OneHotVectors(peer={self.session.peer!r}, sizes={self.sizes}, n={self.n})"

    def _feed_forward(self, j: int, dt: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray]:
        """The kept rows of attribute ``j`` summed over the records (``s_j x e``) and over
        the values (``n x e``), in the ring ``dt``: the same at every use."""
        key = (j, dt.str)
        if key not in self._sums:
            lanes = _lanes(self._rows[j], dt)  # (s, n, e)
            self._sums[key] = (lanes.sum(axis=1, dtype=dt), lanes.sum(axis=0, dtype=dt))
        return self._sums[key]

    async def products(self, party: Party, D: np.ndarray, *, tag: str) -> np.ndarray:
        """This side's additive share of ``X^T D^T`` (``Σ s_j x cols``) for ``D`` (``cols x
        n``, a ring dtype: the vectors of the records as columns); sends one correction
        message per attribute under ``<tag>/c<j>``."""
        dt = _ring(D.dtype)
        cols, n = D.shape
        if n != self.n:
            raise ConfigError(f"the vectors are {n} records long, the session's {self.n}")
        e, blocks = _layout(cols, dt)
        pads = _Pads(self.session, self.session.reserve(1), blocks, dt)
        wide = np.zeros((blocks * e, n), dtype=dt)
        wide[:cols] = D
        # [block][record][e]: column b e + i of record t at [b, t, i]
        d = np.ascontiguousarray(wide.reshape(blocks, e, n).transpose(0, 2, 1))
        out = np.empty((int(self.starts[-1]), blocks * e), dtype=dt)
        stride = pads.records
        for j, s in enumerate(self.sizes):
            rows = self._rows[j]
            by_value, by_record = self._feed_forward(j, dt)
            block = np.zeros((s, blocks, e), dtype=dt)
            corrections = d + by_record[None]  # D[t] + Σ_u x_{j,t,u}, the π(.) to come
            for u in range(s):
                for b in range(blocks):  # one block of every record's pad: contiguous rows
                    for start in range(0, n, stride):
                        x = pads.block(b, rows[u, start : start + stride])
                        corrections[b, start : start + stride] += x
                        block[u, b] += _sum_rows(x, dt)
            await party.send(self.session.peer, f"{tag}/c{j}", corrections)
            block += by_value[:, None, :]
            np.negative(block, out=block)
            out[self.starts[j] : self.starts[j + 1]] = block.reshape(s, -1)
        _use_record(party, self.session, "vectors", cols)
        return out[:, :cols]


class OneHotChooser:
    """The chooser of a session (the IKNP receiver): per attribute, the records grouped by
    their value, and the kept rows of the values each record did not choose
    (``s_j - 1`` per record). Made by :func:`one_hot_chooser`; never serialised; ``repr``
    shows sizes only."""

    __slots__ = ("_groups", "_order", "_runs", "_sums", "n", "session", "sizes", "starts")

    def __init__(self, session: ExtensionReceiver, sizes: Sequence[int], codes: np.ndarray,
                 kept: np.ndarray) -> None:  # fmt: skip
        self.session, self.sizes = session, list(sizes)
        n = self.n = codes.shape[0]
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self._groups: list[list[tuple[int, np.ndarray, np.ndarray]]] = []
        for j, s in enumerate(self.sizes):
            rows = kept[self.starts[j] * n : self.starts[j + 1] * n].reshape(s, n, 2)
            groups = []
            for v in range(s):
                idx = np.flatnonzero(codes[:, j] == v)
                if len(idx):  # [record][value u != v]: a slice of records is contiguous
                    others = [u for u in range(s) if u != v]
                    kept_v = np.ascontiguousarray(rows[others][:, idx].transpose(1, 0, 2))
                    groups.append((v, idx, kept_v))
            self._groups.append(groups)
        # the records sorted by value, and where each (non-empty) value's run starts
        self._order = [np.argsort(codes[:, j], kind="stable") for j in range(len(self.sizes))]
        self._runs = [np.concatenate([[0], np.cumsum([len(idx) for _, idx, _ in g])[:-1]])
                      for g in self._groups]  # fmt: skip
        self._sums: dict[tuple[int, int, str], np.ndarray] = {}

    def __repr__(self) -> str:
        return f"OneHotChooser(peer={self.session.peer!r}, sizes={self.sizes}, n={self.n})"

    def _feed_forward(self, j: int, g: int, dt: np.dtype[Any]) -> np.ndarray:
        """The kept rows of group ``g`` of attribute ``j`` summed over its records (``s_j - 1
        x e``), in the ring ``dt``: the same at every use."""
        key = (j, g, dt.str)
        if key not in self._sums:
            self._sums[key] = _lanes(self._groups[j][g][2], dt).sum(axis=0, dtype=dt)
        return self._sums[key]

    async def products(self, party: Party, cols: int, dtype: Any, *, tag: str) -> np.ndarray:
        """This side's additive share of ``X^T D^T`` (``Σ s_j x cols``) for the vector
        side's ``D`` (``cols x n``, ring ``dtype``), from its corrections ``<tag>/c<j>``."""
        dt = _ring(dtype)
        e, blocks = _layout(cols, dt)
        pads = _Pads(self.session, self.session.reserve(1), blocks, dt)
        peer = self.session.peer
        out = np.zeros((int(self.starts[-1]), blocks * e), dtype=dt)
        gathered = np.empty((blocks, self.n), dtype=np.complex128)  # reused: no page faults
        for j, s in enumerate(self.sizes):
            block = np.zeros((s, blocks, e), dtype=dt)
            others = s - 1
            stride = max(1, pads.records // max(1, others))  # records whose rows one call hashes
            for g, (v, idx, rows) in enumerate(self._groups[j]):
                if not others:
                    continue
                known = np.zeros((blocks, others * e), dtype=dt)  # Σ of each row's pads
                for b in range(blocks):
                    for start in range(0, len(idx), stride):
                        x = pads.block(b, rows[start : start + stride].reshape(-1, 2))
                        known[b] += _sum_rows(x.reshape(-1, others * e), dt)
                known = known.reshape(blocks, others, e)
                known += self._feed_forward(j, g, dt)[None]
                rest = [u for u in range(s) if u != v]
                block[rest] += known.transpose(1, 0, 2)
                block[v] -= known.sum(axis=1, dtype=dt)
            step = f"{tag}/c{j}"
            c = _corrections(await party.recv(peer, step, CORRECTIONS), dt, (blocks, self.n, e),
                             peer, step)  # fmt: skip
            # Σ of the corrections of each value's records: sorted by value (16-byte items
            # moved whole), then summed run by run
            items = np.ascontiguousarray(c).view(np.complex128).reshape(blocks, self.n)
            np.take(items, self._order[j], axis=1, out=gathered, mode="clip")  # unbuffered
            by_value = gathered.view(dt).reshape(blocks, -1, e)
            sums = np.add.reduceat(by_value, self._runs[j], axis=1, dtype=dt)
            for i, (v, _, _) in enumerate(self._groups[j]):
                block[v] += sums[:, i]
            out[self.starts[j] : self.starts[j + 1]] = block.reshape(s, -1)
        _use_record(party, self.session, "chooser", cols)
        return out[:, :cols]


def _corrections(
    got: Any, dtype: np.dtype[Any], shape: tuple[int, ...], peer: str, step: str
) -> np.ndarray:
    if not isinstance(got, np.ndarray) or got.dtype != dtype or got.shape != shape:
        what = (f"a {got.dtype} array of shape {got.shape}" if isinstance(got, np.ndarray)
                else type(got).__name__)  # fmt: skip
        raise ProtocolError(
            f"one-hot OT: {peer} sent, at {step}, {what} where the corrections were expected "
            f"(a {dtype} array of shape {shape}); the parties disagree about the sizes"
        )
    return got


def _use_record(party: Party, session: Any, role: str, cols: int) -> None:
    party.ledger.record("ot/one-hot-use", {"peer": session.peer, "role": role, "width": cols},
                        step=session.tag)  # fmt: skip


async def one_hot_chooser(
    party: Party, session: ExtensionReceiver, codes: np.ndarray, sizes: Sequence[int], *, tag: str
) -> OneHotChooser:
    """Set up a session as the chooser: ``codes`` (``n x J`` integers, column ``j`` in
    ``[0, sizes[j])``) are this side's values, fixed for the session. Announces ``sizes``
    (public) under ``<tag>/sizes``, then ``n Σ sizes`` OTs (:func:`kept_rows_receive`)."""
    sizes = _sizes(list(sizes), "sizes")
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] != len(sizes):
        raise ConfigError(f"codes must be n x {len(sizes)}, got shape {codes.shape}")
    n = codes.shape[0]
    if n and ((codes < 0).any() or (codes >= np.asarray(sizes)[None, :]).any()):
        raise ConfigError("every code must lie in [0, size) of its attribute")
    await party.send(session.peer, f"{tag}/sizes", {"sizes": sizes, "n": n})
    choices = np.concatenate(
        [(np.arange(s)[:, None] != codes[None, :, j]).reshape(-1) for j, s in enumerate(sizes)]
    ).astype(np.uint8)
    kept = await kept_rows_receive(party, session, choices)
    party.ledger.record("ot/one-hot-setup", {"peer": session.peer, "role": "chooser",
                                             "records": n, "sizes": sizes}, step=tag)  # fmt: skip
    return OneHotChooser(session, sizes, codes, kept)


async def one_hot_vectors(
    party: Party, session: ExtensionSender, n: int, *, tag: str
) -> OneHotVectors:
    """Set up a session as the vector side for ``n`` records: receives the chooser's sizes,
    then its OTs (:func:`kept_rows_send`)."""
    step = f"{tag}/sizes"
    got = await party.recv(session.peer, step, SIZES)
    if not (isinstance(got, dict) and got.get("n") == n and isinstance(got.get("sizes"), list)):
        raise ProtocolError(f"one-hot OT: {session.peer} announced, at {step}, {got!r:.120} "
                            f"(expected the sizes of its attributes over {n} records)")  # fmt: skip
    try:
        sizes = _sizes(got["sizes"], "the announced sizes")
    except ConfigError as exc:
        raise ProtocolError(f"one-hot OT: {session.peer} announced bad sizes: {exc}") from None
    kept = await kept_rows_send(party, session, n * sum(sizes))
    party.ledger.record("ot/one-hot-setup", {"peer": session.peer, "role": "vectors",
                                             "records": n, "sizes": sizes}, step=tag)  # fmt: skip
    return OneHotVectors(session, sizes, n, kept)
