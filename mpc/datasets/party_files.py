"""One CSV file per party of a table: what each organisation of a walk-through holds.

:func:`write_party_files` (``mpc datasets split``) cuts a table into the files that parties
which never pooled their data would each hold: an id column shared by all (the same record
has the same id everywhere), the party's own columns, the class at the party that holds it,
each file listing the records in an order of its own. With ``new``, the last records of a
seeded shuffle go to a second file per party, without the class: the new records a trained
model classifies later::

    bank.csv        id,buying,maint            r0, r1, ... (training records)
    bank-new.csv    id,buying,maint            n0, n1, ... (new records)
    garage.csv      id,lug_boot,safety,class
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpc.datasets.table import CONTINUOUS, MISSING, DataError, Table

__all__ = ["PartyFile", "write_party_files"]


@dataclass(frozen=True)
class PartyFile:
    """A file :func:`write_party_files` wrote: its path, records and header."""

    path: Path
    records: int
    header: tuple[str, ...]


def _cell(value: object, kind: str) -> str:
    if kind == CONTINUOUS:
        number = float(value)  # type: ignore[arg-type]
        return MISSING if math.isnan(number) else repr(number)
    return str(value)


def write_party_files(
    table: Table,
    parts: Mapping[str, Sequence[str]],
    out: Path,
    *,
    class_at: str | None = None,
    new: int = 0,
    seed: int = 0,
) -> list[PartyFile]:
    """Write ``PARTY.csv`` (and, with ``new``, ``PARTY-new.csv``) into ``out`` for each
    party of ``parts`` (party -> its columns of ``table``): see the module docstring. The
    records are shuffled with ``seed``; the last ``new`` of them are the new ones. The class
    goes to ``class_at`` (default: the last party), in its training file only."""
    holder = class_at if class_at is not None else list(parts)[-1]
    if holder not in parts:
        raise DataError(f"the class goes to {holder!r}, which is not one of {list(parts)}")
    named = [c for cols in parts.values() for c in cols]
    unknown = [c for c in named if c not in table.attributes]
    if unknown:
        raise DataError(
            f"{table.name} has no column {unknown[0]!r}; its columns are {list(table.attributes)}"
        )
    twice = sorted({c for c in named if named.count(c) > 1})
    if twice:
        raise DataError(f"columns {twice} are given to more than one party; give each to one")
    if not 0 <= new < table.n_rows:
        raise DataError(f"new records: expected 0 to {table.n_rows - 1}, got {new}")
    order = np.random.default_rng(seed).permutation(table.n_rows)
    cut = table.n_rows - new
    groups = [("", "r", order[:cut])] + ([("-new", "n", order[cut:])] if new else [])
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for k, (party, columns) in enumerate(parts.items()):
        for suffix, prefix, rows in groups:
            with_class = party == holder and not suffix
            header = ("id", *columns, *([table.class_name] if with_class else []))
            path = out / f"{party}{suffix}.csv"
            own_order = np.random.default_rng([seed, k, len(rows)]).permutation(len(rows))
            with path.open("w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh, lineterminator="\n")
                writer.writerow(header)
                for i in own_order.tolist():
                    r = int(rows[i])
                    cells = [_cell(table.column(c)[r], table.kind(c)) for c in columns]
                    writer.writerow(
                        [f"{prefix}{i}", *cells, *([str(table.target[r])] if with_class else [])]
                    )
            written.append(PartyFile(path, len(rows), header))
    return written
