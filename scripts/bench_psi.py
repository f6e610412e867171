#!/usr/bin/env python3
"""Benchmark PSI-CA (cardinality of set intersection) across real processes over CurveZMQ.

Every point is one ``mpc run psi-ca --random N --parties K --json``: K party processes, each
with N random elements, a fraction ``--overlap`` of them (default half) common to all.
What the table reports:

* **input elements** ``k * n``: every party hashes its own n elements onto Curve25519 once,
  and every set is encrypted under all k keys (its owner's, then one per ring hop);
* **X25519 operations** ``k * k * n``: each party encrypts k sets of n elements (its own and
  the k - 1 it forwards), ``k * n`` per party;
* **protocol s**: the slowest party's hashing plus PSI-CA phase (after the startup handshake);
  ``elements/s`` and ``X25519/s`` divide the counts above by it, all parties together, running
  side by side on this machine's cores (k processes on fewer cores share them);
* **run s**: the whole ``mpc run``, with process start, key generation and set generation;
* **sent/party**: the most bytes any party sent (k - 1 ring hops of 32 n bytes, then the
  fully encrypted set it ends with to the receiver); **rounds**: the causal depth of the run (k).

python scripts/bench_psi.py --quick                 # n = 1e3, 1e4 and k = 2, 3, 4 (~15 s)
python scripts/bench_psi.py                         # n up to 1e5 (about 2 minutes)
python scripts/bench_psi.py --sizes 100000 --parties 4 --json psi.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from mpc.runtime.metrics import cpu_model

ROOT = Path(__file__).resolve().parent.parent
SIZES = "1000,10000,100000"
QUICK_SIZES = "1000,10000"
PARTIES = "2,3,4"


def run_once(k: int, n: int, overlap: float, seed: int, timeout: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "mpc",
        "run",
        "psi-ca",
        "--random",
        str(n),
        "--parties",
        str(k),
        "--overlap",
        str(overlap),
        "--seed",
        str(seed),
        "--timeout",
        str(timeout),
        "--json",
    ]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout * 3 + 60,
        stdin=subprocess.DEVNULL,
    )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"{' '.join(cmd)} printed no JSON (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
        ) from None
    if not doc.get("ok") or not doc["result"]["correct"]:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{json.dumps(doc, indent=2)[:4000]}")
    return {"run_s": doc["wall_s"], **doc["result"]}


def measure(k: int, n: int, overlap: float, repeats: int, timeout: float) -> dict[str, Any]:
    runs = [run_once(k, n, overlap, seed, timeout) for seed in range(repeats)]
    seconds = statistics.median(r["protocol_s"] for r in runs)
    last = runs[-1]
    return {
        "k": k,
        "n": n,
        "intersection": last["intersection"],
        "input_elements": k * n,
        "x25519": last["x25519"],
        "protocol_s": seconds,
        "run_s": statistics.median(r["run_s"] for r in runs),
        "elements_per_s": k * n / seconds,
        # the k party processes share this machine's cores: per core used
        "elements_per_s_per_core": k * n / seconds / min(k, os.cpu_count() or 1),
        "x25519_per_s": last["x25519"] / seconds,
        "bytes_sent": last["bytes_sent"],
        "max_bytes_sent": max(last["bytes_sent"].values()),
        "rounds": last["rounds"],
        "runs": repeats,
    }


def _size(b: float) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{b:.0f} B"


def table(rows: list[dict[str, Any]]) -> list[str]:
    head = (
        f"{'k':>3}{'n':>9}{'run s':>9}{'protocol s':>12}{'elements/s':>12}{'per core':>10}"
        f"{'X25519/s':>11}"
        f"{'sent/party':>12}{'rounds':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['k']:>3}{r['n']:>9}{r['run_s']:>9.2f}{r['protocol_s']:>12.3f}"
            f"{r['elements_per_s']:>12.0f}{r['elements_per_s_per_core']:>10.0f}"
            f"{r['x25519_per_s']:>11.0f}"
            f"{_size(r['max_bytes_sent']):>12}{r['rounds']:>8}"
        )
    return lines


def _ints(text: str, flag: str, p: argparse.ArgumentParser) -> list[int]:
    try:
        values = [int(float(v)) for v in text.split(",")]
    except ValueError:
        p.error(f"{flag} takes comma-separated integers, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--sizes",
        default=None,
        metavar="N1,N2,...",
        help=f"elements per party (default: {SIZES}; 1e5 is accepted)",
    )
    p.add_argument("--quick", action="store_true", help=f"--sizes {QUICK_SIZES}, one run each")
    p.add_argument(
        "--parties",
        default=PARTIES,
        metavar="K1,K2,...",
        help=f"numbers of parties, each k >= 2 (default: {PARTIES})",
    )
    p.add_argument(
        "--overlap",
        type=float,
        default=0.5,
        metavar="F",
        help="fraction of every set common to all parties (default 0.5)",
    )
    p.add_argument("--repeats", type=int, default=1, help="runs per point, median (default 1)")
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="the parties' receive deadline in seconds (default 600)",
    )
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the rows here")
    args = p.parse_args(argv)
    if args.quick and args.sizes is not None:
        p.error("--quick sets the sizes; give --sizes or --quick, not both")
    sizes = _ints(args.sizes or (QUICK_SIZES if args.quick else SIZES), "--sizes", p)
    ks = _ints(args.parties, "--parties", p)
    if any(n < 1 for n in sizes) or any(k < 2 for k in ks):
        p.error("every size must be >= 1 and every number of parties >= 2")
    if args.repeats < 1:
        p.error(f"--repeats must be at least 1, got {args.repeats}")
    repeats = 1 if args.quick else args.repeats
    cores = os.cpu_count() or 1
    machine = f"{cpu_model()}, {cores} logical cores"
    print(f"machine: {machine}")
    print(
        "PSI-CA, parties as processes over CurveZMQ; elements/s = k*n input elements "
        "(hashed once, encrypted k times) per protocol second; X25519/s = k*k*n operations "
        "per protocol second, all parties together",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for k in ks:
            print(f"[bench] k={k} n={n} ...", file=sys.stderr, flush=True)
            rows.append(measure(k, n, args.overlap, repeats, args.timeout))
    print()
    print("\n".join(table(rows)))
    if any(k > cores for k in ks):
        print(f"\n(k > {cores} cores: the party processes share the cores)")
    if args.json is not None:
        doc = {"machine": machine, "cpu": cpu_model(), "cores": cores, "rows": rows}
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
