"""``mpc run secure-sum``: the ring secure sum of one private integer per party
(:mod:`parties.programs.secure_sum`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError
from parties.params import AtLeast, NumberList, option
from parties.programs.secure_sum import SumParams
from parties.systems.base import Audit, Plan, System, agreed

__all__ = ["SecureSum", "SumOptions"]


@dataclass(frozen=True)
class SumOptions(SumParams):
    """The options of ``secure-sum``: the parties and their inputs, and the sum's parameters."""

    parties: int = option(
        3,
        flag="--parties",
        metavar="K",
        check=AtLeast(2),
        help="number of parties k >= 2 (default: 3)",
    )
    inputs: tuple[int, ...] | None = option(
        None,
        flag="--inputs",
        parse=NumberList(),
        metavar="X1,X2,...",
        help="each party's private integer, in party order, negative ones too (-3,4,5); "
        "default: 1,2,...,k",
    )

    def check(self) -> None:
        super().check()
        if self.inputs and len(self.inputs) != self.parties:
            raise ConfigError(
                f"--inputs has {len(self.inputs)} values but --parties is {self.parties}"
            )


class SecureSum(System):
    name = "secure-sum"
    help = "ring secure sum of one private integer per party"
    options = SumOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        o: SumOptions = options
        inputs = list(o.inputs) if o.inputs else list(range(1, o.parties + 1))
        parties = [PartySpec(f"site{i + 1}", "site", {"value": x}) for i, x in enumerate(inputs)]
        return Plan(parties, SumParams(modulus=o.modulus, reveal=o.reveal).to_deployment())

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        return agreed(reports, [n for n, r in reports.items() if r.get("result") is not None])

    def audit(self, result: Any) -> Audit:
        return Audit("semi-honest parties; the two ring neighbours of a party do not collude")
