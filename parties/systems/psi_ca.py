"""``mpc run psi-ca``: the cardinality of the intersection of one set per party
(:mod:`parties.programs.psi_ca`), the sets from files or drawn at random for a demo."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from parties.params import Params, option
from parties.programs.psi_ca import PHASES, PsiParams
from parties.systems.base import Plan, System

__all__ = [
    "PsiCa",
    "PsiOptions",
    "SetOptions",
    "random_sets",
    "read_set_file",
    "sets_of",
    "sets_origin",
]


@dataclass(frozen=True)
class SetOptions(Params):
    """One set per party, from files or drawn at random (``psi-ca`` and ``psi``)."""

    sets: str | None = option(
        None,
        flag="--sets",
        metavar="FILE1,FILE2,...",
        group="input",
        help="one file per party (k >= 2 files, party i is site<i>): one element per line, "
        "any string; blank lines are ignored, an element may appear once per file",
    )
    random: int | None = option(
        None,
        flag="--random",
        metavar="N",
        group="input",
        parse=int,
        help="instead of files: every party draws N random elements, a planted share of them "
        "common to all parties (demos and benchmarks)",
    )
    parties: int | None = option(
        None,
        flag="--parties",
        metavar="K",
        help="with --random: number of parties k >= 2 (default 3)",
    )
    overlap: float | None = option(
        None,
        flag="--overlap",
        metavar="F",
        help="with --random: the fraction of the N elements common to all parties (default 0.5)",
    )
    seed: int | None = option(
        None,
        flag="--seed",
        help="with --random: seed of the demo input, every party's random set, drawn by the "
        "launcher (default 0); never of the protocol's keys, which come from the OS",
    )

    REQUIRED_GROUPS: ClassVar[Mapping[str, bool]] = {"input": True}


@dataclass(frozen=True)
class PsiOptions(PsiParams, SetOptions):
    """The options of ``mpc run psi-ca``: the sets and the receiver."""


def _short(text: str, limit: int = 40) -> str:
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


def read_set_file(path: str) -> list[str]:
    """The elements of a set file in file order: one per line (``\\n`` or ``\\r\\n``),
    kept exactly as written; blank lines are skipped; a repeated element is an error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"--sets: {path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--sets: {path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"--sets: cannot read {path}: {exc.strerror}") from None
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.split("\n"), 1):
        element = line.removesuffix("\r")
        if not element.strip():
            continue
        first = first_line.setdefault(element, number)
        if first != number:
            raise ConfigError(
                f"--sets: {path} line {number}: element {_short(element)} repeats line {first}; "
                "list every element once"
            )
    return list(first_line)


def random_sets(k: int, n: int, overlap: float, seed: int) -> list[list[str]]:
    """``k`` sets of ``n`` distinct random 16-hex-digit strings sharing ``round(overlap * n)``
    elements; the other elements of each set belong to that set only."""
    common = round(overlap * n)
    need = common + k * (n - common)
    rng = np.random.default_rng(seed)
    values = np.unique(rng.integers(0, 2**63, size=need, dtype=np.int64))
    while len(values) < need:  # a collision among 63-bit draws: draw again
        more = rng.integers(0, 2**63, size=need - len(values), dtype=np.int64)
        values = np.unique(np.concatenate([values, more]))
    values = rng.permutation(values)
    tokens = [f"{int(v):016x}" for v in values]
    shared, own = tokens[:common], tokens[common:]
    sets = []
    for i in range(k):
        s = shared + own[i * (n - common) : (i + 1) * (n - common)]
        sets.append([s[j] for j in rng.permutation(len(s))])
    return sets


def sets_origin(source: dict[str, Any]) -> str:
    """Where :func:`sets_of`'s sets came from, for a summary line."""
    if "files" in source:
        return "from " + ", ".join(source["files"])
    return f"random; {source['overlap']:.0%} of every set common to all, seed {source['seed']}"


def sets_of(o: SetOptions) -> tuple[list[list[str]], dict[str, Any]]:
    """The parties' sets and where they came from (for the summary)."""
    if o.sets is not None:
        for flag in ("parties", "overlap", "seed"):
            if getattr(o, flag) is not None:
                raise ConfigError(
                    f"--{flag} goes with --random; with --sets every file is one party"
                )
        files = [f.strip() for f in o.sets.split(",")]
        if len(files) < 2 or not all(files):
            raise ConfigError(
                f"--sets needs at least 2 comma-separated files (one per party), got {o.sets!r}"
            )
        return [read_set_file(f) for f in files], {"files": files}
    assert o.random is not None
    k = 3 if o.parties is None else o.parties
    overlap = 0.5 if o.overlap is None else o.overlap
    seed = 0 if o.seed is None else o.seed
    if k < 2:
        raise ConfigError(f"--parties must be at least 2, got {k}")
    if o.random < 1:
        raise ConfigError(f"--random must be at least 1 element, got {o.random}")
    if not 0.0 <= overlap <= 1.0:
        raise ConfigError(f"--overlap must be a fraction between 0 and 1, got {overlap}")
    return random_sets(k, o.random, overlap, seed), {
        "random": o.random,
        "overlap": overlap,
        "seed": seed,
    }


class PsiCa(System):
    name = "psi-ca"
    help = "cardinality of set intersection, k parties, commutative encryption on Curve25519"
    options = PsiOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        o: PsiOptions = options
        sets, source = sets_of(o)
        names = [f"site{i + 1}" for i in range(len(sets))]
        receiver = names[-1] if o.receiver is None else o.receiver
        if receiver not in names:
            raise ConfigError(f"--receiver {receiver}: no such party; parties are {names}")
        common = set(sets[0]).intersection(*sets[1:])
        parties = [PartySpec(n, "site", {"elements": s}) for n, s in zip(names, sets, strict=True)]
        context = {
            "source": source,
            "set_sizes": {n: len(s) for n, s in zip(names, sets, strict=True)},
            "true_intersection": len(common),
        }
        return Plan(parties, PsiParams(receiver=receiver).to_deployment(), context)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
        receiver = str(plan.params["receiver"])
        counts = {n: r.get("result") for n, r in reports.items() if r.get("result") is not None}
        if len(counts) != 1:
            raise ProtocolError(f"expected the count of exactly one receiver, got {counts}")
        count = next(iter(counts.values()))
        if reports[receiver].get("result") is None:
            raise ProtocolError(f"the receiver {receiver} reported no count")
        n_total = sum(plan.context["set_sizes"].values())
        metrics = {n: r.get("metrics") or {} for n, r in reports.items()}
        seconds = max(
            sum(float((m.get("phases_s") or {}).get(ph, 0.0)) for ph in PHASES)
            for m in metrics.values()
        )
        x25519 = sum(int((m.get("crypto") or {}).get("x25519", 0)) for m in metrics.values())
        true = int(plan.context["true_intersection"])
        return {
            "receiver": receiver,
            "intersection": count,
            "true_intersection": true,
            "correct": count == true,
            "parties": len(reports),
            "set_sizes": plan.context["set_sizes"],
            "source": plan.context["source"],
            "protocol_s": round(seconds, 6),
            "elements": n_total,
            "x25519": x25519,
            "elements_per_s": round(n_total / seconds, 1) if seconds > 0 else None,
            "x25519_per_s": round(x25519 / seconds, 1) if seconds > 0 else None,
            "rounds": max(int(m.get("rounds", 0)) for m in metrics.values()),
            "bytes_sent": {n: int(m.get("bytes_sent", 0)) for n, m in metrics.items()},
        }

    def summary(self, result: Any) -> list[str]:
        source = result["source"]
        origin = sets_origin(source)
        sizes = ", ".join(f"{n} {s}" for n, s in result["set_sizes"].items())
        rate = (
            f"; {result['elements_per_s']:.0f} elements/s, {result['x25519_per_s']:.0f} X25519/s"
            if result["elements_per_s"]
            else ""
        )
        return [
            f"sets:      {sizes} elements ({origin})",
            f"count:     {result['intersection']}  (|intersection|, learned by "
            f"{result['receiver']} only)",
            f"true:      {result['true_intersection']}  (the launcher's check; no party sees "
            "another's set)",
            f"correct:   {result['correct']}",
            f"time:      {result['protocol_s']:.3f} s hashing + PSI-CA in {result['rounds']} "
            "rounds" + rate,
        ]
