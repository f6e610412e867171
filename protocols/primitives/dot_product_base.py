"""What every method of secure dot products shares (:mod:`protocols.primitives.dot_product`):
the roles, the interface of a method (:class:`DotProductMethod`), the receipt of a share, the
opening of shares and the checks of what arrives.

A method computes, for Alice's ``A`` (``m x n``) and Bob's ``B`` (``n x l``), additive shares
of ``A B mod 2^64`` (or, row-wise, of ``(A ∘ B) 1``) and opens them to whom ``reveal_to``
names. Its module states what each party receives and learns; :data:`SHARE` is the share a
party receives when it learns the products.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gmpy2
import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.party import Party
from protocols.engine.opening import Pair, open_values, opening

__all__ = [
    "ALICE",
    "BOB",
    "DEALER",
    "MPZ",
    "SHARE",
    "WORD",
    "DotProductMethod",
    "RandomWords",
    "fields_of",
    "reveal_products",
    "row_sums",
]

ALICE, BOB, DEALER = "alice", "bob", "dealer"
WORD = 2**64
MPZ = type(gmpy2.mpz(0))

#: what a party receives when it learns the products: the other party's share
SHARE = opening(
    "dot-product/share",
    "the other party's share of the products (to the party that learns them)",
    opens="dot-product/product",
)

#: ``words(k)`` returns ``k`` independent uniform ``uint64`` values.
RandomWords = Callable[[int], np.ndarray]


class DotProductMethod:
    """One way to compute a batch of secure dot products between ``alice`` and ``bob``.

    ``name`` is its name on command lines and in deployment files; ``help`` one line for
    ``--help``; ``trust`` the assumption a run with it rests on; ``helper`` the role of a third
    party it needs (``"dealer"``) or None. A method with a helper implements :meth:`deal`, the
    helper's part of one batch; every method implements :meth:`compute`, Alice's and Bob's."""

    name: str = ""
    help: str = ""
    trust: str = ""
    helper: str | None = None

    def check(self, n: int, key_bits: int) -> None:
        """Refuse, before any party starts, a run this method cannot do (vectors of length
        ``n``, a key of ``key_bits``); nothing by default."""

    async def deal(
        self, party: Party, shape: tuple[int, int, int], alice: str, bob: str, tag: str,
        words: RandomWords, rows: bool,
    ) -> None:  # fmt: skip
        """The helper's part of one batch of the public ``shape`` ``(m, n, l)``."""
        raise ConfigError(f"dot product ({self.name}): this method has no helper")

    async def compute(
        self, party: Party, M: np.ndarray, *, role: str, other: str, helper: str,
        reveal_to: str | None, tag: str, key_bits: int, words: RandomWords, rows: bool,
    ) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
        """Alice's (``role`` ALICE, ``M = A``) or Bob's part: the products or this party's
        share as ``reveal_to`` says, and the shape ``(m, n, l)`` of the run."""
        raise NotImplementedError


def row_sums(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``(X ∘ Y) 1 mod 2^64`` as an ``m x 1`` column (uint64 products and sums wrap)."""
    return (X * Y).sum(axis=1, dtype=np.uint64, keepdims=True)


async def reveal_products(
    party: Party, share: np.ndarray, role: str, other: str, reveal_to: str | None, tag: str
) -> np.ndarray:
    """Open the products to the party (or both) ``reveal_to`` names, through the pair's door
    (:func:`protocols.engine.opening.open_values`: within the pair, the other's share).
    Returns the product, or this party's share where it does not learn them."""
    alice, bob = (party.name, other) if role == ALICE else (other, party.name)
    to = [n for r, n in ((ALICE, alice), (BOB, bob)) if reveal_to in (r, "both")]
    got = await open_values(Pair(party, alice, bob), share.reshape(-1), share.size, to=to,
                            tag=f"{tag}/share", receipt=SHARE)  # fmt: skip
    return share if got is None else got.reshape(share.shape)


def fields_of(body: object, sender: str, allowed: Sequence[str]) -> dict[str, Any]:
    if not isinstance(body, dict) or not set(body) <= set(allowed):
        raise ProtocolError(
            f"dot product: {sender} sent {type(body).__name__}; expected a map with keys "
            f"among {list(allowed)}"
        )
    return body
