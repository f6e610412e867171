"""Commutative encryption (Pohlig-Hellman / SRA exponentiation) in a safe-prime group.

For a safe prime ``p = 2q + 1`` the quadratic residues mod ``p`` form a subgroup of prime
order ``q``. A key is an exponent ``e`` in ``[1, q)``; ``E_e(x) = x^e mod p`` on subgroup
elements. Encryption commutes, ``E_a(E_b(x)) = E_b(E_a(x)) = x^(ab)``, is a permutation of the
subgroup (so distinct inputs stay distinct), and ``D_e(y) = y^(e^-1 mod q)`` inverts it.
Under the DDH assumption in this group, ``(x, E_e(x))`` pairs for unknown ``e`` look random:
this is the cipher of Vaidya & Clifton's IsREmpty (Algorithm 2) and of commutative-encryption
set-intersection cardinality.

Groups are the RFC 3526 MODP groups (2048 and 3072 bits; both safe primes, checked by the
tests against the RFC's defining formula). Inputs reach the subgroup in one of two ways:

* :meth:`SafePrimeGroup.encode` maps an integer ``0 <= v < q - 2`` injectively into the
  subgroup (``x = v + 2`` if it is a residue, else ``p - x``; ``-1`` is a non-residue
  because ``p = 3 mod 4``), and :meth:`SafePrimeGroup.decode` maps it back. The offset 2
  keeps the identity 1 out: ``E(1) = 1`` under every key and would reveal the input;
* :meth:`SafePrimeGroup.hash_to_group` hashes arbitrary bytes (a transaction id) to a
  subgroup element by squaring a wide SHA-256-derived value mod ``p``: never a raw hash,
  which would leave half the elements outside the prime-order subgroup and leak a bit.

Exponents have :data:`EXPONENT_BITS` random bits. Fresh keys come from the OS (``secrets``)
for every protocol invocation; tests may pass a seeded ``random.Random``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gmpy2
from gmpy2 import mpz

from mpc.crypto import randomness

__all__ = [
    "EXPONENT_BITS",
    "MODP_2048",
    "MODP_3072",
    "CommutativeKey",
    "SafePrimeGroup",
]

#: Bits of a secret exponent. 256 random bits give 128-bit security against the best
#: generic (Pollard lambda/kangaroo) attack on short exponents, the same level as the
#: 3072-bit group and above that of the 2048-bit group (~112 bits), while each
#: exponentiation costs ~8x less than with a full 2047-bit exponent.
EXPONENT_BITS = 256

MODP_2048_HEX = (
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74"
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437"
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05"
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB"
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B"
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718"
    "3995497CEA956AE515D2261898FA051015728E5A8AACAA68FFFFFFFFFFFFFFFF"
)
MODP_3072_HEX = (
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74"
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437"
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05"
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB"
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B"
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718"
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33"
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7"
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864"
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2"
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF"
)


@dataclass(frozen=True)
class SafePrimeGroup:
    """The quadratic-residue subgroup (prime order ``q``) of ``Z_p^*`` for a safe prime ``p``."""

    name: str
    p: Any  # gmpy2.mpz
    q: Any = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "q", (self.p - 1) // 2)

    @property
    def bits(self) -> int:
        return int(self.p.bit_length())

    @property
    def element_bytes(self) -> int:
        return (self.bits + 7) // 8

    def is_element(self, y: Any) -> bool:
        """``y`` is in the prime-order subgroup (1 < y < p and a quadratic residue)."""
        y = mpz(y)
        return bool(1 < y < self.p and gmpy2.legendre(y, self.p) == 1)

    def encode(self, v: int) -> Any:
        """Map ``0 <= v < q - 2`` injectively to a subgroup element other than 1."""
        if not 0 <= v < self.q - 2:
            raise ValueError(f"value {v} outside the encodable range [0, q-2) of {self.name}")
        x = mpz(v) + 2
        return x if gmpy2.legendre(x, self.p) == 1 else self.p - x

    def decode(self, y: Any) -> int:
        """Inverse of :meth:`encode`."""
        y = mpz(y)
        x = y if y <= self.q else self.p - y
        return int(x) - 2

    def hash_to_group(self, data: bytes, domain: bytes = b"mpc/h2g") -> Any:
        """Hash bytes to a subgroup element (square of a wide hash mod p)."""
        need = self.element_bytes + 16  # 128 extra bits make the reduction mod p unbiased
        out = bytearray()
        counter = 0
        while len(out) < need:
            out += hashlib.sha256(
                domain + counter.to_bytes(4, "big") + len(data).to_bytes(8, "big") + data
            ).digest()
            counter += 1
        h = mpz(int.from_bytes(out[:need], "big")) % self.p
        return gmpy2.powmod(h, 2, self.p) if h > 1 else mpz(4)

    def to_bytes(self, y: Any) -> bytes:
        return int(y).to_bytes(self.element_bytes, "big")


MODP_2048 = SafePrimeGroup("modp2048", mpz("".join(MODP_2048_HEX), 16))
MODP_3072 = SafePrimeGroup("modp3072", mpz("".join(MODP_3072_HEX), 16))


class CommutativeKey:
    """A secret exponent in a :class:`SafePrimeGroup`. ``repr`` never shows it.

    Create with :meth:`generate`; one key per party per protocol invocation.
    """

    __slots__ = ("_d", "_e", "group")

    def __init__(self, group: SafePrimeGroup, exponent: int) -> None:
        e = mpz(exponent)
        if not 0 < e < group.q:
            raise ValueError("exponent must be in [1, q)")
        self.group = group
        self._e = e
        self._d: Any = None

    @classmethod
    def generate(
        cls,
        group: SafePrimeGroup = MODP_2048,
        *,
        rng: random.Random | None = None,
        bits: int = EXPONENT_BITS,
        label: str = "commutative/key",
    ) -> CommutativeKey:
        """A fresh key from OS randomness (or ``rng`` for reproducible experiments)."""
        source = rng if rng is not None else randomness.SecureRandom(label)
        bits = min(bits, group.bits - 2)
        while True:
            e = source.getrandbits(bits) | 1
            if 1 < e < group.q:
                return cls(group, e)

    def __repr__(self) -> str:
        return f"CommutativeKey(group={self.group.name}, exponent=<hidden>)"

    def encrypt(self, x: Any) -> Any:
        """``x^e mod p`` for a subgroup element ``x``."""
        return gmpy2.powmod(x, self._e, self.group.p)

    def encrypt_many(self, xs: Sequence[Any] | Iterable[Any]) -> list[Any]:
        """Encrypt a batch (one gmpy2 call, no Python loop per element)."""
        return list(gmpy2.powmod_base_list(list(xs), self._e, self.group.p))

    def decrypt(self, y: Any) -> Any:
        """Inverse of :meth:`encrypt`: ``y^(e^-1 mod q) mod p``."""
        if self._d is None:
            self._d = gmpy2.invert(self._e, self.group.q)
        return gmpy2.powmod(y, self._d, self.group.p)
