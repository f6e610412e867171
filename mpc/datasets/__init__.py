"""Datasets: the UCI tables of the experiments, any CSV file, synthetic tables, and the
vertical partitioning of a table over ``k`` sites.

A :class:`Table` holds one dataset in memory, column by column::

    Table(name="weather", attributes=("outlook", ...), kinds=("nominal", ...),
          columns=(array(["sunny", ...], dtype=object), ...),
          target=array(["no", ...], dtype=object), class_name="play", source="...")

Nominal columns are numpy arrays of ``str`` with a missing value kept as the literal ``"?"``;
continuous columns are ``float64`` with NaN for a missing value; the class labels are ``str``.

Where the data comes from:

* :func:`load_dataset` reads one of the UCI datasets of :data:`KNOWN_DATASETS` from the data
  directory (``../shared/datasets`` next to the repository, or ``$MPC_DATA_DIR``, or
  ``--data-dir``; see :func:`resolve_data_dir`). Each dataset folder has a ``schema.json``
  (column names and types, class column, declared values, missing-value marker, delimiter,
  lines to skip); every field is checked against it while reading.
* :func:`weather` is Quinlan's 14-row weather table, shipped inside the package as
  ``mpc/datasets/data/weather.csv``, so it works with no data directory at all.
* :func:`load_csv` reads any CSV file with a header row; :func:`synthetic` labels random rows
  with a planted decision tree.

Every problem with a data file raises :class:`DataError`, whose message names the file, the
line (1-based, as an editor shows it) and the column (name and 0-based field index, as in
``schema.json``)::

    car/car.data:7: column 'buying' (field 1): value 'cheap' is not one of the values declared
    in car/schema.json (high, low, med, vhigh); fix the file or add the value there

For the vertically partitioned protocols, :func:`partition` assigns attributes to sites,
:func:`split_vertically` gives each site its columns keyed by common transaction ids, and
:func:`join_sites` is its inverse. :class:`Discretizer` turns continuous attributes into
nominal ones (equal-frequency bins learned on training rows only) for ID3.
"""

from __future__ import annotations

import csv
import importlib.resources
import itertools
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from mpc.errors import ConfigError

__all__ = [
    "FEW_VALUES",
    "KNOWN_DATASETS",
    "MISSING",
    "DataError",
    "DatasetInfo",
    "Discretizer",
    "Partition",
    "PartyTable",
    "SiteData",
    "Table",
    "available_datasets",
    "csv_header",
    "default_data_dir",
    "few_valued_continuous",
    "join_sites",
    "kinds_warning",
    "load_csv",
    "load_dataset",
    "load_party_csv",
    "partition",
    "resolve_data_dir",
    "split_vertically",
    "synthetic",
    "weather",
]

#: How a missing nominal value is spelled in a :class:`Table` (whatever the file used).
MISSING = "?"

#: The environment variable naming the data directory.
DATA_DIR_ENV = "MPC_DATA_DIR"

NOMINAL = "nominal"
CONTINUOUS = "continuous"
_KINDS = (NOMINAL, CONTINUOUS)


class DataError(ConfigError):
    """A data file, a schema or a data parameter is wrong.

    ``file``, ``line`` (1-based) and ``column`` / ``index`` (0-based field position) say where,
    when known; the message reads ``FILE:LINE: column 'NAME' (field N): WHAT IS WRONG``, with
    N counted from 1.
    """

    def __init__(
        self,
        what: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        column: str | None = None,
        index: int | None = None,
        public: str | None = None,
    ) -> None:
        self.file = None if file is None else str(file)
        #: what is wrong, in words that quote no value of the file (for a party's peers)
        self.public = public
        self.line = line
        self.column = column
        self.index = index
        where = ""
        if self.file is not None:
            where = f"{self.file}:{line}: " if line is not None else f"{self.file}: "
        if column is not None:
            field = f" (field {index + 1})" if index is not None else ""
            where += f"column {column!r}{field}: "
        elif index is not None:
            where += f"field {index + 1}: "
        super().__init__(where + what)


# --------------------------------------------------------------------------------------------
# Table


@dataclass(frozen=True, eq=False, repr=False)
class Table:
    """One dataset in memory, column by column (see the module docstring).

    ``target`` is empty (and ``class_name`` is ``""``) on a site that does not hold the class
    (:func:`split_vertically`). Two tables are ``==`` when every field is equal (NaN equals
    NaN in continuous columns).
    """

    name: str
    attributes: tuple[str, ...]
    kinds: tuple[str, ...]
    columns: tuple[np.ndarray, ...]
    target: np.ndarray
    class_name: str
    source: str

    def __post_init__(self) -> None:
        attributes = tuple(str(a) for a in self.attributes)
        kinds = tuple(self.kinds)
        if not len(attributes) == len(kinds) == len(self.columns):
            raise DataError(
                f"table {self.name!r}: {len(attributes)} attributes, {len(kinds)} kinds and "
                f"{len(self.columns)} columns; give one kind and one column per attribute"
            )
        if len(set(attributes)) != len(attributes):
            dupes = sorted({a for a in attributes if attributes.count(a) > 1})
            raise DataError(f"table {self.name!r}: attributes {dupes} appear more than once")
        columns = []
        for a, kind, col in zip(attributes, kinds, self.columns, strict=True):
            if kind not in _KINDS:
                raise DataError(
                    f"table {self.name!r}: attribute {a!r} has kind {kind!r}; "
                    f"expected one of {list(_KINDS)}"
                )
            arr = np.asarray(col, dtype=np.float64) if kind == CONTINUOUS else np.asarray(col)
            if arr.ndim != 1:
                raise DataError(
                    f"table {self.name!r}: column {a!r} must be one-dimensional, "
                    f"got shape {arr.shape}"
                )
            columns.append(arr)
        target = np.asarray(self.target)
        n = len(columns[0]) if columns else len(target)
        for a, arr in zip(attributes, columns, strict=True):
            if len(arr) != n:
                raise DataError(
                    f"table {self.name!r}: column {a!r} has {len(arr)} rows, "
                    f"column {attributes[0]!r} has {n}; every column needs the same rows"
                )
        if target.ndim != 1 or len(target) not in ((n, 0) if not self.class_name else (n,)):
            raise DataError(
                f"table {self.name!r}: the class column {self.class_name!r} has "
                f"{len(target)} labels for {n} rows"
            )
        object.__setattr__(self, "attributes", attributes)
        object.__setattr__(self, "kinds", kinds)
        object.__setattr__(self, "columns", tuple(columns))
        object.__setattr__(self, "target", target)

    @property
    def n_rows(self) -> int:
        """The number of rows."""
        return len(self.columns[0]) if self.columns else len(self.target)

    def column(self, name: str) -> np.ndarray:
        """The column of attribute ``name``."""
        return self.columns[self._index(name)]

    def kind(self, name: str) -> str:
        """``"nominal"`` or ``"continuous"``: the kind of attribute ``name``."""
        return self.kinds[self._index(name)]

    def subset(self, rows: np.ndarray | Sequence[int]) -> Table:
        """The rows selected by an index array or a boolean mask, in that order."""
        idx = np.asarray(rows)
        if idx.dtype == np.bool_:
            if idx.shape != (self.n_rows,):
                raise DataError(
                    f"table {self.name!r}: a boolean row mask needs {self.n_rows} entries, "
                    f"got shape {idx.shape}"
                )
        elif idx.size == 0:
            idx = idx.astype(np.int64)
        elif not np.issubdtype(idx.dtype, np.integer):
            raise DataError(
                f"table {self.name!r}: rows must be integer indices or a boolean mask, "
                f"got dtype {idx.dtype}"
            )
        target = self.target[idx] if len(self.target) else self.target
        return replace(self, columns=tuple(c[idx] for c in self.columns), target=target)

    def concat(self, other: Table) -> Table:
        """This table's rows followed by ``other``'s (same attributes, kinds and class); the
        source names both (``"adult.data + adult.test"``) when they differ."""
        if (other.attributes, other.kinds, other.class_name) != (
            self.attributes, self.kinds, self.class_name
        ):  # fmt: skip
            raise DataError(
                f"table {self.name!r}: cannot append rows of {other.name!r} with other "
                "attributes, kinds or class"
            )
        return replace(
            self,
            columns=tuple(
                np.concatenate([a, b]) for a, b in zip(self.columns, other.columns, strict=True)
            ),
            target=np.concatenate([self.target, other.target]),
            source=self.source
            if other.source == self.source
            else f"{self.source} + {other.source}",
        )

    def select(self, attributes: Sequence[str]) -> Table:
        """A table with only ``attributes``, in the given order (the class is kept)."""
        names = [str(a) for a in attributes]
        dupes = sorted({a for a in names if names.count(a) > 1})
        if dupes:
            raise DataError(f"table {self.name!r}: attributes {dupes} selected more than once")
        idx = [self._index(a) for a in names]
        return replace(
            self,
            attributes=tuple(names),
            kinds=tuple(self.kinds[i] for i in idx),
            columns=tuple(self.columns[i] for i in idx),
        )

    def _index(self, name: str) -> int:
        try:
            return self.attributes.index(name)
        except ValueError:
            raise DataError(
                f"table {self.name!r} has no attribute {name!r}; "
                f"its attributes are {list(self.attributes)}"
            ) from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Table):
            return NotImplemented
        if (self.name, self.attributes, self.kinds, self.class_name, self.source) != (
            other.name,
            other.attributes,
            other.kinds,
            other.class_name,
            other.source,
        ):
            return False
        if not _same_values(self.target, other.target, continuous=False):
            return False
        return all(
            _same_values(a, b, continuous=k == CONTINUOUS)
            for k, a, b in zip(self.kinds, self.columns, other.columns, strict=True)
        )

    def __repr__(self) -> str:
        return (
            f"Table(name={self.name!r}, n_rows={self.n_rows}, attributes={self.attributes!r}, "
            f"class_name={self.class_name!r}, source={self.source!r})"
        )


def _same_values(a: np.ndarray, b: np.ndarray, *, continuous: bool) -> bool:
    if a.shape != b.shape:
        return False
    if continuous:
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.all(a == b)) if len(a) else True


# --------------------------------------------------------------------------------------------
# Reading files


@dataclass(frozen=True)
class _Column:
    name: str
    kind: str
    values: frozenset[str] | None = None  # the declared domain, if any


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
    _Column("outlook", NOMINAL, frozenset({"sunny", "overcast", "rainy"})),
    _Column("temperature", NOMINAL, frozenset({"hot", "mild", "cool"})),
    _Column("humidity", NOMINAL, frozenset({"high", "normal"})),
    _Column("windy", NOMINAL, frozenset({"TRUE", "FALSE"})),
    _Column("play", NOMINAL, frozenset({"yes", "no"})),
)


@dataclass(frozen=True)
class _Schema:
    path: Path
    title: str
    columns: tuple[_Column, ...]
    class_index: int
    missing: str | None
    delimiter: str
    header_row: bool
    skip_lines: dict[str, int]
    rows: dict[str, int]


def _load_schema(folder: Path) -> _Schema:
    path = folder / "schema.json"
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
    columns: list[_Column] = []
    by_index = sorted(raw_cols, key=lambda c: c["index"] if isinstance(c.get("index"), int) else -1)
    for i, c in enumerate(by_index):
        if not isinstance(c, dict) or c.get("index") != i or not isinstance(c.get("name"), str):
            raise bad(
                f'field "columns": entry {i} must be an object with "index": {i} and a '
                f'"name"; got {c!r}'
            )
        kind = c.get("type")
        if kind not in _KINDS:
            raise bad(
                f'field "columns": column {c["name"]!r} has type {kind!r}; '
                f"expected one of {list(_KINDS)}"
            )
        values = c.get("values")
        if values is not None and (
            not isinstance(values, list) or not all(isinstance(v, str) for v in values)
        ):
            raise bad(f'field "columns": "values" of column {c["name"]!r} must be strings')
        columns.append(_Column(c["name"], kind, None if values is None else frozenset(values)))
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


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("no such file", file=path) from None
    except IsADirectoryError:
        raise DataError("is a directory, expected a data file", file=path) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text: {exc}", file=path) from exc


def _field_count_error(
    path: Path, line: int, names: Sequence[str], got: int, sep: str
) -> DataError:
    """``sep`` is how the delimiter is shown (``"','"``, ``"whitespace"``)."""
    expected = len(names)
    what = f"expected {expected} fields separated by {sep}, got {got}"
    if got < expected:
        return DataError(
            f"not on this line; {what}", file=path, line=line, column=names[got], index=got
        )
    return DataError(
        f"one field too many after the last column {names[-1]!r}; {what}"
        if got == expected + 1
        else f"{got - expected} fields too many after the last column {names[-1]!r}; {what}",
        file=path,
        line=line,
        index=expected,
    )


def _read_delimited(
    path: Path, delimiter: str, names: Sequence[str], *, skip: int = 0
) -> tuple[list[list[str]], list[int]]:
    """The records of a UCI data file (no quoting): fields split on the delimiter, then
    stripped of whitespace; blank lines are ignored; ``skip`` leading lines are dropped."""
    text = _read_text(path)
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
            raise _field_count_error(path, no, names, len(fields), shown)
        records.append(fields)
        line_nos.append(no)
    if not records:
        raise DataError("no data rows after the skipped lines", file=path, line=skip + 1)
    return records, line_nos


_ARFF_ATTRIBUTE = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+(.+)$", re.IGNORECASE)


def _read_arff(path: Path) -> tuple[list[_Column], list[list[str]], list[int]]:
    """The attributes and data records of a (dense, unquoted-value) ARFF file."""
    text = _read_text(path)
    columns: list[_Column] = []
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
                raise _field_count_error(path, no, [c.name for c in columns], len(fields), "','")
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
            columns.append(_Column(name, NOMINAL, values))
        elif spec.lower() in ("numeric", "real", "integer"):
            columns.append(_Column(name, CONTINUOUS))
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


def _parse_floats(
    values: Sequence[str],
    missing: str | None,
    path: Path,
    line_nos: Sequence[int],
    name: str,
    j: int,
) -> np.ndarray:
    nan = math.nan
    try:
        return np.array([nan if v == missing else float(v) for v in values], dtype=np.float64)
    except ValueError:
        pass
    for i, v in enumerate(values):
        if v == missing:
            continue
        try:
            float(v)
        except ValueError:
            also = f" nor the missing-value marker {missing!r}" if missing is not None else ""
            raise DataError(
                f"{v!r} is not a number{also}; this column is continuous",
                file=path,
                line=line_nos[i],
                column=name,
                index=j,
            ) from None
    raise AssertionError("unreachable: a value failed to parse but none fails alone")


def _check_domain(
    values: Sequence[str],
    col: _Column,
    missing: str | None,
    path: Path,
    line_nos: Sequence[int],
    j: int,
    declared_in: Path | None,
) -> None:
    if col.values is None:
        return
    bad = set(values) - col.values - ({missing} if missing is not None else set())
    if not bad:
        return
    i = next(i for i, v in enumerate(values) if v in bad)
    where = f" in {declared_in}" if declared_in is not None else ""
    allowed = ", ".join(sorted(col.values))
    hint = "" if missing is None else f" (or the missing-value marker {missing!r})"
    raise DataError(
        f"value {values[i]!r} is not one of the values declared{where} ({allowed}){hint}; "
        "fix the file or add the value there",
        file=path,
        line=line_nos[i],
        column=col.name,
        index=j,
    )


def _build(
    name: str,
    path: Path,
    records: list[list[str]],
    line_nos: list[int],
    columns: Sequence[_Column],
    class_index: int,
    missing: str | None,
    *,
    source: str | None = None,
    declared_in: Path | None = None,
    label_suffix: str = "",
) -> Table:
    """Check every field of ``records`` against ``columns`` and build the :class:`Table`."""
    fields: list[tuple[str, ...]] = (
        list(zip(*records, strict=True)) if records else [() for _ in columns]
    )
    attributes: list[str] = []
    kinds: list[str] = []
    arrays: list[np.ndarray] = []
    target = np.empty(0, dtype=object)
    for j, col in enumerate(columns):
        values = fields[j]
        if j == class_index or col.kind == NOMINAL:
            _check_domain(values, col, missing, path, line_nos, j, declared_in)
        if j == class_index:
            labels: Sequence[str] = values
            if label_suffix:
                cut = len(label_suffix)
                labels = [v[:-cut] if v.endswith(label_suffix) else v for v in values]
            target = np.array(labels, dtype=object)
            continue
        if col.kind == CONTINUOUS:
            arr = _parse_floats(values, missing, path, line_nos, col.name, j)
        else:
            if missing is not None and missing != MISSING:
                values = tuple(MISSING if v == missing else v for v in values)
            arr = np.array(values, dtype=object)
        attributes.append(col.name)
        kinds.append(col.kind)
        arrays.append(arr)
    return Table(
        name=name,
        attributes=tuple(attributes),
        kinds=tuple(kinds),
        columns=tuple(arrays),
        target=target,
        class_name=columns[class_index].name,
        source=str(path) if source is None else source,
    )


# --------------------------------------------------------------------------------------------
# The data directory and the named datasets


def _repository_default() -> Path:
    # mpc/datasets/__init__.py -> the folder that holds the repository
    return Path(__file__).resolve().parents[3] / "shared" / "datasets"


def default_data_dir() -> Path | None:
    """``$MPC_DATA_DIR`` if set, else ``../shared/datasets`` next to the repository if it
    exists, else ``None``. (Whether ``$MPC_DATA_DIR`` exists is checked by
    :func:`resolve_data_dir`.)"""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    default = _repository_default()
    return default if default.is_dir() else None


def resolve_data_dir(cli_value: str | Path | None) -> Path | None:
    """The data directory to use: ``--data-dir`` if given, else ``$MPC_DATA_DIR``, else the
    repository default (``None`` if there is none). A given directory that does not exist
    raises :class:`DataError` naming it."""
    if cli_value is not None and str(cli_value) != "":
        path, origin = Path(cli_value), "--data-dir"
    elif os.environ.get(DATA_DIR_ENV):
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
        files = [spec.train] + ([spec.test] if spec.test else [])
        if (
            folder is not None
            and (folder / "schema.json").is_file()
            and all((folder / f).is_file() for f in files)
        ):
            schema = _load_schema(folder)
            if all(f in schema.rows for f in files):
                counts = [schema.rows[f] for f in files]
            else:  # the schema does not say: count by loading
                train, test = load_dataset(spec.name, data_dir)
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
    ``weather`` needs none (it falls back to the embedded table)."""
    spec = _spec(name)
    if data_dir is None:
        if spec.name == "weather":
            return weather(), None
        raise DataError(
            f"dataset {name!r} needs the UCI data directory, and none was found: pass "
            f"--data-dir DIR or set {DATA_DIR_ENV} (from Python: "
            f"load_dataset({name!r}, resolve_data_dir(None)))"
        )
    folder = Path(data_dir) / spec.name
    if spec.name == "weather" and not (folder / spec.train).is_file():
        return weather(), None
    if not folder.is_dir():
        raise DataError(
            f"dataset {name!r} is not in the data directory {str(data_dir)!r}: "
            f"expected a folder {str(folder)!r} with schema.json and {spec.train}"
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
    return _build(
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
    return _build(
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
                raise _field_count_error(path, no, names, len(fields), "','")
            records.append(fields)
            line_nos.append(no)
    return _build(
        "weather",
        path,
        records,
        line_nos,
        _WEATHER_COLUMNS,
        len(names) - 1,
        None,
        source=f"{path} (embedded)",
    )


# --------------------------------------------------------------------------------------------
# Any CSV file


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _csv_records(
    path: Path, delimiter: str, quotechar: str, wanted: Sequence[tuple[str, str]]
) -> tuple[list[str], list[list[str]], list[int], int]:
    """The header, the records (fields stripped) and their line numbers of a CSV file; each of
    the ``wanted`` columns ``(name, what it is)`` must be in the header (the error names the
    first one missing)."""
    if len(delimiter) != 1 or delimiter in "\r\n":
        raise DataError(f"the delimiter must be one character, got {delimiter!r}", file=path)
    if len(quotechar) != 1 or quotechar == delimiter:
        raise DataError(
            f"the quote character must be one character other than the delimiter, got "
            f"{quotechar!r}",
            file=path,
        )
    try:
        fh = path.open(newline="", encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError("no such file; check the path", file=path) from None
    except IsADirectoryError:
        raise DataError("is a directory, expected a CSV file", file=path) from None
    except PermissionError:
        raise DataError("cannot read it (permission denied)", file=path) from None
    records: list[list[str]] = []
    line_nos: list[int] = []
    shown = repr(delimiter)
    with fh:
        reader = csv.reader(fh, delimiter=delimiter, quotechar=quotechar)
        try:
            header = next(reader, None)
            while header is not None and not any(h.strip() for h in header):
                header = next(reader, None)
            if header is None:
                raise DataError(
                    "the file is empty; expected a header row naming the columns"
                    + (f" (this {wanted[0][1]} among them)" if wanted else "")
                    + ", then one row per record",
                    file=path,
                    line=1,
                    column=wanted[0][0] if wanted else None,
                )
            header_line = reader.line_num
            names = [h.strip() for h in header]
            for j, h in enumerate(names):
                if not h:
                    raise DataError(
                        "empty column name in the header", file=path, line=header_line, index=j
                    )
                if names.index(h) != j:
                    raise DataError(
                        f"the header names this column twice (also field {names.index(h) + 1})",
                        file=path,
                        line=header_line,
                        column=h,
                        index=j,
                    )
            for w, what in wanted:
                if w not in names:
                    hint = f"; is the delimiter {shown}? (--delimiter)" if len(names) == 1 else ""
                    raise DataError(
                        f"the {what} is not in the header; the columns are {names}{hint}",
                        file=path,
                        line=header_line,
                        column=w,
                        public=(
                            f"its data file has no column {w!r}, which the deployment file "
                            "lists for it"
                            if what.startswith("column the deployment")
                            else f"its data file has no {what} {w!r}"
                        ),
                    )
            for row in reader:
                if not row or not any(f.strip() for f in row):
                    continue
                if len(row) != len(names):
                    raise _field_count_error(path, reader.line_num, names, len(row), shown)
                records.append([f.strip() for f in row])
                line_nos.append(reader.line_num)
        except csv.Error as exc:
            raise DataError(f"not valid CSV: {exc}", file=path, line=reader.line_num) from exc
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8 text: {exc}", file=path) from exc
    if not records:
        raise DataError(
            "the file has a header row but no data rows; add one row per record below it",
            file=path,
            line=header_line,
            public="its data file has a header row but no data rows",
        )
    return names, records, line_nos, header_line


def _column_kinds(
    path: Path,
    names: Sequence[str],
    records: Sequence[Sequence[str]],
    header_line: int,
    *,
    fixed: Sequence[str],
    missing: str,
    nominal: Sequence[str] | None,
    continuous: Sequence[str] | None,
) -> set[str]:
    """The continuous columns: those listed in ``continuous``, then (unless ``continuous`` is
    given without ``nominal``, which lists every continuous column) every column outside
    ``nominal`` and ``fixed`` whose non-missing values all parse as numbers."""
    listed_n = [str(c) for c in nominal or ()]
    listed_c = [str(c) for c in continuous or ()]
    for what, listed in (("nominal", listed_n), ("continuous", listed_c)):
        unknown = [c for c in listed if c not in names]
        if unknown:
            raise DataError(
                f"{what} columns {unknown} are not in the header; the columns are {list(names)}",
                file=path,
                line=header_line,
            )
    both = sorted(set(listed_n) & set(listed_c))
    if both:
        raise DataError(
            f"columns {both} are declared both nominal and continuous", file=path, line=header_line
        )
    for c in fixed:
        if c in listed_c:
            what = "class" if c == fixed[0] else "id"
            raise DataError(
                f"the {what} column cannot be continuous ({what} values are labels)",
                file=path,
                line=header_line,
                column=c,
                index=list(names).index(c),
            )
    cont = set(listed_c)
    if continuous is not None and nominal is None:
        return cont
    by_column = list(zip(*records, strict=True)) if records else []
    for j, values in enumerate(by_column):
        if names[j] in fixed or names[j] in listed_n or names[j] in cont:
            continue
        present = [v for v in set(values) if v != missing]
        if present and all(_is_number(v) for v in present):
            cont.add(names[j])
    return cont


def csv_header(path: str | Path, delimiter: str = ",") -> list[str] | None:
    """The column names of a CSV file's first non-blank row, or None when it cannot be read as
    CSV (reading the whole file then says why)."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            for row in csv.reader(fh, delimiter=delimiter):
                if any(f.strip() for f in row):
                    return [f.strip() for f in row]
    except (OSError, csv.Error, UnicodeDecodeError, TypeError):
        return None
    return None


def load_csv(
    path: str | Path,
    class_column: str,
    *,
    missing: str = MISSING,
    continuous: Sequence[str] | None = None,
    nominal: Sequence[str] | None = None,
    delimiter: str = ",",
    quotechar: str = '"',
) -> Table:
    """Read a CSV file with a header row. ``class_column`` names the class (always nominal).

    A column is continuous if it is listed in ``continuous``, nominal if it is listed in
    ``nominal``; any other column is continuous if every non-missing value parses as a number
    (and there is at least one), else nominal. Giving ``continuous`` alone (no ``nominal``)
    lists every continuous column. ``missing`` is the file's missing-value marker (nominal:
    kept as ``"?"``; continuous: NaN). Fields are stripped of surrounding whitespace; blank
    lines are ignored; ``delimiter`` and ``quotechar`` are those of :mod:`csv`.
    """
    path = Path(path)
    names, records, line_nos, header_line = _csv_records(
        path, delimiter, quotechar, [(class_column, "class column")]
    )
    cont = _column_kinds(
        path, names, records, header_line, fixed=[class_column], missing=missing,
        nominal=nominal, continuous=continuous,
    )  # fmt: skip
    columns = [_Column(n, CONTINUOUS if n in cont else NOMINAL) for n in names]
    return _build(path.stem, path, records, line_nos, columns, names.index(class_column), missing)


@dataclass(frozen=True)
class PartyTable:
    """One party's own file: its record ids and its columns (and the class, if it holds it).

    ``ids`` are the values of the id column, as strings, row by row; ``table`` has the
    party's attributes in file order (or in the order asked for) and, on the party that
    holds the class, the class."""

    ids: np.ndarray
    table: Table
    id_column: str | None


def load_party_csv(
    path: str | Path,
    *,
    id_column: str | None,
    class_column: str | None = None,
    columns: Sequence[str] | None = None,
    missing: str = MISSING,
    nominal: Sequence[str] | None = None,
    continuous: Sequence[str] | None = None,
    delimiter: str = ",",
    quotechar: str = '"',
) -> PartyTable:
    """Read one party's own CSV file: the record id column ``id_column`` (``None``: the rows
    are numbered 0, 1, ... and every party's file must list the same records in the same
    order), the class column if this party holds it, and its attributes.

    ``columns`` (the attributes the deployment lists for this party, in its order) must be
    exactly the file's other columns: a file with a column more or less is refused, naming
    it. Ids must be unique and non-empty; a repeated id is refused with both lines."""
    path = Path(path)
    fixed = [c for c in (class_column, id_column) if c is not None]
    wanted = [
        *([(class_column, "class column")] if class_column is not None else []),
        *([(id_column, "id column")] if id_column is not None else []),
        *((c, "column the deployment lists for this party") for c in columns or ()),
    ]
    names, records, line_nos, header_line = _csv_records(path, delimiter, quotechar, wanted)
    own = [n for n in names if n not in fixed]
    if columns is not None and sorted(own) != sorted(columns):
        extra = [n for n in own if n not in columns]
        raise DataError(
            f"the file has columns {extra} that the deployment does not list for this party "
            f"(it lists {list(columns)}"
            + (f", the id column {id_column!r}" if id_column else "")
            + (f" and the class column {class_column!r}" if class_column else "")
            + ")",
            file=path,
            line=header_line,
            public="its data file has columns that the deployment file does not list for it",
        )
    if class_column is None:
        names = [*names, ""]
        records = [[*r, ""] for r in records]
    labels = [class_column or "", *([id_column] if id_column is not None else [])]
    cont = _column_kinds(
        path, names, records, header_line, fixed=labels, missing=missing, nominal=nominal,
        continuous=continuous,
    )  # fmt: skip
    kinds = [_Column(n, CONTINUOUS if n in cont else NOMINAL) for n in names]
    class_index = names.index(class_column) if class_column is not None else len(names) - 1
    if id_column is not None:
        j = names.index(id_column)
        ids = np.array([r[j] for r in records], dtype=object)
        seen: dict[str, int] = {}
        for i, v in enumerate(ids):
            if v == "":
                raise DataError(
                    "empty record id", file=path, line=line_nos[i], column=id_column, index=j,
                    public="its data file has an empty record id",
                )  # fmt: skip
            first = seen.setdefault(v, i)
            if first != i:
                raise DataError(
                    f"record id {v!r} repeats line {line_nos[first]}; every record needs its "
                    "own id",
                    file=path,
                    line=line_nos[i],
                    column=id_column,
                    index=j,
                    public="its data file repeats a record id",
                )
        kinds[j] = _Column(id_column, NOMINAL)
    else:
        ids = np.array([str(i) for i in range(len(records))], dtype=object)
    table = _build(path.stem, path, records, line_nos, kinds, class_index, missing)
    keep = [a for a in (columns if columns is not None else table.attributes) if a != id_column]
    table = table.select(keep)
    if class_column is None:
        table = replace(table, target=np.empty(0, dtype=object), class_name="")
    return PartyTable(ids=ids, table=table, id_column=id_column)


#: a numeric column with at most this many distinct values is probably a coded category
FEW_VALUES = 10


def few_valued_continuous(table: Table, limit: int = FEW_VALUES) -> list[tuple[str, int]]:
    """The continuous columns of ``table`` with at most ``limit`` distinct values, with that
    number: integer-coded categories (grades 1..5, 0/1 flags) that binning would merge. The
    caller warns, naming ``--nominal``."""
    out = []
    for a, kind, col in zip(table.attributes, table.kinds, table.columns, strict=True):
        if kind == CONTINUOUS:
            n = len(np.unique(col[~np.isnan(col)]))
            if n <= limit:
                out.append((a, n))
    return out


def kinds_warning(table: Table, limit: int = FEW_VALUES) -> str | None:
    """One line naming the continuous columns with few distinct values, or None."""
    few = few_valued_continuous(table, limit)
    if not few:
        return None
    listed = ", ".join(f"{a} ({n} values)" for a, n in few)
    names = ",".join(a for a, _ in few)
    return (
        f"warning: numeric columns with few distinct values are binned as continuous: {listed}; "
        f"if they are coded categories, give --nominal {names}"
    )


# --------------------------------------------------------------------------------------------
# Synthetic data


def _value_range(n_values: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(n_values, tuple):
        return int(n_values[0]), int(n_values[1])
    return int(n_values), int(n_values)


def synthetic(
    n_rows: int,
    *,
    n_attributes: int = 6,
    n_values: int | tuple[int, int] = 3,
    depth: int = 3,
    noise: float = 0.05,
    n_classes: int = 2,
    seed: int = 0,
) -> Table:
    """Random nominal rows labelled by a planted random decision tree.

    Attributes ``a0 .. a{n_attributes-1}`` take values ``v0 .. v{n_values-1}`` uniformly at
    random; with ``n_values = (lo, hi)`` each attribute has its own number of values, drawn
    uniformly from ``lo .. hi``. The planted tree tests a random unused attribute at every
    interior node, down to ``depth``, and gives every leaf a random class ``c0 ..
    c{n_classes-1}``. Each label is then replaced by a different class (uniformly) with
    probability ``noise``. The same arguments always give the same table
    (``numpy.random.default_rng(seed)``)."""
    checks = (
        (n_rows >= 1, f"n_rows must be at least 1, got {n_rows}"),
        (n_attributes >= 1, f"n_attributes must be at least 1, got {n_attributes}"),
        (
            2 <= _value_range(n_values)[0] <= _value_range(n_values)[1],
            f"n_values must be at least 2 (or a range lo <= hi of such), got {n_values}",
        ),
        (n_classes >= 2, f"n_classes must be at least 2, got {n_classes}"),
        (
            0 <= depth <= n_attributes,
            f"depth must be in [0, n_attributes={n_attributes}] (a path tests an attribute "
            f"at most once), got {depth}",
        ),
        (0.0 <= noise <= 1.0, f"noise must be a probability in [0, 1], got {noise}"),
    )
    for ok, message in checks:
        if not ok:
            raise DataError(f"synthetic: {message}")
    rng = np.random.default_rng(seed)
    lo, hi = _value_range(n_values)
    if lo == hi:
        sizes = np.full(n_attributes, lo)
        codes = rng.integers(0, lo, size=(n_rows, n_attributes))
    else:
        sizes = rng.integers(lo, hi + 1, size=n_attributes)
        codes = (rng.random((n_rows, n_attributes)) * sizes[None, :]).astype(np.int64)
    y = np.zeros(n_rows, dtype=np.int64)

    def grow(rows: np.ndarray, free: list[int], level: int) -> None:
        if level == depth:
            y[rows] = rng.integers(0, n_classes)
            return
        a = free[int(rng.integers(0, len(free)))]
        rest = [f for f in free if f != a]
        for v in range(int(sizes[a])):
            grow(rows[codes[rows, a] == v], rest, level + 1)

    grow(np.arange(n_rows), list(range(n_attributes)), 0)
    flip = rng.random(n_rows) < noise
    y[flip] = (y[flip] + rng.integers(1, n_classes, size=int(flip.sum()))) % n_classes
    value_names = np.array([f"v{i}" for i in range(hi)], dtype=object)
    class_names = np.array([f"c{i}" for i in range(n_classes)], dtype=object)
    params = (
        f"n_rows={n_rows}, n_attributes={n_attributes}, n_values={n_values}, depth={depth}, "
        f"noise={noise}, n_classes={n_classes}, seed={seed}"
    )
    return Table(
        name="synthetic",
        attributes=tuple(f"a{i}" for i in range(n_attributes)),
        kinds=(NOMINAL,) * n_attributes,
        columns=tuple(value_names[codes[:, i]] for i in range(n_attributes)),
        target=class_names[y],
        class_name="class",
        source=f"synthetic({params})",
    )


# --------------------------------------------------------------------------------------------
# Discretisation


def _number(x: float) -> str:
    return np.format_float_positional(x, trim="-")


@dataclass(frozen=True)
class Discretizer:
    """Equal-frequency binning of continuous attributes, learned on training rows only.

    ``edges[a]`` are the inner cut points of attribute ``a`` in increasing order; a value
    ``x`` falls in the first bin whose upper edge is ``>= x``. A cut point between two
    training values is their midpoint, so ``<=37.5`` reads as "37 or less" on integer data.
    """

    bins: int
    edges: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @classmethod
    def fit(cls, table: Table, bins: int) -> Discretizer:
        """Cut points at the ``i/bins`` quantiles (``i = 1 .. bins-1``) of the non-missing
        values of every continuous attribute; repeated cut points are merged and a cut point
        at the largest value is dropped, so an attribute may get fewer than ``bins`` bins."""
        if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2:
            raise DataError(f"bins must be an integer of at least 2, got {bins!r}")
        edges: dict[str, tuple[float, ...]] = {}
        for a, kind, col in zip(table.attributes, table.kinds, table.columns, strict=True):
            if kind != CONTINUOUS:
                continue
            v = np.sort(col[~np.isnan(col)])
            n = len(v)
            cuts: set[float] = set()
            for i in range(1, int(bins) if n else 1):
                pos = i * (n - 1) / bins
                lo, hi = float(v[math.floor(pos)]), float(v[math.ceil(pos)])
                cut = lo if lo == hi else (lo + hi) / 2
                if cut < v[-1]:
                    cuts.add(cut)
            edges[a] = tuple(sorted(cuts))
        return cls(bins=int(bins), edges=edges)

    def labels(self, attribute: str) -> tuple[str, ...]:
        """The bin labels of ``attribute`` in increasing order, e.g.
        ``("<=37.5", "(37.5,48]", ">48")``; ``("any",)`` if it has no cut point."""
        if attribute not in self.edges:
            raise DataError(
                f"the discretizer has no attribute {attribute!r}; "
                f"it was fitted on {list(self.edges)}"
            )
        e = [_number(x) for x in self.edges[attribute]]
        if not e:
            return ("any",)
        inner = [f"({lo},{hi}]" for lo, hi in itertools.pairwise(e)]
        return (f"<={e[0]}", *inner, f">{e[-1]}")

    def transform(self, table: Table) -> Table:
        """``table`` with every continuous attribute replaced by its nominal bin label;
        a missing value (NaN) becomes ``"?"``."""
        columns = list(table.columns)
        kinds = list(table.kinds)
        for i, (a, kind) in enumerate(zip(table.attributes, table.kinds, strict=True)):
            if kind != CONTINUOUS:
                continue
            if a not in self.edges:
                raise DataError(
                    f"attribute {a!r} is continuous but the discretizer was not fitted on it "
                    f"(fitted on {list(self.edges)}); fit on a table with the same attributes"
                )
            x = table.columns[i]
            names = np.array([*self.labels(a), MISSING], dtype=object)
            idx = np.searchsorted(np.asarray(self.edges[a], dtype=np.float64), x, side="left")
            idx[np.isnan(x)] = len(names) - 1
            columns[i] = names[idx]
            kinds[i] = NOMINAL
        return replace(table, kinds=tuple(kinds), columns=tuple(columns))

    def to_dict(self) -> dict[str, Any]:
        """For run reports: ``{"method", "bins", "edges": {attribute: [cut, ...]}}``."""
        return {
            "method": "equal-frequency",
            "bins": self.bins,
            "edges": {a: list(e) for a, e in self.edges.items()},
        }


# --------------------------------------------------------------------------------------------
# Vertical partitioning


@dataclass(frozen=True)
class Partition:
    """Which attributes each of the ``k`` sites holds (site ``i`` is party ``site{i+1}``), and
    which site holds the class. Every attribute belongs to exactly one site."""

    sites: tuple[tuple[str, ...], ...]
    class_site: int

    def __post_init__(self) -> None:
        sites = tuple(tuple(str(a) for a in s) for s in self.sites)
        if not sites or any(not s for s in sites):
            raise DataError(f"every site needs at least one attribute, got {sites}")
        flat = [a for s in sites for a in s]
        dupes = sorted({a for a in flat if flat.count(a) > 1})
        if dupes:
            raise DataError(f"attributes {dupes} are given to more than one site")
        k = len(sites)
        if not -k <= self.class_site < k:
            raise DataError(
                f"class_site must be in [-{k}, {k - 1}] for {k} sites, got {self.class_site}"
            )
        object.__setattr__(self, "sites", sites)
        object.__setattr__(self, "class_site", self.class_site % k)

    @property
    def k(self) -> int:
        """The number of sites."""
        return len(self.sites)

    @property
    def attributes(self) -> tuple[str, ...]:
        """All attributes, site by site."""
        return tuple(a for s in self.sites for a in s)

    def site_of(self, attribute: str) -> int:
        """The index of the site that holds ``attribute``."""
        for i, s in enumerate(self.sites):
            if attribute in s:
                return i
        raise DataError(f"no site holds attribute {attribute!r}; sites: {self.describe()}")

    def to_dict(self) -> dict[str, Any]:
        """For run reports: ``{"k", "sites": [[attribute, ...], ...], "class_site"}``."""
        return {"k": self.k, "sites": [list(s) for s in self.sites], "class_site": self.class_site}

    def describe(self, class_name: str | None = None) -> str:
        """One line per site, e.g. ``site1: outlook, temperature`` and
        ``site2: humidity, windy (class play)``."""
        lines = []
        for i, s in enumerate(self.sites):
            line = f"site{i + 1}: {', '.join(s)}"
            if i == self.class_site:
                line += f" (class {class_name})" if class_name else " (class)"
            lines.append(line)
        return "\n".join(lines)


def _contiguous(names: Sequence[str], k: int) -> list[list[str]]:
    size, extra = divmod(len(names), k)
    sites, start = [], 0
    for i in range(k):
        end = start + size + (1 if i < extra else 0)
        sites.append(list(names[start:end]))
        start = end
    return sites


def partition(
    attributes: Sequence[str], k: int, scheme: str = "contiguous", *, class_site: int = -1
) -> Partition:
    """Assign ``attributes`` (the class excluded) to ``k`` sites.

    ``scheme`` is ``"contiguous"`` (k consecutive blocks of nearly equal size, the earlier
    sites getting the extra attributes), ``"round-robin"`` (attribute ``j`` to site
    ``j mod k``), ``"random:SEED"`` (a seeded shuffle, then contiguous blocks of the shuffled
    order) or an explicit assignment ``"a,b;c;d,e"`` (sites separated by ``;``, attributes by
    ``,``; it must have ``k`` sites and use every attribute exactly once). ``class_site`` is
    the index of the site holding the class; ``-1`` is the last site.
    """
    names = [str(a) for a in attributes]
    dupes = sorted({a for a in names if names.count(a) > 1})
    if dupes:
        raise DataError(f"partition: attributes {dupes} are listed more than once")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 2 <= k <= len(names):
        raise DataError(
            f"partition: k must be an integer between 2 and the number of attributes "
            f"({len(names)}), got {k!r}"
        )
    k = int(k)
    if scheme == "contiguous":
        sites = _contiguous(names, k)
    elif scheme == "round-robin":
        sites = [names[i::k] for i in range(k)]
    elif scheme.startswith("random:"):
        seed_text = scheme.removeprefix("random:")
        try:
            seed = int(seed_text)
        except ValueError:
            raise DataError(
                f"partition: scheme {scheme!r} needs an integer seed, e.g. 'random:7'"
            ) from None
        order = np.random.default_rng(seed).permutation(len(names))
        sites = _contiguous([names[i] for i in order], k)
    elif ";" in scheme or "," in scheme or scheme in names:
        sites = [[a.strip() for a in s.split(",")] for s in scheme.split(";")]
        if len(sites) != k:
            raise DataError(
                f"partition: {scheme!r} gives {len(sites)} sites, but k is {k}; "
                "separate the k sites with ';'"
            )
        given = [a for s in sites for a in s]
        unknown = sorted(set(given) - set(names))
        if "" in given or unknown:
            raise DataError(
                f"partition: {scheme!r} names unknown or empty attributes {unknown or ['']}; "
                f"the attributes are {names}"
            )
        left_out = [a for a in names if a not in given]
        twice = sorted({a for a in given if given.count(a) > 1})
        if left_out or twice:
            raise DataError(
                f"partition: {scheme!r} must use every attribute exactly once; "
                f"missing {left_out}, repeated {twice}"
            )
    else:
        raise DataError(
            f"partition: unknown scheme {scheme!r}; expected 'contiguous', 'round-robin', "
            "'random:SEED' or an explicit 'a,b;c;d,e'"
        )
    if isinstance(class_site, bool) or not -k <= class_site < k:
        raise DataError(f"partition: class_site must be in [-{k}, {k - 1}], got {class_site!r}")
    return Partition(sites=tuple(tuple(s) for s in sites), class_site=int(class_site))


@dataclass(frozen=True)
class SiteData:
    """What one site holds: its columns of the common rows, keyed by transaction ids.

    ``site`` is the index into :attr:`Partition.sites` (party ``site{site+1}``); ``table`` has
    only this site's attributes and, on the class site only, the class."""

    site: int
    tids: np.ndarray
    table: Table

    def __post_init__(self) -> None:
        tids = np.asarray(self.tids, dtype=np.int64)
        if tids.shape != (self.table.n_rows,):
            raise DataError(
                f"site {self.site}: {len(tids)} transaction ids for {self.table.n_rows} rows"
            )
        object.__setattr__(self, "tids", tids)


def split_vertically(table: Table, part: Partition) -> list[SiteData]:
    """Each site's share of ``table``: its attributes (in the partition's order), the common
    transaction ids ``0 .. n-1``, and the class on the class site only."""
    unknown = [a for a in part.attributes if a not in table.attributes]
    left_out = [a for a in table.attributes if a not in part.attributes]
    if unknown or left_out:
        raise DataError(
            f"the partition does not match table {table.name!r}: attributes not in the table "
            f"{unknown}, attributes of the table on no site {left_out}"
        )
    tids = np.arange(table.n_rows, dtype=np.int64)
    out = []
    for i, attrs in enumerate(part.sites):
        t = table.select(attrs)
        if i != part.class_site:
            t = replace(t, target=np.empty(0, dtype=object), class_name="")
        out.append(SiteData(site=i, tids=tids.copy(), table=t))
    return out


def join_sites(parts: Sequence[SiteData], attribute_order: Sequence[str] | None = None) -> Table:
    """The inverse of :func:`split_vertically`: join the sites' columns on their transaction
    ids (rows in increasing id order). Attributes come site by site unless
    ``attribute_order`` (a permutation of all of them) is given."""
    if not parts:
        raise DataError("join_sites: no sites to join")
    holders = [p for p in parts if p.table.class_name]
    if len(holders) != 1:
        raise DataError(
            f"join_sites: exactly one site must hold the class, got sites "
            f"{[p.site for p in holders]}"
        )
    ref = np.sort(parts[0].tids)
    if len(np.unique(ref)) != len(ref):
        raise DataError(f"join_sites: site {parts[0].site} repeats transaction ids")
    attributes: list[str] = []
    kinds: list[str] = []
    columns: list[np.ndarray] = []
    target = np.empty(0, dtype=object)
    for p in parts:
        order = np.argsort(p.tids, kind="stable")
        if not np.array_equal(p.tids[order], ref):
            diff = np.setxor1d(p.tids, parts[0].tids)[:5].tolist()
            raise DataError(
                f"join_sites: the transaction ids of site {p.site} do not match those of site "
                f"{parts[0].site} ({len(p.tids)} vs {len(ref)} ids, e.g. {diff} unmatched "
                "or repeated); every site must hold the same rows"
            )
        for a, kind, col in zip(p.table.attributes, p.table.kinds, p.table.columns, strict=True):
            if a in attributes:
                raise DataError(f"join_sites: attribute {a!r} is held by more than one site")
            attributes.append(a)
            kinds.append(kind)
            columns.append(col[order])
        if p.table.class_name:
            target = p.table.target[order]
    holder = holders[0].table
    joined = Table(
        name=holder.name,
        attributes=tuple(attributes),
        kinds=tuple(kinds),
        columns=tuple(columns),
        target=target,
        class_name=holder.class_name,
        source=holder.source,
    )
    if attribute_order is None:
        return joined
    order_names = [str(a) for a in attribute_order]
    if sorted(order_names) != sorted(attributes):
        raise DataError(
            f"join_sites: attribute_order {order_names} is not a permutation of the sites' "
            f"attributes {attributes}"
        )
    return joined.select(order_names)
