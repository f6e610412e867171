"""``mpc run secure-argmax``: secure comparison and argmax between processes
(:mod:`parties.programs.secure_argmax`).

``mpc run secure-argmax --rows R --candidates M [--fractions] [--seed S]`` draws a table of
keys from the seed (demo input, which the launcher knows anyway; every mask comes from the
parties' and the dealer's OS randomness, never from the seed), splits each key into two
additive shares mod 2^64 and writes the two parties that hold them only their own shares; the
two find the first largest key of every row, with triples from the ``--helper`` (the dealer,
a third site, or oblivious transfer between the two), and the first learns the winners.
The launcher checks them against the plain argmax (``correct``); no party can.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.deployment.launcher import PartySpec
from mpc.errors import ProtocolError
from parties.params import AtLeast, Params, option
from parties.programs.secure_argmax import TAG, ArgmaxParams, parties_of
from parties.systems.base import Audit, Plan, System
from protocols.engine.circuits import tournament
from protocols.engine.preprocessing import PREPROCESSING

__all__ = ["SecureArgmax", "SecureArgmaxOptions"]

#: the costs a run reports per party
COSTS = ("bytes_sent", "bytes_received", "messages_sent", "rounds")


@dataclass(frozen=True)
class SecureArgmaxOptions(Params):
    rows: int = option(
        100, flag="--rows", metavar="R", check=AtLeast(1), help="rows of the table (100)"
    )
    candidates: int = option(
        10, flag="--candidates", metavar="M", check=AtLeast(1),
        help="keys per row, among which the largest is found (10)",
    )  # fmt: skip
    fractions: bool = option(
        False, flag="--fractions", flag_only=True,
        help="keys are fractions n/d (d > 0), compared exactly by cross products",
    )  # fmt: skip
    helper: str = option(
        "dealer", flag="--helper", choices=PREPROCESSING,
        help="where the triples come from: dealer (a commodity server), sites (three sites, "
        "the third deals), ot (no third party: oblivious transfer between the two) (dealer)",
    )  # fmt: skip
    seed: int = option(
        0, flag="--seed",
        help="seed of the demo table (default 0); never of a mask, which comes from the OS",
    )  # fmt: skip


def _phase(metrics: dict[str, Any]) -> float:
    return float((metrics.get("phases_s") or {}).get(TAG, 0.0))


class SecureArgmax(System):
    name = "secure-argmax"
    help = (
        "secure comparison and argmax on additive shares (a dealer's correlated randomness): "
        "the first largest key of each row, only the winners opened"
    )
    options = SecureArgmaxOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        o: SecureArgmaxOptions = options
        rng = np.random.default_rng(o.seed)
        shape = (o.rows, o.candidates)
        if o.fractions:
            keys = rng.integers(0, 2**20, size=shape)
            dens = rng.integers(1, 2**20, size=shape)
        else:
            keys = rng.integers(-(2**40), 2**40, size=shape)
            keys[:, -1] = keys[:, 0]  # a tie in every row: the first must win
            dens = None
        p0, p1, helper = parties_of(o.helper)
        inputs: dict[str, dict[str, Any]] = {p0: {}, p1: {}}
        for name, table in (("keys", keys), ("denominators", dens)):
            if table is None:
                continue
            mask = np.frombuffer(randomness.token_bytes(8 * table.size, "argmax/mask"), dtype="<u8")
            mask = mask.astype(np.uint64).reshape(shape)
            inputs[p0][name] = mask.tolist()
            inputs[p1][name] = (table.astype(np.int64).astype(np.uint64) - mask).tolist()
        role = "site" if o.helper == "sites" else None
        parties = [PartySpec(p0, role or "p0", inputs[p0]), PartySpec(p1, role or "p1", inputs[p1])]
        if helper is not None:
            parties.append(PartySpec(helper, role or "dealer"))
        params = ArgmaxParams(
            rows=o.rows, candidates=o.candidates, fractions=o.fractions, helper=o.helper
        )
        return Plan(parties, params.to_deployment(), {"keys": keys, "dens": dens})

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
        keys, dens = plan.context["keys"], plan.context["dens"]
        first = parties_of(plan.params["helper"])[0]
        got = (reports[first].get("result") or {}).get("winners")
        if got is None:
            raise ProtocolError(f"{first} reported no winners")
        if dens is None:
            plain = keys.argmax(axis=1).tolist()
        else:
            plain = []
            for n_row, d_row in zip(keys.tolist(), dens.tolist(), strict=True):
                values = [Fraction(n, d) for n, d in zip(n_row, d_row, strict=True)]
                plain.append(values.index(max(values)))
        metrics = {n: r.get("metrics") or {} for n, r in reports.items()}
        rows, count = keys.shape
        return {
            "rows": rows,
            "candidates": count,
            "fractions": dens is not None,
            "helper": plan.params["helper"],
            "winners": got[:10],
            "correct": got == plain,
            "rounds_per_level": 9 + (1 if dens is not None else 0),
            "levels": len(tournament(count)),
            "protocol_s": round(max(_phase(m) for m in metrics.values()), 6),
            "per_party": {n: {k: m.get(k) for k in COSTS} for n, m in sorted(metrics.items())},
        }

    def summary(self, result: Any) -> list[str]:
        kind = "fractions" if result["fractions"] else "integers"
        p0, p1, _ = parties_of(result["helper"])
        lines = [
            f"table:     {result['rows']} rows x {result['candidates']} candidate {kind}, "
            f"additive shares mod 2^64 at {p0} and {p1}",
            f"triples:   {result['helper']} ({PREPROCESSING[result['helper']].trust})",
            f"winners:   {result['winners']}{' ...' if result['rows'] > 10 else ''}  "
            f"(opened to {p0}; the first largest of each row)",
            f"correct:   {result['correct']}  (the launcher's plain argmax; no party knows "
            "the keys)",
            f"rounds:    {result['levels']} tournament levels, {result['rounds_per_level']} "
            "rounds each, every row at once",
            f"time:      {result['protocol_s']:.4f} s in the protocol",
        ]
        for name, cost in result["per_party"].items():
            lines.append(
                f"{name + ':':<10} sent {cost['bytes_sent']} B, received "
                f"{cost['bytes_received']} B in {cost['messages_sent']} messages, "
                f"{cost['rounds']} rounds"
            )
        return lines

    def audit(self, result: Any) -> Audit:
        helper = result.get("helper") if isinstance(result, dict) else None
        how = PREPROCESSING.get(str(helper))
        return Audit(trust=how.trust if how is not None else "")
