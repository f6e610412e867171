"""What ``mpc run ppid3-classify`` leaves besides the predictions: the per-record class
counts (``--scores``) equal the plain tree's leaf distributions, in the paper's mode (the class
site's counts) and with only the tree opened (selected on shares, opened to the receiver), a
labelled file at the class site is evaluated there (accuracy and confusion matrix, as computed
from plain ID3's predictions), and each site counts the values its part never saw."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest

from mpc.datasets import load_csv, load_dataset
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import to_json

from ..conftest import run_mpc

pytestmark = [pytest.mark.processes, pytest.mark.timeout(300)]


def _labelled(path: Path, rows: list[int], unseen: int = 0) -> Path:
    """car's records ``rows`` with an id and the class; the first ``unseen`` of them with a
    ``buying`` value that no training record has."""
    table, _ = load_dataset("car")
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["id", *table.attributes, "class"])
        for k, i in enumerate(rows):
            values = [str(table.column(a)[i]) for a in table.attributes]
            if k < unseen:
                values[table.attributes.index("buying")] = "priceless"
            out.writerow([f"r{i}", *values, str(table.target[i])])
    return path


def _node_of(tree: dict[str, Any], row: dict[str, str]) -> dict[str, Any]:
    """The node of the plain tree that classifies ``row``: its leaf, or the node where its
    value was never seen."""
    while "children" in tree:
        child = tree["children"].get(row[tree["attribute"]])
        if child is None:
            return tree
        tree = child
    return tree


def _train(tmp_path: Path, *mode: str) -> tuple[Path, dict[str, Any]]:
    models = tmp_path / "models"
    code, out, err = run_mpc(
        "run", "ppid3", "--dataset", "car", "--sites", "3", "--max-depth", "3", *mode,
        "--model-out", str(models), "--json", deadline=200,
    )  # fmt: skip
    assert code == 0, err
    return models, json.loads(out)["result"]


@pytest.mark.parametrize("mode", [("--counts", "fast", "--reveal", "counts"), ()], ids=repr)
def test_scores_are_the_plain_leaf_counts_and_the_class_site_evaluates(
    tmp_path: Path, mode: tuple[str, ...]
) -> None:
    models, trained = _train(tmp_path, *mode)
    rows = random.Random(7).sample(range(1728), 300)
    new = _labelled(tmp_path / "new.csv", rows, unseen=5)
    predictions = tmp_path / "predictions.csv"
    code, out, err = run_mpc(
        "run", "ppid3-classify", "--model", str(models), "--csv", str(new), "--id", "id",
        "--scores", "--predictions-out", str(predictions), "--json", deadline=200,
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)["result"]

    part = trained["partition"]
    table, _ = load_dataset("car")
    # the default mode (only the tree opened) splits by Gini; the scores come from the shares
    plain = ID3Classifier(max_depth=3, criterion="gini" if not mode else "entropy").fit(
        table, attribute_order=[a for s in part["sites"] for a in s],
        sites={a: i for i, s in enumerate(part["sites"]) for a in s},
    )  # fmt: skip
    tree = to_json(plain.tree_)
    joined = load_csv(new, "class", id_column="id")
    records = [
        dict(zip(joined.attributes, r, strict=True)) for r in zip(*joined.columns, strict=True)
    ]
    expected = {
        f"r{i}": _node_of(tree, rec)["counts"] for i, rec in zip(rows, records, strict=True)
    }
    with predictions.open() as fh:
        got = list(csv.DictReader(fh))
    assert len(got) == 300
    classes = sorted(tree["counts"])
    assert list(got[0]) == ["id", "class", *(f"n({c})" for c in classes)]
    for r in got:
        assert {c: float(r[f"n({c})"]) for c in classes} == {
            c: float(expected[r["id"]].get(c, 0)) for c in classes
        }, r["id"]

    # the class site's evaluation is plain ID3's predictions against the file's classes
    predicted = [str(p) for p in plain.predict(joined)]
    truth = [str(t) for t in joined.target]
    ev = result["evaluation"]
    assert ev["records"] == 300
    assert ev["accuracy"] == pytest.approx(
        sum(p == t for p, t in zip(predicted, truth, strict=True)) / 300
    )
    index = {c: k for k, c in enumerate(ev["classes"])}
    confusion = [[0] * len(index) for _ in index]
    for t, p in zip(truth, predicted, strict=True):
        confusion[index[t]][index[p]] += 1
    assert ev["confusion"] == confusion
    # buying is split on by its owner at depth <= 3: the five priceless records are counted
    owner = next(n for n, s in zip(part["site_names"], part["sites"], strict=True) if "buying" in s)
    (warning,) = [w for w in result["unseen"] if w.startswith(owner)]
    assert "buying: 5" in warning
