"""The party program of ``secure-sum``: one private integer per party, their sum mod ``M``
(:func:`protocols.primitives.secure_sum.secure_sum`), revealed to every party or to the first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.errors import ConfigError
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import load_party_data
from parties.own_party import OwnParty
from parties.params import AtLeast, Params, option
from protocols.primitives.secure_sum import secure_sum

__all__ = ["OUTPUT_TO", "SumParams", "check", "run"]

#: who learns the sum
#: who learns the sum: every party, or the receiver alone
OUTPUT_TO = ("all", "receiver")


@dataclass(frozen=True)
class SumParams(Params):
    """The parameters of a secure sum (deployment file: ``modulus``, ``reveal``)."""

    modulus: int = option(
        2**64,
        flag="--modulus",
        metavar="M",
        key="modulus",
        help="the sum is computed mod M (default: 2^64)",
        check=AtLeast(2),
    )
    reveal: str = option(
        "all",
        flag="--reveal",
        choices=OUTPUT_TO,
        key="reveal",
        help="who learns the sum: every party (default) or only the first",
    )


def _value(me: OwnParty) -> int:
    value = load_party_data(me).get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"party {me.name!r}: data file {me.data} needs an integer `value`")
    return value


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """This party's value, read before it waits for anyone."""
    _value(me)


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    params = SumParams.from_deployment(cfg.params, str(cfg.path))
    value = _value(me)
    return await secure_sum(party, value, modulus=params.modulus, reveal=params.reveal)
