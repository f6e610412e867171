"""Hybrid-ID3's saved model: one part per party, each a :mod:`mpc.learners.model_file` document
(system ``"hybrid-id3"``, party ``"alice"`` or ``"bob"``), bound to its training run by the
model id and the digests of both parts.

What a part's body holds, and why::

    {
      "learner": "hybrid-id3",
      "role": "bob",
      "attributes": [["outlook", "alice"], ["temperature", "bob"], ...],  # tie order, owners
      "class": "play",
      "classes": ["no", "yes"],                       # sorted, as the protocol numbers them
      "columns": [{"name": "temperature", "kind": "continuous"}, ...],   # this party's own
      "discretizer": {"method": "equal-frequency", "bins": 4,
                      "edges": {"temperature": [70.5, 75.5]}},      # its own columns, or null
      "tree": {...},                                  # see below
      "training": {"rows": 14, "theta": 0.7, "window": 3, "code": "paired", "groups": {...}}
    }

* **The tree.** Teng & Du end with the tree at both parties, and classifying new records
  (:mod:`protocols.hybrid.classify`) needs at each party the tree's tests, to mark the
  terminals its own values allow. Only the class holder needs the classes of the terminals
  (it weights its vector with them), so Bob's part keeps the whole tree (:mod:`mpc.learners.tree`
  JSON with counts and classes) and Alice's keeps the tests only (attribute, site and
  children; no counts, no classes): a file that lives on should hold no more than its use
  needs. Both keep the sorted class labels, so that either can receive the predictions.
* **The bins.** A party binned its continuous columns on its own training rows; a new
  record's value is binned with the same cut points, never new ones, so each part keeps its
  own columns' cut points (and its columns' kinds, so a new file is read as training read it).

In Python::

    body = part_body(BOB, setup=setup, tree=tree, columns=[("temperature", "continuous")],
                     discretizer=discretizer, training={...})
    part = load_part("bob.model.json", BOB)          # checked: digest, layout, role
    predicted = plain_predict({ALICE: a, BOB: b}, joined)   # the launcher's check, in plain

What can go wrong is one :class:`~mpc.learners.model_file.ModelError` naming the file: edited, of
another learner, of the other party, or with a malformed body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import Discretizer, Table
from mpc.learners.evaluation import predict_table
from mpc.learners.model_file import ModelError, read_model
from mpc.learners.tree import from_json
from protocols.hybrid.hybrid_id3 import ALICE, BOB, HybridSetup

__all__ = [
    "KINDS",
    "LEARNER",
    "HybridPart",
    "load_part",
    "part_body",
    "plain_predict",
    "strip_classes",
]

#: the ``system`` of a part's model file and the ``learner`` of its body
LEARNER = "hybrid-id3"
KINDS = ("nominal", "continuous")


def strip_classes(tree: Mapping[str, Any]) -> dict[str, Any]:
    """The tree without counts and classes: what Alice's part keeps."""
    if "children" not in tree:
        return {}
    return {
        "attribute": tree["attribute"],
        "site": tree.get("site"),
        "children": {k: strip_classes(v) for k, v in tree["children"].items()},
    }


def part_body(
    role: str,
    *,
    setup: HybridSetup,
    tree: Mapping[str, Any],
    columns: Sequence[tuple[str, str]],
    discretizer: Discretizer | None,
    training: Mapping[str, Any],
) -> dict[str, Any]:
    """The body of ``role``'s part (the module docstring's layout). ``tree`` is the trained
    tree (JSON form), ``columns`` this party's own ``(name, kind)`` as it read them,
    ``discretizer`` its bins (or ``None``)."""
    if role not in (ALICE, BOB):
        raise ModelError(f"a Hybrid-ID3 model part belongs to alice or bob, not {role!r}")
    edges = {} if discretizer is None else {a: list(e) for a, e in discretizer.edges.items()}
    return {
        "learner": LEARNER,
        "role": role,
        "attributes": [list(p) for p in setup.attributes],
        "class": setup.class_name,
        "classes": list(setup.classes),
        "columns": [{"name": a, "kind": k} for a, k in columns],
        "discretizer": (
            None
            if discretizer is None
            else {"method": "equal-frequency", "bins": discretizer.bins, "edges": edges}
        ),
        "tree": dict(tree) if role == BOB else strip_classes(tree),
        "training": dict(training),
    }


@dataclass(frozen=True)
class HybridPart:
    """One party's part of a saved Hybrid-ID3 model, read and checked."""

    role: str
    model_id: str
    parts: dict[str, str]
    attributes: tuple[tuple[str, str], ...]
    class_name: str
    classes: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    discretizer: Discretizer | None
    tree: dict[str, Any]
    training: dict[str, Any]
    path: Path | None = None

    @property
    def owners(self) -> dict[str, str]:
        """Every attribute of the model and its owner."""
        return dict(self.attributes)

    @property
    def own_attributes(self) -> list[str]:
        return [a for a, _ in self.columns]

    @property
    def nominal(self) -> tuple[str, ...]:
        return tuple(a for a, k in self.columns if k == "nominal")

    @property
    def continuous(self) -> tuple[str, ...]:
        return tuple(a for a, k in self.columns if k == "continuous")


def load_part(path: str | Path, role: str) -> HybridPart:
    """Read and check ``role``'s part (:func:`mpc.learners.model_file.read_model`, then the body's
    layout); raises :class:`~mpc.learners.model_file.ModelError` naming the file."""
    model = read_model(path, LEARNER)
    where = f"model file {model.path}"
    if model.party != role:
        raise ModelError(
            f"{where} is the part of {model.party} of the model; {role} needs its own part"
        )
    if sorted(model.parts) != [ALICE, BOB]:
        raise ModelError(f"{where}: its run recorded parts {sorted(model.parts)}, not alice, bob")
    body = model.body

    def bad(what: str) -> ModelError:
        return ModelError(f"{where}: malformed body ({what})")

    if body.get("learner") != LEARNER or body.get("role") != role:
        raise bad("learner or role")
    try:
        attributes = tuple((str(a), str(o)) for a, o in body["attributes"])
        class_name = str(body["class"])
        classes = tuple(str(c) for c in body["classes"])
        columns = tuple((str(c["name"]), str(c["kind"])) for c in body["columns"])
        tree = body["tree"]
        training = body.get("training") or {}
        raw = body.get("discretizer")
        discretizer = (
            None
            if raw is None
            else Discretizer(
                bins=int(raw["bins"]),
                edges={str(a): tuple(float(x) for x in e) for a, e in raw["edges"].items()},
            )
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise bad(f"{type(exc).__name__}: {exc}") from None
    owners = dict(attributes)
    own = [a for a, o in attributes if o == role]
    if not set(owners.values()) <= {ALICE, BOB} or len(owners) != len(attributes):
        raise bad("attributes: every attribute once, owned by alice or bob")
    if [a for a, _ in columns] != own or any(k not in KINDS for _, k in columns):
        raise bad(f"columns: {role}'s attributes {own}, each nominal or continuous")
    continuous = {a for a, k in columns if k == "continuous"}
    if set(discretizer.edges if discretizer else {}) != continuous:
        raise bad("discretizer: cut points for exactly the continuous columns")
    if not classes or list(classes) != sorted(set(classes)) or not isinstance(tree, dict):
        raise bad("classes or tree")
    if not isinstance(training, dict):
        raise bad("training")
    return HybridPart(
        role, model.model_id, dict(model.parts), attributes, class_name, classes, columns,
        discretizer, tree, training, model.path,
    )  # fmt: skip


def plain_predict(parts: Mapping[str, HybridPart], table: Table) -> np.ndarray:
    """The saved model's predictions for the rows of the joined ``table`` (both parties'
    attributes, raw values), computed in plain: every continuous column binned with its
    owner's cut points, then :func:`mpc.learners.tree.predict_one` on Bob's tree. This is the check
    of ``mpc run hybrid-id3-classify``, where one machine holds both parts."""
    edges: dict[str, tuple[float, ...]] = {}
    bins = 2
    for part in parts.values():
        if part.discretizer is not None:
            edges.update(part.discretizer.edges)
            bins = part.discretizer.bins
    binned = Discretizer(bins=bins, edges=edges).transform(table) if edges else table
    return predict_table(from_json(parts[BOB].tree), binned)
