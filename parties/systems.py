"""The systems a deployment can run, each with its roles, options and party program.

A *system* ties a protocol to the launcher and the party entry point:

* ``add_arguments`` — its options for ``mpc run SYSTEM``;
* ``plan`` — from those options, the parties (name, role, private input) and the protocol
  parameters that go into the deployment file;
* ``run`` — what one party process does once the runtime is up;
* ``result`` — the run's result, from the per-party reports (all parties must agree).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mpc.config import DeploymentConfig, PartyConfig
from mpc.errors import ConfigError, ProtocolError
from mpc.launcher import PartySpec
from mpc.runtime import Party

__all__ = ["SYSTEMS", "Plan", "System", "get_system"]


@dataclass(frozen=True)
class Plan:
    parties: list[PartySpec]
    params: dict[str, Any] = field(default_factory=dict)
    #: launcher-side state for ``finish`` (never sent to a party)
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class System:
    name: str
    help: str
    roles: frozenset[str]
    add_arguments: Callable[[argparse.ArgumentParser], None]
    plan: Callable[[argparse.Namespace], Plan]
    run: Callable[[Party, DeploymentConfig, PartyConfig], Awaitable[Any]]
    result: Callable[[dict[str, dict[str, Any]]], Any]
    #: when set, builds the result from the reports and the plan (instead of ``result``)
    finish: Callable[[dict[str, dict[str, Any]], Plan], Any] | None = None
    #: when set, the lines ``mpc run`` prints for the result
    summary: Callable[[Any], list[str]] | None = None


def load_party_data(me: PartyConfig) -> dict[str, Any]:
    """Read this party's private input file (JSON object)."""
    if me.data is None:
        raise ConfigError(f"party {me.name!r} has no `data` file in the deployment")
    try:
        data = json.loads(me.data.read_text())
    except FileNotFoundError:
        raise ConfigError(f"party {me.name!r}: data file {me.data} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"party {me.name!r}: data file {me.data} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"party {me.name!r}: data file {me.data} must hold a JSON object")
    return data


def _int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"{what}: expected comma-separated integers, got {text!r}") from None
    return values


def _int_param(params: dict[str, Any], key: str, default: int) -> int:
    value = params.get(key, default)
    try:
        return int(value)  # big values travel as strings in TOML (64-bit limit)
    except (TypeError, ValueError):
        raise ConfigError(f"protocol.params.{key}: expected an integer, got {value!r}") from None


def _agreed(reports: dict[str, dict[str, Any]], who: list[str] | None = None) -> Any:
    names = who or list(reports)
    values = [reports[n].get("result") for n in names]
    if any(v != values[0] for v in values):
        raise ProtocolError(
            f"parties disagree on the result: {dict(zip(names, values, strict=True))}"
        )
    return values[0]


# --------------------------------------------------------------------------- secure-sum


def _sum_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--parties", type=int, default=3, metavar="K", help="number of parties k >= 2 (default: 3)"
    )
    p.add_argument(
        "--inputs",
        default=None,
        metavar="X1,X2,...",
        help="each party's private integer, in party order (default: 1,2,...,k)",
    )
    p.add_argument(
        "--modulus",
        type=int,
        default=2**64,
        metavar="M",
        help="the sum is computed mod M (default: 2^64)",
    )
    p.add_argument(
        "--reveal",
        choices=("all", "receiver"),
        default="all",
        help="who learns the sum: every party (default) or only the first",
    )


def _sum_plan(args: argparse.Namespace) -> Plan:
    k = args.parties
    inputs = _int_list(args.inputs, "--inputs") if args.inputs else list(range(1, k + 1))
    if args.inputs and len(inputs) != k:
        raise ConfigError(f"--inputs has {len(inputs)} values but --parties is {k}")
    if k < 2:
        raise ConfigError(f"--parties must be at least 2, got {k}")
    if args.modulus < 2:
        raise ConfigError(f"--modulus must be at least 2, got {args.modulus}")
    parties = [PartySpec(f"site{i + 1}", "site", {"value": x}) for i, x in enumerate(inputs)]
    return Plan(parties, {"modulus": str(args.modulus), "reveal": args.reveal})


async def _sum_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from protocols.secure_sum import secure_sum

    value = load_party_data(me).get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"party {me.name!r}: data file {me.data} needs an integer `value`")
    reveal = str(cfg.params.get("reveal", "all"))
    return await secure_sum(
        party, value, modulus=_int_param(cfg.params, "modulus", 2**64), reveal=reveal
    )


def _sum_result(reports: dict[str, dict[str, Any]]) -> Any:
    return _agreed(reports, [n for n, r in reports.items() if r.get("result") is not None])


# --------------------------------------------------------------------------- is-r-empty


def _ire_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--flags",
        required=True,
        metavar="F1,F2,...",
        help="each site's AR flag (1: has attributes left, 0: none), in site order",
    )
    p.add_argument(
        "--domain",
        type=int,
        default=2**32,
        metavar="M",
        help="domain size m > k of the secure sum (default: 2^32)",
    )


def _ire_plan(args: argparse.Namespace) -> Plan:
    flags = _int_list(args.flags, "--flags")
    if len(flags) < 2:
        raise ConfigError(f"--flags needs one flag per site and at least 2 sites, got {flags}")
    if any(f not in (0, 1) for f in flags):
        raise ConfigError(f"--flags: every flag must be 0 or 1, got {flags}")
    if args.domain <= len(flags):
        raise ConfigError(
            f"--domain must exceed the number of sites {len(flags)}, got {args.domain}"
        )
    parties = [PartySpec(f"site{i + 1}", "site", {"flag": f}) for i, f in enumerate(flags)]
    return Plan(parties, {"m": str(args.domain)})


async def _ire_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from protocols.is_r_empty import is_r_empty

    flag = load_party_data(me).get("flag")
    if flag not in (0, 1) or isinstance(flag, bool):
        raise ConfigError(f"party {me.name!r}: data file {me.data} needs `flag` = 0 or 1")
    return await is_r_empty(party, flag, m=_int_param(cfg.params, "m", 2**32))


SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (
        System(
            "secure-sum",
            "ring secure sum of one private integer per party",
            frozenset({"site"}),
            _sum_args,
            _sum_plan,
            _sum_run,
            _sum_result,
        ),
        System(
            "is-r-empty",
            "IsREmpty (Vaidya & Clifton, Algorithm 2): does any site have attributes left?",
            frozenset({"site"}),
            _ire_args,
            _ire_plan,
            _ire_run,
            _agreed,
        ),
    )
}


def _register_ppid3() -> None:
    from parties.ppid3_system import (
        ppid3_args,
        ppid3_plan,
        ppid3_result,
        ppid3_run,
        ppid3_summary,
    )

    SYSTEMS["ppid3"] = System(
        "ppid3",
        "PPID3 (Vaidya & Clifton, Algorithm 7): a decision tree over vertically partitioned "
        "data, one process per site, set-intersection cardinality for every count",
        frozenset({"site"}),
        ppid3_args,
        ppid3_plan,
        ppid3_run,
        _agreed,
        finish=ppid3_result,
        summary=ppid3_summary,
    )


_register_ppid3()


def get_system(name: str) -> System:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise ConfigError(f"unknown system {name!r}; known systems: {sorted(SYSTEMS)}") from None
