"""The experiment scripts. Hybrid-ID3: one run's SMC-only tree scores as plain ID3 on the same
split; Table 1's A and C are computed from the runs as defined in Section 5.4; smoke runs stay
out of results/, runs are saved before the figures and resume after an interruption, and each
party's coin seeds come from its own SeedSequence child."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from mpc.datasets import Discretizer
from mpc.learners.evaluation import accuracy, train_test_split
from mpc.learners.id3 import ID3Classifier
from parties.systems.hybrid import split_attributes

from .. import datasets

ROOT = Path(__file__).resolve().parents[2]


def script(name: str = "hybrid_id3") -> ModuleType:
    """An experiment script of ``scripts/experiments`` as a module."""
    path = ROOT / "scripts" / "experiments" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_experiments", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.datasets
@pytest.mark.timeout(120)
def test_one_run_and_table1() -> None:
    table, _ = datasets.table("tic-tac-toe")
    exp = script()
    job = {
        "dataset": "tic-tac-toe", "data_dir": None, "bins": 4, "max_depth": None,
        "seed": 3, "theta": 0.45, "groups": 4, "windows": [2], "rand": True, "smc": True,
    }  # fmt: skip
    run = exp.one_run(job)
    # SMC-only is plain ID3 on the same split and partition
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
    assert t1["runs"] == 1 and t1["A"]["runs"] == 1 and t1["A"]["sd"] == 0.0
    assert t1["A"]["mean"] == pytest.approx(h["accuracy"] - r["accuracy"])
    # C: the share of the hybrid tree's gain computations done by SMC (Section 5.4); SMC-only
    # does all of its own by SMC
    assert t1["C"]["mean"] == pytest.approx(h["smc_gains"] / h["gain_computations"])
    assert 0 < t1["C"]["mean"] < 1 and s["smc_gains"] == s["gain_computations"]
    assert t1["dot_products"]["mean"] == pytest.approx(h["dot_products"] / s["dot_products"])
    md = exp.table1_markdown({"tic-tac-toe": {2: t1}}, [2], {"tic-tac-toe": None})
    assert "| tic-tac-toe | 2 | 1 |" in md


def _fake_run(job: dict[str, Any]) -> dict[str, Any]:
    """A run's record as ``one_run`` writes it, without building trees (for the script's
    bookkeeping tests)."""
    out = {k: v for k, v in job.items() if k not in ("data_dir", "coin_seeds")}
    tags = ["randomization-only/None", *(f"hybrid/{w}" for w in job["windows"])]
    tags += ["smc-only/None"] if job["smc"] else []
    for i, tag in enumerate(tags):
        out[tag] = {"accuracy": 0.5 + 0.01 * i + 0.001 * job["seed"], "dot_products": 10 + i,
                    "smc_gains": i, "gain_computations": 20, "nodes": 5}  # fmt: skip
    return out


def test_quick_runs_write_to_a_scratch_folder_never_under_results() -> None:
    exp = script()
    args = exp.parse(["--quick"])
    try:
        assert not Path(args.out).resolve().is_relative_to((ROOT / "results").resolve())
        assert Path(args.out).is_dir() and not any(Path(args.out).iterdir())
    finally:
        Path(args.out).rmdir()
    assert exp.parse([]).out == str(ROOT / "results" / "hybrid-id3") and exp.parse([]).repeats == 10
    with pytest.raises(SystemExit) as stop:
        exp.parse(["--quick", "--out", str(ROOT / "results" / "hybrid-id3")])
    assert stop.value.code == 2


def test_a_missing_matplotlib_stops_the_script_before_any_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    exp = script()
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(exp, "one_run", lambda job: calls.append(job) or _fake_run(job))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    with pytest.raises(SystemExit, match="matplotlib is missing"):
        exp.main(["--quick", "--out", str(tmp_path), "--datasets", "tic-tac-toe"])
    assert calls == [] and not (tmp_path / "results.json").exists()


@pytest.mark.parametrize(("name", "stub"), [("adaptive_modification", "one_seed"), ("cdtl", "run")])
def test_the_other_experiments_also_say_so_before_any_run(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    stub: str,
) -> None:
    exp = script(name)
    calls: list[object] = []
    monkeypatch.setattr(exp, stub, lambda *a, **k: calls.append(a))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    with pytest.raises(SystemExit) as stop:
        exp.main(["--quick", "--out", str(tmp_path)])
    assert calls == [] and not any(tmp_path.iterdir())
    assert stop.value.code != 0
    said = f"{stop.value.code} {capsys.readouterr().err}"
    assert "matplotlib" in said and "[experiments]" in said  # what is missing, how to install


def test_runs_are_saved_before_the_figures_and_an_interrupted_run_resumes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Finished runs go to runs.partial.jsonl as they finish (``--resume`` runs only the
    others, with the same coin seeds); results.json and the tables are written before the
    figures, so a failing plot loses nothing (exit 1) and ``--replot`` redraws."""
    exp = script()
    argv = ["--quick", "--out", str(tmp_path), "--datasets", "tic-tac-toe", "--repeats", "2"]
    seen: list[dict[str, Any]] = []

    def failing(job: dict[str, Any]) -> dict[str, Any]:
        if len(seen) == 5:
            raise RuntimeError("the machine went down")
        seen.append(job)
        return _fake_run(job)

    monkeypatch.setattr(exp, "one_run", failing)
    with pytest.raises(RuntimeError):
        exp.main(argv)
    lines = (tmp_path / "runs.partial.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 5 and not (tmp_path / "results.json").exists()

    again: list[dict[str, Any]] = []
    monkeypatch.setattr(exp, "one_run", lambda job: again.append(job) or _fake_run(job))

    def broken(*args: Any) -> list[str]:
        raise RuntimeError("no display")

    monkeypatch.setattr(exp, "figures", broken)
    assert exp.main([*argv, "--resume"]) == 1  # the figures failed ...
    assert len(again) == 16 - 5  # 2 repeats x 4 groups x 2 θ, 5 of them done before
    assert {exp.job_key(j) for j in seen}.isdisjoint({exp.job_key(j) for j in again})
    # ... after every run was saved, with its parties' coin seeds from the first start
    first = {exp.job_key(j): j["coin_seeds"] for j in seen}
    args = exp.parse(argv)
    args.coins = np.random.SeedSequence(json.loads(lines[0])["coin_entropy"])
    assert {k: j["coin_seeds"] for j in exp.plan(args) if (k := exp.job_key(j)) in first} == first
    doc = json.loads((tmp_path / "results.json").read_text())
    assert len(doc["runs"]) == 16 and doc["runs_per_point"] == 2
    assert not (tmp_path / "runs.partial.jsonl").exists()
    table = (tmp_path / "table1.md").read_text()
    assert "| tic-tac-toe | 2 | 2 |" in table and "mean ± sd [min, max]" in table
    assert "| tic-tac-toe | randomization-only | 2 |" in (tmp_path / "accuracy.md").read_text()
    (tmp_path / "table1.md").unlink()
    assert exp.main([*argv, "--replot", "--no-figures"]) == 0
    assert (tmp_path / "table1.md").read_text() == table


def test_each_party_seeds_its_coins_from_its_own_child() -> None:
    """Every run gets a coin seed for Alice and one for Bob, all different, from children of
    the coin SeedSequence that the public seeds never touch; the same entropy gives the same
    seeds (so ``--coin-entropy`` repeats an experiment), another entropy other seeds, and only
    the coin seeds change with it."""
    exp = script()

    def jobs(entropy: int) -> list[dict[str, Any]]:
        args = exp.parse(["--quick", "--out", "/nonexistent-scratch", "--repeats", "2"])
        args.coins = np.random.SeedSequence(entropy)
        return exp.plan(args)

    a, b, c = jobs(5), jobs(5), jobs(6)
    seeds = [tuple(j["coin_seeds"][p]) for j in a for p in ("alice", "bob")]
    assert len(set(seeds)) == len(seeds) == 2 * len(a)
    assert a == b
    assert all(x["coin_seeds"] != y["coin_seeds"] for x, y in zip(a, c, strict=True))
    strip = [{k: v for k, v in j.items() if k != "coin_seeds"} for j in a]
    assert strip == [{k: v for k, v in j.items() if k != "coin_seeds"} for j in c]
    run = _fake_run(a[0])
    assert "coin_seeds" not in run and "data_dir" not in run


@pytest.mark.timeout(120)
def test_adaptive_modification_experiment_one_seed(tmp_path: Path) -> None:
    exp = script("adaptive_modification")
    table, _ = datasets.table("house-votes-84")
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
@pytest.mark.datasets
@pytest.mark.timeout(180)
def test_bench_quick_runs_and_writes_the_table(tmp_path: Path) -> None:
    import json
    import subprocess

    datasets.needs("house-votes-84")
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


def test_cdtl_experiment_combines_runs_by_their_medians_and_pools_the_folds() -> None:
    exp = script("cdtl")
    base = {"experiment": "2", "protocol": "as-drawn", "link": "loopback", "rows": 9,
            "nominal_splits": "binary", "test_rows": 10, "wall_s": 2.0, "ms": 0.4,
            "ms_held": 0.3, "subtrees_learned": 3}  # fmt: skip
    runs = [
        {**base, "accuracy": {"cnl": acc, "cdtl": acc / 2}, "ets": ets, "ets_cpu": ets - 0.1,
         "client_seconds": {"cnl": 1.0, "cdtl": ets}, "round_trips": {"cdtl": trips},
         "ets_per_fold": [ets, ets], "ms_per_fold": [0.4, 0.4]}
        for acc, ets, trips in ((0.9, 1.02, 12), (0.8, 0.91, 11), (0.7, 0.95, 10))
    ]  # fmt: skip
    r = exp.combine(runs)
    assert r["runs"] == 3 and r["wall_s"] == 6.0
    assert (r["ets"]["median"], r["ets"]["min"], r["ets"]["max"]) == (0.95, 0.91, 1.02)
    assert r["ets_cpu"]["median"] == pytest.approx(0.85)
    assert r["accuracy"]["cnl"]["median"] == pytest.approx(0.8)
    assert r["accuracy"]["cdtl"]["median"] == pytest.approx(0.4)
    assert r["cdtl_round_trips_per_prediction"]["median"] == pytest.approx(1.1)
    assert sorted(r["ets_per_fold"]) == [0.91, 0.91, 0.95, 0.95, 1.02, 1.02]


def test_cdtl_experiment_runs_adults_protocols_on_adult_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    exp = script("cdtl")
    done: list[tuple[str, str]] = []

    def fake_run(e: Any, base: Any, protocol: str, *rest: Any) -> dict[str, Any]:
        done.append((e[0], protocol))
        return {"ets": 1.0, "ms": 0.5, "ms_held": 0.5, "accuracy": {"cdtl": 0.9},
                "round_trips": {"cdtl": 1.0}, "wall_s": 0.0}  # fmt: skip

    monkeypatch.setattr(exp, "plan_of", lambda *a: None)
    monkeypatch.setattr(exp, "run", fake_run)
    monkeypatch.setattr(exp, "combine", lambda runs: runs)
    monkeypatch.setattr(exp, "markdown", lambda *a: "")
    monkeypatch.setattr(exp, "figures", lambda *a: [])
    argv = ["--only", "2,4,5", "--links", "loopback", "--repeats", "2", "--out", str(tmp_path),
            "--adult-protocols", "as-drawn,optimised"]  # fmt: skip
    assert exp.main(argv) == 0
    small = [p for e, p in done if e == "2"]
    assert small == list(exp.PROTOCOL_NAMES) * 2
    for e in ("4", "5"):
        assert [p for x, p in done if x == e] == ["as-drawn", "optimised"]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["protocols"]["adult"] == ["as-drawn", "optimised"]
    with pytest.raises(SystemExit):
        exp.parse_args(["--adult-protocols", "fastest"])
