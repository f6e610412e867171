"""The launcher's per-party CSV files: a joined table cut vertically into one file per party.

``mpc run`` plays every organisation on one machine, so it starts from one joined table (a
named dataset or ``--csv``) and writes each party the file that party would bring: the record
id column, the party's own attributes and (on the party that holds it) the class, with the
rows in an order of the party's own::

    text = party_csv(ids, table, ["outlook", "windy"], id_column="id", with_class=False,
                     order=rng.permutation(table.n_rows))
    PartySpec("alice", "alice", csv=text, columns=("outlook", "windy"),
              entries={"id": "id", **kind_entries(table, ["outlook", "windy"])})

Values are written so that :func:`mpc.datasets.load_party_csv` reads back the same table:
nominal values as they are, continuous values in Python's shortest round-trip form, a missing
value as ``?``. The column kinds go to the deployment file (``nominal`` and ``continuous``
per party, which are public), so that a numeric-looking nominal column stays nominal.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from mpc.datasets import MISSING, Table

#: the kind of a numeric column in a :class:`~mpc.datasets.Table`
CONTINUOUS = "continuous"

__all__ = ["fresh_id_column", "kind_entries", "party_csv"]


def fresh_id_column(taken: Iterable[str], preferred: str = "id") -> str:
    """``preferred`` unless a column of the table has that name; then ``record_id``,
    ``record_id_2``, ... (the first free one)."""
    used = set(taken)
    if preferred not in used:
        return preferred
    for i in range(1, len(used) + 2):
        name = "record_id" if i == 1 else f"record_id_{i}"
        if name not in used:
            return name
    raise AssertionError("unreachable: one of len(used) + 1 names is free")  # pragma: no cover


def _text(value: Any, continuous: bool) -> str:
    if continuous:
        x = float(value)
        return MISSING if math.isnan(x) else repr(x)
    return str(value)


def party_csv(
    ids: Sequence[str] | np.ndarray,
    table: Table,
    columns: Sequence[str],
    *,
    id_column: str,
    with_class: bool,
    order: Sequence[int] | np.ndarray | None = None,
) -> str:
    """The CSV text of one party's file: ``id_column``, ``columns`` of ``table`` and, with
    ``with_class``, the class column last; rows in ``order`` (default: the table's)."""
    rows = np.arange(table.n_rows) if order is None else np.asarray(order)
    if sorted(rows.tolist()) != list(range(table.n_rows)):
        raise ValueError(f"order must be a permutation of the {table.n_rows} rows")
    cols = [(table.column(a), table.kind(a) == CONTINUOUS) for a in columns]
    header = [id_column, *columns, *([table.class_name] if with_class else [])]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for i in rows.tolist():
        line = [str(ids[i]), *(_text(col[i], cont) for col, cont in cols)]
        if with_class:
            line.append(str(table.target[i]))
        writer.writerow(line)
    return out.getvalue()


def kind_entries(table: Table, columns: Sequence[str]) -> dict[str, list[str]]:
    """The deployment entries ``nominal`` and ``continuous`` for a party's ``columns``."""
    return {
        "nominal": [a for a in columns if table.kind(a) != CONTINUOUS],
        "continuous": [a for a in columns if table.kind(a) == CONTINUOUS],
    }
