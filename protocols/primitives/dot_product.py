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

Methods (:data:`METHODS`, one module each, every one a
:class:`~protocols.primitives.dot_product_base.DotProductMethod`):

* ``dealer`` — Du & Zhan's commodity server (:mod:`protocols.primitives.commodity_server`),
  a third party that must collude with neither Alice nor Bob;
* ``paillier`` — Paillier encryption, no third party (:mod:`protocols.primitives.paillier_dot`).

A new method is a module with a
:class:`~protocols.primitives.dot_product_base.DotProductMethod` and one entry in
:data:`METHODS`: every command line, deployment check and
composed protocol (Hybrid-ID3, its classification) takes its choices, its trust statement and
whether it needs a helper from there.

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

References: W. Du, Z. Zhan, *Building decision tree classifier on private data*, IEEE ICDM PSDM
Workshop 2002 (Teng & Du's [3], the method ``dealer``); the methods' own modules cite theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.paillier import PAILLIER_KEY_BITS
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.party import Party
from protocols.primitives.commodity_server import COMMODITY_SERVER
from protocols.primitives.dot_product_base import (
    ALICE,
    BOB,
    DEALER,
    DotProductMethod,
    RandomWords,
)
from protocols.primitives.paillier_dot import PAILLIER

__all__ = [
    "ALICE",
    "BOB",
    "DEALER",
    "METHODS",
    "REVEAL_TO",
    "dot_product",
    "dot_products",
    "method_of",
    "row_dot_products",
]

#: the methods of secure dot products, by name: the one registry every command line and
#: protocol takes its choices from
METHODS: dict[str, DotProductMethod] = {m.name: m for m in (COMMODITY_SERVER, PAILLIER)}
#: who learns the products (the other party keeps its share; None: both keep shares)
REVEAL_TO = ("alice", "bob", "both", None)


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
    how = method_of(method)
    if reveal_to not in REVEAL_TO:
        raise ConfigError(f"dot product: reveal_to must be one of {REVEAL_TO}, got {reveal_to!r}")
    roles = {alice: ALICE, bob: BOB} | ({dealer: DEALER} if how.helper is not None else {})
    role = roles.get(party.name)
    if role is None:
        raise ConfigError(
            f"dot product ({method}): party {party.name!r} is none of {sorted(roles)}"
        )
    expected = _check_shape(shape, rows)
    words = random_words or (lambda k: randomness.words(k, f"{tag}/words"))
    label = "dot-product/row-shape" if rows else "dot-product/shape"
    with party.phase(tag):
        if role == DEALER:
            if expected is None:
                what = "(m, n)" if rows else "(m, n, l)"
                raise ConfigError(f"dot product: the dealer needs the public shape {what}")
            await how.deal(party, expected, alice, bob, tag, words, rows)
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
        out, dims = await how.compute(
            party, M, role=role, other=other, helper=dealer, reveal_to=reveal_to, tag=tag,
            key_bits=key_bits, words=words, rows=rows,
        )  # fmt: skip
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


def method_of(name: str) -> DotProductMethod:
    """The method named ``name`` (:data:`METHODS`), or a one-line error naming the others."""
    try:
        return METHODS[name]
    except KeyError:
        raise ConfigError(
            f"dot product: method must be one of {list(METHODS)}, got {name!r}"
        ) from None


async def dot_product(party: Party, v: Any = None, **options: Any) -> int | None:
    """One dot product of Alice's and Bob's vectors (length ``n``): :func:`dot_products`
    with ``m = l = 1``; returns the product, or this party's share, as an int."""
    out = await dot_products(party, v, **options)
    return None if out is None else int(out[0, 0])


# --------------------------------------------------------------------------- dealer


# --------------------------------------------------------------------------- paillier


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
