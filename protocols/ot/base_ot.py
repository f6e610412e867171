"""Base oblivious transfer: the setup of the IKNP extension (:mod:`protocols.ot.iknp`).

**Base OT** (:func:`base_ots_send`, :func:`base_ots_receive`): the "simplest OT" of Chou &
Orlandi (LATINCRYPT 2015), batched, on Curve25519. X25519 gives only u-coordinates, so the one
point addition each side needs is done in affine Montgomery coordinates with gmpy2
(:func:`mpc.crypto.montgomery.point_add`; points travel as ``u`` plus the parity of ``v``,
:func:`mpc.crypto.montgomery.encode_point`), and every scalar multiplication is X25519. For OT
number ``i`` with choice bit ``c``:

1. the sender draws one key ``a`` per batch and sends ``A = ±aG`` (either sign);
2. the receiver draws ``b`` and a uniform sign ``ε`` and sends ``B = εbG`` (``c = 0``) or
   ``B = A + εbG`` (``c = 1``);
3. the sender's keys are ``k^0 = H_K(i, 0, A, B, u(aB))`` and ``k^1 = H_K(i, 1, A, B,
   u(a(B - A)))``; the receiver's is ``k^c = H_K(i, c, A, B, u(bA))``.

Only u-coordinates enter the hash and ``u(P) = u(-P)``, so the signs of ``A`` and ``εbG`` never
matter: ``u(a · εbG) = u(b · (±aG))``. A batch of any size is one round trip (``A``, then all
the ``B``). ``B`` is a uniform point of the prime-order subgroup whatever ``c`` (computationally:
``b`` is an X25519-clamped scalar, as in every X25519 key), so the sender learns nothing; a
receiver that knows ``b`` would need ``a^2 G`` to compute ``k^{1-c}``, which is CDH on
Curve25519 (random-oracle model for ``H_K``). Checks: ``A`` and every ``B`` must be canonical
(``u < p``) and on the curve (not its twist), ``A`` in the prime-order subgroup
(:func:`mpc.crypto.montgomery.in_prime_order_subgroup`: a low-order component of ``A`` would show in
``B = A + εbG`` and tell a cheating sender ``c``), ``B ≠ ±A``, and no X25519 may yield the identity
(a low-order point); otherwise :class:`~mpc.errors.PeerMisbehaved` names the peer. Scalars are
clamped (multiples of the cofactor 8), which removes any small-order component of ``B``.
``H_K`` is SHA-256 with a domain string, the OT index and the choice, cut to 128 bits.

References: T. Chou, C. Orlandi, *The simplest protocol for oblivious transfer*, LATINCRYPT
2015; D. J. Bernstein, *Curve25519: new Diffie-Hellman speed records*, PKC 2006.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from mpc.crypto import randomness
from mpc.crypto.curve25519 import ELEMENT_BYTES
from mpc.crypto.montgomery import (
    FIELD_PRIME,
    decode_point,
    encode_point,
    in_prime_order_subgroup,
    lift_point,
    point_add,
    point_neg,
)
from mpc.crypto.prg import BLOCK, KAPPA
from mpc.errors import ProtocolError
from mpc.runtime.expect import raw
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.ot.checks import check_array, check_count, choice_bits, misbehaved

#: what a party receives in oblivious transfers
BASE_KEY = uniform("ot/base-key", "the base-OT sender's public key (a fresh curve point)")


BASE_POINTS = uniform(
    "ot/base-points",
    "the base-OT receiver's points, one per OT (uniform whatever the choices)",
    elements=True,
)


_DOMAIN_KEY = b"mpc/ot/base/v1/key"
_DOMAIN_HASH_KEY = b"mpc/ot/iknp/v1/tccr-key"


def _base_key(i: int, j: int, header: bytes, point: bytes, shared: bytes) -> bytes:
    """``H_K(i, j, A, B, DH)``: a 128-bit seed."""
    data = _DOMAIN_KEY + i.to_bytes(4, "big") + bytes([j]) + header + point + shared
    return hashlib.sha256(data).digest()[:BLOCK]


def _new_key() -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(randomness.token_bytes(ELEMENT_BYTES, "ot/base-key"))


def _u(key: X25519PrivateKey) -> int:
    return int.from_bytes(key.public_key().public_bytes_raw(), "little")


def _u_bytes(u: int) -> bytes:
    return u.to_bytes(ELEMENT_BYTES, "little")


def _exchange(key: X25519PrivateKey, u: int) -> bytes:
    """X25519 of ``key`` and the point with u-coordinate ``u``; ValueError at a low-order
    point (the identity would come out)."""
    return key.exchange(X25519PublicKey.from_public_bytes(_u_bytes(u)))


def _receiver_points(
    header_point: tuple[int, int], choices: np.ndarray
) -> tuple[np.ndarray, list[X25519PrivateKey]]:
    """The base-OT receiver's ``B_i`` (``±b_i G``, plus ``A`` where the choice is 1), encoded
    as an ``(n, 32)`` uint8 array, and its keys ``b_i``. The sign is uniform, so that ``B_i``
    is a uniform point of the subgroup whatever the choice."""
    rows = np.empty((len(choices), ELEMENT_BYTES), dtype=np.uint8)
    keys = []
    signs = randomness.bits(len(choices), "ot/base-signs")
    for i, c in enumerate(choices.tolist()):
        while True:
            key = _new_key()
            u = _u(key)
            if u != header_point[0]:  # else bG = ±A (probability 2^-251): draw again
                break
        point = lift_point(u, int(signs[i]))
        if point is None:  # not reached: X25519 public keys are points of the curve
            raise ProtocolError("OT: an X25519 public key is not a point of the curve")
        if c:
            point = point_add(header_point, point)
        rows[i] = np.frombuffer(encode_point(point), np.uint8)
        keys.append(key)
    return rows, keys


def _transcript_digest(header: bytes, points: np.ndarray) -> bytes:
    return hashlib.sha256(_DOMAIN_HASH_KEY + header + points.tobytes()).digest()[:BLOCK]


def point_from(data: bytes, peer: str, step: str, what: str) -> tuple[int, int]:
    """The point ``data`` encodes; :class:`PeerMisbehaved` when it encodes none."""
    point = decode_point(data)
    if point is not None:
        return point
    if int.from_bytes(data, "little") & (2**255 - 1) >= FIELD_PRIME:
        raise misbehaved(peer, step, f"{what} whose u-coordinate is not canonical (>= p)")
    raise misbehaved(peer, step, f"{what} that is not on Curve25519 (it is on the twist)")


async def base_ot_sender(
    party: Party, peer: str, n: int, tag: str
) -> tuple[np.ndarray, np.ndarray, bytes]:
    key = _new_key()
    header_point = lift_point(_u(key), 0)  # ±aG: the sign does not matter, see the docstring
    if header_point is None:  # not reached: X25519 public keys are points of the curve
        raise ProtocolError("OT: an X25519 public key is not a point of the curve")
    header = encode_point(header_point)
    minus_a = point_neg(header_point)
    await party.send(peer, f"{tag}/base/a", header)
    step = f"{tag}/base/b"
    got = await party.recv(peer, step, BASE_POINTS)
    rows = check_array(got, np.uint8, (n, ELEMENT_BYTES), peer, "the points B", step)
    k = np.empty((2, n, BLOCK), dtype=np.uint8)
    for i in range(n):
        data = rows[i].tobytes()
        point = point_from(data, peer, step, f"for base OT {i} a point B")
        if point[0] == header_point[0]:
            raise misbehaved(peer, step, f"for base OT {i} the point ±A")
        try:
            shared0 = _exchange(key, point[0])
            shared1 = _exchange(key, point_add(point, minus_a)[0])
        except ValueError:
            raise misbehaved(peer, step, f"for base OT {i} a point of low order") from None
        k[0, i] = np.frombuffer(_base_key(i, 0, header, data, shared0), np.uint8)
        k[1, i] = np.frombuffer(_base_key(i, 1, header, data, shared1), np.uint8)
    party.metrics.count("x25519", 1 + 2 * n)
    party.metrics.count("base_ot", n)
    return k[0], k[1], _transcript_digest(header, rows)


async def base_ot_receiver(
    party: Party, peer: str, choices: np.ndarray, tag: str
) -> tuple[np.ndarray, bytes]:
    step = f"{tag}/base/a"
    header = await party.recv(peer, step, BASE_KEY, expect=raw(ELEMENT_BYTES))
    header_point = point_from(header, peer, step, "a public key A")
    if not in_prime_order_subgroup(header_point[0]):  # else B would show the choice
        raise misbehaved(peer, step, "a public key A of low order, or with a low-order component")
    points, keys = _receiver_points(header_point, choices)
    await party.send(peer, f"{tag}/base/b", points)
    k = np.empty((len(choices), BLOCK), dtype=np.uint8)
    for i, (key, c) in enumerate(zip(keys, choices.tolist(), strict=True)):
        try:
            shared = _exchange(key, header_point[0])
        except ValueError:
            raise misbehaved(peer, step, "a public key A of low order") from None
        k[i] = np.frombuffer(_base_key(i, c, header, points[i].tobytes(), shared), np.uint8)
    party.metrics.count("x25519", 2 * len(choices))
    party.metrics.count("base_ot", len(choices))
    return k, _transcript_digest(header, points)


async def base_ots_send(
    party: Party, peer: str, n: int = KAPPA, *, tag: str = "ot"
) -> tuple[np.ndarray, np.ndarray]:
    """Random base OTs as the sender: ``(k0, k1)``, two ``(n, 16)`` uint8 arrays of keys; the
    receiver gets ``k_c[i]`` for its choice bit ``c`` of OT ``i``. One round trip."""
    n = check_count(n, "the number of base OTs n")
    k0, k1, _ = await base_ot_sender(party, peer, n, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "sender", "ots": n}, step=tag)
    return k0, k1


async def base_ots_receive(party: Party, peer: str, choices: Any, *, tag: str = "ot") -> np.ndarray:
    """Random base OTs as the receiver with ``choices`` (bits): the ``(n, 16)`` uint8 keys
    ``k_{choices[i]}[i]`` of the sender's pairs. One round trip."""
    bits = choice_bits(choices, "choices")
    k, _ = await base_ot_receiver(party, peer, bits, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "receiver", "ots": len(bits)}, step=tag)
    return k
