"""The options several systems share, declared once: where the joined table of a local run
comes from (:class:`DataSource`), how a CSV file's columns and missing values are read
(:class:`ColumnKinds`), and the check of every option that names a path the run writes
(:func:`check_outputs`).

A system's options (``parties/systems/*.py``) inherit the groups it takes; the command line,
the Python API and the launcher then read them alike (:mod:`parties.params`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpc.datasets import Table, load_csv, load_dataset, resolve_data_dir
from mpc.errors import ConfigError
from mpc.learners.plot import check_plot_path, require_matplotlib
from mpc.runtime.files import check_output
from parties.params import Params, column_list, option

__all__ = ["ColumnKinds", "DataSource", "check_outputs", "joined_table", "missing_option"]


#: what the --missing option says, wherever it is offered
MISSING_HELP = "more cell values that mean missing, such as NA,n/a (a blank cell and ? always do)"


def missing_option(about: str = "") -> Any:
    """The ``--missing M,...`` option (a field of a :class:`~parties.params.Params`), its help
    starting with ``about`` (``"with --csv: "``)."""
    return option(
        None, flag="--missing", metavar="M,...", parse=column_list, help=about + MISSING_HELP
    )


@dataclass(frozen=True)
class DataSource(Params):
    """The table a local run plays every organisation with: a dataset by name, or any CSV file
    with its class column."""

    dataset: str | None = option(
        None,
        flag="--dataset",
        metavar="NAME",
        group="source",
        help="a dataset by name (see `mpc datasets`; default: the embedded weather table)",
    )
    csv: Path | None = option(
        None, flag="--csv", metavar="FILE", group="source", help="any CSV file with a header row"
    )
    class_column: str | None = option(
        None, flag="--class", metavar="COLUMN", help="class column of --csv"
    )
    data_dir: str | None = option(
        None, flag="--data-dir", metavar="DIR", help="where the UCI datasets are"
    )
    id_column: str | None = option(
        None,
        flag="--id",
        metavar="COLUMN",
        help="the record id column of --csv: never an attribute (a column with a different "
        "value in every row is refused without it, or without --nominal naming it)",
    )


@dataclass(frozen=True)
class ColumnKinds(Params):
    """How a CSV file's columns are read: which numeric ones are categories, which are numbers,
    its delimiter, and which cells besides blank and ``?`` are missing."""

    nominal: tuple[str, ...] | None = option(
        None,
        flag="--nominal",
        metavar="COL,...",
        parse=column_list,
        help="numeric columns to read as categories (coded grades, 0/1 flags), never binned",
    )
    continuous: tuple[str, ...] | None = option(
        None,
        flag="--continuous",
        metavar="COL,...",
        parse=column_list,
        help="columns to read as numbers; other "
        "numeric columns are continuous too unless "
        "--nominal names them",
    )
    delimiter: str | None = option(
        None, flag="--delimiter", metavar="C", help="the CSV's field delimiter (default ',')"
    )
    missing: tuple[str, ...] | None = missing_option()

    def check(self) -> None:
        super().check()
        if self.delimiter is not None and len(self.delimiter) != 1:
            raise ConfigError(f"--delimiter: expected one character, got {self.delimiter!r}")

    def kind_options(self) -> dict[str, Any]:
        """The column options as :func:`mpc.datasets.load_csv` takes them."""
        return {
            "nominal": None if self.nominal is None else list(self.nominal),
            "continuous": None if self.continuous is None else list(self.continuous),
            "delimiter": self.delimiter or ",",
            "missing": None if self.missing is None else list(self.missing),
        }


def joined_table(source: DataSource, kinds: ColumnKinds | None = None) -> tuple[Table, Any]:
    """The table of ``--dataset`` (default: weather) or ``--csv FILE --class COL``, and the
    dataset's own test table (adult ships one), or None. ``kinds`` go with ``--csv`` only."""
    if source.csv is not None:
        if not source.class_column:
            raise ConfigError("--csv needs --class COLUMN naming the class column")
        extra = kinds.kind_options() if kinds is not None else {}
        table = load_csv(source.csv, source.class_column, id_column=source.id_column, **extra)
        return table, None
    if source.class_column:
        raise ConfigError("--class goes with --csv; a named dataset knows its class column")
    if source.id_column:
        raise ConfigError("--id goes with --csv; a named dataset has no record id column")
    if kinds is not None:
        for flag in ("nominal", "continuous", "delimiter", "missing"):
            if getattr(kinds, flag) is not None:
                raise ConfigError(f"--{flag} goes with --csv; a named dataset has its schema")
    return load_dataset(source.dataset or "weather", resolve_data_dir(source.data_dir))


def check_outputs(checks: Iterable[tuple[str, str, str]], values: Any) -> None:
    """Check every output path named by ``checks`` (``(flag, name, kind)``; ``values``: an
    object with the paths as attributes) with :func:`mpc.runtime.files.check_output`, before
    any work: missing parent folders are fine (they are created), a path that cannot be
    written raises :class:`~mpc.errors.ConfigError` naming the option and the path. A picture
    (``--plot``) needs matplotlib and a suffix it can write, which are checked first."""
    for flag, name, kind in checks:
        value = getattr(values, name, None)
        if value is None or value == "" or (flag == "--db" and value == ":memory:"):
            continue  # none given, or SQLite's in-memory database
        if flag == "--plot":
            require_matplotlib("--plot")
            check_plot_path(value, flag)
        check_output(value, kind=kind, option=flag)
