"""The systems a deployment can run, each with its roles, options and party program.

A *system* ties a protocol to the launcher and the party entry point:

* ``add_arguments`` — its options for ``mpc run SYSTEM``;
* ``plan`` — from those options, the parties (name, role, private input) and the protocol
  parameters that go into the deployment file;
* ``run`` — what one party process does once the runtime is up;
* ``result`` — the run's result, from the per-party reports (all parties must agree);
* ``audit`` — what the launcher of a local run reads off that result (:class:`Audit`): the
  tree assembled from every party's own nodes, the accuracy, the trust the run rests on.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.config import DeploymentConfig, PartyConfig
from mpc.runtime.party import Party
from parties.options import NumberList
from parties.plan import Plan, load_party_data
from protocols.primitives.dot_product import METHODS

__all__ = [
    "SYSTEMS",
    "Audit",
    "NumberList",
    "Plan",
    "System",
    "get_system",
    "random_sets",
    "read_set_file",
]


@dataclass(frozen=True)
class Audit:
    """What a local run's launcher, which reads every party's report, can say of the run.

    ``tree`` is the tree (JSON of :mod:`mpc.learners.tree`) assembled from the parts every
    party holds, for this audit only: no party holds it. A node's ``site`` is an index into
    ``sites``; the leaves are held by ``class_site``. ``accuracy`` is the accuracy of the
    private tree on the held-out rows (where there are some, else on the training rows;
    cdtl: its cross-validated accuracy). ``trust`` is the assumption the run's privacy rests
    on."""

    trust: str
    tree: dict[str, Any] | None = None
    sites: tuple[str, ...] = ()
    class_site: str | None = None
    accuracy: float | None = None


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
    #: what the launcher reads off the result (:class:`Audit`)
    audit: Callable[[Any], Audit] = lambda result: Audit(SEMI_HONEST)
    #: whether the audit has a tree (``mpc run SYSTEM --plot`` draws it)
    has_tree: bool = False


#: the trust of the systems that have no helper: every party semi-honest, none colluding
SEMI_HONEST = "semi-honest parties, no two colluding"
#: the trust of a run with a commodity server (``dealer``) or without (``paillier``)
TWO_PARTY_TRUST = {name: m.trust for name, m in METHODS.items()}
#: the trust of the cdtl sessions
CDBS_TRUST = "semi-honest client; the CDBS is honest-but-curious and may read everything it stores"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _ppid3_audit(result: dict[str, Any]) -> Audit:
    part = result["partition"]
    names = tuple(part["site_names"])
    accuracy = result.get("accuracy") or {}
    return Audit(
        trust=str(result.get("trust") or SEMI_HONEST),
        tree=result["tree"],
        sites=names,
        class_site=names[int(part["class_site"])],
        accuracy=_number(accuracy.get("test", accuracy.get("train"))),
    )


def _hybrid_audit(result: dict[str, Any]) -> Audit:
    return Audit(
        trust=TWO_PARTY_TRUST.get(str(result.get("method")), SEMI_HONEST),
        tree=result["tree"],
        sites=("alice", "bob"),
        class_site="bob",
        accuracy=_number(result.get("accuracy")),
    )


def _two_party_audit(result: dict[str, Any]) -> Audit:
    method = result.get("method") if isinstance(result, dict) else None
    return Audit(trust=TWO_PARTY_TRUST.get(str(method), SEMI_HONEST))


def _cdtl_audit(result: dict[str, Any]) -> Audit:
    methods = result.get("methods") if isinstance(result, dict) else None
    accuracy = (methods or {}).get("cdtl", {}).get("accuracy")
    return Audit(trust=CDBS_TRUST, accuracy=_number(accuracy))


def _int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"{what}: expected comma-separated integers, got {text!r}") from None
    return values


def _numbers(value: str | list[int], what: str) -> list[int]:
    """The integers of an option: already a list (:class:`NumberList`), or its text."""
    return list(value) if isinstance(value, list) else _int_list(value, what)


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
        type=NumberList(),
        default=None,
        metavar="X1,X2,...",
        help="each party's private integer, in party order, negative ones too (-3,4,5); "
        "default: 1,2,...,k",
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
    inputs = _numbers(args.inputs, "--inputs") if args.inputs else list(range(1, k + 1))
    if args.inputs and len(inputs) != k:
        raise ConfigError(f"--inputs has {len(inputs)} values but --parties is {k}")
    if k < 2:
        raise ConfigError(f"--parties must be at least 2, got {k}")
    if args.modulus < 2:
        raise ConfigError(f"--modulus must be at least 2, got {args.modulus}")
    parties = [PartySpec(f"site{i + 1}", "site", {"value": x}) for i, x in enumerate(inputs)]
    return Plan(parties, {"modulus": str(args.modulus), "reveal": args.reveal})


async def _sum_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from protocols.primitives.secure_sum import secure_sum

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
        type=NumberList(),
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
    flags = _numbers(args.flags, "--flags")
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
    from protocols.ppid3.is_r_empty import is_r_empty

    flag = load_party_data(me).get("flag")
    if flag not in (0, 1) or isinstance(flag, bool):
        raise ConfigError(f"party {me.name!r}: data file {me.data} needs `flag` = 0 or 1")
    return await is_r_empty(party, flag, m=_int_param(cfg.params, "m", 2**32))


# --------------------------------------------------------------------------- psi-ca

#: seconds of the party phases that make up one PSI-CA run (hashing, then the protocol)
_PSI_PHASES = ("psi-ca/hash", "psi-ca")


def _psi_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--sets",
        metavar="FILE1,FILE2,...",
        help="one file per party (k >= 2 files, party i is site<i>): one element per line, "
        "any string; blank lines are ignored, an element may appear once per file",
    )
    src.add_argument(
        "--random",
        type=int,
        metavar="N",
        help="instead of files: every party draws N random elements, a planted share of them "
        "common to all parties (demos and benchmarks)",
    )
    p.add_argument(
        "--parties",
        type=int,
        default=None,
        metavar="K",
        help="with --random: number of parties k >= 2 (default 3)",
    )
    p.add_argument(
        "--overlap",
        type=float,
        default=None,
        metavar="F",
        help="with --random: the fraction of the N elements common to all parties (default 0.5)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="with --random: seed of the demo input, every party's random set, drawn by the "
        "launcher (default 0); never of the protocol's keys, which come from the OS",
    )
    p.add_argument(
        "--receiver",
        default=None,
        metavar="NAME",
        help="the party that learns the intersection size (default: the last party)",
    )


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


def _psi_plan(args: argparse.Namespace) -> Plan:
    if args.sets is not None:
        for flag in ("parties", "overlap", "seed"):
            if getattr(args, flag) is not None:
                raise ConfigError(
                    f"--{flag} goes with --random; with --sets every file is one party"
                )
        files = [f.strip() for f in args.sets.split(",")]
        if len(files) < 2 or not all(files):
            raise ConfigError(
                f"--sets needs at least 2 comma-separated files (one per party), got {args.sets!r}"
            )
        sets = [read_set_file(f) for f in files]
        source: dict[str, Any] = {"files": files}
    else:
        k = 3 if args.parties is None else args.parties
        overlap = 0.5 if args.overlap is None else args.overlap
        seed = 0 if args.seed is None else args.seed
        if k < 2:
            raise ConfigError(f"--parties must be at least 2, got {k}")
        if args.random < 1:
            raise ConfigError(f"--random must be at least 1 element, got {args.random}")
        if not 0.0 <= overlap <= 1.0:
            raise ConfigError(f"--overlap must be a fraction between 0 and 1, got {overlap}")
        sets = random_sets(k, args.random, overlap, seed)
        source = {"random": args.random, "overlap": overlap, "seed": seed}
    names = [f"site{i + 1}" for i in range(len(sets))]
    receiver = names[-1] if args.receiver is None else args.receiver
    if receiver not in names:
        raise ConfigError(f"--receiver {receiver}: no such party; parties are {names}")
    common = set(sets[0]).intersection(*sets[1:])
    parties = [PartySpec(n, "site", {"elements": s}) for n, s in zip(names, sets, strict=True)]
    context = {
        "source": source,
        "set_sizes": {n: len(s) for n, s in zip(names, sets, strict=True)},
        "true_intersection": len(common),
    }
    return Plan(parties, {"receiver": receiver}, context)


def _elements(data: dict[str, Any], me: PartyConfig) -> list[str]:
    elements = data.get("elements")
    if not isinstance(elements, list) or not all(isinstance(e, str) for e in elements):
        raise ConfigError(f"party {me.name!r}: data file {me.data} needs `elements`, a string list")
    if len(set(elements)) != len(elements):
        raise ConfigError(f"party {me.name!r}: data file {me.data} repeats an element")
    return elements


async def _psi_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from mpc.crypto.curve25519 import ELEMENT_BYTES, hash_to_curve
    from protocols.primitives.psi_ca import GroupInput, set_intersection_cardinality

    elements = _elements(load_party_data(me), me)
    receiver = str(cfg.params.get("receiver", cfg.names[-1]))
    if receiver not in cfg.names:
        raise ConfigError(f"protocol.params.receiver: {receiver!r} is not a party of {cfg.names}")
    with party.phase(_PSI_PHASES[0]):
        hashed = np.frombuffer(
            b"".join(hash_to_curve(e.encode()) for e in elements), dtype=np.uint8
        ).reshape(-1, ELEMENT_BYTES)
    (counts,) = await set_intersection_cardinality(
        party, [GroupInput(receiver, [hashed], label="sets")], tag=_PSI_PHASES[1]
    )
    return None if counts is None else int(counts.sum())


def _psi_reported(reports: dict[str, dict[str, Any]]) -> Any:
    """The receiver's count: the one result that is not None."""
    counts = {n: r.get("result") for n, r in reports.items() if r.get("result") is not None}
    if len(counts) != 1:
        raise ProtocolError(f"expected the count of exactly one receiver, got {counts}")
    return next(iter(counts.values()))


def _psi_finish(reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
    receiver = str(plan.params["receiver"])
    count = _psi_reported(reports)
    if reports[receiver].get("result") is None:
        raise ProtocolError(f"the receiver {receiver} reported no count")
    k = len(reports)
    n_total = sum(plan.context["set_sizes"].values())
    metrics = {n: r.get("metrics") or {} for n, r in reports.items()}
    seconds = max(
        sum(float((m.get("phases_s") or {}).get(ph, 0.0)) for ph in _PSI_PHASES)
        for m in metrics.values()
    )
    x25519 = sum(int((m.get("crypto") or {}).get("x25519", 0)) for m in metrics.values())
    true = int(plan.context["true_intersection"])
    return {
        "receiver": receiver,
        "intersection": count,
        "true_intersection": true,
        "correct": count == true,
        "parties": k,
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


def _psi_summary(result: dict[str, Any]) -> list[str]:
    source = result["source"]
    origin = (
        "from " + ", ".join(source["files"])
        if "files" in source
        else f"random; {source['overlap']:.0%} of every set common to all, seed {source['seed']}"
    )
    sizes = ", ".join(f"{n} {s}" for n, s in result["set_sizes"].items())
    rate = (
        f"; {result['elements_per_s']:.0f} elements/s, {result['x25519_per_s']:.0f} X25519/s"
        if result["elements_per_s"]
        else ""
    )
    return [
        f"sets:      {sizes} elements ({origin})",
        f"count:     {result['intersection']}  (|intersection|, learned by {result['receiver']} "
        "only)",
        f"true:      {result['true_intersection']}  (the launcher's check; no party sees "
        "another's set)",
        f"correct:   {result['correct']}",
        f"time:      {result['protocol_s']:.3f} s hashing + PSI-CA in {result['rounds']} rounds"
        + rate,
    ]


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
            audit=lambda result: Audit(
                "semi-honest parties; the two ring neighbours of a party do not collude"
            ),
        ),
        System(
            "is-r-empty",
            "IsREmpty (Vaidya & Clifton, Algorithm 2): does any site have attributes left?",
            frozenset({"site"}),
            _ire_args,
            _ire_plan,
            _ire_run,
            _agreed,
            audit=lambda result: Audit(
                "semi-honest sites; the two ring neighbours of a site do not collude"
            ),
        ),
        System(
            "psi-ca",
            "cardinality of set intersection, k parties, commutative encryption on Curve25519",
            frozenset({"site"}),
            _psi_args,
            _psi_plan,
            _psi_run,
            _psi_reported,
            finish=_psi_finish,
            summary=_psi_summary,
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
        "data, one process per site; counts by set-intersection cardinality (--counts psi) or "
        "by secret sharing, the randomness dealt by a third site or a dealer (--counts fast)",
        frozenset({"site", "dealer"}),
        ppid3_args,
        ppid3_plan,
        ppid3_run,
        _agreed,
        finish=ppid3_result,
        summary=ppid3_summary,
        audit=_ppid3_audit,
        has_tree=True,
    )

    from parties.ppid3_system import (
        classify_args,
        classify_plan,
        classify_result,
        classify_summary,
    )

    SYSTEMS["ppid3-classify"] = System(
        "ppid3-classify",
        "PPID3's classifyInstance (Vaidya & Clifton, Algorithm 8) on new records held "
        "vertically, with the model parts saved by `mpc run ppid3 --model-out`",
        frozenset({"site"}),
        classify_args,
        classify_plan,
        ppid3_run,
        lambda reports: None,
        finish=classify_result,
        summary=classify_summary,
    )


_register_ppid3()


def _register_dot_product() -> None:
    from parties.dot_product_system import (
        dot_product_args,
        dot_product_plan,
        dot_product_reported,
        dot_product_result,
        dot_product_run,
        dot_product_summary,
    )

    SYSTEMS["dot-product"] = System(
        "dot-product",
        "secure dot products (Teng & Du's N(E) = Va . Vb) of random vectors: Du & Zhan's "
        "commodity server or Paillier, the product revealed to alice",
        frozenset({"alice", "bob", "dealer"}),
        dot_product_args,
        dot_product_plan,
        dot_product_run,
        dot_product_reported,
        finish=dot_product_result,
        summary=dot_product_summary,
        audit=_two_party_audit,
    )


_register_dot_product()


def _register_hybrid() -> None:
    from parties.hybrid_classify_system import (
        classify_args,
        classify_plan,
        classify_result,
        classify_summary,
    )
    from parties.hybrid_system import (
        hybrid_args,
        hybrid_plan,
        hybrid_result,
        hybrid_run,
        hybrid_summary,
    )

    SYSTEMS["hybrid-id3"] = System(
        "hybrid-id3",
        "Teng & Du's Hybrid-ID3: multi-group randomized response shortlists ω attributes, "
        "secure dot products (commodity server or Paillier) count them exactly; each party "
        "reads its own CSV, and --model-out saves each party's part of the tree",
        frozenset({"alice", "bob", "dealer"}),
        hybrid_args,
        hybrid_plan,
        hybrid_run,
        lambda reports: None,
        finish=hybrid_result,
        summary=hybrid_summary,
        audit=_hybrid_audit,
        has_tree=True,
    )
    SYSTEMS["hybrid-id3-classify"] = System(
        "hybrid-id3-classify",
        "classify new records, held vertically by alice and bob, with their saved parts of a "
        "Hybrid-ID3 tree (secure row-wise dot products); one party learns the predictions",
        frozenset({"alice", "bob", "dealer"}),
        classify_args,
        classify_plan,
        hybrid_run,
        lambda reports: None,
        finish=classify_result,
        summary=classify_summary,
        audit=_two_party_audit,
    )


_register_hybrid()


def _register_cdtl() -> None:
    from parties.cdtl_system import cdtl_args, cdtl_plan, cdtl_result, cdtl_run, cdtl_summary

    SYSTEMS["cdtl"] = System(
        "cdtl",
        "Mancuhan & Clifton's collaborative decision tree learning on outsourced anatomized "
        "data (client + CDBS), with the baselines cnl and cdbsl, under cross-validation",
        frozenset({"client", "cdbs"}),
        cdtl_args,
        cdtl_plan,
        cdtl_run,
        lambda reports: None,
        finish=cdtl_result,
        audit=_cdtl_audit,
        summary=cdtl_summary,
    )


_register_cdtl()


def _register_cdtl_sessions() -> None:
    from parties.cdtl_service import (
        classify_args,
        classify_plan,
        classify_result,
        classify_run,
        classify_summary,
        outsource_args,
        outsource_plan,
        outsource_result,
        outsource_run,
        outsource_summary,
    )

    SYSTEMS["cdtl-outsource"] = System(
        "cdtl-outsource",
        "cdtl, first session: the client anatomizes its CSV and outsources it to a CDBS whose "
        "database outlives the run, and keeps its key in a private model file",
        frozenset({"client", "cdbs"}),
        outsource_args,
        outsource_plan,
        outsource_run,
        lambda reports: None,
        finish=outsource_result,
        audit=_cdtl_audit,
        summary=outsource_summary,
    )
    SYSTEMS["cdtl-classify"] = System(
        "cdtl-classify",
        "cdtl, a later session: a new client process classifies a new CSV with its model file "
        "against the CDBS's stored table (Figure 3), refining leaves as needed",
        frozenset({"client", "cdbs"}),
        classify_args,
        classify_plan,
        classify_run,
        lambda reports: None,
        finish=classify_result,
        summary=classify_summary,
        audit=_cdtl_audit,
    )


_register_cdtl_sessions()


def _register_cdbs_load() -> None:
    from parties.cdtl_system import load_args, load_plan, load_result, load_run, load_summary

    SYSTEMS["cdbs-load"] = System(
        "cdbs-load",
        "load on one CDBS: N concurrent clients of one data owner, M cdtl predictions each",
        frozenset({"client", "cdbs"}),
        load_args,
        load_plan,
        load_run,
        lambda reports: None,
        finish=load_result,
        audit=_cdtl_audit,
        summary=load_summary,
    )


_register_cdbs_load()


def get_system(name: str) -> System:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise ConfigError(f"unknown system {name!r}; known systems: {sorted(SYSTEMS)}") from None
