#!/usr/bin/env python3
"""PPID3 revealing only the tree side by side with MPyC's ``np_id3gini`` demo: the same tables,
the same stopping rule, the same trust and the same leakage (three parties, an honest
majority, only the tree opened), the same trees, and the time of each.

MPyC's demo and its tables are in ``../shared/peers/mpyc`` (``--peers``); it runs in a Python
of its own that has ``mpyc`` (``--mpyc-python``, e.g. a venv made with ``pip install mpyc numpy
gmpy2``). For each case both run ``--runs`` times, one after the other, a second apart:

* MPyC: ``python np_id3gini.py -M3 -i I -e E --no-pretty-tree`` (three local processes);
* ours: ``mpc run ppid3 --csv <the same file> --sites 3 --reveal tree --helper sites
  --min-samples-split floor(E n) + 1`` (MPyC stops at ``size <= int(E n)``; ``E = 0``: no
  rule, the full tree), three site processes over TCP with CurveZMQ; and the same with two
  sites and ``--helper ot``, which MPyC cannot run (no honest majority).

Times are each command's whole wall time (interpreter start, key generation, process start,
handshake, record alignment, training, shutdown), each printing its tree as a user runs it;
ours also gives the protocol's own wall time (``protocol s``, from the start of the parties
to the end of the run). The trees and bytes come from one more, untimed run of ours with
``--json``. Both sides run
from compiled bytecode: pip compiled MPyC's when it installed it, and this script compiles
ours first (``python -m compileall``), as an installed package has it (an editable install
has none until a run writes it, and never with ``PYTHONDONTWRITEBYTECODE`` set). The trees are
compared node by node: MPyC's raw tree (attribute index, subtrees in sorted value order,
leaves as sorted class indices) against ours in the same form.

    python scripts/compare_mpyc.py --mpyc-python /path/to/venv/bin/python    # 5 runs, results/mpyc
    python scripts/compare_mpyc.py --mpyc-python ... --quick                 # car, 1 run, scratch

It writes ``mpyc.json`` and ``mpyc.md`` (the table of docs/ppid3.md) into ``--out`` (default
``results/mpyc``; ``--quick`` writes to a scratch folder unless ``--out`` says where, so that
a smoke run never replaces the committed results).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT.parent / "shared" / "peers" / "mpyc"

#: (name on the page, MPyC's file, MPyC's -i, E)
CASES = [
    ("car", "car", 2, 0.05),
    ("kr-vs-kp", "KRKPA7", 4, 0.05),
    ("tic-tac-toe", "tic-tac-toe", 5, 0.05),
    ("house-votes-84", "house-votes-84", 6, 0.05),
    ("car (full tree)", "car", 2, 0.0),
]
QUICK = CASES[:1]


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def class_index(header: list[str]) -> int:
    """MPyC's rule: the first column if its name starts with 'class', else the last."""
    return 0 if header[0].lower().startswith("class") else len(header) - 1


def as_raw(
    tree: dict[str, Any], header: list[str], rows: list[list[str]], c: int,
    counts: dict[str, Any] | None = None,
) -> Any:  # fmt: skip
    """Our JSON tree in MPyC's raw form: ``(attribute index, [subtrees in sorted value
    order])``, a leaf as the index of its class among the sorted classes; with ``counts``
    (the plain tree, the same one with its counts) a leaf that no training row reaches is
    ``None``: ID3 labels it with its parent's majority, MPyC's demo with class 0."""
    classes = sorted({r[c] for r in rows})
    if "children" not in tree:
        if counts is not None and not any(float(x) for x in counts["counts"].values()):
            return None
        return classes.index(tree["class"])
    a = header.index(tree["attribute"])
    values = sorted({r[a] for r in rows})
    below = [None if counts is None else counts["children"][v] for v in values]
    return (a, [as_raw(tree["children"][v], header, rows, c, below[i])
                for i, v in enumerate(values)])  # fmt: skip


def same(ours: Any, theirs: Any) -> bool:
    """Whether two raw trees are the same, a ``None`` leaf of ours matching any leaf."""
    if ours is None:
        return isinstance(theirs, int)
    if isinstance(ours, int) or isinstance(theirs, int):
        return ours == theirs
    return ours[0] == theirs[0] and len(ours[1]) == len(theirs[1]) and all(
        same(a, b) for a, b in zip(ours[1], theirs[1], strict=True))  # fmt: skip


#: seconds between two timed commands, so that the processes one leaves behind while they
#: exit do not share the cores with the next
SETTLE_S = 1.0


def timed(cmd: list[str], cwd: Path, deadline: float) -> tuple[float, str]:
    time.sleep(SETTLE_S)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=deadline,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def run_mpyc(python: str, peers: Path, index: int, eps: float) -> tuple[float, Any]:
    seconds, out = timed([python, "np_id3gini.py", "-M3", "-i", str(index), "-e", str(eps),
                          "--no-pretty-tree"], peers, 900)  # fmt: skip
    m = re.search(r"Decision tree of depth \d+ and size \d+: (.*)$", out, re.S)
    if m is None:
        raise SystemExit(f"MPyC printed no tree:\n{out[-2000:]}")
    return seconds, ast.literal_eval(m.group(1).strip())


def run_ours(
    path: Path, header: list[str], rows: list[list[str]], eps: float, *, sites: int = 3,
    helper: str = "sites", check: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """One timed run of ours as a user runs it (the summary, with the tree, on standard
    output); with ``check`` an untimed ``--json`` run instead, for the tree and the bytes."""
    c = class_index(header)
    cmd = [sys.executable, "-m", "mpc", "run", "ppid3", "--csv", str(path), "--class", header[c],
           "--sites", str(sites), "--reveal", "tree", "--helper", helper]  # fmt: skip
    if eps > 0:
        cmd += ["--min-samples-split", str(int(eps * len(rows)) + 1)]
    seconds, out = timed(cmd + (["--json"] if check else []), ROOT, 900)
    if not check:
        wall = re.search(r"^wall: +([0-9.]+) s$", out, re.M)
        if wall is None or not re.search(r"^identical: True", out, re.M):
            raise SystemExit(f"ours printed no wall time or a tree that differs:\n{out[:2000]}")
        return {"seconds": seconds, "protocol_s": float(wall.group(1))}
    doc = json.loads(out)
    result = doc["result"]
    sent = {n: p["metrics"].get("bytes_sent") for n, p in doc["parties"].items()}
    return {"identical": result["identical"], "nodes": result["nodes"],
            "raw": as_raw(result["tree"], header, rows, c),
            "splits": as_raw(result["tree"], header, rows, c, result["plain_tree"]),
            "sent": sent}  # fmt: skip


def size(raw: Any) -> int:
    return 1 if isinstance(raw, int) else 1 + sum(size(t) for t in raw[1])


def spread(xs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(xs), 3), "min": round(min(xs), 3),
            "max": round(max(xs), 3)}  # fmt: skip


def compile_bytecode() -> None:
    """Compile our packages' bytecode (see the module docstring)."""
    packages = [str(ROOT / name) for name in ("mpc", "protocols", "parties")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def machine() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        names = [line.split(":", 1)[1].strip()
                 for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")]  # fmt: skip
        cpu = names[0] if names else ""
    return {"cpu": cpu or platform.processor(), "cores": os.cpu_count(),
            "python": platform.python_version(), "load_before": list(os.getloadavg())}  # fmt: skip


def compare(cases: list[tuple[str, str, int, float]], runs: int, python: str,
            peers: Path) -> dict[str, Any]:  # fmt: skip
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": machine(),
                              "runs": runs, "cases": []}  # fmt: skip
    for name, file, index, eps in cases:
        path = peers / "data" / "id3" / f"{file}.csv"
        header, rows = read_csv(path)
        mpyc_s, ours_s, protocol_s, two_s = [], [], [], []
        mpyc_tree = None
        for r in range(runs):
            print(f"[compare] {name}: run {r + 1}/{runs}", file=sys.stderr, flush=True)
            seconds, mpyc_tree = run_mpyc(python, peers, index, eps)
            mpyc_s.append(seconds)
            timing = run_ours(path, header, rows, eps)
            ours_s.append(timing["seconds"])
            protocol_s.append(timing["protocol_s"])
            two_s.append(run_ours(path, header, rows, eps, sites=2, helper="ot")["seconds"])
        ours = run_ours(path, header, rows, eps, check=True)
        two = run_ours(path, header, rows, eps, sites=2, helper="ot", check=True)
        report["cases"].append({
            "case": name, "file": f"{file}.csv", "rows": len(rows), "epsilon": eps,
            "min_samples_split": int(eps * len(rows)) + 1 if eps > 0 else None,
            "nodes": {"ours": ours["nodes"], "mpyc": size(mpyc_tree)},
            "same_tree": ours["raw"] == mpyc_tree,
            "same_splits": same(ours["splits"], mpyc_tree),
            "identical_to_plain": ours["identical"],
            "mpyc_s": spread(mpyc_s), "ours_s": spread(ours_s), "protocol_s": spread(protocol_s),
            "speedup": round(statistics.median(mpyc_s) / statistics.median(ours_s), 2),
            "two_sites_ot_s": spread(two_s),
            "two_sites_same_tree": two["raw"] == ours["raw"],
            "bytes_sent": ours["sent"],
        })  # fmt: skip
    return report


def _same(case: dict[str, Any]) -> str:
    if case["same_tree"]:
        return "yes"
    if case["same_splits"]:
        return "yes, but the labels of leaves no row reaches (parent's majority, MPyC: class 0)"
    return "NO"


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"Measured {report['date']} on {m['cores']} cores ({m['cpu']}), Python {m['python']}, "
        f"load {m['load_before'][0]:.2f} before the runs; median of {report['runs']} runs "
        "(min-max), each command's whole wall time, both from compiled bytecode.",
        "",
        "| table | rows | rule | nodes (ours / MPyC) | same tree | MPyC s | ours s | ours: "
        "protocol s | speed-up | ours, 2 sites, `ot` s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in report["cases"]:
        rule = f"min_samples_split {c['min_samples_split']}" if c["epsilon"] else "full tree"

        def s(k: str, c: dict[str, Any] = c) -> str:
            return f"{c[k]['median']:.2f} ({c[k]['min']:.2f}-{c[k]['max']:.2f})"

        lines.append(
            f"| {c['case']} | {c['rows']:,} | {rule} | {c['nodes']['ours']} / "
            f"{c['nodes']['mpyc']} | {_same(c)} | {s('mpyc_s')} | "
            f"{s('ours_s')} | {s('protocol_s')} | {c['speedup']:.1f}x | {s('two_sites_ot_s')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--mpyc-python", required=True, metavar="PYTHON",
        help="a Python that can import mpyc (MPyC runs in its own environment)",
    )  # fmt: skip
    p.add_argument("--peers", type=Path, default=PEERS, help="MPyC's demo folder")
    p.add_argument("--runs", type=int, default=5, help="runs of each side per case (5)")
    p.add_argument("--quick", action="store_true", help="car only, one run, a scratch folder")
    p.add_argument("--out", type=Path, default=None, help="where the results go")
    args = p.parse_args(argv)
    if not (args.peers / "np_id3gini.py").is_file():
        p.error(f"no np_id3gini.py in {args.peers} (--peers)")
    cases, runs = (QUICK, 1) if args.quick else (CASES, args.runs)
    out = args.out or (Path(tempfile.mkdtemp(prefix="mpyc-")) if args.quick
                       else ROOT / "results" / "mpyc")  # fmt: skip
    compile_bytecode()
    report = compare(cases, runs, args.mpyc_python, args.peers)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mpyc.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "mpyc.md").write_text(markdown(report))
    print(markdown(report))
    print(f"written to {out}", file=sys.stderr)
    same = all(c["same_splits"] and c["two_sites_same_tree"] for c in report["cases"])
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
