"""Secure dot products by Du & Zhan's commodity server (Teng & Du's reference [3]): the method
``dealer`` of :mod:`protocols.primitives.dot_product`.

1. the dealer draws ``Ra`` (``m x n``), ``Rb`` (``n x l``), ``ra`` (``m x l``) uniformly mod
   ``2^64`` and sets ``rb = Ra Rb - ra``; it sends ``(Ra, ra)`` to Alice and ``(Rb, rb)`` to
   Bob. It receives nothing, so it learns nothing about the inputs;
2. Alice sends ``Â = A + Ra`` to Bob and Bob sends ``B̂ = B + Rb`` to Alice (one round);
3. Alice keeps ``U = ra - Ra B̂``, Bob ``V = Â B + rb``:
   ``U + V = ra - Ra B - Ra Rb + A B + Ra B + Ra Rb - ra = A B``;
4. to reveal, the other party sends its share (a third round).

Row-wise, the dealer deals ``Rb`` of shape ``m x n`` and ``rb = (Ra ∘ Rb) 1 - ra``; Alice
keeps ``U = ra - (Ra ∘ B̂) 1``, Bob ``V = (Â ∘ B) 1 + rb``.

Alice sees ``Ra``, ``ra`` and ``B + Rb`` with ``Rb`` uniform and unknown to her, so uniform
whatever ``B``; symmetrically for Bob (tested statistically). ``U`` is uniform (``ra`` is), and
so is ``V`` given Bob's view. Security needs a dealer that colludes with neither party.
The masks come from a cryptographic generator (AES-CTR keyed from ``secrets``), not from a
numpy generator: a statistical PRNG's state can be recovered from its outputs, and Bob sees
``A + Ra`` where ``A`` may be mostly zeros.

References: W. Du, Z. Zhan, *Building decision tree classifier on private data*, IEEE ICDM
Workshop on Privacy, Security and Data Mining 2002 (the commodity server); D. Beaver,
*Commodity-based cryptography*, STOC 1997.
"""

from __future__ import annotations

import numpy as np

from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.primitives.dot_product_base import (
    ALICE,
    DEALER,
    DotProductMethod,
    RandomWords,
    fields_of,
    reveal_products,
    row_sums,
)

__all__ = ["COMMODITY_SERVER", "DEALT", "MASKED", "CommodityServer"]

#: what a party receives
DEALT = uniform("dot-product/dealt", "the dealer's masks Ra, ra (alice) or Rb, rb (bob)")
MASKED = uniform("dot-product/masked", "the other party's matrix plus the dealer's mask")


class CommodityServer(DotProductMethod):
    """Du & Zhan's commodity server (see the module docstring)."""

    name = "dealer"
    help = "Du & Zhan's commodity server (a third process, the dealer)"
    trust = "semi-honest alice and bob; the commodity server colludes with neither"
    helper = DEALER

    async def deal(
        self, party: Party, shape: tuple[int, int, int], alice: str, bob: str, tag: str,
        words: RandomWords, rows: bool,
    ) -> None:  # fmt: skip
        await _deal(party, shape, alice, bob, tag, words, rows)

    async def compute(
        self, party: Party, M: np.ndarray, *, role: str, other: str, helper: str,
        reveal_to: str | None, tag: str, key_bits: int, words: RandomWords, rows: bool,
    ) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
        share, dims = await _dealer_method(party, M, role, other, helper, tag, rows)
        return await reveal_products(party, share, role, other, reveal_to, tag), dims


COMMODITY_SERVER = CommodityServer()


async def _deal(
    party: Party,
    shape: tuple[int, int, int],
    alice: str,
    bob: str,
    tag: str,
    words: RandomWords,
    rows: bool = False,
) -> None:
    m, n, ell = shape
    Ra = words(m * n).reshape(m, n)
    ra = words(m * ell).reshape(m, ell)
    if rows:
        Rb = words(m * n).reshape(m, n)
        rb = row_sums(Ra, Rb) - ra
    else:
        Rb = words(n * ell).reshape(n, ell)
        rb = Ra @ Rb - ra
    await party.send(alice, f"{tag}/dealer", {"Ra": pack_array(Ra), "ra": pack_array(ra)})
    await party.send(bob, f"{tag}/dealer", {"Rb": pack_array(Rb), "rb": pack_array(rb)})


async def _dealer_method(
    party: Party, M: np.ndarray, role: str, other: str, dealer: str, tag: str, rows: bool = False
) -> tuple[np.ndarray, tuple[int, int, int]]:
    got = fields_of(
        await party.recv(dealer, f"{tag}/dealer", DEALT), dealer, ("Ra", "ra", "Rb", "rb")
    )
    if role == ALICE:
        A = M
        m, n = A.shape
        Ra = unpack_array(got.get("Ra"), np.uint64, (m, n), dealer, "Ra")
        ra = unpack_array(got.get("ra"), np.uint64, (m, 1) if rows else (m, None), dealer, "ra")
        ell = ra.shape[1]
        await party.send(other, f"{tag}/masked", pack_array(A + Ra))
        B_hat = unpack_array(
            await party.recv(other, f"{tag}/masked", MASKED),
            np.uint64,
            (m, n) if rows else (n, ell),
            other,
            "B+Rb",
        )
        return ra - (row_sums(Ra, B_hat) if rows else Ra @ B_hat), (m, n, ell)
    B = M
    if rows:
        m, n = B.shape
        ell = 1
    else:
        n, ell = B.shape
    Rb = unpack_array(got.get("Rb"), np.uint64, B.shape, dealer, "Rb")
    rb = unpack_array(got.get("rb"), np.uint64, (m, 1) if rows else (None, ell), dealer, "rb")
    m = rb.shape[0]
    await party.send(other, f"{tag}/masked", pack_array(B + Rb))
    A_hat = unpack_array(
        await party.recv(other, f"{tag}/masked", MASKED), np.uint64, (m, n), other, "A+Ra"
    )
    return (row_sums(A_hat, B) if rows else A_hat @ B) + rb, (m, n, ell)
