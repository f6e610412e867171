"""``--reveal`` of scripts/bench.py: PPID3 revealing only the tree (``--reveal tree``) beside
the paper's mode (``--reveal counts``) on the same tables, sites and helper, against the
targets of the mode that reveals only the tree:

* Adult (48,842 rows, depth 6), 3 sites, ``--helper sites``: under 120 s;
* Adult, 2 sites, ``--helper ot``: under 360 s;
* 1,000,000 generated rows x 20 attributes, depth 4, 3 sites: under 480 s and 4,000 MB per
  party, and its microseconds per row, level and attribute beside Hamada et al.'s 8.8;
* 10,000,000 such rows (``ten-million``, run only when ``--datasets`` names it: about half an
  hour a run), ``--reveal tree`` alone: under 1,500 s, under 6,000 MB per party and at most
  2.0 microseconds per row, level and attribute;
* the bytes each site sends per level of the tree, against the paper's mode.
* Adult with its numbers split at every distinct value (``adult-exact``, run only when
  ``--datasets`` names it), 3 sites, ``--reveal tree``: under 60 s; ``adult-exact-4``, the
  same to depth 4, with no target (the figure on the PPID3 page);
* two sites with ``--helper ot`` against three with ``--helper sites`` on car, kr-vs-kp,
  tic-tac-toe, house-votes-84 and Adult, ``--reveal tree`` (``--datasets`` naming both of
  a pair, e.g. ``car car-ot``; :data:`TWO_SITES`): within 2.0x.

Each configuration runs ``--repeat`` times, the two modes alternating; a run that outlives
its target is stopped there and recorded as failed, and its configuration is not run again
(it would be stopped again). The side-by-side run with MPyC is ``scripts/compare_mpyc.py``.

With ``--against DIR`` (:func:`compare_against`) each run is made by this checkout and by
another (an earlier release, a branch) in turn, the order of the two alternating from one
repeat to the next, and ``reveal-against.md`` gives per configuration and mode the median
wall time of each, their ratio and the median of the pairs' ratios: a change's cost measured
in one sitting, on one machine under one load.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_runs import (
    HERE,
    SYNTHETIC_ATTRS,
    SYNTHETIC_DEPTH,
    Checkout,
    load_average,
    short_error,
    summarize,
    synthetic,
    tried,
    write_sweep,
)
from bench_tables import joined, table_row, verdict

#: Hamada et al. (PoPETs 2023): 2^20 rows x 11 attributes, height 4, 3 parties, 404 s
HAMADA_US = 404.0 / (2**20 * 11 * 4) * 1e6
MILLION = 1_000_000
TEN_MILLION = 10_000_000
#: the generated tables' targets: peak memory per party and microseconds per row, level and
#: attribute (None: none)
ROWS_TARGETS = {"million": (MILLION, 4000.0, None), "ten-million": (TEN_MILLION, 6000.0, 2.0)}


@dataclass(frozen=True)
class RevealRun:
    """One configuration of ``--reveal``: its name (``--datasets`` picks by it), the
    dataset, the options, the modes it runs and its target in seconds (of ``--reveal
    tree``), if any."""

    name: str
    dataset: str
    options: tuple[str, ...]
    modes: tuple[str, ...] = ("counts", "tree")
    target_s: float | None = None
    #: run only when ``--datasets`` names it
    opt_in: bool = False

    @property
    def label(self) -> str:
        return f"{self.dataset} {' '.join(self.options)}"


_SITES3 = ("--sites", "3", "--helper", "sites")
_SITES2_OT = ("--sites", "2", "--helper", "ot")
_ADULT = ("--max-depth", "6", "--all-rows")
_MILLION = (*_SITES3, "--max-depth", str(SYNTHETIC_DEPTH))
_EXACT = ("--splits", "threshold")
REVEAL_RUNS = (
    RevealRun("car", "car", _SITES3),
    RevealRun("kr-vs-kp", "kr-vs-kp", _SITES3),
    RevealRun("adult", "adult", (*_SITES3, *_ADULT), target_s=120.0),
    RevealRun("adult-ot", "adult", (*_SITES2_OT, *_ADULT), ("tree",), 360.0),
    RevealRun("million", synthetic(MILLION), _MILLION, target_s=480.0),
    RevealRun("ten-million", synthetic(TEN_MILLION), _MILLION, ("tree",), 1500.0, opt_in=True),
    # numbers as numbers, every distinct value a candidate (counted by shuffles): the
    # target's depth, and the depth measured on the PPID3 page
    RevealRun("adult-exact", "adult", (*_SITES3, *_ADULT, *_EXACT), ("tree",), 60.0, opt_in=True),
    RevealRun(
        "adult-exact-4",
        "adult",
        (*_SITES3, "--max-depth", "4", "--all-rows", *_EXACT),
        ("tree",),
        opt_in=True,
    ),
    RevealRun("tic-tac-toe", "tic-tac-toe", _SITES3, ("tree",), opt_in=True),
    RevealRun("house-votes-84", "house-votes-84", _SITES3, ("tree",), opt_in=True),
    *(
        RevealRun(f"{d}-ot", d, _SITES2_OT, ("tree",), opt_in=True)
        for d in ("car", "kr-vs-kp", "tic-tac-toe", "house-votes-84")
    ),
)
#: two sites with ``ot`` (the value) against three with ``sites`` (the key), the same table:
#: at most this many times the time
TWO_SITES = {d: f"{d}-ot" for d in ("car", "kr-vs-kp", "tic-tac-toe", "house-votes-84", "adult")}
TWO_SITES_AT_MOST = 2.0
NAMES = tuple(c.name for c in REVEAL_RUNS)
#: the configurations a run of ``--reveal`` without ``--datasets`` makes
DEFAULT_NAMES = tuple(c.name for c in REVEAL_RUNS if not c.opt_in)


def compare_reveal(repeat: int, timeout: float, out: Path, names: list[str] | None = None) -> str:
    """Every configuration of :data:`REVEAL_RUNS` (those of ``names``), ``repeat`` times,
    the modes alternating; writes reveal.json and reveal.md to ``out``."""
    load_start = load_average()
    runs: list[dict[str, Any]] = []
    for config in REVEAL_RUNS:
        if config.name not in (DEFAULT_NAMES if names is None else names):
            continue
        stopped: set[str] = set()
        for i in range(repeat):
            for mode in config.modes:
                if mode in stopped:
                    continue
                opts = [*config.options, "--reveal", mode]
                limit = config.target_s if mode == "tree" and config.target_s else 4 * timeout
                r = tried(config.dataset, "fast", opts, timeout, limit=limit)
                r |= {"config": config.name, "mode": mode}
                runs.append(r)
                what = f"{config.label} --reveal {mode} run {i + 1}/{repeat}"
                if r["status"] != "ok":
                    stopped.add(mode)
                    print(f"[bench] {what}: failed: {short_error(r['error'])}",
                          file=sys.stderr, flush=True)  # fmt: skip
                    continue
                if not r["identical"]:
                    raise SystemExit(f"{what}: the tree is not plain ID3's")
                print(f"[bench] {what}: {r['wall_s']:.2f} s, {r['nodes']} nodes",
                      file=sys.stderr, flush=True)  # fmt: skip
    what = "PPID3 --reveal tree beside --reveal counts (--counts fast), the modes alternating"
    return write_sweep(out, "reveal", what, runs, repeat, load_start, reveal_markdown)


#: a change may make --reveal tree this much slower than the code it is measured against
AGAINST_TOLERANCE = 1.10


def compare_against(
    repeat: int, timeout: float, out: Path, other: Checkout, names: list[str] | None = None
) -> str:
    """Every configuration and mode of :data:`REVEAL_RUNS` (those of ``names``) ``repeat``
    times with this checkout and with ``other``, in turn (this one first in even repeats);
    writes reveal-against.json and reveal-against.md to ``out``."""
    load_start = load_average()
    runs: list[dict[str, Any]] = []
    sides = {"this": HERE, "against": other}
    for config in REVEAL_RUNS:
        if config.name not in (DEFAULT_NAMES if names is None else names):
            continue
        for i in range(repeat):
            for mode in config.modes:
                opts = [*config.options, "--reveal", mode]
                order = ["this", "against"] if i % 2 == 0 else ["against", "this"]
                for side in order:
                    r = tried(config.dataset, "fast", opts, timeout, checkout=sides[side])
                    r |= {"config": config.name, "mode": mode, "side": side, "pair": i}
                    runs.append(r)
                    what = f"{config.label} --reveal {mode} ({side}) run {i + 1}/{repeat}"
                    if r["status"] != "ok":
                        print(f"[bench] {what}: failed: {short_error(r['error'])}",
                              file=sys.stderr, flush=True)  # fmt: skip
                        continue
                    if not r["identical"]:
                        raise SystemExit(f"{what}: the tree is not plain ID3's")
                    print(f"[bench] {what}: {r['wall_s']:.2f} s", file=sys.stderr, flush=True)
    what = (f"PPID3 --counts fast, this checkout against {other.root} ({other.python}), "
            "in turn")  # fmt: skip
    return write_sweep(out, "reveal-against", what, runs, repeat, load_start, against_markdown)


def against_markdown(runs: list[dict[str, Any]], header: str) -> str:
    """reveal-against.md: per configuration and mode, the median wall time of this checkout
    and of the other, the ratio of the medians and the median of the pairs' ratios."""
    lines = [
        header,
        "",
        "| table | options | reveal | this: median (min-max) s | against: median (min-max) s "
        "| ratio of medians | median of pair ratios | MB sent per site: this; against |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for config in REVEAL_RUNS:
        for mode in config.modes:
            mine = [r for r in runs if r["config"] == config.name and r["mode"] == mode]
            if not mine:
                continue
            groups = {side: summarize([r for r in mine if r["side"] == side])
                      for side in ("this", "against")}  # fmt: skip
            cells: list[Any] = [config.dataset, " ".join(config.options), mode]
            if not all(g["ok"] for g in groups.values()):
                lines.append(table_row([*cells, "failed"], 8))
                continue
            walls = {}
            for side, g in groups.items():
                walls[side] = g["wall_s"]
                cells.append(f"{g['wall_s']:.2f} ({g['wall_min']:.2f}-{g['wall_max']:.2f})")
            ratio = walls["this"] / walls["against"]
            pairs = []
            for i in sorted({r["pair"] for r in mine}):
                both = {r["side"]: r for r in mine if r["pair"] == i and r["status"] == "ok"}
                if len(both) == 2:
                    pairs.append(both["this"]["wall_s"] / both["against"]["wall_s"])
            paired = sorted(pairs)[len(pairs) // 2] if pairs else float("nan")
            mb = "; ".join(joined(groups[side]["mb_per_party"], ".1f") for side in groups)
            lines.append(table_row([*cells, f"{ratio:.3f}", f"{paired:.3f}", mb], 8))
            if mode == "tree":
                verdicts.append(f"- {config.label}, --reveal tree, at most "
                                f"{AGAINST_TOLERANCE:.2f}x: {verdict(ratio <= AGAINST_TOLERANCE)} "
                                f"({ratio:.3f}x, pairs {paired:.3f}x)")  # fmt: skip
    return "\n".join([*lines, "", *verdicts, ""])


def reveal_groups(runs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(configuration, mode) -> :func:`bench_runs.summarize` of its runs, with the levels
    of the median run and the megabytes each party sent per level."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["config"], r["mode"]), []).append(r)
    out = {}
    for key, records in by.items():
        g = summarize(records)
        ok = sorted((r for r in records if r["status"] == "ok"), key=lambda r: r["wall_s"])
        if ok:
            levels = ok[len(ok) // 2].get("levels") or None
            g["levels"] = levels
            g["mb_per_level"] = [mb / levels for mb in g["mb_per_party"]] if levels else None
            g["rounds"] = g["max"]["rounds"]
        out[key] = g
    return out


def reveal_targets(groups: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """The targets of :data:`REVEAL_RUNS`, from the medians of ``--reveal tree``."""
    lines = []
    for config in REVEAL_RUNS:
        g = groups.get((config.name, "tree"))
        if config.target_s is None or g is None:
            continue
        what = f"- {config.label}, --reveal tree, under {config.target_s:.0f} s: "
        if not g["ok"]:
            lines.append(what + f"no (stopped: {short_error(g['error'])})")
            continue
        wall = g["wall_s"]
        lines.append(what + f"{verdict(wall < config.target_s)} ({wall:.1f} s)")
        if config.name in ROWS_TARGETS:
            rows, target_mb, target_us = ROWS_TARGETS[config.name]
            peak = g["max"]["peak_rss_mb"]
            ok = peak is not None and peak < target_mb
            lines.append(f"  - peak memory per party under {target_mb:.0f} MB: "
                         f"{verdict(ok)} ({peak:.0f} MB at the largest)")  # fmt: skip
            attrs, depth = SYNTHETIC_ATTRS, SYNTHETIC_DEPTH
            us = wall / (rows * depth * attrs) * 1e6
            aim = "" if target_us is None else f"at most {target_us}: {verdict(us <= target_us)}; "
            lines.append(f"  - {us:.1f} us per row, level and attribute ({aim}{wall:.0f} s over "
                         f"{rows:,} x {depth} x {attrs}); Hamada et al.: {HAMADA_US:.1f} us "
                         "(2^20 rows x 11 attributes, height 4, 3 parties, 404 s, the tree "
                         "hidden too)")  # fmt: skip
    for three, two in TWO_SITES.items():
        g3, g2 = groups.get((three, "tree")), groups.get((two, "tree"))
        if g3 is None or g2 is None or not (g3["ok"] and g2["ok"]):
            continue
        ratio = g2["wall_s"] / g3["wall_s"]
        lines.append(f"- {three}: 2 sites with ot within {TWO_SITES_AT_MOST:.1f}x of 3 sites "
                     f"with sites: {verdict(ratio <= TWO_SITES_AT_MOST)} ({ratio:.2f}x: "
                     f"{g2['wall_s']:.2f} s against {g3['wall_s']:.2f} s)")  # fmt: skip
    return lines


def reveal_markdown(runs: list[dict[str, Any]], header: str) -> str:
    """reveal.md: ``header``, a row per (configuration, mode), the targets."""
    groups = reveal_groups(runs)
    lines = [
        header,
        "",
        "| table | options | reveal | nodes | levels | median wall s | min-max wall s "
        "| MB sent per site (median run) | MB per site per level | rounds | peak MB per party "
        "| identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config in REVEAL_RUNS:
        for mode in config.modes:
            g = groups.get((config.name, mode))
            if g is None:
                continue
            cells = [config.dataset, " ".join(config.options), mode]
            if not g["ok"]:
                lines.append(table_row([*cells, f"stopped: {short_error(g['error'])}"], 12))
                continue
            per_level = joined(g["mb_per_level"], ".2f") if g["mb_per_level"] else "-"
            lines.append(table_row([
                *cells, g["nodes"], g["levels"] or "-", f"{g['wall_s']:.2f}",
                f"{g['wall_min']:.2f}-{g['wall_max']:.2f}", joined(g["mb_per_party"], ".2f"),
                per_level, g["rounds"], joined(g["peak_per_party"], ".0f"),
                "yes" if g["identical"] else "no",
            ], 12))  # fmt: skip
    lines += [
        "",
        "Per-party columns list the sites in order. --reveal counts is the paper's PPID3 "
        "(information gain, counts opened to their owners); --reveal tree splits by Gini on "
        "shares and opens only the tree, so the two trees may differ (each equals plain ID3 "
        "with its own criterion). Wall: from the parties' start to the end of the run.",
        "",
        "Targets (from the medians of --reveal tree):",
        "",
        *(reveal_targets(groups) or ["- no run with a target"]),
    ]
    return "\n".join(lines) + "\n"
