"""``mpc run ppid3 --splits threshold`` across processes over TCP: numbers split in two at
the plain learner's candidates, in both ways of counting, the private tree identical to plain
ID3's with the same rule and new records classified as plain prediction classifies them
(missing numbers included); ``--counts psi`` refuses the option in one line."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ..conftest import run_mpc, run_mpc_json

pytestmark = pytest.mark.processes


def numbers_csv(path: Path, n: int = 120) -> Path:
    """A table of two numbers (one with blanks), a repeated-value number and a category."""
    rng = np.random.default_rng(7)
    age = rng.integers(18, 80, n)
    income = np.round(rng.normal(40, 15, n), 1)
    visits = rng.integers(0, 4, n)
    kind = rng.choice(["a", "b", "c"], n)
    risk = np.where((age > 50) & (income < 45) | (visits == 3), "high", "low")
    risk[rng.random(n) < 0.08] = "mid"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["age", "income", "visits", "kind", "risk"])
        for i in range(n):
            inc = "" if i % 9 == 0 else f"{income[i]}"
            w.writerow([age[i], inc, visits[i], kind[i], risk[i]])
    return path


def thresholds_of(tree: dict[str, Any]) -> list[tuple[str, float]]:
    out = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if "threshold" in node:
            assert list(node["children"]) == ["<=", ">"] and node["missing"] == "<="
            out.append((node["attribute"], node["threshold"]))
        stack += list(node.get("children", {}).values())
    return out


@pytest.mark.parametrize(("reveal", "helper", "bins", "shuffles"),
                         [("counts", "sites", None, False), ("tree", "sites", None, False),
                          ("tree", "dealer", "3", False), ("tree", "sites", None, True),
                          ("tree", "dealer", "3", True)])  # fmt: skip
def test_numbers_split_at_thresholds_as_plain_id3_splits_them(
    tmp_path: Path, reveal: str, helper: str, bins: str | None, shuffles: bool
) -> None:
    """With one-hot columns, and with every number counted by shuffles (``--shuffle-from
    0``; by default the numbers of more than 64 codes are, here ``income``)."""
    path = numbers_csv(tmp_path / "numbers.csv")
    extra = ("--bins", bins) if bins else ()
    if reveal == "tree":  # every number by shuffles, or none (past any number's codes)
        extra += ("--shuffle-from", "0" if shuffles else "1000000")
    code, doc = run_mpc_json(
        "run", "ppid3", "--csv", str(path), "--class", "risk", "--sites", "3", "--splits",
        "threshold", "--reveal", reveal, "--helper", helper, "--max-depth", "4",
        "--test-split", "0.3", *extra, "--json", deadline=150,
    )  # fmt: skip
    assert code == 0, doc
    result = doc["result"]
    assert result["identical"] is True
    assert result["accuracy"]["test_predictions_equal_plain"] is True
    found = thresholds_of(result["tree"])
    assert found and {a for a, _ in found} <= {"age", "income", "visits"}
    if bins:  # the cut points of 3 bins: at most 2 per number
        assert all(len({t for a2, t in found if a2 == a}) <= 2 for a, _ in found)
    assert found == thresholds_of(result["plain_tree"])
    shuffled = sum(p["metrics"]["crypto"].get("shuffled", 0) for p in doc["parties"].values())
    assert (shuffled > 0) == shuffles, doc["parties"]


def test_the_set_intersection_counts_refuse_threshold_splits(tmp_path: Path) -> None:
    path = numbers_csv(tmp_path / "numbers.csv", n=20)
    code, _, err = run_mpc(
        "run", "ppid3", "--csv", str(path), "--class", "risk", "--splits", "threshold",
        "--counts", "psi",
    )  # fmt: skip
    assert code != 0
    assert "--splits threshold needs --counts fast" in err, err
    assert "Traceback" not in err
