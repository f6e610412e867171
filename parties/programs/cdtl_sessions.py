"""The party programs of ``cdtl-outsource`` and ``cdtl-classify``: a long-lived CDBS and a client
that comes back later (Mancuhan & Clifton, Figures 1-3, as two sessions of one data owner).

The CDBS's state is durable: its SQLite database (IT, ST, the BDT and every sealed subtree,
:class:`~protocols.cdtl.cdtl.CDBSStore`) in a folder that outlives its processes, and its CurveZMQ
key. The client's state is its private model file. So each session is one run of the two
parties, and either process may end between sessions, or be restarted during one:

* **outsource** (``cdtl-outsource``) — the client reads its training CSV
  (:func:`~parties.own_data.read_own_table`), prepares it as ``cdtl`` does
  (:func:`~parties.programs.cdtl_tables.client_table`; a continuous sensitive attribute, or with
  ``--bin-attributes all`` every continuous attribute, in ``bins`` equal-frequency bins
  fitted on the rows of that file, which it outsources whole:
  :func:`~parties.programs.cdtl_tables.fit_bins`; other continuous attributes stay continuous),
  suppresses the fewest tuples that make ``l`` possible, anatomizes the rest under a fresh
  key and outsources IT and ST with the shared prune set
  (:data:`~parties.programs.cdtl_tables.PRUNE_FRACTION` of the rows, a public choice of ``seed``);
  the CDBS learns the BDT and stores all three. The client writes its model file
  (:class:`ClientModel`, :mod:`mpc.learners.model_file`, private, mode 0600): the key, the table's
  name at the CDBS and its schema digest, the columns and kinds it read, the discretizer, the
  prune rows, the sensitive attribute, the class and the kind of nominal split.
* **classify** (``cdtl-classify``) — a new client process reads the model file (its digest
  checked: an edited file is refused) and a new CSV file with the model's columns (the class
  column may be absent; other columns are ignored), checks that the CDBS serves the table the
  model outsourced (same name, same schema digest), classifies every row by Figure 3's
  ``Inference`` (a leaf refined earlier is served sealed from the database; the others are
  refined now, and their subtrees stored for the next session) and writes ``id,class``.

The CDBS process (the same program in both) serves its client until it says ``done`` and
exits; a new process on the same database folder and key serves the next session, or the
rest of this one: the client sends again what the old process never answered
(:meth:`~mpc.runtime.party.Party.expect_restarts`). A client's predictions are those of the same
cdtl run in one process: the outsourced table, the BDT and the subtrees do not depend on how
many processes served them.

Local runs::

    mpc run cdtl-outsource --csv train.csv --class y --sensitive s --model-out model \\
        --cdbs-db cdbs
    mpc run cdtl-classify --csv new.csv --id rid --model model --cdbs-db cdbs \\
        --predictions-out predictions.csv

On two hosts, the parties of ``mpc deploy cdtl-outsource ...`` (then ``cdtl-classify``) with
one key folder: ``python -m parties client --config F --name client --data train.csv
--model-out client.model.json``, later ``python -m parties client --config F2 --name client
--model client.model.json --data new.csv --id rid --predictions-out predictions.csv``, and
``python -m parties cdbs --config F --name cdbs`` for each session.

What each party learns is what ``cdtl`` lets it learn (:mod:`protocols.cdtl.cdtl`); the model file
holds the client's key and never leaves it.
"""

from __future__ import annotations

import dataclasses
import logging
import string
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mpc.crypto.sealed import KEY_BYTES, ClientKey
from mpc.datasets import CONTINUOUS, NOMINAL, Discretizer, PartyTable, Table, csv_header
from mpc.errors import ConfigError, InputError, ProtocolError
from mpc.learners.evaluation import accuracy, rows_of, train_test_split
from mpc.learners.model_file import ModelError, SavedModel, new_model_id, read_model, write_model
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import read_own_table, write_predictions
from parties.own_party import OwnParty
from parties.programs.cdtl import serve_cdbs
from parties.programs.cdtl_tables import (
    PRUNE_FRACTION,
    client_table,
    fit_bins,
    own_input,
)
from protocols.cdtl.anatomization import anatomize, suppress_for_l
from protocols.cdtl.cdtl import CDBS, CLIENT, SPLITS
from protocols.cdtl.client import CDBSClient, ClientCosts
from protocols.cdtl.joins import open_eseq

__all__ = [
    "DB_FILE",
    "MODEL_FILE",
    "MODEL_SYSTEM",
    "ClientModel",
    "classify_check",
    "classify_run",
    "load_client_model",
    "model_path",
    "outsource_check",
    "outsource_run",
    "rows_to_classify",
]

log = logging.getLogger("mpc.cdtl")

#: the ``system`` of the client's model file
MODEL_SYSTEM = "cdtl-client"
#: the client's model file in a ``--model-out`` / ``--model`` folder
MODEL_FILE = "client.model.json"
#: the CDBS's database in a ``--cdbs-db`` folder
DB_FILE = "cdbs.sqlite"


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class ClientModel:
    """What the client keeps to come back to its outsourced table (the body of its model
    file). ``repr`` shows the key's fingerprint, never the key."""

    #: the client's AES-256-GCM key: ESEQ and every subtree are sealed under it
    key: ClientKey
    #: the table's name at the CDBS, and the digest of its schema (IT's and ST's columns)
    table: str
    schema: str
    sensitive: str
    class_name: str
    #: the training file's attributes (the sensitive one among them) in order, and their kinds
    #: as read; a new file is read with these kinds, then binned with ``discretizer``
    attributes: tuple[str, ...]
    kinds: tuple[str, ...]
    discretizer: Discretizer | None
    nominal_splits: str
    l: int  # noqa: E741
    #: the outsourced rows (ESEQ's original rows) in the shared prune set
    prune: tuple[int, ...]
    #: what was outsourced, for reports: rows read, outsourced, suppressed; bins; seed
    training: dict[str, Any] = field(default_factory=dict)

    @property
    def nominal(self) -> list[str]:
        return [a for a, k in zip(self.attributes, self.kinds, strict=True) if k == NOMINAL]

    @property
    def continuous(self) -> list[str]:
        return [a for a, k in zip(self.attributes, self.kinds, strict=True) if k == CONTINUOUS]

    def body(self) -> dict[str, Any]:
        return {
            "key": self.key.key_bytes().hex(),
            "table": self.table,
            "schema": self.schema,
            "sensitive": self.sensitive,
            "class": self.class_name,
            "attributes": [
                {"name": a, "kind": k} for a, k in zip(self.attributes, self.kinds, strict=True)
            ],
            "discretizer": None if self.discretizer is None else self.discretizer.to_dict(),
            "nominal_splits": self.nominal_splits,
            "l": self.l,
            "prune": list(self.prune),
            "training": self.training,
        }

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> ClientModel:
        """The model of a body written by :meth:`body`; ``ValueError`` (or ``KeyError``,
        ``TypeError``) when a part is missing or does not fit the others."""
        key_hex = _text(body["key"], "key")
        if len(key_hex) != 2 * KEY_BYTES or not set(key_hex) <= set(string.hexdigits):
            raise ValueError(f"the key must be {2 * KEY_BYTES} hex digits")
        attributes = tuple(_text(a["name"], "attribute name") for a in body["attributes"])
        kinds = tuple(str(a["kind"]) for a in body["attributes"])
        if len(set(attributes)) != len(attributes) or not set(kinds) <= {NOMINAL, CONTINUOUS}:
            raise ValueError("the attributes must be distinct, each nominal or continuous")
        sensitive, class_name = _text(body["sensitive"], "sensitive"), _text(body["class"], "class")
        if sensitive not in attributes or class_name in attributes:
            raise ValueError("the sensitive attribute must be an attribute, the class not")
        discretizer = _discretizer(body["discretizer"])
        binned = set(discretizer.edges) if discretizer is not None else set()
        continuous = {a for a, k in zip(attributes, kinds, strict=True) if k == CONTINUOUS}
        whole = discretizer is not None and not discretizer.partial
        if not binned <= continuous or (whole and binned != continuous):
            raise ValueError(
                "the discretizer must bin continuous attributes only, all of them unless "
                "it is partial"
            )
        if sensitive in continuous and sensitive not in binned:
            raise ValueError("a continuous sensitive attribute must be binned")
        splits, l = body["nominal_splits"], body["l"]  # noqa: E741
        if splits not in SPLITS or type(l) is not int or l < 2:
            raise ValueError(f"nominal_splits must be one of {list(SPLITS)} and l >= 2")
        prune = body["prune"]
        if not isinstance(prune, list) or not all(type(r) is int and r >= 0 for r in prune):
            raise ValueError("prune must list row numbers")
        training = body["training"]
        if not isinstance(training, dict):
            raise ValueError("training must be an object")
        return cls(
            ClientKey.from_bytes(bytes.fromhex(key_hex)), _text(body["table"], "table"),
            _text(body["schema"], "schema"), sensitive, class_name, attributes, kinds,
            discretizer, str(splits), l, tuple(prune), dict(training),
        )  # fmt: skip


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _discretizer(doc: Any) -> Discretizer | None:
    if doc is None:
        return None
    bins, edges = doc["bins"], doc["edges"]
    if doc.get("method") != "equal-frequency" or type(bins) is not int or bins < 2:
        raise ValueError("the discretizer must be equal-frequency with bins >= 2")
    cuts = {str(a): tuple(float(x) for x in e) for a, e in edges.items()}
    if any(list(e) != sorted(set(e)) or not np.all(np.isfinite(e)) for e in cuts.values()):
        raise ValueError("the discretizer's cut points must be finite and increase")
    partial = doc.get("partial", False)
    if type(partial) is not bool:
        raise ValueError("the discretizer's `partial` must be true or false")
    return Discretizer(bins=bins, edges=cuts, partial=partial)


def model_path(path: str | Path) -> Path:
    """The model file a ``--model-out`` / ``--model`` path names: a file ``*.json``, else
    :data:`MODEL_FILE` in that folder (an existing file is taken as it is)."""
    path = Path(path)
    if path.suffix == ".json" or path.is_file():
        return path
    return path / MODEL_FILE


def load_client_model(path: str | Path) -> tuple[ClientModel, SavedModel]:
    """Read and check the client's model file; :class:`~mpc.learners.model_file.ModelError` names
    the file and what is wrong (missing, edited, of another learner, malformed)."""
    saved = read_model(path, MODEL_SYSTEM)
    try:
        return ClientModel.from_body(saved.body), saved
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ModelError(f"model file {saved.path}: not a cdtl client model: {exc}") from None


def _model_input(me: OwnParty) -> tuple[ClientModel, SavedModel]:
    """This client's model file, its errors as :class:`~mpc.errors.InputError`."""
    if me.model is None:
        raise InputError(
            f"{me.name}: no model file; give --model FILE (or a `model` entry)",
            public=f"{me.name}: it was given no model file",
        )
    try:
        return load_client_model(me.model)
    except ModelError as exc:
        raise InputError(
            f"{me.name}: {exc}",
            public=f"{me.name}: its model file cannot be used (missing, changed after training "
            "or not a cdtl client model)",
        ) from None


def rows_to_classify(me: OwnParty, model: ClientModel) -> tuple[PartyTable, Table]:
    """The rows of this client's CSV (``me.data``) to classify with ``model``: the file as
    read (its ids; the class if it has the model's class column) and the table the model
    classifies (its attributes in training order, read with their kinds and binned with its
    cut points). Columns the model does not read are ignored; a missing one is refused,
    naming it (:class:`~mpc.errors.InputError`)."""
    if me.data is None:
        raise InputError(
            f"{me.name}: no file to classify; give --data FILE.csv (or a `data` entry)",
            public=f"{me.name}: it was given no data file",
        )
    if me.id_column is not None and me.id_column in (*model.attributes, model.class_name):
        raise InputError(
            f"{me.name}: the id column {me.id_column!r} is a column the model reads; name "
            "another (or none: rows are then numbered)",
            public=f"{me.name}: its id column is a column the model reads",
        )
    header = csv_header(me.data, me.delimiter)
    missing = [a for a in model.attributes if header is not None and a not in header]
    if header is not None and missing:
        raise InputError(
            f"{me.name}: {me.data}: the model reads the column"
            f"{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}, not in the "
            f"file; its columns are {header}, the model reads {list(model.attributes)}",
            public=f"{me.name}: its data file lacks a column the model reads",
        )
    has_class = header is not None and model.class_name in header
    reading = dataclasses.replace(
        me, columns=(), nominal=tuple(model.nominal), continuous=tuple(model.continuous)
    )
    own, _ = read_own_table(reading, class_column=model.class_name if has_class else None)
    table = own.table.select(model.attributes)
    if model.discretizer is not None:
        table = model.discretizer.transform(table)
    return own, table


# ----------------------------------------------------------------------------- outsource


def _outsource_input(cfg: DeploymentConfig, me: OwnParty) -> tuple[Any, Any, Any, Any, Any]:
    """The client's own file, prepared for outsourcing: the file as read, its warning, the
    table (binned as the run's options say), the rows kept for l-diversity and the
    discretizer."""
    p = cfg.params
    if me.model_out is None:
        raise InputError(
            f"{me.name}: no model file to write; give --model-out FILE (or a `model_out` entry)",
            public=f"{me.name}: it was given no model file to write",
        )
    sensitive, l = str(p["sensitive"]), int(p["l"])  # noqa: E741

    def read() -> tuple[Any, Any, Any, Any, Any]:
        own, warning = read_own_table(me, class_column=str(p["class"]))
        if warning:
            log.warning("%s: %s", me.name, warning)
        bins = int(p.get("bins", 4))
        with own_input(me):
            table = client_table(
                own.table, sensitive=sensitive, l=l, bins=bins,
                no_suppress=bool(p.get("no_suppress", False)), source=str(me.data),
            )  # fmt: skip
            # the table is outsourced whole: its bins are fitted on all of its rows
            discretizer = fit_bins(
                table, sensitive=sensitive, bins=bins,
                bin_attributes=str(p.get("bin_attributes", "sensitive")),
            )  # fmt: skip
            if discretizer is not None:
                table = discretizer.transform(table)
            keep = suppress_for_l(table, sensitive, l)
        return own, warning, table, keep, discretizer

    return me.inputs.get(("cdtl-outsource",), read)


def outsource_check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """The client's own file, read and prepared before it waits for anyone (the run finds it
    done). The CDBS has none."""
    if me.role != CDBS:
        _outsource_input(cfg, me)


async def outsource_run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    p = cfg.params
    if me.role == CDBS:
        return await serve_cdbs(party, cfg, [str(c) for c in p.get("clients", [CLIENT])])
    sensitive, l, seed = str(p["sensitive"]), int(p["l"]), int(p.get("seed", 0))  # noqa: E741
    bins = int(p.get("bins", 4))
    own, warning, table, keep, discretizer = _outsource_input(cfg, me)
    assert me.model_out is not None  # checked by _outsource_input
    # the shared prune set: a public choice of the seed, on the rows read; its rows that are
    # outsourced, numbered as ESEQ numbers them (positions among the outsourced rows)
    _, prune_read = train_test_split(table.target, PRUNE_FRACTION, seed=seed)
    chosen = set(prune_read.tolist())
    prune = [i for i, r in enumerate(keep.tolist()) if r in chosen]
    model_id = new_model_id()
    name = f"{MODEL_SYSTEM}/{model_id}"
    train = dataclasses.replace(table.subset(keep), name=name)
    key = ClientKey.generate(
        "cdtl/client-key"
    )  # leaves this process only in the private model file
    splits = str(p.get("nominal_splits", "multiway"))
    client = CDBSClient(
        party, key, sensitive=sensitive, class_name=train.class_name, nominal_splits=splits
    )
    with party.phase("cdtl/outsource"):
        an = anatomize(train, sensitive, l, key)
        _, original = open_eseq(an.it, key)
        info = await client.outsource(an, np.flatnonzero(np.isin(original, prune)))
    schema = client.known_schema(name)
    if schema is None:
        raise ProtocolError(f"{me.name}: outsourcing {name!r} left no schema")
    model = ClientModel(
        key, name, schema.digest, sensitive, train.class_name, own.table.attributes,
        own.table.kinds, discretizer, splits, l, tuple(prune),
        {"rows": table.n_rows, "outsourced": train.n_rows,
         "suppressed": table.n_rows - train.n_rows, "bins": bins, "seed": seed},
    )  # fmt: skip
    try:
        written = write_model(
            me.model_out, SavedModel(MODEL_SYSTEM, me.name, model_id, model.body())
        )
    except (OSError, ConfigError) as exc:
        raise InputError(
            f"{me.name}: cannot write its model file {me.model_out}: {exc}",
            public=f"{me.name}: it cannot write its model file",
        ) from None
    await client.done()
    return {
        "model": str(written),
        "model_id": model_id,
        "table": name,
        "rows": table.n_rows,
        "outsourced": train.n_rows,
        "suppressed": table.n_rows - train.n_rows,
        "prune_rows": len(prune),
        "groups": info.get("groups"),
        "bdt_leaves": info.get("leaves"),
        "max_leaf": info.get("max_leaf"),
        "class": train.class_name,
        "sensitive": sensitive,
        "l": l,
        "warning": warning,
    }


# ----------------------------------------------------------------------------- classify


def _classify_input(me: OwnParty) -> tuple[ClientModel, SavedModel, PartyTable, Table]:
    """The client's model file and the rows it classifies with it, read once."""
    if me.predictions is None:
        raise InputError(
            f"{me.name}: nowhere to write the predictions; give --predictions-out FILE (or a "
            "`predictions` entry)",
            public=f"{me.name}: it was given no file for the predictions",
        )

    def read() -> tuple[ClientModel, SavedModel, PartyTable, Table]:
        model, saved = _model_input(me)
        own, table = rows_to_classify(me, model)
        return model, saved, own, table

    return me.inputs.get(("cdtl-classify",), read)


def classify_check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """The client's model file and its new records, read before it waits for anyone. The
    CDBS has none."""
    if me.role != CDBS:
        _classify_input(me)


async def classify_run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    p = cfg.params
    if me.role == CDBS:
        return await serve_cdbs(party, cfg, [str(c) for c in p.get("clients", [CLIENT])])
    model, saved, own, table = _classify_input(me)
    assert me.predictions is not None  # checked by _classify_input
    client = CDBSClient(
        party, model.key, sensitive=model.sensitive, class_name=model.class_name,
        nominal_splits=model.nominal_splits,
    )  # fmt: skip
    costs = ClientCosts()
    prune = set(model.prune)
    with party.phase("cdtl/classify"):
        try:
            await client.table_schema(model.table, model.schema)
        except ProtocolError as exc:
            raise ProtocolError(
                f"{me.name}: the CDBS does not serve the table its model outsourced ({exc}); "
                "start the CDBS on the database folder of that outsourcing"
            ) from None
        predicted = [await client.inference(model.table, r, prune, costs) for r in rows_of(table)]
        with costs.clock():
            await client.settle()
    try:
        path = write_predictions(
            me.predictions, [str(i) for i in own.ids], predicted, id_column=own.id_column
        )
    except (OSError, ConfigError) as exc:
        raise InputError(
            f"{me.name}: cannot write the predictions to {me.predictions}: {exc}",
            public=f"{me.name}: it cannot write its predictions file",
        ) from None
    await client.done()
    out: dict[str, Any] = {
        "model": str(me.model),
        "model_id": saved.model_id,
        "table": model.table,
        "rows": table.n_rows,
        "predictions": str(path),
        "classes": dict(sorted(Counter(predicted).items())),
        "subtrees_learned": costs.subtrees_learned,
        "requests": costs.requests,
        "tuples_held": costs.tuples,
        "seconds": round(costs.seconds, 5),
    }
    if own.table.class_name:
        out["accuracy"] = accuracy(own.table.target, predicted)
    return out
