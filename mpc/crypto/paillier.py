"""Paillier's additively homomorphic encryption with gmpy2 (``g = n + 1``).

Keys follow the shape of ``cryptography``'s key objects: :meth:`PaillierPrivateKey.generate`
makes a fresh key pair, :attr:`PaillierPrivateKey.public_key` is the part that travels, and
``repr`` never prints a secret. With ``n = p q`` and ``n^2``::

    Enc(m; r) = (1 + m n) * r^n  mod n^2          (g = n + 1, so g^m = 1 + m n)
    Dec(c)    = L(c^λ mod n^2) * μ  mod n          (computed with the CRT over p^2 and q^2)
    Enc(a) * Enc(b) = Enc(a + b),   Enc(a)^k = Enc(k a)     (plaintexts mod n)

**Safe calls.** :meth:`PaillierPublicKey.encrypt_many` and
:meth:`PaillierPrivateKey.encrypt_many` give ciphertexts with fresh randomness;
:meth:`PaillierPublicKey.rerandomize_many` refreshes ciphertexts before they leave a party.
**Raw calls.** :meth:`PaillierPublicKey.raw_linear_combination` returns ``Enc(sum k_i m_i)``
*without* fresh randomness: its randomness is a function of its inputs', so it must go
through ``rerandomize_many`` (or be multiplied by a fresh encryption) before it is sent.

**Fast encryption with the private key.** The randomness ``r^n mod n^2`` for a uniform ``r``
is a uniform element of the subgroup of ``n``-th residues, which by the CRT is the product of
the order-``(p-1)`` subgroup of ``Z*_{p^2}`` and the order-``(q-1)`` subgroup of ``Z*_{q^2}``.
``x -> x^p mod p^2`` maps ``Z*_p`` one-to-one onto the first (``(x + kp)^p = x^p mod p^2``),
so the key holder draws ``x_p`` uniform in ``Z*_p`` and ``x_q`` in ``Z*_q`` and combines
``x_p^p mod p^2`` with ``x_q^q mod q^2``: the same distribution as ``r^n mod n^2``, for two
exponentiations with half-size moduli and exponents (about 3.5x cheaper than one full
``r^n mod n^2``). Batches run in threads that release the GIL.

Randomness comes from the OS (``secrets``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import gmpy2
import numpy as np
from gmpy2 import mpz

from mpc.crypto import randomness
from mpc.errors import ConfigError, ProtocolError

__all__ = [
    "MIN_KEY_BITS",
    "PAILLIER_KEY_BITS",
    "PaillierPrivateKey",
    "PaillierPublicKey",
    "multi_powmod",
]

#: Default modulus size. A 2048-bit factoring modulus gives about 112-bit security
#: (NIST SP 800-57 Part 1, Table 2), the level of the 2048-bit groups used elsewhere.
PAILLIER_KEY_BITS = 2048
#: Smallest modulus :meth:`PaillierPrivateKey.generate` accepts. Keys this small are only
#: for fast tests; a deployment keeps the default.
MIN_KEY_BITS = 512
#: Below this many elements a batch runs in the calling thread (thread start-up costs more).
_PARALLEL_MIN = 16


def _threads() -> int:
    return max(1, os.cpu_count() or 1)


def _batched(fn: Callable[[list[Any]], list[Any]], items: list[Any]) -> list[Any]:
    """Apply ``fn`` (a gmpy2 batch call) to ``items`` split over the machine's cores."""
    workers = min(_threads(), max(1, len(items) // _PARALLEL_MIN))
    if workers == 1:
        return fn(items)
    size = -(-len(items) // workers)
    chunks = [items[i : i + size] for i in range(0, len(items), size)]

    def run(chunk: list[Any]) -> list[Any]:
        with gmpy2.context(gmpy2.get_context(), allow_release_gil=True):
            return fn(chunk)

    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        return [y for part in pool.map(run, chunks) for y in part]


def _powmod_base_list(bases: list[Any], exponent: Any, modulus: Any) -> list[Any]:
    """``[b^exponent mod modulus for b in bases]``, in parallel."""
    return _batched(lambda chunk: list(gmpy2.powmod_base_list(chunk, exponent, modulus)), bases)


def _random_units(modulus: Any, count: int) -> list[Any]:
    """``count`` uniform elements of ``Z*_modulus`` from the OS."""
    out: list[Any] = []
    m = int(modulus)
    while len(out) < count:
        r = mpz(randomness.randbelow(m - 1, "paillier/r") + 1)
        if gmpy2.gcd(r, modulus) == 1:
            out.append(r)
    return out


@dataclass(frozen=True)
class PaillierPublicKey:
    """The public modulus ``n``; ``g = n + 1``."""

    n: Any  # gmpy2.mpz
    n_sq: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = mpz(self.n)
        if n < 15 or n % 2 == 0:
            raise ProtocolError(f"a Paillier modulus must be an odd composite > 15, got {n}")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "n_sq", n * n)

    @property
    def bits(self) -> int:
        return int(self.n.bit_length())

    @property
    def ciphertext_bytes(self) -> int:
        """Fixed width of one serialised ciphertext."""
        return (int(self.n_sq.bit_length()) + 7) // 8

    def _check_plaintexts(self, ms: Sequence[Any]) -> list[Any]:
        out = [mpz(m) for m in ms]
        for m in out:
            if not 0 <= m < self.n:
                raise ValueError(f"plaintext outside [0, n) for a {self.bits}-bit key")
        return out

    def raw_encrypt(self, m: Any, r: Any) -> Any:
        """``(1 + m n) r^n mod n^2`` with the caller's ``r``: for known-answer tests only;
        use :meth:`encrypt_many`, which draws ``r`` itself."""
        return (1 + mpz(m) * self.n) * gmpy2.powmod(mpz(r), self.n, self.n_sq) % self.n_sq

    def encrypt_many(self, plaintexts: Sequence[Any]) -> list[Any]:
        """Encrypt ``0 <= m < n`` each with fresh randomness (one full ``r^n`` each)."""
        ms = self._check_plaintexts(plaintexts)
        noise = _powmod_base_list(_random_units(self.n, len(ms)), self.n, self.n_sq)
        return [(1 + m * self.n) * h % self.n_sq for m, h in zip(ms, noise, strict=True)]

    def rerandomize_many(self, ciphertexts: Sequence[Any]) -> list[Any]:
        """Multiply each ciphertext by a fresh encryption of 0 (same plaintext, new look)."""
        noise = _powmod_base_list(_random_units(self.n, len(ciphertexts)), self.n, self.n_sq)
        return [c * h % self.n_sq for c, h in zip(ciphertexts, noise, strict=True)]

    def raw_linear_combination(
        self, ciphertexts: Sequence[Any], coefficients: Sequence[int]
    ) -> Any:
        """``prod c_i^{k_i} mod n^2 = Enc(sum k_i m_i)`` for ``k_i >= 0`` (a multi-exponentiation,
        Pippenger's bucket method). NOT re-randomised: see :meth:`rerandomize_many`."""
        return multi_powmod(ciphertexts, coefficients, self.n_sq)

    def ciphertexts_to_array(self, ciphertexts: Sequence[Any]) -> np.ndarray:
        """Serialise ciphertexts as a ``(k, ciphertext_bytes)`` uint8 array (big-endian rows)."""
        width = self.ciphertext_bytes
        blob = b"".join(mpz(c).to_bytes(width, "big") for c in ciphertexts)
        return np.frombuffer(blob, dtype=np.uint8).reshape(len(ciphertexts), width)

    def ciphertexts_from_array(self, array: object) -> list[Any]:
        """Inverse of :meth:`ciphertexts_to_array`; every value must lie in ``(0, n^2)``.
        Raises :class:`~mpc.errors.ProtocolError` otherwise."""
        width = self.ciphertext_bytes
        if (
            not isinstance(array, np.ndarray)
            or array.dtype != np.uint8
            or array.ndim != 2
            or array.shape[1] != width
        ):
            raise ProtocolError(
                f"expected ciphertexts as a (k, {width}) uint8 array for a {self.bits}-bit key, "
                f"got {getattr(array, 'dtype', type(array).__name__)} "
                f"{getattr(array, 'shape', '')}"
            )
        blob = array.tobytes()
        out = [mpz.from_bytes(blob[i : i + width], "big") for i in range(0, len(blob), width)]
        for c in out:
            if not 0 < c < self.n_sq:
                raise ProtocolError("a ciphertext is outside (0, n^2)")
        return out


class PaillierPrivateKey:
    """The factors ``p, q`` of ``n``. ``repr`` never shows them; create with :meth:`generate`.

    One fresh key per protocol invocation unless a protocol says otherwise.
    """

    __slots__ = ("_hp", "_hq", "_p", "_p2", "_p2_inv", "_p_inv", "_q", "_q2", "public_key")

    def __init__(self, p: int, q: int) -> None:
        p_, q_ = mpz(p), mpz(q)
        if p_ == q_ or not (gmpy2.is_prime(p_) and gmpy2.is_prime(q_)):
            raise ConfigError("a Paillier key needs two distinct primes")
        n = p_ * q_
        if gmpy2.gcd(n, (p_ - 1) * (q_ - 1)) != 1:
            raise ConfigError("gcd(n, (p-1)(q-1)) must be 1 for a Paillier key")
        self._p, self._q = p_, q_
        self._p2, self._q2 = p_ * p_, q_ * q_
        self.public_key = PaillierPublicKey(n)
        g = n + 1
        self._hp = gmpy2.invert((gmpy2.powmod(g, p_ - 1, self._p2) - 1) // p_, p_)
        self._hq = gmpy2.invert((gmpy2.powmod(g, q_ - 1, self._q2) - 1) // q_, q_)
        self._p_inv = gmpy2.invert(p_, q_)  # for the CRT of plaintexts
        self._p2_inv = gmpy2.invert(self._p2, self._q2)  # for the CRT of randomness

    @classmethod
    def generate(cls, bits: int = PAILLIER_KEY_BITS) -> PaillierPrivateKey:
        """A fresh key with an exactly ``bits``-bit modulus, primes drawn from the OS."""
        if bits < MIN_KEY_BITS or bits % 2:
            raise ConfigError(
                f"Paillier key size must be an even number of bits >= {MIN_KEY_BITS}, got {bits}"
            )
        half = bits // 2
        while True:
            p, q = _prime(half), _prime(half)
            if p != q and (p * q).bit_length() == bits:
                try:
                    return cls(int(p), int(q))
                except ConfigError:
                    continue

    def __repr__(self) -> str:
        return f"PaillierPrivateKey(bits={self.public_key.bits}, p=<hidden>, q=<hidden>)"

    def encrypt_many(self, plaintexts: Sequence[Any]) -> list[Any]:
        """Encrypt with fresh randomness drawn through the factorisation (module docstring):
        the same ciphertext distribution as the public-key encryption, about 3.5x faster."""
        pk = self.public_key
        ms = pk._check_plaintexts(plaintexts)
        k = len(ms)
        hp = _powmod_base_list(_random_units(self._p, k), self._p, self._p2)
        hq = _powmod_base_list(_random_units(self._q, k), self._q, self._q2)
        p2, q2, p2_inv, n, n_sq = self._p2, self._q2, self._p2_inv, pk.n, pk.n_sq
        out = []
        for m, a, b in zip(ms, hp, hq, strict=True):
            h = a + p2 * ((b - a) * p2_inv % q2)  # CRT: h = a mod p^2, h = b mod q^2
            out.append((1 + m * n) * h % n_sq)
        return out

    def decrypt_many(self, ciphertexts: Sequence[Any]) -> list[Any]:
        """Decrypt each ciphertext to its plaintext in ``[0, n)`` (CRT decryption)."""
        p, q, p2, q2 = self._p, self._q, self._p2, self._q2
        cp = _powmod_base_list([mpz(c) % p2 for c in ciphertexts], p - 1, p2)
        cq = _powmod_base_list([mpz(c) % q2 for c in ciphertexts], q - 1, q2)
        out = []
        for a, b in zip(cp, cq, strict=True):
            mp = (a - 1) // p * self._hp % p
            mq = (b - 1) // q * self._hq % q
            out.append(mp + p * ((mq - mp) * self._p_inv % q))
        return out


def _prime(bits: int) -> Any:
    """A random prime of exactly ``bits`` bits with its two top bits set (so that the product
    of two has exactly ``2 * bits`` bits)."""
    while True:
        x = mpz(randomness.randbits(bits, "paillier/prime")) | (mpz(3) << (bits - 2)) | 1
        p = gmpy2.next_prime(x)
        if p.bit_length() == bits:
            return p


def multi_powmod(bases: Sequence[Any], exponents: Iterable[int], modulus: Any) -> Any:
    """``prod b_i^{e_i} mod modulus`` for non-negative ``e_i`` (Pippenger's bucket method).

    With ``w``-bit windows it costs about ``(E/w) (k + 2^{w+1})`` modular multiplications for
    ``k`` bases and ``E``-bit exponents, instead of ``~1.5 E k`` for separate powmods; 0/1
    exponents (the counting vectors of the decision-tree protocols) cost one product.
    """
    pairs = [(b, int(e)) for b, e in zip(bases, exponents, strict=True) if int(e)]
    if any(e < 0 for _, e in pairs):
        raise ValueError("multi_powmod needs non-negative exponents")
    if not pairs:
        return mpz(1)
    top = max(e for _, e in pairs).bit_length()
    k = len(pairs)
    w = min(range(1, 17), key=lambda w: -(-top // w) * (k + 2 ** (w + 1)))
    mask = (1 << w) - 1
    acc = mpz(1)
    for shift in range(((top - 1) // w) * w, -1, -w):
        if acc != 1:
            acc = gmpy2.powmod(acc, 1 << w, modulus)
        buckets: dict[int, Any] = {}
        for b, e in pairs:
            d = (e >> shift) & mask
            if d:
                prev = buckets.get(d)
                buckets[d] = b if prev is None else prev * b % modulus
        # sum over d of d * bucket[d] in the exponent, by running products from the top
        running: Any = None
        total: Any = None
        for d in range(mask, 0, -1):
            bd = buckets.get(d)
            if bd is not None:
                running = bd if running is None else running * bd % modulus
            if running is not None:
                total = running if total is None else total * running % modulus
        if total is not None:
            acc = acc * total % modulus
    return acc
