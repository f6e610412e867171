"""The named datasets as the tests read them, never by a path of their own.

* :func:`table` -- a dataset's ``(train, test)`` tables: the package's own copy of the tables
  it ships (car, house-votes-84, tic-tac-toe, kr-vs-kp; weather is embedded), whatever data
  directory there is; any other from the data directory;
* :func:`folder` -- the folder of a dataset's files, chosen alike; :func:`schema` -- its
  ``schema.json`` as a dict (the package's copy for the shipped tables);
* :func:`needs` -- skip unless every named dataset can be read;
* :func:`data_args` -- for a command the test starts: ``["--data-dir", DIR]``, or ``[]``
  without a data directory (the shipped tables need none).

The data directory is the package's (:func:`mpc.datasets.resolve_data_dir`): ``$MPC_DATA_DIR``,
else ``../shared/datasets`` beside the clone, else the user's. A dataset that the package does
not ship and no data directory holds skips the test, naming ``mpc datasets fetch NAME``.

A test whose outcome depends on the data directory is marked ``datasets``: one that reads a
dataset the package does not ship, or starts a command that reads a named dataset (the
command looks in the data directory first). ``.ci/run`` runs those tests once more with
``MPC_NO_DATA_DIR=1``, every data directory out of reach (the package honours it too, in
every command a test starts), as in a clone with nothing beside it: there they pass on the
shipped tables or skip saying why. Each helper that consults the data directory fails a test
that is not marked, so that none escapes that run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mpc.datasets import Table, load_dataset, resolve_data_dir
from mpc.datasets.fetch import packaged_schema, shipped_folder
from mpc.datasets.table import no_data_dir

__all__ = [
    "MARKER",
    "current",
    "data_args",
    "data_dir",
    "folder",
    "needs",
    "schema",
    "shipped",
    "table",
]

#: the marker of the tests whose outcome depends on the data directory
MARKER = "datasets"


class _Current:
    """Whether the running test is marked :data:`MARKER` (set by ``tests/conftest.py``)."""

    marked: bool | None = None  # None: outside a test's run (collection)


current = _Current()


def shipped(name: str) -> bool:
    """Whether the package has the named dataset itself (weather embedded, or shipped)."""
    return name == "weather" or shipped_folder(name) is not None


def _check_marked(what: str) -> None:
    if current.marked is False:
        pytest.fail(
            f"this test reads {what}: mark it @pytest.mark.{MARKER} (.ci/run runs the tests so "
            "marked once more with every data directory out of reach)",
            pytrace=False,
        )


def data_dir() -> Path | None:
    """The data directory the package reads (None: none found, or ``MPC_NO_DATA_DIR``)."""
    _check_marked("the data directory")
    return resolve_data_dir(None)


def _why_not(name: str) -> str:
    found = resolve_data_dir(None)
    if name == "weather":  # the package embeds its rows; Weka's ARFF file is not fetched
        return (
            "no data directory holds weather/weather.nominal.arff (Weka's copy of the table "
            "the package embeds), which this test reads"
        )
    where = (
        "every data directory is out of reach (MPC_NO_DATA_DIR)"
        if no_data_dir()
        else f"the data directory {found} has no {name}/"
        if found is not None
        else "no data directory was found (MPC_DATA_DIR, ../shared/datasets beside the clone, "
        "~/.local/share/mpc-trees/datasets)"
    )
    return f"{name} is not shipped with the package and {where}: mpc datasets fetch {name}"


def _in_data_dir(name: str) -> Path | None:
    _check_marked(f"the dataset {name!r} from the data directory")
    found = resolve_data_dir(None)
    return found / name if found is not None and (found / name).is_dir() else None


def needs(*names: str) -> None:
    """Skip the running test unless each of ``names`` can be read."""
    for name in names:
        if not shipped(name) and _in_data_dir(name) is None:
            pytest.skip(_why_not(name))


def table(name: str) -> tuple[Table, Table | None]:
    """``(train, test)`` of the named dataset: the package's copy if it has one, else the
    data directory's (skips as :func:`needs` does)."""
    if shipped(name):
        return load_dataset(name, None)
    needs(name)
    return load_dataset(name, resolve_data_dir(None))


def folder(name: str) -> Path:
    """The folder of the named dataset's files: the package's copy if it ships one, else the
    data directory's (skips as :func:`needs` does; for weather, unless a data directory has
    Weka's file of it)."""
    own = shipped_folder(name)
    if own is not None:
        return own
    found = _in_data_dir(name)
    if found is None:
        pytest.skip(_why_not(name))
    return found


def schema(name: str) -> dict[str, Any]:
    """The named dataset's ``schema.json``: the package's copy, else its folder's."""
    path = packaged_schema(name) or folder(name) / "schema.json"
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def data_args(*names: str) -> list[str]:
    """The options of a command that reads ``names`` (skips as :func:`needs` does):
    ``--data-dir DIR`` when there is a data directory, nothing without one (the shipped tables
    need none)."""
    _check_marked(f"{', '.join(names)} in a command")
    needs(*names)
    found = resolve_data_dir(None)
    return [] if found is None else ["--data-dir", str(found)]
