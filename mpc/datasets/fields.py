"""From the fields of a data file to a checked :class:`~mpc.datasets.table.Table`: the readers
of the UCI files (:mod:`mpc.datasets.uci`) and of any CSV (:mod:`mpc.datasets.csv_files`)
share these steps.

:func:`build_table` turns records of strings into typed columns, each field checked against its
:class:`Column` (a declared domain, a number where a number is due); every problem is a
:class:`~mpc.datasets.table.DataError` naming the file, the line (1-based) and the column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpc.datasets.table import (
    CONTINUOUS,
    MISSING,
    NOMINAL,
    DataError,
    Table,
    missing_markers,
    show_markers,
)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    values: frozenset[str] | None = None  # the declared domain, if any


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("no such file", file=path) from None
    except IsADirectoryError:
        raise DataError("is a directory, expected a data file", file=path) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text: {exc}", file=path) from exc


def field_count_error(path: Path, line: int, names: Sequence[str], got: int, sep: str) -> DataError:
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


def parse_floats(
    values: Sequence[str],
    markers: frozenset[str],
    path: Path,
    line_nos: Sequence[int],
    name: str,
    j: int,
) -> np.ndarray:
    """The numbers of a continuous column, NaN for a missing one: a cell in ``markers``, or
    one that reads as NaN (``nan``, ``NaN``). A cell that is no number, or an infinity
    (``inf``, ``-Infinity``, a number past the largest float such as ``1e999``), is refused
    naming its line and column: no learner can split between infinities."""
    nan = math.nan
    try:
        out = np.array([nan if v in markers else float(v) for v in values], dtype=np.float64)
    except ValueError:
        out = None
    if out is not None and not np.isinf(out).any():
        return out
    for i, v in enumerate(values):
        if v in markers:
            continue
        try:
            number = float(v)
        except ValueError:
            raise DataError(
                f"{v!r} is not a number nor a missing value ({show_markers(markers)}); this "
                "column is continuous",
                file=path,
                line=line_nos[i],
                column=name,
                index=j,
            ) from None
        if math.isinf(number):
            raise DataError(
                f"{v!r} is not a finite number; a continuous column holds finite numbers, "
                f"and a missing value is {show_markers(markers)} or nan: fix the cell",
                file=path,
                line=line_nos[i],
                column=name,
                index=j,
                public="its data file has a number that is not finite in a continuous column",
            )
    raise AssertionError("unreachable: a value failed to parse but none fails alone")


def check_domain(
    values: Sequence[str],
    col: Column,
    markers: frozenset[str],
    path: Path,
    line_nos: Sequence[int],
    j: int,
    declared_in: Path | None,
) -> None:
    """Every value of a nominal column is declared (when ``col`` declares a domain) or
    missing."""
    if col.values is None:
        return
    bad = set(values) - col.values - markers
    if not bad:
        return
    i = next(i for i, v in enumerate(values) if v in bad)
    where = f" in {declared_in}" if declared_in is not None else ""
    allowed = ", ".join(sorted(col.values))
    hint = f" (or missing: {show_markers(markers)})"
    raise DataError(
        f"value {values[i]!r} is not one of the values declared{where} ({allowed}){hint}; "
        "fix the file or add the value there",
        file=path,
        line=line_nos[i],
        column=col.name,
        index=j,
    )


def _refuse_missing_class(
    values: Sequence[str],
    markers: frozenset[str],
    path: Path,
    line_nos: Sequence[int],
    name: str,
    j: int,
) -> None:
    for i, v in enumerate(values):
        if v in markers:
            raise DataError(
                f"the class is missing ({'a blank cell' if not v else repr(v)}); every "
                "training record needs its class: fill it in or drop the row",
                file=path,
                line=line_nos[i],
                column=name,
                index=j,
                public="its data file has a record without its class",
            )


def build_table(
    name: str,
    path: Path,
    records: list[list[str]],
    line_nos: list[int],
    columns: Sequence[Column],
    class_index: int,
    missing: str | Sequence[str] | None,
    *,
    source: str | None = None,
    declared_in: Path | None = None,
    label_suffix: str = "",
    class_required: bool = True,
) -> Table:
    """Check every field of ``records`` against ``columns`` and build the :class:`Table`.

    A cell is missing when it is blank, ``"?"`` or one of ``missing`` (the file's own
    markers): NaN in a continuous column, ``"?"`` in a nominal one. A missing class is refused
    (naming the line) unless ``class_required`` is false."""
    markers = missing_markers(missing)
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
            check_domain(values, col, markers, path, line_nos, j, declared_in)
        if j == class_index:
            if class_required:
                _refuse_missing_class(values, markers, path, line_nos, col.name, j)
            labels: Sequence[str] = [MISSING if v in markers else v for v in values]
            if label_suffix:
                cut = len(label_suffix)
                labels = [v[:-cut] if v.endswith(label_suffix) else v for v in values]
            target = np.array(labels, dtype=object)
            continue
        if col.kind == CONTINUOUS:
            arr = parse_floats(values, markers, path, line_nos, col.name, j)
        else:
            if any(v in markers for v in values):
                values = tuple(MISSING if v in markers else v for v in values)
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
