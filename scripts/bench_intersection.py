#!/usr/bin/env python3
"""The record alignment of ``--records common`` on its own: the private set intersection of
the sites' record ids (:mod:`protocols.primitives.set_intersection`), then the last site's
keyed hashes of the common records to the others and the common private order
(:func:`protocols.primitives.record_alignment.align_records`), every site its own process over
CurveZMQ on this machine.

Each site holds ``n`` ids, a share ``--overlap`` of them (default one half) held by every
site, the rest its own; the ids are drawn from a public seed (benchmark data, so that the
script can check the result: each site's records used must be the common ones). What a point
reports, the slowest site's figures: the whole alignment, the intersection phase (the batched
OPRFs and OTs of :mod:`protocols.primitives.set_intersection`), bytes sent, X25519 operations
(the base OTs) and peak memory, and the run's wall time from the first party's start.

    python scripts/bench_intersection.py --sizes 1000 --repeat 1        # a smoke run
    python scripts/bench_intersection.py                                # 10^5 and 10^6 ids
    python scripts/bench.py --intersection                              # the same, from bench.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its neighbours, when imported

from bench_runs import machine  # noqa: E402

from mpc import Party  # noqa: E402
from parties.api import party_main, run_program  # noqa: E402
from protocols.primitives.record_alignment import align_records  # noqa: E402

SIZES = (100_000, 1_000_000)
SITES = 3


def ids_of(site: int, n: int, overlap: float, seed: int) -> list[str]:
    """Site ``site``'s ``n`` ids: the first ``overlap * n`` common to every site (``c...``),
    the rest its own (``sITE-...``), in a shuffled order."""
    common = round(overlap * n)
    ids = [f"c{i}" for i in range(common)] + [f"s{site}-{i}" for i in range(n - common)]
    order = np.random.default_rng([seed, site]).permutation(n)
    return [ids[i] for i in order]


async def program(party: Party, inputs: dict[str, Any]) -> dict[str, Any]:
    """One site: align its ids on the records every site holds; report the phases."""
    ids = ids_of(int(inputs["site"]), int(inputs["n"]), float(inputs["overlap"]),
                 int(inputs["seed"]))  # fmt: skip
    started = time.perf_counter()
    alignment = await align_records(party, ids, common=True)
    took = time.perf_counter() - started
    used = [ids[i] for i in alignment.order]
    return {
        "held": len(ids),
        "used": len(used),
        "all_common": all(i.startswith("c") for i in used),
        "align_s": round(took, 3),
    }


def run_point(n: int, overlap: float, seed: int, timeout: float) -> dict[str, Any]:
    inputs = {f"site{s + 1}": {"site": s, "n": n, "overlap": overlap, "seed": seed}
              for s in range(SITES)}  # fmt: skip
    started = time.perf_counter()
    run = run_program([sys.executable, str(Path(__file__).resolve()), "party"], inputs,
                      name="bench-intersection", timeout=timeout)  # fmt: skip
    wall = time.perf_counter() - started
    if not run.ok:
        raise SystemExit(f"the alignment of {n} ids per site failed: {run.error}")
    results = dict(run.result or {})
    expected = round(overlap * n)
    wrong = [s for s, r in results.items() if r["used"] != expected or not r["all_common"]]
    if wrong:
        raise SystemExit(f"sites {wrong} did not end with the {expected} common records")
    metrics = {s: p.metrics for s, p in run.parties.items()}
    phases = {s: m.get("phases_s", {}) for s, m in metrics.items()}
    return {
        "ids_per_site": n,
        "common": expected,
        "align_s": max(r["align_s"] for r in results.values()),
        "intersection_s": max(p.get("record-alignment/intersection", 0.0) for p in phases.values()),
        "run_s": round(wall, 2),
        "sent_mb": round(max(m["bytes_sent"] for m in metrics.values()) / 1e6, 1),
        "x25519": sum(int(m.get("crypto", {}).get("x25519", 0)) for m in metrics.values()),
        "peak_rss_mb": max(float(m.get("peak_rss_mb") or 0) for m in metrics.values()),
    }


def compare(sizes: list[int], repeat: int, overlap: float, timeout: float) -> list[dict[str, Any]]:
    points = []
    for n in sizes:
        runs = []
        for r in range(repeat):
            print(f"[intersection] {n:,} ids per site, run {r + 1} of {repeat} ...",
                  file=sys.stderr, flush=True)  # fmt: skip
            runs.append(run_point(n, overlap, seed=r, timeout=timeout))
            print(f"[intersection]    {runs[-1]['align_s']} s", file=sys.stderr, flush=True)
        align = [x["align_s"] for x in runs]
        points.append({**runs[len(runs) // 2], "runs": repeat,
                       "align_median_s": statistics.median(align),
                       "align_min_s": min(align), "align_max_s": max(align)})  # fmt: skip
    return points


def markdown(points: list[dict[str, Any]], machine: str, overlap: float) -> str:
    lines = [
        f"Record alignment on the intersection, {SITES} sites, {overlap:.0%} of each site's ids "
        f"common; {machine}",
        "",
        "| ids per site | common | runs | alignment s (median, min-max) | intersection phase s "
        "| X25519 ops | most sent per site | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {p['ids_per_site']:,} | {p['common']:,} | {p['runs']} | {p['align_median_s']:.1f} "
            f"({p['align_min_s']:.1f}-{p['align_max_s']:.1f}) | {p['intersection_s']:.1f} | "
            f"{p['x25519']:,} | {p['sent_mb']} MB | {p['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["party"]:
        return party_main(program, argv[1:], prog="bench-intersection")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="ids per site, comma-separated (default 100000,1000000)")  # fmt: skip
    p.add_argument("--repeat", type=int, default=1, help="runs per size (default 1)")
    p.add_argument("--overlap", type=float, default=0.5, help="the common share (0.5)")
    p.add_argument("--timeout", type=float, default=1800.0, help="deadline of every receive")
    p.add_argument("--out", type=Path, default=None,
                   help="write intersection.json and intersection.md to this folder")  # fmt: skip
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    points = compare(sizes, args.repeat, args.overlap, args.timeout)
    text = markdown(points, machine(), args.overlap)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "intersection.json").write_text(
            json.dumps({"machine": machine(), "overlap": args.overlap, "points": points}, indent=1)
        )
        (args.out / "intersection.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
