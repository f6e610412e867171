"""Points of Curve25519 in affine Montgomery coordinates, with gmpy2: what the base OTs of
:mod:`protocols.ot.base_ot` needs beside X25519, which gives u-coordinates only.

A point travels as its ``u`` and the parity of its ``v`` (:func:`encode_point`); a ``u`` not
below ``p``, or on the twist rather than the curve, decodes to None (:func:`decode_point`).
:func:`point_add` and :func:`point_neg` are the group law; :func:`in_prime_order_subgroup`
tells whether a point has no low-order component. Nothing here is secret-dependent in a way
that matters to the protocol: the inputs are public points.
"""

from __future__ import annotations

from typing import Any

import gmpy2

from mpc.crypto.curve25519 import ELEMENT_BYTES

__all__ = [
    "FIELD_PRIME",
    "decode_point",
    "encode_point",
    "in_prime_order_subgroup",
    "lift_point",
    "point_add",
    "point_neg",
]

#: p = 2^255 - 19, the field of Curve25519
FIELD_PRIME = gmpy2.mpz(2**255 - 19)
_P = FIELD_PRIME
_A = gmpy2.mpz(486662)
_SQRT_M1 = gmpy2.powmod(2, (_P - 1) // 4, _P)  # a square root of -1 mod p (p = 5 mod 8)
_A24 = (_A - 2) // 4  # the ladder's constant (RFC 7748)
_Q = 2**252 + 27742317777372353535851937790883648493  # the order of the base point


def _sqrt(w: Any) -> Any:
    """A square root of ``w`` mod ``p`` (``p = 5 mod 8``), or None when ``w`` is not a square."""
    r = gmpy2.powmod(w, (_P + 3) // 8, _P)
    if (r * r - w) % _P == 0:
        return r
    r = (r * _SQRT_M1) % _P
    return r if (r * r - w) % _P == 0 else None


def lift_point(u: int, sign: int) -> tuple[int, int] | None:
    """The point ``(u, v)`` of Curve25519 (``v^2 = u^3 + A u^2 + u``) whose ``v`` has parity
    ``sign``, or None when ``u`` is not on the curve (it is on the twist) or not below ``p``."""
    if not 0 <= u < _P:
        return None
    u_ = gmpy2.mpz(u)
    v = _sqrt((u_ * u_ * u_ + _A * u_ * u_ + u_) % _P)
    if v is None or (v == 0 and sign):
        return None
    if int(v) & 1 != sign:
        v = _P - v
    return int(u_), int(v)


def encode_point(point: tuple[int, int]) -> bytes:
    """32 bytes: ``u`` little-endian, the parity of ``v`` in the top bit."""
    u, v = point
    return (u | (v & 1) << 255).to_bytes(ELEMENT_BYTES, "little")


def decode_point(data: bytes) -> tuple[int, int] | None:
    """The point :func:`encode_point` wrote, or None for anything else: a ``u`` not below
    ``p`` (non-canonical) or not on the curve (on its twist)."""
    x = int.from_bytes(data, "little")
    return lift_point(x & (2**255 - 1), x >> 255)


def point_add(p1: tuple[int, int], p2: tuple[int, int]) -> tuple[int, int]:
    """``p1 + p2`` on Curve25519 in affine Montgomery coordinates, for points with different
    ``u`` (so neither the same nor opposite): ``λ = (v2 - v1) / (u2 - u1)``, ``u3 = λ^2 - A -
    u1 - u2``, ``v3 = λ (u1 - u3) - v1``."""
    (u1, v1), (u2, v2) = p1, p2
    if (u1 - u2) % _P == 0:
        raise ValueError("point_add needs two points with different u-coordinates")
    lam = (gmpy2.mpz(v2 - v1) * gmpy2.invert(u2 - u1, _P)) % _P
    u3 = (lam * lam - _A - u1 - u2) % _P
    return int(u3), int((lam * (u1 - u3) - v1) % _P)


def point_neg(point: tuple[int, int]) -> tuple[int, int]:
    u, v = point
    return u, (-v) % int(_P)


def in_prime_order_subgroup(u: int) -> bool:
    """Whether the curve point with u-coordinate ``u`` lies in the subgroup of prime order
    ``q``: ``q P`` is the identity, by the x-only Montgomery ladder of RFC 7748 with the
    unclamped scalar ``q`` (about a millisecond; public inputs, so not constant-time). Points of
    low order, and points with a low-order component, are not."""
    x1 = gmpy2.mpz(u) % _P
    if x1 == 0:  # the point of order 2 (the ladder's formulas degenerate on it)
        return False
    x2, z2, x3, z3 = gmpy2.mpz(1), gmpy2.mpz(0), x1, gmpy2.mpz(1)
    swap = 0
    for bit in reversed(range(_Q.bit_length())):
        k = (_Q >> bit) & 1
        if swap ^ k:
            x2, z2, x3, z3 = x3, z3, x2, z2
        swap = k
        a, b = x2 + z2, x2 - z2
        c, d = x3 + z3, x3 - z3
        da, cb = d * a % _P, c * b % _P
        x3, z3 = (da + cb) ** 2 % _P, x1 * (da - cb) ** 2 % _P
        aa, bb = a * a % _P, b * b % _P
        e = aa - bb
        x2, z2 = aa * bb % _P, e * (aa + _A24 * e) % _P
    if swap:
        x2, z2 = x3, z3
    return bool(z2 % _P == 0)
