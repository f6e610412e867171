"""scripts/bench.py's pure parts: the synthetic dataset spec, the scratch-folder rule, the
slope fit, and the --helpers and --scaling tables (with their verdicts) from made-up runs."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_bench() -> ModuleType:
    path = ROOT / "scripts" / "bench.py"
    spec = importlib.util.spec_from_file_location("bench_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = load_bench()


def record(
    dataset: str, sites: int, helper: str, wall: float, *, cpu: float = 1.0, mb: float = 2.0
) -> dict[str, Any]:
    """A made-up successful run, as run() returns it."""
    names = [f"site{i + 1}" for i in range(sites)] + (["dealer"] if helper == "dealer" else [])
    parties = {
        n: {"bytes_sent": int(mb * 1e6), "rounds": 10, "peak_rss_mb": 60.0, "cpu_s": cpu}
        for n in names
    }
    most, total = bench.party_totals(parties)
    return {
        "dataset": dataset,
        "options": ["--sites", str(sites), "--helper", helper],
        "status": "ok",
        "rows": 100,
        "attributes": 6,
        "sites": sites,
        "counts": "fast",
        "helper": helper,
        "nodes": 40,
        "identical": True,
        "wall_s": wall,
        "parties": parties,
        "max": most,
        "sum": total,
        "trust": f"trust of {helper}",
    }


# --- the dataset spec and the command line ----------------------------------------------------


def test_dataset_args_named_and_synthetic() -> None:
    assert bench.dataset_args("car") == ["--dataset", "car"]
    assert bench.dataset_args("synthetic:100000,20,1") == ["--synthetic", "100000,20,1"]
    assert bench.synthetic(1000) == "synthetic:1000,20,1"
    assert bench.parse_synthetic("5,3,0") == (5, 3, 0)
    for bad in ("100000,20", "a,b,c", "0,20,1", "10,20,1,2"):
        with pytest.raises(ValueError):
            bench.dataset_args(f"synthetic:{bad}")


def test_int_list() -> None:
    assert bench.int_list("1000,1e4,100_000") == [1000, 10_000, 100_000]
    assert bench.int_list("2-5") == [2, 3, 4, 5]
    assert bench.int_list("2,4-5") == [2, 4, 5]
    with pytest.raises(argparse.ArgumentTypeError):
        bench.int_list("0,3")


def test_failed_record_keeps_what_was_asked() -> None:
    err = bench.RunFailed("run ppid3 failed (exit 1)", "line one\nthe end | of it\n")
    r = bench.failed("synthetic:2000,20,1", "fast", ["--sites", "3", "--helper", "ot"], err)
    assert (r["status"], r["rows"], r["sites"], r["helper"]) == ("failed", 2000, 3, "ot")
    assert "failed (exit 1)" in r["error"]
    assert bench.short_error(r["error"]) == "the end / of it"
    # a run stopped at its deadline says so, whatever the launcher printed last
    err = bench.RunFailed("run ppid3 timed out after 360 s", "level 3\nSIGTERM: 2 parties killed\n")
    assert bench.short_error(str(err)) == "timed out after 360 s"


@pytest.mark.parametrize(
    ("argv", "scratch"),
    [
        ([], False),
        (["--quick"], True),
        (["--helpers"], False),
        (["--helpers", "--repeat", "3"], False),
        (["--helpers", "--repeat", "2"], True),
        (["--helpers", "--datasets", "car", "--repeat", "5"], True),
        (["--helpers", "--datasets", "car,nursery,kr-vs-kp,adult"], False),
        (["--helpers", "--datasets", "adult,car,kr-vs-kp,nursery"], False),
        (["--scaling"], False),  # --repeat not given: 1 by default, a full sweep
        (["--scaling", "--repeat", "1"], True),
        (["--scaling", "--rows", "1000,2000"], True),
        (["--scaling", "--rows", "1000,10000,100000,1000000"], False),
        (["--scaling", "--sites-rows", "1000"], True),
        (["--scaling", "--scaling-sites", "2,3"], True),
        (["--scaling", "--scaling-sites", "2-8"], False),
        (["--repeat", "1"], False),  # the plain benchmark has no repeats
        (["--reveal"], False),  # --repeat not given: 3 by default
        (["--reveal", "--repeat", "1"], True),
        (["--reveal", "--datasets", "car"], True),
        (["--reveal", "--datasets", "million,adult-ot,adult,kr-vs-kp,car"], False),
        (["--reveal", "--datasets", "ten-million", "--repeat", "3"], True),
        (["--intersection"], False),  # --repeat not given: 3 by default
        (["--intersection", "--intersection-sizes", "1000"], True),
        (["--intersection", "--repeat", "1"], True),
    ],
)
def test_scratch_folder_rule(argv: list[str], scratch: bool) -> None:
    args = bench.parse_args(argv)
    assert bench.is_smoke(args) is scratch
    assert args.out == (bench.SCRATCH if scratch else ROOT / "results" / "bench")
    given = bench.parse_args([*argv, "--out", "/tmp/elsewhere"])
    assert given.out == Path("/tmp/elsewhere")


def test_bad_arguments_are_refused() -> None:
    for argv in (["--helpers", "--datasets", "iris"], ["--scaling", "--scaling-helpers", "x"],
                 ["--scaling", "--scaling-sites", "1,2"], ["--repeat", "0"],
                 ["--reveal", "--datasets", "nursery"], ["--datasets", "car"],
                 ["--helpers", "--reveal", "--datasets", "car"], ["--against", str(ROOT)],
                 ["--reveal", "--against", str(ROOT / "docs")]):  # fmt: skip
        with pytest.raises(SystemExit):
            bench.parse_args(argv)


def test_missing_matplotlib_stops_before_any_run(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        bench.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else real(name, *a),
    )
    monkeypatch.setattr(bench, "tried", lambda *a, **k: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as e:
        bench.main(["--scaling", "--rows", "1000", "--out", "/nonexistent/never"])
    assert "pip install -e '.[experiments]'" in str(e.value.code)


# --- the slope ----------------------------------------------------------------------------------


def test_fit_slope_exact_power_laws() -> None:
    linear = [(n, 2e-4 * n) for n in (1_000, 10_000, 100_000, 1_000_000)]
    slope, used = bench.fit_slope(linear)
    assert slope == pytest.approx(1.0)
    assert [x for x, _ in used] == [10_000, 100_000, 1_000_000]  # rows >= 10^4 only
    square = [(n, 3e-9 * n**2) for n in (10_000, 100_000)]
    assert bench.fit_slope(square)[0] == pytest.approx(2.0)


def test_fit_slope_leaves_out_small_tables_and_falls_back() -> None:
    # the 1,000-row point (fixed costs) would flatten the slope; it is left out
    points = [(1_000, 5.0), (10_000, 10.0), (100_000, 100.0)]
    assert bench.fit_slope(points)[0] == pytest.approx(1.0)
    # fewer than 2 points with rows >= 10^4: every point counts
    small = [(1_000, 4.0), (2_000, 8.0), (10_000, 40.0)]
    slope, used = bench.fit_slope(small)
    assert slope == pytest.approx(1.0) and len(used) == 3
    # least squares, not two end points: log10 y = 0, 1, 1 at log10 x = 4, 5, 6
    noisy = [(1e4, 1.0), (1e5, 10.0), (1e6, 10.0)]
    assert bench.fit_slope(noisy)[0] == pytest.approx(0.5)
    assert bench.fit_slope([(1_000, 4.0)]) is None
    assert bench.fit_slope([(1_000, 4.0), (1_000, 5.0)]) is None


def test_slope_line_says_how_close_to_one() -> None:
    line = bench.slope_line("dealer", (0.93, [(1e4, 1.0), (1e5, 8.5)]))
    assert "slope 0.93" in line and "|slope - 1| = 0.07" in line and "close to linear" in line
    assert "above linear" in bench.slope_line("ot", (1.4, [(1e4, 1.0), (1e5, 25.0)]))
    assert "no slope" in bench.slope_line("sites", None)


# --- the --helpers table and targets -----------------------------------------------------------


def helper_runs() -> list[dict[str, Any]]:
    walls = {
        ("car", 3, "sites"): [1.2, 1.0, 1.4],  # median 1.2
        ("car", 3, "dealer"): [1.0, 1.1, 0.9],  # median 1.0 -> sites 1.20x: yes
        ("car", 3, "ot"): [3.5, 3.1, 2.8],  # median 3.1 -> 3.10x: no
        ("car", 2, "dealer"): [2.0, 2.0, 2.0],
        ("car", 2, "ot"): [5.0, 6.0, 7.0],  # 6.0 / 2.0 = 3.00x: yes (within)
        ("adult", 3, "sites"): [70.0, 80.0, 90.0],  # 80 / 50 = 1.60x: no
        ("adult", 3, "dealer"): [50.0, 50.0, 60.0],
        ("adult", 3, "ot"): [170.0, 175.0, 200.0],  # 175 s: under 180; 3.50x: no
        ("adult", 2, "dealer"): [40.0, 40.0, 40.0],
        ("adult", 2, "ot"): [190.0, 185.0, 181.0],  # 185 s: not under 180; 4.62x: no
    }
    runs = []
    for i in range(3):  # alternating, as compare_helpers runs them
        for (dataset, k, helper), ws in walls.items():
            runs.append(record(dataset, k, helper, ws[i], cpu=ws[i] / 2, mb=k + i))
    return runs


def test_helper_groups_medians_and_ratio() -> None:
    groups = bench.helper_groups(helper_runs())
    g = groups[("car", 3, "sites")]
    assert (g["wall_s"], g["wall_min"], g["wall_max"]) == (1.2, 1.0, 1.4)
    assert g["x_dealer"] == pytest.approx(1.2)
    assert groups[("car", 3, "dealer")]["x_dealer"] == pytest.approx(1.0)
    assert groups[("adult", 2, "ot")]["x_dealer"] == pytest.approx(185 / 40)
    assert g["parties"] == 3 and groups[("car", 3, "dealer")]["parties"] == 4
    # the bytes of the median run (wall 1.2 s, the first), the CPU medians over runs
    assert g["mb_per_party"] == [pytest.approx(3.0)] * 3
    assert g["cpu_per_party"] == [pytest.approx(0.6)] * 3


def test_helper_targets_follow_from_the_medians() -> None:
    lines = bench.helper_targets(bench.helper_groups(helper_runs()))
    car = next(x for x in lines if x.startswith("- car:"))
    assert "sites within 1.3x of dealer (k=3): yes (1.20x)" in car
    assert "ot within 3x of dealer (k=3): no (3.10x)" in car
    assert "ot within 3x of dealer (k=2): yes (3.00x)" in car
    adult = next(x for x in lines if x.startswith("- adult:"))
    assert "sites within 1.3x of dealer (k=3): no (1.60x)" in adult
    assert "ot within 3x of dealer (k=3): no (3.50x)" in adult
    assert "ot within 3x of dealer (k=2): no (4.62x)" in adult
    under = next(x for x in lines if x.startswith("- adult with ot under 180 s"))
    assert "k=3: yes (175.0 s)" in under and "k=2: no (185.0 s)" in under


def test_helpers_markdown_rows() -> None:
    md = bench.helpers_markdown(helper_runs(), "HEADER")
    assert md.startswith("HEADER\n")
    rows = [x for x in md.splitlines() if x.startswith("| car") or x.startswith("| adult")]
    assert len(rows) == 10  # one per (dataset, sites, helper)
    assert all(x.count("|") == 13 for x in rows)  # 12 columns
    sites = next(x for x in rows if x.startswith("| car | - | 3 | sites |"))
    cells = [c.strip() for c in sites.strip("|").split("|")]
    assert cells[4:9] == ["3", "40", "1.20", "1.00-1.40", "1.20"]
    assert "Targets" in md and "- ot: trust of ot" in md


def test_helpers_markdown_with_a_failed_configuration() -> None:
    runs = [record("car", 3, "dealer", 2.0), record("car", 3, "sites", 2.2)]
    err = bench.RunFailed("run ppid3 failed", "{'site1': 'boom'}")
    bad = bench.failed("car", "fast", ["--sites", "3", "--helper", "ot"], err)
    bad["bench_options"] = []
    md = bench.helpers_markdown([*runs, bad], "H")
    row = next(x for x in md.splitlines() if "| ot |" in x)
    assert "failed (1 of 1)" in row and "boom" in row and row.count("|") == 13
    assert "ot within 3x of dealer (k=3): no data" in md
    assert "sites within 1.3x of dealer (k=3): yes (1.10x)" in md


# --- the --scaling plan and tables --------------------------------------------------------------


def test_scaling_plan_caps_ot_and_needs_three_sites_for_sites() -> None:
    plan = bench.scaling_plan([1_000, 200_000], [2, 3], 1_000, ["sites", "dealer", "ot"], 100_000)
    keys = [(p["sweep"], p["rows"], p["sites"], p["helper"]) for p in plan]
    assert ("rows", 200_000, 3, "ot") in keys
    assert ("sites", 1_000, 2, "sites") not in keys  # no third site with 2 sites
    assert ("sites", 1_000, 2, "ot") in keys and ("sites", 1_000, 3, "sites") in keys
    skipped = [p for p in plan if "skipped" in p]
    assert [(p["rows"], p["helper"]) for p in skipped] == [(200_000, "ot")]
    assert skipped[0]["skipped"] == "not run: over --ot-max-rows"


def scaling_runs() -> list[dict[str, Any]]:
    runs = []
    for n, walls in ((1_000, {"dealer": 2.0, "ot": 3.0}), (10_000, {"dealer": 4.0, "ot": 9.0}),
                     (100_000, {"dealer": 40.0, "ot": 90.0})):  # fmt: skip
        for helper, wall in walls.items():
            r = record(bench.synthetic(n), 3, helper, wall, cpu=wall / 2)
            runs.append(r | {"sweep": "rows", "point_rows": n, "point_sites": 3})
    runs.append({"sweep": "rows", "point_rows": 1_000_000, "point_sites": 3, "helper": "ot",
                 "status": "skipped", "skipped": "not run: over --ot-max-rows"})  # fmt: skip
    err = bench.RunFailed("run ppid3 timed out after 900 s", "")
    bad = bench.failed(bench.synthetic(1_000_000), "fast", ["--sites", "3", "--helper", "dealer"],
                       err)  # fmt: skip
    runs.append(bad | {"sweep": "rows", "point_rows": 1_000_000, "point_sites": 3})
    for k in (2, 4):
        r = record(bench.synthetic(1_000), k, "dealer", 1.0 + k)
        runs.append(r | {"sweep": "sites", "point_rows": 1_000, "point_sites": k})
    return runs


def test_scaling_markdown() -> None:
    md = bench.scaling_markdown(scaling_runs(), "HEADER")
    lines = md.splitlines()
    assert "| 1000000 | 3 | ot | not run: over --ot-max-rows |" in md
    timed_out = next(x for x in lines if x.startswith("| 1000000 | 3 | dealer"))
    assert "timed out" in timed_out and timed_out.count("|") == 11
    row = next(x for x in lines if x.startswith("| 10000 | 3 | ot"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # parties, nodes, wall, CPU max, MB max, peak max, identical
    assert cells[3:] == ["3", "40", "9.00", "4.50", "2.00", "60", "True"]
    assert "| 4 | 1000 | dealer |" in md  # the sites sweep: sites first
    # slopes from 10^4 and 10^5 rows: dealer 4 -> 40 s, ot 9 -> 90 s: both exactly 1
    dealer = next(x for x in lines if x.startswith("- dealer: slope"))
    assert "slope 1.00 over 2 points" in dealer and "|slope - 1| = 0.00" in dealer
    assert next(x for x in lines if x.startswith("- ot: slope")).startswith("- ot: slope 1.00")


def test_scaling_repeats_give_median_and_spread() -> None:
    runs = [
        record(bench.synthetic(1_000), 3, "sites", w)
        | {"sweep": "rows", "point_rows": 1_000, "point_sites": 3}
        for w in (3.0, 1.0, 2.0)
    ]
    md = bench.scaling_markdown(runs, "H")
    assert "| 1000 | 3 | sites | 3 | 40 | 2.00 (1.00-3.00) |" in md
    slope = bench.rows_slopes(bench.scaling_groups(runs))
    assert slope == {"sites": None}
    assert math.isfinite(bench.fit_slope([(1_000, 2.0), (2_000, 3.0)])[0])


def test_million_row_targets_take_the_fastest_helper_with_no_outside_party() -> None:
    runs = scaling_runs()
    # the sweep above measured no dealer-free helper at a million rows: said so
    md = bench.scaling_markdown(runs, "H")
    assert "- 1,000,000 rows: not measured with a helper of sites, ot" in md
    for n, wall in ((100_000, 30.0), (1_000_000, 290.0)):
        r = record(bench.synthetic(n), 3, "sites", wall)
        r["max"] = r["max"] | {"peak_rss_mb": 3900.0 if n == 1_000_000 else 500.0}
        runs.append(r | {"sweep": "rows", "point_rows": n, "point_sites": 3})
    lines = bench.scaling_targets(bench.scaling_groups(runs))
    assert "--helper sites (the fastest with no outside party)" in lines[0]
    assert "under 300 s: yes" in lines[0] and "under 4000 MB: yes" in lines[0]
    assert lines[1].startswith("- slope in rows of --helper sites: 0.99")  # log10(290 / 30)
    slow = [r | {"wall_s": 400.0} if r.get("point_rows") == 1_000_000 and r.get("helper")
            == "sites" else r for r in runs]  # fmt: skip
    assert "under 300 s: no" in bench.scaling_targets(bench.scaling_groups(slow))[0]


def test_one_run_makes_the_helpers_table_and_the_scaling_sweep(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: dict[str, int] = {}
    monkeypatch.setattr(bench.importlib.util, "find_spec", lambda name: object())

    def helpers(repeat: int, *_: Any) -> str:
        seen["helpers"] = repeat
        return ""

    def scaling(args: argparse.Namespace, out: Path) -> str:
        seen["scaling"] = args.repeat
        return ""

    monkeypatch.setattr(bench, "compare_helpers", helpers)
    monkeypatch.setattr(bench, "scaling", scaling)
    assert bench.main(["--helpers", "--scaling", "--repeat", "3", "--out", str(tmp_path)]) == 0
    assert seen == {"helpers": 3, "scaling": 1}  # a point of the sweep once, by default
    seen.clear()
    argv = ["--helpers", "--scaling", "--repeat", "3", "--scaling-repeat", "2", "--out",
            str(tmp_path)]  # fmt: skip
    assert bench.main(argv) == 0 and seen == {"helpers": 3, "scaling": 2}


# --- --reveal ---------------------------------------------------------------------------------


def reveal_record(config: str, mode: str, wall: float, **kw: Any) -> dict[str, Any]:
    """A made-up run of ``--reveal``, as compare_reveal records it."""
    r = record("adult", 3, "sites", wall, mb=kw.get("mb", 6.0))
    r["max"] = r["max"] | {"peak_rss_mb": kw.get("peak", 60.0)}
    return r | {"config": config, "mode": mode, "levels": kw.get("levels", 3)}


def test_reveal_targets_and_bytes_per_level() -> None:
    runs = [reveal_record("adult", "counts", w) for w in (30.0, 20.0, 25.0)]
    runs += [reveal_record("adult", "tree", w) for w in (130.0, 90.0, 110.0)]  # median 110
    err = bench.RunFailed("run ppid3 timed out after 360 s", "")
    adult_ot = next(c for c in bench.REVEAL_RUNS if c.name == "adult-ot")
    runs.append(bench.failed("adult", "fast", list(adult_ot.options), err)
                | {"config": "adult-ot", "mode": "tree"})  # fmt: skip
    runs.append(reveal_record("million", "tree", 160.0, peak=3900.0, levels=5))
    md = bench.reveal_markdown(runs, "HEADER")
    lines = md.splitlines()
    assert md.startswith("HEADER\n")
    tree = next(x for x in lines if x.startswith("| adult | --sites 3") and "| tree |" in x)
    cells = [c.strip() for c in tree.strip("|").split("|")]
    # nodes, levels, median, spread, MB per site, MB per site per level (6 MB over 3 levels)
    assert cells[3:9] == ["40", "3", "110.00", "90.00-130.00", "6.00 / 6.00 / 6.00",
                          "2.00 / 2.00 / 2.00"]  # fmt: skip
    targets = bench.reveal_targets(bench.reveal_groups(runs))
    assert any("--helper sites --max-depth 6 --all-rows, --reveal tree, under 120 s: yes "
               "(110.0 s)" in x for x in targets)  # fmt: skip
    assert any("--helper ot" in x and "under 360 s: no (stopped: timed out after 360 s)" in x
               for x in targets)  # fmt: skip
    assert any("under 480 s: yes (160.0 s)" in x for x in targets)
    assert "under 4000 MB: yes (3900 MB at the largest)" in md
    # 160 s over 10^6 rows x 4 levels x 20 attributes: 2.0 us; Hamada et al. 404 s over
    # 2^20 x 11 x 4: 8.8 us
    assert "- 2.0 us per row, level and attribute" in md and "Hamada et al.: 8.8 us" in md
    # ten million rows: 1,400 s over 10^7 x 4 x 20 is 1.75 us, within 2.0
    ten = [*runs, reveal_record("ten-million", "tree", 1400.0, peak=6100.0, levels=5)]
    md = bench.reveal_markdown(ten, "HEADER")
    assert "under 1500 s: yes (1400.0 s)" in md and "under 6000 MB: no (6100 MB" in md
    assert "- 1.8 us per row, level and attribute (at most 2.0: yes; 1400 s over 10,000,000" in md
    slow = [r | {"wall_s": 130.0} if r.get("mode") == "tree" and r["config"] == "adult" else r
            for r in runs]  # fmt: skip
    assert any("under 120 s: no (130.0 s)" in x
               for x in bench.reveal_targets(bench.reveal_groups(slow)))  # fmt: skip


def test_compare_reveal_alternates_modes_and_stops_a_configuration_past_its_target(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module = sys.modules["bench_reveal"]
    calls: list[tuple[str, float | None]] = []

    def tried(dataset: str, counts: str, extra: list[str], timeout: float,
              limit: float | None = None) -> dict[str, Any]:  # fmt: skip
        mode = extra[-1]
        calls.append((f"{dataset} {' '.join(extra)}", limit))
        if "ot" in extra:
            return bench.failed(dataset, counts, extra,
                                bench.RunFailed(f"timed out after {limit:.0f} s"))  # fmt: skip
        return reveal_record("x", mode, 1.0) | {"identical": True}

    monkeypatch.setattr(module, "tried", tried)
    md = bench.compare_reveal(2, 100.0, tmp_path, ["car", "adult-ot"])
    car = [c for c, _ in calls if c.startswith("car")]
    assert [c.split()[-1] for c in car] == ["counts", "tree", "counts", "tree"]
    ot = [(c, limit) for c, limit in calls if "--helper ot" in c]
    assert len(ot) == 1 and ot[0][1] == 360.0  # stopped at its target, not run again
    assert dict(calls)[car[0]] == 400.0  # no target: four receive deadlines
    doc = json.loads((tmp_path / "reveal.json").read_text())
    assert doc["repeat"] == 2 and len(doc["runs"]) == 5
    assert (tmp_path / "reveal.md").read_text() == md
    assert "under 360 s: no (stopped: timed out after 360 s)" in md


def test_ten_million_rows_run_only_when_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module = sys.modules["bench_reveal"]
    seen: list[str] = []

    def tried(dataset: str, counts: str, extra: list[str], timeout: float,
              limit: float | None = None) -> dict[str, Any]:  # fmt: skip
        seen.append(dataset)
        return reveal_record("x", extra[-1], 1.0) | {"identical": True}

    monkeypatch.setattr(module, "tried", tried)
    bench.compare_reveal(1, 100.0, tmp_path, None)
    assert "synthetic:1000000,20,1" in seen and "synthetic:10000000,20,1" not in seen
    seen.clear()
    bench.compare_reveal(1, 100.0, tmp_path, ["ten-million"])
    assert seen == ["synthetic:10000000,20,1"]  # --reveal tree only


def test_against_alternates_the_checkouts_and_compares_their_medians(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--reveal --against DIR``: every run made by both checkouts, this one first in even
    repeats; the table gives each side's median, their ratio, the median of the pairs'
    ratios, and the verdict at 1.10x for --reveal tree."""
    reveal = sys.modules["bench_reveal"]
    made: list[tuple[str, str, int]] = []
    other = bench.Checkout(tmp_path, "/usr/bin/python3")

    def fake(dataset: str, counts: str, extra: list[str], timeout: float, limit: Any = None,
             checkout: Any = None) -> dict[str, Any]:  # fmt: skip
        side = "against" if checkout == other else "this"
        mode = extra[extra.index("--reveal") + 1]
        made.append((side, mode, len(made)))
        wall = {"this": 1.2, "against": 1.0}[side] * (2 if mode == "tree" else 1)
        return record(dataset, 3, "sites", wall)

    monkeypatch.setattr(reveal, "tried", fake)
    md = reveal.compare_against(2, 60.0, tmp_path, other, ["car"])
    sides = [s for s, m, _ in made if m == "tree"]
    assert sides == ["this", "against", "against", "this"]
    row = next(line for line in md.splitlines() if line.startswith("| car") and "| tree |" in line)
    assert "| 2.40 (2.40-2.40) | 2.00 (2.00-2.00) | 1.200 | 1.200 |" in row
    assert "at most 1.10x: no (1.200x, pairs 1.200x)" in md
    assert (tmp_path / "reveal-against.json").is_file()


@pytest.mark.processes
@pytest.mark.timeout(300)
def test_the_intersection_benchmark_runs_every_site_and_checks_the_common_records(
    tmp_path: Path,
) -> None:
    """Its smoke run: 3 site processes align 400 ids each on the 200 they hold in common, and
    the table says so."""
    code = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_intersection.py"), "--sizes", "400",
         "--out", str(tmp_path)], capture_output=True, text=True, timeout=280, cwd=ROOT,
    )  # fmt: skip
    assert code.returncode == 0, code.stderr
    doc = json.loads((tmp_path / "intersection.json").read_text())
    (point,) = doc["points"]
    assert (point["ids_per_site"], point["common"], point["runs"]) == (400, 200, 1)
    assert point["x25519"] > 3 * 400 and "| 400 | 200 | 1 |" in code.stdout
