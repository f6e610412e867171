"""A party's own files: reading its CSV, writing its predictions.

Every party program that takes its own data reads it with :func:`read_own_table` (or
:func:`read_own_file`, :func:`load_party_data`) in its system's input check, before the
party waits for anyone, so that a wrong file is said at once: the party itself reports the
full error (file, line, value), its peers are told that it stopped and what is wrong
(:class:`~mpc.errors.InputError`), never a value of the file. The run asks again and finds
the file read (:class:`~parties.own_party.ReadOnce`).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
import numbers
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import DataError, PartyTable, kinds_warning, load_party_csv
from mpc.errors import ConfigError, InputError
from mpc.runtime.files import open_private
from parties.own_party import OwnParty

__all__ = [
    "load_party_data",
    "private_seed",
    "read_own_file",
    "read_own_table",
    "write_predictions",
]

log = logging.getLogger("mpc.party")


def load_party_data(me: OwnParty) -> dict[str, Any]:
    """Read this party's private input file (JSON object), once."""
    return me.inputs.get(("json", me.data), lambda: _load_party_data(me))


def _load_party_data(me: OwnParty) -> dict[str, Any]:
    if me.data is None:
        raise ConfigError(f"party {me.name!r} has no `data` file in the deployment")
    try:
        data = json.loads(me.data.read_text())
    except FileNotFoundError:
        raise ConfigError(f"party {me.name!r}: data file {me.data} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"party {me.name!r}: data file {me.data} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"party {me.name!r}: data file {me.data} must hold a JSON object")
    return data


def read_own_table(
    me: OwnParty, *, class_column: str | None, columns: Sequence[str] | None = None
) -> tuple[PartyTable, str | None]:
    """This party's CSV (``me.data``) read with its id column, delimiter, column kinds and
    missing-value markers;
    ``columns`` (default: the deployment's ``columns`` for this party, if any) must be the
    file's attributes. Returns the table and the few-valued-columns warning (or None). Read
    once per process for the same options."""
    key = ("csv", me.data, me.id_column, class_column, None if columns is None else tuple(columns),
           me.columns, me.nominal, me.continuous, me.delimiter, me.missing, me.ignore)  # fmt: skip
    return me.inputs.get(key, lambda: _read_own_table(me, class_column, columns))


def _read_own_table(
    me: OwnParty, class_column: str | None, columns: Sequence[str] | None
) -> tuple[PartyTable, str | None]:
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
            missing=list(me.missing),
            ignore=list(me.ignore),
        )
    except DataError as exc:
        public = exc.public or "its data file cannot be read (its own error says where and why)"
        raise InputError(f"{me.name}: {exc}", public=f"{me.name}: {public}") from None
    kinds = (kinds_warning(own.table) or "").splitlines()
    notes = [w.removeprefix("warning: ") for w in kinds] + [_ignored_note(own.ignored, wanted)]
    return own, "; ".join(n for n in notes if n) or None


def _ignored_note(ignored: Sequence[str], listed: Sequence[str] | None) -> str | None:
    """One line naming the file's columns the party leaves out, or None."""
    if not ignored:
        return None
    why = "the deployment does not list them for it" if listed else "it was told to ignore them"
    return (
        f"its data file's columns {list(ignored)} are left out ({why}); the model does not use them"
    )


def read_own_file(
    me: OwnParty, *, class_column: str | None, columns: Sequence[str] | None = None
) -> tuple[PartyTable, str | None, dict[str, Any]]:
    """This party's own CSV (:func:`read_own_table`) and its private extras: when the
    launcher wrote the CSV inside a JSON object (``{"csv": TEXT, ...}``, a local run with a
    party's own seed for a reproducible experiment), the object's other fields. Read once per
    process for the same options."""
    key = ("file", me.data, me.id_column, class_column, None if columns is None else tuple(columns),
           me.columns, me.nominal, me.continuous, me.delimiter, me.missing, me.ignore)  # fmt: skip
    return me.inputs.get(key, lambda: _read_own_file(me, class_column, columns))


def _read_own_file(
    me: OwnParty, class_column: str | None, columns: Sequence[str] | None
) -> tuple[PartyTable, str | None, dict[str, Any]]:
    if me.data is None or me.data.suffix != ".json":
        own, warning = read_own_table(me, class_column=class_column, columns=columns)
        return own, warning, {}
    private = load_party_data(me)
    text = private.get("csv")
    if not isinstance(text, str):
        raise ConfigError(f"party {me.name!r}: data file {me.data} has no `csv` text")
    with tempfile.TemporaryDirectory(prefix="mpc-own-") as folder:  # mode 0700
        path = Path(folder) / f"{me.name}.csv"
        path.write_text(text, encoding="utf-8")
        own, warning = read_own_table(
            dataclasses.replace(me, data=path), class_column=class_column, columns=columns
        )
    return own, warning, private


def private_seed(
    data: dict[str, Any], key: str, me: OwnParty, what: str
) -> np.random.Generator | None:
    """The generator of a party's own seed ``data[key]`` (its private input file's field,
    for a reproducible experiment), or None when there is none: the OS then. ``what`` names
    the randomness it replaces in the warning about a readable file. Never logs the seed."""
    if key not in data:
        return None
    seed = data[key]
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        # the message names the kind of value only: a report or log must not hold a seed
        got = "a negative integer" if isinstance(seed, numbers.Integral) else type(seed).__name__
        raise ConfigError(
            f"party {me.name!r}: data file {me.data}: `{key}` must be a non-negative integer, "
            f"got {got}"
        )
    if me.data is not None and me.data.stat().st_mode & 0o077:
        log.warning(
            "%s: %s read from %s, which other users of this host can read (mode %o); whoever "
            "reads it can rebuild %s",
            me.name, key.replace("_", " "), me.data, me.data.stat().st_mode & 0o777, what,
        )  # fmt: skip
    return np.random.default_rng(int(seed))


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
