#!/usr/bin/env python3
"""PPID3 benchmarks: one ``mpc run ppid3 ... --json`` per configuration, every site (and the
dealer of ``--counts fast --helper dealer``) its own process over CurveZMQ on this machine.

Prints and writes (``--out``: ``bench.json`` and ``bench.md``) a table with the dataset, rows,
attributes, sites, count backend, tree nodes, wall seconds, bytes sent, rounds and peak
memory per party, whether the tree equals plain ID3, and the ratio of the wall time to plain
ID3 fitted on the same data in the same run.

    python scripts/bench.py            # the issue's targets (several minutes)
    python scripts/bench.py --quick    # a smoke run (seconds)
    python scripts/bench.py --helpers --repeat 5   # --helper sites against --helper dealer

``--helpers`` runs car, nursery and kr-vs-kp (3 sites, the stopping rules of the full run)
with each helper ``--repeat`` times, alternating, and writes ``helpers.json`` and
``helpers.md``: the median wall time and its spread (minimum-maximum) per configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: (dataset, counts backend, extra options, target wall seconds or None)
QUICK = [
    ("weather", "psi", ["--sites", "2"], None),
    ("weather", "fast", ["--sites", "3", "--helper", "dealer"], None),
    ("house-votes-84", "fast", ["--sites", "3", "--helper", "sites"], None),
]
DEALER = ["--helper", "dealer"]
FULL = [
    ("house-votes-84", "psi", ["--sites", "3"], 60.0),
    ("house-votes-84", "fast", ["--sites", "3", *DEALER], None),
    ("car", "fast", ["--sites", "3", *DEALER], None),
    ("kr-vs-kp", "fast", ["--sites", "3", *DEALER, "--min-samples-split", "0.05"], 5.0),
    ("nursery", "fast", ["--sites", "3", *DEALER], 30.0),
    ("adult", "fast", ["--sites", "3", *DEALER, "--max-depth", "3"], None),
    ("adult", "fast", ["--sites", "3", *DEALER, "--max-depth", "6"], None),
    ("adult", "fast", ["--sites", "3", *DEALER, "--max-depth", "6", "--all-rows"], 60.0),
    (
        "adult",
        "fast",
        ["--sites", "3", "--helper", "sites", "--max-depth", "6", "--all-rows"],
        60.0,
    ),
]
#: --helpers: (dataset, options), each run with --helper sites and --helper dealer
HELPER_RUNS = [
    ("car", ["--sites", "3"]),
    ("nursery", ["--sites", "3"]),
    ("kr-vs-kp", ["--sites", "3", "--min-samples-split", "0.05"]),
]


def run(dataset: str, counts: str, extra: list[str], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "mpc", "run", "ppid3", "--dataset", dataset, "--counts", counts,
           "--timeout", str(timeout), "--json", *extra]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=4 * timeout)
    wall = time.perf_counter() - started
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{' '.join(cmd[3:])} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-2000:]}") from None  # fmt: skip
    if not doc.get("ok"):
        errors = {n: p.get("error") for n, p in doc.get("parties", {}).items() if p.get("error")}
        raise SystemExit(f"{' '.join(cmd[3:])} failed: {errors}")
    r = doc["result"]
    parties = {
        n: {
            "bytes_sent": p["metrics"]["bytes_sent"],
            "rounds": p["metrics"]["rounds"],
            "peak_rss_mb": p["metrics"].get("peak_rss_mb"),
            "cpu_s": p["metrics"].get("cpu_s"),
        }
        for n, p in doc["parties"].items()
    }
    return {
        "dataset": dataset,
        "options": extra,
        "rows": r["rows"]["train"],
        "attributes": sum(len(s) for s in r["partition"]["sites"]),
        "sites": len(r["partition"]["site_names"]),
        "counts": counts,
        "nodes": r["nodes"],
        "identical": r["identical"],
        "wall_s": doc["wall_s"],
        "launch_s": round(wall, 2),
        "plain_fit_s": r["plain_fit_s"],
        "ratio_to_plain": round(doc["wall_s"] / r["plain_fit_s"], 1) if r["plain_fit_s"] else None,
        "parties": parties,
    }


def markdown(results: list[dict[str, Any]], targets: list[float | None], machine: str) -> str:
    lines = [
        f"PPID3 on {machine}, {date.today().isoformat()}; every party a process over CurveZMQ.",
        "",
        "| dataset | rows | attrs | sites | counts | options | nodes | identical | wall s "
        "| target s | x plain ID3 | CPU s per party | MB sent per party | rounds "
        "| peak MB per party |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r, target in zip(results, targets, strict=True):
        mb = " / ".join(f"{p['bytes_sent'] / 1e6:.2f}" for p in r["parties"].values())
        rss = " / ".join(f"{p['peak_rss_mb']:.0f}" for p in r["parties"].values()
                         if p["peak_rss_mb"] is not None)  # fmt: skip
        rounds = max(p["rounds"] for p in r["parties"].values())
        cpu = " / ".join(f"{p['cpu_s']:.1f}" for p in r["parties"].values()
                         if p.get("cpu_s") is not None)  # fmt: skip
        opts = " ".join(r["options"][2:])  # every configuration starts with --sites K
        lines.append(
            f"| {r['dataset']} | {r['rows']} | {r['attributes']} | {r['sites']} | {r['counts']} "
            f"| {opts or '-'} | {r['nodes']} | {r['identical']} | {r['wall_s']:.1f} "
            f"| {target if target is not None else '-'} | {r['ratio_to_plain']} | {cpu} | {mb} "
            f"| {rounds} | {rss} |"
        )
    lines += [
        "",
        "Per-party columns list the sites in order, then the dealer (--helper dealer). CPU s is "
        "each party process's own CPU time (user + system), which other load on the machine "
        "does not inflate as it does wall time.",
    ]
    return "\n".join(lines) + "\n"


def compare_helpers(repeat: int, timeout: float, out: Path, machine: str) -> str:
    """Wall time of ``--helper sites`` against ``--helper dealer``: every configuration of
    :data:`HELPER_RUNS` ``repeat`` times with each, alternating (so load that comes and goes
    falls on both alike); the median and the minimum-maximum of each."""
    runs: list[dict[str, Any]] = []
    for dataset, extra in HELPER_RUNS:
        for i in range(repeat):
            for helper in ("sites", "dealer"):
                r = run(dataset, "fast", [*extra, "--helper", helper], timeout)
                if not r["identical"]:
                    raise SystemExit(f"{dataset} --helper {helper}: the tree is not plain ID3's")
                r["helper"] = helper
                runs.append(r)
                print(f"[bench] {dataset} --helper {helper} run {i + 1}/{repeat}: "
                      f"{r['wall_s']:.2f} s", file=sys.stderr, flush=True)  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "helpers.json").write_text(json.dumps({"machine": machine, "runs": runs}, indent=1))
    lines = [
        f"PPID3 --counts fast, 3 sites, {repeat} runs per row, alternating, on {machine}, "
        f"{date.today().isoformat()}; load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| dataset | options | helper | parties | nodes | median wall s | min-max wall s "
        "| median CPU s per party | MB sent per party (median run) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, extra in HELPER_RUNS:
        for helper in ("sites", "dealer"):
            mine = sorted((r for r in runs if r["dataset"] == dataset and r["helper"] == helper),
                          key=lambda r: r["wall_s"])  # fmt: skip
            walls = [r["wall_s"] for r in mine]
            middle = mine[len(mine) // 2]
            cpu = " / ".join(
                f"{statistics.median(r['parties'][n]['cpu_s'] for r in mine):.2f}"
                for n in middle["parties"] if middle["parties"][n].get("cpu_s") is not None
            )  # fmt: skip
            mb = " / ".join(f"{p['bytes_sent'] / 1e6:.2f}" for p in middle["parties"].values())
            lines.append(
                f"| {dataset} | {' '.join(extra[2:]) or '-'} | {helper} "
                f"| {len(middle['parties'])} | {middle['nodes']} "
                f"| {statistics.median(walls):.2f} | {min(walls):.2f}-{max(walls):.2f} "
                f"| {cpu} | {mb} |"
            )
    md = "\n".join(lines) + "\n"
    (out / "helpers.md").write_text(md)
    return md


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a smoke run of three small runs")
    p.add_argument(
        "--helpers",
        action="store_true",
        help="compare --helper sites with --helper dealer on car, nursery and kr-vs-kp",
    )
    p.add_argument("--repeat", type=int, default=5, help="runs per configuration (--helpers)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write bench.json/bench.md (default: results/bench; with --quick a "
        "scratch folder in the temporary directory, so a smoke run never overwrites results)",
    )
    p.add_argument("--timeout", type=float, default=900.0, help="deadline of every receive")
    args = p.parse_args(argv)
    if args.out is None:
        quick = args.quick or (args.helpers and args.repeat < 3)
        args.out = (
            Path(tempfile.gettempdir()) / "mpc-bench-smoke" if quick else ROOT / "results" / "bench"
        )
    if args.helpers:
        machine = (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        )
        print(compare_helpers(args.repeat, args.timeout, args.out, machine))
        return 0
    configs = QUICK if args.quick else FULL
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    results = []
    for dataset, counts, extra, _target in configs:
        print(f"[bench] {dataset} --counts {counts} {' '.join(extra)} ...", file=sys.stderr,
              flush=True)  # fmt: skip
        r = run(dataset, counts, extra, args.timeout)
        print(f"[bench]    {r['nodes']} nodes, identical {r['identical']}, {r['wall_s']:.1f} s",
              file=sys.stderr, flush=True)  # fmt: skip
        results.append(r)
    args.out.mkdir(parents=True, exist_ok=True)
    targets = [c[3] for c in configs]
    (args.out / "bench.json").write_text(json.dumps({"machine": machine, "runs": results},
                                                    indent=1))  # fmt: skip
    md = markdown(results, targets, machine)
    (args.out / "bench.md").write_text(md)
    print(md)
    print(f"[bench] wrote {args.out / 'bench.json'} and bench.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
