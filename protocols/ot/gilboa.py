"""Products by oblivious transfer over ``Z_{2^64}``, on the correlated OTs of
:mod:`protocols.ot.iknp`.

**Gilboa multiplication** (:func:`ot_multiply`; Gilboa, CRYPTO 1999): party A holds ``a``, B
holds ``b``; one correlated OT per bit ``b_k`` of B's value with ``Δ = a 2^k`` gives B
``Σ_k y_k`` and A ``-Σ_k x_k``, additive shares of ``a b`` mod ``2^64``. **Beaver triples**
(:func:`beaver_triples`; Beaver, CRYPTO 1991): each party draws ``a_i, b_i``; the two cross
products ``a_0 b_1`` and ``b_0 a_1`` go through one batch of Gilboa products, and
``c_i = a_i b_i + (its shares of the cross products)``.

A product takes 64 correlated OTs: 1,536 bytes (1,024 + 512) plus a few bytes of message
framing; a Beaver triple two products.

References: N. Gilboa, *Two party RSA key generation*, CRYPTO 1999 (the products); D. Beaver,
*Efficient multiparty protocols using circuit randomization*, CRYPTO 1991 (the triples); Y.
Ishai, J. Kilian, K. Nissim, E. Petrank, *Extending oblivious transfers efficiently*, CRYPTO
2003 (the correlated OTs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.errors import ConfigError
from mpc.runtime.party import Party
from protocols.ot.checks import check_array, check_count
from protocols.ot.iknp import (
    CHUNK_OTS,
    PAD_BLOCKS,
    ExtensionReceiver,
    ExtensionSender,
    Role,
    cot_answer,
    cot_settle,
    extend_as_receiver,
    extend_as_sender,
    extension_receiver,
    extension_sender,
    ring_vector,
    split_batches,
)

#: Bits of the ring ``Z_{2^64}`` of :func:`ot_multiply`: one correlated OT per bit.
RING_BITS = 64


#: Products per batch of :func:`ot_multiply` (``RING_BITS`` OTs each).
CHUNK_PRODUCTS = CHUNK_OTS // RING_BITS


_SHIFTS = np.arange(RING_BITS, dtype=np.uint64)


async def ot_multiply(
    party: Party,
    peer: str,
    values: np.ndarray,
    role: Role,
    *,
    session: ExtensionSender | ExtensionReceiver | None = None,
    tag: str = "ot/mul",
) -> np.ndarray:
    """Additive shares mod ``2^64`` of the elementwise product of A's ``values`` and B's
    ``values`` (1-d uint64 arrays of the same, public length ``n``): A's and B's outputs add up
    to ``a * b`` (wrapping). ``role`` is ``"A"`` (the extension sender: its value is the
    correlation) or ``"B"`` (the extension receiver: the bits of its value choose).

    ``64 n`` correlated OTs, 1,536 bytes per product; without a ``session`` it first sets one
    up with ``peer`` under ``tag`` (128 base OTs, one more round trip). The batches travel
    under the session's tag; ``tag`` also names the ledger entry."""
    values = ring_vector(values, "values")
    n = len(values)
    if role not in ("A", "B"):
        raise ConfigError(f"role must be 'A' (the value of Δ) or 'B' (the bits), got {role!r}")
    sizes = [RING_BITS * k for k in split_batches(n, CHUNK_PRODUCTS)]
    shares = np.empty(n, dtype=np.uint64)

    def part(c: int) -> slice:
        return slice(c * CHUNK_PRODUCTS, c * CHUNK_PRODUCTS + sizes[c] // RING_BITS)

    if role == "A":
        sender = await extension_sender(party, peer, tag=tag) if session is None else session
        if not isinstance(sender, ExtensionSender) or sender.peer != peer:
            raise ConfigError(f"role A needs an ExtensionSender session with {peer}, got {sender}")

        def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
            delta = (values[part(c), None] << _SHIFTS).reshape(-1)  # a 2^k, wrapping
            x, tau = cot_answer(delta, h0, h1)
            shares[part(c)] = -x.reshape(-1, RING_BITS).sum(axis=1, dtype=np.uint64)
            return tau

        await extend_as_sender(party, sender, sizes, answer)
    else:
        receiver = await extension_receiver(party, peer, tag=tag) if session is None else session
        if not isinstance(receiver, ExtensionReceiver) or receiver.peer != peer:
            raise ConfigError(
                f"role B needs an ExtensionReceiver session with {peer}, got {receiver}"
            )

        def choices(c: int) -> np.ndarray:
            bits = (values[part(c), None] >> _SHIFTS) & np.uint64(1)
            return bits.astype(np.uint8).reshape(-1)

        def settle(c: int, bits: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
            y = cot_settle(bits, h, tau, peer, step)
            shares[part(c)] = y.reshape(-1, RING_BITS).sum(axis=1, dtype=np.uint64)

        await extend_as_receiver(party, receiver, sizes, choices, settle)
    party.metrics.count("ot_products", n)
    party.ledger.record("ot/multiply", {"peer": peer, "role": role, "products": n}, step=tag)
    return shares


@dataclass(frozen=True, repr=False)
class BeaverTriples:
    """One party's additive shares mod ``2^64`` of ``n`` triples ``(a, b, c = a b)``: three
    uint64 arrays. ``repr`` shows the count, never a share."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    def __len__(self) -> int:
        return len(self.a)

    def __repr__(self) -> str:
        return f"BeaverTriples(n={len(self)})"


async def beaver_triples(
    party: Party,
    peer: str,
    n: int,
    *,
    session: ExtensionSender | ExtensionReceiver | None = None,
    tag: str = "ot/beaver",
) -> BeaverTriples:
    """``n`` Beaver triples shared with ``peer``: each party draws its shares ``a_i, b_i``
    uniformly; the cross products ``a_0 b_1`` and ``b_0 a_1`` are one :func:`ot_multiply` of
    ``2n`` products in which party 0 (the first of the two in the deployment order, or the
    holder of an :class:`ExtensionSender` ``session``) is A. ``2 * 64 * n`` correlated OTs."""
    n = check_count(n, "the number of triples n")
    if session is not None:
        role: Role = "A" if isinstance(session, ExtensionSender) else "B"
    else:
        role = "A" if party.parties.index(party.name) < party.parties.index(peer) else "B"
    a, b = randomness.words(n, f"{tag}/a"), randomness.words(n, f"{tag}/b")
    mine = np.concatenate([a, b] if role == "A" else [b, a])  # A: Δ = a_0, b_0; B: bits of b_1, a_1
    z = await ot_multiply(party, peer, mine, role, session=session, tag=tag)
    c = a * b + z[:n] + z[n:]
    party.metrics.count("beaver_triples", n)
    party.ledger.record("ot/beaver", {"peer": peer, "role": role, "triples": n}, step=tag)
    return BeaverTriples(a, b, c)


# ----------------------------------------------------------------------------- wider rings


def _limb_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` mod ``2^(64 L)`` for ``(m, L)`` little-endian ``uint64`` limbs."""
    out = a + b
    carry = out < a
    for j in range(1, a.shape[1]):
        cin = carry[:, j - 1]
        out[:, j] += cin.astype(np.uint64)
        carry[:, j] |= cin & (out[:, j] == 0)
    return out


def _limb_neg(a: np.ndarray) -> np.ndarray:
    one = np.zeros_like(a)
    one[:, 0] = 1
    return _limb_add(~a, one)


def _limb_shl(a: np.ndarray, k: int) -> np.ndarray:
    """``a · 2^k`` mod ``2^(64 L)``."""
    q, r = divmod(k, 64)
    L = a.shape[1]
    out = np.zeros_like(a)
    if q >= L:
        return out
    out[:, q:] = a[:, : L - q] << np.uint64(r)
    if r and q + 1 < L:
        out[:, q + 1 :] |= a[:, : L - q - 1] >> np.uint64(64 - r)
    return out


_LOW = np.uint64(0xFFFFFFFF)
_HALF = np.uint64(32)


def _limb_diff(a: np.ndarray, *less: np.ndarray) -> np.ndarray:
    """``a - Σ less`` mod ``2^(64 L)`` for ``(m, L)`` little-endian ``uint64`` limbs: limb by
    limb along contiguous copies of the columns, each limb's two 32-bit halves subtracted as
    signed 64-bit integers and the borrow carried on."""
    cols = [np.ascontiguousarray(x.T) for x in (a, *less)]
    out = np.empty_like(cols[0])
    borrow = np.zeros(a.shape[0], dtype=np.int64)
    for j in range(a.shape[1]):
        lo = (cols[0][j] & _LOW).astype(np.int64) + borrow
        hi = (cols[0][j] >> _HALF).astype(np.int64)
        for c in cols[1:]:
            lo -= (c[j] & _LOW).astype(np.int64)
            hi -= (c[j] >> _HALF).astype(np.int64)
        hi += lo >> 32
        borrow = hi >> 32
        out[j] = (lo.astype(np.uint64) & _LOW) | (hi.astype(np.uint64) << _HALF)
    return np.ascontiguousarray(out.T)


def _limb_sums(x: np.ndarray, k: int) -> np.ndarray:
    """The sums of every ``k`` consecutive rows of ``x`` (``(p k, L)`` limbs): ``(p, L)``.
    The 32-bit halves of each limb are summed down the rows at once (``k < 2^32`` keeps
    every column sum below ``2^64``), then one carry pass runs along the ``2 L`` halves."""
    rows = x.reshape(-1, k, x.shape[1])
    low = (rows & _LOW).sum(axis=1, dtype=np.uint64)
    high = (rows >> _HALF).sum(axis=1, dtype=np.uint64)
    out = np.empty_like(low)
    carry = np.zeros(len(low), dtype=np.uint64)
    for j in range(x.shape[1]):
        lo = low[:, j] + carry
        hi = high[:, j] + (lo >> _HALF)
        out[:, j] = (lo & _LOW) | (hi << _HALF)
        carry = hi >> _HALF
    return out


def _kept_limbs(bits: int) -> np.ndarray:
    """Which limbs of its correction each of a product's ``bits`` OTs sends: the ``k``-th
    works mod ``2^(bits - k)``, so its low ``⌈(bits - k) / 64⌉`` limbs (``bits x L``)."""
    limbs = bits // 64
    need = -(-(bits - np.arange(bits)) // 64)
    return np.arange(limbs)[None, :] < need[:, None]


def _shifted_sums(x: np.ndarray, bits: int) -> np.ndarray:
    """``Σ_k x_k 2^k`` mod ``2^bits`` for each product's ``bits`` rows of ``x`` (``(p bits,
    L)`` limbs, product-major)."""
    rows = x.reshape(-1, bits, x.shape[1])
    out = np.empty_like(rows)
    for k in range(bits):
        out[:, k] = _limb_shl(rows[:, k], k)
    return _limb_sums(out.reshape(-1, x.shape[1]), bits)


async def wide_ot_multiply(
    party: Party, peer: str, values: np.ndarray, role: Role, *, bits: int,
    session: ExtensionSender | ExtensionReceiver,
) -> np.ndarray:  # fmt: skip
    """:func:`ot_multiply` over ``Z_{2^bits}`` (``bits`` a multiple of 64): ``values`` are
    ``n x bits/64`` little-endian ``uint64`` limbs, as are the returned shares. Each product
    takes ``bits`` correlated OTs (one IKNP OT stretched to ``⌈bits/128⌉`` hash blocks of
    pad); the ``k``-th, for the bit of weight ``2^k``, carries ``a`` itself mod ``2^(bits -
    k)``, its correction ``τ = x^1 - x^0 - a`` cut to the limbs that hold that (the receiver's
    ``x^b - b τ`` is ``x^0 + b a`` there), and both parties weight their ``k``-th share by
    ``2^k``: the higher limbs vanish mod ``2^bits``. The corrections of a product are ``64
    L (L + 1) / 2`` limbs, not ``64 L²``, for ``L = bits / 64``."""
    limbs = bits // 64
    if bits % 64 or values.ndim != 2 or values.shape[1] != limbs:
        raise ConfigError(f"wide products need n x {limbs} limbs of a ring of 64 k bits")
    n = len(values)
    blocks = -(-bits // 128)
    per = max(1, min(CHUNK_OTS, PAD_BLOCKS // blocks) // bits)  # products per batch
    counts = split_batches(n, per)
    shares = np.empty_like(values)
    kept = _kept_limbs(bits)
    sent = int(kept.sum())  # limbs of correction per product

    def part(c: int) -> slice:
        return slice(c * per, c * per + counts[c])

    def pads(h: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.ascontiguousarray(h).view("<u8")[:, :limbs], np.uint64)

    sizes = [bits * m for m in counts]
    if role == "A":
        if not isinstance(session, ExtensionSender):
            raise ConfigError("role A sends: it needs an ExtensionSender session")

        def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
            delta = np.repeat(values[part(c)], bits, axis=0)
            x0 = pads(h0)
            shares[part(c)] = _limb_neg(_shifted_sums(x0, bits))
            tau = _limb_diff(pads(h1), x0, delta).reshape(counts[c], bits, limbs)
            return np.ascontiguousarray(tau[:, kept])

        await extend_as_sender(party, session, sizes, answer, blocks=blocks)
    else:
        if not isinstance(session, ExtensionReceiver):
            raise ConfigError("role B chooses: it needs an ExtensionReceiver session")
        b_bits = np.unpackbits(np.ascontiguousarray(values.astype("<u8")).view(np.uint8),
                               axis=1, bitorder="little")  # fmt: skip

        def choices(c: int) -> np.ndarray:
            return b_bits[part(c)].reshape(-1)

        def settle(c: int, chosen: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
            tau = check_array(tau, np.uint64, (counts[c], sent), peer, "τ", step)
            full = np.zeros((counts[c], bits, limbs), dtype=np.uint64)
            full[:, kept] = tau
            picked = np.where(chosen.astype(bool)[:, None], full.reshape(-1, limbs),
                              np.uint64(0))  # fmt: skip
            shares[part(c)] = _shifted_sums(_limb_diff(pads(h), picked), bits)

        await extend_as_receiver(party, session, sizes, choices, settle, blocks=blocks)
    party.metrics.count("ot_products", n)
    return shares


async def wide_beaver_triples(
    party: Party, peer: str, n: int, *, bits: int,
    session: ExtensionSender | ExtensionReceiver, tag: str = "ot/wide-beaver",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """:func:`beaver_triples` over ``Z_{2^bits}``: this party's ``a, b`` and its share of
    the cross products ``a_0 b_1 + a_1 b_0`` (by :func:`wide_ot_multiply`), as ``n x
    bits/64`` limbs; its ``c`` is that plus ``a b``, which the caller computes in the ring."""
    role: Role = "A" if isinstance(session, ExtensionSender) else "B"
    limbs = bits // 64
    a = randomness.words(n * limbs, f"{tag}/a").reshape(n, limbs)
    b = randomness.words(n * limbs, f"{tag}/b").reshape(n, limbs)
    mine = np.concatenate([a, b] if role == "A" else [b, a])
    z = await wide_ot_multiply(party, peer, mine, role, bits=bits, session=session)
    party.metrics.count("beaver_triples", n)
    return a, b, _limb_add(z[:n], z[n:])
