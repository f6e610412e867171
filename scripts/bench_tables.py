"""The tables and plots of scripts/bench.py: the markdown of the plain benchmark, of --helpers
(with its targets) and of --scaling (with the slope of wall time on rows and the million-row
targets), and the --scaling plots."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from bench_runs import (
    HELPERS,
    SCALING_K,
    SYNTHETIC_ATTRS,
    SYNTHETIC_DEPTH,
    short_error,
    summarize,
)

#: the --helpers targets: median wall time over the dealer's, and adult with ot in seconds
SITES_TARGET = 1.3
OT_TARGET = 3.0
ADULT_OT_TARGET_S = 180.0
#: the slope of log wall on log rows is fitted over the points with at least this many rows
SLOPE_MIN_ROWS = 10_000
#: the --scaling targets at a million rows (3 sites, the best helper with no outside party):
#: wall seconds, and peak MB per party
MILLION = 1_000_000
MILLION_TARGET_S = 300.0
MILLION_TARGET_MB = 4000.0
#: helpers with no outside party
DEALER_FREE = ("sites", "ot")


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
