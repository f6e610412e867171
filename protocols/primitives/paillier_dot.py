"""Secure dot products by Paillier encryption, with no third party: the method ``paillier`` of
:mod:`protocols.primitives.dot_product`. Alice holds a fresh Paillier key
(:mod:`mpc.crypto.paillier`):

1. Alice sends ``n`` and ``Enc(A_ji)`` for every entry (fresh randomness each) to Bob;
2. for every ``(j, k)`` Bob computes ``Enc(sum_i A_ji B_ik)`` homomorphically (over the
   integers: no wrap mod ``n``, see below), adds a mask ``M_jk = t_jk + 2^64 R_jk`` by
   multiplying with a fresh ``Enc(M_jk)`` (which also re-randomises the result) and sends it
   back; ``t_jk`` is uniform mod ``2^64`` (``0`` when Alice is to learn the product) and
   ``R_jk`` uniform below ``2^(κ + σ - 64)``, where ``2^κ > n (2^64 - 1)^2`` bounds every
   integer dot product and ``σ`` = :data:`STATISTICAL_SECURITY`;
3. Alice decrypts ``D_jk = (A B)_jk + M_jk`` and keeps ``U = D mod 2^64``; Bob keeps
   ``V = -t mod 2^64``;
4. to reveal to Bob, Alice sends ``U`` (a third round).

Both parties check ``2^(κ + σ + 1) <= 2^(bits - 1) < n``, so ``D`` never wraps mod ``n``.
Bob sees only ciphertexts under a key of at least ``key_bits`` bits. Alice sees ``D``, which
is within statistical distance ``2^-σ`` of ``M`` alone: she learns ``U`` and nothing about the
integer products beyond it. When both parties learn the products, Alice decrypts them in the
clear and sends them to Bob as they are (:data:`PRODUCTS`, declared).

Cost accounting: ``paillier_keygen``, ``paillier_enc``, ``paillier_mul`` (ciphertext times
plaintext scalar, ``m n l``; ``m n`` row-wise) and ``paillier_dec``. Slow (one 2048-bit
encryption per entry of Alice's matrix): small tables only.

References: P. Paillier, *Public-key cryptosystems based on composite degree residuosity
classes*, EUROCRYPT 1999; B. Goethals, S. Laur, H. Lipmaa, T. Mielikäinen, *On private scalar
product computation for privacy-preserving data mining*, ICISC 2004 (the scalar product by an
additive homomorphic cipher).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.paillier import PaillierPrivateKey, PaillierPublicKey
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import checked_shape, pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import declared, uniform
from protocols.primitives.dot_product_base import (
    ALICE,
    BOB,
    MPZ,
    SHARE,
    WORD,
    DotProductMethod,
    RandomWords,
    fields_of,
)

__all__ = [
    "ENCRYPTED",
    "PAILLIER",
    "PRODUCTS",
    "STATISTICAL_SECURITY",
    "PaillierProducts",
    "paillier_capacity_bits",
]

PRODUCTS = declared(
    "dot-product/products",
    "the products themselves, from alice (Paillier, when both parties learn them: alice "
    "decrypts them in the clear)",
)

ENCRYPTED = uniform(
    "dot-product/encrypted",
    "Paillier ciphertexts: Enc(A) with alice's public key (bob); Enc(A B + mask) (alice, "
    "who decrypts her share, or the products when she learns them)",
    public=("shape", "n"),
    elements=True,
    opens="dot-product/product",
)

#: σ: Alice's view of a masked product is within statistical distance 2^-σ of uniform.
STATISTICAL_SECURITY = 64


def paillier_capacity_bits(n: int) -> int:
    """Bits a Paillier plaintext needs for a masked dot product of length ``n``: ``κ + σ + 1``
    with ``2^κ > n (2^64 - 1)^2``. The modulus must have more bits than this."""
    kappa = (n * (WORD - 1) ** 2).bit_length()
    return kappa + STATISTICAL_SECURITY + 1


class PaillierProducts(DotProductMethod):
    """Paillier encryption, no third party (see the module docstring)."""

    name = "paillier"
    help = "two parties with homomorphic encryption (Paillier), no third party; small tables"
    trust = "semi-honest alice and bob; no third party"
    helper = None

    def check(self, n: int, key_bits: int) -> None:
        if paillier_capacity_bits(n) >= key_bits:
            raise ConfigError(
                f"dot product (paillier): vectors of length {n} need a modulus of more than "
                f"{paillier_capacity_bits(n)} bits, got key_bits={key_bits}"
            )

    async def compute(
        self, party: Party, M: np.ndarray, *, role: str, other: str, helper: str,
        reveal_to: str | None, tag: str, key_bits: int, words: RandomWords, rows: bool,
    ) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
        return await _paillier_method(party, M, role, other, reveal_to, tag, key_bits, words, rows)


PAILLIER = PaillierProducts()


async def _paillier_method(
    party: Party,
    M: np.ndarray,
    role: str,
    other: str,
    reveal_to: str | None,
    tag: str,
    key_bits: int,
    words: RandomWords,
    rows: bool = False,
) -> tuple[np.ndarray, tuple[int, int, int]]:
    alice_learns = reveal_to in (ALICE, "both")
    bob_learns = reveal_to in (BOB, "both")
    if role == ALICE:
        return await _alice(party, M, other, tag, key_bits, rows, bob_learns)
    return await _bob(party, M, other, tag, key_bits, words, rows, alice_learns, bob_learns)


async def _alice(
    party: Party, A: np.ndarray, other: str, tag: str, key_bits: int, rows: bool,
    bob_learns: bool,
) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
    """Alice's side: she makes the key, encrypts A and decrypts Enc(A B + mask)."""
    m, n = A.shape
    if paillier_capacity_bits(n) >= key_bits:
        raise ConfigError(
            f"dot product (paillier): vectors of length {n} need a modulus of more than "
            f"{paillier_capacity_bits(n)} bits, got key_bits={key_bits}"
        )
    key = await asyncio.to_thread(PaillierPrivateKey.generate, key_bits)
    pk = key.public_key
    party.metrics.count("paillier_keygen", 1)
    cs = await asyncio.to_thread(key.encrypt_many, A.reshape(-1).tolist())
    party.metrics.count("paillier_enc", m * n)
    body = {"n": pk.n, "shape": [m, n], "c": pack_array(pk.ciphertexts_to_array(cs))}
    await party.send(other, f"{tag}/enc", body)
    reply = fields_of(await party.recv(other, f"{tag}/enc", ENCRYPTED), other, ("shape", "c"))
    ell = checked_shape(
        reply.get("shape"), (m, 1) if rows else (m, None), other, "Enc(A B + mask)"
    )[1]
    cts = unpack_array(reply.get("c"), np.uint8, (m * ell, pk.ciphertext_bytes), other, "c")
    D = await asyncio.to_thread(key.decrypt_many, pk.ciphertexts_from_array(cts))
    party.metrics.count("paillier_dec", m * ell)
    limit = 1 << paillier_capacity_bits(n)  # D = (A B)_jk + M_jk < 2^κ + 2^(κ+σ)
    if any(d >= limit for d in D):
        raise ProtocolError(f"dot product (paillier): {other} sent a product out of range")
    U = np.array([int(d) % WORD for d in D], dtype=np.uint64).reshape(m, ell)
    if bob_learns:
        await party.send(other, f"{tag}/share", pack_array(U))
    return U, (m, n, ell)


async def _bob(
    party: Party, B: np.ndarray, other: str, tag: str, key_bits: int, words: RandomWords,
    rows: bool, alice_learns: bool, bob_learns: bool,
) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
    """Bob's side: he checks Alice's key and ciphertexts, combines them with B and masks."""
    m_b: int | None = None  # row-wise: Alice's row count must be Bob's
    if rows:
        m_b, n = B.shape
        ell = 1
    else:
        n, ell = B.shape
    body = fields_of(await party.recv(other, f"{tag}/enc", ENCRYPTED), other, ("n", "shape", "c"))
    m = checked_shape(body.get("shape"), (m_b, n), other, "Enc(A)")[0]
    N = body.get("n")
    if isinstance(N, MPZ):
        N = int(N)
    if not isinstance(N, int) or isinstance(N, bool) or N.bit_length() < key_bits:
        raise ProtocolError(
            f"dot product (paillier): {other} sent a modulus of "
            f"{N.bit_length() if isinstance(N, int) else N!r} bits; this run needs "
            f"key_bits >= {key_bits}"
        )
    pk = PaillierPublicKey(N)
    if paillier_capacity_bits(n) >= pk.bits:
        raise ProtocolError(
            f"dot product (paillier): {other}'s {pk.bits}-bit modulus is too small for "
            f"vectors of length {n} (needs more than {paillier_capacity_bits(n)} bits)"
        )
    cs = pk.ciphertexts_from_array(
        unpack_array(body.get("c"), np.uint8, (m * n, pk.ciphertext_bytes), other, "c")
    )
    if rows:  # row j of A with row j of B
        own_rows = [B[j].tolist() for j in range(m)]

        def combine() -> list[Any]:
            return [
                pk.raw_linear_combination(cs[j * n : (j + 1) * n], own_rows[j]) for j in range(m)
            ]
    else:  # row j of A with column k of B
        columns = [B[:, k].tolist() for k in range(ell)]

        def combine() -> list[Any]:
            return [
                pk.raw_linear_combination(cs[j * n : (j + 1) * n], columns[k])
                for j in range(m)
                for k in range(ell)
            ]

    C = await asyncio.to_thread(combine)
    party.metrics.count("paillier_mul", m * n * ell)
    t = np.zeros(m * ell, dtype=np.uint64) if alice_learns else words(m * ell)
    high = paillier_capacity_bits(n) - 1 - 64  # R < 2^(κ + σ - 64)
    masks = [int(ti) + (randomness.randbits(high, f"{tag}/mask") << 64) for ti in t.tolist()]
    fresh = await asyncio.to_thread(pk.encrypt_many, masks)  # also re-randomises C
    party.metrics.count("paillier_enc", m * ell)
    out = [c * e % pk.n_sq for c, e in zip(C, fresh, strict=True)]
    await party.send(
        other, f"{tag}/enc", {"shape": [m, ell], "c": pack_array(pk.ciphertexts_to_array(out))}
    )
    V = (np.uint64(0) - t).reshape(m, ell)
    if bob_learns:  # when alice learns them too, t = 0 and she sends the products themselves
        receipt = PRODUCTS if alice_learns else SHARE
        U = unpack_array(
            await party.recv(other, f"{tag}/share", receipt), np.uint64, (m, ell), other, "U"
        )
        return U + V, (m, n, ell)
    return V, (m, n, ell)
