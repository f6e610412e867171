#!/usr/bin/env python3
"""Load on one CDBS: N concurrent client processes x M cdtl predictions each.

Every point is one ``mpc run cdbs-load --clients N --predictions M --json`` over CurveZMQ: the
first client outsources the table (house-votes-84 by default, anatomized with l = 2), then all
clients of that data owner send their predictions at once. Printed per point: throughput
(predictions per second over the slowest client's run), latency percentiles, subtrees stored
against subtrees learned (a leaf two clients refine at once is stored once) and whether every
query got the same answer from every client. A lost or duplicated subtree fails the run.

    python scripts/load_cdbs.py                       # N = 1, 2, 4, 8 with M = 200
    python scripts/load_cdbs.py --clients 4 --predictions 1000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", default="1,2,4,8", help="comma-separated client counts")
    p.add_argument("--predictions", type=int, default=200, help="predictions per client")
    p.add_argument("--dataset", default="house-votes-84")
    p.add_argument("--sensitive", default="physician-fee-freeze")
    p.add_argument("--timeout", type=float, default=120.0, help="deadline of every receive")
    args = p.parse_args(argv)
    print(f"{'clients':>7} {'predictions':>11} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'stored':>7} {'learned':>8} {'dup':>4} {'consistent':>10}")  # fmt: skip
    failed = False
    for n in (int(x) for x in args.clients.split(",")):
        cmd = [
            sys.executable, "-m", "mpc", "run", "cdbs-load", "--clients", str(n),
            "--predictions", str(args.predictions), "--dataset", args.dataset,
            "--sensitive", args.sensitive, "--timeout", str(args.timeout), "--json",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
        try:
            doc = json.loads(proc.stdout)
        except json.JSONDecodeError:
            print(f"run with {n} clients failed (exit {proc.returncode}):\n{proc.stderr}")
            return 1
        r = doc.get("result") or {}
        if not doc.get("ok") or r.get("duplicated_subtrees") or not r.get("consistent_predictions"):
            failed = True
        lat = r.get("latency_ms", {})
        print(f"{n:>7} {r.get('predictions', 0):>11} {r.get('throughput_per_s', 0):>8.1f} "
              f"{lat.get('p50', 0):>8.2f} {lat.get('p99', 0):>8.2f} "
              f"{r.get('subtrees_stored')!s:>7} "
              f"{r.get('subtrees_learned_by_clients')!s:>8} {r.get('duplicated_subtrees')!s:>4} "
              f"{r.get('consistent_predictions')!s:>10}", flush=True)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
