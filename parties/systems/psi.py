"""``mpc run psi``: the private set intersection of one set per party, the step
``--records common`` runs before training and classifying (:mod:`parties.programs.psi`); the
sets from files or drawn at random, as for ``psi-ca``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.deployment.launcher import PartySpec
from mpc.errors import ProtocolError
from parties.programs.psi import PHASE, common_digest
from parties.systems.base import Plan, System
from parties.systems.psi_ca import SetOptions, sets_of, sets_origin

__all__ = ["Psi", "PsiSetsOptions"]


@dataclass(frozen=True)
class PsiSetsOptions(SetOptions):
    """The options of ``mpc run psi``: the sets."""


class Psi(System):
    name = "psi"
    help = (
        "private set intersection, k parties, by batched oblivious PRFs (the alignment of "
        "--records common): each learns which of its own elements every party holds"
    )
    options = PsiSetsOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        sets, source = sets_of(options)
        names = [f"site{i + 1}" for i in range(len(sets))]
        common = sorted(set(sets[0]).intersection(*sets[1:]))
        parties = [PartySpec(n, "site", {"elements": s}) for n, s in zip(names, sets, strict=True)]
        context = {
            "source": source,
            "set_sizes": {n: len(s) for n, s in zip(names, sets, strict=True)},
            "true_intersection": len(common),
            "digest": common_digest(common),
        }
        return Plan(parties, {}, context)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
        results: dict[str, dict[str, Any]] = {
            n: r["result"] for n, r in reports.items() if isinstance(r.get("result"), dict)
        }
        missing = [n for n in reports if n not in results]
        if missing:
            raise ProtocolError(f"parties {missing} reported no intersection")
        metrics = {n: r.get("metrics") or {} for n, r in reports.items()}
        seconds = max(float((m.get("phases_s") or {}).get(PHASE, 0.0)) for m in metrics.values())
        true, digest = int(plan.context["true_intersection"]), plan.context["digest"]
        correct = all(r["common"] == true and r["digest"] == digest for r in results.values())
        return {
            "common": {n: int(r["common"]) for n, r in results.items()},
            "held": {n: int(r["held"]) for n, r in results.items()},
            "true_intersection": true,
            "correct": correct,
            "source": plan.context["source"],
            "protocol_s": round(seconds, 6),
            "x25519": sum(int((m.get("crypto") or {}).get("x25519", 0)) for m in metrics.values()),
            "bytes_sent": {n: int(m.get("bytes_sent", 0)) for n, m in metrics.items()},
        }

    def summary(self, result: Any) -> list[str]:
        source = result["source"]
        origin = sets_origin(source)
        sizes = ", ".join(f"{n} {s}" for n, s in result["held"].items())
        common = ", ".join(f"{n} {c}" for n, c in result["common"].items())
        sent = max(result["bytes_sent"].values()) / 1e6
        return [
            f"sets:      {sizes} elements ({origin})",
            f"common:    {common}  (each party learns which of its own elements these are)",
            f"true:      {result['true_intersection']}  (the launcher's check; no party sees "
            "another's set)",
            f"correct:   {result['correct']}",
            f"time:      {result['protocol_s']:.3f} s; {sent:.1f} MB sent by the busiest party, "
            f"{result['x25519']} X25519 operations (base OTs only)",
        ]
