"""Hybrid-ID3's secure dot products (Teng & Du, Section 3.1, step 5): one
:class:`DotSession` per tree runs every batch of dot products a level needs, by any method of
:data:`protocols.primitives.dot_product.METHODS`; :func:`serve_helper` is the commodity
server's side when the method has one.

Revealed: the helper learns the public shapes of every batch (from Alice and Bob, who must
agree) and nothing else; Alice and Bob both learn the dot products (the counts the paper
opens).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.errors import ProtocolError
from mpc.runtime.party import Party
from mpc.runtime.view import declared
from protocols.primitives.dot_product import dot_products, method_of

__all__ = ["ALICE", "BOB", "DEAL", "DEALER", "DotSession", "serve_helper"]

#: the roles of Hybrid-ID3's parties
ALICE, BOB, DEALER = "alice", "bob", "dealer"

DEAL = declared(
    "hybrid/deal", "the shapes of the next batch of dot products, or 'done' (the dealer)"
)


class DotSession:
    """Hybrid-ID3's secure dot products over one tree, batch after batch, by one ``method`` of
    :data:`protocols.primitives.dot_product.METHODS`; both Alice and Bob learn the counts.

    A method with a helper (the commodity server) is told the public shapes of every batch
    first: batches are numbered, and before batch ``i`` Alice and Bob each send the helper the
    shapes of their matrices (``{prefix}/b{i}/deal``), which :func:`serve_helper` answers with
    correlated randomness; :meth:`close` tells it that the tree is done. A method without one
    (Paillier, a fresh key per batch) just runs."""

    def __init__(
        self, method: str = "dealer", prefix: str = "", *, helper: str = DEALER,
        key_bits: int | None = None,
    ) -> None:  # fmt: skip
        self.method = method_of(method)
        self.prefix, self.helper, self.batch = prefix, helper, 0
        self.options: dict[str, Any] = {} if key_bits is None else {"key_bits": key_bits}

    async def __call__(self, party: Party, mats: list[np.ndarray], tag: str) -> list[np.ndarray]:
        if self.method.helper is not None:
            tag = f"{self.prefix}/b{self.batch}"
            self.batch += 1
            if party.name == ALICE:
                shapes = [[int(m.shape[0]), int(m.shape[1]), -1] for m in mats]
            else:
                shapes = [[-1, int(m.shape[0]), int(m.shape[1])] for m in mats]
            await party.send(self.helper, f"{tag}/deal", {"shapes": shapes})
        outs = await asyncio.gather(
            *(
                dot_products(
                    party,
                    m,
                    method=self.method.name,
                    reveal_to="both",
                    tag=f"{tag}/dot{i}",
                    dealer=self.helper,
                    record=False,
                    **self.options,
                )
                for i, m in enumerate(mats)
            )
        )
        return [o for o in outs if o is not None]

    async def close(self, party: Party) -> None:
        """Tell the helper, if the method has one, that the tree is done."""
        if self.method.helper is not None:
            await party.send(self.helper, f"{self.prefix}/b{self.batch}/deal", "done")


async def serve_helper(party: Party, prefixes: Sequence[str], method: str = "dealer") -> int:
    """The helper's side of :class:`DotSession` (a method with a helper), for the trees built
    with it in order (their prefixes). For every batch the helper learns the public shapes
    from Alice and Bob (they must agree) and deals correlated randomness; it never sees data.
    Returns the number of batches served."""
    served = 0
    for prefix in prefixes:
        batch = 0
        while True:
            t = f"{prefix}/b{batch}"
            a_req = await party.recv(ALICE, f"{t}/deal", DEAL)
            b_req = await party.recv(BOB, f"{t}/deal", DEAL)
            if a_req == "done" and b_req == "done":
                break
            shapes = _agreed_shapes(a_req, b_req)
            await asyncio.gather(
                *(
                    dot_products(
                        party, None, method=method, shape=s, tag=f"{t}/dot{i}", reveal_to="both"
                    )
                    for i, s in enumerate(shapes)
                )
            )
            batch += 1
            served += 1
    return served


def _agreed_shapes(a_req: Any, b_req: Any) -> list[tuple[int, int, int]]:
    try:
        a, b = a_req["shapes"], b_req["shapes"]
        if len(a) != len(b):
            raise ValueError(f"{len(a)} batches from alice, {len(b)} from bob")
        shapes = []
        for (m, n1, _), (_, n2, ell) in zip(a, b, strict=True):
            if int(n1) != int(n2) or min(int(m), int(n1), int(ell)) < 1:
                raise ValueError(f"alice's n = {n1}, bob's n = {n2}")
            shapes.append((int(m), int(n1), int(ell)))
        return shapes
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"dealer: alice and bob asked for different batches ({exc})") from None
