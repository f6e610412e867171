#!/usr/bin/env python3
"""PPID3 benchmarks: one ``mpc run ppid3 ... --json`` per configuration, every site (and the
dealer of ``--counts fast --helper dealer``) its own process over CurveZMQ on this machine.

Prints and writes (``--out``: ``bench.json`` and ``bench.md``) a table with the dataset, rows,
attributes, sites, count backend, tree nodes, wall seconds, bytes sent, rounds and peak
memory per party, whether the tree equals plain ID3, and the ratio of the wall time to plain
ID3 fitted on the same data in the same run.

    python scripts/bench.py            # the issue's targets (several minutes)
    python scripts/bench.py --quick    # a smoke run (seconds)
    python scripts/bench.py --helpers --repeat 5   # --helper sites, dealer and ot
    python scripts/bench.py --helpers --datasets car --repeat 1            # its smoke run
    python scripts/bench.py --scaling  # rows 10^3..10^6 and sites 2..8 (an hour or more)
    python scripts/bench.py --helpers --scaling --repeat 3   # everything, in one run
    python scripts/bench.py --reveal   # --reveal tree beside the paper's mode (half an hour)
    python scripts/bench.py --intersection   # --records common's alignment, 10^5 and 10^6 ids
    python scripts/bench.py --intersection --intersection-sizes 1000 --repeat 1   # smoke
    python scripts/bench.py --reveal --datasets car --repeat 1             # its smoke run
    python scripts/bench.py --reveal --datasets ten-million --repeat 1 --out DIR  # 10^7 rows
    python scripts/bench.py --reveal --against ../old --against-python ../old-venv/bin/python
                                       # this checkout against another, in turn
    python scripts/bench.py --scaling --rows 1000,2000 --scaling-sites 2,3 --sites-rows 1000 \\
        --repeat 1                     # its smoke run (about a minute)

``--helpers`` runs car, nursery, kr-vs-kp (``--min-samples-split 0.05``) and adult
(``--max-depth 6 --all-rows``; ``--datasets`` picks some of them) with 3 sites and each of
``--helper sites``, ``dealer`` and ``ot``, and with 2 sites and ``dealer`` and ``ot``, each
``--repeat`` times (default 5), alternating, and writes ``helpers.json`` and ``helpers.md``:
the median wall time and its spread (minimum-maximum) per configuration, its ratio to the
dealer's, and whether the targets hold (sites within 1.3x of dealer, ot within 3x of dealer,
adult with ot under 180 s).

``--scaling`` runs ``--counts fast`` on a generated table (``--synthetic ROWS,20,1``,
``--max-depth 4``): 3 sites and ``--rows`` rows, then ``--scaling-sites`` sites and
``--sites-rows`` rows, each with every helper of ``--scaling-helpers`` that the number of
sites allows (``sites`` needs 3 or more), ``ot`` only up to ``--ot-max-rows`` rows. Each
configuration runs ``--repeat`` times (default 1 for ``--scaling``; the tables give the
median and the minimum-maximum when more). A run that fails, or that outlives ``--timeout``
seconds, is recorded as failed, with the end of its error. It writes ``scaling.json``,
``scaling.md`` (both sweeps, and the slope of log wall time on log rows per helper) and the
plots ``scaling_rows.png`` and ``scaling_sites.png`` (matplotlib: ``pip install -e
'.[experiments]'``).

``--reveal`` runs PPID3 revealing only the tree (``--reveal tree``) beside the paper's mode
(``--reveal counts``) on car, kr-vs-kp, adult and a million generated rows, and adult with 2
sites and ``--helper ot``, against that mode's targets (scripts/bench_reveal.py), ``--repeat``
times (default 3); ``--datasets`` picks some of car, kr-vs-kp, adult, adult-ot and million,
or names ten-million (10^7 generated rows, ``--reveal tree`` only, about half an hour a run),
which runs only when named, or tic-tac-toe, house-votes-84 and the two-site runs car-ot,
kr-vs-kp-ot, tic-tac-toe-ot, house-votes-84-ot (``--reveal tree``, also only when named):
two sites with ``ot`` against three with ``sites`` on each table whose both runs it names.
It writes ``reveal.json`` and ``reveal.md``. With ``--against DIR`` it runs each of them with
this checkout and with the one in DIR (``--against-python``: its interpreter) in turn and
writes ``reveal-against.json`` and ``reveal-against.md``: the two side by side, their ratio
and whether this one is within 1.10x of the other with ``--reveal tree``.

A smoke run writes to a scratch folder in the temporary directory, never over results/bench
(unless ``--out`` says where): ``--quick``, and ``--helpers``, ``--reveal`` or ``--scaling``
given ``--repeat`` below 3 or a part of their sweep (``--datasets``, ``--rows``,
``--sites-rows``, ``--scaling-sites`` or ``--scaling-helpers`` other than the default).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

# this script's modules lie beside it (its folder is on sys.path when it runs, not when a
# test loads it as a module)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_intersection
from bench_reveal import DEFAULT_NAMES as REVEAL_DEFAULT
from bench_reveal import NAMES as REVEAL_NAMES
from bench_reveal import (
    REVEAL_RUNS,
    compare_against,
    compare_reveal,
    reveal_groups,
    reveal_markdown,
    reveal_targets,
)
from bench_runs import (
    HELPERS,
    ROOT,
    SCALING_K,
    SYNTHETIC_ATTRS,
    SYNTHETIC_DEPTH,
    SYNTHETIC_SEED,
    Checkout,
    RunFailed,
    dataset_args,
    failed,
    load_average,
    machine,
    parse_synthetic,
    party_totals,
    run,
    scaling_plan,
    short_error,
    synthetic,
    tried,
    write_sweep,
)
from bench_tables import (
    fit_slope,
    helper_groups,
    helper_targets,
    helpers_markdown,
    markdown,
    plot_scaling,
    rows_slopes,
    scaling_groups,
    scaling_markdown,
    scaling_targets,
    slope_line,
)

#: what a test of this script (which loads it as a module) finds in it: its own names and
#: those of its modules
__all__ = [
    "REVEAL_RUNS",
    "SCRATCH",
    "RunFailed",
    "bench",
    "compare_helpers",
    "compare_reveal",
    "dataset_args",
    "failed",
    "fit_slope",
    "helper_groups",
    "helper_targets",
    "helpers_markdown",
    "int_list",
    "is_smoke",
    "main",
    "parse_args",
    "parse_synthetic",
    "party_totals",
    "reveal_groups",
    "reveal_markdown",
    "reveal_targets",
    "rows_slopes",
    "scaling",
    "scaling_groups",
    "scaling_markdown",
    "scaling_plan",
    "scaling_targets",
    "short_error",
    "slope_line",
    "synthetic",
    "tried",
]

#: where a smoke run writes
SCRATCH = Path(tempfile.gettempdir()) / "mpc-bench-smoke"
#: what a missing matplotlib tells the user (``--scaling`` draws plots)
MATPLOTLIB_MISSING = (
    "--scaling draws its plots with matplotlib, which is not installed: "
    "pip install -e '.[experiments]'"
)

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
#: --helpers: (dataset, options), each run with every helper of HELPER_SITES
HELPER_RUNS = [
    ("car", []),
    ("nursery", []),
    ("kr-vs-kp", ["--min-samples-split", "0.05"]),
    ("adult", ["--max-depth", "6", "--all-rows"]),
]
#: --helpers: number of sites -> the helpers compared with it (sites needs 3 or more)
HELPER_SITES = {3: ("sites", "dealer", "ot"), 2: ("dealer", "ot")}

#: --scaling defaults: the rows sweep and the sites sweep
ROWS = (1_000, 10_000, 100_000, 1_000_000)
SCALING_SITES = (2, 3, 4, 5, 6, 7, 8)
#: --intersection: ids per site
INTERSECTION_SIZES = (100_000, 1_000_000)
SITES_ROWS = 100_000
OT_MAX_ROWS = 100_000


def int_list(text: str) -> list[int]:
    """``1000,1e4,100_000`` or a range ``2-8`` (both ends in) as a list of integers."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part[1:]:
            lo, hi = (int(x) for x in part.split("-", 1))
            out += range(lo, hi + 1)
        else:
            out.append(int(float(part)) if "e" in part.lower() else int(part))
    if not out or any(x < 1 for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers")
    return out


def name_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


# --- --helpers -----------------------------------------------------------------------------


def compare_helpers(
    repeat: int, timeout: float, out: Path, datasets: list[str] | None = None
) -> str:
    """Wall time of the helpers against each other: every dataset of :data:`HELPER_RUNS`
    (or those of ``datasets``) with every number of sites and helper of
    :data:`HELPER_SITES`, ``repeat`` times, the helpers alternating (so load that comes and
    goes falls on all alike); the median and the minimum-maximum of each."""
    load_start = load_average()
    runs: list[dict[str, Any]] = []
    for dataset, extra in HELPER_RUNS:
        if datasets is not None and dataset not in datasets:
            continue
        for k, helpers in HELPER_SITES.items():
            for i in range(repeat):
                for helper in helpers:
                    opts = ["--sites", str(k), *extra, "--helper", helper]
                    r = tried(dataset, "fast", opts, timeout)
                    r["helper"], r["sites"], r["bench_options"] = helper, k, extra
                    runs.append(r)
                    what = f"{dataset} --sites {k} --helper {helper} run {i + 1}/{repeat}"
                    if r["status"] != "ok":
                        print(f"[bench] {what}: failed: {short_error(r['error'])}",
                              file=sys.stderr, flush=True)  # fmt: skip
                        continue
                    if not r["identical"]:
                        raise SystemExit(f"{what}: the tree is not plain ID3's")
                    print(f"[bench] {what}: {r['wall_s']:.2f} s", file=sys.stderr, flush=True)
    what = "PPID3 --counts fast, the helpers alternating"
    return write_sweep(out, "helpers", what, runs, repeat, load_start, helpers_markdown)


# --- --scaling -----------------------------------------------------------------------------


def scaling(args: argparse.Namespace, out: Path) -> str:
    """The --scaling sweeps (:func:`scaling_plan`), each point ``args.repeat`` times with the
    helpers alternating; writes scaling.json, scaling.md and the two plots."""
    plan = scaling_plan(args.rows, args.scaling_sites, args.sites_rows, args.scaling_helpers,
                        args.ot_max_rows)  # fmt: skip
    load_start = load_average()
    runs: list[dict[str, Any]] = []
    # the helpers of one point alternate: (sweep, rows, sites) -> its points
    by_point: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for p in plan:
        by_point.setdefault((p["sweep"], p["rows"], p["sites"]), []).append(p)
    for (sweep, n, k), points in by_point.items():
        dataset = synthetic(n)
        for p in points:
            if "skipped" in p:
                runs.append({"sweep": sweep, "point_rows": n, "point_sites": k,
                             "helper": p["helper"], "dataset": dataset, "status": "skipped",
                             "skipped": p["skipped"]})  # fmt: skip
                print(f"[bench] {sweep} sweep: {n} rows, {k} sites, --helper {p['helper']}: "
                      f"{p['skipped']}", file=sys.stderr, flush=True)  # fmt: skip
        for i in range(args.repeat):
            for p in points:
                if "skipped" in p:
                    continue
                opts = ["--sites", str(k), "--max-depth", str(SYNTHETIC_DEPTH),
                        "--helper", p["helper"]]  # fmt: skip
                r = tried(dataset, "fast", opts, args.timeout, limit=args.timeout)
                r |= {"sweep": sweep, "point_rows": n, "point_sites": k, "helper": p["helper"]}
                runs.append(r)
                what = (f"{sweep} sweep: {n} rows, {k} sites, --helper {p['helper']} "
                        f"run {i + 1}/{args.repeat}")  # fmt: skip
                if r["status"] == "ok":
                    said = f"{r['wall_s']:.2f} s, {r['nodes']} nodes"
                else:
                    said = f"failed: {short_error(r['error'])}"
                print(f"[bench] {what}: {said}", file=sys.stderr, flush=True)
    load_end = load_average()
    header = (
        f"PPID3 --counts fast on a generated table (--synthetic ROWS,{SYNTHETIC_ATTRS},"
        f"{SYNTHETIC_SEED}, --max-depth {SYNTHETIC_DEPTH}), every party a process over "
        f"CurveZMQ; {args.repeat} run(s) per row, helpers alternating; ot only up to "
        f"{args.ot_max_rows} rows; on {machine()}, {date.today().isoformat()}; load average "
        f"{load_start:.1f} at the start, {load_end:.1f} at the end."
    )
    out.mkdir(parents=True, exist_ok=True)
    groups = scaling_groups(runs)
    slopes = {h: None if fit is None else {"slope": fit[0], "points": fit[1]}
              for h, fit in rows_slopes(groups).items()}  # fmt: skip
    doc = {
        "machine": machine(),
        "date": date.today().isoformat(),
        "load_average": {"start": load_start, "end": load_end},
        "repeat": args.repeat,
        "options": {
            "rows": args.rows,
            "scaling_sites": args.scaling_sites,
            "sites_rows": args.sites_rows,
            "helpers": args.scaling_helpers,
            "ot_max_rows": args.ot_max_rows,
            "timeout": args.timeout,
            "attributes": SYNTHETIC_ATTRS,
            "seed": SYNTHETIC_SEED,
            "max_depth": SYNTHETIC_DEPTH,
        },
        "slopes": slopes,
        "runs": runs,
    }
    (out / "scaling.json").write_text(json.dumps(doc, indent=1))
    md = scaling_markdown(runs, header)
    (out / "scaling.md").write_text(md)
    plot_scaling(groups, "rows", out / "scaling_rows.png",
                 f"PPID3 --counts fast, {SCALING_K} sites: cost against rows")  # fmt: skip
    plot_scaling(groups, "sites", out / "scaling_sites.png",
                 f"PPID3 --counts fast, {args.sites_rows} rows: cost against sites")  # fmt: skip
    print(f"[bench] wrote {out / 'scaling.json'}, scaling.md, scaling_rows.png and "
          f"scaling_sites.png", file=sys.stderr)  # fmt: skip
    return md


# --- the command line ----------------------------------------------------------------------


def is_smoke(args: argparse.Namespace) -> bool:
    """Whether a run is a smoke run, so writes to :data:`SCRATCH` unless ``--out`` is given:
    ``--quick``, or ``--helpers``/``--reveal``/``--scaling`` given ``--repeat`` below 3 or
    only part of their sweep."""
    if args.quick:
        return True
    if args.intersection and (
        args.intersection_sizes != list(INTERSECTION_SIZES)
        or (args.repeat_given is not None and args.repeat_given < 3)
    ):
        return True
    if not (args.helpers or args.scaling or args.reveal):
        return False
    if args.repeat_given is not None and args.repeat_given < 3:
        return True
    partial = (
        (args.helpers and args.datasets is not None
         and set(args.datasets) != {d for d, _ in HELPER_RUNS}),
        args.reveal and args.datasets is not None and set(args.datasets) != set(REVEAL_DEFAULT),
        args.scaling and args.rows != list(ROWS),
        args.scaling and args.scaling_sites != list(SCALING_SITES),
        args.scaling and args.sites_rows != SITES_ROWS,
        args.scaling and args.scaling_helpers != list(HELPERS),
    )  # fmt: skip
    return any(partial)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a smoke run of three small runs")
    p.add_argument(
        "--helpers",
        action="store_true",
        help="compare --helper sites, dealer and ot on car, nursery, kr-vs-kp and adult",
    )
    p.add_argument(
        "--reveal",
        action="store_true",
        help="--reveal tree beside the paper's mode on car, kr-vs-kp, adult (3 sites, and 2 "
        "with ot) and a million rows, against that mode's targets",
    )
    _add_against(p)
    p.add_argument(
        "--datasets",
        type=name_list,
        default=None,
        metavar="A,B",
        help="--helpers: only these datasets (default: all four); --reveal: only these of "
        f"{', '.join(REVEAL_NAMES)} (default: all but ten-million, about half an hour a run, "
        "and the two-site comparisons' own runs)",
    )
    _add_intersection(p)
    p.add_argument(
        "--scaling",
        action="store_true",
        help="cost against rows and against sites on a generated table (needs matplotlib)",
    )
    p.add_argument(
        "--rows",
        type=int_list,
        default=list(ROWS),
        metavar="N1,N2,...",
        help="--scaling: rows of the rows sweep (default 1000,10000,100000,1000000)",
    )
    p.add_argument(
        "--scaling-sites",
        type=int_list,
        default=list(SCALING_SITES),
        metavar="K1,K2,...",
        help="--scaling: sites of the sites sweep (default 2-8, i.e. 2,3,...,8)",
    )
    p.add_argument(
        "--sites-rows",
        type=int,
        default=SITES_ROWS,
        help=f"--scaling: rows of the sites sweep (default {SITES_ROWS})",
    )
    p.add_argument(
        "--scaling-helpers",
        type=name_list,
        default=list(HELPERS),
        metavar="H1,H2",
        help="--scaling: the helpers (default sites,dealer,ot)",
    )
    p.add_argument(
        "--ot-max-rows",
        type=int,
        default=OT_MAX_ROWS,
        help="--scaling: run --helper ot only up to this many rows (its bytes grow as rows x "
        f"attributes x nodes x classes; default {OT_MAX_ROWS})",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="runs per configuration (--helpers: default 5; --reveal: default 3; --scaling: "
        "default 1)",
    )
    p.add_argument(
        "--scaling-repeat",
        type=int,
        default=None,
        help="--scaling: runs per point (default 1; without --helpers or --reveal, --repeat "
        "sets it too), so that --helpers --scaling --repeat 3 makes the whole benchmark in one "
        "run",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write bench.json/bench.md, helpers.*, reveal.* or scaling.* (default: "
        f"results/bench; a smoke run writes to {SCRATCH}, so it never overwrites results)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="deadline of every receive; with --scaling, also of every whole run",
    )
    args = p.parse_args(argv)
    _check(p, args)
    if args.out is None:
        args.out = SCRATCH if is_smoke(args) else ROOT / "results" / "bench"
    return args


def _add_intersection(p: argparse.ArgumentParser) -> None:
    """``--intersection`` and its sizes."""
    p.add_argument(
        "--intersection",
        action="store_true",
        help="the record alignment of --records common alone (scripts/bench_intersection.py): "
        "3 sites, half of each site's ids common, at --intersection-sizes ids per site",
    )
    p.add_argument(
        "--intersection-sizes",
        type=int_list,
        default=list(INTERSECTION_SIZES),
        metavar="N,...",
        help="--intersection: ids per site (default 100000,1000000)",
    )


def _add_against(p: argparse.ArgumentParser) -> None:
    """``--against DIR`` and ``--against-python``: another checkout to compare with."""
    p.add_argument(
        "--against",
        type=Path,
        default=None,
        metavar="DIR",
        help="--reveal: run every configuration with this checkout and with the one in DIR in "
        "turn, and compare (reveal-against.md)",
    )
    p.add_argument(
        "--against-python",
        default=None,
        metavar="PYTHON",
        help="--against: the interpreter of DIR's checkout (default: this one, run from DIR)",
    )


def _check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse (``p.error``) what the options cannot mean together."""
    args.repeat_given = args.repeat
    if args.repeat is not None and args.repeat < 1:
        p.error("--repeat must be >= 1")
    if args.scaling_repeat is not None and args.scaling_repeat < 1:
        p.error("--scaling-repeat must be >= 1")
    if args.sites_rows < 1 or args.ot_max_rows < 0:
        p.error("--sites-rows must be >= 1 and --ot-max-rows >= 0")
    if args.against is not None:
        if not args.reveal:
            p.error("--against compares --reveal runs: give --reveal")
        if not (args.against / "mpc" / "__init__.py").is_file():
            p.error(f"--against {args.against}: not a checkout of this project (no mpc/ there)")
    if args.datasets is not None:
        if args.helpers == args.reveal:
            p.error("--datasets picks the tables of one of --helpers and --reveal")
        known = [d for d, _ in HELPER_RUNS] if args.helpers else list(REVEAL_NAMES)
        if set(args.datasets) - set(known) or not args.datasets:
            p.error(f"--datasets: choose from {', '.join(known)}")
    if set(args.scaling_helpers) - set(HELPERS) or not args.scaling_helpers:
        p.error(f"--scaling-helpers: choose from {', '.join(HELPERS)}")
    if any(k < 2 for k in args.scaling_sites):
        p.error("--scaling-sites: every number of sites must be >= 2")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.scaling and importlib.util.find_spec("matplotlib") is None:
        raise SystemExit(MATPLOTLIB_MISSING)
    try:
        if args.helpers or args.scaling or args.reveal or args.intersection:
            if args.intersection:
                print(intersection(args.intersection_sizes, args.repeat or 3, args.timeout,
                                   args.out))  # fmt: skip
            if args.helpers:
                print(compare_helpers(args.repeat or 5, args.timeout, args.out, args.datasets))
            if args.reveal and args.against is not None:
                other = Checkout(args.against.resolve(), args.against_python or sys.executable)
                print(compare_against(args.repeat or 3, args.timeout, args.out, other,
                                      args.datasets))  # fmt: skip
            elif args.reveal:
                print(compare_reveal(args.repeat or 3, args.timeout, args.out, args.datasets))
            if args.scaling:
                args.repeat = args.scaling_repeat or (
                    1 if args.helpers or args.reveal else args.repeat or 1
                )
                print(scaling(args, args.out))
            return 0
        return bench(args)
    except RunFailed as e:
        raise SystemExit(str(e)) from None


def intersection(sizes: list[int], repeat: int, timeout: float, out: Path) -> str:
    """``--intersection``: the alignment on the records every site holds, alone, at each size
    (:mod:`bench_intersection`); writes ``intersection.json`` and ``intersection.md``."""
    points = bench_intersection.compare(sizes, repeat, 0.5, timeout)
    text = bench_intersection.markdown(points, machine(), 0.5)
    out.mkdir(parents=True, exist_ok=True)
    (out / "intersection.json").write_text(
        json.dumps({"machine": machine(), "overlap": 0.5, "points": points}, indent=1)
    )
    (out / "intersection.md").write_text(text)
    return text


def bench(args: argparse.Namespace) -> int:
    configs = QUICK if args.quick else FULL
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
    (args.out / "bench.json").write_text(json.dumps({"machine": machine(), "runs": results},
                                                    indent=1))  # fmt: skip
    md = markdown(results, targets, machine())
    (args.out / "bench.md").write_text(md)
    print(md)
    print(f"[bench] wrote {args.out / 'bench.json'} and bench.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
