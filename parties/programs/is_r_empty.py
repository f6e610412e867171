"""The party program of ``is-r-empty``: IsREmpty (Vaidya & Clifton, Algorithm 2) on one flag
per site (:func:`protocols.ppid3.is_r_empty.is_r_empty`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.errors import ConfigError
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import load_party_data
from parties.own_party import OwnParty
from parties.params import Params, option
from protocols.ppid3.is_r_empty import is_r_empty

__all__ = ["IsREmptyParams", "check", "run"]


@dataclass(frozen=True)
class IsREmptyParams(Params):
    """The parameter of IsREmpty (deployment file: ``m``, the secure sum's domain)."""

    domain: int = option(
        2**32,
        flag="--domain",
        metavar="M",
        key="m",
        help="domain size m > k of the secure sum (default: 2^32)",
    )


def _flag(me: OwnParty) -> int:
    flag = load_party_data(me).get("flag")
    if flag not in (0, 1) or isinstance(flag, bool):
        raise ConfigError(f"party {me.name!r}: data file {me.data} needs `flag` = 0 or 1")
    return int(flag)


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """This party's flag, read before it waits for anyone."""
    _flag(me)


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    params = IsREmptyParams.from_deployment(cfg.params, str(cfg.path))
    return await is_r_empty(party, _flag(me), m=params.domain)
