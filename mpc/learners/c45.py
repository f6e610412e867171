"""C4.5-style learner (Quinlan 1993/1996), the plain learner of the outsourcing and
inference-protection experiments (Mancuhan & Clifton used Weka J48 with reduced-error pruning
on 20% of the training set; Chang & Tracy's footnote 2 needs fractional instances).

* **Split choice**: gain ratio among the candidates whose gain is at least the average gain
  (Quinlan's rule against tiny split-info denominators).
* **Nominal attributes**: multiway splits (one child per value seen in training) or, with
  ``nominal_splits="binary"``, the best "value vs. the rest" test.
* **Continuous attributes**: binary threshold splits ``a <= t``; ``t`` is the largest training
  value on the left; the gain carries the MDL correction ``log2(#candidates) / N``
  (Quinlan 1996, as in J48).
* **Unknown values** (``"?"`` for nominal, NaN for continuous): gains are computed on the
  rows with a known value and scaled by their share; a row with an unknown value goes down
  every branch with a fractional weight proportional to the branch's known weight, both in
  training and in classification.
* **Stopping**: a split needs two branches with at least ``min_leaf`` weight (J48's -M 2).
* **Reduced-error pruning** (``pruning="reduced-error"``, default): a stratified
  ``prune_fraction`` of the training rows (seeded) is held out, the tree is grown on the rest,
  and bottom-up every subtree whose held-out error is not lower than that of a leaf is
  replaced by the leaf.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from mpc.errors import ConfigError
from mpc.learners.estimator import PlainTreeClassifier
from mpc.learners.evaluation import train_test_split
from mpc.learners.tree import MISSING, Leaf, Node, Split, majority

if TYPE_CHECKING:
    from mpc.datasets import Table

__all__ = ["C45Classifier", "CodedTable"]

_EPS = 1e-3  # J48's tolerance in "gain >= average gain"
_TIE = 1e-9  # gain ratios closer than this are equal


def _entropy_rows(m: np.ndarray) -> np.ndarray:
    """Entropy (bits) of each row of a weight matrix."""
    total = m.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(total > 0, m / total, 0.0)
        logs = np.where(p > 0, np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return -(p * logs).sum(axis=-1)


def _texts(values: np.ndarray) -> list[str]:
    """``str`` of every value (the values themselves when they are all ``str`` already)."""
    text = values.tolist()
    if set(map(type, text)) <= {str}:
        return text
    return [str(v) for v in text]


def _split_info(weights: np.ndarray) -> float:
    w = weights[weights > 0]
    total = w.sum()
    if total <= 0:
        return 0.0
    p = w / total
    return float(-(p * np.log2(p)).sum())


class CodedTable:
    """A table as the learner reads it: every nominal column as int codes into its domain
    (the distinct values of the column but :data:`~mpc.learners.tree.MISSING`, sorted; ``-1`` for
    MISSING), every continuous column as float64 (NaN unknown), the class as an index into
    ``classes`` (its distinct values, sorted).

    :meth:`from_table` makes it from a :class:`~mpc.datasets.Table`; :meth:`from_codes` from
    columns that are codes already (e.g. a table received as codes), without making their
    values str by str. Both give the same table for the same rows, so the same tree."""

    __slots__ = ("attributes", "classes", "data", "domains", "kinds", "y")

    def __init__(
        self,
        attributes: Sequence[str],
        kinds: Sequence[str],
        domains: Sequence[list[str]],
        data: Sequence[np.ndarray],
        classes: list[str],
        y: np.ndarray,
    ) -> None:
        if not len(attributes) == len(kinds) == len(domains) == len(data):
            raise ConfigError("CodedTable: one kind, domain and column per attribute")
        if any(len(col) != len(y) for col in data):
            raise ConfigError("CodedTable: every column needs one value per row")
        self.attributes, self.kinds = list(attributes), list(kinds)
        self.domains, self.data = list(domains), list(data)
        self.classes, self.y = classes, y

    @property
    def n_rows(self) -> int:
        return len(self.y)

    @classmethod
    def from_table(cls, table: Table) -> CodedTable:
        classes, y = _class_codes(table.target)
        domains: list[list[str]] = []
        data: list[np.ndarray] = []
        for kind, col in zip(table.kinds, table.columns, strict=True):
            if kind == "continuous":
                domains.append([])
                data.append(np.asarray(col, dtype=np.float64))
            else:
                text = _texts(col)
                domain = sorted(set(text) - {MISSING})  # code-point order, as np.unique
                index = {v: i for i, v in enumerate(domain)}
                index[MISSING] = -1
                codes = np.fromiter(map(index.__getitem__, text), dtype=np.int64, count=len(text))
                domains.append(domain)
                data.append(codes)
        return cls(table.attributes, table.kinds, domains, data, classes, y)

    @classmethod
    def from_codes(
        cls,
        attributes: Sequence[str],
        kinds: Sequence[str],
        columns: Sequence[tuple[Sequence[str], np.ndarray] | np.ndarray],
        target: tuple[Sequence[str], np.ndarray],
    ) -> CodedTable:
        """Column ``j`` is ``(values, codes)`` for a nominal attribute (row ``i`` has the value
        ``values[codes[i]]``; ``codes`` within range) or a float64 array for a continuous
        one; ``target`` is ``(values, codes)`` too."""
        domains: list[Sequence[str]] = []
        codes: list[np.ndarray] = []
        continuous: list[np.ndarray] = []
        for kind, col in zip(kinds, columns, strict=True):
            if kind == "continuous":
                assert isinstance(col, np.ndarray)
                continuous.append(col)
            else:
                assert isinstance(col, tuple)
                domains.append(col[0])
                codes.append(np.asarray(col[1], dtype=np.int64))
        matrix = np.stack([*codes, np.asarray(target[1], dtype=np.int64)], axis=1)
        return cls.from_code_matrix(attributes, kinds, [*domains, target[0]], matrix, continuous)

    @classmethod
    def from_code_matrix(
        cls,
        attributes: Sequence[str],
        kinds: Sequence[str],
        domains: Sequence[Sequence[str]],
        codes: np.ndarray,
        continuous: Sequence[np.ndarray],
    ) -> CodedTable:
        """:meth:`from_codes` with the codes of the nominal attributes, then of the class, as
        the columns of one int matrix (``domains`` one per column; a table's columns as
        they arrive on the wire), the continuous attributes in ``continuous``, in order."""
        n_nominal = codes.shape[1] - 1
        *recoded, (classes, y) = _recode_all(domains, codes, n_nominal)
        out_domains: list[list[str]] = []
        data: list[np.ndarray] = []
        coded, floats = iter(recoded), iter(continuous)
        for kind in kinds:
            if kind == "continuous":
                out_domains.append([])
                data.append(np.asarray(next(floats), dtype=np.float64))
            else:
                domain, column = next(coded)
                out_domains.append(domain)
                data.append(column)
        return cls(attributes, kinds, out_domains, data, classes, y)


def _class_codes(target: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The classes (the distinct values of ``target`` as str, sorted) and each row's index
    among them."""
    text = _texts(target)
    classes = sorted(set(text))
    index = {c: i for i, c in enumerate(classes)}
    return classes, np.fromiter(map(index.__getitem__, text), dtype=np.int64, count=len(text))


def _recode(values: Sequence[str], codes: np.ndarray, *, missing: bool) -> tuple[list, np.ndarray]:
    """``(domain, codes)`` as :meth:`CodedTable.from_table` makes them for the column whose
    row ``i`` is ``values[codes[i]]``: the domain of the values that occur (but MISSING, if
    ``missing``), sorted, and each row's index in it (MISSING: -1)."""
    occur: list[int] = (
        np.flatnonzero(np.bincount(codes, minlength=len(values))).tolist() if len(codes) else []
    )
    domain = sorted({str(values[k]) for k in occur} - ({MISSING} if missing else set()))
    index = {v: i for i, v in enumerate(domain)}
    lookup = np.fromiter((index.get(str(v), -1) for v in values), dtype=np.int64, count=len(values))
    return domain, lookup[codes] if len(codes) else np.zeros(0, dtype=np.int64)


class _RecodePlan(NamedTuple):
    """What :func:`_recode_all` needs of some domains, whatever the rows: their values one
    after the other, where each domain starts and ends among them, the domain of each, and
    which are MISSING in a column recoded with ``missing=True``."""

    values: np.ndarray  # object
    starts: np.ndarray
    lasts: np.ndarray
    column_of: np.ndarray
    missing: np.ndarray  # bool


@lru_cache(maxsize=64)
def _recode_plan(domains: tuple[tuple[str, ...], ...], n_missing: int) -> _RecodePlan | None:
    """The plan of ``domains`` if every one is non-empty, str and strictly increasing (as a
    table's columns arrive on the wire), else None. Cached: a client recodes the leaves of
    one table, all with that table's domains."""
    values = [v for domain in domains for v in domain]
    sizes = [len(domain) for domain in domains]
    if not all(sizes) or not set(map(type, values)) <= {str}:
        return None
    starts = [0, *accumulate(sizes[:-1])]
    # strictly increasing within each domain: only a domain's first value may be not greater
    # than the one before it
    firsts = set(starts)
    increasing = enumerate(map(str.__lt__, values, values[1:]))
    if not all(i + 1 in firsts for i, lt in increasing if not lt):
        return None
    n_attribute_values = starts[n_missing] if n_missing < len(domains) else len(values)
    return _RecodePlan(
        values=np.array(values, dtype=object),
        starts=np.asarray(starts, dtype=np.int64),
        lasts=np.asarray(starts, dtype=np.int64) + np.asarray(sizes, dtype=np.int64) - 1,
        column_of=np.repeat(np.arange(len(domains)), sizes),
        missing=np.array([i < n_attribute_values and v == MISSING for i, v in enumerate(values)]),
    )


def _recode_all(
    domains: Sequence[Sequence[str]], codes: np.ndarray, n_missing: int
) -> list[tuple[list[str], np.ndarray]]:
    """:func:`_recode` of every column of ``codes`` (into ``domains``), the first
    ``n_missing`` with ``missing=True``.

    When every domain is str in strictly increasing order (:func:`_recode_plan`), all
    columns are recoded together with a few numpy operations: a value's new code is the
    number of values before it in its domain that occur (and are not MISSING). Otherwise
    column by column."""
    plan = _recode_plan(tuple(map(tuple, domains)), n_missing) if len(codes) else None
    if plan is None:
        return [
            _recode(domain, codes[:, j], missing=j < n_missing) for j, domain in enumerate(domains)
        ]
    flat = codes + plan.starts
    keep = np.zeros(len(plan.values), dtype=bool)
    keep[flat.ravel()] = True
    keep &= ~plan.missing
    kept_through = np.cumsum(keep)  # kept values up to each value, over all columns
    before = kept_through - keep
    lookup = np.where(keep, before - before[plan.starts][plan.column_of], -1)
    recoded = np.ascontiguousarray(lookup[flat].T)
    kept = plan.values[keep].tolist()
    ends = kept_through[plan.lasts].tolist()
    return [
        (kept[a:b], recoded[j]) for j, (a, b) in enumerate(zip([0, *ends[:-1]], ends, strict=True))
    ]


class C45Classifier(PlainTreeClassifier):
    """C4.5-style decision tree; keyword-only parameters, ``fit`` returns ``self``."""

    _constraints: ClassVar[dict[str, str]] = {
        "min_leaf": "a number >= 1",
        "pruning": "'reduced-error' or 'none'",
        "prune_fraction": "a number in (0, 1)",
        "nominal_splits": "'multiway' or 'binary'",
        "max_depth": "None or an int >= 0",
    }

    def __init__(
        self,
        *,
        min_leaf: float = 2.0,
        pruning: str = "reduced-error",
        prune_fraction: float = 0.2,
        nominal_splits: str = "multiway",
        max_depth: int | None = None,
        seed: int = 0,
    ) -> None:
        self.min_leaf = min_leaf
        self.pruning = pruning
        self.prune_fraction = prune_fraction
        self.nominal_splits = nominal_splits
        self.max_depth = max_depth
        self.seed = seed

    def _validate(self) -> None:
        ok = {
            "min_leaf": isinstance(self.min_leaf, int | float) and self.min_leaf >= 1,
            "pruning": self.pruning in ("reduced-error", "none"),
            "prune_fraction": isinstance(self.prune_fraction, int | float)
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
    ) -> C45Classifier:
        """Grow the tree and, with reduced-error pruning, prune it on held-out rows: the
        ``prune_rows`` given (indices into ``table``; several learners can then share one
        prune set), else a stratified ``prune_fraction`` drawn with ``seed``."""
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
        # one column per attribute (continuous: all -1) for the batched multiway evaluation
        self._codes = np.full((table.n_rows, len(self.kinds_)), -1, dtype=np.int64)
        for j in nominal_js:
            self._codes[:, j] = self._data[j]
        rows, held_out = self._split_rows(y, prune_rows)
        nominal = {j for j, k in enumerate(self.kinds_) if k == "nominal"}
        tree = self._build(rows, np.ones(len(rows)), nominal, 0, None)
        if len(held_out):
            tree = self._prune(tree, held_out)
        self.tree_ = tree
        del self._data, self._y, self._codes
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
        """Whether a node with these class weights is a leaf before any split is tried."""
        return bool(
            np.count_nonzero(counts) <= 1
            or total < 2 * self.min_leaf
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
        classes, y = _class_codes(np.asarray(target, dtype=object))
        if not len(y):
            raise ConfigError("cannot learn a tree from an empty table")
        rows, _ = self._split_rows(y, prune_rows)
        counts = np.bincount(y[rows], minlength=len(classes)).astype(np.float64)
        if not self._stops(counts, float(counts.sum()), 0):
            return None
        return majority({c: float(counts[i]) for i, c in enumerate(classes)})

    def _counts(self, rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        return np.bincount(self._y[rows], weights=w, minlength=len(self.classes_))

    def _as_dict(self, counts: np.ndarray) -> dict[str, float]:
        return {c: float(counts[i]) for i, c in enumerate(self.classes_)}

    def _build(
        self, rows: np.ndarray, w: np.ndarray, nominal: set[int], depth: int, parent: str | None
    ) -> Node:
        counts = self._counts(rows, w)
        as_dict = self._as_dict(counts)
        total = counts.sum()
        if total <= 0:
            assert parent is not None
            return Leaf(as_dict, parent)
        label = majority(as_dict)
        if self._stops(counts, total, depth):
            return Leaf(as_dict, label)
        candidates = []
        if nominal:
            evaluate = (
                self._eval_multiway_all
                if self.nominal_splits == "multiway"
                else self._eval_binary_all
            )
            candidates.extend(evaluate(sorted(nominal), rows, w, total))
        for j in range(len(self.attributes_)):
            if self.kinds_[j] == "continuous":
                c = self._eval_threshold(j, rows, w, total)
                if c is not None:
                    candidates.append(c)
        candidates.sort(key=lambda c: c["j"])
        if not candidates:
            return Leaf(as_dict, label)
        average = sum(c["gain"] for c in candidates) / len(candidates)
        eligible = [c for c in candidates if c["gain"] >= average - _EPS and c["ratio"] > 0]
        if not eligible:
            return Leaf(as_dict, label)
        # the best gain ratio; ratios within _TIE of it are ties, won by the earlier attribute
        # (so rounding in the last bits never decides between equally good splits)
        top = max(c["ratio"] for c in eligible)
        best = min((c for c in eligible if c["ratio"] >= top - _TIE), key=lambda c: c["j"])
        return self._grow(best, rows, w, nominal, depth, label, as_dict)

    # candidate evaluation ------------------------------------------------------------

    def _finish(
        self, j: int, joint: np.ndarray, total: float, n_missing_w: float, extra: dict[str, Any]
    ) -> dict[str, Any] | None:
        branch_w = joint.sum(axis=1)
        if np.count_nonzero(branch_w >= self.min_leaf) < 2:
            return None
        known_w = branch_w.sum()
        if known_w <= 0:
            return None
        prior = _entropy_rows(joint.sum(axis=0))
        cond = float((branch_w / known_w) @ _entropy_rows(joint))
        gain = (known_w / total) * (float(prior) - cond) - extra.pop("penalty", 0.0)
        if gain <= 0:
            return None
        split_info = _split_info(np.append(branch_w, n_missing_w))
        if split_info <= 0:
            return None
        return {"j": j, "gain": gain, "ratio": gain / split_info, "branch_w": branch_w, **extra}

    def _eval_multiway_all(
        self, js: list[int], rows: np.ndarray, w: np.ndarray, total: float
    ) -> list[dict[str, Any]]:
        """Multiway candidates of the nominal attributes ``js`` at once: one ``bincount``
        gives every (attribute, value, class) weight; gains and split infos are computed for
        all attributes together, with :meth:`_finish`'s rules."""
        joint = self._joint_all(js, rows, w)
        branch_w = joint.sum(axis=2)  # (A, V)
        known_w = branch_w.sum(axis=1)  # (A,)
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = np.where(known_w[:, None] > 0, branch_w / known_w[:, None], 0.0)
            cond = (shares * _entropy_rows(joint)).sum(axis=1)
            gain = (known_w / total) * (_entropy_rows(joint.sum(axis=1)) - cond)
            parts = np.concatenate([branch_w, (total - known_w)[:, None]], axis=1)
            p = np.where(parts > 0, parts / parts.sum(axis=1, keepdims=True), 1.0)
            split_info = -(np.where(parts > 0, p * np.log2(p), 0.0)).sum(axis=1)
        ok = (
            (np.count_nonzero(branch_w >= self.min_leaf, axis=1) >= 2)
            & (known_w > 0)
            & (gain > 0)
            & (split_info > 0)
        )
        out = []
        for a in np.flatnonzero(ok):
            j = js[a]
            out.append(
                {
                    "j": j,
                    "gain": float(gain[a]),
                    "ratio": float(gain[a] / split_info[a]),
                    "branch_w": branch_w[a, : len(self._domains[j])],
                    "kind": "multiway",
                }
            )
        return out

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

    def _eval_binary_all(
        self, js: list[int], rows: np.ndarray, w: np.ndarray, total: float
    ) -> list[dict[str, Any]]:
        """Binary candidates ("value == v" against the attribute's other known values) of the
        nominal attributes ``js`` at once, with :meth:`_finish`'s rules for every (attribute,
        value) pair; an attribute's candidate is its value of the best gain ratio (ties: the
        first value)."""
        joint = self._joint_all(js, rows, w)  # (A, V, C): the "== v" side of every pair
        rest = joint.sum(axis=1, keepdims=True) - joint  # the "!= v" side
        take_w, rest_w = joint.sum(axis=2), rest.sum(axis=2)  # (A, V)
        known_w = take_w + rest_w
        missing_w = np.maximum(total - known_w, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            take_h, rest_h = _entropy_rows(joint), _entropy_rows(rest)
            cond = (take_w / known_w) * take_h + (rest_w / known_w) * rest_h
            gain = (known_w / total) * (_entropy_rows(joint + rest) - cond)
            parts = np.stack([take_w, rest_w, missing_w], axis=2)
            p = np.where(parts > 0, parts / parts.sum(axis=2, keepdims=True), 1.0)
            split_info = -(np.where(parts > 0, p * np.log2(p), 0.0)).sum(axis=2)
            ratio = np.where(
                (take_w >= self.min_leaf)
                & (rest_w >= self.min_leaf)
                & (known_w > 0)
                & (gain > 0)
                & (split_info > 0),
                gain / split_info,
                -np.inf,
            )
        out = []
        for a, v in enumerate(np.argmax(ratio, axis=1).tolist()):
            if ratio[a, v] == -np.inf:
                continue
            out.append(
                {
                    "j": js[a],
                    "gain": float(gain[a, v]),
                    "ratio": float(ratio[a, v]),
                    "branch_w": np.array([take_w[a, v], rest_w[a, v]]),
                    "kind": "binary",
                    "v": v,
                }
            )
        return out

    def _eval_threshold(
        self, j: int, rows: np.ndarray, w: np.ndarray, total: float
    ) -> dict[str, Any] | None:
        x = self._data[j][rows]
        known = ~np.isnan(x)
        if not known.any():
            return None
        xk, yk, wk = x[known], self._y[rows][known], w[known]
        order = np.argsort(xk, kind="stable")
        xk, yk, wk = xk[order], yk[order], wk[order]
        n_classes = len(self.classes_)
        onehot = np.zeros((len(xk), n_classes))
        onehot[np.arange(len(xk)), yk] = wk
        left = np.cumsum(onehot, axis=0)[:-1]  # split after position i
        known_w = wk.sum()
        right = left[-1:] + onehot[-1] - left if len(left) else left
        distinct = xk[:-1] < xk[1:]
        left_w = left.sum(axis=1)
        right_w = known_w - left_w
        # J48's minimum branch weight: 10% of the average class weight, clamped to [M, 25]
        min_split = min(max(0.1 * known_w / n_classes, self.min_leaf), 25.0)
        valid = distinct & (left_w >= min_split) & (right_w >= min_split)
        if not valid.any():
            return None
        cond = (left_w * _entropy_rows(left) + right_w * _entropy_rows(right)) / known_w
        cond = np.where(valid, cond, np.inf)
        i = int(np.argmin(cond))
        penalty = math.log2(int(distinct.sum())) / total if distinct.sum() > 1 else 0.0
        joint = np.vstack([left[i], right[i]])
        return self._finish(
            j,
            joint,
            total,
            total - known_w,
            {"kind": "threshold", "t": float(xk[i]), "penalty": penalty},
        )

    # growing ----------------------------------------------------------------------

    def _grow(
        self,
        c: dict[str, Any],
        rows: np.ndarray,
        w: np.ndarray,
        nominal: set[int],
        depth: int,
        label: str,
        counts: dict[str, float],
    ) -> Node:
        j = c["j"]
        data = self._data[j][rows]
        if c["kind"] == "threshold":
            missing = np.isnan(data)
            keys = ["<=", ">"]
            member = [~missing & (data <= c["t"]), ~missing & (data > c["t"])]
        elif c["kind"] == "binary":
            missing = data < 0
            keys = ["==", "!="]
            member = [data == c["v"], (data >= 0) & (data != c["v"])]
        else:
            missing = data < 0
            keys = list(self._domains[j])
            member = [data == v for v in range(len(keys))]
        branch_w = c["branch_w"]
        shares = branch_w / branch_w.sum()
        child_nominal = nominal - {j} if c["kind"] == "multiway" else nominal
        children: dict[str, Node] = {}
        for k, key in enumerate(keys):
            take = member[k] | missing
            cw = np.where(member[k], w, w * shares[k])[take]
            children[key] = self._build(rows[take], cw, child_nominal, depth + 1, label)
        weights = {key: float(shares[k]) for k, key in enumerate(keys)}
        attribute = self.attributes_[j]
        if c["kind"] == "threshold":
            return Split(
                attribute, counts, children, kind="threshold", threshold=c["t"], weights=weights
            )
        if c["kind"] == "binary":
            return Split(
                attribute,
                counts,
                children,
                kind="binary",
                value=self._domains[j][c["v"]],
                weights=weights,
            )
        return Split(attribute, counts, children, weights=weights)

    # reduced-error pruning ------------------------------------------------------------

    def _route(
        self, node: Node, rows: np.ndarray, w: np.ndarray, seen: dict[int, np.ndarray]
    ) -> None:
        """Accumulate, per node, the class weights of the pruning rows that reach it."""
        acc = seen.setdefault(id(node), np.zeros(len(self.classes_)))
        acc += self._counts(rows, w)
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
        self._route(tree, prune_rows, np.ones(len(prune_rows)), seen)
        index = {c: i for i, c in enumerate(self.classes_)}

        def errors_as_leaf(node: Node) -> float:
            acc = seen.get(id(node))
            return 0.0 if acc is None else float(acc.sum() - acc[index[node.label]])

        def visit(node: Node) -> tuple[Node, float]:
            if isinstance(node, Leaf):
                return node, errors_as_leaf(node)
            subtree_errors = 0.0
            for key, child in list(node.children.items()):
                new, err = visit(child)
                node.children[key] = new
                subtree_errors += err
            leaf_errors = errors_as_leaf(node)
            if leaf_errors <= subtree_errors:
                return Leaf(dict(node.counts), node.label), leaf_errors
            return node, subtree_errors

        return visit(tree)[0]
