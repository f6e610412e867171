"""A commutative cipher on Curve25519: Elligator2 hashing into the curve, X25519 as the cipher.

``E_K(x) = X25519(K, x)`` is scalar multiplication of the curve point with u-coordinate ``x``
by the clamped scalar ``K``; since ``[a][b]P = [b][a]P`` the cipher commutes, which is what the
set-intersection cardinality protocol of :mod:`protocols.primitives.psi_ca` needs. A transaction id
is hashed to a field element with SHA-512 and mapped onto the *curve* (never its twist) with the
Elligator2 map of RFC 9380 (section 6.7.1, ``Z = 2``). X25519 scalars are multiples of the
cofactor 8, so the first encryption lands in the prime-order subgroup, where DDH is believed to
hold. Raw hashed u-coordinates would not do: half of them lie on the twist, a property that
survives scalar multiplication and so would leak one bit of every element's hash.

Elements are 32-byte little-endian u-coordinates (``uint8`` rows of a numpy array on the wire).
X25519 comes from ``cryptography`` (OpenSSL), about 35,000 operations per second per core here,
roughly ten times the 2048-bit MODP group of :mod:`mpc.crypto.commutative`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import gmpy2
import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from mpc.crypto import randomness
from mpc.errors import ProtocolError

__all__ = [
    "ELEMENT_BYTES",
    "InvalidPoint",
    "X25519Key",
    "elligator2",
    "hash_ids",
    "hash_to_curve",
]

P = gmpy2.mpz(2**255 - 19)
A = gmpy2.mpz(486662)
Z = gmpy2.mpz(2)
ELEMENT_BYTES = 32
_HALF = (P - 1) // 2


def elligator2(r: int) -> int:
    """The u-coordinate of the Elligator2 image of field element ``r`` (RFC 9380, 6.7.1).

    ``x1 = -A / (1 + Z r^2)`` (``-A`` when the denominator vanishes); if ``g(x1) = x1^3 + A x1^2
    + x1`` is a square, ``x1`` is on the curve, otherwise ``x2 = -x1 - A`` is."""
    r = gmpy2.mpz(r) % P
    d = (1 + Z * r * r) % P
    x1 = (-A * gmpy2.invert(d, P)) % P if d else (-A) % P
    gx1 = (x1 * x1 * x1 + A * x1 * x1 + x1) % P
    if gx1 == 0 or gmpy2.powmod(gx1, _HALF, P) == 1:
        return int(x1)
    return int((-x1 - A) % P)


def on_curve(u: int) -> bool:
    """Whether ``u`` is the u-coordinate of a point of Curve25519 (not of its twist)."""
    u = gmpy2.mpz(u) % P
    g = (u * u * u + A * u * u + u) % P
    return bool(g == 0 or gmpy2.powmod(g, _HALF, P) == 1)


def hash_to_curve(data: bytes, domain: bytes = b"mpc/psi-ca/v1") -> bytes:
    """``data`` hashed onto Curve25519: 32 bytes, little-endian u-coordinate."""
    h = hashlib.sha512(len(domain).to_bytes(2, "big") + domain + data).digest()
    r = int.from_bytes(h, "little") % P
    return elligator2(r).to_bytes(ELEMENT_BYTES, "little")


def hash_ids(ids: Iterable[int], domain: bytes = b"mpc/psi-ca/v1") -> np.ndarray:
    """Transaction ids hashed onto the curve, as an ``(n, 32)`` uint8 array.

    The hash is public and deterministic, so a site computes it once per id and reuses it in
    every invocation; secrecy comes from the fresh keys of each invocation."""
    rows = [hash_to_curve(int(i).to_bytes(8, "big", signed=True), domain) for i in ids]
    if not rows:
        return np.empty((0, ELEMENT_BYTES), dtype=np.uint8)
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(-1, ELEMENT_BYTES).copy()


class InvalidPoint(ProtocolError):
    """A received element is a low-order point (its product with any key is the identity,
    which X25519 refuses): no honest party sends one. ``row`` is its position."""

    def __init__(self, message: str, *, row: int) -> None:
        super().__init__(message)
        self.row = row


class X25519Key:
    """One party's secret key of one invocation. Never serialised, never reused."""

    __slots__ = ("_key",)

    def __init__(self, key: X25519PrivateKey) -> None:
        self._key = key

    @classmethod
    def generate(cls, label: str = "x25519/key") -> X25519Key:
        return cls(X25519PrivateKey.from_private_bytes(randomness.token_bytes(32, label)))

    def __repr__(self) -> str:
        return "X25519Key(<secret>)"

    def encrypt(self, element: bytes) -> bytes:
        """``E_K(element)``; raises :class:`InvalidPoint` for a low-order point."""
        try:
            return self._key.exchange(X25519PublicKey.from_public_bytes(element))
        except ValueError:
            raise _invalid(element, 0) from None

    def encrypt_many(self, elements: np.ndarray | Sequence[bytes]) -> np.ndarray:
        """Encrypt an ``(n, 32)`` uint8 array (or a sequence of 32-byte strings) row by row."""
        if isinstance(elements, np.ndarray):
            data = np.ascontiguousarray(elements, dtype=np.uint8).tobytes()
            items = [data[i : i + ELEMENT_BYTES] for i in range(0, len(data), ELEMENT_BYTES)]
        else:
            items = list(elements)
        exchange, load = self._key.exchange, X25519PublicKey.from_public_bytes
        try:
            out = b"".join(exchange(load(x)) for x in items)
        except ValueError:  # a low-order point (or a row of the wrong length): find it
            for row, x in enumerate(items):
                try:
                    exchange(load(x))
                except ValueError:
                    raise _invalid(x, row) from None
            raise  # not reached: some row failed above
        return np.frombuffer(out, dtype=np.uint8).reshape(-1, ELEMENT_BYTES).copy()


def _invalid(element: bytes, row: int) -> InvalidPoint:
    if len(element) != ELEMENT_BYTES:
        return InvalidPoint(f"element {row} has {len(element)} bytes, not {ELEMENT_BYTES}", row=row)
    return InvalidPoint(
        f"element {row} (u = {bytes(element[:4]).hex()}...) is a low-order point of "
        "Curve25519; every key maps it to the identity",
        row=row,
    )
