#!/usr/bin/env python3
"""Reproduce Mancuhan & Clifton's experiments 1-5: accuracy of cnl, cdtl and cdbsl, and the
client's savings ets (Equation 1) and ms (Equation 2), under 10-fold cross-validation, for
cdtl as Figures 2-3 draw it, with each of its two shortcuts alone and with both, over
loopback and over a shaped link.

Each run is one deployment of the ``cdtl`` system (``mpc run cdtl``): a client process and a
CDBS process over CurveZMQ, launched from here. The protocols (``--protocol`` of ``mpc run
cdtl``; :data:`protocols.cdtl.cdtl.PROTOCOLS`):

* ``as-drawn`` — Figures 2-3: every leaf with tuples is answered with ``leafIns`` and refined
  by the client; ``updateBDT`` is a request the client waits for before it predicts;
* ``single-leaf`` — the CDBS answers a leaf whose subtree is sure to be one leaf with its class;
* ``pipelined`` — ``updateBDT`` travels with the client's next request;
* ``optimised`` — both (the default of ``mpc run cdtl``).

The links (``--links``):

* ``loopback`` — both processes on 127.0.0.1, as ``mpc run`` places them;
* ``shaped`` — the client and the CDBS each in a network namespace of its own, joined by a
  veth pair shaped to ``--rate-mbit`` (100) and ``--delay-ms`` (5 ms one way, each
  direction): :mod:`mpc.deployment.netlab` (netem where the kernel has it, else tbf and a delay
  line; the table states which, with the exact ``tc`` command, and the round trip measured through
  the link before and after the runs). Needs root and iproute2; where the namespaces cannot
  be made, the shaped runs are skipped and the table says why. Over this link cnl pays for
  its downloads (IT and ST once per fold, its sealed tree for every prediction) as a client
  of a remote server does; on loopback they are nearly free.

Continuous attributes stay continuous, split by thresholds in every tree, as the paper's J48
split australian's and adult's; a continuous sensitive attribute (adult's ``age``, experiment
5) is binned, and so is every continuous attribute of autos (experiment 1, ``--bin-attributes
all``), as the paper discretised them: in each fold, on its training rows only. The accuracy
table names what was binned.

Every run runs cdtl and cnl on the same folds (ets is their ratio, fold by fold); cdbsl,
whose accuracy is the same whatever the protocol and the link, runs in the loopback runs of
the optimised protocol. The small tables (experiments 1-3) run ``--repeats`` times (5) per
protocol and link, Adult (4-5) once; the repeats go round the protocols in turn, so that a
change of the machine's load falls on all of them alike. Each table cell gives the median of
its runs with the lowest and highest, and the number of runs; ``table.md`` opens with the
machine, the load (``os.getloadavg()``) at start and end, and the link.

Writes ``results.json``, ``table.md``, ``ets_ms.png`` (box plots of ets and ms over the folds
of all runs, as the paper's Figures 4-5, one box per protocol and link) and ``accuracy.png``
to ``--out`` (default ``results/cdtl``; a ``--quick`` run writes to a scratch folder in the
temporary directory unless ``--out`` says where, never over ``results/``).

    python scripts/experiments/cdtl.py --quick      # 3 folds, experiments 1-3, 1 run each
    sudo python scripts/experiments/cdtl.py         # the five experiments, 10 folds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from mpc.deployment.launcher import launch
from mpc.deployment.netlab import ShapedLink
from mpc.errors import ConfigError
from mpc.learners.plot import require_matplotlib
from mpc.runtime.metrics import cpu_model
from parties.systems.base import Plan
from parties.systems.registry import get_system
from protocols.cdtl.cdtl import PROTOCOLS

ROOT = Path(__file__).resolve().parents[2]
#: where a smoke run (``--quick``) writes unless ``--out`` says where
SCRATCH = Path(tempfile.gettempdir()) / "mpc-cdtl-smoke"

#: (experiment, dataset, sensitive attribute, class, extra options) as in the paper's Section 5,
#: which learns binary trees on vote and australian, multiway ones on autos and adult
BINARY = ["--nominal-splits", "binary"]
EXPERIMENTS = [
    # the paper discretised autos' continuous attributes (binned on each fold's training rows
    # here); the other tables' continuous attributes stay continuous, as J48 saw them
    ("1", "autos", "symboling", "price", ["--bin-attributes", "all"]),
    ("2", "house-votes-84", "physician-fee-freeze", "party", BINARY),
    ("3", "australian", "A9", "A15", BINARY),
    # Adult restricted to the non-private work classes, as the paper's 14,936-tuple sample
    ("4", "adult", "relationship", "income", ["--where", "workclass!=Private"]),
    ("5", "adult", "age", "income", ["--where", "workclass!=Private"]),
]
#: experiments run once per protocol and link whatever ``--repeats`` says (minutes each)
ONCE = {"4", "5"}
PROTOCOL_NAMES = ("as-drawn", "single-leaf", "pipelined", "optimised")
LINKS = ("loopback", "shaped")
#: the run whose cdbsl accuracy the table reports (cdbsl runs there only)
CDBSL_RUN = ("loopback", "optimised")


def plan_of(exp: tuple[str, str, str, str, list[str]], cv: int, l: int) -> Any:  # noqa: E741
    """The ``cdtl`` system's plan of an experiment (the launcher's side of ``mpc run cdtl``):
    the table prepared and the folds drawn once, for every run of the experiment."""

    _, dataset, sensitive, cls, extra = exp
    system = get_system("cdtl")
    p = argparse.ArgumentParser()
    system.options.add_arguments(p)
    argv = ["--dataset", dataset, "--sensitive", sensitive, "--class", cls, "--l", str(l),
            "--cv", str(cv), *extra]  # fmt: skip
    return system.plan_from(p.parse_args(argv))


def run(
    exp: tuple[str, str, str, str, list[str]],
    base: Any,
    protocol: str,
    link: str,
    timeout: float,
    placement: Any = None,
) -> dict[str, Any]:
    """One run: the client and the CDBS launched with ``protocol`` on ``link``."""

    system = get_system("cdtl")
    methods = ["cdtl", "cnl", "cdbsl"] if (link, protocol) == CDBSL_RUN else ["cdtl", "cnl"]
    plan = Plan(base.parties, {**base.params, "protocol": protocol, "methods": methods},
                base.context)  # fmt: skip
    started = time.perf_counter()
    res = launch("cdtl", plan.params, plan.parties, timeout=timeout, placement=placement)
    wall = time.perf_counter() - started
    if not res.ok:
        errors = {n: (r.get("error") or {}).get("message") for n, r in res.reports.items()}
        tails = {n: text.strip().splitlines()[-3:] for n, text in res.logs.items()}
        raise SystemExit(
            f"experiment {exp[0]} ({protocol}, {link}) failed: {errors}\nlast log lines: {tails}"
        )
    finish = system.finish
    if finish is None:
        raise SystemExit("the cdtl system builds no result from its plan")
    r = finish(res.reports, plan)
    m = r["methods"]
    return {
        "experiment": exp[0],
        "protocol": protocol,
        "link": link,
        "rows": r["rows"],
        "nominal_splits": r["nominal_splits"],
        "binned": r.get("binned", []),
        "folds": r["folds"],
        "test_rows": sum(f["test"] for f in r["per_fold"]),
        "wall_s": round(wall, 1),
        "accuracy": {k: v["accuracy"] for k, v in m.items()},
        "client_seconds": {k: v["client_seconds"] for k, v in m.items()},
        "client_cpu_seconds": {k: v["client_cpu_seconds"] for k, v in m.items()},
        "round_trips": {k: v["round_trips"] for k, v in m.items()},
        "requests": {k: v["requests"] for k, v in m.items()},
        "subtrees_learned": m["cdtl"]["subtrees_learned"],
        "ets": r["ets"],
        "ets_cpu": r["ets_cpu"],
        "ms": r["ms"],
        "ms_held": r["ms_held"],
        "ets_per_fold": r["ets_per_fold"],
        "ms_per_fold": r["ms_per_fold"],
        "suppressed_per_fold": r["suppressed_per_fold"],
        "subtrees_stored": r["cdbs"]["subtrees"],
    }


def _binned(attributes: list[str]) -> str:
    """The accuracy table's words for the continuous attributes binned in every fold."""
    if not attributes:
        return "none"
    return ", ".join(attributes) if len(attributes) <= 3 else f"all {len(attributes)} continuous"


def spread(values: list[float]) -> dict[str, Any]:
    """Median, lowest, highest and count of ``values``."""
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs of one experiment, protocol and link: the medians of ets, ets (CPU), ms and
    ms (held) with their range; the cdtl round trips, subtrees learned and accuracy per run;
    the per-fold values of all runs pooled for the box plots."""
    first = runs[0]
    return {
        **{k: first[k] for k in ("experiment", "protocol", "link", "rows", "nominal_splits")},
        "binned": first.get("binned", []),
        "runs": len(runs),
        "wall_s": round(sum(r["wall_s"] for r in runs), 1),
        "ets": spread([r["ets"] for r in runs]),
        "ets_cpu": spread([r["ets_cpu"] for r in runs]),
        "ms": spread([r["ms"] for r in runs]),
        "ms_runs": [r["ms"] for r in runs],
        "ms_held_runs": [r["ms_held"] for r in runs],
        "subtrees_runs": [float(r["subtrees_learned"]) for r in runs],
        "round_trips_runs": [r["round_trips"]["cdtl"] / r["test_rows"] for r in runs],
        "ms_held": spread([r["ms_held"] for r in runs]),
        "cdtl_round_trips_per_prediction": spread(
            [r["round_trips"]["cdtl"] / r["test_rows"] for r in runs]
        ),
        "cdtl_subtrees_learned": spread([float(r["subtrees_learned"]) for r in runs]),
        "accuracy": {m: spread([r["accuracy"][m] for r in runs]) for m in first["accuracy"]},
        "client_seconds": {
            m: spread([r["client_seconds"][m] for r in runs]) for m in first["client_seconds"]
        },
        "ets_per_fold": [x for r in runs for x in r["ets_per_fold"]],
        "ms_per_fold": [x for r in runs for x in r["ms_per_fold"]],
    }


def _cell(s: dict[str, Any], digits: int = 3) -> str:
    if s["n"] == 1 or s["min"] == s["max"]:
        return f"{s['median']:.{digits}f}"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def markdown(
    cells: dict[tuple[str, str, str], dict[str, Any]],
    exps: list[tuple[str, str, str, str, list[str]]],
    links: list[str],
    protocols: list[str],
    header: list[str],
) -> str:
    """The tables: accuracy; ets per protocol and link; ms and the client's round trips."""
    lines = [*header, ""]
    # accuracy: every run of cdtl and cnl (they do not depend on the protocol or the link),
    # cdbsl from its runs
    lines += [
        "**Accuracy** (10-fold CV accuracy, median over the runs of every protocol and link, "
        "lowest-highest in brackets; cdbsl from the loopback runs of the optimised protocol):",
        "",
        "| exp. | dataset (rows) | sensitive | class | splits | binned per fold | runs | cnl "
        "| cdtl | cdbsl |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in exps:
        mine = [c for k, c in cells.items() if k[0] == e[0]]
        if not mine:
            continue
        runs = sum(c["runs"] for c in mine)

        def pooled(m: str, of: list[dict[str, Any]]) -> str:
            got = [c["accuracy"][m] for c in of if m in c["accuracy"]]
            if not got:
                return "-"
            lo, hi = min(g["min"] for g in got), max(g["max"] for g in got)
            med = statistics.median(g["median"] for g in got)
            return f"{med:.4f}" if lo == hi else f"{med:.4f} ({lo:.4f}-{hi:.4f})"

        c0 = mine[0]
        lines.append(
            f"| {e[0]} | {e[1]} ({c0['rows']}) | {e[2]} | {e[3]} | {c0['nominal_splits']} | "
            f"{_binned(c0.get('binned', []))} | {runs} | {pooled('cnl', mine)} | "
            f"{pooled('cdtl', mine)} | {pooled('cdbsl', mine)} |"
        )
    lines += [
        "",
        "**ets** (Equation 1: the client's wall-clock time of cdtl over cnl's, mean of the "
        "folds of a run; median of the runs, lowest-highest in brackets; runs per cell in the "
        "runs column). ets (CPU) uses the client's CPU time instead (optimised protocol):",
        "",
        "| exp. | link | runs | " + " | ".join(protocols) + " | ets (CPU), optimised |",
        "|---|---|---|" + "---|" * len(protocols) + "---|",
    ]
    for e in exps:
        for link in links:
            row = [cells.get((e[0], link, p)) for p in protocols]
            if all(c is None for c in row):
                continue
            runs = {c["runs"] for c in row if c is not None}
            cpu = cells.get((e[0], link, "optimised"))
            lines.append(
                f"| {e[0]} | {link} | {'/'.join(map(str, sorted(runs)))} | "
                + " | ".join("-" if c is None else _cell(c["ets"]) for c in row)
                + f" | {'-' if cpu is None else _cell(cpu['ets_cpu'])} |"
            )
    # ms held and the subtrees learned depend on the single-leaf switch alone, the round
    # trips on both
    by_switch = {
        False: [p for p in protocols if not PROTOCOLS[p].single_leaf],
        True: [p for p in protocols if PROTOCOLS[p].single_leaf],
    }
    lines += [
        "",
        "**ms** (Equation 2: the biggest BDT leaf over the training set, whatever the "
        "protocol), **ms held** (the biggest leafIns the client did receive over the training "
        "set) and the subtrees cdtl learned per run, without the single-leaf shortcut "
        "(as-drawn, pipelined) and with it (single-leaf, optimised); the requests cdtl waited "
        "for per prediction (round trips), per protocol. Medians of the runs of both links, "
        "lowest-highest in brackets:",
        "",
        "| exp. | ms | ms held, without | ms held, with | subtrees, without | subtrees, with | "
        + " | ".join(f"round trips, {p}" for p in protocols) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(protocols),
    ]  # fmt: skip
    for e in exps:
        mine = [c for k, c in cells.items() if k[0] == e[0]]
        if not mine:
            continue

        def pooled(key: str, names: list[str], digits: int = 3, mine: list = mine) -> str:
            got = [x for c in mine if c["protocol"] in names for x in c[key + "_runs"]]
            return "-" if not got else _cell(spread(got), digits)

        lines.append(
            f"| {e[0]} | {pooled('ms', protocols)} | {pooled('ms_held', by_switch[False])} | "
            f"{pooled('ms_held', by_switch[True])} | "
            f"{pooled('subtrees', by_switch[False], 0)} | "
            f"{pooled('subtrees', by_switch[True], 0)} | "
            + " | ".join(pooled("round_trips", [p]) for p in protocols)
            + " |"
        )
    return "\n".join(lines) + "\n"


def figures(
    cells: dict[tuple[str, str, str], dict[str, Any]],
    exps: list[str],
    links: list[str],
    protocols: list[str],
    out: Path,
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(links), 1, figsize=(10, 3.4 * len(links)), squeeze=False)
    colours = ["tab:red", "tab:orange", "tab:purple", "tab:blue"]
    width = 0.8 / len(protocols)
    for ax, link in zip(axes[:, 0], links, strict=True):
        for i, p in enumerate(protocols):
            data = [cells[(e, link, p)]["ets_per_fold"] if (e, link, p) in cells else []
                    for e in exps]  # fmt: skip
            xs = [j + (i - (len(protocols) - 1) / 2) * width for j in range(len(exps))]
            kept = [(x, d) for x, d in zip(xs, data, strict=True) if d]
            if not kept:
                continue
            box = ax.boxplot([d for _, d in kept], positions=[x for x, _ in kept],
                             widths=width * 0.9, patch_artist=True)  # fmt: skip
            for patch in box["boxes"]:
                patch.set_facecolor(colours[i % len(colours)])
                patch.set_alpha(0.5)
            ax.plot([], [], color=colours[i % len(colours)], lw=6, alpha=0.5, label=p)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(exps)), [f"exp. {e}" for e in exps])
        ax.set_title(f"ets per fold (Equation 1), {link}")
        ax.legend(fontsize=7, ncol=len(protocols))
    fig.tight_layout()
    fig.savefig(out / "ets_ms.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    bar = 0.27
    for i, m in enumerate(("cnl", "cdtl", "cdbsl")):
        values = []
        for e in exps:
            got = [c["accuracy"][m]["median"] for k, c in cells.items()
                   if k[0] == e and m in c["accuracy"]]  # fmt: skip
            values.append(statistics.median(got) if got else 0.0)
        ax.bar([j + (i - 1) * bar for j in range(len(exps))], values, bar, label=m)
    ax.set_xticks(range(len(exps)), [f"exp. {e}" for e in exps])
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("10-fold CV accuracy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)
    plt.close(fig)
    return ["ets_ms.png", "accuracy.png"]


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="3 folds, experiments 1-3, one run each")
    p.add_argument("--only", default=None, help="comma-separated experiment numbers")
    p.add_argument("--l", type=int, default=2, help="l of l-diversity (2)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"results folder (default results/cdtl; with --quick {SCRATCH})",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="deadline of every receive")
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="runs of each small-table experiment (1-3) per protocol and link (5; 1 with "
        "--quick); Adult's (4-5) run once",
    )
    p.add_argument(
        "--links",
        default=",".join(LINKS),
        help="comma-separated: loopback, shaped (default both)",
    )
    p.add_argument(
        "--protocols",
        default=",".join(PROTOCOL_NAMES),
        help="comma-separated cdtl protocols (default all four: " + ", ".join(PROTOCOL_NAMES) + ")",
    )
    p.add_argument(
        "--adult-protocols",
        default=None,
        help="comma-separated cdtl protocols for Adult (experiments 4-5) only (default those "
        "of --protocols); each Adult run over the shaped link takes minutes, so a full run "
        "may measure as-drawn and optimised there and all four on the small tables",
    )
    p.add_argument("--rate-mbit", type=float, default=100.0, help="the shaped link's rate (100)")
    p.add_argument(
        "--delay-ms",
        type=float,
        default=5.0,
        help="the shaped link's one-way delay, each direction (5: a 10 ms round trip)",
    )
    args = p.parse_args(argv)
    args.link_list = [x for x in args.links.split(",") if x]
    args.protocol_list = [x for x in args.protocols.split(",") if x]
    for x in args.link_list:
        if x not in LINKS:
            p.error(f"--links: expected some of {', '.join(LINKS)}, got {x!r}")
    args.adult_protocol_list = (
        args.protocol_list
        if args.adult_protocols is None
        else [x for x in args.adult_protocols.split(",") if x]
    )
    for option, chosen in (("--protocols", args.protocol_list),
                           ("--adult-protocols", args.adult_protocol_list)):  # fmt: skip
        for x in chosen:
            if x not in PROTOCOL_NAMES:
                p.error(f"{option}: expected some of {', '.join(PROTOCOL_NAMES)}, got {x!r}")
    if args.repeats is None:
        args.repeats = 1 if args.quick else 5
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    if args.out is None:
        args.out = SCRATCH if args.quick else ROOT / "results" / "cdtl"
    return args


def _open_link(args: argparse.Namespace) -> tuple[ShapedLink | None, str]:
    """The shaped link between the client and the CDBS, or why it could not be made."""
    link = ShapedLink(rate_mbit=args.rate_mbit, delay_ms=args.delay_ms)
    reason = link.open()
    if reason is None:
        return link, ""
    skipped = f"shaped link skipped: {reason}"
    print(f"[experiments] {skipped}", flush=True)
    return None, skipped


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:  # the figures need matplotlib: say so before any run, not after hours of them
        require_matplotlib("the experiment's figures")
    except ConfigError as exc:
        raise SystemExit(f"cdtl.py: {exc}") from None
    cv = 3 if args.quick else 10
    chosen = args.only.split(",") if args.only else (["1", "2", "3"] if args.quick else None)
    exps = [e for e in EXPERIMENTS if chosen is None or e[0] in chosen]
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load_start = _load()
    links = list(args.link_list)
    link, skipped = _open_link(args) if "shaped" in links else (None, "")
    placement = None
    probes: dict[str, list[float]] = {}
    if link is not None:
        placement = link.placement(a=["client"], b=["cdbs"])
        probes["before"] = link.round_trip_ms(50)
        print(f"[experiments] {link.describe()}", flush=True)
    elif "shaped" in links:
        links.remove("shaped")
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    try:
        for e in exps:
            print(f"[experiments] {e[0]}: {e[1]}, sensitive {e[2]}, class {e[3]} ...", flush=True)
            base = plan_of(e, cv, args.l)
            repeats = 1 if e[0] in ONCE else args.repeats
            for k in range(repeats):
                for ln in links:
                    chosen = args.adult_protocol_list if e[0] in ONCE else args.protocol_list
                    for protocol in chosen:
                        where = placement if ln == "shaped" else None
                        r = run(e, base, protocol, ln, args.timeout, where)
                        runs.setdefault((e[0], ln, protocol), []).append(r)
                        print(f"[experiments]    run {k + 1}/{repeats} {ln:8} {protocol:11} "
                              f"ets {r['ets']:.3f} ms {r['ms']:.3f} held {r['ms_held']:.3f} "
                              f"cdtl {r['accuracy']['cdtl']:.4f} "
                              f"round trips {r['round_trips']['cdtl']} ({r['wall_s']} s)",
                              flush=True)  # fmt: skip
        if link is not None:
            probes["after"] = link.round_trip_ms(50)
    finally:
        described = link.describe() if link is not None else ""
        if link is not None:
            link.close()
    load_end = _load()
    cells = {k: combine(v) for k, v in runs.items()}
    adult_note = (
        ""
        if args.adult_protocol_list == args.protocol_list
        else f" (Adult: {', '.join(args.adult_protocol_list)})"
    )
    header = [
        f"Machine: {cpu_model()}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}; "
        f"load average (1, 5, 15 min) {load_start} at the start, {load_end} at the end; "
        f"{round(time.perf_counter() - started)} s.",
        f"{cv}-fold CV, l = {args.l}; runs per cell: {args.repeats} for experiments 1-3, 1 "
        "for Adult (4-5), per protocol and link; protocols: "
        f"{', '.join(args.protocol_list)}{adult_note}.",
        "Links: loopback (both processes on 127.0.0.1)"
        + (f"; shaped: {described}" if described else "")
        + (f"; {skipped}" if skipped else "")
        + ".",
    ]
    for when, times in probes.items():
        s = spread(times)
        header.append(
            f"TCP round trip through the shaped link {when} the runs: median "
            f"{s['median']:.2f} ms ({s['min']:.2f}-{s['max']:.2f}, {s['n']} probes)."
        )
    shown = [x for x in PROTOCOL_NAMES if x in {*args.protocol_list, *args.adult_protocol_list}]
    md = markdown(cells, exps, links, shown, header)
    (out / "table.md").write_text(md)
    written = figures(cells, [e[0] for e in exps], links, shown, out)
    doc = {
        "machine": f"{cpu_model()} ({platform.machine()}), {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d"),
        "load": {"start": load_start, "end": load_end},
        "seconds": round(time.perf_counter() - started, 1),
        "folds": cv,
        "l": args.l,
        "repeats": args.repeats,
        "protocols": {"small": args.protocol_list, "adult": args.adult_protocol_list},
        "links": {"loopback": "127.0.0.1", **({"shaped": described} if described else {})},
        "skipped": skipped,
        "round_trip_ms": probes,
        "cells": list(cells.values()),
        "runs": [r for v in runs.values() for r in v],
    }
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    print(md)
    print(f"[experiments] done in {doc['seconds']} s; wrote {out}/: results.json, table.md, "
          + ", ".join(written))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
