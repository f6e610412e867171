"""Secure dot products — the SMC building block of Teng & Du's Hybrid-ID3 (Section 2, "The SMC
Approach": ``N(E) = N(E_a ∧ E_b) = V_a · V_b``), batched so that one round serves many.

A batch is one matrix product: Alice's rows are her vectors, Bob's columns his, and entry
``(j, k)`` of ``A B`` is the dot product of Alice's ``j``-th and Bob's ``k``-th vector.

Roles: ``alice``, ``bob`` and, for the ``dealer`` method, a ``dealer`` (commodity server).

* Input: Alice holds ``A`` (``m x n``), Bob holds ``B`` (``n x l``); entries are integers mod
  ``2^64`` (``uint64``). Public: the method, the shape ``(m, n, l)``, who learns the product.
* Output: additive shares ``U`` (Alice) and ``V`` (Bob) with ``U + V = A B mod 2^64``; with
  ``reveal_to`` the named party (``"alice"``, ``"bob"`` or ``"both"``) gets ``A B mod 2^64``
  itself instead of its share. The dealer gets nothing.

Row-wise form (:func:`row_dot_products`): Alice and Bob each hold an ``m x n`` matrix and want
the ``m`` dot products of row ``i`` with row ``i`` (``(A ∘ B) 1``), one per record when every
record has its own pair of vectors (classifying new records, :mod:`protocols.hybrid.classify`).
It is the same protocol with every matrix product replaced by row-wise products: the dealer
deals ``Rb`` of shape ``m x n`` and ``rb = (Ra ∘ Rb) 1 - ra``; Alice keeps
``U = ra - (Ra ∘ B̂) 1``, Bob ``V = (Â ∘ B) 1 + rb``. The public shape is ``(m, n)``.

Method ``dealer`` — Du & Zhan's commodity-server scalar product (Teng & Du's reference [3]):

1. the dealer draws ``Ra`` (``m x n``), ``Rb`` (``n x l``), ``ra`` (``m x l``) uniformly mod
   ``2^64`` and sets ``rb = Ra Rb - ra``; it sends ``(Ra, ra)`` to Alice and ``(Rb, rb)`` to
   Bob. It receives nothing, so it learns nothing about the inputs;
2. Alice sends ``Â = A + Ra`` to Bob and Bob sends ``B̂ = B + Rb`` to Alice (one round);
3. Alice keeps ``U = ra - Ra B̂``, Bob ``V = Â B + rb``:
   ``U + V = ra - Ra B - Ra Rb + A B + Ra B + Ra Rb - ra = A B``;
4. to reveal, the other party sends its share (a third round).

Alice sees ``Ra``, ``ra`` and ``B + Rb`` with ``Rb`` uniform and unknown to her, so uniform
whatever ``B``; symmetrically for Bob (tested statistically). ``U`` is uniform (``ra`` is), and
so is ``V`` given Bob's view. Security needs a dealer that colludes with neither party.
The masks come from a cryptographic generator (AES-CTR keyed from ``secrets``), not from a
numpy generator: a statistical PRNG's state can be recovered from its outputs, and Bob sees
``A + Ra`` where ``A`` may be mostly zeros.

Method ``paillier`` — no third party; Alice holds a fresh Paillier key (:mod:`mpc.crypto.paillier`):

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
integer products beyond it.

Leakage (ledger): every party records the public shape (``dot-product/shape``, or
``dot-product/row-shape`` for the row-wise form); a party that learns the product records it
(``dot-product/product``). Shares, masked matrices and
ciphertexts are not learned values (receipts ``dot-product/dealt``, ``/masked``, ``/share``,
``/encrypted``: uniform). With Paillier and both parties learning the products, Alice decrypts
them in the clear and sends them to Bob as they are (receipt ``dot-product/products``,
declared). The dealer's ledger holds the shape only.

Cost accounting: Alice and Bob each count ``m * l`` ``dot_products`` (``m`` in the row-wise
form); the Paillier method also counts ``paillier_keygen``, ``paillier_enc``, ``paillier_mul``
(ciphertext times plaintext scalar, ``m n l``; ``m n`` row-wise) and ``paillier_dec``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import gmpy2
import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.crypto.paillier import PAILLIER_KEY_BITS, PaillierPrivateKey, PaillierPublicKey
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import checked_shape, pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import declared, uniform

#: what a party receives
DEALT = uniform("dot-product/dealt", "the dealer's masks Ra, ra (alice) or Rb, rb (bob)")
MASKED = uniform("dot-product/masked", "the other party's matrix plus the dealer's mask")
SHARE = uniform(
    "dot-product/share",
    "the other party's share of the products (to the party that learns them)",
    opens="dot-product/product",
)
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

__all__ = [
    "ALICE",
    "BOB",
    "DEALER",
    "METHODS",
    "REVEAL",
    "STATISTICAL_SECURITY",
    "dot_product",
    "dot_products",
    "os_random_words",
    "paillier_capacity_bits",
    "row_dot_products",
]

ALICE, BOB, DEALER = "alice", "bob", "dealer"
METHODS = ("dealer", "paillier")
REVEAL = ("alice", "bob", "both", None)
#: σ: Alice's view of a masked product is within statistical distance 2^-σ of uniform.
STATISTICAL_SECURITY = 64
_WORD = 2**64
_MPZ = type(gmpy2.mpz(0))

#: ``words(k)`` returns ``k`` independent uniform ``uint64`` values.
RandomWords = Callable[[int], np.ndarray]


def os_random_words(k: int) -> np.ndarray:
    """``k`` uniform ``uint64`` values from a cryptographic generator: the AES-256-CTR
    keystream under a fresh key and nonce from the OS CSPRNG (``secrets``), several GB/s
    where reading the OS generator itself manages a few hundred MB/s."""
    cipher = Cipher(algorithms.AES(secrets.token_bytes(32)), modes.CTR(secrets.token_bytes(16)))
    out = bytearray(8 * k + 15)  # update_into wants room for a block more
    n = cipher.encryptor().update_into(bytes(8 * k), out)
    return np.frombuffer(out, dtype="<u8", count=n // 8).astype(np.uint64, copy=False)


def paillier_capacity_bits(n: int) -> int:
    """Bits a Paillier plaintext needs for a masked dot product of length ``n``: ``κ + σ + 1``
    with ``2^κ > n (2^64 - 1)^2``. The modulus must have more bits than this."""
    kappa = (n * (_WORD - 1) ** 2).bit_length()
    return kappa + STATISTICAL_SECURITY + 1


async def dot_products(
    party: Party,
    X: Any = None,
    *,
    method: str = "dealer",
    shape: Sequence[int] | None = None,
    reveal_to: str | None = "alice",
    tag: str = "dot-product",
    alice: str = ALICE,
    bob: str = BOB,
    dealer: str = DEALER,
    key_bits: int = PAILLIER_KEY_BITS,
    record: bool = True,
    random_words: RandomWords | None = None,
) -> np.ndarray | None:
    """All dot products of Alice's rows with Bob's columns, ``A B mod 2^64``.

    Alice passes ``A`` (``m x n``; a 1-D vector is one row), Bob ``B`` (``n x l``; a 1-D
    vector is one column), the dealer nothing but ``shape = (m, n, l)`` (Alice and Bob may
    pass it too, to have it checked). Returns, as an ``(m, l)`` ``uint64`` array, the product
    to a party named by ``reveal_to`` and the party's additive share to the other; the dealer
    gets ``None``. ``key_bits`` is the smallest Paillier modulus Bob accepts and the size
    Alice generates. ``record=False`` leaves the ledger to a composed protocol that records
    the opened values under its own labels. ``random_words`` replaces the OS randomness of
    the masks (tests of the uniformity check only).
    """
    return await _products(
        party, X, rows=False, method=method, shape=shape, reveal_to=reveal_to, tag=tag,
        alice=alice, bob=bob, dealer=dealer, key_bits=key_bits, record=record,
        random_words=random_words,
    )  # fmt: skip


async def row_dot_products(
    party: Party,
    X: Any = None,
    *,
    method: str = "dealer",
    shape: Sequence[int] | None = None,
    reveal_to: str | None = "alice",
    tag: str = "row-dot-product",
    alice: str = ALICE,
    bob: str = BOB,
    dealer: str = DEALER,
    key_bits: int = PAILLIER_KEY_BITS,
    record: bool = True,
    random_words: RandomWords | None = None,
) -> np.ndarray | None:
    """The dot product of row ``i`` of Alice's ``A`` with row ``i`` of Bob's ``B``, for every
    ``i``: ``(A ∘ B) 1 mod 2^64`` (the row-wise form of the module docstring).

    Alice and Bob each pass an ``m x n`` matrix (a 1-D vector is one row), the dealer only
    ``shape = (m, n)``. Returns, as a length-``m`` ``uint64`` array, the products to the party
    named by ``reveal_to`` and the party's additive share to the other; the dealer gets
    ``None``. The other options are those of :func:`dot_products`."""
    out = await _products(
        party, X, rows=True, method=method, shape=shape, reveal_to=reveal_to, tag=tag,
        alice=alice, bob=bob, dealer=dealer, key_bits=key_bits, record=record,
        random_words=random_words,
    )  # fmt: skip
    return None if out is None else out.reshape(-1)


async def _products(
    party: Party,
    X: Any,
    *,
    rows: bool,
    method: str,
    shape: Sequence[int] | None,
    reveal_to: str | None,
    tag: str,
    alice: str,
    bob: str,
    dealer: str,
    key_bits: int,
    record: bool,
    random_words: RandomWords | None,
) -> np.ndarray | None:
    """:func:`dot_products` (``rows=False``) or :func:`row_dot_products` (``rows=True``); the
    row-wise form runs as a product of shape ``(m, n, 1)`` whose Bob's matrix is ``m x n``."""
    if method not in METHODS:
        raise ConfigError(f"dot product: method must be one of {METHODS}, got {method!r}")
    if reveal_to not in REVEAL:
        raise ConfigError(f"dot product: reveal_to must be one of {REVEAL}, got {reveal_to!r}")
    roles = {alice: ALICE, bob: BOB} | ({dealer: DEALER} if method == "dealer" else {})
    role = roles.get(party.name)
    if role is None:
        raise ConfigError(
            f"dot product ({method}): party {party.name!r} is none of {sorted(roles)}"
        )
    expected = _check_shape(shape, rows)
    words = random_words or os_random_words
    label = "dot-product/row-shape" if rows else "dot-product/shape"
    with party.phase(tag):
        if role == DEALER:
            if expected is None:
                what = "(m, n)" if rows else "(m, n, l)"
                raise ConfigError(f"dot product: the dealer needs the public shape {what}")
            await _deal(party, expected, alice, bob, tag, words, rows)
            if record:
                party.ledger.record(label, list(expected[:2] if rows else expected), step=tag)
            return None
        M = _as_matrix(X, role, rows)
        if expected is not None:
            want = expected[:2] if role == ALICE or rows else expected[1:]
            if M.shape != want:
                public = f"(m, n) = {expected[:2]}" if rows else f"(m, n, l) = {expected}"
                raise ConfigError(
                    f"dot product: {party.name}'s matrix has shape {M.shape}, but the public "
                    f"shape {public} needs {want}"
                )
        other = bob if role == ALICE else alice
        if method == "dealer":
            share, dims = await _dealer_method(party, M, role, other, dealer, tag, rows)
            out = await _open_shares(party, share, role, other, reveal_to, tag)
        else:
            out, dims = await _paillier_method(
                party, M, role, other, reveal_to, tag, key_bits, words, rows
            )
        if expected is not None and dims != expected:
            raise ProtocolError(
                f"dot product: the run had shape (m, n, l) = {dims}, expected {expected}"
            )
        party.metrics.count("dot_products", dims[0] * dims[2])
        if record:
            party.ledger.record(label, list(dims[:2] if rows else dims), step=tag)
            if reveal_to in (role, "both"):
                party.ledger.record("dot-product/product", out, step=tag)
        return out


async def dot_product(party: Party, v: Any = None, **options: Any) -> int | None:
    """One dot product of Alice's and Bob's vectors (length ``n``): :func:`dot_products`
    with ``m = l = 1``; returns the product, or this party's share, as an int."""
    out = await dot_products(party, v, **options)
    return None if out is None else int(out[0, 0])


def _row_sums(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``(X ∘ Y) 1 mod 2^64`` as an ``m x 1`` column (uint64 products and sums wrap)."""
    return (X * Y).sum(axis=1, dtype=np.uint64, keepdims=True)


# --------------------------------------------------------------------------- dealer


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
        rb = _row_sums(Ra, Rb) - ra
    else:
        Rb = words(n * ell).reshape(n, ell)
        rb = Ra @ Rb - ra
    await party.send(alice, f"{tag}/dealer", {"Ra": pack_array(Ra), "ra": pack_array(ra)})
    await party.send(bob, f"{tag}/dealer", {"Rb": pack_array(Rb), "rb": pack_array(rb)})


async def _dealer_method(
    party: Party, M: np.ndarray, role: str, other: str, dealer: str, tag: str, rows: bool = False
) -> tuple[np.ndarray, tuple[int, int, int]]:
    got = _fields(
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
        return ra - (_row_sums(Ra, B_hat) if rows else Ra @ B_hat), (m, n, ell)
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
    return (_row_sums(A_hat, B) if rows else A_hat @ B) + rb, (m, n, ell)


async def _open_shares(
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


# --------------------------------------------------------------------------- paillier


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
        A = M
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
        reply = _fields(await party.recv(other, f"{tag}/enc", ENCRYPTED), other, ("shape", "c"))
        ell = checked_shape(
            reply.get("shape"), (m, 1) if rows else (m, None), other, "Enc(A B + mask)"
        )[1]
        cts = unpack_array(reply.get("c"), np.uint8, (m * ell, pk.ciphertext_bytes), other, "c")
        D = await asyncio.to_thread(key.decrypt_many, pk.ciphertexts_from_array(cts))
        party.metrics.count("paillier_dec", m * ell)
        limit = 1 << paillier_capacity_bits(n)  # D = (A B)_jk + M_jk < 2^κ + 2^(κ+σ)
        if any(d >= limit for d in D):
            raise ProtocolError(f"dot product (paillier): {other} sent a product out of range")
        U = np.array([int(d) % _WORD for d in D], dtype=np.uint64).reshape(m, ell)
        if bob_learns:
            await party.send(other, f"{tag}/share", pack_array(U))
        return U, (m, n, ell)

    B = M
    m_b: int | None = None  # row-wise: Alice's row count must be Bob's
    if rows:
        m_b, n = B.shape
        ell = 1
    else:
        n, ell = B.shape
    body = _fields(await party.recv(other, f"{tag}/enc", ENCRYPTED), other, ("n", "shape", "c"))
    m = checked_shape(body.get("shape"), (m_b, n), other, "Enc(A)")[0]
    N = body.get("n")
    if isinstance(N, _MPZ):
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
    masks = [int(ti) + (secrets.randbits(high) << 64) for ti in t.tolist()]
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


# --------------------------------------------------------------------------- helpers


def _check_shape(shape: Sequence[int] | None, rows: bool = False) -> tuple[int, int, int] | None:
    """The public shape as ``(m, n, l)`` (row-wise: ``(m, n)``, taken as ``(m, n, 1)``)."""
    if shape is None:
        return None
    dims = tuple(shape)
    size, what = (2, "(m, n)") if rows else (3, "(m, n, l)")
    if len(dims) != size or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 1 for d in dims
    ):
        raise ConfigError(f"dot product: shape must be {what} with every entry >= 1, got {shape}")
    if rows:
        return int(dims[0]), int(dims[1]), 1
    return int(dims[0]), int(dims[1]), int(dims[2])


def _as_matrix(X: Any, role: str, rows: bool = False) -> np.ndarray:
    """Alice's ``m x n`` or Bob's ``n x ell`` input as ``uint64`` (1-D: one row / one column;
    row-wise, both pass ``m x n`` and a 1-D vector is one row)."""
    if X is None:
        raise ConfigError(f"dot product: {role} must pass its matrix")
    arr = np.asarray(X)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.uint64)  # signed values are taken mod 2^64
    elif arr.dtype.kind == "O":
        try:
            arr = np.array(X, dtype=np.uint64)
        except (OverflowError, TypeError, ValueError):
            raise ConfigError(
                f"dot product: {role}'s entries must be integers in [0, 2^64)"
            ) from None
    else:
        raise ConfigError(f"dot product: {role}'s entries must be integers, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr.reshape(1, -1) if role == ALICE or rows else arr.reshape(-1, 1)
    if arr.ndim != 2 or 0 in arr.shape:
        raise ConfigError(
            f"dot product: {role} must pass a non-empty vector or matrix, got shape {arr.shape}"
        )
    return np.ascontiguousarray(arr)


def _fields(body: object, sender: str, allowed: Sequence[str]) -> dict[str, Any]:
    if not isinstance(body, dict) or not set(body) <= set(allowed):
        raise ProtocolError(
            f"dot product: {sender} sent {type(body).__name__}; expected a map with keys "
            f"among {list(allowed)}"
        )
    return body
