"""``mpc train`` and ``mpc datasets`` as a user runs them: accuracy on UCI data, exports, errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from mpc.learners.tree import Split, from_json, predict_one

from .. import datasets
from ..conftest import run_mpc, run_mpc_json

# The acceptance figures of the reference learners (Weka J48 reaches about 0.96, 0.86, 0.85).
ACCURACY_FLOORS = [
    (("--learner", "id3", "--dataset", "mushroom", "--cv", "10"), 0.999),
    (("--learner", "c45", "--dataset", "house-votes-84", "--cv", "10"), 0.94),
    (("--learner", "c45", "--dataset", "adult"), 0.84),
    (("--learner", "c45", "--dataset", "australian", "--cv", "10"), 0.83),
]


@pytest.mark.datasets
@pytest.mark.parametrize(
    ("args", "floor"), ACCURACY_FLOORS, ids=[a[3] + "-" + a[1] for a, _ in ACCURACY_FLOORS]
)
def test_reference_learners_reach_their_accuracy(args: tuple[str, ...], floor: float) -> None:
    code, summary = run_mpc_json("train", *args, *datasets.data_args(args[3]), deadline=120)
    assert code == 0, summary
    assert summary["accuracy"] >= floor
    assert summary["nodes"] >= 3 and summary["depth"] >= 1
    matrix = summary["confusion"]
    assert sum(map(sum, matrix)) == summary["test_rows"]


def test_train_weather_exports_quinlans_tree(tmp_path: Path) -> None:
    tree_file, dot_file = tmp_path / "tree.json", tmp_path / "tree.dot"
    code, summary = run_mpc_json(
        "train",
        "--learner",
        "id3",
        "--dataset",
        "weather",
        "--tree-out",
        str(tree_file),
        "--dot",
        str(dot_file),
    )
    assert code == 0
    assert 0.0 <= summary["accuracy"] <= 1.0
    tree = from_json(json.loads(tree_file.read_text()))
    assert isinstance(tree, Split) and tree.attribute == "outlook"
    assert summary["nodes"] == 8 and summary["depth"] == 2
    row = {"outlook": "sunny", "temperature": "cool", "humidity": "high", "windy": "FALSE"}
    assert predict_one(tree, row) == "no"
    assert dot_file.read_text().startswith("digraph")


def test_train_on_a_csv_with_a_class_column(tmp_path: Path) -> None:
    rows = ["a,b,label"] + [f"{i % 2},{i % 3},{'p' if i % 2 else 'n'}" for i in range(30)]
    csv = tmp_path / "toy.csv"
    csv.write_text("\n".join(rows) + "\n")
    code, summary = run_mpc_json(
        "train", "--learner", "id3", "--csv", str(csv), "--class", "label", "--cv", "3"
    )
    assert code == 0
    assert summary["accuracy"] == 1.0  # the class is a function of column a


def test_the_summary_lists_each_column_kind_and_the_bins(tmp_path: Path) -> None:
    rows = ["age,colour,label"] + [
        f"{a},{c},{'y' if a > 20 else 'n'}" for a in range(40) for c in "pq"
    ]
    csv = tmp_path / "people.csv"
    csv.write_text("\n".join(rows) + "\n")
    code, out, err = run_mpc("train", "--csv", str(csv), "--class", "label", "--cv", "2")
    assert code == 0, err
    assert "  age     continuous, 4 bins: <=9.5, (9.5,19.5], (19.5,29.5], >29.5" in out
    assert "  colour  nominal, 2 values" in out
    code, out, _ = run_mpc("train", "--learner", "c45", "--csv", str(csv), "--class", "label")
    assert "  age     continuous, threshold splits" in out
    # --continuous alone sets the kind of the columns it lists; the others keep theirs
    code, summary = run_mpc_json(
        "train", "--csv", str(csv), "--class", "label", "--continuous", "age"
    )
    assert summary["columns"] == [
        {
            "name": "age",
            "kind": "continuous",
            "cut_points": [9.5, 19.5, 29.5],
            "bins": ["<=9.5", "(9.5,19.5]", "(19.5,29.5]", ">29.5"],
        },
        {"name": "colour", "kind": "nominal", "values": 2},
    ]


def test_malformed_csv_is_a_one_line_error_with_exit_code_2(tmp_path: Path) -> None:
    csv = tmp_path / "broken.csv"
    csv.write_text("a,b,label\n1,2,x\n3,y\n5,6,x\n")
    code, _, err = run_mpc("train", "--csv", str(csv), "--class", "label")
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert f"{csv}:3: column 'label' (field 3)" in lines[0]
    assert "Traceback" not in err


def test_c45_on_numbers_at_the_ends_of_the_floats_and_an_infinity(tmp_path: Path) -> None:
    """C4.5 splits a column of numbers near the largest float (their midpoint does not
    overflow) with no warning; ``inf`` in a continuous column is one line naming its cell."""
    rows = ["x,label"] + ["1e308,a", "1.7e308,b"] * 6
    csv = tmp_path / "huge.csv"
    csv.write_text("\n".join(rows) + "\n")
    tree_out = tmp_path / "tree.json"
    args = ("--learner", "c45", "--csv", str(csv), "--class", "label", "--pruning", "none")
    code, _, err = run_mpc("train", *args, "--cv", "2", "--tree-out", str(tree_out))
    assert code == 0 and "Warning" not in err and "Traceback" not in err, err
    tree = from_json(json.loads(tree_out.read_text()))
    assert isinstance(tree, Split) and tree.threshold == 1e308
    csv.write_text("x,label\n1,a\n2,b\ninf,a\n")
    code, _, err = run_mpc("train", *args)
    assert code == 2 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.strip()]
    assert f"{csv}:4: column 'x' (field 1): 'inf' is not a finite number" in line


def test_unknown_class_column_is_a_one_line_error(tmp_path: Path) -> None:
    csv = tmp_path / "toy.csv"
    csv.write_text("a,b\n1,2\n")
    code, _, err = run_mpc("train", "--csv", str(csv), "--class", "nope")
    assert code == 2
    assert "nope" in err and len(err.strip().splitlines()) == 1


def test_datasets_lists_the_embedded_weather_without_a_data_dir(tmp_path: Path) -> None:
    code, _, _ = run_mpc("datasets", "--data-dir", str(tmp_path / "empty"))
    # a data directory that does not exist is an error, not a silent empty listing
    assert code == 2
    code, listing = run_mpc_json("datasets")
    assert code == 0
    names = {d["name"]: d for d in listing["datasets"]}
    assert names["weather"]["rows"] == 14


@pytest.mark.datasets
def test_datasets_without_a_data_directory_lists_the_shipped_tables_and_says_how_to_fetch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MPC_NO_DATA_DIR", "1")
    code, out, _ = run_mpc("datasets")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "data directory: none found; the tables the package ships"
    shown = [line.split()[0] for line in lines[2:-1]]
    assert shown == ["house-votes-84", "tic-tac-toe", "car", "weather", "kr-vs-kp"]
    assert lines[-1] == (
        "not found: adult, mushroom, autos, australian, nursery (mpc datasets fetch NAME "
        "downloads one)"
    )
    code, _, err = run_mpc("train", "--dataset", "nursery")
    assert code == 2 and "`mpc datasets fetch nursery` downloads it" in err


@pytest.mark.datasets
def test_train_c45_with_error_based_pruning() -> None:
    args = ("train", "--learner", "c45", "--dataset", "house-votes-84", "--cv", "10",
            *datasets.data_args("house-votes-84"))  # fmt: skip
    code, summary = run_mpc_json(*args, "--pruning", "error-based", deadline=120)
    assert code == 0, summary
    # Weka's J48 reaches 96.3% by 10-fold cross-validation on this table
    assert summary["accuracy"] >= 0.95
    assert summary["params"]["pruning"] == "error-based"
    assert summary["params"]["confidence"] == 0.25
    code, harder = run_mpc_json(*args, "--pruning", "error-based", "--confidence", "0.01")
    assert code == 0 and harder["nodes"] <= summary["nodes"]
    code, _, err = run_mpc(*args, "--pruning", "error-based", "--confidence", "0.9")
    assert code == 2 and "confidence must be a number in (0, 0.5], got 0.9" in err


def test_cross_validation_bins_each_fold_on_its_training_rows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """id3's cut points are learned inside each fold, on the fold's training rows only."""
    from mpc.datasets import Discretizer, Table
    from parties.cli import train

    fitted: list[int] = []
    fit = Discretizer.fit.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Discretizer], table: Table, bins: int, **kw: Any) -> Discretizer:
        fitted.append(table.n_rows)
        return fit(cls, table, bins, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Discretizer, "fit", classmethod(spy))
    path = tmp_path / "t.csv"
    rows = [f"{i % 7}.5,{i % 3},{'a' if i % 7 < 3 else 'b'}" for i in range(40)]
    path.write_text("x,z,c\n" + "\n".join(rows) + "\n")
    parser = argparse.ArgumentParser()
    train.add_train_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["train", "--csv", str(path), "--class", "c", "--continuous", "x", "--cv", "4", "--json"]
    )
    assert train.run_train(args) == 0
    assert json.loads(capsys.readouterr().out)["evaluation"].startswith("4-fold")
    # four folds of 30 training rows each, then the printed tree on all 40 rows
    assert fitted == [30, 30, 30, 30, 40]
