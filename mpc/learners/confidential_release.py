"""The release of Chang & Tracy's adaptive modification (:mod:`mpc.learners.adaptive_modification`):
the table a data owner ("High") prepares for "Low", its confidential and blocked cells, the
trees trained on it, the measures ``E`` and ``F``, and the paper's formulas (``U_attr``,
``U_leaf``, the net losses of I1, I2 and I3).

Table 1's view: the confidential cells are the *test data* (one test record per confidential
cell, its class the cell's attribute); every other known cell is *training data*. Any
attribute can be posted as the class label (multi-dimensional inference), and the dataset's
own class column is one of them (Section 2.1: "the original class_label becomes an ordinary
attribute"): it may hold confidential cells and its values may be blocked
(``ordinary_class=False`` keeps it out, as a variant). The learner is C4.5 (:mod:`mpc.learners.c45`)
with error-based pruning at confidence 0.25 (``pruning="error-based"``, Quinlan's default) or
with reduced-error pruning on a seeded 20% (``pruning="reduced-error"``). A record with
``"?"`` on a split attribute is an *uncertain evidence* whose weight is split among the
children in proportion to their populations (footnote 2), in training and in classification.

Measures (Section 2.2; the paper leaves their exact form open, these are ours):

* ``E`` — the share of confidential cells that the trees trained on the release misclassify
  (the TE-weighted average of the per-attribute test errors ``Cerr_j``). The paper's figures
  (5.26% = 1/19, 57.90% = 11/19) are of this form.
* ``F`` — the loss of functionality: the rise, against the unmodified release, of the share
  of non-confidential known cells (every attribute, the class column included) that the trees
  trained on the release misclassify (Low's view: features as released). ``F = 0`` before
  any modification.

:class:`Release` holds the table, the hidden cells (confidential or blocked, both ``"?"``) and
the trees; :func:`sample_confidential` draws confidential cells; :func:`flippable_cells` counts
the cells a modification could turn wrong. Nothing here leaves the data owner's process.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.datasets import NOMINAL, Table
from mpc.errors import ConfigError
from mpc.learners.c45 import C45Classifier
from mpc.learners.tree import MISSING, Leaf, Node, Split, predict_one

__all__ = [
    "DEFAULT_PRUNING",
    "DRAWS",
    "PRUNINGS",
    "UNKNOWN_ON_PATH",
    "Modification",
    "Release",
    "Scores",
    "flippable_cells",
    "i1_net_loss",
    "i2_net_loss",
    "i3_cost",
    "i3_net_loss",
    "leaf_weights",
    "learner",
    "meets_unknown",
    "sample_confidential",
    "u_attr",
    "u_leaf",
]

#: The trees of the release: C4.5's own error-based pruning, or reduced-error pruning.
PRUNINGS = ("error-based", "reduced-error")
#: The pruning used unless asked otherwise.
DEFAULT_PRUNING = "error-based"
#: How ``E`` scores a confidential cell whose record meets a ``"?"`` on its path: by the
#: leaves it reaches with its weight split (footnote 2, the default), or as wrong (a reading
#: the paper's text does not support, but the only one found to reach its 57.90%).
UNKNOWN_ON_PATH = ("split", "wrong")
#: Where the confidential cells are drawn: among the known cells (the default), or among all
#: cells, the unknown ones dropped after the draw (fewer cells scored, as the paper's 19 of 20).
DRAWS = ("known", "all")
#: A leaf's path: (attribute, branch) pairs from the root to the leaf.
Path = tuple[tuple[str, str], ...]


def learner(pruning: str = DEFAULT_PRUNING) -> C45Classifier:
    """The C4.5 learner of the release's trees, with fractional instances.

    ``"error-based"``: C4.5's pessimistic (error-based) pruning at confidence 0.25, the
    pruning of the C4.5 the paper names (Section 2.1), on all training rows.
    ``"reduced-error"``: reduced-error pruning on a seeded 20% of each tree's training rows
    (the seed is fixed, 0: it picks only which rows are held out for pruning)."""
    if pruning == "error-based":
        return C45Classifier(pruning="error-based", confidence=0.25)
    if pruning == "reduced-error":
        return C45Classifier(pruning="reduced-error", seed=0)
    raise ConfigError(f"pruning must be one of {', '.join(PRUNINGS)}, got {pruning!r}")


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def check_count(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name} must be a whole number >= 1 (or None: no limit), got {value!r}")


def u_attr(cerr: float, te: int, s: int) -> float:
    """Section 3.1: ``U_attr = (1 - Cerr_j) * TE_j / S``."""
    return (1.0 - cerr) * te / s if s else 0.0


def u_leaf(te: float, e_j: int, tr: float, fr: float, r_j: int) -> float:
    """Section 3.2: ``U_leaf = Te / E_j * (1 - (Tr - Fr) / (R_j + E_j))``."""
    if e_j <= 0:
        return 0.0
    return te / e_j * (1.0 - (tr - fr) / (r_j + e_j))


def i1_net_loss(te: float, a_plus: float, a_minus: float) -> float:
    """I1 (hide the immediate attribute of the correctly classified test records): cost
    ``Te``, gain ``a- / (a+ + a-) * Te``, net loss ``cost - gain = a+ / (a+ + a-) * Te``.

    (The printed net loss reads ``a-/(a+ + a-) Te``, the gain itself; the net loss of I2 and
    I3 is cost minus gain, and so is this one.)"""
    total = a_plus + a_minus
    return te if total <= 0 else te * a_plus / total


def i2_net_loss(tr: float, fr: float, te: float, fe: float) -> float:
    """I2 (block the class of correct training records): ``(Tr - Fr + 1) - (Te - Fe)``;
    infinite when ``Te <= Fe`` (the paper avoids such a leaf)."""
    if te <= fe:
        return math.inf
    return (tr - fr + 1) - (te - fe)


def i3_cost(tr: float, fr: float, a_plus: float, a_minus: float, limit: int | None = None) -> float:
    """Footnote 3: the least ``c`` with ``Tr - c + sum_{i<=c} alpha_i <= Fr``, where
    ``alpha_1 = a+ / (a+ + a- - 1)`` and
    ``alpha_{i+1} = (a+ - i + sum_{j<=i} alpha_j) / (a+ + a- - 1)`` is the share of a
    modified record's mass that comes back to the leaf. Infinite if no ``c <= limit``
    (default ``ceil(Tr)``) is enough."""
    denominator = a_plus + a_minus - 1
    if tr <= fr:
        return 0.0
    if denominator <= 0:
        return math.inf
    limit = math.ceil(tr) if limit is None else limit
    returned = 0.0
    for c in range(1, limit + 1):
        alpha = (a_plus - (c - 1) + returned) / denominator
        returned += alpha
        if tr - c + returned <= fr:
            return float(c)
    return math.inf


def i3_net_loss(c: float, te: float, fe: float) -> float:
    """I3 (hide the immediate attribute of correct training records): ``c - (Te - Fe)``."""
    if te <= fe or math.isinf(c):
        return math.inf
    return c - (te - fe)


def leaf_weights(tree: Node, row: dict[str, Any]) -> dict[Path, float]:
    """Footnote 2: the leaves ``row`` reaches and its weight at each. A ``"?"`` (or an unseen
    value) on a split attribute splits the weight among the children in proportion to their
    training populations; the weights sum to 1."""
    out: dict[Path, float] = {}

    def walk(node: Node, path: Path, w: float) -> None:
        if isinstance(node, Leaf):
            out[path] = out.get(path, 0.0) + w
            return
        key = node.branch(row.get(node.attribute))
        if key is not None:
            walk(node.children[key], (*path, (node.attribute, key)), w)
            return
        shares = node.weights or _populations(node)
        for k, share in shares.items():
            if share > 0:
                walk(node.children[k], (*path, (node.attribute, k)), w * share)

    walk(tree, (), 1.0)
    return out


def _populations(node: Split) -> dict[str, float]:
    sizes = {k: sum(c.counts.values()) for k, c in node.children.items()}
    total = sum(sizes.values())
    return {k: (v / total if total else 1.0 / len(sizes)) for k, v in sizes.items()}


def node_at(tree: Node, path: Path) -> Node:
    node = tree
    for _, key in path:
        assert isinstance(node, Split)
        node = node.children[key]
    return node


@dataclass(frozen=True)
class Modification:
    """One blocked value: ``row``'s ``attribute`` became ``"?"``."""

    attribute: str
    row: int
    method: str  # "I1", "I2", "I3", "best-first", "exhaustive"
    net_loss: float | None = None
    class_label: str | None = None  # the attribute posted as the class when it was chosen
    round: int = 0

    def to_json(self) -> dict[str, Any]:
        loss = None if self.net_loss is None or math.isinf(self.net_loss) else self.net_loss
        return {
            "attribute": self.attribute,
            "row": self.row,
            "method": self.method,
            "net_loss": None if loss is None else round(loss, 4),
            "class_label": self.class_label,
            "round": self.round,
        }


@dataclass(frozen=True)
class Scores:
    """``E`` and ``F`` of a release, with the per-attribute test errors ``Cerr_j``."""

    e: float
    f: float
    cerr: dict[str, float]
    te: dict[str, int]
    wrong: int  # confidential cells misclassified


@dataclass
class Release:
    """The original table (High's view), its confidential cells and the release built so far.

    ``values`` is the ``N x M`` table of nominal values (the dataset's class is one of the M
    columns, ``class_column``); ``confidential`` marks the test cells. ``released`` is what Low
    would receive now.

    ``ordinary_class`` (default, Section 2.1): the class column is an ordinary attribute, it
    may hold confidential cells and its values may be blocked. ``False``: it holds no
    confidential cell and only I2 blocks its values (when it is the posted class).
    ``pruning`` names the trees' pruning (:data:`PRUNINGS`). ``unknown_on_path`` is how ``E``
    scores a cell whose record meets a ``"?"`` on its tree's path (:data:`UNKNOWN_ON_PATH`).
    """

    attributes: list[str]
    values: np.ndarray
    confidential: np.ndarray
    class_column: str
    name: str = "table"
    ordinary_class: bool = True
    pruning: str = DEFAULT_PRUNING
    unknown_on_path: str = "split"
    released: np.ndarray = field(init=False)
    modifications: list[Modification] = field(default_factory=list)
    _trees: dict[int, Node] = field(default_factory=dict, repr=False)
    _baseline_error: float | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.values = np.asarray(self.values, dtype=object)
        self.confidential = np.asarray(self.confidential, dtype=bool)
        n, m = self.values.shape
        if self.confidential.shape != (n, m) or len(self.attributes) != m:
            raise ConfigError(
                f"the confidential mask has shape {self.confidential.shape}, the table "
                f"{(n, m)} with {len(self.attributes)} attribute names"
            )
        if self.class_column not in self.attributes:
            raise ConfigError(f"no class column {self.class_column!r} in {self.attributes}")
        if (self.confidential & (self.values == MISSING)).any():
            raise ConfigError("a confidential cell must hold a known value, not '?'")
        check_choice("pruning", self.pruning, PRUNINGS)
        check_choice("unknown_on_path", self.unknown_on_path, UNKNOWN_ON_PATH)
        if (
            not self.ordinary_class
            and self.confidential[:, self.attributes.index(self.class_column)].any()
        ):
            raise ConfigError(
                f"the class column {self.class_column!r} is kept out of the confidential cells "
                "(ordinary_class=False, --class-role kept): take its cells out of the mask, "
                "or treat it as an ordinary attribute (--class-role ordinary)"
            )
        self.released = np.where(self.confidential, MISSING, self.values).astype(object)

    @classmethod
    def from_table(
        cls,
        table: Table,
        confidential: np.ndarray,
        *,
        ordinary_class: bool = True,
        pruning: str = DEFAULT_PRUNING,
        unknown_on_path: str = "split",
    ) -> Release:
        """The release of ``table`` (nominal attributes; its class becomes the last column)."""
        if any(k != NOMINAL for k in table.kinds):
            cont = [a for a, k in zip(table.attributes, table.kinds, strict=True) if k != NOMINAL]
            raise ConfigError(
                f"sanitizing needs nominal attributes; {cont} are continuous: discretize them "
                "first (e.g. into equal-frequency bins)"
            )
        attributes = [*table.attributes, table.class_name]
        values = np.column_stack([*(np.asarray(c, dtype=str) for c in table.columns),
                                  np.asarray(table.target, dtype=str)]).astype(object)  # fmt: skip
        return cls(attributes, values, confidential, table.class_name, name=table.name,
                   ordinary_class=ordinary_class, pruning=pruning,
                   unknown_on_path=unknown_on_path)  # fmt: skip

    # -- bookkeeping

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    def col(self, attribute: str) -> int:
        return self.attributes.index(attribute)

    def confidential_cells(self) -> list[tuple[int, int]]:
        rows, cols = np.nonzero(self.confidential)
        return list(zip(rows.tolist(), cols.tolist(), strict=True))

    def modifiable(self, r: int, j: int) -> bool:
        """A cell High may block: known in the release, not confidential, and not in the
        class column unless that is an ordinary attribute (otherwise only I2 touches it,
        when it is posted as the class)."""
        return (
            self.released[r, j] != MISSING
            and not self.confidential[r, j]
            and (self.ordinary_class or self.attributes[j] != self.class_column)
        )

    def hide(self, cells: Iterable[tuple[int, int]], mods: Iterable[Modification]) -> None:
        for r, j in cells:
            if self.released[r, j] == MISSING:
                raise ConfigError(f"cell ({r}, {self.attributes[j]}) is already hidden")
            self.released[r, j] = MISSING
        self.modifications.extend(mods)
        self._trees.clear()

    def undo(self, cells: Sequence[tuple[int, int]]) -> None:
        for r, j in cells:
            self.released[r, j] = self.values[r, j]
        del self.modifications[len(self.modifications) - len(cells) :]
        self._trees.clear()

    def row(self, r: int, source: np.ndarray | None = None) -> dict[str, Any]:
        data = self.released if source is None else source
        return dict(zip(self.attributes, data[r].tolist(), strict=True))

    # -- trees and scores

    def tree(self, j: int) -> Node:
        """``DT_j``: attribute ``j`` posted as the class, trained on the rows whose ``j`` is
        known in the release, every other attribute as released."""
        tree = self._trees.get(j)
        if tree is None:
            rows = np.flatnonzero(self.released[:, j] != MISSING)
            others = [k for k in range(len(self.attributes)) if k != j]
            table = Table(
                name=f"{self.name}/{self.attributes[j]}",
                attributes=tuple(self.attributes[k] for k in others),
                kinds=(NOMINAL,) * len(others),
                columns=tuple(self.released[rows, k] for k in others),
                target=self.released[rows, j],
                class_name=self.attributes[j],
                source="release",
            )
            tree = learner(self.pruning).fit(table).tree_ if len(rows) else Leaf({}, MISSING)
            self._trees[j] = tree
        return tree

    def training_rows(self, j: int) -> np.ndarray:
        return np.flatnonzero(self.released[:, j] != MISSING)

    def scores(self, *, with_f: bool = True) -> Scores:
        cells = self.confidential_cells()
        wrong_by: dict[str, int] = {}
        te: dict[str, int] = {}
        for r, j in cells:
            a = self.attributes[j]
            te[a] = te.get(a, 0) + 1
            if self.misclassified(r, j):
                wrong_by[a] = wrong_by.get(a, 0) + 1
        wrong = sum(wrong_by.values())
        cerr = {a: wrong_by.get(a, 0) / n for a, n in te.items()}
        e = wrong / len(cells) if cells else 0.0
        f = 0.0
        if with_f:
            err = self.functionality_error()
            if self._baseline_error is None:
                self._baseline_error = err
            f = max(0.0, err - self._baseline_error)
        return Scores(e, f, cerr, te, wrong)

    def misclassified(self, r: int, j: int, row: dict[str, Any] | None = None) -> bool:
        """Whether ``DT_j`` misclassifies row ``r`` (as released, or as ``row``) as ``E``
        scores it: its prediction is not the true value, or (``unknown_on_path="wrong"``) it
        meets a ``"?"`` on its path."""
        tree = self.tree(j)
        row = self.row(r) if row is None else row
        if predict_one(tree, row) != self.values[r, j]:
            return True
        return self.unknown_on_path == "wrong" and meets_unknown(tree, row)

    def functionality_error(self) -> float:
        """The share of non-confidential known cells misclassified by the trees trained on
        the release (features as released)."""
        wrong = total = 0
        rows = [self.row(r) for r in range(self.shape[0])]
        for j in range(self.shape[1]):
            cells = np.flatnonzero((self.values[:, j] != MISSING) & ~self.confidential[:, j])
            if not len(cells):
                continue
            tree = self.tree(j)
            total += len(cells)
            wrong += sum(predict_one(tree, rows[r]) != self.values[r, j] for r in cells.tolist())
        return wrong / total if total else 0.0

    def baseline(self) -> Scores:
        """The scores of the release before any modification (only the confidential cells
        hidden); fixes the reference of ``F``."""
        saved = self.released
        self.released = np.where(self.confidential, MISSING, self.values).astype(object)
        self._trees.clear()
        self._baseline_error = None
        try:
            return self.scores()
        finally:
            self.released = saved
            self._trees.clear()

    def to_table(self) -> Table:
        """The release as a table (class column last, as in the input)."""
        k = self.col(self.class_column)
        others = [j for j in range(len(self.attributes)) if j != k]
        return Table(
            name=self.name,
            attributes=tuple(self.attributes[j] for j in others),
            kinds=(NOMINAL,) * len(others),
            columns=tuple(self.released[:, j].copy() for j in others),
            target=self.released[:, k].copy(),
            class_name=self.class_column,
            source="release",
        )


def sample_confidential(
    table: Table, n: int, seed: int, *, include_class: bool = True, among: str = "known"
) -> np.ndarray:
    """``n`` confidential cells drawn uniformly among the known cells (a cell already unknown
    has nothing to protect), the class column's included unless ``include_class`` is False;
    a mask over ``attributes + [class]``. With ``among="all"`` the ``n`` cells are drawn among
    all cells and the unknown ones among them dropped, so that fewer may be left (the
    paper's 19 scored cells of 20 fit such a draw). ``seed`` seeds this draw and nothing
    else: it is a public choice for experiments (whoever knows it knows the cells)."""
    check_choice("among", among, DRAWS)
    columns = [*table.columns, table.target] if include_class else list(table.columns)
    values = np.column_stack([np.asarray(c, dtype=str) for c in columns])
    is_known = (values != MISSING).ravel()
    pool = np.flatnonzero(is_known) if among == "known" else np.arange(is_known.size)
    if n < 1 or n > len(pool):
        which = ("known" if among == "known" else "") + ("" if include_class else " non-class")
        raise ConfigError(
            f"--confidential must be between 1 and the {len(pool)} {which.strip()} cells, got {n}"
        )
    rng = np.random.default_rng(seed)
    chosen = rng.choice(pool, size=n, replace=False)
    chosen = chosen[is_known[chosen]]
    mask = np.zeros((table.n_rows, len(table.attributes) + 1), dtype=bool)
    m = values.shape[1]
    for flat in chosen.tolist():
        mask[flat // m, flat % m] = True
    return mask


def meets_unknown(tree: Node, row: dict[str, Any]) -> bool:
    """Whether ``row`` meets a ``"?"`` on a split attribute on its way down ``tree``."""
    node = tree
    while isinstance(node, Split):
        value = row.get(node.attribute)
        if value == MISSING:
            return True
        key = node.branch(value)
        if key is None:
            return False
        node = node.children[key]
    return False


def flippable_cells(rel: Release) -> list[tuple[int, int]]:
    """The confidential cells classified correctly now that a single blocked value in their
    own row would turn wrong, with the current trees: the stock best-first draws on, one cell
    per modification, until it is spent. (Blocking a value of a confidential row does not
    change that cell's tree, which is not trained on the row: the row's value of the tree's
    class is the hidden confidential value.)"""
    out = []
    for r, j in rel.confidential_cells():
        row = rel.row(r)
        if rel.misclassified(r, j, row):
            continue
        for k in range(len(rel.attributes)):
            if k == j or not rel.modifiable(r, k):
                continue
            changed = {**row, rel.attributes[k]: MISSING}
            if rel.misclassified(r, j, changed):
                out.append((r, j))
                break
    return out
