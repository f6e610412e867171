"""Any CSV file with a header row: a whole table (:func:`load_csv`), one party's own file
with its record ids (:func:`load_party_csv`), and the column kinds they are read with.

A numeric column is continuous unless named in ``nominal``; :func:`kinds_warning` words the
warning for a numeric column with so few values that it is probably a coded category.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from mpc.datasets.fields import (
    Column,
    build_table,
    field_count_error,
)
from mpc.datasets.table import CONTINUOUS, NOMINAL, DataError, Table, missing_markers

# --------------------------------------------------------------------------------------------
# Any CSV file


#: distinct field values a CSV file's reader keeps one string object of
SHARED_VALUES = 2**20


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
            # one string object per distinct value of the columns that repeat values (all but
            # an id column; the first 2^20 distinct values): a million rows of a few values
            # each take a pointer a field, not a string
            ids = {names.index(w) for w, what in wanted if what == "id column"}
            same: dict[str, str] = {}
            for row in reader:
                if not row or not any(f.strip() for f in row):
                    continue
                if len(row) != len(names):
                    raise field_count_error(path, reader.line_num, names, len(row), shown)
                fields = [f.strip() for f in row]
                if len(same) < SHARED_VALUES:
                    fields = [f if j in ids else same.setdefault(f, f)
                              for j, f in enumerate(fields)]  # fmt: skip
                records.append(fields)
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
    missing: frozenset[str],
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
        present = [v for v in set(values) if v not in missing]
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
    missing: str | Sequence[str] | None = None,
    continuous: Sequence[str] | None = None,
    nominal: Sequence[str] | None = None,
    delimiter: str = ",",
    quotechar: str = '"',
    id_column: str | None = None,
) -> Table:
    """Read a CSV file with a header row. ``class_column`` names the class (always nominal);
    ``id_column`` a record id column, which is never an attribute (each id must be distinct).

    A column is continuous if it is listed in ``continuous``, nominal if it is listed in
    ``nominal``; any other column is continuous if every non-missing value parses as a number
    (and there is at least one), else nominal. Giving ``continuous`` alone (no ``nominal``)
    lists every continuous column. A blank cell, ``"?"`` and the file's own markers
    ``missing`` (such as ``NA``) are missing values (nominal: kept as ``"?"``; continuous:
    NaN; a record without its class is refused). Fields are stripped of surrounding whitespace;
    blank lines are ignored; ``delimiter`` and ``quotechar`` are those of :mod:`csv`.
    """
    path = Path(path)
    wanted = [(class_column, "class column")]
    if id_column is not None:
        if id_column == class_column:
            raise DataError(f"the id column {id_column!r} is the class column", file=path)
        wanted.append((id_column, "id column"))
    names, records, line_nos, header_line = _csv_records(path, delimiter, quotechar, wanted)
    if id_column is not None:
        names, records = _without_ids(path, names, records, line_nos, id_column)
    markers = missing_markers(missing)
    cont = _column_kinds(
        path, names, records, header_line, fixed=[class_column], missing=markers,
        nominal=nominal, continuous=continuous,
    )  # fmt: skip
    columns = [Column(n, CONTINUOUS if n in cont else NOMINAL) for n in names]
    _refuse_row_keys(path, header_line, names, records, columns, class_column, nominal, markers)
    return build_table(
        path.stem, path, records, line_nos, columns, names.index(class_column), sorted(markers)
    )


def _without_ids(
    path: Path, names: list[str], records: list[list[str]], line_nos: list[int], id_column: str
) -> tuple[list[str], list[list[str]]]:
    """The header and records without the id column, whose values must all differ."""
    j = names.index(id_column)
    seen: dict[str, int] = {}
    for rec, line in zip(records, line_nos, strict=True):
        rid = rec[j] if j < len(rec) else ""
        if rid in seen:
            raise DataError(
                f"record id {rid!r} is repeated (first on line {seen[rid]}); each record needs "
                "its own id",
                file=path,
                line=line,
                column=id_column,
                index=j,
            )
        seen[rid] = line
    return names[:j] + names[j + 1 :], [r[:j] + r[j + 1 :] for r in records]


#: fewer rows than this, and a column that tells every row apart may be chance
ROW_KEY_MIN_ROWS = 20


def _refuse_row_keys(
    path: Path, header_line: int, names: list[str], records: list[list[str]],
    columns: list[Column], class_column: str, nominal: Sequence[str] | None,
    missing: frozenset[str],
) -> None:  # fmt: skip
    """A nominal attribute with a different value in every row (of at least
    :data:`ROW_KEY_MIN_ROWS`) is a record key, not a property: as an attribute it splits the
    rows all apart. It is refused unless ``nominal`` names it; the error says both ways out."""
    if len(records) < ROW_KEY_MIN_ROWS:
        return
    for j, col in enumerate(columns):
        if col.kind != NOMINAL or col.name == class_column or col.name in (nominal or ()):
            continue
        values = [r[j] for r in records if j < len(r)]
        if not missing.intersection(values) and len(set(values)) == len(records):
            raise DataError(
                f"a different value in each of its {len(records)} rows: a record id, not an "
                f"attribute (it would split the rows all apart); give --id {col.name} if it "
                f"identifies the records, or --nominal {col.name} to use it as an attribute "
                "anyway",
                file=path,
                line=header_line,
                column=col.name,
            )


@dataclass(frozen=True)
class PartyTable:
    """One party's own file: its record ids and its columns (and the class, if it holds it).

    ``ids`` are the values of the id column, as strings, row by row; ``table`` has the
    party's attributes in file order (or in the order asked for) and, on the party that
    holds the class, the class."""

    ids: np.ndarray
    table: Table
    id_column: str | None
    #: the file's columns the table leaves out (not listed for this party, or ignored)
    ignored: tuple[str, ...] = ()


def load_party_csv(
    path: str | Path,
    *,
    id_column: str | None,
    class_column: str | None = None,
    columns: Sequence[str] | None = None,
    missing: str | Sequence[str] | None = None,
    nominal: Sequence[str] | None = None,
    continuous: Sequence[str] | None = None,
    delimiter: str = ",",
    quotechar: str = '"',
    class_required: bool = True,
    ignore: Sequence[str] = (),
) -> PartyTable:
    """Read one party's own CSV file: the record id column ``id_column`` (``None``: the rows
    are numbered 0, 1, ... and every party's file must list the same records in the same
    order), the class column if this party holds it, and its attributes.

    ``columns`` (the attributes the deployment lists for this party, in its order) must be in
    the file (a listed column missing is refused, naming it); the file's other columns, and
    those ``ignore`` names, are left out (:attr:`PartyTable.ignored`). Ids must be unique and
    non-empty; a repeated id is refused with both lines. Missing
    values are read as :func:`load_csv` reads them (a blank cell, ``"?"`` and ``missing``); a
    record without its class is refused unless ``class_required`` is false (rows to classify:
    their class is then ``"?"``)."""
    path = Path(path)
    fixed = [c for c in (class_column, id_column) if c is not None]
    wanted = [
        *([(class_column, "class column")] if class_column is not None else []),
        *([(id_column, "id column")] if id_column is not None else []),
        *((c, "column the deployment lists for this party") for c in columns or ()),
    ]
    names, records, line_nos, header_line = _csv_records(path, delimiter, quotechar, wanted)
    own = [n for n in names if n not in fixed]
    unknown = [c for c in ignore if c not in own]
    if unknown:
        raise DataError(
            f"the columns to ignore {unknown} are not in the file (its columns are {own})",
            file=path, line=header_line,
            public="the columns it was told to ignore are not in its data file",
        )  # fmt: skip
    ignored = tuple(n for n in own if n in ignore or (columns is not None and n not in columns))
    if ignored:  # parsed as little as possible: left out before kinds and values are read
        kept = [i for i, n in enumerate(names) if n not in ignored]
        names = [names[i] for i in kept]
        records = [[r[i] for i in kept] for r in records]
    if class_column is None:  # an empty class column, added in place (no second copy)
        names = [*names, ""]
        for r in records:
            r.append("")
    labels = [class_column or "", *([id_column] if id_column is not None else [])]
    markers = missing_markers(missing)
    cont = _column_kinds(
        path, names, records, header_line, fixed=labels, missing=markers, nominal=nominal,
        continuous=continuous,
    )  # fmt: skip
    kinds = [Column(n, CONTINUOUS if n in cont else NOMINAL) for n in names]
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
        kinds[j] = Column(id_column, NOMINAL)
    else:
        ids = np.array([str(i) for i in range(len(records))], dtype=object)
    table = build_table(
        path.stem, path, records, line_nos, kinds, class_index, sorted(markers),
        class_required=class_required and class_column is not None,
    )  # fmt: skip
    keep = [a for a in (columns if columns is not None else table.attributes) if a != id_column]
    table = table.select(keep)
    if class_column is None:
        table = replace(table, target=np.empty(0, dtype=object), class_name="")
    return PartyTable(ids=ids, table=table, id_column=id_column, ignored=ignored)


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


#: a nominal column with more distinct values than this share of its rows (and at least
#: :data:`NEARLY_UNIQUE_MIN` of them) is nearly a record key: a split on it fits the rows it
#: learns from and no new record
NEARLY_UNIQUE_SHARE = 0.5
NEARLY_UNIQUE_MIN = 20


def nearly_unique_nominal(table: Table) -> list[tuple[str, int]]:
    """The nominal columns of ``table`` whose distinct values approach its rows, with that
    number (free text, a second key, a timestamp read as text)."""
    out = []
    for a, kind, col in zip(table.attributes, table.kinds, table.columns, strict=True):
        if kind != CONTINUOUS:
            n = len({v for v in col if v != "?"})
            if n >= NEARLY_UNIQUE_MIN and n > NEARLY_UNIQUE_SHARE * table.n_rows:
                out.append((a, n))
    return out


def kinds_warning(table: Table, limit: int = FEW_VALUES) -> str | None:
    """One line per thing a learner should be told before it grows a tree that will not
    generalise, or None: numeric columns with few distinct values (coded categories binned as
    numbers); nominal columns with nearly one value per record; a class with one value."""
    lines = []
    few = few_valued_continuous(table, limit)
    if few:
        listed = ", ".join(f"{a} ({n} values)" for a, n in few)
        names = ",".join(a for a, _ in few)
        lines.append(
            f"warning: numeric columns with few distinct values are binned as continuous: "
            f"{listed}; if they are coded categories, give --nominal {names}"
        )
    unique = nearly_unique_nominal(table)
    if unique:
        listed = ", ".join(f"{a} ({n} values in {table.n_rows} rows)" for a, n in unique)
        names = ",".join(a for a, _ in unique)
        lines.append(
            f"warning: nominal columns with nearly one value per record: {listed}; a split on "
            f"one fits these rows and no new record (an unseen value takes the node's "
            f"majority): leave them out (--ignore {names}), or give --id if one is the "
            f"record id, --continuous if it holds numbers"
        )
    if table.class_name and len(table.target) and len(set(table.target.tolist())) == 1:
        lines.append(
            f"warning: the class column {table.class_name!r} has one value "
            f"({table.target[0]!r}) in every row: the tree is a single leaf"
        )
    return "\n".join(lines) or None
