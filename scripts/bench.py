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

A smoke run writes to a scratch folder in the temporary directory, never over results/bench
(unless ``--out`` says where): ``--quick``, and ``--helpers`` or ``--scaling`` given
``--repeat`` below 3 or a part of their sweep (``--datasets``, ``--rows``, ``--sites-rows``,
``--scaling-sites`` or ``--scaling-helpers`` other than the default).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from mpc.runtime.metrics import cpu_model

ROOT = Path(__file__).resolve().parents[1]
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
HELPERS = ("sites", "dealer", "ot")
#: the --helpers targets: median wall time over the dealer's, and adult with ot in seconds
SITES_TARGET = 1.3
OT_TARGET = 3.0
ADULT_OT_TARGET_S = 180.0

#: --scaling defaults: the generated table, the rows sweep and the sites sweep
SYNTHETIC_ATTRS = 20
SYNTHETIC_SEED = 1
SYNTHETIC_DEPTH = 4
SCALING_K = 3
ROWS = (1_000, 10_000, 100_000, 1_000_000)
SCALING_SITES = (2, 3, 4, 5, 6, 7, 8)
SITES_ROWS = 100_000
OT_MAX_ROWS = 100_000
#: the slope of log wall on log rows is fitted over the points with at least this many rows
SLOPE_MIN_ROWS = 10_000
#: the --scaling targets at a million rows (3 sites, the best helper with no outside party):
#: wall seconds, and peak MB per party
MILLION = 1_000_000
MILLION_TARGET_S = 300.0
MILLION_TARGET_MB = 4000.0
#: helpers with no outside party
DEALER_FREE = ("sites", "ot")
#: per-party metrics that run() keeps, and their max and sum over the parties
METRICS = ("bytes_sent", "rounds", "peak_rss_mb", "cpu_s")


class RunFailed(RuntimeError):
    """A run that printed no result, reported an error or outlived its deadline; ``tail``
    is the end of what it said."""

    def __init__(self, message: str, tail: str = "") -> None:
        super().__init__(f"{message}:\n{tail}" if tail else message)
        self.tail = tail or message


def machine() -> str:
    return (
        f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def load_average() -> float:
    """The 1-minute load average (0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def parse_synthetic(spec: str) -> tuple[int, int, int]:
    """``ROWS,ATTRS,SEED`` (as ``--synthetic`` takes it) as three integers."""
    parts = spec.split(",")
    try:
        rows, attrs, seed = (int(x) for x in parts)
    except ValueError:
        raise ValueError(f"synthetic spec {spec!r} is not ROWS,ATTRS,SEED") from None
    if rows < 1 or attrs < 1 or seed < 0:
        raise ValueError(f"synthetic spec {spec!r}: ROWS and ATTRS must be >= 1, SEED >= 0")
    return rows, attrs, seed


def synthetic(rows: int, attrs: int = SYNTHETIC_ATTRS, seed: int = SYNTHETIC_SEED) -> str:
    """The dataset string of a generated table, e.g. ``synthetic:100000,20,1``."""
    return f"synthetic:{rows},{attrs},{seed}"


def dataset_args(dataset: str) -> list[str]:
    """The ``mpc run ppid3`` options that read ``dataset``: a name (``--dataset NAME``) or
    ``synthetic:ROWS,ATTRS,SEED`` (``--synthetic ROWS,ATTRS,SEED``)."""
    if dataset.startswith("synthetic:"):
        rows, attrs, seed = parse_synthetic(dataset.removeprefix("synthetic:"))
        return ["--synthetic", f"{rows},{attrs},{seed}"]
    return ["--dataset", dataset]


def option(extra: Sequence[str], name: str) -> str | None:
    """The value of option ``name`` in ``extra`` (the last one given), or None."""
    value = None
    for i, x in enumerate(extra[:-1]):
        if x == name:
            value = extra[i + 1]
    return value


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


def _launch(cmd: list[str], limit: float) -> tuple[int, str, str, float]:
    """Run ``cmd``; past ``limit`` seconds stop it with SIGTERM (on which the launcher kills
    its parties, each in its own process group, and removes its folder), then SIGKILL."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)  # fmt: skip
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        raise RunFailed(f"{' '.join(cmd[3:])} timed out after {limit:.0f} s",
                        (err or "")[-2000:]) from None  # fmt: skip
    return proc.returncode, out, err, time.perf_counter() - started


def party_totals(parties: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The max and the sum over the parties of every metric of :data:`METRICS` (None where
    no party reported it)."""
    most: dict[str, Any] = {}
    total: dict[str, Any] = {}
    for key in METRICS:
        values = [p[key] for p in parties.values() if p.get(key) is not None]
        most[key] = max(values) if values else None
        total[key] = round(sum(values), 3) if values else None
    return most, total


def run(
    dataset: str, counts: str, extra: list[str], timeout: float, limit: float | None = None
) -> dict[str, Any]:
    """One ``mpc run ppid3`` on ``dataset`` (a name or ``synthetic:ROWS,ATTRS,SEED``) with
    ``--timeout timeout`` (every receive's deadline), stopped after ``limit`` seconds (default
    ``4 * timeout``); raises :class:`RunFailed` if it fails."""
    cmd = [sys.executable, "-m", "mpc", "run", "ppid3", *dataset_args(dataset),
           "--counts", counts, "--timeout", str(timeout), "--json", *extra]  # fmt: skip
    code, stdout, stderr, wall = _launch(cmd, 4 * timeout if limit is None else limit)
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        raise RunFailed(f"{' '.join(cmd[3:])} failed (exit {code})", stderr[-2000:]) from None
    if not doc.get("ok"):
        errors = {n: p.get("error") for n, p in doc.get("parties", {}).items() if p.get("error")}
        raise RunFailed(f"{' '.join(cmd[3:])} failed", str(errors)[-2000:])
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
    most, total = party_totals(parties)
    record = {
        "dataset": dataset,
        "options": extra,
        "status": "ok",
        "rows": r["rows"]["train"],
        "attributes": sum(len(s) for s in r["partition"]["sites"]),
        "sites": len(r["partition"]["site_names"]),
        "counts": counts,
        "helper": r.get("helper", option(extra, "--helper")) if counts == "fast" else None,
        "nodes": r["nodes"],
        "identical": r["identical"],
        "wall_s": doc["wall_s"],
        "launch_s": round(wall, 2),
        "plain_fit_s": r["plain_fit_s"],
        "ratio_to_plain": round(doc["wall_s"] / r["plain_fit_s"], 1) if r["plain_fit_s"] else None,
        "parties": parties,
        "max": most,
        "sum": total,
    }
    if r.get("trust"):
        record["trust"] = r["trust"]
    return record


def failed(dataset: str, counts: str, extra: list[str], error: RunFailed) -> dict[str, Any]:
    """The record of a run that failed: what was asked for, and the end of its error."""
    sites = option(extra, "--sites")
    rows = None
    if dataset.startswith("synthetic:"):
        rows = parse_synthetic(dataset.removeprefix("synthetic:"))[0]
    return {
        "dataset": dataset,
        "options": extra,
        "status": "failed",
        "rows": rows,
        "sites": int(sites) if sites else None,
        "counts": counts,
        "helper": option(extra, "--helper"),
        "error": str(error)[-2000:],
    }


def tried(
    dataset: str, counts: str, extra: list[str], timeout: float, limit: float | None = None
) -> dict[str, Any]:
    """:func:`run`, a failure recorded (:func:`failed`) rather than raised."""
    try:
        return run(dataset, counts, extra, timeout, limit)
    except RunFailed as e:
        return failed(dataset, counts, extra, e)


def short_error(error: str, width: int = 90) -> str:
    """The last non-empty line of an error, shortened to fit a table cell."""
    lines = [x.strip() for x in error.splitlines() if x.strip()]
    last = (lines[-1] if lines else "unknown error").replace("|", "/")
    return last if len(last) <= width else "..." + last[-(width - 3) :]


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs of one configuration: how many ran and failed, the median wall time and its
    spread, the median over runs of the max-over-parties metrics and of every party's CPU
    time and peak memory, and the bytes per party of the median run."""
    ok = sorted((r for r in records if r.get("status", "ok") == "ok"), key=lambda r: r["wall_s"])
    errors = [r.get("error", "") for r in records if r.get("status") == "failed"]
    out: dict[str, Any] = {"runs": len(records), "ok": len(ok), "failed": len(errors)}
    if errors:
        out["error"] = errors[-1]
    if not ok:
        return out
    walls = [r["wall_s"] for r in ok]
    middle = ok[len(ok) // 2]

    def median(values: list[Any]) -> float | None:
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    names = list(middle["parties"])
    out |= {
        "wall_s": statistics.median(walls),
        "wall_min": min(walls),
        "wall_max": max(walls),
        "nodes": middle["nodes"],
        "rows": middle.get("rows"),
        "sites": middle.get("sites"),
        "parties": len(names),
        "identical": all(r.get("identical") for r in ok),
        "max": {k: median([r.get("max", {}).get(k) for r in ok]) for k in METRICS},
        "cpu_per_party": [median([r["parties"][n].get("cpu_s") for r in ok]) for n in names],
        "peak_per_party": [median([r["parties"][n].get("peak_rss_mb") for r in ok]) for n in names],
        "mb_per_party": [middle["parties"][n]["bytes_sent"] / 1e6 for n in names],
        "trust": middle.get("trust"),
    }
    return out


def table_row(cells: Sequence[object], columns: int) -> str:
    """A markdown table row of ``columns`` cells: ``cells``, then empty ones."""
    padded = [str(c) for c in cells] + [""] * (columns - len(cells))
    return "| " + " | ".join(padded) + " |"


def joined(values: list[float | None], fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in values if v is not None) or "-"


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


# --- --helpers -----------------------------------------------------------------------------


def helper_groups(
    runs: list[dict[str, Any]],
) -> dict[tuple[str, int, str], dict[str, Any]]:
    """The --helpers runs by (dataset, sites, helper), in the order they first ran, each
    summarized (:func:`summarize`), with ``x_dealer``: its median wall time over the dealer's
    for the same dataset and number of sites (None without a dealer median)."""
    keys: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for r in runs:
        keys.setdefault((r["dataset"], r["sites"], r["helper"]), []).append(r)
    groups = {key: summarize(rs) | {"options": rs[0].get("bench_options", [])}
              for key, rs in keys.items()}  # fmt: skip
    for (dataset, k, _), g in groups.items():
        dealer = groups.get((dataset, k, "dealer"), {}).get("wall_s")
        g["x_dealer"] = g["wall_s"] / dealer if dealer and g.get("wall_s") is not None else None
    return groups


def verdict(ok: bool) -> str:
    return "yes" if ok else "no"


def helper_targets(groups: dict[tuple[str, int, str], dict[str, Any]]) -> list[str]:
    """The targets, from the medians: for every dataset, sites within 1.3x of dealer (3 sites)
    and ot within 3x of dealer (2 and 3 sites); adult with ot under 180 s."""
    lines = []
    datasets = list(dict.fromkeys(d for d, _, _ in groups))
    for dataset in datasets:
        checks = []
        for helper, k, target in (("sites", 3, SITES_TARGET), ("ot", 3, OT_TARGET),
                                  ("ot", 2, OT_TARGET)):  # fmt: skip
            if (dataset, k, helper) not in groups:
                continue
            ratio = groups[(dataset, k, helper)].get("x_dealer")
            said = "no data" if ratio is None else f"{verdict(ratio <= target)} ({ratio:.2f}x)"
            checks.append(f"{helper} within {target:g}x of dealer (k={k}): {said}")
        if checks:
            lines.append(f"- {dataset}: " + "; ".join(checks))
    adult = []
    for k in sorted({k for d, k, h in groups if d == "adult" and h == "ot"}, reverse=True):
        wall = groups[("adult", k, "ot")].get("wall_s")
        said = "no data" if wall is None else f"{verdict(wall < ADULT_OT_TARGET_S)} ({wall:.1f} s)"
        adult.append(f"k={k}: {said}")
    if adult:
        lines.append(f"- adult with ot under {ADULT_OT_TARGET_S:.0f} s: " + "; ".join(adult))
    return lines


def helpers_markdown(runs: list[dict[str, Any]], header: str) -> str:
    """helpers.md: ``header``, one row per (dataset, sites, helper), the targets and what
    each helper trusts."""
    groups = helper_groups(runs)
    lines = [
        header,
        "",
        "| dataset | options | sites | helper | parties | nodes | median wall s | min-max wall s "
        "| x dealer | median CPU s per party | MB sent per party (median run) "
        "| peak MB per party |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, k, helper), g in groups.items():
        opts = " ".join(g["options"]) or "-"
        if not g["ok"]:
            said = f"failed ({g['failed']} of {g['runs']}): {short_error(g['error'])}"
            lines.append(table_row([dataset, opts, k, helper, said], 12))
            continue
        x = f"{g['x_dealer']:.2f}" if g["x_dealer"] is not None else "-"
        note = f" ({g['failed']} of {g['runs']} failed)" if g["failed"] else ""
        lines.append(
            f"| {dataset} | {opts} | {k} | {helper} | {g['parties']} | {g['nodes']} "
            f"| {g['wall_s']:.2f}{note} | {g['wall_min']:.2f}-{g['wall_max']:.2f} | {x} "
            f"| {joined(g['cpu_per_party'], '.2f')} | {joined(g['mb_per_party'], '.2f')} "
            f"| {joined(g['peak_per_party'], '.0f')} |"
        )
    lines += [
        "",
        "Per-party columns list the sites in order, then the dealer (--helper dealer). "
        "x dealer: the median wall time over the dealer's for the same dataset and sites.",
        "",
        "Targets (from the medians above):",
        "",
        *(helper_targets(groups) or ["- no runs"]),
    ]
    trust = {h: g["trust"] for (_, _, h), g in groups.items() if g.get("trust")}
    if trust:
        lines += ["", "Trust (each run's own statement):", ""]
        lines += [f"- {h}: {t}" for h, t in trust.items()]
    return "\n".join(lines) + "\n"


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
    load_end = load_average()
    header = (
        f"PPID3 --counts fast, {repeat} run{'s' if repeat > 1 else ''} per row, alternating, "
        f"on {machine()}, "
        f"{date.today().isoformat()}; load average {load_start:.1f} at the start, "
        f"{load_end:.1f} at the end."
    )
    out.mkdir(parents=True, exist_ok=True)
    doc = {"machine": machine(), "date": date.today().isoformat(), "repeat": repeat,
           "load_average": {"start": load_start, "end": load_end}, "runs": runs}  # fmt: skip
    (out / "helpers.json").write_text(json.dumps(doc, indent=1))
    md = helpers_markdown(runs, header)
    (out / "helpers.md").write_text(md)
    print(f"[bench] wrote {out / 'helpers.json'} and helpers.md", file=sys.stderr)
    return md


# --- --scaling -----------------------------------------------------------------------------


def fit_slope(
    points: Sequence[tuple[float, float]], min_x: float = SLOPE_MIN_ROWS
) -> tuple[float, list[tuple[float, float]]] | None:
    """The least-squares slope of log(y) on log(x) over the points with ``x >= min_x`` (all
    points if fewer than 2 of them qualify), and the points used; None if fewer than 2
    points, or no two distinct x, are left."""
    usable = [(x, y) for x, y in points if x > 0 and y > 0]
    used = [(x, y) for x, y in usable if x >= min_x]
    if len(used) < 2:
        used = usable
    if len(used) < 2:
        return None
    lx = [math.log(x) for x, _ in used]
    ly = [math.log(y) for _, y in used]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    var = sum((a - mx) ** 2 for a in lx)
    if var == 0:
        return None
    slope = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / var
    return slope, used


def slope_line(helper: str, fit: tuple[float, list[tuple[float, float]]] | None) -> str:
    """One helper's slope, and how close it is to 1 (time linear in rows)."""
    if fit is None:
        return f"- {helper}: no slope (fewer than 2 measured points)"
    slope, used = fit
    xs = [int(x) for x, _ in used]
    gap = slope - 1
    if abs(gap) <= 0.1:
        kind = "close to linear"
    elif gap < 0:
        kind = "below linear: fixed costs still weigh"
    else:
        kind = "above linear"
    return (
        f"- {helper}: slope {slope:.2f} over {len(used)} points (rows {min(xs)}-{max(xs)}); "
        f"|slope - 1| = {abs(gap):.2f}, {kind}"
    )


def scaling_plan(
    rows: list[int],
    sites: list[int],
    sites_rows: int,
    helpers: list[str],
    ot_max_rows: int,
) -> list[dict[str, Any]]:
    """The --scaling points, in order: the rows sweep (3 sites) then the sites sweep, each
    point a (sweep, rows, sites, helper) and, for a point left out, why."""
    points = []
    for sweep, pairs in (("rows", [(n, SCALING_K) for n in rows]),
                         ("sites", [(sites_rows, k) for k in sites])):  # fmt: skip
        for n, k in pairs:
            for helper in helpers:
                if helper == "sites" and k < 3:
                    continue  # no third site to deal the randomness: not a configuration
                point: dict[str, Any] = {"sweep": sweep, "rows": n, "sites": k, "helper": helper}
                if helper == "ot" and n > ot_max_rows:
                    point["skipped"] = "not run: over --ot-max-rows"
                points.append(point)
    return points


def scaling_groups(
    runs: list[dict[str, Any]],
) -> dict[tuple[str, int, int, str], dict[str, Any]]:
    """The --scaling records by (sweep, rows, sites, helper), in order, each summarized;
    a point left out keeps its reason as ``skipped``."""
    keys: dict[tuple[str, int, int, str], list[dict[str, Any]]] = {}
    for r in runs:
        keys.setdefault((r["sweep"], r["point_rows"], r["point_sites"], r["helper"]), []).append(r)
    out = {}
    for key, rs in keys.items():
        skipped = [r["skipped"] for r in rs if r.get("status") == "skipped"]
        out[key] = {"skipped": skipped[0]} if skipped else summarize(rs)
    return out


def _cell(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def scaling_table(groups: dict[tuple[str, int, int, str], dict[str, Any]], sweep: str) -> list[str]:
    first = "rows" if sweep == "rows" else "sites"
    lines = [
        f"| {first} | {'sites' if sweep == 'rows' else 'rows'} | helper | parties | nodes "
        "| wall s | CPU s (max over parties) | MB sent (max over parties) "
        "| peak MB (max over parties) | identical |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (s, n, k, helper), g in groups.items():
        if s != sweep:
            continue
        a, b = (n, k) if sweep == "rows" else (k, n)
        if "skipped" in g:
            lines.append(table_row([a, b, helper, g["skipped"]], 10))
            continue
        if not g["ok"]:
            what = "timed out" if "timed out" in g["error"] else "failed"
            lines.append(table_row([a, b, helper, f"{what}: {short_error(g['error'])}"], 10))
            continue
        wall = f"{g['wall_s']:.2f}"
        if g["ok"] > 1:
            wall += f" ({g['wall_min']:.2f}-{g['wall_max']:.2f})"
        if g["failed"]:
            wall += f"; {g['failed']} of {g['runs']} failed"
        m = g["max"]
        mb = None if m["bytes_sent"] is None else m["bytes_sent"] / 1e6
        lines.append(
            f"| {a} | {b} | {helper} | {g['parties']} | {g['nodes']} | {wall} "
            f"| {_cell(m['cpu_s'], '.2f')} | {_cell(mb, '.2f')} "
            f"| {_cell(m['peak_rss_mb'], '.0f')} | {g['identical']} |"
        )
    return lines


def rows_slopes(
    groups: dict[tuple[str, int, int, str], dict[str, Any]],
) -> dict[str, tuple[float, list[tuple[float, float]]] | None]:
    """Per helper, the slope of log median wall on log rows over the rows sweep."""
    helpers = list(dict.fromkeys(h for s, _, _, h in groups if s == "rows"))
    return {
        h: fit_slope(
            [
                (n, g["wall_s"])
                for (s, n, _, hh), g in groups.items()
                if s == "rows" and hh == h and g.get("wall_s")
            ]
        )
        for h in helpers
    }


def scaling_targets(groups: dict[tuple[str, int, int, str], dict[str, Any]]) -> list[str]:
    """The million-row targets, from the rows sweep: the best helper with no outside party
    (the lowest median wall among those measured there) under :data:`MILLION_TARGET_S`
    seconds and :data:`MILLION_TARGET_MB` MB peak per party, and its slope in rows."""
    measured = {
        h: g
        for (s, n, k, h), g in groups.items()
        if s == "rows" and n == MILLION and k == SCALING_K and h in DEALER_FREE and g.get("ok")
    }
    if not measured:
        return [f"- {MILLION:,} rows: not measured with a helper of {', '.join(DEALER_FREE)}"]
    best = min(measured, key=lambda h: measured[h]["wall_s"])
    g = measured[best]
    wall, peak = g["wall_s"], g["max"]["peak_rss_mb"]
    lines = [
        f"- {MILLION:,} rows x {SYNTHETIC_ATTRS} attributes, {SCALING_K} sites, depth "
        f"{SYNTHETIC_DEPTH}, --helper {best} (the fastest with no outside party): wall "
        f"{wall:.1f} s, under {MILLION_TARGET_S:.0f} s: {verdict(wall < MILLION_TARGET_S)}; "
        f"peak {_cell(peak, '.0f')} MB per party (max), under {MILLION_TARGET_MB:.0f} MB: "
        f"{verdict(peak is not None and peak < MILLION_TARGET_MB)}"
    ]
    fit = rows_slopes(groups).get(best)
    if fit is not None:
        lines.append(f"- slope in rows of --helper {best}: {fit[0]:.2f} "
                     f"(|slope - 1| = {abs(fit[0] - 1):.2f})")  # fmt: skip
    return lines


def scaling_markdown(runs: list[dict[str, Any]], header: str) -> str:
    groups = scaling_groups(runs)
    lines = [header, "", f"Rows sweep ({SCALING_K} sites):", "", *scaling_table(groups, "rows")]
    if any(s == "sites" for s, _, _, _ in groups):
        lines += ["", "Sites sweep:", "", *scaling_table(groups, "sites")]
    lines += [
        "",
        "Slope of log(median wall) on log(rows), least squares over the points with rows >= "
        f"{SLOPE_MIN_ROWS} (all points if fewer than 2 of them); 1 is time linear in rows:",
        "",
        *[slope_line(h, fit) for h, fit in rows_slopes(groups).items()],
        "",
        "Targets (from the medians above):",
        "",
        *scaling_targets(groups),
    ]
    trust = {}
    for r in runs:
        if r.get("trust"):
            trust.setdefault(r["helper"], r["trust"])
    if trust:
        lines += ["", "Trust (each run's own statement):", ""]
        lines += [f"- {h}: {t}" for h, t in trust.items()]
    return "\n".join(lines) + "\n"


def plot_scaling(
    groups: dict[tuple[str, int, int, str], dict[str, Any]], sweep: str, path: Path, title: str
) -> None:
    """Four log-log panels (wall, CPU, bytes sent and peak memory per party, the last three
    the max over the parties) against rows or sites, one line per helper."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    panels = [
        ("wall s", lambda g: g["wall_s"]),
        ("CPU s per party (max)", lambda g: g["max"]["cpu_s"]),
        ("MB sent per party (max)",
         lambda g: None if g["max"]["bytes_sent"] is None else g["max"]["bytes_sent"] / 1e6),
        ("peak MB per party (max)", lambda g: g["max"]["peak_rss_mb"]),
    ]  # fmt: skip
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    present = {h for s, _, _, h in groups if s == sweep}
    helpers = [h for h in HELPERS if h in present]  # the same order and colour in every plot
    colours = dict(zip(HELPERS, ("tab:blue", "tab:orange", "tab:green"), strict=True))
    xs_all: set[int] = set()
    for ax, (label, get) in zip(axes.flat, panels, strict=True):
        for helper in helpers:
            pts = sorted(
                (n if sweep == "rows" else k, get(g))
                for (s, n, k, h), g in groups.items()
                if s == sweep and h == helper and g.get("ok") and get(g)
            )
            if pts:
                xs_all.update(x for x, _ in pts)
                ax.plot([x for x, _ in pts], [y for _, y in pts], "o-", label=helper,
                        color=colours[helper])  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows" if sweep == "rows" else "sites")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
        if sweep == "sites" and xs_all:
            ax.set_xticks(sorted(xs_all))
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
    ``--quick``, or ``--helpers``/``--scaling`` given ``--repeat`` below 3 or only part of
    their sweep."""
    if args.quick:
        return True
    if not (args.helpers or args.scaling):
        return False
    if args.repeat_given is not None and args.repeat_given < 3:
        return True
    partial = (
        (args.helpers and args.datasets is not None
         and set(args.datasets) != {d for d, _ in HELPER_RUNS}),
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
        "--datasets",
        type=name_list,
        default=None,
        metavar="A,B",
        help="--helpers: only these datasets (default: all four)",
    )
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
        help="runs per configuration (--helpers: default 5; --scaling: default 1)",
    )
    p.add_argument(
        "--scaling-repeat",
        type=int,
        default=None,
        help="--scaling: runs per point (default 1; without --helpers, --repeat sets it too), "
        "so that --helpers --scaling --repeat 3 makes the whole benchmark in one run",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write bench.json/bench.md, helpers.* or scaling.* (default: results/bench; "
        f"a smoke run writes to {SCRATCH}, so it never overwrites results)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="deadline of every receive; with --scaling, also of every whole run",
    )
    args = p.parse_args(argv)
    args.repeat_given = args.repeat
    if args.repeat is not None and args.repeat < 1:
        p.error("--repeat must be >= 1")
    if args.scaling_repeat is not None and args.scaling_repeat < 1:
        p.error("--scaling-repeat must be >= 1")
    if args.sites_rows < 1 or args.ot_max_rows < 0:
        p.error("--sites-rows must be >= 1 and --ot-max-rows >= 0")
    if args.datasets is not None:
        unknown = set(args.datasets) - {d for d, _ in HELPER_RUNS}
        if unknown or not args.datasets:
            p.error(f"--datasets: choose from {', '.join(d for d, _ in HELPER_RUNS)}")
    if set(args.scaling_helpers) - set(HELPERS) or not args.scaling_helpers:
        p.error(f"--scaling-helpers: choose from {', '.join(HELPERS)}")
    if any(k < 2 for k in args.scaling_sites):
        p.error("--scaling-sites: every number of sites must be >= 2")
    if args.out is None:
        args.out = SCRATCH if is_smoke(args) else ROOT / "results" / "bench"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.scaling and importlib.util.find_spec("matplotlib") is None:
        raise SystemExit(MATPLOTLIB_MISSING)
    try:
        if args.helpers or args.scaling:
            if args.helpers:
                print(compare_helpers(args.repeat or 5, args.timeout, args.out, args.datasets))
            if args.scaling:
                args.repeat = args.scaling_repeat or (1 if args.helpers else args.repeat or 1)
                print(scaling(args, args.out))
            return 0
        return bench(args)
    except RunFailed as e:
        raise SystemExit(str(e)) from None


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
