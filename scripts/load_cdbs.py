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

Each run's deployment, with the data owner's AES key in every client's private input file
(mode 0600), lives in a temporary folder (mode 0700) that ``mpc run`` removes when it ends.
Ctrl-C reaches ``mpc run`` too: this script waits for it to kill its parties and remove that
folder, then exits 130.
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
        try:
            code, out, err = _run(cmd, timeout=1800)
        except KeyboardInterrupt:
            print("load_cdbs: interrupted", file=sys.stderr)
            return 130
        try:
            doc = json.loads(out)
        except json.JSONDecodeError:
            print(f"run with {n} clients failed (exit {code}):\n{err}")
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


def _run(cmd: list[str], *, timeout: float) -> tuple[int, str, str]:
    """Run ``mpc run`` and return (exit code, stdout, stderr). On Ctrl-C (which reaches the
    child as well) or at the deadline the child gets time to stop its parties and remove its
    deployment; it is never killed outright, which would leave both behind."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True, cwd=ROOT,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()  # SIGTERM: mpc run kills its parties and cleans up
            out, err = proc.communicate(timeout=60)
        except KeyboardInterrupt:
            proc.communicate(timeout=60)
            raise
    return proc.returncode, out, err


if __name__ == "__main__":
    raise SystemExit(main())
