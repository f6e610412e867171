"""Commutative cipher: group constants, known answers, commutativity, inversion, injectivity."""

from __future__ import annotations

import random

import gmpy2
import pytest
from gmpy2 import mpz
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.crypto.commutative import MODP_2048, MODP_3072, CommutativeKey, SafePrimeGroup

TOY = SafePrimeGroup("toy", mpz(23))  # q = 11; residues {1, 2, 3, 4, 6, 8, 9, 12, 13, 16, 18}


def _rfc3526(bits: int, pi_shift: int, offset: int) -> int:
    """p = 2^b - 2^(b-64) - 1 + 2^64 * (floor(2^s * pi) + offset), RFC 3526's definition."""
    with gmpy2.context(gmpy2.get_context(), precision=bits + 200):
        pi_part = int(gmpy2.floor(gmpy2.mpfr(2) ** pi_shift * gmpy2.const_pi()))
    return 2**bits - 2 ** (bits - 64) - 1 + 2**64 * (pi_part + offset)


@pytest.mark.parametrize(
    ("group", "bits", "shift", "offset"),
    [(MODP_2048, 2048, 1918, 124476), (MODP_3072, 3072, 2942, 1690314)],
)
def test_groups_are_the_rfc3526_safe_primes(group, bits, shift, offset) -> None:
    assert group.p == _rfc3526(bits, shift, offset)
    assert group.bits == bits
    assert gmpy2.is_prime(group.p, 40) and gmpy2.is_prime(group.q, 40)


def test_known_answers_in_a_toy_group() -> None:
    key = CommutativeKey(TOY, 3)
    assert TOY.encode(0) == 2  # 0 + 2 = 2 is a residue mod 23
    assert TOY.encode(3) == 18  # 3 + 2 = 5 is not: 23 - 5
    assert 1 not in {TOY.encode(v) for v in range(9)}  # never the identity
    assert key.encrypt(mpz(2)) == 8  # 2^3 mod 23
    assert key.decrypt(mpz(8)) == 2  # 3^-1 mod 11 = 4; 8^4 mod 23 = 2
    assert [TOY.decode(TOY.encode(v)) for v in range(9)] == list(range(9))


def test_repr_hides_the_exponent() -> None:
    key = CommutativeKey(TOY, 7)
    assert "7" not in repr(key) and "hidden" in repr(key)


values = st.integers(min_value=0, max_value=2**64)


@settings(max_examples=25, deadline=None)
@given(x=values, seed=st.integers(0, 2**32))
def test_encryption_commutes_and_decryption_inverts(x: int, seed: int) -> None:
    rng = random.Random(seed)
    a = CommutativeKey.generate(MODP_2048, rng=rng)
    b = CommutativeKey.generate(MODP_2048, rng=rng)
    m = MODP_2048.encode(x)
    assert MODP_2048.is_element(m)
    assert a.encrypt(b.encrypt(m)) == b.encrypt(a.encrypt(m))
    assert a.decrypt(a.encrypt(m)) == m
    assert b.decrypt(a.decrypt(b.encrypt(a.encrypt(m)))) == m
    assert MODP_2048.decode(a.decrypt(a.encrypt(m))) == x


@settings(max_examples=25, deadline=None)
@given(xs=st.lists(values, min_size=2, max_size=20, unique=True), seed=st.integers(0, 2**32))
def test_distinct_inputs_stay_distinct(xs: list[int], seed: int) -> None:
    key = CommutativeKey.generate(MODP_2048, rng=random.Random(seed))
    encoded = [MODP_2048.encode(x) for x in xs]
    assert len(set(key.encrypt_many(encoded))) == len(xs)
    hashed = [MODP_2048.hash_to_group(str(x).encode()) for x in xs]
    assert len(set(key.encrypt_many(hashed))) == len(xs)
    assert key.encrypt_many(hashed) == [key.encrypt(h) for h in hashed]


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=64))
def test_hash_to_group_lands_in_the_prime_order_subgroup(data: bytes) -> None:
    h = MODP_2048.hash_to_group(data)
    assert MODP_2048.is_element(h)
    assert gmpy2.powmod(h, MODP_2048.q, MODP_2048.p) == 1


def test_encode_refuses_values_outside_the_group() -> None:
    with pytest.raises(ValueError, match="outside"):
        TOY.encode(9)
    with pytest.raises(ValueError, match="outside"):
        TOY.encode(-1)


def test_fresh_keys_differ() -> None:
    a, b = CommutativeKey.generate(), CommutativeKey.generate()
    m = MODP_2048.encode(1)
    assert a.encrypt(m) != b.encrypt(m)
