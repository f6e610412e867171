"""Saved plain models: a tree of ``mpc train --model-out`` (or of :meth:`PlainModel.from_fitted`)
classifies the rows of a new CSV file (``mpc predict``, :mod:`parties.cli.predict`).

A plain model is one :mod:`mpc.learners.model_file` document (system ``"id3"`` or ``"c45"``, party
``null``, digest-checked) whose body holds everything prediction needs::

    {
      "learner": "id3",                                  # = the file's "system"
      "class": "play",                                   # the class column
      "attributes": [{"name": "outlook", "kind": "nominal"},
                     {"name": "temperature", "kind": "continuous"}, ...],   # training order
      "discretizer": {"method": "equal-frequency", "bins": 4,
                      "edges": {"temperature": [70.5, 75.5]}},   # ID3's binned columns, else null
      "classes": ["no", "yes"],
      "tree": {...},                                     # mpc.learners.tree.to_json
      "params": {"max_depth": null, ...},                # the learner's get_params()
      "training": {"data": "weather", "source": "...", "rows": 14, "bins": 4}
    }

The kinds are those of the training table: a column ID3 binned is ``continuous`` here, and a
new file's values are binned with the stored cut points, never with new ones. In Python::

    model = PlainModel.from_fitted("c45", C45Classifier().fit(table), table)
    save_plain_model("model.json", model)
    model = load_plain_model("model.json")              # checked before it classifies
    rows = read_rows("new.csv", model.attributes, model.kinds, model.class_name)
    predicted = model.predict(rows.table)               # = the fitted learner's predict

What can go wrong is one :class:`~mpc.errors.ConfigError` naming the file: a model file that
is edited, of another learner or malformed (:class:`~mpc.learners.model_file.ModelError`), a new CSV
without one of the model's attributes or with a value of the wrong kind
(:class:`~mpc.datasets.DataError`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import (
    DataError,
    Discretizer,
    PartyTable,
    Table,
    csv_header,
    load_party_csv,
)
from mpc.errors import ConfigError
from mpc.learners.evaluation import predict_table, unseen_stops
from mpc.learners.model_file import ModelError, SavedModel, new_model_id, read_model, write_model
from mpc.learners.tree import Leaf, Node, from_json, nodes, room_for_deep_trees, to_json

__all__ = [
    "PLAIN_LEARNERS",
    "PlainModel",
    "load_plain_model",
    "read_rows",
    "save_plain_model",
]

#: the learners whose models ``mpc predict`` reads (the model file's ``system``)
PLAIN_LEARNERS = ("id3", "c45")

_KINDS = ("nominal", "continuous")


@dataclass(frozen=True)
class PlainModel:
    """A plain tree with what it needs to classify a new file: the columns it reads (name and
    kind, in training order), the class column, ID3's discretizer, the classes."""

    learner: str
    class_name: str
    attributes: tuple[str, ...]
    kinds: tuple[str, ...]
    tree: Node
    classes: tuple[str, ...]
    discretizer: Discretizer | None = None
    params: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_fitted(
        cls,
        learner: str,
        estimator: Any,
        table: Table,
        discretizer: Discretizer | None = None,
        *,
        training: dict[str, Any] | None = None,
    ) -> PlainModel:
        """The model of ``estimator`` (an ID3 or C4.5 classifier, fitted on ``table``, or on
        ``discretizer.transform(table)``). ``table`` gives the columns as a new file has them."""
        if learner not in PLAIN_LEARNERS:
            raise ConfigError(f"learner must be one of {list(PLAIN_LEARNERS)}, got {learner!r}")
        if not hasattr(estimator, "tree_"):
            raise ConfigError("the estimator is not fitted yet; call fit(table) first")
        return cls(
            learner=learner,
            class_name=table.class_name,
            attributes=tuple(table.attributes),
            kinds=tuple(table.kinds),
            tree=estimator.tree_,
            classes=tuple(estimator.classes_),
            discretizer=discretizer,
            params=dict(estimator.get_params()),
            training=dict(training or {}),
        )

    @property
    def nominal(self) -> list[str]:
        return [a for a, k in zip(self.attributes, self.kinds, strict=True) if k == "nominal"]

    @property
    def continuous(self) -> list[str]:
        return [a for a, k in zip(self.attributes, self.kinds, strict=True) if k == "continuous"]

    def body(self) -> dict[str, Any]:
        """The model file's body (the layout in the module docstring)."""
        return {
            "learner": self.learner,
            "class": self.class_name,
            "attributes": [
                {"name": a, "kind": k} for a, k in zip(self.attributes, self.kinds, strict=True)
            ],
            "discretizer": None if self.discretizer is None else self.discretizer.to_dict(),
            "classes": list(self.classes),
            "tree": to_json(self.tree),
            "params": self.params,
            "training": self.training,
        }

    def predict(self, table: Table) -> np.ndarray:
        """The class of every row of ``table``, which has the model's attributes in its order
        with its kinds (as :func:`read_rows` gives them)."""
        if (table.attributes, table.kinds) != (self.attributes, self.kinds):
            raise ConfigError(
                f"the table's columns {list(zip(table.attributes, table.kinds, strict=True))} "
                f"are not the model's {list(zip(self.attributes, self.kinds, strict=True))}; "
                "read the file with read_rows(path, model.attributes, model.kinds, ...)"
            )
        if self.discretizer is not None:
            table = self.discretizer.transform(table)
        return predict_table(self.tree, table)

    def unseen(self, table: Table) -> dict[str, int]:
        """How many rows of ``table`` (read as for :meth:`predict`) stop at a value training
        never gave a branch, by attribute (:func:`~mpc.learners.evaluation.unseen_stops`)."""
        if self.discretizer is not None:
            table = self.discretizer.transform(table)
        return unseen_stops(self.tree, table)


def save_plain_model(path: str | Path, model: PlainModel) -> SavedModel:
    """Write ``model`` to ``path`` (private, mode 0600) with a fresh model id."""
    saved = SavedModel(model.learner, None, new_model_id(), model.body())
    write_model(path, saved)
    return saved


def load_plain_model(path: str | Path, learner: str | Sequence[str] = PLAIN_LEARNERS) -> PlainModel:
    """Read and check a model file of ``learner`` (one name or several). Raises
    :class:`~mpc.learners.model_file.ModelError` naming the file when it is edited, of another
    learner or malformed."""
    learners = (learner,) if isinstance(learner, str) else tuple(learner)
    saved = read_model(path, learners)
    try:
        with room_for_deep_trees():  # the tree's JSON nests one level per split
            return _from_body(saved.body, saved.system)
    except RecursionError:
        raise ModelError(f"model file {saved.path}: its tree is too deep to read") from None
    except (ValueError, TypeError, KeyError, AttributeError, ConfigError) as exc:
        raise ModelError(f"model file {saved.path}: not a plain model body: {exc}") from None


def _from_body(body: dict[str, Any], system: str) -> PlainModel:
    """The model of a body written by :meth:`PlainModel.body`; ``ValueError`` when its parts
    do not fit together."""
    learner = body["learner"]
    if learner != system:
        raise ValueError(f"its body is of learner {learner!r}, its file of {system!r}")
    class_name = _text(body["class"], "class")
    attributes = tuple(_text(a["name"], "attribute name") for a in body["attributes"])
    kinds = tuple(str(a["kind"]) for a in body["attributes"])
    if len(set(attributes)) != len(attributes) or not set(kinds) <= set(_KINDS):
        raise ValueError("attributes must be distinct, each nominal or continuous")
    classes = tuple(_text(c, "class value") for c in body["classes"])
    if not classes:
        raise ValueError("no classes")
    discretizer = None
    if body["discretizer"] is not None:
        discretizer = _discretizer(body["discretizer"])
    kind_of = dict(zip(attributes, kinds, strict=True))
    continuous = {a for a, k in kind_of.items() if k == "continuous"}
    binned = set(discretizer.edges) if discretizer is not None else set()
    params, training = body["params"], body["training"]
    if not isinstance(params, dict) or not isinstance(training, dict):
        raise ValueError("params and training must be objects")
    thresholds = learner == "c45" or params.get("splits") == "threshold"
    if learner == "id3" and not thresholds and binned != continuous:
        raise ValueError(
            f"ID3 bins its continuous attributes {sorted(continuous)}; the discretizer has "
            f"{sorted(binned)}"
        )
    if thresholds and discretizer is not None:
        raise ValueError("this model splits continuous attributes by threshold; it has no "
                         "discretizer")  # fmt: skip
    tree = from_json(body["tree"])
    _check_tree(tree, learner, kind_of, set(classes), thresholds)
    return PlainModel(
        learner, class_name, attributes, kinds, tree, classes, discretizer, params, training
    )


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _discretizer(doc: dict[str, Any]) -> Discretizer:
    """The :class:`~mpc.datasets.Discretizer` of its ``to_dict()``."""
    bins, edges = doc["bins"], doc["edges"]
    if doc.get("method") != "equal-frequency" or not isinstance(bins, int) or bins < 2:
        raise ValueError(f"discretizer: expected equal-frequency bins >= 2, got {doc!r}")
    cuts = {str(a): tuple(float(x) for x in e) for a, e in edges.items()}
    for a, e in cuts.items():
        if not all(map(math.isfinite, e)) or list(e) != sorted(set(e)):
            raise ValueError(f"discretizer: the cut points of {a!r} must increase, got {e}")
    return Discretizer(bins=bins, edges=cuts)


def _check_tree(
    tree: Node, learner: str, kind_of: dict[str, str], classes: set[str], thresholds: bool
) -> None:
    """Every test reads an attribute of the model as its kind allows (ID3: multiway on
    nominal or binned columns, thresholds on continuous ones with ``splits="threshold"``;
    C4.5: thresholds on continuous ones, value tests on nominal ones), and every class named
    is one of the model's."""
    for node in nodes(tree):
        if not set(node.counts) <= classes or node.label not in classes:
            raise ValueError(f"the tree names classes that are not in {sorted(classes)}")
        if isinstance(node, Leaf):
            continue
        kind = kind_of.get(node.attribute)
        if kind is None:
            raise ValueError(f"the tree tests {node.attribute!r}, not an attribute of the model")
        if kind == "continuous" and thresholds:
            allowed: tuple[str, ...] = ("threshold",)
        elif learner == "id3":
            allowed = ("multiway",)
        else:
            allowed = ("multiway", "binary")
        if node.kind not in allowed or (node.kind == "threshold") != (node.threshold is not None):
            raise ValueError(f"a {node.kind} test on the {kind} attribute {node.attribute!r}")
        if not node.children:
            raise ValueError(f"a test on {node.attribute!r} without children")


# ------------------------------------------------------------------------ new files


def read_rows(
    path: str | Path,
    attributes: Sequence[str],
    kinds: Sequence[str],
    class_name: str,
    *,
    id_column: str | None = None,
    delimiter: str = ",",
    need_class: bool = False,
    missing: Sequence[str] | None = None,
) -> PartyTable:
    """The rows of CSV file ``path`` as a model reads them: ``table`` has exactly
    ``attributes`` in that order, each of its ``kinds`` (whatever its values look like), and
    the class when the file has the column ``class_name`` (required if ``need_class``).
    ``ids`` are the values of ``id_column``, else the row numbers 0, 1, ... Columns the model
    does not read are ignored; a missing attribute is refused, naming it. A blank cell, ``?``
    and ``missing`` are missing values (a blank class too, unless ``need_class``)."""
    path = Path(path)
    fixed = {c for c in (id_column, class_name) if c is not None}
    if id_column is not None and (id_column in attributes or id_column == class_name):
        raise ConfigError(
            f"the id column {id_column!r} is "
            + ("the class column" if id_column == class_name else "an attribute of the model")
            + "; name a column that the model does not read"
        )
    header = csv_header(path, delimiter)  # None: load_party_csv below says what is wrong
    missing = [a for a in attributes if header is not None and a not in header]
    if missing:
        many = len(missing) > 1
        raise DataError(
            f"no column{'s' if many else ''} {', '.join(map(repr, missing))} in the header; "
            f"the model reads the columns {list(attributes)}",
            file=path,
        )
    has_class = header is not None and class_name in header
    if need_class and not has_class:
        raise DataError(f"the class column {class_name!r} is not in the header", file=path)
    extra = [h for h in header or () if h not in attributes and h not in fixed]
    kind_of = dict(zip(attributes, kinds, strict=True))
    rows = load_party_csv(
        path,
        id_column=id_column,
        class_column=class_name if has_class else None,
        columns=None if header is None else [*attributes, *extra],
        nominal=[*(a for a in attributes if kind_of[a] == "nominal"), *extra],
        continuous=[a for a in attributes if kind_of[a] == "continuous"],
        delimiter=delimiter,
        missing=missing,
        class_required=need_class,
    )
    return PartyTable(rows.ids, rows.table.select(attributes), rows.id_column)
