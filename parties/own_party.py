"""A party as its own host runs it: the deployment's description of it (name, role, keys, its
private input and the columns it holds) with the fields the learners add to its
``[[party]]`` table, read and checked.

=================  =========================================================================
field              meaning
=================  =========================================================================
``id``             the record id column of its CSV (absent: rows are numbered in file order)
``delimiter``      the CSV's delimiter (default ``,``)
``nominal``        numeric columns to read as categories
``continuous``     columns to read as numbers (absent: inferred)
``missing``        more cell values that mean missing (a blank cell and ``?`` always do)
``ignore``         columns of its CSV that the model leaves out (free text, a second key)
``model_out``      where training writes this party's model part
``model``          the saved model part it classifies with
``predictions``    where it writes the predictions it receives
``test``           held-out records (the columns of ``data``) classified right after training
=================  =========================================================================

Paths are relative to the deployment file. The party's command line may give or override
each of them (``python -m parties ROLE ... --data FILE --id COLUMN``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mpc.errors import ConfigError
from mpc.runtime.config import (
    DeploymentConfig,
    PartyConfig,
    expect_field,
    load_config,
    names_field,
    path_field,
)

__all__ = ["OWN_FIELDS", "OwnParty", "ReadOnce", "load_deployment", "own_party"]

T = TypeVar("T")


class ReadOnce:
    """What a party process has read of its own input, kept by what was asked.

    A system's input check (:attr:`parties.programs.registry.Program.check`) reads the
    party's input before the party waits for anyone, so that a wrong file or model part is
    said at once; its run then asks for the same reads and finds them done. A read that fails
    is not kept."""

    def __init__(self) -> None:
        self._done: dict[Hashable, Any] = {}

    def get(self, key: Hashable, read: Callable[[], T]) -> T:
        """What ``read()`` returns, read once for ``key``."""
        if key not in self._done:
            self._done[key] = read()
        value: T = self._done[key]
        return value


#: the fields the learners add to a ``[[party]]`` table
OWN_FIELDS = (
    "id", "delimiter", "nominal", "continuous", "missing", "model_out", "model", "predictions",
    "test", "ignore",
)  # fmt: skip


@dataclass(frozen=True)
class OwnParty(PartyConfig):
    """:class:`~mpc.runtime.config.PartyConfig` with the learners' per-party fields, typed."""

    id_column: str | None = None
    delimiter: str = ","
    nominal: tuple[str, ...] = ()
    continuous: tuple[str, ...] | None = None
    missing: tuple[str, ...] = ()
    model_out: Path | None = None
    model: Path | None = None
    predictions: Path | None = None
    test: Path | None = None
    ignore: tuple[str, ...] = ()
    #: what this process has read of its input (shared by the copies ``replace`` makes)
    inputs: ReadOnce = field(default_factory=ReadOnce, compare=False, repr=False)

    @classmethod
    def of(cls, me: PartyConfig, cfg_path: Path) -> OwnParty:
        """``me`` with its own fields read from :attr:`PartyConfig.fields` (paths relative to
        the deployment file ``cfg_path``); a wrong value is a ``ConfigError`` naming it."""
        if isinstance(me, OwnParty):
            return me
        raw = dict(me.fields)
        base, where = cfg_path.parent, f"{cfg_path}: party {me.name!r}"
        id_column = expect_field(raw.get("id", ""), str, f"{where}.id", "a column name") or None
        delimiter = expect_field(
            raw.get("delimiter", ","), str, f"{where}.delimiter", "a character"
        )
        if len(delimiter) != 1:
            raise ConfigError(f"{where}.delimiter: expected one character, got {delimiter!r}")
        nominal = names_field(raw, "nominal", where) or []
        continuous = names_field(raw, "continuous", where)
        missing = names_field(raw, "missing", where) or []
        ignore = names_field(raw, "ignore", where) or []
        files = {
            key: path_field(base, raw[key], f"{where}.{key}") if key in raw else None
            for key in ("model_out", "model", "predictions", "test")
        }
        return cls(
            me.name, me.role, me.endpoint, me.bind, me.public_key, me.secret_key, me.data,
            me.columns, me.fields, id_column, delimiter, tuple(nominal),
            None if continuous is None else tuple(continuous), tuple(missing),
            files["model_out"], files["model"], files["predictions"], files["test"],
            tuple(ignore),
        )  # fmt: skip


def load_deployment(path: str | Path) -> DeploymentConfig:
    """:func:`~mpc.runtime.config.load_config` with the learners' per-party fields
    (:data:`OWN_FIELDS`), every party's checked."""
    cfg = load_config(path, party_fields=OWN_FIELDS)
    for p in cfg.parties:
        OwnParty.of(p, cfg.path)
    return cfg


def own_party(cfg: DeploymentConfig, name: str) -> OwnParty:
    """The party ``name`` of ``cfg`` with its own fields."""
    return OwnParty.of(cfg.party(name), cfg.path)
