"""A party's own files: reading its CSV, writing its predictions.

Every party program that takes its own data calls :func:`read_own_table` once the run has
started (after the handshake), so that a wrong file stops every party at once: the party
itself reports the full error (file, line, value), its peers are told only what is wrong
(:class:`~mpc.errors.InputError`), never a value of the file.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from mpc.datasets import DataError, PartyTable, kinds_warning, load_party_csv
from mpc.errors import ConfigError, InputError
from mpc.runtime.config import PartyConfig
from mpc.runtime.files import open_private

__all__ = ["read_own_table", "write_predictions"]


def read_own_table(
    me: PartyConfig, *, class_column: str | None, columns: Sequence[str] | None = None
) -> tuple[PartyTable, str | None]:
    """This party's CSV (``me.data``) read with its id column, delimiter and column kinds;
    ``columns`` (default: the deployment's ``columns`` for this party, if any) must be the
    file's attributes. Returns the table and the few-valued-columns warning (or None)."""
    if me.data is None:
        raise ConfigError(
            f"party {me.name!r}: no data file; give --data FILE.csv (or a `data` entry)"
        )
    wanted = list(columns) if columns is not None else (list(me.columns) or None)
    try:
        own = load_party_csv(
            me.data,
            id_column=me.id_column,
            class_column=class_column,
            columns=wanted,
            nominal=list(me.nominal) or None,
            continuous=None if me.continuous is None else list(me.continuous),
            delimiter=me.delimiter,
        )
    except DataError as exc:
        public = exc.public or "its data file cannot be read (its own error says where and why)"
        raise InputError(f"{me.name}: {exc}", public=f"{me.name}: {public}") from None
    return own, kinds_warning(own.table)


def write_predictions(
    path: str | Path, ids: Sequence[str], labels: Sequence[str], *, id_column: str | None
) -> Path:
    """Write ``id,class`` rows (private, 0600) to ``path``; return it."""
    path = Path(path)
    with open_private(path, "w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow([id_column or "row", "class"])
        out.writerows(zip(ids, labels, strict=True))
    return path
