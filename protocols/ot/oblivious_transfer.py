"""Oblivious transfer between two parties, extended cheaply, and the products it makes: random
and correlated OTs, Gilboa multiplication over ``Z_{2^64}`` and Beaver triples, with no third
party. Semi-honest security: both parties follow the protocol; each learns nothing beyond its
own output and the sizes (numbers of OTs, products, triples) that the messages show.

**Base OT** (:func:`base_ots_send`, :func:`base_ots_receive`): the "simplest OT" of Chou &
Orlandi (LATINCRYPT 2015), batched, on Curve25519. X25519 gives only u-coordinates, so the one
point addition each side needs is done in affine Montgomery coordinates with gmpy2
(:func:`point_add`; points travel as ``u`` plus the parity of ``v``, :func:`encode_point`),
and every scalar multiplication is X25519. For OT number ``i`` with choice bit ``c``:

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
(:func:`in_prime_order_subgroup`: a low-order component of ``A`` would show in ``B = A + εbG``
and tell a cheating sender ``c``), ``B ≠ ±A``, and no X25519 may yield the identity (a
low-order point); otherwise :class:`~mpc.errors.PeerMisbehaved` names the peer. Scalars are
clamped (multiples of the cofactor 8), which removes any small-order component of ``B``.
``H_K`` is SHA-256 with a domain string, the OT index and the choice, cut to 128 bits.

**Extension** (Ishai, Kilian, Nissim & Petrank, CRYPTO 2003, with ``κ = 128``): the roles of
the base OTs swap: the extension *sender* holds a secret ``s ∈ {0,1}^κ`` and received the seeds
``k_i^{s_i}``; the extension *receiver* holds both seeds ``k_i^0, k_i^1`` of each base OT. For
``m`` OTs with choice bits ``r``, the receiver expands ``t_i = G(k_i^0)`` and sends the ``κ x m``
bit matrix ``u_i = t_i ⊕ G(k_i^1) ⊕ r``; the sender forms ``q_i = G(k_i^{s_i}) ⊕ s_i u_i``,
so that row ``j`` of the transposed matrices satisfies ``q_j = t_j ⊕ r_j s``. The sender's
messages are ``x_j^0 = H(j, q_j)`` and ``x_j^1 = H(j, q_j ⊕ s)``; the receiver's is
``H(j, t_j) = x_j^{r_j}``. ``G`` is AES-128-CTR keyed by the seed, its initial counter block the
batch number (one nonce per seed and use, never repeated within a session); ``H`` is the
tweakable correlation-robust hash ``π(π(x) ⊕ j) ⊕ π(x)`` of Guo, Katz, Wang & Yu (IEEE S&P
2020), xor-ed with the public tweak (:class:`CorrelationRobustHash`), with ``π`` AES-128 under a
key fixed for the session (hashed from the base-OT transcript); the tweak ``j`` holds the batch
and the OT index. A wider pad (a vector OT) is the same hash under further tweaks, one per
16-byte block. One setup (128 base OTs) serves any number of batches:
:func:`extension_sender`, :func:`extension_receiver`.

* **random OT** (:func:`random_ots_send`, :func:`random_ots_receive`): the sender gets ``m``
  pairs of 16-byte messages, the receiver one of each pair by its random or chosen bits;
* **correlated OT over Z_{2^64}** (:func:`correlated_ots_send`, :func:`correlated_ots_receive`):
  the sender gives ``Δ_j`` and gets a uniform ``x_j``, the receiver gets
  ``y_j = x_j + r_j Δ_j`` (mod ``2^64``); the sender sends ``τ_j = x_j^1 - x_j^0 - Δ_j``.

**Gilboa multiplication** (:func:`ot_multiply`; Gilboa, CRYPTO 1999): party A holds ``a``, B
holds ``b``; one correlated OT per bit ``b_k`` of B's value with ``Δ = a 2^k`` gives B
``Σ_k y_k`` and A ``-Σ_k x_k``, additive shares of ``a b`` mod ``2^64``. **Beaver triples**
(:func:`beaver_triples`; Beaver, CRYPTO 1991): each party draws ``a_i, b_i``; the two cross
products ``a_0 b_1`` and ``b_0 a_1`` go through one batch of Gilboa products, and
``c_i = a_i b_i + (its shares of the cross products)``.

Cost: per OT, ``κ = 128`` bits from receiver to sender; a correlated OT adds 8 bytes back.
A product takes 64 correlated OTs: 1,536 bytes (1,024 + 512) plus a few bytes of message
framing; a Beaver triple two products. Setup: 32 bytes from the base-OT sender, then 32 bytes
per base OT (4 KiB for 128) from the base-OT receiver, one round trip; each batch of up to
:data:`CHUNK_OTS` OTs is one message each way, with at most :data:`WINDOW` batches in flight.

What each party learns (ledger, the same entries at both parties, sizes only): ``ot/base``
(``ots``: the number of base OTs), ``ot/random`` and ``ot/correlated`` (``ots``),
``ot/multiply`` (``products``), ``ot/beaver`` (``triples``), each with ``peer`` and this
party's ``role``. Nothing else a party receives depends on the other's inputs: ``A`` is a
fresh random point, each ``B`` a uniform point whatever the choice, each row ``u_i`` of the
matrix is masked by ``G(k_i^{1-s_i})``, which the extension sender lacks, and each ``τ_j`` by
``H(j, t_j ⊕ s)``, which the receiver cannot compute without ``s``. Outputs (keys, messages,
shares) are randomness or shares, not opened values.

Semi-honest only. An actively cheating extension receiver could send a ``u`` whose columns
disagree and learn bits of ``s`` (Keller, Orsini & Scholl, CRYPTO 2015, add the check that
stops it); an actively cheating A in :func:`ot_multiply` could use correlations that are not
``a 2^k`` and shift the product. Neither is defended against here.

Randomness: every scalar, sign, choice bit and share comes from :mod:`secrets` (the
OS generator) or an AES-CTR keystream keyed from it; never a seeded or statistical generator.
Every function of a session must be called in the same order at both parties (the batch
numbers and tags follow that order).
"""

from __future__ import annotations

import hashlib
import secrets
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import gmpy2
import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.crypto.curve25519 import ELEMENT_BYTES
from mpc.errors import ConfigError, PeerMisbehaved, ProtocolError
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.primitives.dot_product import os_random_words

#: what a party receives in oblivious transfers
BASE_KEY = uniform("ot/base-key", "the base-OT sender's public key (a fresh curve point)")
BASE_POINTS = uniform(
    "ot/base-points",
    "the base-OT receiver's points, one per OT (uniform whatever the choices)",
    elements=True,
)
EXTENSION_U = uniform(
    "ot/extension-u", "the extension receiver's matrix u: its choices under PRG masks"
)
EXTENSION_REPLY = uniform(
    "ot/extension-reply",
    "the extension sender's answers: messages or corrections masked by hashes the receiver "
    "can compute for its choices only",
)

__all__ = [
    "BASE_KEY",
    "BASE_POINTS",
    "CHUNK_OTS",
    "EXTENSION_REPLY",
    "EXTENSION_U",
    "KAPPA",
    "BeaverTriples",
    "CorrelationRobustHash",
    "ExtensionReceiver",
    "ExtensionSender",
    "base_ots_receive",
    "base_ots_send",
    "beaver_triples",
    "correlated_ots_receive",
    "correlated_ots_send",
    "decode_point",
    "encode_point",
    "extension_receiver",
    "extension_sender",
    "in_prime_order_subgroup",
    "kept_rows_receive",
    "kept_rows_send",
    "lift_point",
    "one_hot_products_receive",
    "one_hot_products_send",
    "ot_multiply",
    "point_add",
    "point_neg",
    "prg_rows",
    "random_ots_receive",
    "random_ots_send",
    "ring_products_receive",
    "ring_products_send",
    "transpose_bits",
    "vector_ots_receive",
    "vector_ots_send",
]

#: κ, the computational security parameter: 128 base OTs, 128-bit seeds and AES-128, matching
#: the ~128-bit security of Curve25519.
KAPPA = 128
#: Bytes of a seed, a hash output and a random-OT message (κ bits).
BLOCK = KAPPA // 8
#: OTs per batch: the receiver's matrix of one batch is ``κ/8 * CHUNK_OTS`` = 4 MiB, far below
#: the default frame limit (64 MiB), and the work per batch is a few tens of milliseconds.
CHUNK_OTS = 2**18
#: Hash blocks of the pads of one batch of vector OTs or one-hot products (16 MiB): wide pads
#: make batches of fewer OTs, never more memory.
PAD_BLOCKS = 2**20
#: Batches the extension receiver sends before it waits for the first answer: the peer never
#: buffers more than this many matrices, and both parties compute at the same time.
WINDOW = 2
#: Bits of the ring ``Z_{2^64}`` of :func:`ot_multiply`: one correlated OT per bit.
RING_BITS = 64
#: Products per batch of :func:`ot_multiply` (``RING_BITS`` OTs each).
CHUNK_PRODUCTS = CHUNK_OTS // RING_BITS

_P = gmpy2.mpz(2**255 - 19)
_A = gmpy2.mpz(486662)
_SQRT_M1 = gmpy2.powmod(2, (_P - 1) // 4, _P)  # a square root of -1 mod p (p = 5 mod 8)
_A24 = (_A - 2) // 4  # the ladder's constant (RFC 7748)
_Q = 2**252 + 27742317777372353535851937790883648493  # the order of the base point
_DOMAIN_KEY = b"mpc/ot/base/v1/key"
_DOMAIN_HASH_KEY = b"mpc/ot/iknp/v1/tccr-key"
_DOMAIN_REKEY = b"mpc/ot/iknp/v1/rekeyed"

Role = Literal["A", "B"]


# --------------------------------------------------------------------------- base OT (math)


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


def _base_key(i: int, j: int, header: bytes, point: bytes, shared: bytes) -> bytes:
    """``H_K(i, j, A, B, DH)``: a 128-bit seed."""
    data = _DOMAIN_KEY + i.to_bytes(4, "big") + bytes([j]) + header + point + shared
    return hashlib.sha256(data).digest()[:BLOCK]


def _new_key() -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(secrets.token_bytes(ELEMENT_BYTES))


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
    signs = np.unpackbits(np.frombuffer(secrets.token_bytes(-(-len(choices) // 8)), np.uint8))
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


# --------------------------------------------------------------------------- base OT (network)


def _check_array(
    obj: object, dtype: Any, shape: tuple[int, ...], peer: str, what: str, step: str
) -> np.ndarray:
    if not isinstance(obj, np.ndarray) or obj.dtype != np.dtype(dtype) or obj.shape != shape:
        got = (
            f"a {obj.dtype} array of shape {obj.shape}"
            if isinstance(obj, np.ndarray)
            else type(obj).__name__
        )
        raise ProtocolError(
            f"OT: {peer} sent, at {step}, {what} that is not a {np.dtype(dtype)} array of shape "
            f"{shape} (got {got}); the parties disagree about the protocol or its sizes"
        )
    return obj


def _misbehaved(peer: str, step: str, detail: str) -> PeerMisbehaved:
    return PeerMisbehaved(f"OT: {peer} sent, at {step}, {detail}", peer=peer, step=step)


def _point_from(data: bytes, peer: str, step: str, what: str) -> tuple[int, int]:
    """The point ``data`` encodes; :class:`PeerMisbehaved` when it encodes none."""
    point = decode_point(data)
    if point is not None:
        return point
    if int.from_bytes(data, "little") & (2**255 - 1) >= _P:
        raise _misbehaved(peer, step, f"{what} whose u-coordinate is not canonical (>= p)")
    raise _misbehaved(peer, step, f"{what} that is not on Curve25519 (it is on the twist)")


def _check_count(n: int, what: str) -> int:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 0:
        raise ConfigError(f"{what} must be an integer >= 0, got {n!r}")
    return int(n)


def _bits(choices: Any, what: str) -> np.ndarray:
    bits = np.asarray(choices)
    if bits.size == 0 and bits.ndim == 1:
        return np.zeros(0, dtype=np.uint8)
    if (
        bits.ndim != 1
        or not (bits.dtype == np.bool_ or np.issubdtype(bits.dtype, np.integer))
        or not ((bits == 0) | (bits == 1)).all()
    ):
        raise ConfigError(f"{what} must be a 1-d array of bits (0/1 or bool), got {bits!r:.80}")
    return bits.astype(np.uint8)


async def _base_sender(
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
    rows = _check_array(got, np.uint8, (n, ELEMENT_BYTES), peer, "the points B", step)
    k = np.empty((2, n, BLOCK), dtype=np.uint8)
    for i in range(n):
        data = rows[i].tobytes()
        point = _point_from(data, peer, step, f"for base OT {i} a point B")
        if point[0] == header_point[0]:
            raise _misbehaved(peer, step, f"for base OT {i} the point ±A")
        try:
            shared0 = _exchange(key, point[0])
            shared1 = _exchange(key, point_add(point, minus_a)[0])
        except ValueError:
            raise _misbehaved(peer, step, f"for base OT {i} a point of low order") from None
        k[0, i] = np.frombuffer(_base_key(i, 0, header, data, shared0), np.uint8)
        k[1, i] = np.frombuffer(_base_key(i, 1, header, data, shared1), np.uint8)
    party.metrics.count("x25519", 1 + 2 * n)
    party.metrics.count("base_ot", n)
    return k[0], k[1], _transcript_digest(header, rows)


async def _base_receiver(
    party: Party, peer: str, choices: np.ndarray, tag: str
) -> tuple[np.ndarray, bytes]:
    step = f"{tag}/base/a"
    header = await party.recv(peer, step, BASE_KEY)
    if not isinstance(header, bytes) or len(header) != ELEMENT_BYTES:
        got = f"{len(header)} bytes" if isinstance(header, bytes) else type(header).__name__
        raise ProtocolError(
            f"OT: {peer} sent, at {step}, a public key that is not {ELEMENT_BYTES} bytes "
            f"(got {got})"
        )
    header_point = _point_from(header, peer, step, "a public key A")
    if not in_prime_order_subgroup(header_point[0]):  # else B would show the choice
        raise _misbehaved(peer, step, "a public key A of low order, or with a low-order component")
    points, keys = _receiver_points(header_point, choices)
    await party.send(peer, f"{tag}/base/b", points)
    k = np.empty((len(choices), BLOCK), dtype=np.uint8)
    for i, (key, c) in enumerate(zip(keys, choices.tolist(), strict=True)):
        try:
            shared = _exchange(key, header_point[0])
        except ValueError:
            raise _misbehaved(peer, step, "a public key A of low order") from None
        k[i] = np.frombuffer(_base_key(i, c, header, points[i].tobytes(), shared), np.uint8)
    party.metrics.count("x25519", 2 * len(choices))
    party.metrics.count("base_ot", len(choices))
    return k, _transcript_digest(header, points)


async def base_ots_send(
    party: Party, peer: str, n: int = KAPPA, *, tag: str = "ot"
) -> tuple[np.ndarray, np.ndarray]:
    """Random base OTs as the sender: ``(k0, k1)``, two ``(n, 16)`` uint8 arrays of keys; the
    receiver gets ``k_c[i]`` for its choice bit ``c`` of OT ``i``. One round trip."""
    n = _check_count(n, "the number of base OTs n")
    k0, k1, _ = await _base_sender(party, peer, n, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "sender", "ots": n}, step=tag)
    return k0, k1


async def base_ots_receive(party: Party, peer: str, choices: Any, *, tag: str = "ot") -> np.ndarray:
    """Random base OTs as the receiver with ``choices`` (bits): the ``(n, 16)`` uint8 keys
    ``k_{choices[i]}[i]`` of the sender's pairs. One round trip."""
    bits = _bits(choices, "choices")
    k, _ = await _base_receiver(party, peer, bits, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "receiver", "ots": len(bits)}, step=tag)
    return k


# --------------------------------------------------------------------------- PRG, hash, transpose


class Prg:
    """``G``: each 16-byte seed of ``seeds`` expanded by AES-128 in counter mode, the counter
    block of batch ``use`` and block ``i`` being ``use`` and ``i`` as two big-endian 64-bit
    words (the keystream of AES-128-CTR with the nonce ``use || 0``). One ECB context per seed,
    made once and reused for every batch: a batch costs the AES blocks alone. A seed is never
    expanded twice under the same ``use`` (the session's batch numbers). ``repr`` shows no
    seed."""

    __slots__ = ("_ciphers",)

    def __init__(self, seeds: np.ndarray) -> None:
        self._ciphers = [Cipher(algorithms.AES(seed.tobytes()), modes.ECB()).encryptor()
                         for seed in seeds]  # fmt: skip

    def __repr__(self) -> str:
        return f"Prg(seeds={len(self._ciphers)})"

    def rows(self, use: int, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` of every seed's stream for batch ``use``: ``(r, nbytes)``."""
        n_blocks = -(-nbytes // BLOCK)
        counters = np.empty((n_blocks, 2), dtype=">u8")
        counters[:, 0] = use
        counters[:, 1] = np.arange(n_blocks, dtype=np.uint64)
        data = counters.tobytes()
        width = n_blocks * BLOCK
        # rows written in order into one buffer; each write may use the room of the next row,
        # which update_into asks for (a block more) but never touches beyond its input's size
        flat = bytearray(len(self._ciphers) * width + BLOCK - 1)
        view = memoryview(flat)
        for i, cipher in enumerate(self._ciphers):
            cipher.update_into(data, view[i * width : (i + 1) * width + BLOCK - 1])
        out = np.frombuffer(flat, dtype=np.uint8, count=len(self._ciphers) * width)
        out = out.reshape(-1, width)
        return out if nbytes == width else np.ascontiguousarray(out[:, :nbytes])


def prg_rows(seeds: np.ndarray, use: int, nbytes: int) -> np.ndarray:
    """``G`` once (:class:`Prg`): each 16-byte seed expanded to ``nbytes``, an ``(r, nbytes)``
    array, equal to AES-128-CTR under the seed with the initial counter block ``use || 0``."""
    return Prg(seeds).rows(use, nbytes)


class CorrelationRobustHash:
    """``H(j, x) = π(y) ⊕ y`` with ``y = π(x) ⊕ j`` on 16-byte rows, ``π`` AES-128 under a
    public key fixed for the session: the tweakable correlation robust hash ``π(π(x) ⊕ j) ⊕
    π(x)`` of Guo, Katz, Wang & Yu 2020 (``π`` modelled as a random permutation), xor-ed with
    the public tweak ``j``, which changes nothing of its security and saves a pass over the
    output. The tweak of row ``j`` of batch ``use`` is ``(j, use)`` as two little-endian
    64-bit words: distinct for every OT of a session."""

    __slots__ = ("_encrypt", "_key", "_templates")

    def __init__(self, key: bytes) -> None:
        if len(key) != BLOCK:
            raise ConfigError(f"the hash key must be {BLOCK} bytes, got {len(key)}")
        self._key = key
        self._encrypt = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        self._templates: dict[tuple[int, int], np.ndarray] = {}

    def rekeyed(self, use: int, block: int) -> Any:
        """``π_{use, block}``: AES-128 (an ECB encryptor) under the key ``SHA-256(domain, the
        session key, use, block)``, public like the session key, a different permutation
        for every batch number and pad block. ``x ↦ π_{use,b}(x) ⊕ x`` (MMO with the tweak
        in the key) is the re-keyed correlation-robust hash of :mod:`protocols.ot.one_hot`
        (AES as an ideal cipher)."""
        if not (0 <= use < 2**64 and 0 <= block < 2**32):
            raise ConfigError(f"no key for batch {use}, block {block}")
        data = _DOMAIN_REKEY + self._key + use.to_bytes(8, "big") + block.to_bytes(4, "big")
        key = hashlib.sha256(data).digest()[:BLOCK]
        return Cipher(algorithms.AES(key), modes.ECB()).encryptor()

    def __repr__(self) -> str:
        return "CorrelationRobustHash(<session key>)"

    def _tweaks(self, m: int, blocks: int) -> np.ndarray:
        """The tweaks' first words, ``j + b 2^32`` (``m blocks``), kept for the last few
        shapes (batches repeat their sizes)."""
        got = self._templates.get((m, blocks))
        if got is None:
            got = (
                np.arange(m, dtype=np.uint64)[:, None]
                + (np.arange(blocks, dtype=np.uint64)[None, :] << np.uint64(32))
            ).reshape(-1)
            if len(self._templates) >= 4:
                self._templates.pop(next(iter(self._templates)))
            self._templates[(m, blocks)] = got
        return got

    def _pi(self, rows: np.ndarray) -> np.ndarray:
        out = bytearray(rows.nbytes + BLOCK - 1)  # update_into wants room for a block more
        n = self._encrypt.update_into(np.ascontiguousarray(rows).data, out)
        return np.frombuffer(out, dtype=np.uint8, count=n).reshape(rows.shape)

    def prefix(self, rows: np.ndarray, first: int = 0) -> np.ndarray:
        """``π(x) ⊕ (j, 0)`` for the ``(m, 16)`` uint8 rows ``x`` (``j = first + `` the row's
        index), as an ``(m, 2)`` uint64 array: the part of ``y = π(x) ⊕ (j + b 2^32, use)``
        that does not depend on the block ``b`` or the batch ``use``, kept by callers that
        hash the same rows under many batch numbers (:mod:`protocols.ot.one_hot`)."""
        m = len(rows)
        if first + m > 2**32:
            raise ConfigError(f"cannot index {first + m} rows in the tweaks (at most 2^32)")
        y = self._pi(rows).view("<u8").reshape(m, 2).astype(np.uint64)
        y[:, 0] ^= np.arange(first, first + m, dtype=np.uint64)
        return y

    def __call__(self, rows: np.ndarray, use: int, blocks: int = 1) -> np.ndarray:
        """Hash an ``(m, 16)`` uint8 array row by row into ``blocks`` blocks each: ``(m, 16
        blocks)``, block ``b`` of row ``j`` under the tweak ``(j + b 2^32, use)`` (``m + m
        blocks`` AES blocks). Stretching a row this way gives a vector OT any width from one
        IKNP OT: every tweak of a session stays distinct (``j < 2^32``)."""
        m = len(rows)
        if m >= 2**32 or blocks < 1:
            raise ConfigError(f"cannot hash {m} rows into {blocks} blocks each")
        # as 64-bit words and long axes (numpy is slow on short ones): π(x) repeated per block
        y = self._pi(rows).view("<u8").reshape(m, 2)
        if blocks > 1:
            y = np.repeat(y, blocks, axis=0)
        y[:, 0] ^= self._tweaks(m, blocks)
        y[:, 1] ^= np.uint64(use)
        out = self._pi(y.view(np.uint8))
        np.bitwise_xor(out.view("<u8"), y.reshape(-1, 2), out=out.view("<u8"))
        return out.reshape(m, blocks * BLOCK)


#: the swaps of a 64 x 64 bit transpose: for each distance ``d``, the mask of the low ``d``
#: bits of every ``2d`` (Hacker's Delight, 7-3, on 64-bit words)
_SWAPS = tuple(
    (d, np.uint64(sum(((1 << d) - 1) << (2 * d * i) for i in range(32 // d))))
    for d in (32, 16, 8, 4, 2, 1)
)
#: bytes of columns transposed at a time (512 KiB of a 128-row matrix): the passes over a
#: slice stay in the cache, twice as fast as passes over a whole batch's matrix
_TRANSPOSE_COLUMNS = 4096


def transpose_bits(matrix: np.ndarray) -> np.ndarray:
    """The transpose of a bit matrix: ``matrix`` is ``(k, n/8)`` uint8, row ``i`` holding bits
    ``0..n-1`` little-endian (``np.packbits(..., bitorder="little")``); the result is ``(n,
    k/8)`` uint8 the same way. ``k`` and ``n`` must be multiples of 64.

    Words of 64 bits move whole (numpy is slow moving single bytes): a reorder of rows, the
    64 x 64 transposes of every block by masked swaps between words, and a reorder of words;
    a slice of :data:`_TRANSPOSE_COLUMNS` bytes of columns at a time. About 5.5 ms for ``128
    x 2^18`` bits (the byte-plane transposes it replaced took 9), a twentieth of
    ``unpackbits``/``packbits``."""
    if matrix.ndim != 2 or matrix.dtype != np.uint8 or matrix.shape[0] % 64 or matrix.shape[1] % 8:
        raise ConfigError(
            f"transpose_bits needs a uint8 matrix of k x n/8 bytes with k and n multiples of 64, "
            f"got {matrix.dtype} of shape {matrix.shape}"
        )
    k, nb = matrix.shape
    if nb > _TRANSPOSE_COLUMNS:  # column slices: each one's passes stay in the cache
        out = np.empty((nb * 8, k // 8), dtype=np.uint8)
        for start in range(0, nb, _TRANSPOSE_COLUMNS):
            part = np.ascontiguousarray(matrix[:, start : start + _TRANSPOSE_COLUMNS])
            out[start * 8 : start * 8 + part.shape[1] * 8] = _transpose_bits(part)
        return out
    return _transpose_bits(matrix)


def _transpose_bits(matrix: np.ndarray) -> np.ndarray:
    """Every 64 x 64 block of bits transposed in place as 64 words, all blocks at once: six
    rounds of masked swaps between the words ``d`` apart, ``d = 32 .. 1`` (each round the
    same six numpy passes over half of the words, into buffers made once)."""
    k, nb = matrix.shape
    H, G = k // 64, nb // 8
    words = np.ascontiguousarray(matrix).view("<u8").reshape(H, 64, G)
    # a copy always (with one block of rows the reorder alone would be a view of matrix)
    x = np.array(words.transpose(1, 0, 2), dtype=np.uint64, order="C").reshape(64, H * G)
    t = np.empty((32, H * G), dtype=np.uint64)
    u = np.empty_like(t)
    for d, mask in _SWAPS:
        v = x.reshape(32 // d, 2, d, -1)  # rows whose bit d is 0 (lo) and 1 (hi)
        lo, hi = v[:, 0], v[:, 1]
        tt, uu = t.reshape(32 // d, d, -1), u.reshape(32 // d, d, -1)
        np.right_shift(lo, np.uint64(d), out=tt)
        tt ^= hi
        tt &= mask
        hi ^= tt
        np.left_shift(tt, np.uint64(d), out=uu)
        lo ^= uu
    # x[i][h, g]: bits 64 h .. 64 h + 63 of column 64 g + i
    out = np.ascontiguousarray(x.reshape(64, H, G).transpose(2, 0, 1)).astype("<u8", copy=False)
    return out.reshape(G * 64, H).view(np.uint8)


# --------------------------------------------------------------------------- extension sessions


class _Session:
    __slots__ = ("_hash", "_uses", "peer", "tag")

    def __init__(self, peer: str, tag: str, hash_key: bytes) -> None:
        self.peer, self.tag = peer, tag
        self._hash = CorrelationRobustHash(hash_key)
        self._uses = 0

    @property
    def hash(self) -> CorrelationRobustHash:
        """The session's hash ``H`` (its key is public: hashed from the base-OT transcript)."""
        return self._hash

    def reserve(self, batches: int) -> int:
        """The number of the first of ``batches`` new batch numbers of this session (each a
        fresh PRG nonce and hash tweak); both parties reserve in the same order."""
        return self._reserve(batches)

    def _reserve(self, batches: int) -> int:
        """The number of the first of ``batches`` new batches (each a fresh PRG nonce)."""
        first, self._uses = self._uses, self._uses + batches
        if self._uses >= 2**64:
            raise ConfigError("this OT-extension session has used all its batch numbers")
        return first

    def __repr__(self) -> str:
        return f"{type(self).__name__}(peer={self.peer!r}, tag={self.tag!r}, batches={self._uses})"


class ExtensionSender(_Session):
    """The extension sender's side of a session with ``peer``: its secret ``s`` (its base-OT
    choice bits) and the seeds ``k_i^{s_i}``. Made by :func:`extension_sender`; never
    serialised; ``repr`` shows no secret."""

    __slots__ = ("_prg", "_s_bits", "_s_words")

    def __init__(
        self, peer: str, tag: str, hash_key: bytes, s: np.ndarray, seeds: np.ndarray
    ) -> None:
        super().__init__(peer, tag, hash_key)
        self._s_bits = s.astype(bool)
        self._s_words = np.packbits(s, bitorder="little").view("<u8")
        self._prg = Prg(seeds)


class ExtensionReceiver(_Session):
    """The extension receiver's side of a session with ``peer``: both seeds ``k_i^0, k_i^1``
    of every base OT. Made by :func:`extension_receiver`; never serialised."""

    __slots__ = ("_prg0", "_prg1")

    def __init__(
        self, peer: str, tag: str, hash_key: bytes, k0: np.ndarray, k1: np.ndarray
    ) -> None:
        super().__init__(peer, tag, hash_key)
        self._prg0, self._prg1 = Prg(k0), Prg(k1)


async def extension_sender(party: Party, peer: str, *, tag: str = "ot") -> ExtensionSender:
    """Set up OT extension as its *sender* (the base-OT receiver, with a uniform secret
    ``s``): 128 base OTs with ``peer``, which calls :func:`extension_receiver`. One round
    trip."""
    s = np.unpackbits(np.frombuffer(secrets.token_bytes(BLOCK), np.uint8), bitorder="little")
    seeds, digest = await _base_receiver(party, peer, s, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "receiver", "ots": KAPPA}, step=tag)
    return ExtensionSender(peer, tag, digest, s, seeds)


async def extension_receiver(party: Party, peer: str, *, tag: str = "ot") -> ExtensionReceiver:
    """Set up OT extension as its *receiver* (the base-OT sender): 128 base OTs with ``peer``,
    which calls :func:`extension_sender`. One round trip."""
    k0, k1, digest = await _base_sender(party, peer, KAPPA, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "sender", "ots": KAPPA}, step=tag)
    return ExtensionReceiver(peer, tag, digest, k0, k1)


# --------------------------------------------------------------------------- IKNP batches


def _record(party: Party, label: str, session: _Session, role: str, **sizes: int) -> None:
    """Put on record what this party learned: the sizes, which the messages show anyway."""
    party.ledger.record(label, {"peer": session.peer, "role": role, **sizes}, step=session.tag)


def _padded(m: int) -> int:
    """``m`` rounded up to whole AES blocks of bits (the matrices' rows are PRG blocks)."""
    return -(-m // KAPPA) * KAPPA


def _split(m: int, size: int) -> list[int]:
    return [min(size, m - start) for start in range(0, m, size)]


async def _extend_as_sender(
    party: Party,
    session: ExtensionSender,
    sizes: Sequence[int],
    answer: Callable[[int, Any, np.ndarray], Any],
    *,
    blocks: int = 1,
    ones_only: bool = False,
    raw: bool = False,
) -> None:
    """Batches of ``sizes`` OTs as the extension sender: receive ``u``, form the rows ``q_j``
    and send ``answer(batch, H(j, q_j), H(j, q_j ⊕ s))`` back (None: an acknowledgement),
    each hash ``blocks`` blocks long; with ``ones_only`` the first hash is not computed
    (None); with ``raw`` nothing is hashed: ``answer(batch, None, q_j ⊕ s)`` gets the rows
    themselves (``(m, 16)`` uint8)."""
    first = session._reserve(len(sizes))
    peer = session.peer
    for c, m in enumerate(sizes):
        use = first + c
        step = f"{session.tag}/{use}/u"
        got = await party.recv(peer, step, EXTENSION_U)
        u = _check_array(got, np.uint8, (KAPPA, _padded(m) // 8), peer, "a matrix u", step)
        q = session._prg.rows(use, u.shape[1])
        q[session._s_bits] ^= u[session._s_bits]
        rows = transpose_bits(q)[:m]
        x0 = None if ones_only or raw else session._hash(rows, use, blocks)
        rows.view("<u8")[...] ^= session._s_words  # q_j ⊕ s
        x1 = rows if raw else session._hash(rows, use, blocks)
        await party.send(peer, f"{session.tag}/{use}/reply", answer(c, x0, x1))
        party.metrics.count("ot_extended", m)
        hashes = 0 if raw else 1 if ones_only else 2
        party.metrics.count("aes_blocks", KAPPA * u.shape[1] // BLOCK + hashes * m * (1 + blocks))


async def _extend_as_receiver(
    party: Party,
    session: ExtensionReceiver,
    sizes: Sequence[int],
    choices: Callable[[int], np.ndarray],
    settle: Callable[[int, np.ndarray, np.ndarray, Any, str], None],
    *,
    blocks: int = 1,
    raw: bool = False,
) -> None:
    """Batches of ``sizes`` OTs as the extension receiver with ``choices(batch)``: send ``u``,
    hash the rows ``t_j`` (``blocks`` blocks each) and call ``settle(batch, bits, H(j, t_j),
    the sender's answer, its tag)``; with ``raw``, ``settle`` gets the rows ``t_j``
    themselves."""
    first = session._reserve(len(sizes))
    peer = session.peer
    pending: deque[tuple[int, int, np.ndarray, np.ndarray]] = deque()

    async def settle_oldest() -> None:
        c, use, bits, h = pending.popleft()
        step = f"{session.tag}/{use}/reply"
        settle(c, bits, h, await party.recv(peer, step, EXTENSION_REPLY), step)

    for c, m in enumerate(sizes):
        use = first + c
        bits = choices(c)
        nb = _padded(m) // 8
        packed = np.zeros(nb, dtype=np.uint8)
        packed[: -(-m // 8)] = np.packbits(bits, bitorder="little")
        t = session._prg0.rows(use, nb)
        u = session._prg1.rows(use, nb)
        u ^= t
        u ^= packed
        await party.send(peer, f"{session.tag}/{use}/u", u)
        rows = transpose_bits(t)[:m]
        pending.append((c, use, bits, rows if raw else session._hash(rows, use, blocks)))
        party.metrics.count("ot_extended", m)
        party.metrics.count(
            "aes_blocks", 2 * KAPPA * nb // BLOCK + (0 if raw else m * (1 + blocks))
        )
        if len(pending) >= WINDOW:
            await settle_oldest()
    while pending:
        await settle_oldest()


def _words(rows: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each 16-byte row as a little-endian uint64."""
    return np.ascontiguousarray(rows).view("<u8")[:, 0].astype(np.uint64)


def _check_ack(reply: Any, peer: str, step: str) -> None:
    if reply is not None:
        raise ProtocolError(f"OT: {peer} sent, at {step}, an answer where none was expected")


async def random_ots_send(
    party: Party, session: ExtensionSender, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random OTs as the sender: ``(x0, x1)``, two ``(m, 16)`` uint8 arrays of uniform
    messages; the receiver (:func:`random_ots_receive`) gets one of each pair."""
    m = _check_count(m, "the number of OTs m")
    x0 = np.empty((m, BLOCK), dtype=np.uint8)
    x1 = np.empty_like(x0)
    sizes = _split(m, CHUNK_OTS)

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> None:
        start = c * CHUNK_OTS
        x0[start : start + sizes[c]] = h0
        x1[start : start + sizes[c]] = h1

    await _extend_as_sender(party, session, sizes, answer)
    _record(party, "ot/random", session, "sender", ots=m)
    return x0, x1


async def random_ots_receive(
    party: Party, session: ExtensionReceiver, m: int, *, choices: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random OTs as the receiver: ``(bits, x)`` with ``x[j] = x_{bits[j]}[j]`` of the
    sender's pairs, ``bits`` uniform from the OS generator unless ``choices`` gives them."""
    m = _check_count(m, "the number of OTs m")
    if choices is None:
        bits = np.unpackbits(np.frombuffer(secrets.token_bytes(-(-m // 8)), np.uint8))[:m]
    else:
        bits = _bits(choices, "choices")
        if len(bits) != m:
            raise ConfigError(f"choices has {len(bits)} bits, but m = {m}")
    x = np.empty((m, BLOCK), dtype=np.uint8)
    sizes = _split(m, CHUNK_OTS)

    def settle(c: int, _bits_c: np.ndarray, h: np.ndarray, reply: Any, step: str) -> None:
        _check_ack(reply, session.peer, step)
        x[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]] = h

    await _extend_as_receiver(
        party, session, sizes, lambda c: bits[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]], settle
    )
    _record(party, "ot/random", session, "receiver", ots=m)
    return bits, x


async def kept_rows_send(party: Party, session: ExtensionSender, m: int) -> np.ndarray:
    """``m`` OTs whose rows this side keeps, as the extension sender: the ``(m, 2)`` uint64
    prefixes (:meth:`CorrelationRobustHash.prefix`) of the rows ``q_j ⊕ s``, so that
    ``H((j + b 2^32, use), q_j ⊕ s)`` can be formed later for any batch number ``use`` the
    session reserves: the message ``x_j^1`` of OT ``j``, as wide as wanted, as often as
    wanted. The receiver (:func:`kept_rows_receive`) can form it where it chose 1. The
    sender answers each batch with an acknowledgement only."""
    m = _check_count(m, "the number of OTs m")
    out = np.empty((m, 2), dtype=np.uint64)
    sizes = _split(m, CHUNK_OTS)

    def answer(c: int, _h0: Any, rows: np.ndarray) -> None:
        start = c * CHUNK_OTS
        out[start : start + sizes[c]] = session.hash.prefix(rows, start)

    await _extend_as_sender(party, session, sizes, answer, raw=True)
    _record(party, "ot/kept", session, "sender", ots=m)
    return out


async def kept_rows_receive(party: Party, session: ExtensionReceiver, choices: Any) -> np.ndarray:
    """The receiver's side of :func:`kept_rows_send` with ``choices`` (bits): the prefixes of
    its rows ``t_j`` (``= q_j ⊕ s`` where it chose 1, so that it forms the same ``x_j^1``;
    where it chose 0 it holds ``q_j`` and ``x_j^1`` stays hidden from it)."""
    bits = _bits(choices, "choices")
    m = len(bits)
    out = np.empty((m, 2), dtype=np.uint64)
    sizes = _split(m, CHUNK_OTS)

    def settle(c: int, _bits_c: np.ndarray, rows: np.ndarray, reply: Any, step: str) -> None:
        _check_ack(reply, session.peer, step)
        start = c * CHUNK_OTS
        out[start : start + sizes[c]] = session.hash.prefix(rows, start)

    await _extend_as_receiver(
        party, session, sizes, lambda c: bits[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]], settle,
        raw=True,
    )  # fmt: skip
    _record(party, "ot/kept", session, "receiver", ots=m)
    return out


def _cot_answer(delta: np.ndarray, h0: np.ndarray, h1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sender's output ``x = x^0`` and message ``τ = x^1 - x^0 - Δ`` (mod ``2^64``)."""
    x = _words(h0)
    return x, _words(h1) - x - delta


def _cot_settle(bits: np.ndarray, h: np.ndarray, tau: Any, peer: str, step: str) -> np.ndarray:
    """The receiver's ``y = H(t_j) - r_j τ_j`` (``= x_j + r_j Δ_j``)."""
    tau = _check_array(tau, np.uint64, (len(bits),), peer, "the corrections τ", step)
    return _words(h) - tau * bits.astype(np.uint64)


async def correlated_ots_send(
    party: Party, session: ExtensionSender, delta: np.ndarray
) -> np.ndarray:
    """Correlated OTs over ``Z_{2^64}`` as the sender with correlations ``delta`` (a 1-d uint64
    array, one ``Δ_j`` per OT; ``np.full(m, Δ)`` for one correlation): the uniform ``x``
    (uint64) such that the receiver gets ``x + bits * delta``."""
    delta = _ring_vector(delta, "delta")
    m = len(delta)
    out = np.empty(m, dtype=np.uint64)
    sizes = _split(m, CHUNK_OTS)

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
        part = slice(c * CHUNK_OTS, c * CHUNK_OTS + sizes[c])
        out[part], tau = _cot_answer(delta[part], h0, h1)
        return tau

    await _extend_as_sender(party, session, sizes, answer)
    _record(party, "ot/correlated", session, "sender", ots=m)
    return out


async def correlated_ots_receive(
    party: Party, session: ExtensionReceiver, choices: Any
) -> np.ndarray:
    """Correlated OTs over ``Z_{2^64}`` as the receiver with ``choices`` (bits): ``y = x +
    choices * delta`` (uint64, mod ``2^64``) for the sender's ``x`` and ``delta``."""
    bits = _bits(choices, "choices")
    m = len(bits)
    out = np.empty(m, dtype=np.uint64)
    sizes = _split(m, CHUNK_OTS)

    def settle(c: int, bits_c: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
        part = slice(c * CHUNK_OTS, c * CHUNK_OTS + sizes[c])
        out[part] = _cot_settle(bits_c, h, tau, session.peer, step)

    await _extend_as_receiver(
        party, session, sizes, lambda c: bits[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]], settle
    )
    _record(party, "ot/correlated", session, "receiver", ots=m)
    return out


# --------------------------------------------------------------------------- Gilboa, Beaver


_SHIFTS = np.arange(RING_BITS, dtype=np.uint64)


def _ring_vector(values: Any, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype != np.uint64:
        raise ConfigError(
            f"{what} must be a 1-d uint64 array (elements of Z_2^64), got "
            f"{arr.dtype} of shape {arr.shape}"
        )
    return arr


async def ot_multiply(
    party: Party,
    peer: str,
    values: np.ndarray,
    role: Role,
    *,
    session: ExtensionSender | ExtensionReceiver | None = None,
    tag: str = "ot/mul",
) -> np.ndarray:
    """Additive shares mod ``2^64`` of the elementwise product of A's ``values`` and B's
    ``values`` (1-d uint64 arrays of the same, public length ``n``): A's and B's outputs add up
    to ``a * b`` (wrapping). ``role`` is ``"A"`` (the extension sender: its value is the
    correlation) or ``"B"`` (the extension receiver: the bits of its value choose).

    ``64 n`` correlated OTs, 1,536 bytes per product; without a ``session`` it first sets one
    up with ``peer`` under ``tag`` (128 base OTs, one more round trip). The batches travel
    under the session's tag; ``tag`` also names the ledger entry."""
    values = _ring_vector(values, "values")
    n = len(values)
    if role not in ("A", "B"):
        raise ConfigError(f"role must be 'A' (the value of Δ) or 'B' (the bits), got {role!r}")
    sizes = [RING_BITS * k for k in _split(n, CHUNK_PRODUCTS)]
    shares = np.empty(n, dtype=np.uint64)

    def part(c: int) -> slice:
        return slice(c * CHUNK_PRODUCTS, c * CHUNK_PRODUCTS + sizes[c] // RING_BITS)

    if role == "A":
        sender = await extension_sender(party, peer, tag=tag) if session is None else session
        if not isinstance(sender, ExtensionSender) or sender.peer != peer:
            raise ConfigError(f"role A needs an ExtensionSender session with {peer}, got {sender}")

        def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
            delta = (values[part(c), None] << _SHIFTS).reshape(-1)  # a 2^k, wrapping
            x, tau = _cot_answer(delta, h0, h1)
            shares[part(c)] = -x.reshape(-1, RING_BITS).sum(axis=1, dtype=np.uint64)
            return tau

        await _extend_as_sender(party, sender, sizes, answer)
    else:
        receiver = await extension_receiver(party, peer, tag=tag) if session is None else session
        if not isinstance(receiver, ExtensionReceiver) or receiver.peer != peer:
            raise ConfigError(
                f"role B needs an ExtensionReceiver session with {peer}, got {receiver}"
            )

        def choices(c: int) -> np.ndarray:
            bits = (values[part(c), None] >> _SHIFTS) & np.uint64(1)
            return bits.astype(np.uint8).reshape(-1)

        def settle(c: int, bits: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
            y = _cot_settle(bits, h, tau, peer, step)
            shares[part(c)] = y.reshape(-1, RING_BITS).sum(axis=1, dtype=np.uint64)

        await _extend_as_receiver(party, receiver, sizes, choices, settle)
    party.metrics.count("ot_products", n)
    party.ledger.record("ot/multiply", {"peer": peer, "role": role, "products": n}, step=tag)
    return shares


@dataclass(frozen=True, repr=False)
class BeaverTriples:
    """One party's additive shares mod ``2^64`` of ``n`` triples ``(a, b, c = a b)``: three
    uint64 arrays. ``repr`` shows the count, never a share."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    def __len__(self) -> int:
        return len(self.a)

    def __repr__(self) -> str:
        return f"BeaverTriples(n={len(self)})"


async def beaver_triples(
    party: Party,
    peer: str,
    n: int,
    *,
    session: ExtensionSender | ExtensionReceiver | None = None,
    tag: str = "ot/beaver",
) -> BeaverTriples:
    """``n`` Beaver triples shared with ``peer``: each party draws its shares ``a_i, b_i``
    uniformly; the cross products ``a_0 b_1`` and ``b_0 a_1`` are one :func:`ot_multiply` of
    ``2n`` products in which party 0 (the first of the two in the deployment order, or the
    holder of an :class:`ExtensionSender` ``session``) is A. ``2 * 64 * n`` correlated OTs."""
    n = _check_count(n, "the number of triples n")
    if session is not None:
        role: Role = "A" if isinstance(session, ExtensionSender) else "B"
    else:
        role = "A" if party.parties.index(party.name) < party.parties.index(peer) else "B"
    a, b = os_random_words(n), os_random_words(n)
    mine = np.concatenate([a, b] if role == "A" else [b, a])  # A: Δ = a_0, b_0; B: bits of b_1, a_1
    z = await ot_multiply(party, peer, mine, role, session=session, tag=tag)
    c = a * b + z[:n] + z[n:]
    party.metrics.count("beaver_triples", n)
    party.ledger.record("ot/beaver", {"peer": peer, "role": role, "triples": n}, step=tag)
    return BeaverTriples(a, b, c)


# --------------------------------------------------------------------------- vectors, rings

#: unsigned rings a vector OT or a ring product may compute in: ``Z_{2^16}``, ``Z_{2^32}``,
#: ``Z_{2^64}``
RING_DTYPES = (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))
#: elements of the correlations of one call of :func:`ring_products_send` (its pieces): bounds
#: the memory of a product to a few arrays of this many ring elements
PIECE_ELEMENTS = 2**22


def _ring_dtype(dtype: Any) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt not in RING_DTYPES:
        raise ConfigError(f"a ring must be one of {[str(d) for d in RING_DTYPES]}, got {dt}")
    return dt


def _blocks_per_ot(width: int, dtype: np.dtype[Any]) -> int:
    """Hash blocks per vector OT: each gives 16 bytes of pad."""
    return max(1, -(-width * dtype.itemsize // BLOCK))


def _pads(h: np.ndarray, width: int, dtype: np.dtype[Any]) -> np.ndarray:
    """``n`` vectors of ``width`` ring elements from the ``(n, 16 r)`` hashes ``h`` (a view
    where the width fills the blocks, else a contiguous copy)."""
    pads = np.ascontiguousarray(h).view(dtype.newbyteorder("<"))
    if pads.dtype == dtype and pads.shape[1] == width:
        return pads
    # a copy: numpy's in-place operations on such strided views are not to be trusted. A pad
    # of 2, 4 or 8 bytes moves as one element (numpy copies a short row element by element)
    size = width * dtype.itemsize
    if size in (2, 4, 8) and dtype == dtype.newbyteorder("<"):
        word = np.ascontiguousarray(h).view(f"<u{size}")[:, 0]
        return np.ascontiguousarray(word).view(dtype).reshape(len(h), width)
    return np.ascontiguousarray(pads[:, :width], dtype=dtype)


def _per_batch(blocks: int) -> int:
    """Vector OTs per batch: :data:`PAD_BLOCKS` hash blocks' worth (one OT at least, at most
    :data:`CHUNK_OTS`), so that a batch's pads stay a few MiB whatever the width."""
    return max(1, min(CHUNK_OTS, PAD_BLOCKS // blocks))


async def vector_ots_send(party: Party, session: ExtensionSender, delta: np.ndarray) -> np.ndarray:
    """Correlated OTs of vectors over a ring (``Z_{2^16}``, ``Z_{2^32}`` or ``Z_{2^64}``, the
    dtype of ``delta``) as the sender: ``delta`` is ``n x w``, one correlation vector per OT;
    returns the uniform ``x`` (``n x w``) such that the receiver gets ``x + bits * delta``.
    Each vector OT is one IKNP OT whose hashes are stretched to ``⌈w · itemsize / 16⌉``
    blocks under distinct tweaks (:class:`CorrelationRobustHash`): the pads ``x^0, x^1``.
    The sender sends ``τ = x^1 - x^0 - Δ``: ``w · itemsize`` bytes beside the 16 of the
    OT's column of ``u``. Ledger ``ot/vector`` (``ots``, ``width``)."""
    if delta.ndim != 2:
        raise ConfigError(f"delta must be an n x w array, got shape {delta.shape}")
    dtype = _ring_dtype(delta.dtype)
    n, w = delta.shape
    r = _blocks_per_ot(w, dtype)
    per = _per_batch(r)
    counts = _split(n, per)
    out = np.empty((n, w), dtype=dtype)

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
        part = slice(c * per, c * per + counts[c])
        x0 = _pads(h0, w, dtype)
        out[part] = x0
        tau = _pads(h1, w, dtype)
        tau -= x0
        tau -= delta[part]
        return tau

    await _extend_as_sender(party, session, counts, answer, blocks=r)
    _record(party, "ot/vector", session, "sender", ots=n, width=w)
    return out


async def vector_ots_receive(
    party: Party, session: ExtensionReceiver, choices: Any, width: int, dtype: Any
) -> np.ndarray:
    """Correlated OTs of vectors as the receiver with ``choices`` (``n`` bits): ``y = x +
    choices * delta`` (``n x width``, in the ring of ``dtype``) for the sender's ``x`` and
    ``delta`` (:func:`vector_ots_send`)."""
    bits = _bits(choices, "choices")
    dt = _ring_dtype(dtype)
    w = _check_count(width, "the width")
    n = len(bits)
    r = _blocks_per_ot(w, dt)
    per = _per_batch(r)
    counts = _split(n, per)
    out = np.empty((n, w), dtype=dt)

    def chosen(c: int) -> np.ndarray:
        return bits[c * per : c * per + counts[c]]

    def settle(c: int, _bits_c: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
        part = slice(c * per, c * per + counts[c])
        tau = _check_array(tau, dt, (counts[c], w), session.peer, "the corrections τ", step)
        y = _pads(h, w, dt)
        y -= tau * bits[part, None].astype(dt)  # x^1 - τ = x^0 + Δ where the bit is 1
        out[part] = y

    await _extend_as_receiver(party, session, counts, chosen, settle, blocks=r)
    _record(party, "ot/vector", session, "receiver", ots=n, width=w)
    return out


def _one_hot_batches(n: int, s: int, blocks: int) -> tuple[int, list[int]]:
    """Rows per batch of :func:`one_hot_products_send` (``s`` OTs a row, one at least) and the
    rows of each batch."""
    per = max(1, PAD_BLOCKS // (blocks * s))
    return per, _split(n, per)


def _add_by_group(out: np.ndarray, x: np.ndarray, first: int, group: int) -> None:
    """``out[g] += `` the rows of ``x`` (rows ``first..`` of the whole) in group ``g``
    (consecutive runs of ``group`` rows)."""
    row, end = first, first + len(x)
    while row < end:
        g = row // group
        stop = min(end, (g + 1) * group)
        out[g] += x[row - first : stop - first].sum(axis=0, dtype=out.dtype)
        row = stop


async def one_hot_products_send(
    party: Party,
    session: ExtensionSender,
    D: np.ndarray,
    s: int,
    *,
    take: np.ndarray | None = None,
    group: int | None = None,
) -> np.ndarray:
    """Products of one-hot rows and vectors, as the side holding the vectors: ``D`` is
    ``N x w`` (a ring dtype) and row ``i`` of the product uses ``D[take[i]]`` (``take``:
    ``n`` row numbers, ``range(N)`` by default); the receiver
    (:func:`one_hot_products_receive`) holds ``n`` choices ``v_i`` in ``[0, s)``. The two
    outputs add up to ``e_{v_i} ⊗ D[take[i]]`` (``n x s x w``), or with ``group`` to their
    sums over consecutive runs of ``group`` rows (``n / group x s x w``).

    ``s`` OTs a row and one vector of ``w`` elements: the ``s`` OTs give this side the
    stretched pads ``x_j = x_j^1`` (its shares are ``-x_j``); the receiver chooses 1 in all
    but OT ``v_i``, so it holds every ``x_j`` but ``x_{v_i}``; this side sends ``c = D[.] +
    Σ_j x_j`` and the receiver's row ``v_i`` is ``c - Σ_{j ≠ v_i} x_j = D[.] + x_{v_i}``. The
    receiver never sees ``x_{v_i}``, so ``c`` is uniform to it; the choices are hidden by the
    OTs. Against one vector OT per entry of the one-hot row (``s`` vectors of ``w`` sent a
    row), the vector crosses once: ``16 s + w l`` bytes a row instead of ``s (16 + w l)``
    (``l`` bytes an element), the better for ``s >= 3`` and ``w l > 16``."""
    if D.ndim != 2 or s < 1:
        raise ConfigError(f"D must be N x w and s >= 1, got shape {D.shape}, s={s}")
    dtype = _ring_dtype(D.dtype)
    w = D.shape[1]
    take = np.arange(len(D)) if take is None else np.asarray(take)
    n = len(take)
    if group is not None and (group < 1 or n % group):
        raise ConfigError(f"{n} rows do not fall into groups of {group}")
    r = _blocks_per_ot(w, dtype)
    per, counts = _one_hot_batches(n, s, r)
    out = np.zeros((n // group, s, w) if group else (n, s, w), dtype=dtype)

    def answer(c: int, _h0: np.ndarray | None, h1: np.ndarray) -> np.ndarray:
        first = c * per
        x = _pads(h1, w, dtype).reshape(counts[c], s, w)
        corrections = D[take[first : first + counts[c]]] + x.sum(axis=1, dtype=dtype)
        np.negative(x, out=x)
        if group:
            _add_by_group(out, x, first, group)
        else:
            out[first : first + counts[c]] = x
        return corrections

    await _extend_as_sender(party, session, [s * k for k in counts], answer, blocks=r,
                            ones_only=True)  # fmt: skip
    _record(party, "ot/one-hot", session, "sender", rows=n, values=s, width=w)
    return out


async def one_hot_products_receive(
    party: Party,
    session: ExtensionReceiver,
    v: np.ndarray,
    s: int,
    width: int,
    dtype: Any,
    *,
    group: int | None = None,
) -> np.ndarray:
    """The chooser's side of :func:`one_hot_products_send`: ``v`` (``n`` integers in ``[0,
    s)``); returns this side's shares (``n x s x width``, or their sums by ``group``)."""
    v = np.asarray(v)
    if v.ndim != 1 or (len(v) and (v.min() < 0 or v.max() >= s)):
        raise ConfigError(f"the choices must be a 1-d array of integers in [0, {s})")
    dt = _ring_dtype(dtype)
    w = _check_count(width, "the width")
    n = len(v)
    if group is not None and (group < 1 or n % group):
        raise ConfigError(f"{n} rows do not fall into groups of {group}")
    r = _blocks_per_ot(w, dt)
    per, counts = _one_hot_batches(n, s, r)
    out = np.zeros((n // group, s, w) if group else (n, s, w), dtype=dt)
    values = np.arange(s)

    def chosen(c: int) -> np.ndarray:
        rows = v[c * per : c * per + counts[c]]
        return (values[None, :] != rows[:, None]).reshape(-1).astype(np.uint8)

    def settle(c: int, _bits_c: np.ndarray, h: np.ndarray, corr: Any, step: str) -> None:
        first, k = c * per, counts[c]
        corr = _check_array(corr, dt, (k, w), session.peer, "the corrections c", step)
        y = _pads(h, w, dt).reshape(k, s, w)
        rows, mine = np.arange(k), v[first : first + k]
        y[rows, mine] = 0
        y[rows, mine] = corr - y.sum(axis=1, dtype=dt)
        if group:
            _add_by_group(out, y, first, group)
        else:
            out[first : first + k] = y

    await _extend_as_receiver(party, session, [s * k for k in counts], chosen, settle, blocks=r)
    _record(party, "ot/one-hot", session, "receiver", rows=n, values=s, width=w)
    return out


def _pieces(n_groups: int, per_group: int) -> list[slice]:
    """Groups in pieces of at most :data:`PIECE_ELEMENTS` correlation elements (at least one
    group a piece)."""
    step = max(1, PIECE_ELEMENTS // max(1, per_group))
    return [slice(s, min(n_groups, s + step)) for s in range(0, n_groups, step)]


async def ring_products_send(
    party: Party, session: ExtensionSender, Y: np.ndarray, *, group: int = 1
) -> np.ndarray:
    """Gilboa products with vector correlations, in the ring of ``Y``'s dtype, as the side
    that holds the vectors: ``Y`` is ``n x w``; the receiver
    (:func:`ring_products_receive`) holds ``n`` scalars ``x``. The two outputs add up to
    ``x[i] * Y[i]``, summed over consecutive groups of ``group`` rows (``n / group x w``).
    One vector OT of width ``w`` per bit of each ``x[i]`` (``Δ = Y[i] 2^k``).

    In ``Z_{2^l}`` directly: the bits above ``l`` of ``x`` and the products would only add
    multiples of ``2^l``, so this equals the ``Z_{2^64}`` products of :func:`ot_multiply`
    truncated to ``l`` bits (``2^l`` divides ``2^64``), at ``l`` OTs a product instead of 64."""
    if Y.ndim != 2 or group < 1 or Y.shape[0] % group:
        raise ConfigError(f"Y must be n x w with n a multiple of group={group}, got {Y.shape}")
    dtype = _ring_dtype(Y.dtype)
    bits = dtype.itemsize * 8
    shifts = np.arange(bits, dtype=dtype)
    n, w = Y.shape
    out = np.empty((n // group, w), dtype=dtype)
    for piece in _pieces(n // group, group * bits * w):
        rows = Y[piece.start * group : piece.stop * group]
        delta = (rows[:, None, :] << shifts[None, :, None]).reshape(-1, w)
        x = await vector_ots_send(party, session, delta)
        out[piece] = -x.reshape(-1, group * bits, w).sum(axis=1, dtype=dtype)
    party.ledger.record("ot/ring-products", {"peer": session.peer, "role": "vectors",
                                             "products": n, "width": w, "group": group},
                        step=session.tag)  # fmt: skip
    return out


async def ring_products_receive(
    party: Party, session: ExtensionReceiver, x: np.ndarray, width: int, *, group: int = 1
) -> np.ndarray:
    """The scalar side of :func:`ring_products_send`: ``x`` (``n``, a ring dtype) chooses by
    its bits; returns this side's shares (``n / group x width``)."""
    if x.ndim != 1 or group < 1 or len(x) % group:
        raise ConfigError(f"x must be 1-d with a length a multiple of {group}, got {x.shape}")
    dtype = _ring_dtype(x.dtype)
    bits = dtype.itemsize * 8
    shifts = np.arange(bits, dtype=dtype)
    n = len(x)
    out = np.empty((n // group, width), dtype=dtype)
    for piece in _pieces(n // group, group * bits * width):
        rows = x[piece.start * group : piece.stop * group]
        chosen = ((rows[:, None] >> shifts[None, :]) & dtype.type(1)).reshape(-1)
        y = await vector_ots_receive(party, session, chosen, width, dtype)
        out[piece] = y.reshape(-1, group * bits, width).sum(axis=1, dtype=dtype)
    party.ledger.record("ot/ring-products", {"peer": session.peer, "role": "scalars",
                                             "products": n, "width": width, "group": group},
                        step=session.tag)  # fmt: skip
    return out
