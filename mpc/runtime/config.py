"""The deployment file: one TOML document that every party of a run reads.

Example::

    [deployment]
    timeout = 60.0              # seconds; every receive and the startup handshake
    insecure = false            # true only for debugging: plaintext, no authentication
    max_frame_bytes = 67108864  # largest frame a party accepts
    monitor_key = "keys/monitor.public"   # optional: a key that may only ping the parties

    [protocol]
    name = "secure-sum"         # which system the parties run
    [protocol.params]           # that system's parameters
    modulus = "18446744073709551616"

    [[party]]
    name = "site1"
    role = "site"
    endpoint = "tcp://127.0.0.1:5701"   # where the others connect
    bind = "tcp://0.0.0.0:5701"         # optional; defaults to endpoint
    public_key = "keys/site1.public"
    secret_key = "keys/site1.secret"    # optional here; only site1 needs it
    data = "site1.csv"                  # optional: this party's own file (a path on its host)
    columns = ["outlook", "temp"]       # optional: the attributes this party owns (public)

A system may add fields of its own to a party's table (the learners: its CSV's ``id`` column,
``delimiter``, ``nominal`` and ``continuous`` columns, ``model_out``, ``model``,
``predictions``, ``test``; :mod:`parties.own_party`), which the caller of :func:`load_config`
names. A party's file paths are its own business: its command line may give or override
them, and the deployment file need not name them.

Relative paths are relative to the deployment file. :func:`load_config` validates
everything before any socket opens and names the offending field in its error.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpc.errors import ConfigError
from mpc.runtime.codec import DEFAULT_MAX_FRAME_BYTES

__all__ = [
    "DEFAULT_TIMEOUT",
    "DeploymentConfig",
    "PartyConfig",
    "agreement",
    "check_endpoint",
    "load_config",
]

DEFAULT_TIMEOUT = 60.0
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_ENDPOINT = re.compile(r"^tcp://(\*|[A-Za-z0-9_.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$")


@dataclass(frozen=True)
class PartyConfig:
    """One party of the deployment, as the deployment file describes it: who it is, where it
    listens, its keys, its private input (``data``) and the columns it holds (public). The
    fields a system adds to a party's table (:func:`load_config`'s ``party_fields``) are in
    ``fields``, as the file gives them; the system reads them (:mod:`parties.own_party`)."""

    name: str
    role: str
    endpoint: str
    bind: str
    public_key: Path | None
    secret_key: Path | None = None
    data: Path | None = None
    columns: tuple[str, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DeploymentConfig:
    """A validated deployment file."""

    path: Path
    parties: tuple[PartyConfig, ...]
    protocol: str
    params: dict[str, Any] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    insecure: bool = False
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: the public key of the deployment's monitor (health checks), if it has one
    monitor_key: Path | None = None

    @property
    def names(self) -> list[str]:
        """Party names in deployment order (P1 ... Pk)."""
        return [p.name for p in self.parties]

    def party(self, name: str) -> PartyConfig:
        for p in self.parties:
            if p.name == name:
                return p
        raise ConfigError(f"{self.path}: no party named {name!r}; the deployment has {self.names}")


#: what :func:`agreement` digests, section by section, and how a difference is named
AGREEMENT_SECTIONS = {
    "release": "the release of the framework",
    "protocol": "the system and its parameters",
    "parties": "the parties (names, roles, the columns each owns)",
    "keys": "the parties' public keys",
    "deployment": "the deadlines, frame limit, plaintext switch and monitor key",
}


def agreement(cfg: DeploymentConfig, release: str) -> dict[str, str]:
    """What every party of a deployment must read alike, as a digest per section
    (:data:`AGREEMENT_SECTIONS`): the release, the protocol and its parameters, the parties
    (name, role, owned columns), the content of their public keys, and the deployment's
    timeout, frame limit, plaintext switch and monitor key. A party's own paths (its data,
    secret key, model, report), the endpoints it reaches the others at and where it listens
    are its host's business and are left out. The parties compare it in their handshake and
    refuse to run on a difference (:class:`mpc.runtime.party.Party`)."""

    def digest(value: Any) -> str:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def key(path: Path | None) -> str | None:
        if path is None:
            return None
        try:
            return hashlib.sha256(path.read_bytes().strip()).hexdigest()
        except OSError as exc:
            raise ConfigError(
                f"{cfg.path}: cannot read the public key {path}: {exc.strerror}"
            ) from None

    return {
        "release": release,
        "protocol": digest([cfg.protocol, cfg.params]),
        "parties": digest([[p.name, p.role, list(p.columns)] for p in cfg.parties]),
        "keys": digest([[p.name, key(p.public_key)] for p in cfg.parties]),
        "deployment": digest(
            [cfg.timeout, cfg.insecure, cfg.max_frame_bytes, key(cfg.monitor_key)]
        ),
    }


def check_endpoint(value: str, where: str) -> str:
    """``value`` when it is ``tcp://HOST:PORT`` with a port in 1..65535; else a
    :class:`ConfigError` naming ``where``."""
    m = _ENDPOINT.match(value)
    if not m or not 1 <= int(m.group(2)) <= 65535:
        raise ConfigError(
            f"{where}: expected 'tcp://HOST:PORT' with 1 <= PORT <= 65535, got {value!r}"
        )
    return value


def expect_field(value: Any, kind: type | tuple[type, ...], where: str, what: str) -> Any:
    """``value`` if it is of ``kind`` (a bool is no number), else a ``ConfigError`` naming the
    field (``where``) and what it should be (``what``)."""
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float)):
        raise ConfigError(f"{where}: expected {what}, got {value!r}")
    return value


def path_field(base: Path, value: Any, where: str) -> Path:
    """A path field: a string, relative to ``base`` (the deployment file's folder) unless
    absolute."""
    expect_field(value, str, where, "a file path (string)")
    p = Path(value)
    return p if p.is_absolute() else base / p


def names_field(raw: dict[str, Any], key: str, where: str) -> list[str] | None:
    """A list of column names, or None when ``key`` is absent."""
    if key not in raw:
        return None
    names = expect_field(raw[key], list, f"{where}.{key}", "a list of column names")
    for c in names:
        expect_field(c, str, f"{where}.{key}", "column names (strings)")
    return list(names)


#: the fields every [[party]] table may have; a system adds its own (``party_fields``)
PARTY_FIELDS = frozenset(
    {"name", "role", "endpoint", "bind", "public_key", "secret_key", "data", "columns"}
)


def load_config(path: str | Path, *, party_fields: Collection[str] = ()) -> DeploymentConfig:
    """Read and validate a deployment file; raises :class:`ConfigError` naming the field.
    ``party_fields`` names the fields a system adds to each ``[[party]]`` table (kept in
    :attr:`PartyConfig.fields`); any other field is refused."""
    path = Path(path)
    doc = _read_toml(path)
    known = {"deployment", "protocol", "party"}
    unknown = set(doc) - known
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level tables {sorted(unknown)}; known: {sorted(known)}"
        )
    timeout, insecure, max_frame, monitor_key = _deployment_table(path, doc)
    proto = expect_field(
        doc.get("protocol"), dict, f"{path}: [protocol]", 'a table with name = "..."'
    )
    name = expect_field(
        proto.get("name"), str, f"{path}: protocol.name", "the system's name (string)"
    )
    params = expect_field(proto.get("params", {}), dict, f"{path}: protocol.params", "a table")
    raw_parties = expect_field(
        doc.get("party"), list, f"{path}: [[party]]", "at least two [[party]] tables"
    )
    if len(raw_parties) < 2:
        raise ConfigError(f"{path}: a deployment needs at least 2 parties, got {len(raw_parties)}")
    parties: list[PartyConfig] = []
    for i, raw in enumerate(raw_parties):
        party = _party(path, i, raw, insecure, party_fields)
        if party.name in {p.name for p in parties}:
            raise ConfigError(f"{path}: party[{i}].name: duplicate party name {party.name!r}")
        if party.endpoint in {p.endpoint for p in parties}:
            raise ConfigError(
                f"{path}: party {party.name!r}.endpoint: {party.endpoint} is used by another party"
            )
        parties.append(party)
    return DeploymentConfig(
        path, tuple(parties), name, dict(params), float(timeout), insecure, max_frame, monitor_key
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"deployment file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid TOML: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"deployment file {path}: cannot read it: {exc.strerror}") from None


def _deployment_table(path: Path, doc: dict[str, Any]) -> tuple[float, bool, int, Path | None]:
    """The ``[deployment]`` table: timeout, plaintext switch, frame limit, monitor key."""
    dep = expect_field(doc.get("deployment", {}), dict, f"{path}: [deployment]", "a table")
    timeout = expect_field(
        dep.get("timeout", DEFAULT_TIMEOUT),
        (int, float),
        f"{path}: deployment.timeout",
        "a number of seconds",
    )
    if not 0 < timeout <= 86400:
        raise ConfigError(
            f"{path}: deployment.timeout must be in (0, 86400] seconds, got {timeout}"
        )
    insecure = expect_field(
        dep.get("insecure", False), bool, f"{path}: deployment.insecure", "true or false"
    )
    max_frame = expect_field(
        dep.get("max_frame_bytes", DEFAULT_MAX_FRAME_BYTES),
        int,
        f"{path}: deployment.max_frame_bytes",
        "an integer",
    )
    if not 1024 <= max_frame <= 2**31:
        raise ConfigError(
            f"{path}: deployment.max_frame_bytes must be in [1024, 2^31], got {max_frame}"
        )
    monitor_key = (
        path_field(path.parent, dep["monitor_key"], f"{path}: deployment.monitor_key")
        if "monitor_key" in dep
        else None
    )
    unknown_dep = set(dep) - {"timeout", "insecure", "max_frame_bytes", "monitor_key"}
    if unknown_dep:
        raise ConfigError(
            f"{path}: unknown fields in [deployment]: {sorted(unknown_dep)}; known: "
            "insecure, max_frame_bytes, monitor_key, timeout"
        )
    return timeout, insecure, max_frame, monitor_key


def _party(
    path: Path, i: int, raw: Any, insecure: bool, party_fields: Collection[str]
) -> PartyConfig:
    """The ``i``-th ``[[party]]`` table, checked field by field; the system's own fields
    (``party_fields``) are kept as the file gives them."""
    base = path.parent
    where = f"{path}: party[{i}]"
    expect_field(raw, dict, where, "a table")
    known = PARTY_FIELDS | set(party_fields)
    extra = set(raw) - known
    if extra:
        raise ConfigError(f"{where}: unknown fields {sorted(extra)}; known: {sorted(known)}")
    pname = expect_field(raw.get("name"), str, f"{where}.name", "a party name")
    if not _NAME.match(pname):
        raise ConfigError(
            f"{where}.name: {pname!r} must match {_NAME.pattern} (lowercase, <= 32 chars)"
        )
    where = f"{path}: party {pname!r}"
    role = expect_field(raw.get("role"), str, f"{where}.role", "a role name")
    endpoint = expect_field(raw.get("endpoint"), str, f"{where}.endpoint", "'tcp://HOST:PORT'")
    bind = expect_field(raw.get("bind", endpoint), str, f"{where}.bind", "'tcp://HOST:PORT'")
    for fname, value in (("endpoint", endpoint), ("bind", bind)):
        check_endpoint(value, f"{where}.{fname}")
    public_key = (
        path_field(base, raw["public_key"], f"{where}.public_key") if "public_key" in raw else None
    )
    if public_key is None and not insecure:
        raise ConfigError(
            f"{where}.public_key: required unless deployment.insecure = true "
            "(create keys with `mpc keygen --out keys NAME...`)"
        )
    secret_key = (
        path_field(base, raw["secret_key"], f"{where}.secret_key") if "secret_key" in raw else None
    )
    data = path_field(base, raw["data"], f"{where}.data") if "data" in raw else None
    columns = names_field(raw, "columns", where) or []
    own = {k: v for k, v in raw.items() if k not in PARTY_FIELDS}
    return PartyConfig(
        pname, role, endpoint, bind, public_key, secret_key, data, tuple(columns), own
    )
