"""Datasets: the UCI loaders on the data directory's copies and the package's, CSV validation,
discretisation, vertical partitioning and synthetic tables."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.datasets import (
    KNOWN_DATASETS,
    DataError,
    Discretizer,
    Partition,
    SiteData,
    Table,
    available_datasets,
    default_data_dir,
    join_sites,
    load_csv,
    load_dataset,
    load_party_csv,
    partition,
    resolve_data_dir,
    split_vertically,
    synthetic,
    weather,
)
from mpc.errors import ConfigError

from .. import datasets

# Row counts from the data directory's README.md: (training rows, test rows or None).
README_ROWS = {
    "adult": (32561, 16281),
    "mushroom": (8124, None),
    "house-votes-84": (435, None),
    "autos": (205, None),
    "australian": (690, None),
    "tic-tac-toe": (958, None),
    "car": (1728, None),
    "weather": (14, None),
    "nursery": (12960, None),
    "kr-vs-kp": (3196, None),
}
# (attributes without the class, class column) from the schema files.
SHAPES = {
    "adult": (14, "income"),
    "mushroom": (22, "class"),
    "house-votes-84": (16, "Class Name"),
    "autos": (25, "symboling"),
    "australian": (14, "A15"),
    "tic-tac-toe": (9, "Class"),
    "car": (6, "class"),
    "weather": (4, "play"),
    "nursery": (8, "class"),
    "kr-vs-kp": (36, "class"),
}


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Neither $MPC_DATA_DIR nor $MPC_NO_DATA_DIR: for the tests of how the data directory is
    found, which set them themselves."""
    monkeypatch.delenv("MPC_DATA_DIR", raising=False)
    monkeypatch.delenv("MPC_NO_DATA_DIR", raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def adult() -> tuple[Table, Table]:
    train, test = datasets.table("adult")
    assert test is not None
    return train, test


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --------------------------------------------------------------------------------------------
# The embedded weather table and the UCI datasets


def test_embedded_weather_is_quinlans_table() -> None:
    w = weather()
    assert w.n_rows == 14
    assert w.attributes == ("outlook", "temperature", "humidity", "windy")
    assert w.kinds == ("nominal",) * 4
    assert w.class_name == "play"
    assert Counter(w.target.tolist()) == {"yes": 9, "no": 5}
    assert [w.column(a)[0] for a in w.attributes] == ["sunny", "hot", "high", "FALSE"]
    assert [w.column(a)[-1] for a in w.attributes] == ["rainy", "mild", "high", "TRUE"]
    assert all(isinstance(v, str) for c in w.columns for v in c)


@pytest.mark.datasets
def test_embedded_weather_equals_the_arff_file() -> None:
    from_arff, test = load_dataset("weather", datasets.folder("weather").parent)
    assert test is None
    assert from_arff.source.endswith("weather.nominal.arff")
    assert replace(from_arff, source=weather().source) == weather()


@pytest.mark.datasets
@pytest.mark.parametrize("name", KNOWN_DATASETS)
def test_every_dataset_loads_with_the_readme_row_counts(name: str) -> None:
    train, test = datasets.table(name)
    rows, test_rows = README_ROWS[name]
    n_attributes, class_name = SHAPES[name]
    assert train.n_rows == rows
    assert (test.n_rows if test is not None else None) == test_rows
    assert len(train.attributes) == n_attributes and train.class_name == class_name
    assert len(train.target) == rows and all(isinstance(v, str) for v in train.target[:50])
    for kind, col in zip(train.kinds, train.columns, strict=True):
        assert len(col) == rows
        assert col.dtype == (np.float64 if kind == "continuous" else object)


@pytest.mark.datasets
def test_adult_follows_its_schema(adult: tuple[Table, Table]) -> None:
    train, test = adult
    assert Counter(train.target.tolist()) == {"<=50K": 24720, ">50K": 7841}
    assert Counter(test.target.tolist()) == {"<=50K": 12435, ">50K": 3846}  # '.' removed
    assert train.attributes == test.attributes and train.kinds == test.kinds
    assert train.kinds.count("continuous") == 6
    for name, n_train, n_test in (
        ("workclass", 1836, 963),
        ("occupation", 1843, 966),
        ("native-country", 583, 274),
    ):
        assert (train.column(name) == "?").sum() == n_train
        assert (test.column(name) == "?").sum() == n_test
    assert train.column("age")[:3].tolist() == [39.0, 50.0, 38.0]
    assert train.column("workclass")[0] == "State-gov"  # whitespace after ',' stripped


@pytest.mark.datasets
def test_other_datasets_follow_their_notes() -> None:
    datasets.needs("mushroom", "house-votes-84", "autos", "australian")
    mushroom, _ = datasets.table("mushroom")
    assert (mushroom.column("stalk-root") == "?").sum() == 2480
    votes, _ = datasets.table("house-votes-84")
    assert Counter(votes.target.tolist()) == {"democrat": 267, "republican": 168}
    autos, _ = datasets.table("autos")
    assert np.isnan(autos.column("normalized-losses")).sum() == 41
    assert (autos.column("num-of-doors") == "?").sum() == 2
    australian, _ = datasets.table("australian")
    assert australian.kind("A2") == "continuous" and australian.kind("A1") == "nominal"
    assert set(australian.column("A4").tolist()) == {"1", "2", "3"}  # codes kept as text
    assert Counter(australian.target.tolist()) == {"1": 307, "0": 383}


@pytest.mark.datasets
def test_available_datasets_lists_every_dataset_found() -> None:
    datasets.needs(*KNOWN_DATASETS)
    infos = {i.name: i for i in available_datasets(datasets.data_dir())}
    assert list(infos) == list(KNOWN_DATASETS)
    assert infos["adult"].rows == 48842 and infos["adult"].test_rows == 16281
    assert infos["car"].rows == 1728 and infos["car"].attributes == 6
    assert infos["mushroom"].class_name == "class"
    assert infos["adult"].source[1].endswith("adult.test")


@pytest.mark.datasets
def test_weather_and_the_shipped_tables_are_available_without_a_data_directory(
    tmp_path: Path,
) -> None:
    for where in (None, tmp_path):
        infos = {i.name: i for i in available_datasets(where)}
        assert sorted(infos) == sorted((*SHIPPED_TABLES, "weather"))
        assert infos["weather"].rows == 14 and "embedded" in infos["weather"].source[0]
        train, test = load_dataset("weather", where)
        assert train == weather() and test is None
        assert infos["car"].rows == 1728 and load_dataset("car", where)[0].n_rows == 1728


SHIPPED_TABLES = ("house-votes-84", "tic-tac-toe", "car", "kr-vs-kp")


@pytest.mark.datasets
def test_the_shipped_tables_are_the_uci_files_with_their_licence() -> None:
    """Each shipped file is the UCI original (the size and SHA-256 that fetch checks), and the
    folder says the licence and the citations."""
    import hashlib

    from mpc.datasets.fetch import SHIPPED, shipped_folder, sources

    for name in SHIPPED_TABLES:
        folder = shipped_folder(name)
        assert folder is not None
        listed = {s.name: s for s in sources(name)}
        shipped = sorted(p.name for p in folder.iterdir())
        assert set(shipped) <= set(listed) and f"{name}.data" in shipped
        for file in shipped:
            data = (folder / file).read_bytes()
            assert len(data) == listed[file].size
            assert hashlib.sha256(data).hexdigest() == listed[file].sha256
    notice = (SHIPPED / "README.md").read_text()
    assert "CC BY 4.0" in notice and all(f"**{n}**" in notice for n in SHIPPED_TABLES)
    assert shipped_folder("adult") is None


@pytest.mark.datasets
@pytest.mark.parametrize("name", SHIPPED_TABLES)
def test_a_shipped_table_reads_as_the_data_directory_s_copy(name: str) -> None:
    found = datasets.data_dir()
    if found is None or not (found / name).is_dir():
        pytest.skip(f"no data directory has a copy of {name} to compare the package's with")
    ours, theirs = load_dataset(name, None)[0], load_dataset(name, found)[0]
    assert replace(ours, source="") == replace(theirs, source="")


def test_a_data_directory_copy_comes_before_the_shipped_one(tmp_path: Path) -> None:
    folder = tmp_path / "car"
    folder.mkdir()
    rows = "vhigh,vhigh,2,2,small,low,unacc\nlow,low,4,4,big,high,vgood\n"
    (folder / "car.data").write_text(rows)
    with pytest.raises(DataError, match=r"2 data rows, but .* says 1728"):
        load_dataset("car", tmp_path)  # this copy, checked against the schema, not the package's


def test_unknown_dataset_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"unknown dataset 'iris'.*adult, mushroom") as err:
        load_dataset("iris", tmp_path)
    assert isinstance(err.value, ConfigError)


def test_a_uci_dataset_without_data_directory_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"`mpc datasets fetch adult` downloads it.*--data-dir"):
        load_dataset("adult", None)
    fetch = f"`mpc datasets fetch nursery --data-dir {tmp_path}` downloads it there"
    with pytest.raises(DataError, match=rf"'nursery' is not in the data directory .*{fetch}"):
        load_dataset("nursery", tmp_path)


def test_data_dir_resolution_order(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    monkeypatch = no_env
    cli, env = tmp_path / "cli", tmp_path / "env"
    cli.mkdir()
    env.mkdir()
    assert resolve_data_dir(cli) == cli
    monkeypatch.setenv("MPC_DATA_DIR", str(env))
    assert default_data_dir() == env
    assert resolve_data_dir(None) == env
    assert resolve_data_dir(str(cli)) == cli
    with pytest.raises(DataError, match=r"nowhere.*--data-dir.*does not exist"):
        resolve_data_dir(tmp_path / "nowhere")
    monkeypatch.setenv("MPC_DATA_DIR", str(tmp_path / "gone"))
    with pytest.raises(DataError, match=r"gone.*\$MPC_DATA_DIR.*does not exist"):
        resolve_data_dir(None)


def test_no_data_dir_puts_every_data_directory_out_of_reach(
    tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    """``MPC_NO_DATA_DIR=1``: neither $MPC_DATA_DIR nor a default folder is read, only the
    one given (``--data-dir``); the shipped tables and weather still load, another dataset is
    refused naming the command that fetches it."""
    (tmp_path / "env").mkdir()
    no_env.setenv("MPC_DATA_DIR", str(tmp_path / "env"))
    no_env.setenv("XDG_DATA_HOME", str(tmp_path))
    (tmp_path / "mpc-trees" / "datasets").mkdir(parents=True)
    assert default_data_dir() == tmp_path / "env"
    no_env.setenv("MPC_NO_DATA_DIR", "1")
    assert default_data_dir() is None and resolve_data_dir(None) is None
    assert resolve_data_dir(tmp_path) == tmp_path
    assert load_dataset("car", resolve_data_dir(None))[0].n_rows == 1728
    assert load_dataset("weather", None)[0] == weather()
    with pytest.raises(DataError, match=r"\$MPC_NO_DATA_DIR is set.*mpc datasets fetch mushroom"):
        load_dataset("mushroom", resolve_data_dir(None))
    no_env.setenv("MPC_NO_DATA_DIR", "0")
    assert default_data_dir() == tmp_path / "env"


def test_default_data_dir_is_next_to_the_repository(
    tmp_path: Path, no_env: pytest.MonkeyPatch
) -> None:
    """The folder ``shared/datasets`` beside the repository when there is one (this project's
    own checkout), else the user's data directory when it exists, else none."""
    import mpc

    no_env.setenv("XDG_DATA_HOME", str(tmp_path))
    beside = Path(mpc.__file__).resolve().parents[1].parent / "shared" / "datasets"
    assert default_data_dir() == (beside if beside.is_dir() else None)
    if not beside.is_dir():
        (tmp_path / "mpc-trees" / "datasets").mkdir(parents=True)
        assert default_data_dir() == tmp_path / "mpc-trees" / "datasets"


# --------------------------------------------------------------------------------------------
# Malformed files

SCHEMA: dict[str, Any] = {
    "columns": [
        {"index": 0, "name": "buying", "type": "nominal", "values": ["high", "low"]},
        {"index": 1, "name": "price", "type": "continuous"},
        {"index": 2, "name": "class", "type": "nominal", "values": ["acc", "unacc"]},
    ],
    "class_column": {"index": 2, "name": "class"},
    "missing_value_marker": "?",
    "format": {"delimiter": ",", "header_row": False},
}


def small_dataset(root: Path, data: str, schema: dict[str, Any] | None = None) -> Path:
    """A data directory with one dataset, ``car``, described by ``schema``."""
    write(root / "car" / "schema.json", json.dumps(schema or SCHEMA))
    return write(root / "car" / "car.data", data)


def test_a_small_schema_dataset_loads(tmp_path: Path) -> None:
    small_dataset(tmp_path, "high,1.5,acc\n\nlow,?,unacc\n?,3,acc\n")
    t, _ = load_dataset("car", tmp_path)
    assert t.column("buying").tolist() == ["high", "low", "?"]
    np.testing.assert_array_equal(t.column("price"), [1.5, np.nan, 3.0])
    assert t.target.tolist() == ["acc", "unacc", "acc"]


@pytest.mark.parametrize(
    ("data", "line", "column", "message"),
    [
        ("high,1,acc\nlow,2,unacc\ncheap,3,acc\n", 3, "buying", r"value 'cheap' is not one of"),
        ("high,1,acc\nlow,2,good\n", 2, "class", r"value 'good' is not one of"),
        ("high,1,acc\n\nlow,abc,acc\n", 3, "price", r"'abc' is not a number nor a missing value"),
        ("high,1,acc\nlow,2\n", 2, "class", r"not on this line; expected 3 fields .* got 2"),
    ],
)
def test_schema_violations_name_file_line_and_column(
    tmp_path: Path, data: str, line: int, column: str, message: str
) -> None:
    path = small_dataset(tmp_path, data)
    with pytest.raises(DataError, match=message) as err:
        load_dataset("car", tmp_path)
    assert (err.value.file, err.value.line, err.value.column) == (str(path), line, column)
    index = [c["name"] for c in SCHEMA["columns"]].index(column)
    assert str(err.value).startswith(f"{path}:{line}: column {column!r} (field {index + 1}): ")
    assert "\n" not in str(err.value)


def test_a_domain_error_says_where_the_domain_is_declared(tmp_path: Path) -> None:
    small_dataset(tmp_path, "medium,1,acc\n")
    with pytest.raises(DataError, match=r"declared in .*schema.json \(high, low\)"):
        load_dataset("car", tmp_path)


def test_extra_fields_and_empty_data_files(tmp_path: Path) -> None:
    path = small_dataset(tmp_path, "high,1,acc,oops\n")
    with pytest.raises(DataError, match=r"field 4: one field too many.*expected 3.*got 4") as err:
        load_dataset("car", tmp_path)
    assert (err.value.file, err.value.line) == (str(path), 1)
    path = small_dataset(tmp_path, "\n")
    with pytest.raises(DataError, match=r"the file is empty") as err:
        load_dataset("car", tmp_path)
    assert (err.value.file, err.value.line) == (str(path), 1)


def test_a_row_count_that_contradicts_the_schema_is_an_error(tmp_path: Path) -> None:
    small_dataset(tmp_path, "high,1,acc\n", {**SCHEMA, "rows": {"car.data": 2}})
    with pytest.raises(DataError, match=r"car.data: 1 data rows, but .*schema.json says 2"):
        load_dataset("car", tmp_path)


def test_a_broken_schema_is_named(tmp_path: Path) -> None:
    small_dataset(tmp_path, "high,1,acc\n", {**SCHEMA, "class_column": {"index": 7}})
    with pytest.raises(DataError, match=r"schema.json: field \"class_column\""):
        load_dataset("car", tmp_path)


def test_csv_wrong_column_count(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "a,b,play\nx,1,yes\ny,2\n")
    with pytest.raises(DataError, match=r"expected 3 fields separated by ',', got 2") as err:
        load_csv(path, "play")
    assert (err.value.file, err.value.line, err.value.column) == (str(path), 3, "play")
    assert str(err.value).startswith(f"{path}:3: column 'play' (field 3): not on this line")


def test_csv_unknown_class_column_lists_the_header(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "a,b,play\nx,1,yes\n")
    with pytest.raises(
        DataError, match=r"not in the header; the columns are \['a', 'b', 'play'\]"
    ) as err:
        load_csv(path, "class")
    assert (err.value.file, err.value.line, err.value.column) == (str(path), 1, "class")


def test_csv_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.csv", "")
    with pytest.raises(DataError, match=r"empty.csv:1: .*the file is empty.*header row") as err:
        load_csv(path, "play")
    assert err.value.column == "play"


def test_csv_listed_continuous_column_that_is_not_a_number(tmp_path: Path) -> None:
    path = write(tmp_path / "d.csv", "a,b,play\n1,x,yes\nlots,y,no\n")
    with pytest.raises(DataError, match=r"d.csv:3: column 'a' \(field 1\): 'lots' is not a number"):
        load_csv(path, "play", continuous=["a"])
    with pytest.raises(DataError, match=r"continuous columns \['z'\] are not in the header"):
        load_csv(path, "play", continuous=["z"])
    with pytest.raises(DataError, match=r"the class column cannot be continuous"):
        load_csv(path, "play", continuous=["play"])


def test_csv_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope.csv: no such file"):
        load_csv(tmp_path / "nope.csv", "play")


def test_csv_infers_kinds_and_keeps_missing_values(tmp_path: Path) -> None:
    path = write(
        tmp_path / "d.csv",
        'age, city ,code,label\n 30 ,"Paris, FR",1,0\n\n?,?,2,1\n41.5,Oslo,x,0\n',
    )
    t = load_csv(path, "label")
    assert t.name == "d" and t.source == str(path)
    assert t.attributes == ("age", "city", "code") and t.class_name == "label"
    assert t.kinds == ("continuous", "nominal", "nominal")
    np.testing.assert_array_equal(t.column("age"), [30.0, np.nan, 41.5])
    assert t.column("city").tolist() == ["Paris, FR", "?", "Oslo"]
    assert t.target.tolist() == ["0", "1", "0"]  # the class is always nominal text
    na = write(tmp_path / "na.csv", "x,y\nNA,a\n2,b\n")
    t = load_csv(na, "y", missing="NA", continuous=["x"])
    np.testing.assert_array_equal(t.column("x"), [np.nan, 2.0])
    t = load_csv(na, "y", missing="NA", continuous=[])
    assert t.kinds == ("nominal",) and t.column("x").tolist() == ["?", "2"]


def test_blank_cells_are_missing_like_question_marks(tmp_path: Path) -> None:
    """A blank cell is a missing value, as ``?`` is: a nominal column keeps it as ``?`` (not as
    a value of its own), and a numeric column with blanks stays continuous (NaN)."""
    path = write(tmp_path / "b.csv", "age,city,label\n30,,yes\n,Oslo,no\n41, ,yes\n50,?,no\n")
    t = load_csv(path, "label")
    assert t.kinds == ("continuous", "nominal")
    np.testing.assert_array_equal(t.column("age"), [30.0, np.nan, 41.0, 50.0])
    assert t.column("city").tolist() == ["?", "Oslo", "?", "?"]
    own = load_party_csv(path, id_column=None, class_column="label")
    assert own.table.kinds == ("continuous", "nominal")
    assert own.table.column("city").tolist() == ["?", "Oslo", "?", "?"]


def test_more_missing_markers_add_to_blank_and_question_mark(tmp_path: Path) -> None:
    path = write(tmp_path / "m.csv", "x,c,y\nNA,n/a,a\n2,,b\n?,red,a\n4,NA,b\n")
    t = load_csv(path, "y", missing=["NA", "n/a"])
    assert t.kinds == ("continuous", "nominal")
    np.testing.assert_array_equal(t.column("x"), [np.nan, 2.0, np.nan, 4.0])
    assert t.column("c").tolist() == ["?", "?", "red", "?"]
    own = load_party_csv(path, id_column=None, class_column="y", missing=["NA", "n/a"])
    assert own.table.kinds == t.kinds
    np.testing.assert_array_equal(own.table.column("x"), t.column("x"))
    assert own.table.column("c").tolist() == ["?", "?", "red", "?"]


def test_nan_is_missing_and_an_infinity_is_refused_naming_its_cell(tmp_path: Path) -> None:
    """In a continuous column a cell that reads as NaN (``nan``, ``NaN``) is a missing value, as
    a blank cell is; one that reads as an infinity (``inf``, ``-Infinity``, ``1e999``) is refused
    in one line naming the file, the line and the column, by every reader of a numeric column:
    a CSV with its kinds inferred or given, a party's own file, a UCI file read with its
    schema."""
    path = write(tmp_path / "n.csv", "x,c,y\nnan,a,p\n2,b,q\nNaN,a,p\n1.7e308,b,q\n")
    t = load_csv(path, "y")
    assert t.kinds == ("continuous", "nominal")
    np.testing.assert_array_equal(t.column("x"), [np.nan, 2.0, np.nan, 1.7e308])
    own = load_party_csv(path, id_column=None, class_column="y")
    np.testing.assert_array_equal(own.table.column("x"), t.column("x"))
    for cell in ("inf", "-Infinity", "1e999"):
        bad = write(tmp_path / f"{cell}.csv", f"x,c,y\n1,a,p\n2,b,q\n{cell},a,p\n")
        where = rf":4: column 'x' \(field 1\): {re.escape(repr(cell))} is not a finite number"
        for reader in (load_csv, partial(load_csv, continuous=["x"]), load_party_csv):
            with pytest.raises(DataError, match=where) as info:
                if reader is load_party_csv:
                    load_party_csv(bad, id_column=None, class_column="y")
                else:
                    reader(bad, "y")
            assert "\n" not in str(info.value) and str(bad) in str(info.value)
    small_dataset(tmp_path / "uci", "high,1.5,acc\nlow,nan,unacc\nlow,-inf,acc\n")
    with pytest.raises(DataError, match=r"car\.data:3: column 'price' \(field 2\): '-inf' is"):
        load_dataset("car", tmp_path / "uci")
    with pytest.raises(DataError, match=r"column 'x' holds -inf in row 1; .* finite numbers"):
        Table("t", ("x",), ("continuous",), (np.array([1.0, -np.inf]),), np.array(["p", "q"]),
              "y", "test")  # fmt: skip
    small_dataset(tmp_path / "uci", "high,1.5,acc\nlow,nan,unacc\n")
    np.testing.assert_array_equal(load_dataset("car", tmp_path / "uci")[0].column("price"),
                                  [1.5, np.nan])  # fmt: skip


def test_a_record_without_its_class_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "c.csv", "x,y\n1,a\n2,\n3,b\n")
    with pytest.raises(DataError, match=r"c\.csv:3: column 'y' \(field 2\): the class is missing"):
        load_csv(path, "y")
    with pytest.raises(DataError, match=r"c\.csv:3: column 'y'.*the class is missing"):
        load_party_csv(path, id_column=None, class_column="y")


# --------------------------------------------------------------------------------------------
# Table


def small_table() -> Table:
    return Table(
        name="t",
        attributes=("a", "b", "c"),
        kinds=("nominal", "continuous", "nominal"),
        columns=(
            np.array(["x", "y", "?", "x"], dtype=object),
            np.array([1.0, np.nan, 3.0, 4.0]),
            np.array(["p", "q", "p", "q"], dtype=object),
        ),
        target=np.array(["yes", "no", "yes", "no"], dtype=object),
        class_name="cls",
        source="test",
    )


def test_table_subset_select_and_column() -> None:
    t = small_table()
    assert t.n_rows == 4
    by_mask = t.subset(np.array([True, False, True, False]))
    by_index = t.subset(np.array([0, 2]))
    assert by_mask == by_index and by_mask.n_rows == 2
    assert by_index.target.tolist() == ["yes", "yes"]
    assert t.subset(np.array([], dtype=np.int64)).n_rows == 0
    s = t.select(["c", "a"])
    assert s.attributes == ("c", "a") and s.kinds == ("nominal", "nominal")
    assert s.column("a").tolist() == ["x", "y", "?", "x"] and s.target is t.target
    assert t == small_table() and t != t.subset(np.array([1, 0, 2, 3]))
    with pytest.raises(DataError, match=r"no attribute 'z'; its attributes are \['a', 'b', 'c'\]"):
        t.column("z")
    with pytest.raises(DataError, match=r"boolean row mask needs 4 entries"):
        t.subset(np.array([True]))


def test_table_rejects_inconsistent_columns() -> None:
    t = small_table()
    with pytest.raises(DataError, match=r"column 'c' has 3 rows"):
        replace(t, columns=(*t.columns[:2], t.columns[2][:3]))
    with pytest.raises(DataError, match=r"kind 'numeric'"):
        replace(t, kinds=("nominal", "numeric", "nominal"))
    with pytest.raises(DataError, match=r"3 labels for 4 rows"):
        replace(t, target=t.target[:3])


# --------------------------------------------------------------------------------------------
# Discretizer


def numeric_table(values: list[float], name: str = "t") -> Table:
    return Table(
        name=name,
        attributes=("x", "n"),
        kinds=("continuous", "nominal"),
        columns=(np.array(values, dtype=np.float64), np.array(["a"] * len(values), dtype=object)),
        target=np.array(["c"] * len(values), dtype=object),
        class_name="cls",
        source="test",
    )


def test_discretizer_learns_equal_frequency_edges_on_training_rows_only() -> None:
    train = numeric_table([float(v) for v in range(1, 101)])
    test = numeric_table([-5.0, 25.0, 26.0, 50.5, 1000.0, float("nan")])
    disc = Discretizer.fit(train, 4)
    assert disc.edges == {"x": (25.5, 50.5, 75.5)}
    assert Discretizer.fit(numeric_table([*train.column("x"), *test.column("x")]), 4) != disc
    assert disc.labels("x") == ("<=25.5", "(25.5,50.5]", "(50.5,75.5]", ">75.5")
    out = disc.transform(test)
    assert out.kinds == ("nominal", "nominal")
    assert out.column("x").tolist() == [
        "<=25.5",
        "<=25.5",
        "(25.5,50.5]",
        "(25.5,50.5]",
        ">75.5",
        "?",
    ]
    assert out.column("n").tolist() == test.column("n").tolist()
    binned = Counter(disc.transform(train).column("x").tolist())
    assert sorted(binned.values()) == [25, 25, 25, 25]
    assert disc.to_dict() == {
        "method": "equal-frequency",
        "bins": 4,
        "edges": {"x": [25.5, 50.5, 75.5]},
    }


def test_discretizer_merges_repeated_cut_points() -> None:
    disc = Discretizer.fit(numeric_table([0.0] * 90 + [5.0] * 10), 4)
    assert disc.edges == {"x": (0.0,)}
    assert disc.labels("x") == ("<=0", ">0")
    assert Discretizer.fit(numeric_table([float("nan")] * 3), 3).labels("x") == ("any",)


def test_discretizer_rejects_too_few_bins_and_unfitted_attributes() -> None:
    with pytest.raises(DataError, match=r"bins must be an integer of at least 2, got 1"):
        Discretizer.fit(numeric_table([1.0, 2.0]), 1)
    disc = Discretizer(bins=2, edges={})
    with pytest.raises(DataError, match=r"'x' is continuous but the discretizer was not fitted"):
        disc.transform(numeric_table([1.0]))


@settings(max_examples=60, deadline=None)
@given(
    train=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60),
    probe=st.lists(st.floats(-2e6, 2e6, allow_nan=False), min_size=1, max_size=30),
    bins=st.integers(2, 8),
)
def test_discretizer_transform_is_monotone(
    train: list[float], probe: list[float], bins: int
) -> None:
    disc = Discretizer.fit(numeric_table(train), bins)
    edges = disc.edges["x"]
    assert len(edges) <= bins - 1 and list(edges) == sorted(set(edges))
    order = {label: i for i, label in enumerate(disc.labels("x"))}
    values = sorted(probe)
    bins_seen = [order[v] for v in disc.transform(numeric_table(values)).column("x")]
    assert bins_seen == sorted(bins_seen)
    for v, b in zip(values, bins_seen, strict=True):  # each value lies inside its bin
        assert b == 0 or v > edges[b - 1]
        assert b == len(edges) or v <= edges[b]


# --------------------------------------------------------------------------------------------
# Vertical partitioning

ATTRS = ["a", "b", "c", "d", "e", "f", "g"]


def test_contiguous_partition_gives_earlier_sites_the_extra_attributes() -> None:
    p = partition(ATTRS, 3)
    assert p.sites == (("a", "b", "c"), ("d", "e"), ("f", "g"))
    assert p.class_site == 2 and p.k == 3
    assert partition(ATTRS, 3, class_site=0).class_site == 0
    assert partition(ATTRS, 3, class_site=-2).class_site == 1


def test_round_robin_partition() -> None:
    p = partition(ATTRS, 3, "round-robin")
    assert p.sites == (("a", "d", "g"), ("b", "e"), ("c", "f"))


def test_random_partition_is_a_seeded_shuffle() -> None:
    p = partition(ATTRS, 3, "random:7")
    assert p == partition(ATTRS, 3, "random:7")
    assert sorted(p.attributes) == ATTRS
    assert [len(s) for s in p.sites] == [3, 2, 2]
    assert len({partition(ATTRS, 3, f"random:{s}").sites for s in range(10)}) > 1


def test_explicit_partition() -> None:
    p = partition(ATTRS, 3, "g, a;c,b;d,e,f", class_site=1)
    assert p.sites == (("g", "a"), ("c", "b"), ("d", "e", "f"))
    assert p.site_of("b") == 1
    assert p.describe("play") == "site1: g, a\nsite2: c, b (class play)\nsite3: d, e, f"
    assert p.to_dict() == {
        "k": 3,
        "sites": [["g", "a"], ["c", "b"], ["d", "e", "f"]],
        "class_site": 1,
    }


@pytest.mark.parametrize(
    ("k", "scheme", "message"),
    [
        (1, "contiguous", r"k must be an integer between 2 and the number of attributes \(7\)"),
        (8, "contiguous", r"between 2 and the number of attributes \(7\), got 8"),
        (2, "diagonal", r"unknown scheme 'diagonal'"),
        (2, "random:x", r"needs an integer seed"),
        (2, "a,b,c,a;d,e,f,g", r"gives attributes \['a'\] to more than one site"),
        (2, "a,b;c,a", r"gives attributes \['a'\] to more than one site"),
        (2, "a,b,z;c,d,e,f,g", r"unknown or empty attributes \['z'\]"),
        (3, "a,b,c;d,e,f,g", r"gives 2 sites, but k is 3"),
    ],
)
def test_bad_partitions_are_explained(k: int, scheme: str, message: str) -> None:
    with pytest.raises(DataError, match=message):
        partition(ATTRS, k, scheme)


def test_an_explicit_partition_may_leave_attributes_out() -> None:
    """An attribute no site is given is in no site: the model does not use it."""
    p = partition(ATTRS, 2, "a,b;d")
    assert p.sites == (("a", "b"), ("d",)) and p.attributes == ("a", "b", "d")


def test_bad_class_site() -> None:
    with pytest.raises(DataError, match=r"class_site must be in \[-3, 2\], got 3"):
        partition(ATTRS, 3, class_site=3)


@st.composite
def tables(draw: st.DrawFn) -> Table:
    n_rows = draw(st.integers(0, 12))
    n_attrs = draw(st.integers(2, 7))
    kinds = tuple(draw(st.sampled_from(["nominal", "continuous"])) for _ in range(n_attrs))
    nominal = st.sampled_from(["x", "y", "z", "?"])
    number = st.floats(-100, 100) | st.just(float("nan"))
    columns = tuple(
        np.array(draw(st.lists(number, min_size=n_rows, max_size=n_rows)), dtype=np.float64)
        if kind == "continuous"
        else np.array(draw(st.lists(nominal, min_size=n_rows, max_size=n_rows)), dtype=object)
        for kind in kinds
    )
    labels = draw(st.lists(st.sampled_from(["yes", "no"]), min_size=n_rows, max_size=n_rows))
    return Table(
        name="random",
        attributes=tuple(f"attr{i}" for i in range(n_attrs)),
        kinds=kinds,
        columns=columns,
        target=np.array(labels, dtype=object),
        class_name="label",
        source="hypothesis",
    )


@st.composite
def partitioned(draw: st.DrawFn) -> tuple[Table, Partition]:
    t = draw(tables())
    n = len(t.attributes)
    k = draw(st.integers(2, n))
    kind = draw(st.sampled_from(["contiguous", "round-robin", "random", "explicit"]))
    if kind == "random":
        scheme = f"random:{draw(st.integers(0, 1000))}"
    elif kind == "explicit":
        order = draw(st.permutations(t.attributes))
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), min_size=k - 1, max_size=k - 1)))
        bounds = [0, *cuts, n]
        scheme = ";".join(",".join(order[i:j]) for i, j in itertools.pairwise(bounds))
    else:
        scheme = kind
    return t, partition(t.attributes, k, scheme, class_site=draw(st.integers(-k, k - 1)))


@settings(max_examples=80, deadline=None)
@given(case=partitioned())
def test_split_then_join_is_the_identity(case: tuple[Table, Partition]) -> None:
    t, p = case
    sites = split_vertically(t, p)
    assert [s.site for s in sites] == list(range(p.k))
    assert sorted(a for s in sites for a in s.table.attributes) == sorted(t.attributes)
    for s in sites:
        assert s.tids.dtype == np.int64 and s.tids.tolist() == list(range(t.n_rows))
        assert s.table.attributes == p.sites[s.site]
        if s.site == p.class_site:
            assert s.table.class_name == "label" and s.table.target.tolist() == t.target.tolist()
        else:
            assert s.table.class_name == "" and len(s.table.target) == 0
    assert join_sites(sites, t.attributes) == t
    assert join_sites(sites).attributes == p.attributes
    rng = np.random.default_rng(len(t.attributes))
    shuffled = []
    for s in sites:  # a site may hold its rows in any order: the join goes by tids
        perm = rng.permutation(t.n_rows)
        shuffled.append(SiteData(s.site, s.tids[perm], s.table.subset(perm)))
    assert join_sites(shuffled, t.attributes) == t


def test_join_rejects_mismatched_transaction_ids() -> None:
    t = small_table()
    sites = split_vertically(t, partition(t.attributes, 2))
    bad = SiteData(sites[1].site, sites[1].tids + 1, sites[1].table)
    with pytest.raises(DataError, match=r"transaction ids of site 1 do not match those of site 0"):
        join_sites([sites[0], bad])
    with pytest.raises(DataError, match=r"exactly one site must hold the class"):
        join_sites([sites[0]])
    with pytest.raises(DataError, match=r"not a permutation"):
        join_sites(sites, ["a", "b"])
    with pytest.raises(DataError, match=r"attributes of the table on no site \['c'\]"):
        split_vertically(t, partition(["a", "b"], 2))


# --------------------------------------------------------------------------------------------
# Synthetic tables


def test_synthetic_is_deterministic_and_has_the_requested_shape() -> None:
    t = synthetic(500, n_attributes=5, n_values=4, depth=2, n_classes=3, seed=11)
    assert t == synthetic(500, n_attributes=5, n_values=4, depth=2, n_classes=3, seed=11)
    assert t != synthetic(500, n_attributes=5, n_values=4, depth=2, n_classes=3, seed=12)
    assert t.n_rows == 500 and t.attributes == ("a0", "a1", "a2", "a3", "a4")
    assert t.kinds == ("nominal",) * 5 and t.class_name == "class"
    assert all(set(c.tolist()) <= {"v0", "v1", "v2", "v3"} for c in t.columns)
    assert set(t.target.tolist()) <= {"c0", "c1", "c2"}
    assert "seed=11" in t.source


def test_synthetic_labels_follow_a_planted_tree() -> None:
    clean = synthetic(2000, depth=2, noise=0.0, seed=3)
    # with no noise, equal attribute values always have equal labels
    seen: dict[tuple[str, ...], str] = {}
    for row, label in zip(zip(*clean.columns, strict=True), clean.target, strict=True):
        assert seen.setdefault(row, label) == label
    noisy = synthetic(2000, depth=2, noise=0.2, seed=3)
    flipped = (noisy.target != clean.target).mean()
    assert all(np.array_equal(a, b) for a, b in zip(noisy.columns, clean.columns, strict=True))
    assert 0.15 < flipped < 0.25
    assert (
        synthetic(50, noise=1.0, seed=3).target != synthetic(50, noise=0.0, seed=3).target
    ).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_rows": 0}, r"n_rows must be at least 1"),
        ({"n_rows": 5, "depth": 7}, r"depth must be in \[0, n_attributes=6\]"),
        ({"n_rows": 5, "noise": 1.5}, r"noise must be a probability"),
        ({"n_rows": 5, "n_values": 1}, r"n_values must be at least 2"),
    ],
)
def test_synthetic_rejects_bad_parameters(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message):
        synthetic(**kwargs)


def test_party_files_share_the_ids_and_hold_each_party_s_own_columns(tmp_path: Path) -> None:
    """``mpc datasets split``: every training file lists the same records under the same ids
    (each in an order of its own), the class only at its holder; the new records go to
    ``PARTY-new.csv`` without it; wrong parts are refused naming what is wrong."""
    from mpc.datasets import write_party_files

    car, _ = load_dataset("car", None)
    parts = {"a": ["buying", "maint"], "b": ["doors"], "c": ["safety"]}
    written = write_party_files(car, parts, tmp_path, new=28, seed=5)
    assert [f.path.name for f in written] == ["a.csv", "a-new.csv", "b.csv", "b-new.csv",
                                              "c.csv", "c-new.csv"]  # fmt: skip
    rows = {n: (tmp_path / f"{n}.csv").read_text().split() for n in parts}
    ids = {n: [r.split(",")[0] for r in rows[n][1:]] for n in parts}
    assert ids["a"] != ids["b"] and sorted(ids["a"]) == sorted(ids["b"]) == sorted(ids["c"])
    assert len(ids["a"]) == car.n_rows - 28 and rows["c"][0] == "id,safety,class"
    assert (tmp_path / "c-new.csv").read_text().split()[0] == "id,safety"
    held = load_csv(tmp_path / "c.csv", "class", id_column="id")
    assert held.n_rows == car.n_rows - 28 and held.attributes == ("safety",)
    for bad, message in (
        ({"a": ["colour"]}, r"car has no column 'colour'"),
        ({"a": ["doors"], "b": ["doors"]}, r"columns \['doors'\] are given to more than one"),
    ):
        with pytest.raises(DataError, match=message):
            write_party_files(car, bad, tmp_path / "x")
    with pytest.raises(DataError, match=r"the class goes to 'z', which is not one of"):
        write_party_files(car, parts, tmp_path / "x", class_at="z")
    with pytest.raises(DataError, match=r"new records: expected 0 to 1727, got 1728"):
        write_party_files(car, parts, tmp_path / "x", new=1728)


def test_the_warnings_before_a_tree_that_will_not_generalise() -> None:
    """A nominal column with nearly one value per record and a one-class label are each
    named in a line that says what to do; a table with neither gets no warning."""
    from mpc.datasets import NOMINAL, kinds_warning

    n = 40
    notes = np.array([f"note {i}" for i in range(n)], dtype=object)
    colour = np.array(["red", "blue"] * (n // 2), dtype=object)
    target = np.array(["yes", "no"] * (n // 2), dtype=object)
    table = Table("t", ("notes", "colour"), (NOMINAL, NOMINAL), (notes, colour), target,
                  "label", "memory")  # fmt: skip
    warning = kinds_warning(table)
    assert warning is not None
    assert "nearly one value per record: notes (40 values in 40 rows)" in warning
    assert "--ignore notes" in warning and "single leaf" not in warning
    one_class = Table("t", ("colour",), (NOMINAL,), (colour,),
                      np.array(["yes"] * n, dtype=object), "label", "memory")  # fmt: skip
    assert "the class column 'label' has one value ('yes')" in (kinds_warning(one_class) or "")
    fine = Table("t", ("colour",), (NOMINAL,), (colour,), target, "label", "memory")
    assert kinds_warning(fine) is None
