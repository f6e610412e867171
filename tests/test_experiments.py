"""The Hybrid-ID3 experiment script: one run's SMC-only tree scores as plain ID3 on the same
split, and Table 1's A and C are computed from the runs as defined in Section 5.4."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from mpc.datasets import Discretizer, load_dataset, resolve_data_dir
from mpc.learners.evaluation import accuracy, train_test_split
from mpc.learners.id3 import ID3Classifier
from parties.hybrid_system import split_attributes

ROOT = Path(__file__).resolve().parent.parent


def script(name: str = "hybrid_id3") -> ModuleType:
    """An experiment script of ``scripts/experiments`` as a module."""
    path = ROOT / "scripts" / "experiments" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_experiments", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(120)
def test_one_run_and_table1() -> None:
    data_dir = resolve_data_dir(None)
    if data_dir is None or not (data_dir / "tic-tac-toe").exists():
        pytest.skip("tic-tac-toe is not in the data directory (set MPC_DATA_DIR)")
    exp = script()
    job = {
        "dataset": "tic-tac-toe", "data_dir": None, "bins": 4, "max_depth": None,
        "seed": 3, "theta": 0.45, "groups": 4, "windows": [2], "rand": True, "smc": True,
    }  # fmt: skip
    run = exp.one_run(job)
    # SMC-only is plain ID3 on the same split and partition
    table, _ = load_dataset("tic-tac-toe", data_dir)
    tr, te = train_test_split(table.target, 0.2, seed=3)
    train, test = table.subset(tr), table.subset(te)
    if "continuous" in train.kinds:
        d = Discretizer.fit(train, 4)
        train, test = d.transform(train), d.transform(test)
    alice, bob = split_attributes(list(train.attributes), 3)
    plain = ID3Classifier().fit(
        train, attribute_order=alice + bob, sites={a: 0 for a in alice} | {a: 1 for a in bob}
    )
    assert run["smc-only/None"]["accuracy"] == accuracy(test.target, plain.predict(test))
    t1 = exp.table1([run], [2])["tic-tac-toe"][2]
    h, r, s = run["hybrid/2"], run["randomization-only/None"], run["smc-only/None"]
    assert t1["A"] == pytest.approx(h["accuracy"] - r["accuracy"])
    assert t1["C"] == pytest.approx(h["dot_products"] / s["dot_products"])
    assert t1["C_gains"] == pytest.approx(h["smc_gains"] / s["smc_gains"])
    assert "tic-tac-toe (ours)" in exp.table1_markdown({"tic-tac-toe": {2: t1}}, [2])


@pytest.mark.timeout(120)
def test_adaptive_modification_experiment_one_seed(tmp_path: Path) -> None:
    data_dir = resolve_data_dir(None)
    if data_dir is None or not (data_dir / "house-votes-84").exists():
        pytest.skip("house-votes-84 is not in the data directory (set MPC_DATA_DIR)")
    exp = script("adaptive_modification")
    table, _ = load_dataset("house-votes-84", data_dir)
    small = table.subset(np.arange(120))
    run = exp.one_seed(small, 6, 2, 0.25, best_first_n=3)
    for method in ("adaptive", "best-first", "undo-no-gain"):
        r = run[method]
        assert r["F_after"] <= 0.25 and len(r["cells"]) == r["modifications"]
        assert r["trace"][-1]["modifications"] == r["modifications"]
        assert r["E_peak"] == max(t["E"] for t in r["trace"]) >= r["E_after"]
    assert run["undo-no-gain"]["E_after"] >= run["undo-no-gain"]["E_before"]
    assert run["best-first"]["modifications"] <= 3
    common = {tuple(c) for c in run["adaptive"]["cells"]} & {
        tuple(c) for c in run["best-first"]["cells"]
    }
    assert run["common"] == len(common)
    meta = {"pruning": "error-based", "best_first_n": 3, "seconds": 1.0, "machine": "m",
            "jobs": 1, "load_start": 0.5, "load_end": 0.5}  # fmt: skip
    low = {**run, "seed": 3, "adaptive": {**run["adaptive"], "E_before": 0.05}}
    md = exp.table_md([run, low], 6, 0.25, meta)
    assert "| 2 |" in md and "| 3* |" in md and "57.90%" in md
    assert "### All 2 runs" in md and "### The 1 runs that start as low as the paper" in md
    assert exp.spread([1, 2, 3, 4]) == {"runs": 4, "median": 2.5, "q1": 1.75, "q3": 3.25,
                                        "min": 1.0, "max": 4.0}  # fmt: skip
    # the outputs again from a saved results.json, with the comparison with the paper
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps({**meta, "confidential": 6, "threshold": 0.25, "runs": [run, low]}))
    assert exp.main(["--from-json", str(saved), "--out", str(tmp_path / "again")]) == 0
    again = (tmp_path / "again" / "table.md").read_text()
    assert "### Against the paper" in again and "(1 runs with E before <= 5.26%)" in again
    assert {p.name for p in (tmp_path / "again").iterdir()} == {
        "results.json",
        "table.md",
        "boxplot.png",
        "e_f.png",
    }
    # a smoke run never writes into results/
    quick = exp.output_folder
    ns = argparse.Namespace(quick=True, out=None)
    folder = quick(ns)
    assert (ROOT / "results").resolve() not in folder.resolve().parents
    folder.rmdir()
    with pytest.raises(SystemExit, match="never into results"):
        quick(argparse.Namespace(quick=True, out=str(ROOT / "results" / "adaptive-modification")))
    assert quick(argparse.Namespace(quick=True, out=str(tmp_path))) == tmp_path.resolve()


@pytest.mark.processes
@pytest.mark.timeout(180)
def test_bench_quick_runs_and_writes_the_table(tmp_path: Path) -> None:
    import json
    import subprocess

    data_dir = resolve_data_dir(None)
    if data_dir is None or not (data_dir / "house-votes-84").exists():
        pytest.skip("house-votes-84 is not in the data directory (set MPC_DATA_DIR)")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--quick", "--out", str(tmp_path),
         "--timeout", "60"],
        capture_output=True, text=True, timeout=170, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert [r["counts"] for r in doc["runs"]] == ["psi", "fast", "fast"]
    assert all(r["identical"] for r in doc["runs"])
    fast = doc["runs"][1]
    assert set(fast["parties"]) == {"site1", "site2", "site3", "dealer"}
    assert all(p["peak_rss_mb"] > 0 and p["bytes_sent"] > 0 for p in fast["parties"].values())
    md = (tmp_path / "bench.md").read_text()
    assert md.count("\n| ") == 4 and "| house-votes-84 | 435 | 16 | 3 | fast |" in md


def test_cdtl_experiment_combines_runs_by_median_ets_and_mean_accuracy() -> None:
    exp = script("cdtl")
    base = {"experiment": "2", "dataset": "d", "sensitive": "s", "class": "c", "rows": 9,
            "nominal_splits": "binary", "suppressed_per_fold": [0, 0], "subtrees": 3}  # fmt: skip
    runs = [
        {**base, "wall_s": 2.0, "accuracy": {"cnl": acc, "cdtl": acc / 2, "cdbsl": 0.5},
         "client_seconds": {"cnl": 1.0, "cdtl": ets, "cdbsl": 0.1}, "ets": ets,
         "ets_cpu": ets - 0.1, "ms": 0.4, "ets_per_fold": [ets, ets], "ms_per_fold": [0.4, 0.4]}
        for acc, ets in ((0.9, 1.02), (0.8, 0.91), (0.7, 0.95))
    ]  # fmt: skip
    r = exp.combine(runs)
    assert r["runs"] == 3 and r["ets"] == 0.95 and r["ets_range"] == [0.91, 1.02]
    assert r["ets_cpu"] == pytest.approx(0.85)
    assert r["accuracy"]["cnl"] == pytest.approx(0.8)
    assert r["accuracy"]["cdtl"] == pytest.approx(0.4)
    assert sorted(r["ets_per_fold"]) == [0.91, 0.91, 0.95, 0.95, 1.02, 1.02]
    md = exp.markdown([r])
    assert "| binary | 3 | 0.8000 | 0.4000 | 0.5000 | 0.950 (0.910-1.020) | 0.850 | 0.400 |" in md
