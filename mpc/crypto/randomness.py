"""A party's own randomness: every secret random value a protocol draws comes from here.

Masks, seeds of correlated randomness, keys, OT choice bits, permutations, randomized-response
coins: whatever protects a party's data is drawn through one of these calls, from the OS
CSPRNG (:mod:`secrets`), never from a seed another party, a shared file or a log could see::

    seed = randomness.seed("levels/L2/outer")           # 32 bytes for a SeedStream
    mask = randomness.token_bytes(8 * n, "sum/mask")
    r = randomness.randbelow(q, "psi-ca/key")

Each call names a *label*: the protocol step it draws for (its message tag, or a fixed name).
In a normal run the label is not used at all. It exists for one kind of test, the *joint-view
test* (``tests/views.py``): a party's view is judged as a whole, together with its own
randomness, by running a protocol twice with that party's randomness fixed and everyone else's
fresh; whatever it then receives, apart from what is declared public or leakage, must not
repeat from one run to the other. :func:`fixed` makes the draws of the code run inside it
(an asyncio task and the tasks it starts; a party process when its environment asks for it,
:data:`FIXED_ENV`) a deterministic function of a test seed, the label and the number of
earlier draws under the same label, so that they repeat whatever order the party's tasks
interleave in. A party whose randomness is fixed protects nothing: the party process accepts
it only beside ``MPC_VIEW=1`` (a view test), says so in its log and puts it in its report.

Nonces (AES-GCM's, public by construction) and identifiers that only name things (routing
ids, temporary files) do not come from here.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import random
import secrets
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.errors import ConfigError

__all__ = [
    "FIXED_ENV",
    "SEED_BYTES",
    "SecureRandom",
    "bits",
    "fixed",
    "fixed_seed_of",
    "is_fixed",
    "party_seed",
    "randbelow",
    "randbits",
    "seed",
    "token_bytes",
    "words",
]

#: the bytes of a seed of correlated randomness (AES-256-CTR keys of ``SeedStream``)
SEED_BYTES = 32

#: the environment variable of a view test: a JSON object mapping party names to the hex of a
#: 32-byte seed; a party named there draws its randomness from that seed (:func:`fixed`), and
#: under ``"*"`` a seed for every party not named, each its own (:func:`party_seed`)
FIXED_ENV = "MPC_FIXED_RANDOMNESS"

_DOMAIN = b"mpc/fixed-randomness/v1"


class _Fixed:
    """The deterministic source of :func:`fixed`: draw ``i`` under ``label`` is the
    AES-256-CTR keystream under ``SHA-256(domain, seed, label, i)``; with ``only``, just the
    draws whose label starts with one of those (the others from the OS)."""

    def __init__(self, seed: bytes, only: tuple[str, ...] | None = None) -> None:
        self.seed = seed
        self.only = only
        self.draws: Counter[str] = Counter()

    def token_bytes(self, n: int, label: str) -> bytes:
        if self.only is not None and not label.startswith(self.only):
            return secrets.token_bytes(n)
        i = self.draws[label]
        self.draws[label] = i + 1
        key = hashlib.sha256(
            _DOMAIN + self.seed + label.encode() + b"\0" + i.to_bytes(8, "big")
        ).digest()
        return Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor().update(bytes(n))


_SOURCE: contextvars.ContextVar[_Fixed | None] = contextvars.ContextVar(
    "mpc_fixed_randomness", default=None
)


def token_bytes(n: int, label: str) -> bytes:
    """``n`` uniform bytes for the step ``label`` (the OS generator)."""
    if n < 0:
        raise ConfigError(f"cannot draw {n} random bytes")
    source = _SOURCE.get()
    if source is None:
        return secrets.token_bytes(n)
    return source.token_bytes(n, label)


def seed(label: str) -> bytes:
    """A fresh 32-byte seed for the step ``label``."""
    return token_bytes(SEED_BYTES, label)


def randbits(k: int, label: str) -> int:
    """A uniform integer of ``k`` bits (``0 <= x < 2^k``)."""
    if k < 0:
        raise ConfigError(f"cannot draw an integer of {k} bits")
    if k == 0:
        return 0
    source = _SOURCE.get()
    if source is None or (source.only is not None and not label.startswith(source.only)):
        return secrets.randbits(k)
    x = int.from_bytes(source.token_bytes(-(-k // 8), label), "little")
    return x & ((1 << k) - 1)


def randbelow(n: int, label: str) -> int:
    """A uniform integer in ``[0, n)`` (rejection sampling, no modulo bias)."""
    if n <= 0:
        raise ConfigError(f"randbelow needs n >= 1, got {n}")
    if _SOURCE.get() is None:
        return secrets.randbelow(n)
    k = (n - 1).bit_length()
    while True:
        x = randbits(k, label)
        if x < n:
            return x


def bits(n: int, label: str) -> np.ndarray:
    """``n`` uniform bits as ``uint8`` 0/1."""
    data = np.frombuffer(token_bytes(-(-n // 8), label), dtype=np.uint8)
    return np.unpackbits(data)[:n]


def words(k: int, label: str) -> np.ndarray:
    """``k`` uniform ``uint64`` values: the AES-256-CTR keystream under a fresh key (several
    GB/s where reading the OS generator itself manages a few hundred MB/s)."""
    key = token_bytes(48, label)
    cipher = Cipher(algorithms.AES(key[:32]), modes.CTR(key[32:]))
    out = bytearray(8 * k + 15)  # update_into wants room for a block more
    m = cipher.encryptor().update_into(bytes(8 * k), out)
    return np.frombuffer(out, dtype="<u8", count=m // 8).astype(np.uint64, copy=False)


class SecureRandom(random.Random):
    """A ``random.Random`` whose every draw comes from :func:`randbits` under one ``label``
    (as ``random.SystemRandom`` reads the OS), for the code that takes such a generator."""

    def __init__(self, label: str) -> None:
        self.label = label
        super().__init__()

    def seed(self, *args: Any, **kwargs: Any) -> None:  # nothing to seed: the OS draws
        return None

    def random(self) -> float:
        return randbits(53, self.label) * 2.0**-53

    def getrandbits(self, k: int) -> int:
        return randbits(k, self.label)

    def getstate(self) -> Any:
        raise NotImplementedError("a SecureRandom has no state to save")

    def setstate(self, state: Any) -> None:
        raise NotImplementedError("a SecureRandom has no state to restore")


def is_fixed() -> bool:
    """Whether the draws here are fixed by :func:`fixed` (a view test)."""
    return _SOURCE.get() is not None


@contextlib.contextmanager
def fixed(test_seed: bytes, only: tuple[str, ...] | None = None) -> Iterator[None]:
    """Inside, every draw (with ``only``, every draw whose label starts with one of those)
    is a deterministic function of ``test_seed``, its label and the number of earlier draws
    under that label (the module docstring): for view tests only, never for a party whose
    data matters. Tasks started inside inherit it."""
    if not isinstance(test_seed, bytes) or len(test_seed) != SEED_BYTES:
        raise ConfigError(f"a fixed-randomness seed is {SEED_BYTES} bytes")
    token = _SOURCE.set(_Fixed(test_seed, only))
    try:
        yield
    finally:
        _SOURCE.reset(token)


def party_seed(master: bytes, name: str) -> bytes:
    """The test seed of the party ``name`` under a ``"*"`` entry ``master``."""
    return hashlib.sha256(_DOMAIN + b"/party/" + master + name.encode()).digest()


def fixed_seed_of(
    name: str, environ: Mapping[str, str]
) -> tuple[bytes, tuple[str, ...] | None] | None:
    """The test seed :data:`FIXED_ENV` gives the party ``name`` and the label prefixes it
    fixes (None: every draw), or None. A party named in the object has all its draws fixed;
    every other party, with a ``"*"`` entry, its own seed from it, for the draws whose
    labels start with one of ``"*labels"`` if that is given (the randomness of a value every
    party learns, such as the common record order, fixed so that two runs align alike). A
    malformed value is a :class:`~mpc.errors.ConfigError`."""
    raw = environ.get(FIXED_ENV)
    if not raw:
        return None
    only: tuple[str, ...] | None = None
    try:
        table: Any = json.loads(raw)
        if not isinstance(table, dict):
            raise ValueError
        if name in table:
            out = bytes.fromhex(table[name])
        elif "*" in table:
            out = party_seed(bytes.fromhex(table["*"]), name)
            if "*labels" in table:
                only = tuple(str(x) for x in table["*labels"])
        else:
            return None
    except (ValueError, TypeError, AttributeError):
        raise ConfigError(
            f"{FIXED_ENV} must be a JSON object of party names and hex seeds"
        ) from None
    if len(out) != SEED_BYTES:
        raise ConfigError(f"{FIXED_ENV}: the seed of {name!r} must be {SEED_BYTES} bytes")
    return out, only
