"""Error-based pruning (mpc.learners.error_based_pruning, C45Classifier(pruning="error-based")): the
pessimistic error estimate against Quinlan's book and an independent normal quantile, its
properties, collapse and subtree raising on hand-made trees."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from mpc.datasets import Table
from mpc.errors import ConfigError
from mpc.learners.c45 import C45Classifier
from mpc.learners.coded_table import CodedTable
from mpc.learners.error_based_pruning import (
    Grown,
    add_errs,
    collapse,
    estimated_errors_for_distribution,
    prune,
)
from mpc.learners.tree import Leaf, Split, node_count


def test_add_errs_with_no_errors_is_quinlans_binomial_limit() -> None:
    # C4.5 (Quinlan 1993, p. 41): U_25%(0, 6) = 0.206, U_25%(0, 9) = 0.143, U_25%(0, 1) = 0.750
    assert add_errs(6, 0) / 6 == pytest.approx(0.206, abs=5e-4)
    assert add_errs(9, 0) / 9 == pytest.approx(0.143, abs=5e-4)
    assert add_errs(1, 0) == pytest.approx(0.75)


def wilson_upper(n: float, e: float, cf: float) -> float:
    """The upper limit of the ``cf`` interval, written out with scipy's normal quantile."""
    z = norm.ppf(1 - cf)
    f = (e + 0.5) / n
    centre = f + z**2 / (2 * n)
    spread = z * math.sqrt(f * (1 - f) / n + z**2 / (4 * n**2))
    return (centre + spread) / (1 + z**2 / n) * n


@pytest.mark.parametrize(
    ("n", "e", "cf"), [(16, 1, 0.25), (100, 10, 0.25), (20, 3, 0.1), (50, 7.5, 0.4)]
)
def test_add_errs_is_the_normal_upper_limit_with_continuity_correction(
    n: float, e: float, cf: float
) -> None:
    assert e + add_errs(n, e, cf) == pytest.approx(wilson_upper(n, e, cf), rel=1e-9)


def test_add_errs_between_zero_and_one_error_is_linear() -> None:
    base, one = add_errs(10, 0), add_errs(10, 1)
    assert add_errs(10, 0.25) == pytest.approx(base + 0.25 * (one - base))
    # near n: all the rest may be errors
    assert add_errs(3, 2.6) == pytest.approx(0.4)
    assert add_errs(3, 3) == 0.0


def test_add_errs_rejects_what_j48_would_not_use() -> None:
    with pytest.raises(ConfigError, match="confidence"):
        add_errs(10, 1, 0.6)
    with pytest.raises(ConfigError, match="n must be positive"):
        add_errs(0, 0)


@settings(max_examples=200, deadline=None)
@given(
    st.floats(1, 5000),
    st.floats(0, 1),
    st.floats(0.01, 0.5),
    st.floats(0.01, 0.5),
)
def test_add_errs_properties(n: float, share: float, cf: float, cf2: float) -> None:
    e = share * n
    extra = add_errs(n, e, cf)
    # an upper limit: above the observed errors, at most every row
    assert extra >= 0
    assert e + extra <= n + 1e-9
    # a smaller confidence level is more pessimistic
    lo, hi = sorted((cf, cf2))
    assert add_errs(n, e, lo) >= add_errs(n, e, hi) - 1e-9
    # more observed errors never lower the estimate
    if e + 1 <= n:
        assert e + 1 + add_errs(n, e + 1, cf) >= e + extra - 1e-9


class ByColumn:
    """A router over a tiny integer table: a test is a column; branch k takes value k."""

    def __init__(self, columns: np.ndarray, y: np.ndarray, n_classes: int = 2) -> None:
        self.columns, self.y, self.n_classes = columns, y, n_classes

    def class_weights(self, rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        return np.bincount(self.y[rows], weights=w, minlength=self.n_classes).astype(float)

    def distribute(
        self, test: int, rows: np.ndarray, w: np.ndarray
    ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        parts = [(rows[self.columns[rows, test] == k], w[self.columns[rows, test] == k])
                 for k in range(2)]  # fmt: skip
        dist = np.stack([self.class_weights(r, cw) for r, cw in parts])
        return dist, parts

    def grow(self, rows: np.ndarray, tests: list[int]) -> Grown:
        """A tree that tests ``tests`` in order along every path."""
        w = np.ones(len(rows))
        if not tests:
            return Grown(rows, w, self.class_weights(rows, w)[None, :])
        dist, parts = self.distribute(tests[0], rows, w)
        node = Grown(rows, w, dist, test=tests[0])
        node.children = [self.grow(r, tests[1:]) for r, _ in parts]
        return node


def raising_case() -> tuple[ByColumn, Grown]:
    """Column 0 (a) is useless, column 1 (b) gives the class. The tree tests a, then b only
    under a = 0 (20 rows); under a = 1 (4 rows) it is a leaf with 2 errors."""
    a = np.array([0] * 20 + [1] * 4)
    b = np.array([0] * 10 + [1] * 10 + [0, 0, 1, 1])
    router = ByColumn(np.stack([a, b], axis=1), b.copy())
    tree = router.grow(np.arange(24), [0])
    tree.children[0] = router.grow(tree.children[0].rows, [1])
    return router, tree


def test_subtree_raising_lifts_the_largest_branch_over_a_useless_test() -> None:
    router, tree = raising_case()
    # the estimates that decide it, computed by hand
    kept = 2 * add_errs(10, 0) + 2 + add_errs(4, 2)
    raised = 2 * add_errs(12, 0)
    as_leaf = 12 + add_errs(24, 12)
    assert raised < kept and raised < as_leaf
    prune(tree, router)
    # the b test now stands at the root and its leaves hold all 24 rows
    assert tree.test == 1
    assert [c.is_leaf for c in tree.children] == [True, True]
    assert tree.children[0].counts.tolist() == [12.0, 0.0]
    assert tree.children[1].counts.tolist() == [0.0, 12.0]
    assert sorted(tree.children[0].rows.tolist()) == [*range(10), 20, 21]


def test_without_subtree_raising_the_useless_test_stays() -> None:
    router, tree = raising_case()
    prune(tree, router, subtree_raising=False)
    assert tree.test == 0 and tree.children[0].test == 1 and tree.children[1].is_leaf


def test_a_subtree_no_better_than_a_leaf_is_pruned_and_collapsed() -> None:
    # column 0 says nothing about the class: 2 of each class under both values
    a = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    y = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    router = ByColumn(a[:, None], y)
    tree = router.grow(np.arange(8), [0])
    leaf = estimated_errors_for_distribution(tree.counts, 0.25)
    assert leaf <= 2 * estimated_errors_for_distribution(np.array([2.0, 2.0]), 0.25) + 0.1
    prune(tree, router)
    assert tree.is_leaf and tree.counts.tolist() == [4.0, 4.0]
    tree = router.grow(np.arange(8), [0])
    collapse(tree)  # 4 training errors either way: a leaf
    assert tree.is_leaf


def table(columns: dict[str, list], y: list[str], kinds: dict[str, str] | None = None) -> Table:
    kinds = kinds or {}
    names = tuple(columns)
    return Table(
        name="t",
        attributes=names,
        kinds=tuple(kinds.get(a, "nominal") for a in names),
        columns=tuple(
            np.array(columns[a], dtype=np.float64 if kinds.get(a) == "continuous" else object)
            for a in names
        ),
        target=np.array(y, dtype=object),
        class_name="class",
        source="test",
    )


def test_error_based_pruning_prunes_noise_and_keeps_the_signal() -> None:
    rng = np.random.default_rng(5)
    n = 600
    a = rng.choice(["r", "s", "t"], n)
    noise = [rng.choice(["m", "n", "o", "p"], n) for _ in range(3)]
    y = np.where(a == "r", "yes", "no")
    y = np.where(rng.random(n) < 0.15, np.where(y == "yes", "no", "yes"), y)
    cols = {"a": list(a), **{f"noise{i}": list(c) for i, c in enumerate(noise)}}
    t = table(cols, list(y))
    pruned = C45Classifier(pruning="error-based", confidence=0.25).fit(t).tree_
    unpruned = C45Classifier(pruning="none").fit(t).tree_
    assert isinstance(pruned, Split) and pruned.attribute == "a"
    assert all(isinstance(c, Leaf) for c in pruned.children.values())
    assert node_count(pruned) < node_count(unpruned)
    # a smaller confidence prunes at least as hard
    harder = C45Classifier(pruning="error-based", confidence=0.05).fit(t).tree_
    assert node_count(harder) <= node_count(pruned)


def test_confidence_and_pruning_are_checked() -> None:
    t = table({"a": ["p", "q"] * 4}, ["1", "2"] * 4)
    for bad in (0, 0.75, "0.25", True):
        with pytest.raises(ConfigError, match="confidence must be a number in"):
            C45Classifier(pruning="error-based", confidence=bad).fit(t)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'error-based', 'reduced-error' or 'none'"):
        C45Classifier(pruning="pessimistic").fit(t)
    params = C45Classifier(pruning="error-based").get_params()
    assert params["pruning"] == "error-based" and params["confidence"] == 0.25


def test_declared_values_give_empty_branches_that_predict_the_parent_class() -> None:
    t = table({"a": ["p"] * 4 + ["q"] * 4}, ["1"] * 4 + ["2"] * 3 + ["1"])
    coded = CodedTable.from_table(t, values={"a": ["p", "q", "r"]}, classes=["1", "2", "3"])
    model = C45Classifier(pruning="none").fit(coded)
    tree = model.tree_
    assert isinstance(tree, Split) and list(tree.children) == ["p", "q", "r"]
    empty = tree.children["r"]
    assert isinstance(empty, Leaf) and sum(empty.counts.values()) == 0
    assert empty.label == tree.label == "1"
    assert model.classes_ == ["1", "2", "3"]
    with pytest.raises(ConfigError, match="not among its declared values"):
        CodedTable.from_table(t, values={"a": ["p"]})
    with pytest.raises(ConfigError, match="not among the declared classes"):
        CodedTable.from_table(t, classes=["1"])
