"""The runs of scripts/bench.py and what they measure: one ``mpc run ppid3 ... --json`` launched
and timed (stopped past its deadline), its record (or, for a run that failed, what was asked
for and the end of its error), the per-party metrics, the summary of a configuration's
repeats, and the points of the --scaling sweeps."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from mpc.runtime.metrics import cpu_model
from protocols.engine.preprocessing import PREPROCESSING

ROOT = Path(__file__).resolve().parents[1]

#: the helpers of ``--counts fast``, in the order the tables and plots list them (the
#: registry's)
HELPERS = tuple(PREPROCESSING)
#: --scaling: the generated table (attributes, seed), the depth of its trees, and the sites
#: of the rows sweep
SYNTHETIC_ATTRS = 20
SYNTHETIC_SEED = 1
SYNTHETIC_DEPTH = 4
SCALING_K = 3
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


def write_sweep(
    out: Path, name: str, what: str, runs: list[dict[str, Any]], repeat: int, load_start: float,
    markdown: Callable[[list[dict[str, Any]], str], str],
) -> str:  # fmt: skip
    """Write ``NAME.json`` (the runs, the machine, the date, the repeats and the load average
    at the start and now) and ``NAME.md`` (``markdown`` of the runs under a header that says
    ``what`` was run and the same) to ``out``; the markdown."""
    load_end = load_average()
    today = date.today().isoformat()
    header = (
        f"{what}, {repeat} run{'s' if repeat > 1 else ''} per row, on {machine()}, {today}; "
        f"load average {load_start:.1f} at the start, {load_end:.1f} at the end."
    )
    out.mkdir(parents=True, exist_ok=True)
    doc = {"machine": machine(), "date": today, "repeat": repeat,
           "load_average": {"start": load_start, "end": load_end}, "runs": runs}  # fmt: skip
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1))
    md = markdown(runs, header)
    (out / f"{name}.md").write_text(md)
    print(f"[bench] wrote {out / (name + '.json')} and {name}.md", file=sys.stderr)
    return md


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


@dataclass(frozen=True)
class Checkout:
    """The code a run runs: a checkout of the project and the interpreter that runs it (its
    own virtual environment's, or this one's: ``python -m mpc`` from the checkout's folder
    imports the checkout's packages first, and its parties inherit the folder)."""

    root: Path
    python: str


#: this checkout, with this interpreter
HERE = Checkout(ROOT, sys.executable)


def _launch(cmd: list[str], limit: float, cwd: Path = ROOT) -> tuple[int, str, str, float]:
    """Run ``cmd``; past ``limit`` seconds stop it with SIGTERM (on which the launcher kills
    its parties, each in its own process group, and removes its folder), then SIGKILL."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd)  # fmt: skip
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
    dataset: str, counts: str, extra: list[str], timeout: float, limit: float | None = None,
    checkout: Checkout = HERE,
) -> dict[str, Any]:  # fmt: skip
    """One ``mpc run ppid3`` on ``dataset`` (a name or ``synthetic:ROWS,ATTRS,SEED``) with
    ``--timeout timeout`` (every receive's deadline), stopped after ``limit`` seconds (default
    ``4 * timeout``), with the code of ``checkout``; raises :class:`RunFailed` if it fails."""
    if "--reveal" not in extra:  # the paper's mode, whatever the checkout's default
        extra = [*extra, "--reveal", "counts"]
    cmd = [checkout.python, "-m", "mpc", "run", "ppid3", *dataset_args(dataset),
           "--counts", counts, "--timeout", str(timeout), "--json", *extra]  # fmt: skip
    code, stdout, stderr, wall = _launch(cmd, 4 * timeout if limit is None else limit,
                                         checkout.root)  # fmt: skip
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
        "depth": r.get("depth"),
        "levels": r.get("cost", {}).get("levels"),
        "reveal": r.get("reveal"),
        "criterion": r.get("criterion"),
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
    dataset: str, counts: str, extra: list[str], timeout: float, limit: float | None = None,
    checkout: Checkout = HERE,
) -> dict[str, Any]:  # fmt: skip
    """:func:`run`, a failure recorded (:func:`failed`) rather than raised."""
    try:
        return run(dataset, counts, extra, timeout, limit, checkout)
    except RunFailed as e:
        return failed(dataset, counts, extra, e)


def short_error(error: str, width: int = 90) -> str:
    """The line of an error that says a run was stopped at its deadline, else its last
    non-empty line, shortened to fit a table cell."""
    lines = [x.strip() for x in error.splitlines() if x.strip()]
    stopped = [x[x.index("timed out after ") :] for x in lines if " timed out after " in x]
    last = (stopped or lines or ["unknown error"])[-1].rstrip(":").replace("|", "/")
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


# --- --scaling -----------------------------------------------------------------------------


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
