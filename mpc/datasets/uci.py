"""The UCI datasets of the experiments, from the data directory, each checked against its
``schema.json``; and Quinlan's weather table, embedded in the package.

The data directory is ``--data-dir``, else ``$MPC_DATA_DIR``, else ``../shared/datasets`` next
to the repository, else the user's data directory (:func:`resolve_data_dir`);
``MPC_NO_DATA_DIR=1`` leaves only ``--data-dir``
(:data:`~mpc.datasets.table.NO_DATA_DIR_ENV`). The tables the package ships are read from
the package when the data directory has no copy. Each dataset folder has a ``schema.json``
(column names and types, class column, declared values, missing-value marker, delimiter,
lines to skip); every field is checked against it while reading::

    car/car.data:7: column 'buying' (field 1): value 'cheap' is not one of the values declared
    in car/schema.json (high, low, med, vhigh); fix the file or add the value there
"""

from __future__ import annotations

import importlib.resources
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mpc.datasets.fetch import packaged_schema, shipped_folder, user_data_dir
from mpc.datasets.fields import (
    Column,
    build_table,
    field_count_error,
    read_text,
)
from mpc.datasets.table import (
    CONTINUOUS,
    DATA_DIR_ENV,
    KINDS,
    NO_DATA_DIR_ENV,
    NOMINAL,
    DataError,
    Table,
    no_data_dir,
)


@dataclass(frozen=True)
class _Spec:
    """Where a named dataset lives in the data directory."""

    name: str
    train: str
    test: str | None = None
    test_label_suffix: str = ""  # stripped from the test file's class labels (adult: ".")
    arff: bool = False


_SPECS: tuple[_Spec, ...] = (
    _Spec("adult", "adult.data", "adult.test", test_label_suffix="."),
    _Spec("mushroom", "agaricus-lepiota.data"),
    _Spec("house-votes-84", "house-votes-84.data"),
    _Spec("autos", "imports-85.data"),
    _Spec("australian", "australian.dat"),
    _Spec("tic-tac-toe", "tic-tac-toe.data"),
    _Spec("car", "car.data"),
    _Spec("weather", "weather.nominal.arff", arff=True),
    _Spec("nursery", "nursery.data"),
    _Spec("kr-vs-kp", "kr-vs-kp.data"),
)

#: The dataset names :func:`load_dataset` knows, in the order :func:`available_datasets` lists.
KNOWN_DATASETS: tuple[str, ...] = tuple(s.name for s in _SPECS)

_WEATHER_COLUMNS = (
    Column("outlook", NOMINAL, frozenset({"sunny", "overcast", "rainy"})),
    Column("temperature", NOMINAL, frozenset({"hot", "mild", "cool"})),
    Column("humidity", NOMINAL, frozenset({"high", "normal"})),
    Column("windy", NOMINAL, frozenset({"TRUE", "FALSE"})),
    Column("play", NOMINAL, frozenset({"yes", "no"})),
)


@dataclass(frozen=True)
class _Schema:
    path: Path
    title: str
    columns: tuple[Column, ...]
    class_index: int
    missing: str | None
    delimiter: str
    header_row: bool
    skip_lines: dict[str, int]
    rows: dict[str, int]


def _load_schema(folder: Path) -> _Schema:
    path = folder / "schema.json"
    if not path.is_file() and packaged_schema(folder.name) is not None:
        path = packaged_schema(folder.name) or path  # a UCI file alone: the package's schema
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(
            "no such file; every dataset folder needs a schema.json describing its columns",
            file=path,
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"not valid JSON: {exc}", file=path) from exc
    if not isinstance(doc, dict):
        raise DataError("expected a JSON object", file=path)

    def bad(what: str) -> DataError:
        return DataError(what, file=path)

    raw_cols = doc.get("columns")
    if (
        not isinstance(raw_cols, list)
        or not raw_cols
        or not all(isinstance(c, dict) for c in raw_cols)
    ):
        raise bad('field "columns": expected a non-empty list of {"index", "name", "type"}')
    columns: list[Column] = []
    by_index = sorted(raw_cols, key=lambda c: c["index"] if isinstance(c.get("index"), int) else -1)
    for i, c in enumerate(by_index):
        if not isinstance(c, dict) or c.get("index") != i or not isinstance(c.get("name"), str):
            raise bad(
                f'field "columns": entry {i} must be an object with "index": {i} and a '
                f'"name"; got {c!r}'
            )
        kind = c.get("type")
        if kind not in KINDS:
            raise bad(
                f'field "columns": column {c["name"]!r} has type {kind!r}; '
                f"expected one of {list(KINDS)}"
            )
        values = c.get("values")
        if values is not None and (
            not isinstance(values, list) or not all(isinstance(v, str) for v in values)
        ):
            raise bad(f'field "columns": "values" of column {c["name"]!r} must be strings')
        columns.append(Column(c["name"], kind, None if values is None else frozenset(values)))
    cls = doc.get("class_column")
    if not isinstance(cls, dict) or not isinstance(cls.get("index"), int):
        raise bad('field "class_column": expected {"index": I, "name": NAME}')
    class_index = cls["index"]
    if not 0 <= class_index < len(columns) or cls.get("name", columns[class_index].name) != (
        columns[class_index].name
    ):
        raise bad(
            f'field "class_column": {cls!r} does not match a column of "columns" '
            f"(names: {[c.name for c in columns]})"
        )
    missing = doc.get("missing_value_marker")
    if missing is not None and not isinstance(missing, str):
        raise bad(f'field "missing_value_marker": expected a string or null, got {missing!r}')
    fmt = doc.get("format", {})
    if not isinstance(fmt, dict):
        raise bad(f'field "format": expected an object, got {fmt!r}')
    delimiter = fmt.get("delimiter", ",")
    if not isinstance(delimiter, str) or not delimiter:
        raise bad(f'field "format.delimiter": expected a non-empty string, got {delimiter!r}')
    skip = fmt.get("skip_lines", {})
    if not isinstance(skip, dict) or not all(
        isinstance(v, int | list) and not isinstance(v, bool) for v in skip.values()
    ):
        raise bad(
            'field "format.skip_lines": expected {FILE: number of leading lines, or a list '
            f"describing each}}, got {skip!r}"
        )
    rows = doc.get("rows", {})
    if not isinstance(rows, dict):
        raise bad(f'field "rows": expected {{FILE: row count}}, got {rows!r}')
    return _Schema(
        path=path,
        title=str(doc.get("uci_name", doc.get("dataset", folder.name))),
        columns=tuple(columns),
        class_index=class_index,
        missing=missing,
        delimiter=delimiter,
        header_row=bool(fmt.get("header_row", False)),
        skip_lines={k: v if isinstance(v, int) else len(v) for k, v in skip.items()},
        rows={k: v for k, v in rows.items() if isinstance(v, int)},
    )


def _read_delimited(
    path: Path, delimiter: str, names: Sequence[str], *, skip: int = 0
) -> tuple[list[list[str]], list[int]]:
    """The records of a UCI data file (no quoting): fields split on the delimiter, then
    stripped of whitespace; blank lines are ignored; ``skip`` leading lines are dropped."""
    text = read_text(path)
    if not text.strip():
        raise DataError("the file is empty; expected one record per line", file=path, line=1)
    sep = delimiter.strip() or None  # ", " -> ","; " " -> any run of whitespace
    shown = repr(sep) if sep is not None else "whitespace"
    n = len(names)
    records: list[list[str]] = []
    line_nos: list[int] = []
    for no, line in enumerate(text.split("\n")[skip:], start=skip + 1):
        if not line or line.isspace():
            continue
        fields = [f.strip() for f in line.split(sep)]
        if len(fields) != n:
            raise field_count_error(path, no, names, len(fields), shown)
        records.append(fields)
        line_nos.append(no)
    if not records:
        raise DataError("no data rows after the skipped lines", file=path, line=skip + 1)
    return records, line_nos


_ARFF_ATTRIBUTE = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.+)$", re.IGNORECASE)


def _read_arff(path: Path) -> tuple[list[Column], list[list[str]], list[int]]:
    """The attributes and data records of a (dense, unquoted-value) ARFF file."""
    text = read_text(path)
    columns: list[Column] = []
    records: list[list[str]] = []
    line_nos: list[int] = []
    in_data = False
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        if in_data:
            fields = [f.strip().strip("'\"") for f in line.split(",")]
            if len(fields) != len(columns):
                raise field_count_error(path, no, [c.name for c in columns], len(fields), "','")
            records.append(fields)
            line_nos.append(no)
            continue
        low = line.lower()
        if low.startswith("@relation"):
            continue
        if low.startswith("@data"):
            in_data = True
            continue
        m = _ARFF_ATTRIBUTE.match(line)
        if not m:
            raise DataError(
                f"expected @relation, @attribute NAME TYPE or @data, got {line[:60]!r}",
                file=path,
                line=no,
            )
        name, spec = m.group(1).strip("'\""), m.group(2).strip()
        if spec.startswith("{") and spec.endswith("}"):
            values = frozenset(v.strip().strip("'\"") for v in spec[1:-1].split(","))
            columns.append(Column(name, NOMINAL, values))
        elif spec.lower() in ("numeric", "real", "integer"):
            columns.append(Column(name, CONTINUOUS))
        else:
            raise DataError(
                f"attribute {name!r} has type {spec!r}; only {{...}}, numeric, real and "
                "integer attributes are supported",
                file=path,
                line=no,
            )
    if not records:
        raise DataError("no @data rows", file=path, line=1)
    return columns, records, line_nos


# --------------------------------------------------------------------------------------------
# The data directory and the named datasets


def _repository_default() -> Path:
    # mpc/datasets/__init__.py -> the folder that holds the repository
    return Path(__file__).resolve().parents[3] / "shared" / "datasets"


def default_data_dir() -> Path | None:
    """``$MPC_DATA_DIR`` if set, else ``../shared/datasets`` next to the repository if it
    exists, else the user's data directory (:func:`mpc.datasets.fetch.user_data_dir`, where
    ``mpc datasets fetch`` writes) if it exists, else ``None``; always ``None`` with
    ``MPC_NO_DATA_DIR=1``. (Whether ``$MPC_DATA_DIR`` exists is checked by
    :func:`resolve_data_dir`.)"""
    if no_data_dir():
        return None
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    for default in (_repository_default(), user_data_dir()):
        if default.is_dir():
            return default
    return None


def resolve_data_dir(cli_value: str | Path | None) -> Path | None:
    """The data directory to use: ``--data-dir`` if given, else ``$MPC_DATA_DIR``, else the
    repository default (``None`` if there is none, or with ``MPC_NO_DATA_DIR=1``). A given
    directory that does not exist raises :class:`DataError` naming it."""
    if cli_value is not None and str(cli_value) != "":
        path, origin = Path(cli_value), "--data-dir"
    elif os.environ.get(DATA_DIR_ENV) and not no_data_dir():
        path, origin = Path(os.environ[DATA_DIR_ENV]), f"${DATA_DIR_ENV}"
    else:
        return default_data_dir()
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist"
        raise DataError(
            f"data directory {str(path)!r} (from {origin}) {what}; point it at the folder "
            f"holding the dataset folders ({', '.join(KNOWN_DATASETS[:3])}, ...)"
        )
    return path


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset as :func:`available_datasets` lists it."""

    name: str
    rows: int  # all rows, training and test files together
    attributes: int  # attributes, the class excluded
    class_name: str
    source: tuple[str, ...]  # the data files
    title: str = ""
    test_rows: int | None = None  # rows of the test file (adult), else None


def _spec(name: str) -> _Spec:
    for s in _SPECS:
        if s.name == name:
            return s
    raise DataError(f"unknown dataset {name!r}; known datasets: {', '.join(KNOWN_DATASETS)}")


def _embedded_weather_text() -> str:
    return (
        importlib.resources.files("mpc.datasets").joinpath("data", "weather.csv").read_text("utf-8")
    )


def available_datasets(data_dir: Path | None) -> list[DatasetInfo]:
    """The named datasets found in ``data_dir`` (a folder with ``schema.json`` and the data
    files), in :data:`KNOWN_DATASETS` order. ``weather`` is always there: without the folder
    it is the embedded table."""
    infos: list[DatasetInfo] = []
    for spec in _SPECS:
        folder = None if data_dir is None else Path(data_dir) / spec.name
        if folder is None or not folder.is_dir():
            folder = shipped_folder(spec.name) or folder
        files = [spec.train] + ([spec.test] if spec.test else [])
        if (
            folder is not None
            and ((folder / "schema.json").is_file() or packaged_schema(spec.name) is not None)
            and all((folder / f).is_file() for f in files)
        ):
            schema = _load_schema(folder)
            if all(f in schema.rows for f in files):
                counts = [schema.rows[f] for f in files]
            else:  # the schema does not say: count by loading
                train, test = load_dataset(spec.name, folder.parent)
                counts = [t.n_rows for t in (train, test) if t is not None]
            infos.append(
                DatasetInfo(
                    name=spec.name,
                    rows=sum(counts),
                    attributes=len(schema.columns) - 1,
                    class_name=schema.columns[schema.class_index].name,
                    source=tuple(str(folder / f) for f in files),
                    title=schema.title,
                    test_rows=counts[1] if spec.test else None,
                )
            )
        elif spec.name == "weather":
            w = weather()
            infos.append(
                DatasetInfo(
                    name="weather",
                    rows=w.n_rows,
                    attributes=len(w.attributes),
                    class_name=w.class_name,
                    source=(w.source,),
                    title="Weather / play-tennis (Quinlan), embedded",
                )
            )
    return infos


def load_dataset(name: str, data_dir: Path | None = None) -> tuple[Table, Table | None]:
    """``(train, test)`` of the named dataset; ``test`` is ``None`` except for ``adult``
    (``adult.data`` / ``adult.test``, whose labels lose their trailing ``.``).

    ``data_dir`` is the folder holding the dataset folders (see :func:`resolve_data_dir`);
    ``weather`` needs none (it falls back to the embedded table), nor do the small tables the
    package ships (car, house-votes-84, tic-tac-toe, kr-vs-kp: :func:`shipped_folder`), which
    are read from the package when ``data_dir`` has no folder of their name."""
    spec = _spec(name)
    shipped = shipped_folder(spec.name)
    if shipped is not None and (data_dir is None or not (Path(data_dir) / spec.name).is_dir()):
        data_dir = shipped.parent  # the package's own copy
    if data_dir is None:
        if spec.name == "weather":
            return weather(), None
        off = f" (${NO_DATA_DIR_ENV} is set)" if no_data_dir() else ""
        raise DataError(
            f"dataset {name!r} is not shipped with the package and no data directory was "
            f"found{off}: `mpc datasets fetch {name}` downloads it from the UCI archive into "
            f"{user_data_dir()}, where every command looks; or pass --data-dir DIR or set "
            f"{DATA_DIR_ENV} to a folder that holds it (from Python: "
            f"load_dataset({name!r}, resolve_data_dir(None)))"
        )
    folder = Path(data_dir) / spec.name
    if spec.name == "weather" and not (folder / spec.train).is_file():
        return weather(), None
    if not folder.is_dir():
        raise DataError(
            f"dataset {name!r} is not in the data directory {str(data_dir)!r}: "
            f"expected a folder {str(folder)!r} with schema.json and {spec.train}; "
            f"`mpc datasets fetch {name} --data-dir {data_dir}` downloads it there"
        )
    schema = _load_schema(folder)
    names = [c.name for c in schema.columns]
    if spec.arff:
        train = _load_arff_with_schema(folder / spec.train, schema, spec.name)
    else:
        train = _load_with_schema(folder / spec.train, schema, spec.name, names)
    test = None
    if spec.test is not None:
        test = _load_with_schema(
            folder / spec.test, schema, spec.name, names, label_suffix=spec.test_label_suffix
        )
    return train, test


def _load_with_schema(
    path: Path, schema: _Schema, name: str, names: Sequence[str], *, label_suffix: str = ""
) -> Table:
    skip = schema.skip_lines.get(path.name, 0) + (1 if schema.header_row else 0)
    records, line_nos = _read_delimited(path, schema.delimiter, names, skip=skip)
    _check_row_count(path, schema, len(records))
    return build_table(
        name,
        path,
        records,
        line_nos,
        schema.columns,
        schema.class_index,
        schema.missing,
        declared_in=schema.path,
        label_suffix=label_suffix,
    )


def _load_arff_with_schema(path: Path, schema: _Schema, name: str) -> Table:
    declared, records, line_nos = _read_arff(path)
    got, expected = [c.name for c in declared], [c.name for c in schema.columns]
    if got != expected:
        raise DataError(
            f"the @attribute names {got} differ from the columns of {schema.path} {expected}",
            file=path,
        )
    _check_row_count(path, schema, len(records))
    return build_table(
        name,
        path,
        records,
        line_nos,
        schema.columns,
        schema.class_index,
        schema.missing,
        declared_in=schema.path,
    )


def _check_row_count(path: Path, schema: _Schema, n: int) -> None:
    expected = schema.rows.get(path.name)
    if expected is not None and expected != n:
        raise DataError(
            f"{n} data rows, but {schema.path} says {expected}; the file is not the copy the "
            "schema describes (truncated or modified?)",
            file=path,
        )


def weather() -> Table:
    """Quinlan's weather (play-tennis) table: 14 rows, 4 nominal attributes, class ``play``,
    embedded in the package as ``mpc/datasets/data/weather.csv`` (the rows of Weka's
    ``weather.nominal.arff``, in the same order)."""
    text = _embedded_weather_text()
    path = Path("mpc/datasets/data/weather.csv")
    names = [c.name for c in _WEATHER_COLUMNS]
    lines = text.split("\n")
    header = [h.strip() for h in lines[0].split(",")]
    if header != names:
        raise DataError(f"header {header} differs from {names}", file=path, line=1)
    records: list[list[str]] = []
    line_nos: list[int] = []
    for no, line in enumerate(lines[1:], start=2):
        if line.strip():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != len(names):
                raise field_count_error(path, no, names, len(fields), "','")
            records.append(fields)
            line_nos.append(no)
    return build_table(
        "weather",
        path,
        records,
        line_nos,
        _WEATHER_COLUMNS,
        len(names) - 1,
        None,
        source=f"{path} (embedded)",
    )
