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
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import uniform

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
    "open_shares",
    "row_sums",
]

ALICE, BOB, DEALER = "alice", "bob", "dealer"
WORD = 2**64
MPZ = type(gmpy2.mpz(0))

#: what a party receives when it learns the products: the other party's share
SHARE = uniform(
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


async def open_shares(
    party: Party, share: np.ndarray, role: str, other: str, reveal_to: str | None, tag: str
) -> np.ndarray:
    """Send this share to the other party if it learns the product; add the other's share
    if this party does. Returns the product or the share."""
    other_role = BOB if role == ALICE else ALICE
    if reveal_to in (other_role, "both"):
        await party.send(other, f"{tag}/share", pack_array(share))
    if reveal_to in (role, "both"):
        theirs = unpack_array(
            await party.recv(other, f"{tag}/share", SHARE), np.uint64, share.shape, other, "share"
        )
        return share + theirs
    return share


def fields_of(body: object, sender: str, allowed: Sequence[str]) -> dict[str, Any]:
    if not isinstance(body, dict) or not set(body) <= set(allowed):
        raise ProtocolError(
            f"dot product: {sender} sent {type(body).__name__}; expected a map with keys "
            f"among {list(allowed)}"
        )
    return body
