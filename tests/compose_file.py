"""docker-compose.yml as the multi-host tests read it: services, commands, volumes, health.

Only what the tests need, read with PyYAML (its safe loader resolves the ``<<`` merge keys
and anchors): variable interpolation as Compose does it (``$$``, ``$VAR``, ``${VAR}``,
``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}``), and for each
service its profiles, command, environment, volumes, network aliases, dependencies and
healthcheck. :func:`parse_services` reads the same from what ``docker-compose config``
prints (already interpolated); CI checks the file with ``docker-compose config -q``.
:meth:`Service.where` says which volume a container path of a service lies in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_VAR = re.compile(
    r"\$(?:(?P<escaped>\$)|(?P<plain>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\})"
)


class ComposeError(Exception):
    """The compose file cannot be read as the tests need it (or a required variable is unset)."""


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Substitute variables in ``text`` as Compose does."""

    def one(m: re.Match[str]) -> str:
        if m.group("escaped"):
            return "$"
        name = m.group("plain") or m.group("braced")
        op, arg = m.group("op"), m.group("arg") or ""
        value = env.get(name)
        unset = value is None or (op is not None and op.startswith(":") and value == "")
        if op in ("-", ":-"):
            return arg if unset else str(value)
        if op in ("?", ":?"):
            if unset:
                raise ComposeError(f"required variable {name} is not set: {arg}")
            return str(value)
        return "" if value is None else value

    return _VAR.sub(one, text)


def _interpolate_all(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [_interpolate_all(v, env) for v in node]
    if isinstance(node, dict):
        return {k: _interpolate_all(v, env) for k, v in node.items()}
    return node


@dataclass(frozen=True)
class Volume:
    """``source:target[:ro]``; ``named`` when the source is a volume, not a host path."""

    source: str
    target: str
    read_only: bool
    named: bool


@dataclass(frozen=True)
class Service:
    name: str
    profiles: tuple[str, ...]
    command: tuple[str, ...]
    environment: dict[str, str]
    volumes: tuple[Volume, ...]
    aliases: tuple[str, ...]
    #: dependency -> condition (service_started, service_healthy, service_completed_successfully)
    depends_on: dict[str, str] = field(default_factory=dict)
    healthcheck: tuple[str, ...] = ()

    def where(self, path: str) -> tuple[Volume, str] | None:
        """The volume a container path of this service lies in and the path inside it
        (``None`` when it is in the container's own file system, lost when it exits)."""
        best: Volume | None = None
        for v in self.volumes:
            if (path == v.target or path.startswith(v.target.rstrip("/") + "/")) and (
                best is None or len(v.target) > len(best.target)
            ):
                best = v
        if best is None:
            return None
        return best, path[len(best.target) :].lstrip("/")

    def option(self, name: str) -> str | None:
        """The value of ``name`` (``--out``, say) in the command, or None."""
        return self.command[self.command.index(name) + 1] if name in self.command else None


def _volume(spec: str) -> Volume:
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise ComposeError(f"volume {spec!r}: expected SOURCE:TARGET[:MODE]")
    source, target = parts[0], parts[1]
    mode = parts[2] if len(parts) == 3 else "rw"
    named = not source.startswith(("/", ".", "~"))
    return Volume(source, target, mode == "ro", named)


def load_services(path: Path, env: Mapping[str, str]) -> dict[str, Service]:
    """The services of the compose file at ``path``, interpolated with ``env``."""
    doc = yaml.safe_load(path.read_text())
    return parse_services(_interpolate_all(doc["services"], env))


def parse_services(raw_services: Mapping[str, Any]) -> dict[str, Service]:
    """The services of an interpolated ``services:`` mapping (the compose file's, or the one
    ``docker-compose config`` prints)."""
    services: dict[str, Service] = {}
    for name, raw in raw_services.items():
        command = raw.get("command")
        if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
            raise ComposeError(f"service {name}: expected the command as a list of strings")
        environment = {str(k): str(v) for k, v in (raw.get("environment") or {}).items()}
        depends = raw.get("depends_on") or {}
        if isinstance(depends, list):
            depends = {d: {"condition": "service_started"} for d in depends}
        aliases: list[str] = []
        for net in (raw.get("networks") or {}).values():
            aliases += list((net or {}).get("aliases") or [])
        test = (raw.get("healthcheck") or {}).get("test") or []
        if test and test[0] != "CMD":
            raise ComposeError(f"service {name}: expected the healthcheck as [CMD, ...]")
        services[name] = Service(
            name=name,
            profiles=tuple(raw.get("profiles") or ()),
            command=tuple(command),
            environment=environment,
            volumes=tuple(_volume(v) for v in raw.get("volumes") or ()),
            aliases=tuple(aliases),
            depends_on={d: str(c.get("condition", "service_started")) for d, c in depends.items()},
            healthcheck=tuple(test[1:]),
        )
    return services


def in_profile(services: Mapping[str, Service], profile: str) -> dict[str, Service]:
    """The services ``docker compose --profile PROFILE up`` starts."""
    return {n: s for n, s in services.items() if not s.profiles or profile in s.profiles}


def one_shot(services: Mapping[str, Service]) -> list[str]:
    """Services others wait for to *complete* (keygen, plan): run before the parties."""
    done = {
        d
        for s in services.values()
        for d, cond in s.depends_on.items()
        if cond == "service_completed_successfully"
    }
    return [n for n in services if n in done]
