"""``mpc train --splits threshold`` and ``mpc predict`` as commands: a model of threshold
splits saved, read back and applied to a file with missing numbers as the estimator does."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from mpc.datasets import load_csv
from mpc.learners.id3 import ID3Classifier

from ..conftest import run_mpc


def test_mpc_train_saves_threshold_splits_that_mpc_predict_reads_as_the_estimator_does(
    tmp_path: Path,
) -> None:
    """``mpc train --splits threshold --model-out`` then ``mpc predict``: the predictions of
    a file with blank (missing) numbers are the estimator's, and the model file is refused
    when its tree and its kind of split disagree."""
    rng = np.random.default_rng(7)
    x = rng.normal(50, 15, 400).round(1)
    z = rng.integers(0, 3, 400)
    y = np.where((x > 45) & (x < 65) | (z == 2), "yes", "no")
    rows = [
        [f"{a}" if i % 11 else "", f"z{b}", c]
        for i, (a, b, c) in enumerate(zip(x, z, y, strict=True))
    ]
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([["x", "z", "label"], *rows])
    model = tmp_path / "model"
    code, _, err = run_mpc("train", "--csv", str(path), "--class", "label", "--splits",
                           "threshold", "--model-out", str(model), "--max-depth", "4")  # fmt: skip
    assert code == 0, err
    code, out, err = run_mpc("predict", "--model", str(model), "--csv", str(path))
    assert code == 0, err
    got = [line.split(",")[1] for line in out.strip().splitlines()[1:]]
    table = load_csv(path, class_column="label")
    want = ID3Classifier(splits="threshold", bins=None, max_depth=4).fit(table).predict(table)
    assert got == list(want)
    assert any(r[0] == "" for r in rows)
    code, _, err = run_mpc("train", "--csv", str(path), "--class", "label", "--learner", "c45",
                           "--splits", "threshold")  # fmt: skip
    assert code != 0 and "--splits" in err


def test_mpc_train_writes_a_tree_as_deep_as_its_rows(tmp_path: Path) -> None:
    """Alternating classes along one number make a chain of 1,199 splits; ``mpc train``
    writes its JSON (nested one level per split) and its model, prints its summary, and
    ``mpc predict`` reads the model back."""
    path = tmp_path / "deep.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(
            [["x", "label"], *([i, "a" if i % 2 else "b"] for i in range(1200))]
        )
    out_json, model = tmp_path / "tree.json", tmp_path / "model"
    code, out, err = run_mpc("train", "--csv", str(path), "--class", "label", "--splits",
                             "threshold", "--tree-out", str(out_json), "--model-out",
                             str(model))  # fmt: skip
    assert code == 0, err
    assert "depth 1199" in out and out_json.stat().st_size > 0
    code, out, err = run_mpc("predict", "--model", str(model), "--csv", str(path))
    assert code == 0, err
    assert "accuracy:   1.0000" in err
