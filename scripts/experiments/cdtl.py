#!/usr/bin/env python3
"""Reproduce Mancuhan & Clifton's experiments 1-5: accuracy of cnl, cdtl and cdbsl, and the
client's savings ets (Equation 1) and ms (Equation 2), under 10-fold cross-validation.

Each run of an experiment is one ``mpc run cdtl ... --method all --json``: a client process and
a CDBS process over CurveZMQ. A run on one of the small tables (experiments 1-3) takes a few
seconds and its ``ets``, a ratio of client times of ~40 ms per fold, moves by several percent
from run to run; those experiments are run ``--repeats`` times (5), and the table gives the
mean accuracy, the median ``ets`` and ``ms`` with the lowest and highest ``ets``. Adult runs
once. Writes ``results.json``, ``table.md``, ``ets_ms.png`` (box plots over the folds of all
runs, as the paper's Figures 4-5) and ``accuracy.png`` to ``--out``.

    python scripts/experiments/cdtl.py --quick      # 3 folds, no Adult: about a minute
    python scripts/experiments/cdtl.py              # the five experiments, 10 folds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

#: (experiment, dataset, sensitive attribute, class, extra options) as in the paper's Section 5,
#: which learns binary trees on vote and australian, multiway ones on autos and adult
BINARY = ["--nominal-splits", "binary"]
EXPERIMENTS = [
    ("1", "autos", "symboling", "price", []),
    ("2", "house-votes-84", "physician-fee-freeze", "party", BINARY),
    ("3", "australian", "A9", "A15", BINARY),
    # Adult restricted to the non-private work classes, as the paper's 14,936-tuple sample
    ("4", "adult", "relationship", "income", ["--where", "workclass!=Private"]),
    ("5", "adult", "age", "income", ["--where", "workclass!=Private"]),
]
#: experiments run once whatever ``--repeats`` says (each run takes minutes)
ONCE = {"4", "5"}


def run(exp: tuple[str, str, str, str, list[str]], cv: int, l: int, timeout: float) -> dict:  # noqa: E741
    number, dataset, sensitive, cls, extra = exp
    cmd = [
        sys.executable, "-m", "mpc", "run", "cdtl", "--dataset", dataset, "--sensitive",
        sensitive, "--class", cls, "--l", str(l), "--cv", str(cv), "--method", "all",
        "--timeout", str(timeout), "--json", *extra,
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"experiment {number} failed (exit {proc.returncode}):\n{proc.stderr}"
        ) from None
    if not doc.get("ok"):
        errors = {n: p.get("error") for n, p in doc.get("parties", {}).items()}
        raise SystemExit(f"experiment {number} failed: {errors}")
    r = doc["result"]
    return {
        "experiment": number,
        "dataset": dataset,
        "sensitive": sensitive,
        "class": cls,
        "rows": r["rows"],
        "nominal_splits": r["nominal_splits"],
        "wall_s": round(time.perf_counter() - started, 1),
        "accuracy": {m: v["accuracy"] for m, v in r["methods"].items()},
        "client_seconds": {m: v["client_seconds"] for m, v in r["methods"].items()},
        "ets": r["ets"],
        "ets_cpu": r["ets_cpu"],
        "ms": r["ms"],
        "ets_per_fold": r["ets_per_fold"],
        "ms_per_fold": r["ms_per_fold"],
        "suppressed_per_fold": r["suppressed_per_fold"],
        "subtrees": r["cdbs"]["subtrees"],
    }


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One experiment's result from its runs: accuracy and client seconds averaged, ``ets``,
    ``ets (CPU)`` and ``ms`` the median over the runs (with the range of ``ets``), the
    per-fold values of all runs pooled for the box plots."""
    first = runs[0]
    methods = list(first["accuracy"])

    def mean(key: str, m: str) -> float:
        return statistics.fmean(r[key][m] for r in runs)

    ets = [r["ets"] for r in runs]
    return {
        **{
            k: first[k]
            for k in ("experiment", "dataset", "sensitive", "class", "rows", "nominal_splits")
        },
        "runs": len(runs),
        "wall_s": round(sum(r["wall_s"] for r in runs), 1),
        "accuracy": {m: mean("accuracy", m) for m in methods},
        "client_seconds": {m: mean("client_seconds", m) for m in methods},
        "ets": statistics.median(ets),
        "ets_range": [min(ets), max(ets)],
        "ets_runs": ets,
        "ets_cpu": statistics.median(r["ets_cpu"] for r in runs),
        "ms": statistics.median(r["ms"] for r in runs),
        "ets_per_fold": [x for r in runs for x in r["ets_per_fold"]],
        "ms_per_fold": [x for r in runs for x in r["ms_per_fold"]],
        "suppressed_per_fold": first["suppressed_per_fold"],
        "subtrees": [r["subtrees"] for r in runs],
    }


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| exp. | dataset (rows) | sensitive | class | splits | runs | cnl | cdtl | cdbsl "
        "| ets (range) | ets (CPU) | ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        a = r["accuracy"]
        low, high = r["ets_range"]
        spread = f" ({low:.3f}-{high:.3f})" if r["runs"] > 1 else ""
        lines.append(
            f"| {r['experiment']} | {r['dataset']} ({r['rows']}) | {r['sensitive']} | "
            f"{r['class']} | {r['nominal_splits']} | {r['runs']} | "
            f"{a['cnl']:.4f} | {a['cdtl']:.4f} | {a['cdbsl']:.4f} | "
            f"{r['ets']:.3f}{spread} | {r['ets_cpu']:.3f} | {r['ms']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def figures(results: list[dict[str, Any]], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"exp. {r['experiment']}" for r in results]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, title in ((axes[0], "ets_per_fold", "ets (Equation 1)"),
                           (axes[1], "ms_per_fold", "ms (Equation 2)")):  # fmt: skip
        data = [r[key] for r in results]
        ax.boxplot(data, tick_labels=labels)
        ax.scatter(range(1, len(data) + 1), [sum(d) / len(d) for d in data], color="blue",
                   zorder=3, label="mean")  # fmt: skip
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "ets_ms.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.27
    for i, m in enumerate(("cnl", "cdtl", "cdbsl")):
        xs = [j + (i - 1) * width for j in range(len(results))]
        ax.bar(xs, [r["accuracy"][m] for r in results], width, label=m)
    ax.set_xticks(range(len(results)), labels)
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("10-fold CV accuracy")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)
    plt.close(fig)
    return ["ets_ms.png", "accuracy.png"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="3 folds, experiments 1-3 only")
    p.add_argument("--only", default=None, help="comma-separated experiment numbers")
    p.add_argument("--l", type=int, default=2, help="l of l-diversity (2)")
    p.add_argument("--out", default="results/cdtl", help="results folder")
    p.add_argument("--timeout", type=float, default=120.0, help="deadline of every receive")
    p.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="runs of each small-table experiment, 1-3 (5); Adult's run once",
    )
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    cv = 3 if args.quick else 10
    chosen = args.only.split(",") if args.only else (["1", "2", "3"] if args.quick else None)
    exps = [e for e in EXPERIMENTS if chosen is None or e[0] in chosen]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = []
    for e in exps:
        print(f"[experiments] {e[0]}: {e[1]}, sensitive {e[2]}, class {e[3]} ...", flush=True)
        runs: list[dict[str, Any]] = []
        repeats = 1 if e[0] in ONCE else args.repeats
        for k in range(repeats):
            runs.append(run(e, cv, args.l, args.timeout))
            r = runs[-1]
            a = r["accuracy"]
            print(f"[experiments]    run {k + 1}/{repeats}: cnl {a['cnl']:.4f} "
                  f"cdtl {a['cdtl']:.4f} cdbsl {a['cdbsl']:.4f} ets {r['ets']:.3f} "
                  f"ms {r['ms']:.3f} ({r['wall_s']} s)", flush=True)  # fmt: skip
        results.append(combine(runs))
    md = markdown(results)
    (out / "table.md").write_text(md)
    written = figures(results, out)
    doc = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started, 1),
        "folds": cv,
        "l": args.l,
        "repeats": args.repeats,
        "results": results,
    }
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    print(md)
    print(f"[experiments] done in {doc['seconds']} s; wrote results.json, table.md, "
          + ", ".join(written))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
