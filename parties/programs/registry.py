"""The party program of every system, by the name a deployment file gives it
(``[protocol] name``), with the roles its parties may have: the one list of them.

The party entry point (:mod:`parties.main`) imports this and nothing else of the systems, so
that a party process loads only party code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mpc.errors import ConfigError
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_party import OwnParty
from parties.programs import (
    cdtl,
    cdtl_sessions,
    dot_product,
    hybrid,
    is_r_empty,
    ppid3,
    psi_ca,
    secure_argmax,
    secure_sum,
)

__all__ = ["PROGRAMS", "Program", "program_of"]

#: what a party process runs once its runtime is up
Run = Callable[[Party, DeploymentConfig, OwnParty], Awaitable[Any]]


@dataclass(frozen=True)
class Program:
    """A system's party program and the roles its parties may have."""

    roles: frozenset[str]
    run: Run


#: every system's party program, by the system's name
PROGRAMS: dict[str, Program] = {
    "secure-sum": Program(frozenset({"site"}), secure_sum.run),
    "is-r-empty": Program(frozenset({"site"}), is_r_empty.run),
    "psi-ca": Program(frozenset({"site"}), psi_ca.run),
    "dot-product": Program(frozenset({"alice", "bob", "dealer"}), dot_product.run),
    "secure-argmax": Program(frozenset({"p0", "p1", "dealer", "site"}), secure_argmax.run),
    "ppid3": Program(frozenset({"site", "dealer"}), ppid3.run),
    "ppid3-classify": Program(frozenset({"site", "dealer"}), ppid3.run),
    "hybrid-id3": Program(frozenset({"alice", "bob", "dealer"}), hybrid.run),
    "hybrid-id3-classify": Program(frozenset({"alice", "bob", "dealer"}), hybrid.run),
    "cdtl": Program(frozenset({"client", "cdbs"}), cdtl.run),
    "cdtl-outsource": Program(frozenset({"client", "cdbs"}), cdtl_sessions.outsource_run),
    "cdtl-classify": Program(frozenset({"client", "cdbs"}), cdtl_sessions.classify_run),
    "cdbs-load": Program(frozenset({"client", "cdbs"}), cdtl.load_run),
}


def program_of(name: str) -> Program:
    """The program of the system ``name``, or a one-line error naming the systems."""
    try:
        return PROGRAMS[name]
    except KeyError:
        raise ConfigError(f"unknown system {name!r}; known systems: {sorted(PROGRAMS)}") from None
