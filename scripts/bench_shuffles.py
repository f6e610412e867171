#!/usr/bin/env python3
"""Numbers of many values, one-hot columns against owner-known shuffles: PPID3 with
``--splits threshold --reveal tree --helper sites`` (3 sites) on a table of uniform random
numbers, each count way forced (``--shuffle-from 1000000000``: one-hot columns for every
number; ``--shuffle-from 0``: shuffles for every number), at the cut points of ``--bins``
bins and at every distinct value (``exact``; one-hot columns are refused there past their
limit, and the row says so).

The table: ``--rows`` rows of ``--attrs`` numbers drawn uniformly in [0, 1) (six decimals)
from the generator seeded by ``--seed`` (public test data, no party's secret), the class
``(a0 > 0.5) xor (a1 > 0.3)`` with 5 % of the labels flipped; the defaults make the table of
the PPID3 page's figures. Each run is one ``mpc run ... --json``; the table gives its wall
time (from the parties' start to the end of the run), the bytes each site sent, the largest
peak RSS of a party, and whether the tree equals plain ID3's.

    python scripts/bench_shuffles.py                              # 8,192 rows, scratch folder
    python scripts/bench_shuffles.py --out results/bench/shuffles # where the results live
    python scripts/bench_shuffles.py --bins 32 --no-exact         # a smoke run

It writes ``shuffles.json`` and ``shuffles.md`` into ``--out`` (default: a scratch folder, so
that a smoke run never replaces committed results).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: ``--shuffle-from`` of each way of counting
WAYS = {"one-hot columns": "1000000000", "shuffles": "0"}


def uniform_table(path: Path, rows: int, attrs: int, seed: int) -> Path:
    """The benchmark's table (the module docstring), as a CSV at ``path``."""
    rng = np.random.default_rng(seed)
    x = rng.random((rows, attrs))
    y = ((x[:, 0] > 0.5) ^ (x[:, 1] > 0.3)).astype(int) ^ (rng.random(rows) < 0.05)
    with path.open("w") as f:
        f.write(",".join(f"a{i}" for i in range(attrs)) + ",y\n")
        for r, c in zip(x, y, strict=True):
            f.write(",".join(f"{v:.6f}" for v in r) + f",{int(c)}\n")
    return path


def run(table: Path, bins: int | None, way: str, depth: int, timeout: float) -> dict[str, Any]:
    """One run of ``mpc run ppid3`` counting every number ``way``; its figures."""
    cmd = [sys.executable, "-m", "mpc", "run", "ppid3", "--csv", str(table), "--class", "y",
           "--sites", "3", "--helper", "sites", "--reveal", "tree", "--splits", "threshold",
           "--max-depth", str(depth), "--shuffle-from", WAYS[way], "--all-rows", "--json",
           "--timeout", str(int(timeout))]  # fmt: skip
    if bins is not None:
        cmd += ["--bins", str(bins)]
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    took = time.time() - start
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"ok": False, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1],
                "command_s": took}  # fmt: skip
    parties = doc.get("parties", {})
    out: dict[str, Any] = {"ok": bool(doc.get("ok")), "command_s": took,
                           "wall_s": doc.get("wall_s")}  # fmt: skip
    if not out["ok"]:
        errors = [p.get("error") for p in parties.values() if p.get("error")]
        out["error"] = (errors or ["failed"])[0]
        return out
    out["identical"] = doc["result"].get("identical")
    out["sent_mb"] = {n: p["metrics"]["bytes_sent"] / 1e6 for n, p in parties.items()}
    out["peak_mb"] = max(p["metrics"].get("peak_rss_mb") or 0 for p in parties.values())
    return out


def cell(r: dict[str, Any]) -> str:
    if not r["ok"]:
        return f"failed: {r['error'][:120]}"
    sent = sorted(r["sent_mb"].values())
    same = "" if r["identical"] else ", NOT identical"
    peak = r["peak_mb"] / 1000
    return f"{r['wall_s']:.2f} s, {sent[0]:.1f}-{sent[-1]:.1f} MB, {peak:.2f} GB{same}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--rows", type=int, default=8192, help="rows of the table (default 8192)")
    ap.add_argument("--attrs", type=int, default=11, help="numbers per row (default 11)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the public table (default 1)")
    ap.add_argument("--depth", type=int, default=4, help="--max-depth (default 4)")
    ap.add_argument("--bins", default="32,64,128,512,2048",
                    help="bins whose cut points are the candidates, comma-separated")  # fmt: skip
    ap.add_argument("--no-exact", action="store_true", help="leave out every distinct value")
    ap.add_argument("--timeout", type=float, default=1200, help="each run's receive deadline")
    ap.add_argument("--out", type=Path, help="where to write (default: a scratch folder)")
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-shuffles-"))
    out.mkdir(parents=True, exist_ok=True)
    table = uniform_table(out / "uniform.csv", args.rows, args.attrs, args.seed)
    cases: list[int | None] = [int(b) for b in args.bins.split(",") if b]
    if not args.no_exact:
        cases.append(None)
    rows = []
    for bins in cases:
        row: dict[str, Any] = {"bins": bins}
        for way in WAYS:
            row[way] = run(table, bins, way, args.depth, args.timeout)
            print(f"[shuffles] {'every value' if bins is None else f'{bins} bins'}, {way}: "
                  f"{cell(row[way])}", file=sys.stderr, flush=True)  # fmt: skip
        rows.append(row)
    machine = platform.processor() or platform.machine()
    head = (f"{args.rows:,} rows x {args.attrs} uniform numbers (seed {args.seed}), depth "
            f"{args.depth}, 3 sites, --reveal tree --helper sites; {machine}, "
            f"{time.strftime('%Y-%m-%d')}, one run each: the parties' wall time, MB sent per "
            "site, largest peak RSS of a party")  # fmt: skip
    lines = [head, "", "| candidates per number | one-hot columns | shuffles |", "|---|---|---|"]
    for row in rows:
        name = (
            "every distinct value" if row["bins"] is None else f"cut points of {row['bins']} bins"
        )
        lines.append(f"| {name} | {cell(row['one-hot columns'])} | {cell(row['shuffles'])} |")
    (out / "shuffles.md").write_text("\n".join(lines) + "\n")
    record = {"args": vars(args) | {"out": str(out)}, "rows": rows}
    (out / "shuffles.json").write_text(json.dumps(record, indent=1, default=str))
    print("\n".join(lines))
    print(f"[shuffles] wrote {out}/shuffles.md and shuffles.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
