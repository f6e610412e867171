"""The :class:`Table` (one dataset in memory, column by column), the column kinds, and
:class:`DataError`, the one error every data problem raises.

Nominal columns are numpy arrays of ``str`` with a missing value kept as the literal ``"?"``
(:data:`MISSING`); continuous columns are ``float64`` with NaN for a missing value; the class
labels are ``str``::

    Table(name="weather", attributes=("outlook", ...), kinds=("nominal", ...),
          columns=(array(["sunny", ...], dtype=object), ...),
          target=array(["no", ...], dtype=object), class_name="play", source="...")
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from mpc.errors import ConfigError

#: How a missing nominal value is spelled in a :class:`Table` (whatever the file used).
MISSING = "?"

#: The cells every file reads as missing, whatever marker it declares besides: a blank cell
#: and ``"?"``.
ALWAYS_MISSING: frozenset[str] = frozenset({"", MISSING})


def missing_markers(extra: str | Iterable[str] | None = None) -> frozenset[str]:
    """The cells read as missing: a blank cell, ``"?"`` and ``extra`` (a file's own markers,
    such as ``NA``; fields are compared after stripping surrounding whitespace)."""
    if extra is None:
        return ALWAYS_MISSING
    if isinstance(extra, str):
        extra = (extra,)
    return ALWAYS_MISSING | {str(m).strip() for m in extra}


def show_markers(markers: frozenset[str]) -> str:
    """``markers`` as an error message lists them: ``a blank cell, '?', 'NA'``."""
    return ", ".join(["a blank cell", *(repr(m) for m in sorted(markers) if m)])


#: The environment variable naming the data directory.
DATA_DIR_ENV = "MPC_DATA_DIR"
#: ``MPC_NO_DATA_DIR=1``: look in no data directory but the one ``--data-dir`` names (neither
#: ``$MPC_DATA_DIR`` nor a folder found by default): only the tables the package ships and
#: the embedded weather table are there, as on a machine that has no data directory.
NO_DATA_DIR_ENV = "MPC_NO_DATA_DIR"


def no_data_dir() -> bool:
    """Whether ``$MPC_NO_DATA_DIR`` puts every data directory out of reach (set, and not
    ``0``)."""
    return os.environ.get(NO_DATA_DIR_ENV, "") not in ("", "0")


NOMINAL = "nominal"
CONTINUOUS = "continuous"
KINDS = (NOMINAL, CONTINUOUS)


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
        # public: what is wrong, in words that quote no value of the file (for a party's peers)
        super().__init__(where + what, public=public)


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
            if kind not in KINDS:
                raise DataError(
                    f"table {self.name!r}: attribute {a!r} has kind {kind!r}; "
                    f"expected one of {list(KINDS)}"
                )
            arr = np.asarray(col, dtype=np.float64) if kind == CONTINUOUS else np.asarray(col)
            if arr.ndim != 1:
                raise DataError(
                    f"table {self.name!r}: column {a!r} must be one-dimensional, "
                    f"got shape {arr.shape}"
                )
            if kind == CONTINUOUS and np.isinf(arr).any():
                i = int(np.flatnonzero(np.isinf(arr))[0])
                raise DataError(
                    f"table {self.name!r}: continuous column {a!r} holds {arr[i]} in row {i}; "
                    "a continuous column holds finite numbers (NaN for a missing value)"
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
