"""The client's table for cdtl: a named dataset or the client's own CSV file, prepared the
same way for every cdtl system (``cdtl``, ``cdbs-load``, ``cdtl-outsource``).

* :func:`csv_entries`, :func:`read_client_csv`: the deployment entries of the client's own
  file's options (``--id``, ``--delimiter``, ``--nominal``, ``--continuous``, as
  ``python -m parties`` names them, :class:`parties.systems.cdtl.ClientCsv`), and the
  launcher's reading of the file, which the client repeats in its own process
  (:func:`~parties.own_data.read_own_table`) so that a wrong file fails before any process
  starts.
* :func:`with_class` (a dataset's class chosen by name), :func:`filter_rows` (``--where``),
  :func:`client_table` (the sensitive attribute and ``l`` checked): what the client
  anatomizes, its continuous attributes as read; :func:`table_doc` / :func:`table_of_doc`:
  that table as the launcher hands it to the client.
* :func:`fit_bins`, :func:`fold_tables`: ``--bin-attributes`` (a
  continuous sensitive attribute, which anatomization needs nominal, or every continuous
  attribute) in ``--bins`` equal-frequency bins, fitted only on the rows the client
  outsources (in ``cdtl``, each fold's training rows, never the whole table) and applied
  unchanged to the rows it classifies.
* :func:`cdtl_folds`: the folds and prune sets, public choices of ``--cv`` and ``--seed``.
* :func:`own_input`, :func:`fold_input`: errors in a party's own input after the handshake
  (in a fold's preparation, naming the fold) as :class:`~mpc.errors.InputError` (its peers
  are told only what is wrong).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import CONTINUOUS, NOMINAL, Discretizer, PartyTable, Table, load_party_csv
from mpc.errors import ConfigError, InputError
from mpc.learners.evaluation import stratified_kfold, train_test_split
from parties.own_party import OwnParty
from protocols.cdtl.anatomization import max_l

__all__ = [
    "BIN_ATTRIBUTES",
    "CLASS_ALIASES",
    "PRUNE_FRACTION",
    "binned_attributes",
    "cdtl_folds",
    "client_table",
    "csv_entries",
    "csv_text",
    "filter_rows",
    "fit_bins",
    "fold_input",
    "fold_tables",
    "own_input",
    "read_client_csv",
    "table_doc",
    "table_of_doc",
    "with_class",
]

#: which continuous attributes the client bins (``--bin-attributes``; see :func:`fit_bins`)
BIN_ATTRIBUTES = ("sensitive", "all")


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
) -> Table:
    """The table the client anatomizes, checked, its continuous attributes as read:
    ``sensitive`` must be a column of ``table`` other than the class, and ``l`` must be
    possible (with ``no_suppress``, without suppressing any tuple). Raises
    :class:`~mpc.errors.InputError` naming ``source`` (the file or dataset) and its columns.

    A continuous sensitive attribute is checked as ``bins`` equal-frequency bins fitted on
    the whole table. That binning is a check of the parameters only, so that an impossible
    ``l`` is refused before any party starts: the bins the client anatomizes with are fitted
    on the rows it outsources (:func:`fit_bins`: each fold's training rows), and a fold where
    ``l`` is then impossible ends the run with an error naming the fold (:func:`fold_input`).
    """
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
    checked, binned = table, ""
    if table.kind(sensitive) == CONTINUOUS:
        checked = Discretizer.fit(table, bins, attributes=[sensitive]).transform(table)
        binned = f" (continuous, checked as --bins {bins} equal-frequency bins of all rows)"
    values = np.asarray(checked.column(sensitive), dtype=str)
    if l > max_l(checked, sensitive) and no_suppress:
        domain, counts = np.unique(values, return_counts=True)
        share = counts.max() / counts.sum()
        raise InputError(
            f"--l {l} is impossible for {sensitive!r}{binned}: its most frequent value "
            f"{domain[counts.argmax()]!r} covers {share:.1%} of the rows, more than 1/{l}; "
            f"the largest possible l is {max_l(checked, sensitive)} (without --no-suppress, "
            "the fewest tuples of that value are suppressed instead)",
            public=f"its sensitive column is not {l}-diverse without suppression",
        )
    distinct = len(np.unique(values))
    if l > distinct:
        raise InputError(
            f"--l {l} is impossible: {sensitive!r}{binned} has only {distinct} distinct "
            "values, and every group needs l different ones",
            public=f"its sensitive column has fewer than l = {l} distinct values",
        )
    return table


def fit_bins(train: Table, *, sensitive: str, bins: int, bin_attributes: str) -> Discretizer | None:
    """The equal-frequency bins (``bins`` of them) that ``train`` is anatomized with, fitted
    on ``train`` alone: a fold's training rows (``cdtl``), or the whole table the client
    outsources (``cdtl-outsource``). ``bin_attributes`` (one of :data:`BIN_ATTRIBUTES`):
    ``"sensitive"`` bins the sensitive attribute if it is continuous (anatomization needs
    it nominal) and leaves every other continuous attribute to the learner's thresholds;
    ``"all"`` bins every continuous attribute (as the paper did on autos). None when there
    is nothing to bin."""
    if bin_attributes not in BIN_ATTRIBUTES:
        raise ConfigError(
            f"--bin-attributes must be one of {list(BIN_ATTRIBUTES)}, got {bin_attributes!r}"
        )
    continuous = [a for a, k in zip(train.attributes, train.kinds, strict=True) if k == CONTINUOUS]
    if bin_attributes == "all":
        return Discretizer.fit(train, bins) if continuous else None
    if sensitive in continuous:
        return Discretizer.fit(train, bins, attributes=[sensitive])
    return None


def binned_attributes(table: Table, *, sensitive: str, bin_attributes: str) -> list[str]:
    """The attributes of ``table`` that :func:`fit_bins` bins (whatever the rows)."""
    continuous = [a for a, k in zip(table.attributes, table.kinds, strict=True) if k == CONTINUOUS]
    return continuous if bin_attributes == "all" else [a for a in continuous if a == sensitive]


def fold_tables(
    table: Table,
    fold: Mapping[str, Sequence[int]],
    *,
    sensitive: str,
    bins: int,
    bin_attributes: str,
) -> tuple[Table, Table, Discretizer | None]:
    """A fold's training and test rows of ``table``, binned with :func:`fit_bins` fitted on
    the training rows only (the test rows get the same cut points), and the discretizer."""
    train = table.subset(np.asarray(fold["train"], dtype=np.int64))
    test = table.subset(np.asarray(fold["test"], dtype=np.int64))
    discretizer = fit_bins(train, sensitive=sensitive, bins=bins, bin_attributes=bin_attributes)
    if discretizer is not None:
        train, test = discretizer.transform(train), discretizer.transform(test)
    return train, test, discretizer


def table_doc(table: Table) -> dict[str, Any]:
    """``table`` as the JSON the launcher hands the client: nominal columns as str, continuous
    ones as numbers (a missing value as null), with their kinds."""
    columns: list[list[Any]] = []
    for kind, col in zip(table.kinds, table.columns, strict=True):
        if kind == CONTINUOUS:
            columns.append([None if np.isnan(x) else float(x) for x in col.tolist()])
        else:
            columns.append([str(v) for v in col])
    return {
        "name": table.name,
        "attributes": list(table.attributes),
        "kinds": list(table.kinds),
        "columns": columns,
        "target": [str(v) for v in table.target],
        "class_name": table.class_name,
    }


def table_of_doc(doc: Mapping[str, Any]) -> Table:
    """The inverse of :func:`table_doc` (a document without kinds is all nominal); a
    malformed one raises :class:`~mpc.errors.ConfigError`."""
    try:
        attributes = tuple(doc["attributes"])
        kinds = tuple(doc.get("kinds") or (NOMINAL,) * len(attributes))
        columns = tuple(
            np.array([np.nan if x is None else x for x in c], dtype=np.float64)
            if k == CONTINUOUS
            else np.asarray(c, dtype=object)
            for k, c in zip(kinds, doc["columns"], strict=True)
        )
        return Table(
            name=str(doc["name"]),
            attributes=attributes,
            kinds=kinds,
            columns=columns,
            target=np.asarray(doc["target"], dtype=object),
            class_name=str(doc["class_name"]),
            source="client",
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"the client's data file is not a table: {exc!r}") from None


def csv_entries(args: Any) -> dict[str, Any]:
    """The client's deployment entries for its own CSV file (``id``, ``delimiter``,
    ``nominal``, ``continuous``, ``missing``): those given on the command line (``args``: options
    with these fields)."""
    entries: dict[str, Any] = {}
    if args.id_column:
        entries["id"] = args.id_column
    if args.delimiter is not None:
        entries["delimiter"] = args.delimiter
    for flag in ("nominal", "continuous", "missing"):
        names = getattr(args, flag, None)
        if names is not None:
            entries[flag] = list(names)
    return entries


def read_client_csv(args: Any, entries: dict[str, Any]) -> tuple[PartyTable, str]:
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
        missing=entries.get("missing"),
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
def fold_input(
    me: OwnParty, fold: int, sensitive: str, discretizer: Discretizer | None = None
) -> Iterator[None]:
    """:func:`own_input` for the preparation of fold ``fold`` (binning, suppression,
    anatomization): an error names the fold, and, when the sensitive attribute was binned
    on the fold's training rows (``discretizer``), how many bins it got."""
    try:
        yield
    except (InputError, ConfigError) as exc:
        binned = ""
        if discretizer is not None and sensitive in discretizer.edges:
            got = len(discretizer.labels(sensitive))
            binned = (
                f"; {sensitive!r} is binned on this fold's training rows into {got} of "
                f"--bins {discretizer.bins} equal-frequency bins (repeated values merge cut "
                "points): raise --bins or lower --l"
            )
        raise InputError(
            f"{me.name}: fold {fold}: {exc}{binned}",
            public=f"{me.name}: the training rows of fold {fold} do not suit the run's parameters",
        ) from None


@contextlib.contextmanager
def own_input(me: OwnParty) -> Iterator[None]:
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
