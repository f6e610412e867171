"""C4.5 (Quinlan 1993/1996) as Weka's J48 3.6 grows and prunes it: the plain learner of the
outsourcing and inference-protection experiments (Mancuhan & Clifton used J48 with
reduced-error pruning on 20% of the training set; Chang & Tracy cite C4.5, whose default
is error-based pruning with confidence 0.25; their footnote 2 needs fractional instances).

``C45Classifier(pruning="error-based", confidence=0.25)`` is J48 with its defaults; on the
same training rows and declared values (an ARFF header) it learns J48's tree node for node
(``tests/unit/test_j48_reference.py``; ``scripts/compare_j48.py`` on every dataset).

* **Split choice**: gain ratio among the valid candidates whose gain is at least the
  average gain of all valid candidates (less 1e-3; a valid candidate of no gain counts too;
  nominal attributes with values for 30% of the rows or more count only if all do). The
  first candidate wins; a later one only with a ratio larger by more than 1e-6.
* **Nominal attributes**: multiway splits (one branch per declared value, an empty leaf for
  a value no row at the node has) or, with ``nominal_splits="binary"`` (J48's ``-B``), the
  best "value vs. the rest" test. Valid: two branches with at least ``min_leaf`` weight.
* **Continuous attributes**: binary threshold splits ``a <= t``. Each side needs
  ``min_split`` weight (10% of the known weight per class, at least ``min_leaf``, at most
  25); values closer than 1e-5 are not split apart; the gain loses the MDL cost
  ``log2(number of valid thresholds) / node weight`` (Quinlan 1996). ``t`` is the largest
  value of *all* training rows at or below the midpoint of the two values split apart (the
  midpoint computed without overflow near the largest float; a threshold that rounding
  leaves outside the two values is refused, as it would separate nothing). Every value is
  finite: the readers refuse an infinity, and NaN is an unknown value.
* **Unknown values** (``"?"`` for nominal, NaN for continuous): gains are computed on the
  rows with a known value and scaled by their share, the split info counts them as one more
  branch; a row with an unknown value goes down every branch with a fractional weight
  proportional to the branch's known weight, both in training and in classification.
* **Stopping**: a node with less than ``2 * min_leaf`` weight (J48's ``-M 2``), or of one
  class, is a leaf.
* **Error-based pruning** (``pruning="error-based"``): subtrees that do not lower the
  training error are collapsed, then :func:`mpc.learners.error_based_pruning.prune` compares
  Quinlan's pessimistic estimates of subtree, leaf and largest branch (subtree raising;
  ``subtree_raising=False`` is J48's ``-S``). ``confidence`` is read as J48 reads ``-C``
  (single precision).
* **Reduced-error pruning** (``pruning="reduced-error"``, the default): a stratified
  ``prune_fraction`` of the training rows (seeded) is held out, the tree is grown on the
  rest, and bottom-up every subtree whose held-out error is not lower than that of a leaf is
  replaced by the leaf. ``pruning="none"`` keeps the grown tree as it is (J48's ``-U``
  still collapses it).

Weka's tolerances are kept (weights within 1e-6 are equal, entropy terms below 1e-6 weight
are 0) so that near-ties go the same way as in J48.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from mpc.errors import ConfigError
from mpc.learners.coded_table import CodedTable, class_codes
from mpc.learners.error_based_pruning import SMALL, Grown, collapse, max_class, prune
from mpc.learners.estimator import PlainTreeClassifier
from mpc.learners.evaluation import train_test_split
from mpc.learners.tree import Leaf, Node, Split, majority

if TYPE_CHECKING:
    from mpc.datasets import Table

__all__ = ["C45Classifier"]

_EPS = 1e-3  # J48's tolerance in "gain >= average gain"


class _Candidate(NamedTuple):
    """A split candidate at a node: the attribute, its gain (MDL-corrected for a threshold)
    and gain ratio, and the test (None: valid, but no test better than no gain)."""

    j: int
    gain: float
    ratio: float
    test: dict[str, Any] | None


def _log_func(x: np.ndarray | float) -> np.ndarray:
    """``x * log2(x)``, 0 below 1e-6 (the entropy term of Weka's split criteria, in
    weight times bits)."""
    x = np.asarray(x, dtype=np.float64)
    safe = np.where(x < 1e-6, 1.0, x)
    return np.where(x < 1e-6, 0.0, x * np.log2(safe))


def _at_least(a: np.ndarray, b: float) -> np.ndarray:
    """``a >= b`` within :data:`SMALL` (Weka's ``Utils.grOrEq``)."""
    return (b - a < SMALL) | (a >= b)


def _gains(
    old: np.ndarray | float, new: np.ndarray, known_w: np.ndarray | float, total: float
) -> np.ndarray:
    """C4.5's gain from the entropies (weight times bits) before and after a split of the
    rows with a known value: scaled by the known share, 0 when within 1e-6 of 0."""
    numerator = (1 - (total - known_w) / total) * (old - new)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(numerator) < SMALL, 0.0, numerator / known_w)


def _ratios(
    gain: np.ndarray | float, branch_w: np.ndarray, known_w: np.ndarray | float, total: float
) -> np.ndarray:
    """Gain ratios: the split info counts the rows of unknown value as one more branch;
    0 when it is within 1e-6 of 0. ``branch_w``'s last axis runs over the branches."""
    split_ent = np.where(
        known_w > SMALL,
        _log_func(total) - _log_func(branch_w).sum(axis=-1) - _log_func(total - known_w),
        0.0,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(split_ent) < SMALL, 0.0, gain / (split_ent / total))


class C45Classifier(PlainTreeClassifier):
    """C4.5 decision tree as Weka's J48 3.6 grows it; keyword-only parameters, ``fit``
    returns ``self``.

    ``C45Classifier(pruning="error-based", confidence=0.25)`` is J48 with its defaults
    (``-C 0.25 -M 2``); ``pruning="reduced-error"`` (the default) prunes on a held-out
    ``prune_fraction`` instead; ``pruning="none"`` keeps the grown tree."""

    _constraints: ClassVar[dict[str, str]] = {
        "min_leaf": "a number >= 1",
        "pruning": "'error-based', 'reduced-error' or 'none'",
        "confidence": "a number in (0, 0.5]",
        "subtree_raising": "True or False",
        "prune_fraction": "a number in (0, 1)",
        "nominal_splits": "'multiway' or 'binary'",
        "max_depth": "None or an int >= 0",
    }

    def __init__(
        self,
        *,
        min_leaf: float = 2.0,
        pruning: str = "reduced-error",
        confidence: float = 0.25,
        subtree_raising: bool = True,
        prune_fraction: float = 0.2,
        nominal_splits: str = "multiway",
        max_depth: int | None = None,
        seed: int = 0,
        class_weight: str | Mapping[Any, float] | None = None,
    ) -> None:
        self.min_leaf = min_leaf
        self.pruning = pruning
        self.confidence = confidence
        self.subtree_raising = subtree_raising
        self.prune_fraction = prune_fraction
        self.nominal_splits = nominal_splits
        self.max_depth = max_depth
        self.seed = seed
        self.class_weight = class_weight

    def _validate(self) -> None:
        number = (int, float)
        ok = {
            "min_leaf": isinstance(self.min_leaf, number)
            and not isinstance(self.min_leaf, bool)
            and self.min_leaf >= 1,
            "pruning": self.pruning in ("error-based", "reduced-error", "none"),
            "confidence": isinstance(self.confidence, number)
            and not isinstance(self.confidence, bool)
            and 0 < self.confidence <= 0.5,
            "subtree_raising": isinstance(self.subtree_raising, bool),
            "prune_fraction": isinstance(self.prune_fraction, number)
            and 0 < self.prune_fraction < 1,
            "nominal_splits": self.nominal_splits in ("multiway", "binary"),
            "max_depth": self.max_depth is None
            or (isinstance(self.max_depth, int) and self.max_depth >= 0),
        }
        for name, good in ok.items():
            if not good:
                raise ConfigError(
                    f"C45Classifier: {name} must be {self._constraints[name]}, "
                    f"got {getattr(self, name)!r}"
                )

    # ------------------------------------------------------------------ fit

    def _fit_table(
        self,
        table: Table | CodedTable,
        *,
        prune_rows: Sequence[int] | np.ndarray | None = None,
        weights: np.ndarray | None = None,
    ) -> C45Classifier:
        """Grow the tree and prune it: error-based on the training rows themselves, or
        reduced-error on held-out rows (the ``prune_rows`` given, indices into ``table``,
        so that several learners can share one prune set; else a stratified
        ``prune_fraction`` drawn with ``seed``). ``weights`` (one per row) are the rows'
        starting weights, as Weka's instance weights: every count is a sum of weights."""
        self._validate()
        if table.n_rows == 0:
            raise ConfigError("cannot learn a tree from an empty table")
        coded = table if isinstance(table, CodedTable) else CodedTable.from_table(table)
        self.classes_ = list(coded.classes)
        self.attributes_ = list(coded.attributes)
        self.kinds_ = list(coded.kinds)
        self._domains: list[list[str]] = list(coded.domains)
        self._data: list[np.ndarray] = list(coded.data)
        y = self._y = coded.y
        nominal_js = [j for j, k in enumerate(self.kinds_) if k == "nominal"]
        self._vmax = max((len(self._domains[j]) for j in nominal_js), default=0)
        # one column per attribute (continuous: all -1) for the batched nominal evaluation
        self._codes = np.full((table.n_rows, len(self.kinds_)), -1, dtype=np.int64)
        for j in nominal_js:
            self._codes[:, j] = self._data[j]
        # J48 leaves nominal attributes with values for 30% of the rows or more out of the
        # average gain, unless every attribute is such
        many = [
            k == "nominal" and not len(self._domains[j]) - 0.3 * table.n_rows < -SMALL
            for j, k in enumerate(self.kinds_)
        ]
        self._in_average = [not m or all(many) for m in many]
        # a threshold is moved to the largest value of the training rows at or below it
        self._values = {
            j: np.unique(col[~np.isnan(col)])
            for j, col in enumerate(self._data)
            if self.kinds_[j] == "continuous"
        }
        rows, held_out = self._split_rows(y, prune_rows)
        nominal = set(nominal_js)
        self._weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        start = np.ones(len(rows)) if self._weights is None else self._weights[rows]
        grown = self._build(rows, start, nominal, 0)
        if self.pruning == "error-based":
            collapse(grown)
            # J48 reads -C as a single-precision float
            confidence = float(np.float32(self.confidence))
            prune(grown, self, confidence, subtree_raising=self.subtree_raising)
        tree = self._to_node(grown, None)
        if len(held_out):
            tree = self._prune(tree, held_out)
        self.tree_ = tree
        del self._data, self._y, self._codes, self._values, self._weights
        return self

    def _split_rows(
        self, y: np.ndarray, prune_rows: Sequence[int] | np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(the rows the tree grows on, the held-out rows it is pruned on) of a table whose
        class codes are ``y``."""
        n = len(y)
        rows = np.arange(n)
        held_out = np.array([], dtype=np.int64)
        if self.pruning == "reduced-error" and prune_rows is not None:
            held_out = np.unique(np.asarray(prune_rows, dtype=np.int64))
            if len(held_out) and (held_out[0] < 0 or held_out[-1] >= n):
                raise ConfigError(
                    f"prune_rows must index the table's {n} rows, got {held_out[0]}..{held_out[-1]}"
                )
            if len(held_out) == n:  # nothing left to grow on: do not prune
                held_out = np.array([], dtype=np.int64)
            grow = np.ones(n, dtype=bool)
            grow[held_out] = False
            rows = np.flatnonzero(grow)
        elif self.pruning == "reduced-error" and n >= 10:
            rows, held_out = train_test_split(y, self.prune_fraction, seed=self.seed)
        return rows, held_out

    def _stops(self, counts: np.ndarray, total: float, depth: int) -> bool:
        """Whether a node with these class weights is a leaf before any split is tried:
        one class, less than twice ``min_leaf`` weight, or ``max_depth`` reached."""
        return bool(
            total - 2 * self.min_leaf < -SMALL
            or abs(total - counts.max(initial=0.0)) < SMALL
            or (self.max_depth is not None and depth >= self.max_depth)
        )

    def single_leaf_label(
        self,
        target: Sequence[str] | np.ndarray,
        *,
        prune_rows: Sequence[int] | np.ndarray | None = None,
    ) -> str | None:
        """The class :meth:`fit` predicts for every instance when the table's classes are
        ``target`` (row by row; ``prune_rows`` as for :meth:`fit`) and its tree is a single
        leaf whatever the attributes are: the rows it grows on have one class, or too little
        weight for any split (or ``max_depth`` is 0). None when the tree may depend on the
        attributes. So a party that knows only the classes knows the prediction of such a
        tree."""
        self._validate()
        classes, y = class_codes(np.asarray(target, dtype=object))
        if not len(y):
            raise ConfigError("cannot learn a tree from an empty table")
        rows, _ = self._split_rows(y, prune_rows)
        counts = np.bincount(y[rows], minlength=len(classes)).astype(np.float64)
        if not self._stops(counts, float(counts.sum()), 0):
            return None
        return majority({c: float(counts[i]) for i, c in enumerate(classes)})

    # the router of error-based pruning -------------------------------------------------

    def class_weights(self, rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The class weights of ``rows`` with weights ``w``."""
        return np.bincount(self._y[rows], weights=w, minlength=len(self.classes_))

    def _members(
        self, test: dict[str, Any], rows: np.ndarray
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """Which of ``rows`` go to each branch of ``test`` (rows of known value), and which
        have an unknown value."""
        data = self._data[test["j"]][rows]
        if test["kind"] == "threshold":
            missing = np.isnan(data)
            return [~missing & (data <= test["t"]), ~missing & (data > test["t"])], missing
        missing = data < 0
        if test["kind"] == "binary":
            return [data == test["v"], (data >= 0) & (data != test["v"])], missing
        return [data == v for v in range(len(self._domains[test["j"]]))], missing

    def distribute(
        self, test: dict[str, Any], rows: np.ndarray, w: np.ndarray
    ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """The class weights per branch of ``test`` among ``rows`` (a row of unknown value
        counted in every branch in proportion to the branch's known weight; evenly when no
        row has a known value), and the rows and weights that go down each branch."""
        masks, missing = self._members(test, rows)
        y = self._y[rows]
        n_classes = len(self.classes_)
        dist = np.stack([np.bincount(y[m], weights=w[m], minlength=n_classes) for m in masks])
        per_bag = dist.sum(axis=1)
        known = float(per_bag.sum())
        shares = np.full(len(masks), 1 / len(masks)) if abs(known) < SMALL else per_bag / known
        if missing.any():
            unknown = np.bincount(y[missing], weights=w[missing], minlength=n_classes)
            dist = dist + shares[:, None] * unknown[None, :]
        parts = []
        for k, m in enumerate(masks):
            take = m | missing if shares[k] > SMALL else m
            parts.append((rows[take], np.where(m, w, w * shares[k])[take]))
        return dist, parts

    # growing -----------------------------------------------------------------------

    def _build(self, rows: np.ndarray, w: np.ndarray, nominal: set[int], depth: int) -> Grown:
        counts = self.class_weights(rows, w)
        node = Grown(rows, w, counts[None, :])
        total = float(counts.sum())
        if self._stops(counts, total, depth):
            return node
        test = self._select(rows, w, nominal, total)
        if test is None:
            return node
        node.test = test
        node.dist, parts = self.distribute(test, rows, w)
        child_nominal = nominal - {test["j"]} if test["kind"] == "multiway" else nominal
        node.children = [self._build(r, cw, child_nominal, depth + 1) for r, cw in parts]
        return node

    def _select(
        self, rows: np.ndarray, w: np.ndarray, nominal: set[int], total: float
    ) -> dict[str, Any] | None:
        """J48's choice: among the valid candidates, those whose gain is at least the
        average gain (less 1e-3) compete by gain ratio; a later attribute wins only with a
        ratio larger by more than 1e-6. None when no ratio is above 1e-6."""
        candidates: list[_Candidate] = []
        if nominal:
            evaluate = (
                self._multiway_candidates
                if self.nominal_splits == "multiway"
                else self._binary_candidates
            )
            candidates.extend(evaluate(sorted(nominal), rows, w, total))
        for j in range(len(self.attributes_)):
            if self.kinds_[j] == "continuous":
                c = self._threshold_candidate(j, rows, w, total)
                if c is not None:
                    candidates.append(c)
        candidates.sort(key=lambda c: c.j)
        counted = [c.gain for c in candidates if self._in_average[c.j]]
        if not counted:
            return None
        average = sum(counted) / len(counted)
        best: _Candidate | None = None
        best_ratio = 0.0
        for c in candidates:
            if c.gain >= average - _EPS and c.ratio - best_ratio > SMALL:
                best, best_ratio = c, c.ratio
        if best is None or best.test is None:
            return None
        return dict(best.test)

    def _joint_all(self, js: list[int], rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The weight of every (attribute of ``js``, value, class) among ``rows`` with a known
        value, from one ``bincount``: shape (len(js), largest domain, classes)."""
        n_classes, vmax = len(self.classes_), max(self._vmax, 1)
        codes = self._codes[np.ix_(rows, np.asarray(js, dtype=np.int64))]  # (n, A)
        known = codes >= 0
        slot = (np.arange(len(js)) * vmax)[None, :] + codes
        index = slot * n_classes + self._y[rows][:, None]
        return np.bincount(
            index[known],
            weights=np.broadcast_to(w[:, None], codes.shape)[known],
            minlength=len(js) * vmax * n_classes,
        ).reshape(len(js), vmax, n_classes)

    def _multiway_candidates(
        self, js: list[int], rows: np.ndarray, w: np.ndarray, total: float
    ) -> list[_Candidate]:
        """Multiway candidates of the nominal attributes ``js`` at once (one ``bincount``
        gives every (attribute, value, class) weight). Valid: two branches with at least
        ``min_leaf`` weight; a valid candidate of no gain still counts in the average."""
        joint = self._joint_all(js, rows, w)
        branch_w = joint.sum(axis=2)  # (A, V)
        known_w = branch_w.sum(axis=1)  # (A,)
        old = _log_func(known_w) - _log_func(joint.sum(axis=1)).sum(axis=1)
        new = (_log_func(branch_w) - _log_func(joint).sum(axis=2)).sum(axis=1)
        gain = _gains(old, new, known_w, total)
        ratio = _ratios(gain, branch_w, known_w, total)
        valid = np.count_nonzero(_at_least(branch_w, self.min_leaf), axis=1) >= 2
        return [
            _Candidate(js[a], float(gain[a]), float(ratio[a]), {"kind": "multiway", "j": js[a]})
            for a in np.flatnonzero(valid).tolist()
        ]

    def _binary_candidates(
        self, js: list[int], rows: np.ndarray, w: np.ndarray, total: float
    ) -> list[_Candidate]:
        """Binary candidates ("value == v" against the attribute's other known values) of
        the nominal attributes ``js`` at once. A value is valid when both sides have at
        least ``min_leaf`` weight; an attribute's test is its first valid value, replaced
        by a later one only with a gain ratio larger by more than 1e-6 (J48's ``-B``)."""
        joint = self._joint_all(js, rows, w)  # (A, V, C): the "== v" side of every pair
        rest = joint.sum(axis=1, keepdims=True) - joint  # the "!= v" side
        take_w, rest_w = joint.sum(axis=2), rest.sum(axis=2)  # (A, V)
        known_w = take_w + rest_w
        old = _log_func(known_w) - _log_func(joint + rest).sum(axis=2)
        new = (
            _log_func(take_w)
            - _log_func(joint).sum(axis=2)
            + _log_func(rest_w)
            - _log_func(rest).sum(axis=2)
        )
        gain = _gains(old, new, known_w, total)
        ratio = _ratios(gain, np.stack([take_w, rest_w], axis=2), known_w, total)
        valid = _at_least(take_w, self.min_leaf) & _at_least(rest_w, self.min_leaf)
        out = []
        for a, j in enumerate(js):
            chosen: _Candidate | None = None
            for v in np.flatnonzero(valid[a]).tolist():
                if chosen is None:
                    chosen = _Candidate(j, 0.0, 0.0, None)
                if v == 0 or ratio[a, v] - chosen.ratio > SMALL:
                    test = {"kind": "binary", "j": j, "v": v}
                    chosen = _Candidate(j, float(gain[a, v]), float(ratio[a, v]), test)
            if chosen is not None:
                out.append(chosen)
        return out

    def _threshold_candidate(
        self, j: int, rows: np.ndarray, w: np.ndarray, total: float
    ) -> _Candidate | None:
        """The best threshold of continuous attribute ``j`` (J48's ``C45Split``): each side
        needs ``min_split`` weight (10% of the known weight per class, at least
        ``min_leaf``, at most 25); values closer than 1e-5 are not split; the best gain
        (the first one, unless a later one is larger by more than 1e-6) less the MDL cost
        ``log2(number of valid thresholds) / weight`` must stay above 0."""
        x = self._data[j][rows]
        known = ~np.isnan(x)
        n_known = int(np.count_nonzero(known))
        if n_known < 2:
            return None
        xk, yk, wk = x[known], self._y[rows][known], w[known]
        order = np.argsort(xk, kind="stable")
        xk, yk, wk = xk[order], yk[order], wk[order]
        n_classes = len(self.classes_)
        known_w = float(wk.sum())
        min_split = 0.1 * known_w / n_classes
        if min_split - self.min_leaf < SMALL:
            min_split = float(self.min_leaf)
        elif min_split - 25 > SMALL:
            min_split = 25.0
        if n_known - 2 * min_split < -SMALL:
            return None
        onehot = np.zeros((len(xk), n_classes))
        onehot[np.arange(len(xk)), yk] = wk
        left = np.cumsum(onehot, axis=0)[:-1]  # split after position i
        class_w = left[-1] + onehot[-1]
        right = class_w[None, :] - left
        left_w, right_w = left.sum(axis=1), right.sum(axis=1)
        valid = (
            (xk[:-1] + 1e-5 < xk[1:]) & _at_least(left_w, min_split) & _at_least(right_w, min_split)
        )
        at = np.flatnonzero(valid)
        if not len(at):
            return None
        old = float(_log_func(known_w) - _log_func(class_w).sum())
        new = (
            _log_func(left_w[at])
            - _log_func(left[at]).sum(axis=1)
            + _log_func(right_w[at])
            - _log_func(right[at]).sum(axis=1)
        )
        g = _gains(old, new, known_w, total)
        # the first gain larger by more than 1e-6 than the best before it wins; only the
        # strict running maxima can
        before = np.maximum.accumulate(np.concatenate([[-np.inf], g[:-1]]))
        best, split = 0.0, -1
        for k in np.flatnonzero(g > before).tolist():
            if g[k] - best > SMALL:
                best, split = float(g[k]), int(at[k])
        gain = best - math.log2(len(at)) / total
        if gain < SMALL or split < 0:
            return None
        lo, hi = float(xk[split]), float(xk[split + 1])
        threshold = self._threshold(j, lo, hi)
        if threshold is None:
            return None
        branch_w = np.array([left_w[split], right_w[split]])
        ratio = float(_ratios(gain, branch_w, known_w, total))
        return _Candidate(j, gain, ratio, {"kind": "threshold", "j": j, "t": threshold})

    def _threshold(self, j: int, lo: float, hi: float) -> float | None:
        """The threshold of a split of attribute ``j`` between its neighbouring values
        ``lo < hi``: C4.5 moves the midpoint to the largest training value at or below it.
        The midpoint is computed without overflow (``lo + hi`` passes the largest float when
        both are near it); a threshold that does not separate ``lo`` from ``hi`` (rounding at
        the ends of the floats) refuses the split, which would send every row down one
        branch. None when refused."""
        total = lo + hi  # a Python float: inf past the largest float, with no warning
        mid = total / 2 if math.isfinite(total) else lo / 2 + hi / 2
        if mid >= hi:
            mid = lo
        values = self._values[j]
        at = int(np.searchsorted(values, mid + SMALL, side="left")) - 1
        threshold = float(values[max(at, 0)])
        return threshold if lo <= threshold < hi else None

    def _keys(self, test: dict[str, Any]) -> list[str]:
        if test["kind"] == "threshold":
            return ["<=", ">"]
        if test["kind"] == "binary":
            return ["==", "!="]
        return list(self._domains[test["j"]])

    def _to_node(self, grown: Grown, parent: str | None) -> Node:
        """The :class:`~mpc.learners.tree.Node` of a grown (and maybe pruned) subtree. A node's
        class is J48's: the first class, unless a later one has more weight by more than 1e-6
        (weights of fractional rows can differ in the last bits). An empty leaf predicts its
        parent's class."""
        counts = grown.counts
        as_dict = {c: float(counts[i]) for i, c in enumerate(self.classes_)}
        total = float(counts.sum())
        if grown.test is None:
            if abs(total) < SMALL and parent is not None:
                return Leaf(as_dict, parent)
            return Leaf(as_dict, self.classes_[max_class(counts)])
        label = self.classes_[max_class(counts)]
        per_bag = grown.dist.sum(axis=1)
        shares = per_bag / total if abs(total) >= SMALL else np.full(len(per_bag), 1 / len(per_bag))
        keys = self._keys(grown.test)
        children = {
            key: self._to_node(child, label)
            for key, child in zip(keys, grown.children, strict=True)
        }
        weights = {key: float(shares[k]) for k, key in enumerate(keys)}
        attribute = self.attributes_[grown.test["j"]]
        if grown.test["kind"] == "threshold":
            return Split(
                attribute, as_dict, children, kind="threshold", threshold=grown.test["t"],
                weights=weights,
            )  # fmt: skip
        if grown.test["kind"] == "binary":
            value = self._domains[grown.test["j"]][grown.test["v"]]
            return Split(attribute, as_dict, children, kind="binary", value=value, weights=weights)
        return Split(attribute, as_dict, children, weights=weights)

    # reduced-error pruning ------------------------------------------------------------

    def _route(
        self, node: Node, rows: np.ndarray, w: np.ndarray, seen: dict[int, np.ndarray]
    ) -> None:
        """Accumulate, per node, the class weights of the pruning rows that reach it."""
        acc = seen.setdefault(id(node), np.zeros(len(self.classes_)))
        acc += self.class_weights(rows, w)
        if isinstance(node, Leaf) or len(rows) == 0:
            return
        j = self.attributes_.index(node.attribute)
        data = self._data[j][rows]
        keys = list(node.children)
        if node.kind == "threshold":
            missing = np.isnan(data)
            member = {
                "<=": ~missing & (data <= float(node.threshold or 0.0)),
                ">": ~missing & (data > float(node.threshold or 0.0)),
            }
        else:
            missing = data < 0
            if node.kind == "binary":
                v = self._domains[j].index(str(node.value))
                member = {"==": data == v, "!=": (data >= 0) & (data != v)}
            else:
                member = {key: data == self._domains[j].index(key) for key in keys}
        for key in keys:
            take = member[key] | missing
            cw = np.where(member[key], w, w * node.weights.get(key, 0.0))[take]
            self._route(node.children[key], rows[take], cw, seen)

    def _prune(self, tree: Node, prune_rows: np.ndarray) -> Node:
        seen: dict[int, np.ndarray] = {}
        start = np.ones(len(prune_rows)) if self._weights is None else self._weights[prune_rows]
        self._route(tree, prune_rows, start, seen)
        index = {c: i for i, c in enumerate(self.classes_)}

        def leaf_class(node: Node) -> str:
            """The class of ``node`` as a leaf: J48's ``maxClass`` of its training weights
            (an empty leaf's is its parent's)."""
            counts = np.array([node.counts.get(c, 0.0) for c in self.classes_])
            return self.classes_[max_class(counts)] if counts.sum() > SMALL else node.label

        def errors_as_leaf(node: Node) -> float:
            """The held-out errors of ``node`` as a leaf of its training class."""
            acc = seen.get(id(node))
            return 0.0 if acc is None else float(acc.sum() - acc[index[leaf_class(node)]])

        def visit(node: Node) -> tuple[Node, float]:
            if isinstance(node, Leaf):
                return node, errors_as_leaf(node)
            subtree_errors = 0.0
            for key, child in list(node.children.items()):
                new, err = visit(child)
                node.children[key] = new
                subtree_errors += err
            leaf_errors = errors_as_leaf(node)
            if leaf_errors - subtree_errors < SMALL or leaf_errors <= subtree_errors:
                return Leaf(dict(node.counts), leaf_class(node)), leaf_errors
            return node, subtree_errors

        return visit(tree)[0]
