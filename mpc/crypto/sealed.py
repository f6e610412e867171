"""Authenticated encryption for everything a party stores encrypted at another party.

AES-256-GCM (:class:`cryptography.hazmat.primitives.ciphers.aead.AESGCM`) under a symmetric
:class:`ClientKey` that never leaves the client. A *sealed blob* is::

    version (1 byte) || nonce (12 bytes) || ciphertext || tag (16 bytes)

The nonce is drawn from the OS inside :func:`seal`; callers never choose it. The associated
data ``aad`` is required and is authenticated together with the version byte: it names what
the blob is *for* (the leaf a subtree belongs to, the table and group an ESEQ belongs to).
Build it with :func:`associated_data`, which length-prefixes its parts so that
``("leaf", "1", "23")`` and ``("leaf", "12", "3")`` differ::

    key = ClientKey.generate()
    blob = seal_json(key, subtree, associated_data("subtree", "adult", leaf_id))
    open_json(key, blob, associated_data("subtree", "adult", leaf_id))   # -> subtree

:func:`open_sealed` raises :class:`~mpc.errors.AuthenticationError` with one message for every
authentication failure: a changed byte, a truncated blob, a blob sealed under another key, or
a blob presented with other associated data. The last case is what detects a server that
swaps two stored subtrees between leaves, or moves an ESEQ to another group or table.

What the holder of a blob (e.g. the cloud database server) learns: the plaintext length
(blob length minus :data:`OVERHEAD`) and nothing else, by the IND-CCA security of AES-GCM with
unique nonces.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mpc.crypto import randomness
from mpc.errors import AuthenticationError, ConfigError, ProtocolError

__all__ = [
    "FORMAT_VERSION",
    "KEY_BYTES",
    "NONCE_BYTES",
    "OVERHEAD",
    "TAG_BYTES",
    "ClientKey",
    "associated_data",
    "extend_associated_data",
    "extend_associated_data_each",
    "open_json",
    "open_rows",
    "open_sealed",
    "seal",
    "seal_json",
]

#: The first byte of every sealed blob; a blob with another first byte is refused.
FORMAT_VERSION = 1
#: AES-256: 256-bit keys give 128-bit security even against Grover-style key search.
KEY_BYTES = 32
#: 96-bit nonces, GCM's native size (NIST SP 800-38D, section 8.2.2): drawn at random, the
#: chance that two of 2^32 blobs under one key share a nonce stays below 2^-32.
NONCE_BYTES = 12
#: The full 128-bit GCM tag; forging a blob succeeds with probability about 2^-128.
TAG_BYTES = 16
#: Bytes a sealed blob has beyond its plaintext.
OVERHEAD = 1 + NONCE_BYTES + TAG_BYTES

_VERSION_BYTE = bytes([FORMAT_VERSION])
_AAD_DOMAIN = b"mpc-trees/sealed/v1"
_KEY_FIELD = "sealing-key"


class ClientKey:
    """A 256-bit AES-GCM key held by the client only.

    Make one with :meth:`generate`, keep it with :meth:`save` (a file of mode 0600) and read it
    back with :meth:`load`. The ``repr`` shows only a :attr:`fingerprint` (a hash that
    identifies the key without revealing it), never the key. Two keys are ``==`` when their
    bytes are equal (compared in constant time).
    """

    __slots__ = ("_aead", "_key")

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes | bytearray) or len(key) != KEY_BYTES:
            got = f"{len(key)} bytes" if isinstance(key, bytes | bytearray) else type(key).__name__
            raise AuthenticationError(
                f"a ClientKey needs exactly {KEY_BYTES} bytes, got {got}; "
                "create one with ClientKey.generate()"
            )
        self._key = bytes(key)
        self._aead = AESGCM(self._key)

    @classmethod
    def generate(cls, label: str = "sealed/key") -> ClientKey:
        """A fresh key from the OS random source (:mod:`mpc.crypto.randomness`)."""
        return cls(randomness.token_bytes(KEY_BYTES, label))

    @classmethod
    def from_bytes(cls, key: bytes) -> ClientKey:
        """The key with these :data:`KEY_BYTES` raw bytes."""
        return cls(key)

    def key_bytes(self) -> bytes:
        """The raw key. Only for writing it somewhere safe; prefer :meth:`save`."""
        return self._key

    @property
    def fingerprint(self) -> str:
        """16 hex digits of a SHA-256 of the key: names the key, reveals nothing of it."""
        return hashlib.sha256(b"mpc-trees/client-key-fingerprint\x00" + self._key).hexdigest()[:16]

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the key to ``path`` (mode 0600, TOML with a comment) and return the path.

        An existing file is kept unless ``overwrite`` is true: replacing a key makes every blob
        sealed under it unreadable.
        """
        path = Path(path)
        if path.exists():
            if not overwrite:
                raise ConfigError(
                    f"key file {path} already exists; pass overwrite=True to replace it "
                    "(blobs sealed under the old key can then no longer be opened)"
                )
            path.unlink()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(
                f"# AES-256-GCM sealing key of the client (fingerprint {self.fingerprint}).\n"
                "# SECRET: keep it on the client only; without it nothing sealed can be read.\n"
                f'{_KEY_FIELD} = "{self._key.hex()}"\n'
            )
        return path

    @classmethod
    def load(cls, path: str | Path) -> ClientKey:
        """Read a key written by :meth:`save`; refuses a file others can read."""
        path = Path(path)
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            raise AuthenticationError(
                f"client key file {path} does not exist; create it with "
                "ClientKey.generate().save(path)"
            ) from None
        if mode & 0o077:
            raise AuthenticationError(
                f"client key file {path} is accessible by others (mode {mode:o}); "
                f"run chmod 600 {path}"
            )
        try:
            with path.open("rb") as fh:
                doc = tomllib.load(fh)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise AuthenticationError(f"client key file {path} is not valid TOML: {exc}") from exc
        value = doc.get(_KEY_FIELD)
        if not isinstance(value, str):
            raise AuthenticationError(f'client key file {path} has no `{_KEY_FIELD} = "..."` line')
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raw = b""
        if len(raw) != KEY_BYTES:
            raise AuthenticationError(
                f"client key file {path}: {_KEY_FIELD} must be {2 * KEY_BYTES} hex digits, "
                f"got {len(value)} characters"
            )
        return cls(raw)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClientKey):
            return NotImplemented
        return hmac.compare_digest(self._key, other._key)

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        return f"ClientKey(fingerprint={self.fingerprint!r}, key=<hidden>)"

    def __reduce__(self) -> Any:
        raise TypeError("a ClientKey is not picklable; store it with ClientKey.save(path)")


def associated_data(*parts: str | bytes | int) -> bytes:
    """Unambiguous associated data from ``parts`` (str as UTF-8, int in decimal, bytes as is),
    each prefixed with its type and 4-byte length, after a fixed domain label; so ``("a", 1)``,
    ``("a", "1")`` and ``("a1",)`` all differ."""
    if not parts:
        raise ConfigError("associated_data needs at least one part, e.g. the table name")
    return _AAD_DOMAIN + b"".join(map(_aad_part, parts))


def extend_associated_data(aad: bytes, *parts: str | bytes | int) -> bytes:
    """``associated_data(*prefix, *parts)`` given ``aad = associated_data(*prefix)``.

    For a family of associated data that share their first parts (e.g. one per group of a
    table): the prefix is encoded once, each member only appends its own parts."""
    if not isinstance(aad, bytes) or not aad.startswith(_AAD_DOMAIN):
        raise ConfigError("extend_associated_data needs associated data made by associated_data")
    if len(parts) == 1:
        return aad + _aad_part(parts[0])
    return aad + b"".join(map(_aad_part, parts))


def extend_associated_data_each(aad: bytes, values: Sequence[int]) -> list[bytes]:
    """``[extend_associated_data(aad, v) for v in values]`` for int ``values`` (e.g. the
    groups of a table), the prefix checked once."""
    if not isinstance(aad, bytes) or not aad.startswith(_AAD_DOMAIN):
        raise ConfigError("extend_associated_data needs associated data made by associated_data")
    if not set(map(type, values)) <= {int}:
        raise TypeError("extend_associated_data_each: every value must be an int")
    texts = [str(v).encode("ascii") for v in values]
    return [aad + b"i" + len(t).to_bytes(4, "big") + t for t in texts]


def _aad_part(p: str | bytes | int) -> bytes:
    """One part of associated data: its type, its 4-byte length, its bytes."""
    if type(p) is int:  # the common cases first: this runs once per ESEQ group
        kind, raw = b"i", str(p).encode("ascii")
    elif type(p) is str:
        kind, raw = b"s", p.encode("utf-8")
    elif isinstance(p, bool) or not isinstance(p, str | bytes | int | np.integer):
        raise TypeError(f"associated_data parts are str, bytes or int, got {type(p).__name__}")
    elif isinstance(p, bytes):
        kind, raw = b"b", p
    elif isinstance(p, str):
        kind, raw = b"s", p.encode("utf-8")
    else:
        kind, raw = b"i", str(int(p)).encode("ascii")
    return kind + len(raw).to_bytes(4, "big") + raw


def _check_args(key: ClientKey, data: bytes, aad: bytes, what: str) -> None:
    if not isinstance(key, ClientKey):
        raise TypeError(f"key must be a ClientKey, got {type(key).__name__}")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"{what} must be bytes, got {type(data).__name__}")
    if not isinstance(aad, bytes | bytearray):
        raise TypeError(f"aad must be bytes, got {type(aad).__name__}")
    if not aad:
        raise ConfigError(
            "aad must not be empty: name what the blob belongs to, e.g. "
            "associated_data('subtree', table, leaf_id)"
        )


def seal(key: ClientKey, plaintext: bytes, aad: bytes) -> bytes:
    """Encrypt and authenticate ``plaintext``, bound to ``aad``, under a fresh random nonce."""
    _check_args(key, plaintext, aad, "plaintext")
    nonce = os.urandom(NONCE_BYTES)
    body = key._aead.encrypt(nonce, bytes(plaintext), _VERSION_BYTE + bytes(aad))
    return _VERSION_BYTE + nonce + body


def open_sealed(key: ClientKey, blob: bytes, aad: bytes) -> bytes:
    """The plaintext of a blob made by :func:`seal` with the same ``key`` and ``aad``.

    Raises :class:`~mpc.errors.AuthenticationError` if the blob is not exactly such a blob.
    """
    _check_args(key, blob, aad, "blob")
    return _open(key, bytes(blob), bytes(aad))


def open_rows(key: ClientKey, rows: np.ndarray, aads: Sequence[bytes]) -> list[bytes]:
    """:func:`open_sealed` for every row of ``rows``, a ``uint8`` matrix of sealed blobs of
    one length (e.g. a table's ESEQ column), row ``i`` under ``aads[i]``.

    The same checks and the same :class:`~mpc.errors.AuthenticationError` as
    :func:`open_sealed`, made once for the whole matrix (lengths, version bytes) where they
    can be, so that each row costs one AES-GCM decryption."""
    _check_args(key, b"x", b"x", "blob")
    if not isinstance(rows, np.ndarray) or rows.dtype != np.uint8 or rows.ndim != 2:
        raise TypeError("open_rows: rows must be a two-dimensional uint8 array")
    n, width = rows.shape
    if len(aads) != n:
        raise ConfigError(f"open_rows needs one aad per row, got {n} rows and {len(aads)}")
    if not n:
        return []
    if not set(map(type, aads)) <= {bytes} or not all(aads):
        raise ConfigError("open_rows: every aad must be non-empty bytes")
    if width < OVERHEAD:
        raise AuthenticationError(
            f"sealed blobs have {width} bytes, fewer than the {OVERHEAD} of an empty one; "
            "they were truncated or are not sealed blobs"
        )
    versions = rows[:, 0]
    if np.any(versions != FORMAT_VERSION):
        raise _wrong_version(int(versions[np.flatnonzero(versions != FORMAT_VERSION)[0]]))
    raw = rows.tobytes()
    decrypt = key._aead.decrypt
    nonce_end = 1 + NONCE_BYTES
    try:
        return [
            decrypt(raw[o + 1 : o + nonce_end], raw[o + nonce_end : o + width], _VERSION_BYTE + a)
            for o, a in zip(range(0, n * width, width), aads, strict=True)
        ]
    except InvalidTag:
        raise _failed(key) from None


def _open(key: ClientKey, blob: bytes, aad: bytes) -> bytes:
    if len(blob) < OVERHEAD:
        raise AuthenticationError(
            f"sealed blob has {len(blob)} bytes, fewer than the {OVERHEAD} of an empty one; "
            "it was truncated or is not a sealed blob"
        )
    if blob[0] != FORMAT_VERSION:
        raise _wrong_version(blob[0])
    try:
        return key._aead.decrypt(
            blob[1 : 1 + NONCE_BYTES], blob[1 + NONCE_BYTES :], _VERSION_BYTE + aad
        )
    except InvalidTag:
        raise _failed(key) from None


def _wrong_version(version: int) -> AuthenticationError:
    return AuthenticationError(
        f"sealed blob has format version {version}, expected {FORMAT_VERSION}; "
        "it was altered or written by an incompatible version"
    )


def _failed(key: ClientKey) -> AuthenticationError:
    return AuthenticationError(
        "sealed blob failed authentication: it was altered or truncated, sealed under "
        f"another key (this one is {key.fingerprint}), or belongs to something else than "
        "the given associated data (e.g. another leaf or table)"
    )


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def seal_json(key: ClientKey, obj: Any, aad: bytes) -> bytes:
    """:func:`seal` the compact JSON text of ``obj`` (numpy scalars and arrays become JSON
    numbers and lists; NaN and infinities are refused, as JSON has none)."""
    try:
        text = json.dumps(
            obj, separators=(",", ":"), sort_keys=True, allow_nan=False, default=_json_default
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"seal_json: the object is not JSON-serializable: {exc}") from exc
    return seal(key, text.encode("utf-8"), aad)


def open_json(key: ClientKey, blob: bytes, aad: bytes) -> Any:
    """The object sealed by :func:`seal_json` (lists for tuples and arrays)."""
    raw = open_sealed(key, blob, aad)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(
            f"a sealed blob authenticated but does not hold JSON ({exc}); it was sealed with "
            "seal(), not seal_json()"
        ) from exc
