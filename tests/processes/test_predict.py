"""Saved plain models: ``mpc train --model-out`` then ``mpc predict`` classifies a new CSV as
the learner in memory does, reproduces ``mpc train --predictions-out``, and refuses a model
file that was edited or is of another learner, and a file without one of the model's columns.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.datasets import Discretizer, Table, load_csv
from mpc.learners.c45 import C45Classifier
from mpc.learners.id3 import ID3Classifier
from mpc.learners.model_file import ModelError, SavedModel, new_model_id, write_model
from mpc.learners.plain_model import load_plain_model
from parties.cli import main

from .. import datasets
from ..conftest import run_mpc


def cli(*argv: str) -> tuple[int, str, str]:
    """``mpc ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    return path


def read_predictions(path: Path) -> list[tuple[str, str]]:
    with path.open(newline="") as fh:
        header, *rows = list(csv.reader(fh))
    assert header == ["id", "class"]
    return [(i, c) for i, c in rows]


def one_error_line(code: int, err: str) -> str:
    """The single ``mpc: error: ...`` line of a refused command."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("mpc: error: "), err
    return lines[0]


# --------------------------------------------------------------------------- (a) random tables

CELLS = {
    "text": st.sampled_from(["a", "b", "c", "?"]),
    "int": st.sampled_from(["0", "1", "2", "7", "?"]),
    "float": st.sampled_from(["-1.5", "0.25", "2", "3.75", "10", "?"]),
}


@st.composite
def csv_tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    """A header and rows: 1-4 columns of words, integers or decimals (``?`` missing), then a
    class column of up to three classes."""
    kinds = draw(st.lists(st.sampled_from(sorted(CELLS)), min_size=1, max_size=4))
    n_rows = draw(st.integers(2, 24))
    classes = st.sampled_from(["x", "y", "z"])
    rows = [[*(draw(CELLS[k]) for k in kinds), draw(classes)] for _ in range(n_rows)]
    return [*(f"c{j}" for j in range(len(kinds))), "label"], rows


def id3_in_memory(table: Table) -> list[str]:
    disc = Discretizer.fit(table, 4) if "continuous" in table.kinds else None
    binned = table if disc is None else disc.transform(table)
    return [str(c) for c in ID3Classifier().fit(binned).predict(binned)]


def c45_in_memory(**params: Any) -> Callable[[Table], list[str]]:
    def learn(table: Table) -> list[str]:
        return [str(c) for c in C45Classifier(**params).fit(table).predict(table)]

    return learn


LEARNERS = [
    (("--learner", "id3"), id3_in_memory),
    (("--learner", "c45"), c45_in_memory()),
    (
        ("--learner", "c45", "--nominal-splits", "binary", "--pruning", "none"),
        c45_in_memory(nominal_splits="binary", pruning="none"),
    ),
]


@settings(max_examples=40, deadline=None)
@given(data=csv_tables(), learner=st.sampled_from(LEARNERS))
def test_a_saved_model_predicts_as_the_learner_in_memory(
    data: tuple[list[str], list[list[str]]],
    learner: tuple[tuple[str, ...], Callable[[Table], list[str]]],
) -> None:
    header, rows = data
    options, in_memory = learner
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train = write_csv(folder / "train.csv", header, rows)
        model, tested = folder / "model.json", folder / "tested.csv"
        code, _, err = cli(
            "train", *options, "--csv", str(train), "--class", "label", "--test", str(train),
            "--model-out", str(model), "--predictions-out", str(tested), "--json",
        )  # fmt: skip
        assert code == 0, err
        expected = in_memory(load_csv(train, "label"))
        assert read_predictions(tested) == [(str(i), c) for i, c in enumerate(expected)]

        # the same rows, columns reversed, without the class, with an id and a column more
        attributes = header[:-1]
        new = write_csv(
            folder / "new.csv",
            ["note", *reversed(attributes), "rid"],
            [["n", *reversed(r[:-1]), f"r{i}"] for i, r in enumerate(rows)],
        )
        out = folder / "predicted.csv"
        code, _, err = cli(
            "predict", "--model", str(model), "--csv", str(new), "--id", "rid", "--out", str(out)
        )
        assert code == 0, err
        assert read_predictions(out) == [(f"r{i}", c) for i, c in enumerate(expected)]


# ------------------------------------------------------ (b) mpc predict = mpc train's test set


def table_rows(table: Table) -> list[list[str]]:
    """The rows of ``table`` as CSV fields, the class last (NaN as ``?``)."""
    columns = [
        ["?" if math.isnan(v) else repr(float(v)) for v in col] if kind == "continuous" else col
        for kind, col in zip(table.kinds, table.columns, strict=True)
    ]
    return [[*map(str, fields)] for fields in zip(*columns, table.target, strict=True)]


@pytest.fixture(scope="module")
def australian_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """australian (nominal and continuous columns) as a training CSV and a test CSV."""
    table, _ = datasets.table("australian")
    folder = tmp_path_factory.mktemp("australian")
    header = [*table.attributes, table.class_name]
    rows = table_rows(table)
    return (
        write_csv(folder / "train.csv", header, rows[:480]),
        write_csv(folder / "test.csv", header, rows[480:]),
    )


@pytest.mark.datasets
@pytest.mark.parametrize("learner", ["id3", "c45"])
def test_mpc_predict_reproduces_the_test_predictions_of_mpc_train(
    australian_files: tuple[Path, Path], tmp_path: Path, learner: str
) -> None:
    train, test = australian_files
    model, tested, predicted = (tmp_path / n for n in ("model.json", "tested.csv", "pred.csv"))
    code, out, err = run_mpc(
        "train", "--learner", learner, "--csv", str(train), "--class", "A15", "--test", str(test),
        "--model-out", str(model), "--predictions-out", str(tested), "--json",
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads(out)
    assert summary["test_rows"] == 210 and summary["model_out"] == str(model)
    code, out, err = run_mpc(
        "predict", "--model", str(model), "--csv", str(test), "--out", str(predicted)
    )
    assert code == 0, err
    assert predicted.read_text() == tested.read_text()
    assert len(read_predictions(predicted)) == 210
    assert f"accuracy:   {summary['accuracy']:.4f}" in out
    for path in (model, tested, predicted):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    body = json.loads(model.read_text())["body"]
    assert body["class"] == "A15" and body["learner"] == learner
    assert (body["discretizer"] is not None) == (learner == "id3")


def test_predictions_go_to_standard_output_without_out(tmp_path: Path) -> None:
    header = ["colour", "size", "label"]
    rows = [[c, str(s), "big" if s > 4 else "small"] for c in "rgb" for s in range(8)]
    train, model = write_csv(tmp_path / "t.csv", header, rows), tmp_path / "m.json"
    code, _, err = cli("train", "--csv", str(train), "--class", "label", "--model-out", str(model))
    assert code == 0, err
    code, out, err = cli("predict", "--model", str(model), "--csv", str(train))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:3] == ["id,class", "0,small", "1,small"] and len(lines) == 1 + len(rows)
    assert "accuracy:   " in err and f"rows:       {len(rows)} from {train}" in err


# ------------------------------------------------------- (c) integer-coded nominal columns


def rename_values(tree: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``tree`` (JSON) with the child keys (and C4.5's branch weights) of the tests on
    ``grade`` renamed."""
    if "children" not in tree:
        return tree
    rename = names if tree["attribute"] == "grade" else {}
    out = {**tree, "children": {rename.get(k, k): rename_values(v, names)
                                for k, v in tree["children"].items()}}  # fmt: skip
    if "weights" in tree:
        out["weights"] = {rename.get(k, k): w for k, w in tree["weights"].items()}
    return out


@pytest.mark.parametrize("learner", ["id3", "c45"])
def test_a_coded_column_declared_nominal_learns_the_tree_of_its_names(
    tmp_path: Path, learner: str
) -> None:
    rows = [
        [str(g), str(w), "pass" if g in (1, 3, 5) or w > 60 else "fail"]
        for g in range(1, 6)
        for w in range(40, 80, 3)
    ]
    coded = write_csv(tmp_path / "coded.csv", ["grade", "weight", "label"], rows)
    named = write_csv(
        tmp_path / "named.csv", ["grade", "weight", "label"], [[f"g{r[0]}", *r[1:]] for r in rows]
    )
    trees = {}
    for name, path, options in [
        ("coded", coded, ("--nominal", "grade")),
        ("named", named, ()),
        ("inferred", coded, ()),
    ]:
        out = tmp_path / f"{name}.tree.json"
        code, _, err = cli(
            "train", "--learner", learner, "--csv", str(path), "--class", "label", *options,
            "--test", str(path), "--tree-out", str(out), "--json",
        )  # fmt: skip
        assert code == 0, err
        trees[name] = json.loads(out.read_text())
        few_values = "warning: numeric columns with few distinct values"
        if name == "inferred":
            assert f"{few_values} are binned as continuous: grade (5 values)" in err
            assert "--nominal grade" in err
        else:
            assert few_values not in err
    names = {str(g): f"g{g}" for g in range(1, 6)}
    assert rename_values(trees["coded"], names) == trees["named"]
    assert trees["coded"]["attribute"] == "grade"
    assert trees["inferred"] != trees["coded"]


# ------------------------------------------------------------------- (d) refusals


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A data file, its id3 and c45 models, and the model of a private learner's party."""
    folder = tmp_path_factory.mktemp("models")
    rows = [[o, str(t), "go" if o != "rain" or t < 70 else "stay"] for o in ("sun", "rain")
            for t in range(60, 90, 2)]  # fmt: skip
    data = write_csv(folder / "data.csv", ["outlook", "temp", "label"], rows)
    files = {"data": data}
    for learner in ("id3", "c45"):
        files[learner] = folder / f"{learner}.json"
        code, _, err = cli(
            "train", "--learner", learner, "--csv", str(data), "--class", "label", "--cv", "2",
            "--model-out", str(files[learner]),
        )  # fmt: skip
        assert code == 0, err
    files["ppid3"] = folder / "ppid3.json"
    write_model(files["ppid3"], SavedModel("ppid3", "site1", new_model_id(), {"nodes": {}}))
    return files


def first_leaf(tree: dict[str, Any]) -> dict[str, Any]:
    while "children" in tree:
        tree = next(iter(tree["children"].values()))
    return tree


def test_an_edited_model_file_is_refused_naming_it(saved: dict[str, Path], tmp_path: Path) -> None:
    doc = json.loads(saved["c45"].read_text())
    leaf = first_leaf(doc["body"]["tree"])
    leaf["class"] = "stay" if leaf["class"] == "go" else "go"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    code, _, err = run_mpc("predict", "--model", str(edited), "--csv", str(saved["data"]))
    line = one_error_line(code, err)
    assert str(edited) in line and "changed after training" in line


def test_a_model_of_another_learner_is_refused(saved: dict[str, Path]) -> None:
    with pytest.raises(ModelError, match=r"holds a 'c45' model, not 'id3'"):
        load_plain_model(saved["c45"], "id3")
    assert load_plain_model(saved["id3"], "id3").learner == "id3"
    code, _, err = cli("predict", "--model", str(saved["ppid3"]), "--csv", str(saved["data"]))
    line = one_error_line(code, err)
    assert str(saved["ppid3"]) in line and "'ppid3' model, not 'id3' or 'c45'" in line


def test_a_body_of_another_learner_under_a_plain_name_is_refused(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    body = json.loads(saved["c45"].read_text())["body"]
    mislabelled = tmp_path / "mislabelled.json"
    write_model(mislabelled, SavedModel("id3", None, new_model_id(), body))
    code, _, err = cli("predict", "--model", str(mislabelled), "--csv", str(saved["data"]))
    line = one_error_line(code, err)
    assert str(mislabelled) in line and "learner 'c45'" in line


def test_a_file_without_a_model_attribute_is_refused_naming_it(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    new = write_csv(tmp_path / "new.csv", ["outlook", "label"], [["sun", "go"]])
    for learner in ("id3", "c45"):
        code, _, err = cli("predict", "--model", str(saved[learner]), "--csv", str(new))
        line = one_error_line(code, err)
        assert f"{new}: no column 'temp' in the header" in line


def test_a_value_of_the_wrong_kind_is_refused_naming_its_line(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    new = write_csv(tmp_path / "new.csv", ["outlook", "temp"], [["sun", "61"], ["rain", "warm"]])
    code, _, err = cli("predict", "--model", str(saved["c45"]), "--csv", str(new))
    line = one_error_line(code, err)
    assert f"{new}:3: column 'temp'" in line and "'warm' is not a number" in line


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("--predictions-out", "p.csv"), "--predictions-out writes the predictions of a test"),
        (("--test", "{data}", "--cv", "3"), "--test and --cv are two ways to evaluate"),
        (("--nominal", ","), "--nominal needs column names"),
    ],
)
def test_train_options_that_do_not_fit_are_refused(
    saved: dict[str, Path], argv: tuple[str, ...], expected: str
) -> None:
    data = str(saved["data"])
    args = [a.format(data=data) for a in argv]
    code, _, err = cli("train", "--csv", data, "--class", "label", *args)
    assert expected in one_error_line(code, err)
    code, _, err = cli("train", "--dataset", "weather", "--test", data)
    assert "--test goes with --csv" in one_error_line(code, err)


def test_unseen_values_and_a_tree_below_the_majority_are_warned_of(tmp_path: Path) -> None:
    """A column with nearly one value per record (a note) fits the training rows and no new one:
    `mpc train` warns at reading it; `mpc predict` on new rows counts those whose value was
    never seen where the tree splits, says what they got, and warns that the accuracy is
    below that of always predicting the majority class; so does `mpc train --test`."""
    rows = [[f"note {i % 50}", "a" if i % 2 else "b", "yes" if i % 3 else "no"] for i in range(60)]
    train = write_csv(tmp_path / "train.csv", ["notes", "ab", "label"], rows)
    new = [[f"new {i}", "a", "no" if i < 9 else "yes"] for i in range(10)]
    test = write_csv(tmp_path / "test.csv", ["notes", "ab", "label"], new)
    model = tmp_path / "model.json"
    code, out, err = cli("train", "--csv", str(train), "--class", "label",
                         "--model-out", str(model))  # fmt: skip
    assert code == 0, err
    assert "nominal columns with nearly one value per record: notes (50 values in 60 rows)" in (
        out + err
    )
    code, out, err = cli("predict", "--model", str(model), "--csv", str(test),
                         "--out", str(tmp_path / "p.csv"))  # fmt: skip
    assert code == 0, err
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, out
    said = "10 of 10 rows hold a value never seen in training where the tree splits (notes: 10)"
    assert said in warnings[0]
    assert "given the majority class of the node where it stopped" in warnings[0]
    assert "is below 0.9000, that of predicting 'no' for every row" in warnings[1]
    code, out, err = cli("train", "--csv", str(train), "--class", "label", "--test", str(test))
    assert code == 0, err
    assert "warning:    10 of 10 rows hold a value never seen" in out
    assert "that of predicting 'no' for every row" in out
