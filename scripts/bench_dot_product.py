#!/usr/bin/env python3
"""Benchmark secure dot products across real processes (``mpc run dot-product --json``).

For each method (Du & Zhan's commodity server ``dealer``; two-party ``paillier``) and each
vector length n it launches the parties as separate processes over CurveZMQ and reports dot
products per second (from the protocol phase, after every party has loaded its input) and the
bytes each party sent and received, with the machine's CPU model.

python scripts/bench_dot_product.py --quick        # ~20 s: Paillier only up to n = 1e4
python scripts/bench_dot_product.py                # n = 1e3, 1e4, 1e5 for both (minutes)
python scripts/bench_dot_product.py --n 1000 --batch 1,64 --methods dealer
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
SIZES = (1_000, 10_000, 100_000)
#: Paillier cost grows with n (one encryption per entry); --quick stops here.
QUICK_PAILLIER_MAX_N = 10_000


def run_once(method: str, n: int, batch: int, seed: int, timeout: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "mpc",
        "run",
        "dot-product",
        "--n",
        str(n),
        "--method",
        method,
        "--batch",
        str(batch),
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
    return dict(doc["result"])


def measure(method: str, n: int, batch: int, repeats: int, timeout: float) -> dict[str, Any]:
    runs = [run_once(method, n, batch, seed, timeout) for seed in range(repeats)]
    seconds = statistics.median(r["protocol_s"] for r in runs)
    last = runs[-1]
    return {
        "method": method,
        "n": n,
        "batch": batch,
        "dot_products": last["dot_products"],
        "protocol_s": seconds,
        "dot_products_per_s": last["dot_products"] / seconds,
        "bytes": {p: (c["bytes_sent"], c["bytes_received"]) for p, c in last["per_party"].items()},
        "crypto": {p: c.get("crypto") or {} for p, c in last["per_party"].items()},
        "runs": repeats,
    }


def _size(b: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{b} B"


def table(rows: list[dict[str, Any]]) -> list[str]:
    head = (
        f"{'method':<9}{'n':>8}{'batch':>6}{'dot/s':>12}{'protocol':>11}"
        f"{'alice sent/recv':>24}{'bob sent/recv':>24}{'dealer sent':>13}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.get("skipped"):
            lines.append(f"{r['method']:<9}{r['n']:>8}{r['batch']:>6}  skipped ({r['skipped']})")
            continue
        b = r["bytes"]

        def pair(p: str, b: dict[str, Any] = b) -> str:
            return f"{_size(b[p][0])} / {_size(b[p][1])}" if p in b else "-"

        lines.append(
            f"{r['method']:<9}{r['n']:>8}{r['batch']:>6}{r['dot_products_per_s']:>12.2f}"
            f"{r['protocol_s'] * 1e3:>9.1f}ms{pair('alice'):>24}{pair('bob'):>24}"
            f"{_size(b['dealer'][0]) if 'dealer' in b else '-':>13}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Secure dot products per second and bytes per party, across processes."
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"one run per point, Paillier only up to n = {QUICK_PAILLIER_MAX_N}",
    )
    p.add_argument(
        "--n",
        default=",".join(map(str, SIZES)),
        metavar="N1,N2,...",
        help="vector lengths (default: 1000,10000,100000)",
    )
    p.add_argument(
        "--methods",
        default="dealer,paillier",
        metavar="M1,M2",
        help="methods to measure (default: dealer,paillier)",
    )
    p.add_argument(
        "--batch",
        default="1",
        metavar="M1,M2,...",
        help="dot products per run: Alice's vectors against one of Bob's (default: 1)",
    )
    p.add_argument("--repeats", type=int, default=3, help="runs per point, median time (default 3)")
    p.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="the parties' receive deadline in seconds (default 900: Paillier at n = 1e5 "
        "keeps Bob waiting for minutes)",
    )
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    try:
        sizes = [int(float(v)) for v in args.n.split(",")]
        batches = [int(v) for v in args.batch.split(",")]
    except ValueError:
        p.error("--n and --batch take comma-separated integers")
    methods = args.methods.split(",")
    for m in methods:
        if m not in ("dealer", "paillier"):
            p.error(f"--methods: unknown method {m!r}; expected dealer or paillier")
    repeats = 1 if args.quick else args.repeats

    rows: list[dict[str, Any]] = []
    for method in methods:
        for n in sizes:
            for batch in batches:
                if args.quick and method == "paillier" and n > QUICK_PAILLIER_MAX_N:
                    rows.append({"method": method, "n": n, "batch": batch, "skipped": "--quick"})
                    continue
                print(f"[bench] {method} n={n} batch={batch} ...", file=sys.stderr, flush=True)
                reps = repeats if method == "dealer" else 1  # Paillier: one slow run
                rows.append(measure(method, n, batch, reps, args.timeout))
    cpu = f"{cpu_model()}, {os.cpu_count()} logical cores"
    if args.json:
        print(json.dumps({"cpu": cpu, "rows": rows}, indent=2))
        return 0
    print(f"CPU: {cpu}")
    print(
        "secure dot products of uniform 64-bit vectors, parties as processes over CurveZMQ; "
        "dot/s from the protocol phase (median of runs), bytes as sent / received"
    )
    print()
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
