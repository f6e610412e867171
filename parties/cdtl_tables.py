"""The client's table for cdtl: a named dataset or the client's own CSV file, prepared the
same way for every cdtl system (``cdtl``, ``cdbs-load``, ``cdtl-outsource``).

* :func:`own_csv_args`, :func:`csv_entries`, :func:`read_client_csv`: the options of the
  client's own file (``--id``, ``--delimiter``, ``--nominal``, ``--continuous``, as
  ``python -m parties`` names them), the deployment entries they become, and the launcher's
  reading of the file, which the client repeats in its own process
  (:func:`~parties.own_data.read_own_table`) so that a wrong file fails before any process
  starts.
* :func:`with_class` (a dataset's class chosen by name), :func:`filter_rows` (``--where``),
  :func:`client_table` (the sensitive attribute checked, continuous attributes binned, ``l``
  checked): what the client anatomizes.
* :func:`cdtl_folds`: the folds and prune sets, public choices of ``--cv`` and ``--seed``.
* :func:`own_input`: errors in a party's own input after the handshake as
  :class:`~mpc.errors.InputError` (its peers are told only what is wrong).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import Discretizer, PartyTable, Table, load_party_csv
from mpc.errors import ConfigError, InputError
from mpc.learners.evaluation import stratified_kfold, train_test_split
from mpc.runtime.config import PartyConfig
from protocols.anatomization import max_l

__all__ = [
    "CLASS_ALIASES",
    "PRUNE_FRACTION",
    "cdtl_folds",
    "client_table",
    "column_list",
    "csv_entries",
    "csv_text",
    "filter_rows",
    "own_csv_args",
    "own_input",
    "read_client_csv",
    "with_class",
]


def own_csv_args(p: argparse.ArgumentParser, *, kinds: bool = True, when: str = "") -> None:
    """The options of the client's own CSV file (as ``python -m parties`` names them);
    ``when`` prefixes their help (e.g. ``"with --csv: "``)."""
    p.add_argument(
        "--id",
        dest="id_column",
        default=None,
        metavar="COL",
        help=f"{when}the record id column (not an attribute; default: rows are numbered)",
    )
    p.add_argument("--delimiter", default=None, metavar="C", help=f"{when}the field delimiter (,)")
    if kinds:
        p.add_argument(
            "--nominal",
            default=None,
            metavar="COL,...",
            help=f"{when}numeric columns to read as categories (coded grades, 0/1 flags)",
        )
        p.add_argument(
            "--continuous",
            default=None,
            metavar="COL,...",
            help=f"{when}columns to read as numbers (binned into --bins); other numeric "
            "columns are continuous too unless --nominal names them",
        )


#: names the papers give a dataset's class column: house-votes-84's "Class Name" is the party
CLASS_ALIASES = {"house-votes-84": {"party": "Class Name"}}


def with_class(table: Table, column: str | None) -> Table:
    """``table`` with ``column`` as the class (the old class becomes an attribute)."""
    column = CLASS_ALIASES.get(table.name, {}).get(column or "", column)
    if column is None or column == table.class_name:
        return table
    if column not in table.attributes:
        raise ConfigError(
            f"--class {column!r}: not a column of {table.name}; choose one of "
            f"{[*table.attributes, table.class_name]}"
        )
    j = table.attributes.index(column)
    y = table.columns[j]
    if table.kinds[j] == "continuous":
        values = np.asarray(y, dtype=np.float64)
        known = ~np.isnan(values)
        median = float(np.median(values[known]))
        keep = np.flatnonzero(known)
        y = np.where(values[keep] <= median, "low", "high").astype(object)
        table = table.subset(keep)
    attrs = [a for a in table.attributes if a != column] + [table.class_name]
    kinds = [k for a, k in zip(table.attributes, table.kinds, strict=True) if a != column]
    cols = [c for a, c in zip(table.attributes, table.columns, strict=True) if a != column]
    return Table(
        name=table.name,
        attributes=tuple(attrs),
        kinds=(*kinds, "nominal"),
        columns=(*cols, np.asarray(table.target, dtype=object)),
        target=np.asarray(y, dtype=object),
        class_name=column,
        source=table.source,
    )


def filter_rows(table: Table, conditions: list[str]) -> Table:
    for cond in conditions:
        neg = "!=" in cond
        col, _, value = cond.partition("!=" if neg else "=")
        col, value = col.strip(), value.strip()
        if not col or col not in (*table.attributes, table.class_name):
            raise ConfigError(f"--where {cond!r}: expected COL!=VALUE or COL=VALUE with a column")
        data = table.target if col == table.class_name else table.column(col)
        hit = np.asarray(data, dtype=str) == value
        table = table.subset(np.flatnonzero(~hit if neg else hit))
        if table.n_rows == 0:
            raise ConfigError(f"--where {cond!r} leaves no row")
    return table


#: the share of a table's (or a training fold's) rows in the shared prune set
PRUNE_FRACTION = 0.2


def cdtl_folds(target: np.ndarray, cv: int, seed: int) -> list[dict[str, list[int]]]:
    """The stratified folds of ``target`` and, per fold, its prune set: positions (within the
    fold's training rows) of :data:`PRUNE_FRACTION` of them. Public choices of ``cv`` and
    ``seed``, computed alike by the launcher (a dataset) and the client (its own file)."""
    folds = []
    for train, test in stratified_kfold(target, cv, seed=seed):
        _, prune = train_test_split(target[train], PRUNE_FRACTION, seed=seed)
        folds.append({"train": train.tolist(), "test": test.tolist(), "prune": prune.tolist()})
    return folds


def client_table(
    table: Table,
    *,
    sensitive: str,
    l: int,  # noqa: E741
    bins: int,
    no_suppress: bool,
    source: str,
) -> tuple[Table, Discretizer | None]:
    """The table the client anatomizes, and the discretizer of its continuous attributes (or
    None): ``sensitive`` must be a column of ``table`` other than the class; continuous
    attributes become ``bins`` equal-frequency bins; ``l`` must be possible (with
    ``no_suppress``, without suppressing any tuple). Raises
    :class:`~mpc.errors.InputError` naming ``source`` (the file or dataset) and its columns."""
    if sensitive == table.class_name:
        raise InputError(
            f"--sensitive {sensitive!r} is the class column of {source}; the sensitive "
            f"attribute is one of its other columns {list(table.attributes)}",
            public="the sensitive attribute is its class column",
        )
    if sensitive not in table.attributes:
        raise InputError(
            f"--sensitive {sensitive!r}: not a column of {source}; its columns are "
            f"{list(table.attributes)} and the class {table.class_name!r}",
            public=f"its data file has no column {sensitive!r} (the sensitive attribute)",
        )
    discretizer = None
    if "continuous" in table.kinds:
        discretizer = Discretizer.fit(table, bins)
        table = discretizer.transform(table)
    values = np.asarray(table.column(sensitive), dtype=str)
    if l > max_l(table, sensitive) and no_suppress:
        domain, counts = np.unique(values, return_counts=True)
        share = counts.max() / counts.sum()
        raise InputError(
            f"--l {l} is impossible for {sensitive!r}: its most frequent value "
            f"{domain[counts.argmax()]!r} covers {share:.1%} of the rows, more than 1/{l}; "
            f"the largest possible l is {max_l(table, sensitive)} (without --no-suppress, the "
            "fewest tuples of that value are suppressed instead)",
            public=f"its sensitive column is not {l}-diverse without suppression",
        )
    distinct = len(np.unique(values))
    if l > distinct:
        raise InputError(
            f"--l {l} is impossible: {sensitive!r} has only {distinct} distinct values, and "
            "every group needs l different ones",
            public=f"its sensitive column has fewer than l = {l} distinct values",
        )
    return table, discretizer


def column_list(text: str | None, flag: str) -> list[str] | None:
    """``COL,...`` of ``flag`` as a list (None when not given)."""
    if text is None:
        return None
    names = [c.strip() for c in text.split(",")]
    if not all(names):
        raise ConfigError(f"{flag}: expected comma-separated column names, got {text!r}")
    return names


def csv_entries(args: argparse.Namespace) -> dict[str, Any]:
    """The client's deployment entries for its own CSV file (``id``, ``delimiter``,
    ``nominal``, ``continuous``): those given on the command line."""
    if args.delimiter is not None and len(args.delimiter) != 1:
        raise ConfigError(f"--delimiter: expected one character, got {args.delimiter!r}")
    entries: dict[str, Any] = {}
    if args.id_column:
        entries["id"] = args.id_column
    if args.delimiter is not None:
        entries["delimiter"] = args.delimiter
    for flag in ("nominal", "continuous"):
        names = column_list(getattr(args, flag, None), f"--{flag}")
        if names is not None:
            entries[flag] = names
    return entries


def read_client_csv(args: argparse.Namespace, entries: dict[str, Any]) -> tuple[PartyTable, str]:
    """The launcher's reading of ``--csv`` (as the client reads it, to fail before any
    process starts): the :class:`~mpc.datasets.PartyTable` and the file's text."""
    if not args.class_column:
        raise ConfigError(f"--csv {args.csv} needs --class COL, the column to predict")
    own = load_party_csv(
        args.csv,
        id_column=entries.get("id"),
        class_column=args.class_column,
        nominal=entries.get("nominal"),
        continuous=entries.get("continuous"),
        delimiter=entries.get("delimiter", ","),
    )
    return own, csv_text(args.csv)


def csv_text(path: str | Path) -> str:
    """The text of a CSV file, exactly (line ends kept), to hand to the party that owns it."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--csv {path}: cannot read it: {exc}") from None


@contextlib.contextmanager
def own_input(me: PartyConfig) -> Iterator[None]:
    """Errors in this party's own input, found once the run has started, as
    :class:`~mpc.errors.InputError`: the party's message names it, its peers are told only
    what is wrong (an :class:`~mpc.errors.InputError`'s public text, else that its input does
    not suit the run)."""
    try:
        yield
    except InputError as exc:
        raise InputError(f"{me.name}: {exc}", public=f"{me.name}: {exc.public}") from None
    except ConfigError as exc:
        raise InputError(
            f"{me.name}: {exc}",
            public=f"{me.name}: its data file does not suit the run's parameters",
        ) from None
