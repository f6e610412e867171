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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto.prg import os_random_words
from mpc.errors import ConfigError
from mpc.runtime.party import Party
from protocols.ot.checks import check_count
from protocols.ot.iknp import (
    CHUNK_OTS,
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
    a, b = os_random_words(n), os_random_words(n)
    mine = np.concatenate([a, b] if role == "A" else [b, a])  # A: Δ = a_0, b_0; B: bits of b_1, a_1
    z = await ot_multiply(party, peer, mine, role, session=session, tag=tag)
    c = a * b + z[:n] + z[n:]
    party.metrics.count("beaver_triples", n)
    party.ledger.record("ot/beaver", {"peer": peer, "role": role, "triples": n}, step=tag)
    return BeaverTriples(a, b, c)
