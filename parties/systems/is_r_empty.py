"""``mpc run is-r-empty``: IsREmpty (Vaidya & Clifton, Algorithm 2) on one flag per site
(:mod:`parties.programs.is_r_empty`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError
from parties.params import NumberList, option
from parties.programs.is_r_empty import IsREmptyParams
from parties.systems.base import Audit, Plan, System

__all__ = ["IsREmpty", "IsREmptyOptions"]


@dataclass(frozen=True)
class IsREmptyOptions(IsREmptyParams):
    flags: tuple[int, ...] = option(
        (),
        flag="--flags",
        parse=NumberList(),
        metavar="F1,F2,...",
        required=True,
        help="each site's AR flag (1: has attributes left, 0: none), in site order",
    )

    def check(self) -> None:
        super().check()
        flags = list(self.flags)
        if len(flags) < 2:
            raise ConfigError(f"--flags needs one flag per site and at least 2 sites, got {flags}")
        if any(f not in (0, 1) for f in flags):
            raise ConfigError(f"--flags: every flag must be 0 or 1, got {flags}")
        if self.domain <= len(flags):
            raise ConfigError(
                f"--domain must exceed the number of sites {len(flags)}, got {self.domain}"
            )


class IsREmpty(System):
    name = "is-r-empty"
    help = "IsREmpty (Vaidya & Clifton, Algorithm 2): does any site have attributes left?"
    options = IsREmptyOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        o: IsREmptyOptions = options
        parties = [PartySpec(f"site{i + 1}", "site", {"flag": f}) for i, f in enumerate(o.flags)]
        return Plan(parties, IsREmptyParams(domain=o.domain).to_deployment())

    def audit(self, result: Any) -> Audit:
        return Audit("semi-honest sites; the two ring neighbours of a site do not collude")
