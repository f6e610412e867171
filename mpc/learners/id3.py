"""Plain ID3 — Vaidya & Clifton, Algorithm 1 (Quinlan's ID3) — the reference every private
learner must reproduce exactly.

``ID3(R, C, T)``: if R is empty, a leaf with the majority class of T; if every row of T has
the same class, a leaf with that class; otherwise split on the attribute A of R with the
largest information gain and recurse on ``ID3(R - A, C, T(a_i))`` for every value ``a_i``.

The deterministic rules below are written once here and reused by every private learner
(PPID3, Hybrid-ID3 with ω = all attributes), so that "the private tree equals the plain tree"
is a well-defined, testable statement:

* information gain with log base 2 (:func:`information_gain`, from integer counts), or
  another criterion of :mod:`mpc.learners.criteria` (``criterion=``);
* gains closer than :data:`GAIN_TIE` are a tie; ties go to the attribute that comes first in
  the attribute order, which is site order, then column order within the site
  (:func:`best_attribute`);
* every value of the split attribute's domain (the values seen in the training data) gets a
  child; a child with no rows is a leaf with zero counts predicting the parent's majority;
* majority ties go to the class that sorts first (:func:`mpc.learners.tree.majority`);
* ``"?"`` is an ordinary value;
* optional stopping rules: ``max_depth`` and ``min_samples_split`` (both off by default);
* continuous attributes are binned before learning (``bins``, equal-frequency cut points
  learned on the training rows) into a nominal attribute of one value per bin; or, with
  ``splits="threshold"``, split in two at a threshold, as CART and C4.5 do:

  - the candidate thresholds of an attribute are fixed once, on the training rows: every
    distinct value but the largest (``bins=None``: exact), or the equal-frequency cut points
    of ``bins`` bins (:class:`~mpc.datasets.Discretizer`'s); a row goes to ``<= t`` or
    ``> t``, and a missing value counts as below every number (it goes to ``<= t``);
  - at a node, the candidates are the attribute's thresholds strictly inside the interval
    its path leaves it (public: the thresholds on the path), each scored by the criterion on
    its two-row count table (a side with no rows at the node included); the attribute stays
    a candidate below;
  - candidates are ordered by attribute (the attribute order), then threshold ascending,
    and the first best wins (:func:`best_attribute`, :func:`best_site_attribute`);
  - a node with no candidate left (no nominal attribute, no threshold inside its
    intervals) is a leaf.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from mpc.datasets import Discretizer, Table
from mpc.errors import ConfigError
from mpc.learners.criteria import GAIN_TIE, NLOGN_W, criterion, entropy, information_gain
from mpc.learners.estimator import PlainTreeClassifier
from mpc.learners.tree import Leaf, Node, Split, majority

__all__ = [
    "GAIN_TIE",
    "SPLITS",
    "ID3Classifier",
    "best_attribute",
    "best_site_attribute",
    "candidate_thresholds",
    "entropy",
    "information_gain",
]


def best_attribute(gains: Sequence[Any], tie: float = GAIN_TIE) -> int:
    """Index of the best gain (or score); those within ``tie`` of the best tie (default
    :data:`GAIN_TIE`; 0 for the exact criteria, whose scores are integers or fractions), and
    the first in order wins."""
    if not gains:
        raise ValueError("no attribute to choose from")
    top = max(gains)
    if not tie:
        return next(i for i, g in enumerate(gains) if g == top)
    return next(i for i, g in enumerate(gains) if g >= top - tie)


def best_site_attribute(
    gains_by_site: Sequence[Sequence[Any]], tie: float = GAIN_TIE
) -> tuple[int, int]:
    """The winning ``(site, attribute)`` when attributes are spread over sites, exactly as
    AttribMaxInfoGain (Algorithm 5) decides: each site picks its best attribute with
    :func:`best_attribute` (column order breaks ties), then the site whose best gain is best
    wins (site order breaks ties). Sites with no attribute left pass empty lists."""
    local = [best_attribute(g, tie) if len(g) else -1 for g in gains_by_site]
    candidates = [s for s, j in enumerate(local) if j >= 0]
    if not candidates:
        raise ValueError("no attribute to choose from")
    site = candidates[best_attribute([gains_by_site[s][local[s]] for s in candidates], tie)]
    return site, local[site]


class ID3Classifier(PlainTreeClassifier):
    """Plain ID3 on nominal attributes; continuous ones are binned first.

    Parameters are keyword-only and only stored:

    * ``max_depth``, ``min_samples_split``: the optional stopping rules (off by default);
    * ``bins``: each continuous attribute is cut into this many equal-frequency bins, the cut
      points learned on the rows ``fit`` is given (:class:`~mpc.datasets.Discretizer`), so
      that under cross-validation every fold bins on its own training rows; ``None`` makes a
      continuous attribute an error;
    * ``splits``: ``"multiway"`` (continuous attributes binned into nominal ones, one branch
      per bin; the default) or ``"threshold"`` (two branches at a threshold: every distinct
      value a candidate with ``bins=None``, the cut points of ``bins`` bins otherwise; the
      module docstring's rules);
    * ``criterion``: how a node's candidates are scored (:mod:`mpc.learners.criteria`):
      ``"entropy"`` (the papers' information gain, the default), ``"gini"`` (MPyC's),
      ``"gini-impurity"`` (CART's and scikit-learn's) or ``"entropy-fixed"``: every entry of
      :data:`~mpc.learners.criteria.CRITERIA`; the last three are exact fractions or
      integers, as the learners that keep the counts secret compute them.

    ``fit`` learns ``tree_``, ``classes_``, ``attributes_``, ``domains_`` and
    ``discretizer_`` (None when no attribute was binned); ``predict`` bins new rows with the
    same cut points. Besides a :class:`~mpc.datasets.Table`, ``fit`` takes ``X, y`` as
    scikit-learn does (:mod:`mpc.learners.estimator`).
    """

    def __init__(
        self,
        *,
        max_depth: int | None = None,
        min_samples_split: int | None = None,
        bins: int | None = 4,
        criterion: str = "entropy",
        class_weight: str | Mapping[Any, float] | None = None,
        splits: str = "multiway",
    ):
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.bins = bins
        self.criterion = criterion
        self.class_weight = class_weight
        self.splits = splits

    def _validate(self) -> None:
        if self.max_depth is not None and (
            not isinstance(self.max_depth, int) or self.max_depth < 0
        ):
            raise ConfigError(f"max_depth must be None or an int >= 0, got {self.max_depth!r}")
        if self.min_samples_split is not None and (
            not isinstance(self.min_samples_split, int) or self.min_samples_split < 2
        ):
            raise ConfigError(
                f"min_samples_split must be None or an int >= 2, got {self.min_samples_split!r}"
            )
        if self.bins is not None and (
            isinstance(self.bins, bool) or not isinstance(self.bins, int) or self.bins < 2
        ):
            raise ConfigError(f"bins must be None or an int >= 2, got {self.bins!r}")
        if self.splits not in SPLITS:
            raise ConfigError(f"splits must be one of {list(SPLITS)}, got {self.splits!r}")
        criterion(self.criterion)

    def _fit_table(
        self,
        table: Table,
        *,
        attribute_order: Sequence[str] | None = None,
        sites: dict[str, int] | None = None,
        weights: np.ndarray | None = None,
    ) -> ID3Classifier:
        """Learn the tree. ``attribute_order`` fixes the tie-breaking order (site order,
        then column order); ``sites`` records which site owns each attribute; ``weights``
        (one per row) makes every class count a sum of weights. An exact criterion counts in
        integers: fractional weights are scaled by one common factor to whole numbers first
        (the tree does not change: every criterion here scales with its counts)."""
        self._validate()
        order = list(attribute_order) if attribute_order is not None else list(table.attributes)
        unknown = [a for a in order if a not in table.attributes]
        if unknown:
            raise ConfigError(f"attribute_order names unknown attributes {unknown}")
        class_values = np.unique(np.asarray(table.target, dtype=str))  # those of weight 0 too
        if weights is not None:  # a row of weight 0 is a row left out
            weights = np.asarray(weights, dtype=np.float64)
            table, weights = table.subset(np.flatnonzero(weights > 0)), weights[weights > 0]
        self.discretizer_: Discretizer | None = None
        self.thresholds_: dict[str, np.ndarray] = {}
        if self.splits == "threshold":
            self.thresholds_ = candidate_thresholds(table, self.bins, weights)
        elif self.bins is not None and "continuous" in table.kinds:
            self.discretizer_ = Discretizer.fit(table, self.bins, weights=weights)
            table = self.discretizer_.transform(table)
        for a in order:
            if a in self.thresholds_:
                continue
            if table.kinds[table.attributes.index(a)] != "nominal":
                raise ConfigError(
                    f"ID3 needs nominal attributes; {a!r} is continuous: discretise it "
                    "(ID3Classifier(bins=4), or --bins 4)"
                )
        if table.n_rows == 0:
            raise ConfigError("cannot learn a tree from an empty table")
        self._criterion = criterion(self.criterion)
        self.attributes_ = order
        self.sites_ = dict(sites or {})
        y = np.searchsorted(class_values, np.asarray(table.target, dtype=str))
        self.classes_ = [str(c) for c in class_values]
        self.domains_: list[list[str]] = []
        codes = np.empty((table.n_rows, len(order)), dtype=np.int64)
        self._x: dict[int, np.ndarray] = {}  # threshold attributes: values, missing as -inf
        for j, a in enumerate(order):
            if a in self.thresholds_:
                x = np.asarray(table.column(a), dtype=np.float64)
                self._x[j] = np.where(np.isnan(x), -np.inf, x)
                self.domains_.append([])
                codes[:, j] = 0
                continue
            values, inverse = np.unique(np.asarray(table.column(a), dtype=str), return_inverse=True)
            self.domains_.append([str(v) for v in values])
            codes[:, j] = inverse
        self._codes, self._y = codes, y.astype(np.int64)
        self._w = None if weights is None else _whole(weights, self.criterion)
        ranges = {j: (-np.inf, np.inf) for j in self._x}
        self.tree_ = self._build(np.arange(table.n_rows), list(range(len(order))), 0, None, ranges)
        del self._codes, self._y, self._w, self._x
        return self

    def _counts(self, rows: np.ndarray) -> dict[str, float]:
        w = None if self._w is None else self._w[rows]
        n = np.bincount(self._y[rows], weights=w, minlength=len(self.classes_))
        return {c: float(n[i]) for i, c in enumerate(self.classes_)}

    def _build(
        self,
        rows: np.ndarray,
        remaining: list[int],
        depth: int,
        parent: str | None,
        ranges: dict[int, tuple[float, float]],
    ) -> Node:
        """The tree below a node, grown by a stack of nodes still to grow rather than by
        recursion (a number split again and again makes trees hundreds of levels deep); each
        node's children are filled in their order."""
        top: dict[str, Node] = {}
        stack: list[tuple[Any, ...]] = [(rows, remaining, depth, parent, ranges, top, "")]
        while stack:
            rows, remaining, depth, parent, ranges, into, key = stack.pop()
            node, below = self._node(rows, remaining, depth, parent, ranges)
            into[key] = node
            for child_key, spec in reversed(below):
                assert isinstance(node, Split)
                stack.append((*spec, node.children, child_key))
        return top[""]

    def _node(
        self,
        rows: np.ndarray,
        remaining: list[int],
        depth: int,
        parent: str | None,
        ranges: dict[int, tuple[float, float]],
    ) -> tuple[Node, list[tuple[str, tuple[Any, ...]]]]:
        """One node: a leaf, or a split whose children are still to grow (their keys, in
        order, and what each grows from)."""
        counts = self._counts(rows)
        if len(rows) == 0:
            assert parent is not None  # the root has rows (checked in fit)
            return Leaf(counts, parent), []
        label = majority(counts)
        pure = sum(1 for n in counts.values() if n > 0) == 1
        stop = (
            pure
            or (self.max_depth is not None and depth >= self.max_depth)
            or (self.min_samples_split is not None and len(rows) < self.min_samples_split)
        )
        candidates = [] if stop else self._candidates(rows, remaining, ranges)
        if not candidates:
            return Leaf(counts, label), []
        j, t = self._choose(candidates)
        attribute = self.attributes_[j]
        site = self.sites_.get(attribute)
        below: list[tuple[str, tuple[Any, ...]]]
        if t is not None:  # a threshold: both sides keep the attribute, in a narrower interval
            lo, hi = ranges[j]
            left = self._x[j][rows] <= t
            below = [
                ("<=", (rows[left], remaining, depth + 1, label, {**ranges, j: (lo, t)})),
                (">", (rows[~left], remaining, depth + 1, label, {**ranges, j: (t, hi)})),
            ]
            split = Split(attribute, counts, {}, kind="threshold", site=site,
                          threshold=float(t), missing="<=")  # fmt: skip
        else:
            rest = [r for r in remaining if r != j]
            column = self._codes[rows, j]
            below = [(value, (rows[column == v], rest, depth + 1, label, ranges))
                     for v, value in enumerate(self.domains_[j])]  # fmt: skip
            split = Split(attribute, counts, {}, site=site)
        for child_key, _ in below:  # the children's order, filled in as they grow
            split.children[child_key] = Leaf({}, label)
        return split, below

    def _candidates(
        self, rows: np.ndarray, remaining: list[int], ranges: dict[int, tuple[float, float]]
    ) -> list[tuple[int, float | None, Any]]:
        """Every candidate split of a node, in the tie-breaking order: ``(attribute,
        threshold or None, score)``, a nominal attribute once, a threshold attribute once per
        threshold inside its interval, ascending."""
        n_classes = len(self.classes_)
        w = None if self._w is None else self._w[rows]
        out: list[tuple[int, float | None, Any]] = []
        for j in remaining:
            if j in self._x:
                lo, hi = ranges[j]
                t = self.thresholds_[self.attributes_[j]]
                t = t[(t > lo) & (t < hi)]
                tables = _threshold_counts(self._x[j][rows], self._y[rows], w, t, n_classes)
                scores = self._criterion.scores(tables)
                out.extend((j, float(ti), g) for ti, g in zip(t, scores, strict=True))
                continue
            joint = np.bincount(
                self._codes[rows, j] * n_classes + self._y[rows],
                weights=w,
                minlength=len(self.domains_[j]) * n_classes,
            ).reshape(-1, n_classes)
            out.append((j, None, self._criterion.score(joint)))
        return out

    def _choose(self, candidates: list[tuple[int, float | None, Any]]) -> tuple[int, float | None]:
        """The winning candidate: the first best, by site when the attributes are spread
        over sites (:func:`best_site_attribute`)."""
        gains = [g for _, _, g in candidates]
        tie = self._criterion.tie
        if self.sites_:
            by_site: dict[Any, list[int]] = {}
            for i, (jj, _, _) in enumerate(candidates):
                by_site.setdefault(self.sites_.get(self.attributes_[jj]), []).append(i)
            groups = list(by_site.values())
            s, a = best_site_attribute([[gains[i] for i in g] for g in groups], tie)
            j, t, _ = candidates[groups[s][a]]
        else:
            j, t, _ = candidates[best_attribute(gains, tie)]
        return j, t

    # ------------------------------------------------------------------ use

    def _transform(self, table: Table) -> Table:
        """New rows binned with the cut points learned in ``fit`` (threshold splits read the
        numbers as they are)."""
        disc = getattr(self, "discretizer_", None)
        return table if disc is None else disc.transform(table)


#: how continuous attributes split: into a branch per bin, or in two at a threshold
SPLITS = ("multiway", "threshold")


def candidate_thresholds(
    table: Table, bins: int | None, weights: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The candidate thresholds of every continuous attribute of ``table``, ascending: its
    distinct non-missing values but the largest (``bins`` None), or the equal-frequency cut
    points of ``bins`` bins (:meth:`Discretizer.fit`, weighted by ``weights``)."""
    continuous = [a for a, k in zip(table.attributes, table.kinds, strict=True)
                  if k == "continuous"]  # fmt: skip
    if bins is not None:
        edges = Discretizer.fit(table, bins, weights=weights).edges if continuous else {}
        return {a: np.asarray(edges.get(a, ()), dtype=np.float64) for a in continuous}
    out = {}
    for a in continuous:
        x = np.asarray(table.column(a), dtype=np.float64)
        out[a] = np.unique(x[~np.isnan(x)])[:-1]
    return out


def _threshold_counts(
    x: np.ndarray, y: np.ndarray, w: np.ndarray | None, thresholds: np.ndarray, n_classes: int
) -> np.ndarray:
    """The two-row count table of every threshold: ``(len(thresholds), 2, n_classes)``, row
    0 the rows with ``x <= t``, row 1 the others; integer counts, or sums of ``w``."""
    out = np.empty((len(thresholds), 2, n_classes), dtype=np.int64 if w is None else np.float64)
    if not len(thresholds):
        return out
    for c in range(n_classes):
        of_c = y == c
        xs = x[of_c]
        order = np.argsort(xs, kind="stable")
        xs = xs[order]
        below = np.searchsorted(xs, thresholds, side="right")
        if w is None:
            out[:, 0, c] = below
            out[:, 1, c] = len(xs) - below
        else:
            cum = np.concatenate([[0.0], np.cumsum(w[of_c][order])])
            out[:, 0, c] = cum[below]
            out[:, 1, c] = cum[-1] - cum[below]
    return out


#: the weight sum an exact criterion counts below (its products stay exact integers), and
#: the fixed-point n log n's (counts below 2^W)
MAX_WHOLE_WEIGHT = 2**52
NLOGN_LIMIT = 2**NLOGN_W


def _whole(weights: np.ndarray, name: str) -> np.ndarray:
    """The row weights a criterion counts with: as given for a floating-point criterion
    (entropy); for an exact one, whole numbers, fractional weights times the least common
    denominator of their fractions (each read as the nearest fraction of denominator at most
    10^6: ``class_weight="balanced"``'s ``n / (k n_c)`` exactly)."""
    w = np.asarray(weights, dtype=np.float64)
    if not criterion(name).on_shares:
        return w
    if (w == np.round(w)).all():
        whole = [int(x) for x in w]
    else:
        fractions = [Fraction(float(x)).limit_denominator(10**6) for x in w]
        scale = 1
        for f in fractions:
            scale = scale * f.denominator // math.gcd(scale, f.denominator)
        whole = [int(f * scale) for f in fractions]
    limit = NLOGN_LIMIT if name == "entropy-fixed" else MAX_WHOLE_WEIGHT
    if sum(whole) >= limit:
        raise ConfigError(
            f"criterion {name!r} counts exactly, and these weights as whole numbers sum past "
            f"2^{limit.bit_length() - 1}; use criterion='entropy', or weights with small "
            "denominators"
        )
    return np.asarray(whole, dtype=np.float64)
