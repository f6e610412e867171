"""CurveZMQ key pairs: generation, files, loading.

A party's key pair lives in two files written by ``mpc keygen``::

    NAME.public    public-key = "<40 Z85 characters>"       (mode 0644, share it)
    NAME.secret    secret-key = "<40 Z85 characters>"       (mode 0600, never share it)

Both are TOML so they can carry comments. The deployment file names every party's public
key; a party's own secret key comes from its ``secret_key`` entry, ``--secret-key FILE`` or
the ``MPC_SECRET_KEY_FILE`` environment variable (for container secrets). A folder made for
secret keys has mode 0700; with ``secret_dir`` each secret key gets a folder of its own
(``SECRET_DIR/NAME/NAME.secret``), to hand to that party alone, and the public keys stay in a
folder anyone may read.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

import zmq

from mpc.errors import AuthenticationError
from mpc.runtime.files import private_dir, write_private

__all__ = [
    "KeyPair",
    "fingerprint",
    "generate_keypair",
    "load_public_key",
    "load_secret_key",
    "write_keypair",
]

_Z85_ALPHABET = frozenset(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)


@dataclass(frozen=True)
class KeyPair:
    """A CurveZMQ key pair (Z85-encoded). The ``repr`` never shows the secret key."""

    public: bytes
    secret: bytes

    def __repr__(self) -> str:
        return f"KeyPair(public={self.public.decode()!r}, secret=<hidden>)"


def fingerprint(public: bytes) -> str:
    """A public key's fingerprint, for people to compare over another channel (a phone call):
    the first 80 bits of its SHA-256, as five groups of four hex digits."""
    digest = hashlib.sha256(b"mpc-trees/curve-key/v1\0" + public).hexdigest()[:20]
    return " ".join(digest[i : i + 4] for i in range(0, 20, 4))


def generate_keypair() -> KeyPair:
    """A fresh key pair from libzmq (libsodium's OS randomness)."""
    public, secret = zmq.curve_keypair()
    return KeyPair(public, secret)


def _check_z85(key: str, path: Path, what: str) -> bytes:
    if len(key) != 40 or not set(key) <= _Z85_ALPHABET:
        raise AuthenticationError(
            f"{path}: {what} must be 40 Z85 characters, got {len(key)} characters; "
            "regenerate it with `mpc keygen`"
        )
    return key.encode("ascii")


def _read_key(path: Path, field_name: str) -> str:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise AuthenticationError(
            f"key file {path} does not exist; create it with `mpc keygen --out DIR NAME`"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AuthenticationError(f"key file {path} is not valid TOML: {exc}") from exc
    value = data.get(field_name)
    if not isinstance(value, str):
        raise AuthenticationError(f'key file {path} has no `{field_name} = "..."` line')
    return value


def load_public_key(path: Path) -> bytes:
    """Read a ``NAME.public`` file and return the Z85 public key."""
    return _check_z85(_read_key(path, "public-key"), path, "public-key")


def load_secret_key(path: Path) -> KeyPair:
    """Read a ``NAME.secret`` file; the public key is derived from the secret one."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0
    if mode & 0o077:
        raise AuthenticationError(
            f"secret key file {path} is readable by others (mode {mode:o}); run chmod 600 {path}"
        )
    secret = _check_z85(_read_key(path, "secret-key"), path, "secret-key")
    return KeyPair(zmq.curve_public(secret), secret)


def write_keypair(
    out_dir: Path, name: str, pair: KeyPair | None = None, *, secret_dir: Path | None = None
) -> KeyPair:
    """Write ``NAME.public`` into ``out_dir`` and ``NAME.secret`` (mode 0600) next to it, or
    with ``secret_dir`` into ``secret_dir/NAME/`` (a folder of mode 0700 for that key alone).

    A folder made here for a secret key has mode 0700; ``out_dir`` holding only public keys
    (with ``secret_dir``) is made as any folder is.
    """
    pair = pair or generate_keypair()
    if secret_dir is None:
        secret_path = private_dir(out_dir) / f"{name}.secret"
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        secret_path = private_dir(secret_dir / name, tighten=True) / f"{name}.secret"
    (out_dir / f"{name}.public").write_text(
        f"# CurveZMQ public key of party {name!r}; list it in the deployment file\n"
        f'public-key = "{pair.public.decode()}"\n'
    )
    write_private(
        secret_path,
        f"# CurveZMQ SECRET key of party {name!r}; keep it on that party's host only\n"
        f'secret-key = "{pair.secret.decode()}"\n',
    )
    return pair
