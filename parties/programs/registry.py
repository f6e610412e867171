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
    psi,
    psi_ca,
    secure_argmax,
    secure_sum,
)

__all__ = ["PROGRAMS", "Check", "Program", "no_input", "program_of"]

#: what a party process runs once its runtime is up
Run = Callable[[Party, DeploymentConfig, OwnParty], Awaitable[Any]]
#: what a party process does before its runtime starts: read and check its own input
Check = Callable[[DeploymentConfig, OwnParty], None]


def no_input(cfg: DeploymentConfig, me: OwnParty) -> None:
    """The check of a program that reads no input of its own before it runs."""


@dataclass(frozen=True)
class Program:
    """A system's party program and the roles its parties may have.

    ``check`` reads and checks the party's own input (its file with its columns and ids,
    its saved model part) before the party waits for anyone, raising the error its run
    would raise (:class:`~mpc.errors.InputError`, a ``ConfigError``); the run then finds the
    input read (:class:`~parties.own_party.ReadOnce`)."""

    roles: frozenset[str]
    run: Run
    check: Check = no_input


#: every system's party program, by the system's name
PROGRAMS: dict[str, Program] = {
    "secure-sum": Program(frozenset({"site"}), secure_sum.run, secure_sum.check),
    "is-r-empty": Program(frozenset({"site"}), is_r_empty.run, is_r_empty.check),
    "psi-ca": Program(frozenset({"site"}), psi_ca.run, psi_ca.check),
    "psi": Program(frozenset({"site"}), psi.run, psi.check),
    "dot-product": Program(
        frozenset({"alice", "bob", "dealer"}), dot_product.run, dot_product.check
    ),
    "secure-argmax": Program(
        frozenset({"p0", "p1", "dealer", "site"}), secure_argmax.run, secure_argmax.check
    ),
    "ppid3": Program(frozenset({"site", "dealer"}), ppid3.run, ppid3.check),
    "ppid3-classify": Program(frozenset({"site", "dealer"}), ppid3.run, ppid3.check),
    "hybrid-id3": Program(frozenset({"alice", "bob", "dealer"}), hybrid.run, hybrid.check),
    "hybrid-id3-classify": Program(frozenset({"alice", "bob", "dealer"}), hybrid.run, hybrid.check),
    "cdtl": Program(frozenset({"client", "cdbs"}), cdtl.run, cdtl.check),
    "cdtl-outsource": Program(
        frozenset({"client", "cdbs"}), cdtl_sessions.outsource_run, cdtl_sessions.outsource_check
    ),
    "cdtl-classify": Program(
        frozenset({"client", "cdbs"}), cdtl_sessions.classify_run, cdtl_sessions.classify_check
    ),
    "cdbs-load": Program(frozenset({"client", "cdbs"}), cdtl.load_run, cdtl.load_check),
}


def program_of(name: str) -> Program:
    """The program of the system ``name``, or a one-line error naming the systems."""
    try:
        return PROGRAMS[name]
    except KeyError:
        raise ConfigError(f"unknown system {name!r}; known systems: {sorted(PROGRAMS)}") from None
