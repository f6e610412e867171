"""Our C4.5 against Weka's J48 3.6 on a few small tables, node for node: the same tests,
thresholds, leaf weights and classes, with error-based pruning (multiway and binary nominal
splits) and with reduced-error pruning on the rows J48 holds out (scripts/compare_j48.py
runs all datasets).

Marked ``weka``: it needs Java and the Weka jar (``apt-get install weka``; CI installs them)
and is skipped, saying so, only when they are absent."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from mpc.datasets import Table, weather
from mpc.learners.tree import node_count

from .. import datasets

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.weka


def load_script() -> ModuleType:
    path = ROOT / "scripts" / "compare_j48.py"
    spec = importlib.util.spec_from_file_location("compare_j48_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


compare = load_script()


@pytest.fixture(scope="module")
def jar() -> Path:
    found = compare.weka_jar()
    if found is None:
        pytest.skip("needs java and Weka 3.6 (apt-get install weka; .ci/run installs it)")
    return found


def sample(name: str, rows: int | None) -> Table:
    """``rows`` rows of dataset ``name`` drawn with a fixed seed (all when None)."""
    if name == "weather":
        return weather()
    table, _ = datasets.table(name)
    if rows is None or rows >= table.n_rows:
        return table
    pick = np.sort(np.random.default_rng(7).choice(table.n_rows, rows, replace=False))
    return table.subset(pick)


TABLES = {
    "weather": None,  # nominal, Quinlan's table
    "car": 300,  # nominal, four classes
    "house-votes-84": None,  # nominal with unknown values ("?")
    "australian": 300,  # continuous and nominal
    "autos": None,  # continuous with unknown values, six classes
}


@pytest.mark.datasets
@pytest.mark.parametrize("mode", ["error-based", "binary", "reduced-error"])
@pytest.mark.parametrize("name", list(TABLES))
def test_same_tree_as_j48(jar: Path, tmp_path: Path, name: str, mode: str) -> None:
    table = sample(name, TABLES[name])
    values, classes = compare.declared_values(table)
    arff = tmp_path / f"{name}.arff"
    compare.write_arff(arff, table, values, classes)
    params, options = compare.MODES[mode]
    prune_rows = None
    if mode == "reduced-error":  # the rows J48 -R -N 5 holds out
        prune_rows = compare.j48_prune_rows(table.target, classes, compare.J48_PRUNE_FOLDS)
        assert abs(len(prune_rows) - table.n_rows / 5) < 1
    ours = compare.fit_ours(table, values, classes, params, prune_rows=prune_rows).tree_
    j48 = compare.run_j48(jar, arff, arff, options, predictions=False)
    assert compare.tree_differences(ours, j48["tree"]) == [], j48["text"]
    assert node_count(ours) == j48["size"] == j48["tree"].size


def test_the_tree_reader_sees_a_difference(jar: Path, tmp_path: Path) -> None:
    """The comparison can fail: J48's unpruned weather tree is not our pruned one of a
    table with one row's class flipped."""
    table = weather()
    values, classes = compare.declared_values(table)
    arff = tmp_path / "weather.arff"
    compare.write_arff(arff, table, values, classes)
    j48 = compare.run_j48(jar, arff, arff, ["-U"], predictions=False)
    target = table.target.copy()
    target[2] = "no" if target[2] == "yes" else "yes"
    changed = Table(
        name=table.name, attributes=table.attributes, kinds=table.kinds,
        columns=table.columns, target=target, class_name=table.class_name,
        source=table.source,
    )  # fmt: skip
    ours = compare.fit_ours(changed, values, classes, {"pruning": "error-based"}).tree_
    assert compare.tree_differences(ours, j48["tree"]) != []
