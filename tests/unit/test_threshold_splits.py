"""Plain ID3 with threshold splits (``ID3Classifier(splits="threshold")``): the rule the
private learners' ordered attributes follow, written once in :mod:`mpc.learners.id3`. A node
splits a number in two at the first best of its candidate thresholds (every distinct value,
or the cut points of ``bins`` bins) inside the interval its path leaves; the attribute stays a
candidate below; a missing value goes below every threshold."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.datasets import Discretizer, Table
from mpc.errors import ConfigError
from mpc.learners.criteria import criterion
from mpc.learners.id3 import ID3Classifier, candidate_thresholds
from mpc.learners.tree import (
    Leaf,
    Split,
    depth,
    from_json,
    nodes,
    render,
    room_for_deep_trees,
    to_json,
)


def numeric_table(x: list[float], y: list[str], extra: list[str] | None = None) -> Table:
    columns: list[Any] = [np.asarray(x, dtype=np.float64)]
    attributes, kinds = ["x"], ["continuous"]
    if extra is not None:
        columns.append(np.asarray(extra, dtype=object))
        attributes.append("colour")
        kinds.append("nominal")
    return Table("t", attributes, kinds, columns, np.asarray(y, dtype=object), "class", "test")


def brute_force_root(x: list[float], y: list[str], name: str) -> float:
    """The root's threshold found the long way: every distinct value but the largest, in
    ascending order, scored on its two-row table; the first best."""
    classes = sorted(set(y))
    best: tuple[Any, float] | None = None
    for t in sorted(set(x))[:-1]:
        joint = np.zeros((2, len(classes)), dtype=np.int64)
        for v, c in zip(x, y, strict=True):
            joint[0 if v <= t else 1, classes.index(c)] += 1
        score, tie = criterion(name).score(joint), criterion(name).tie
        better = best is None or (score > best[0] + tie if tie else score > best[0])
        if better:
            best = (score, t)
    assert best is not None
    return best[1]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), st.sampled_from("ab")), min_size=2, max_size=40),
    st.sampled_from(["entropy", "gini", "gini-impurity"]),
)
def test_the_root_splits_at_the_first_best_of_every_distinct_value(
    rows: list[tuple[int, str]], name: str
) -> None:
    x, y = [float(v) for v, _ in rows], [c for _, c in rows]
    tree = (
        ID3Classifier(splits="threshold", bins=None, criterion=name, max_depth=1)
        .fit(numeric_table(x, y))
        .tree_
    )
    if len(set(y)) == 1 or len(set(x)) == 1:
        assert isinstance(tree, Leaf)
        return
    assert isinstance(tree, Split) and tree.kind == "threshold"
    assert tree.threshold == brute_force_root(x, y, name)
    assert set(tree.children) == {"<=", ">"}


def test_a_number_is_split_again_below_and_only_inside_its_interval() -> None:
    """The class is "in" for 3 < x <= 7: two thresholds on the one attribute, and every
    threshold below a split lies inside the interval the path leaves."""
    x = [float(v) for v in range(11)] * 3
    y = ["in" if 3 < v <= 7 else "out" for v in x]
    model = ID3Classifier(splits="threshold", bins=None).fit(numeric_table(x, y))
    assert (model.predict(numeric_table(x, y)) == np.asarray(y)).all()
    splits = [n for n in nodes(model.tree_) if isinstance(n, Split)]
    assert {n.threshold for n in splits} == {3.0, 7.0}

    def inside(node: Any, lo: float, hi: float) -> None:
        if isinstance(node, Split):
            assert lo < node.threshold < hi
            inside(node.children["<="], lo, node.threshold)
            inside(node.children[">"], node.threshold, hi)

    inside(model.tree_, -math.inf, math.inf)


def test_the_candidates_are_the_distinct_values_or_the_cut_points_of_the_bins() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 50, 300).astype(float)
    x[:5] = np.nan
    table = numeric_table(list(x), ["a" if v > 20 else "b" for v in x])
    exact = candidate_thresholds(table, None)["x"]
    assert list(exact) == sorted(set(x[~np.isnan(x)]))[:-1]
    assert list(candidate_thresholds(table, 8)["x"]) == list(Discretizer.fit(table, 8).edges["x"])
    model = ID3Classifier(splits="threshold", bins=8).fit(table)
    used = {n.threshold for n in nodes(model.tree_) if isinstance(n, Split)}
    assert used and used <= set(candidate_thresholds(table, 8)["x"])


def test_a_missing_number_goes_below_every_threshold_in_training_and_prediction() -> None:
    """Missing values count on the ``<=`` side, so a tree learnt with them predicts a
    missing value as the ``<=`` side does, and the saved tree says so."""
    x = [1.0, 2.0, 3.0, 10.0, 11.0, 12.0, math.nan, math.nan]
    y = ["lo", "lo", "lo", "hi", "hi", "hi", "lo", "lo"]
    model = ID3Classifier(splits="threshold", bins=None).fit(numeric_table(x, y))
    root = model.tree_
    assert isinstance(root, Split) and root.missing == "<="
    assert root.children["<="].counts == {"hi": 0.0, "lo": 5.0}
    assert list(model.predict(numeric_table([math.nan, 11.5], ["lo", "hi"]))) == ["lo", "hi"]
    again = from_json(json.loads(json.dumps(to_json(root))))
    assert isinstance(again, Split) and again.missing == "<=" and again.threshold == 3.0


def test_numbers_and_nominal_attributes_share_one_tie_order() -> None:
    """A nominal attribute that separates as well as a threshold loses to it when it comes
    later in the attribute order, and wins when it comes first."""
    x = [1.0, 2.0, 8.0, 9.0]
    y = ["a", "a", "b", "b"]
    table = numeric_table(x, y, extra=["red", "red", "blue", "blue"])
    first = ID3Classifier(splits="threshold", bins=None).fit(table, attribute_order=["x", "colour"])
    assert first.tree_.attribute == "x"
    later = ID3Classifier(splits="threshold", bins=None).fit(table, attribute_order=["colour", "x"])
    assert later.tree_.attribute == "colour"


def test_integer_weights_are_repeated_rows_with_threshold_splits() -> None:
    rng = np.random.default_rng(4)
    x = list(rng.integers(0, 30, 60).astype(float))
    y = ["a" if v % 7 < 3 else "b" for v in x]
    w = rng.integers(1, 4, 60)
    repeated = numeric_table([v for v, k in zip(x, w, strict=True) for _ in range(k)],
                             [c for c, k in zip(y, w, strict=True) for _ in range(k)])  # fmt: skip
    for name in ("entropy", "gini"):
        a = ID3Classifier(splits="threshold", bins=None, criterion=name)
        b = ID3Classifier(splits="threshold", bins=None, criterion=name)
        weighted = a.fit(numeric_table(x, y), sample_weight=w).tree_
        assert to_json(weighted) == to_json(b.fit(repeated).tree_)


def test_splits_is_checked() -> None:
    with pytest.raises(ConfigError, match="splits must be one of"):
        ID3Classifier(splits="binary").fit(numeric_table([1.0, 2.0], ["a", "b"]))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_the_information_gains_of_many_tables_are_those_of_one_at_a_time(
    classes: int, values: int, seed: int
) -> None:
    """The stacked scores the thresholds use equal :func:`information_gain` table by table,
    bit for bit (zero counts, empty rows and empty tables among them)."""
    rng = np.random.default_rng(seed)
    tables = rng.integers(0, int(rng.choice([3, 40, 5000])), (60, values, classes))
    tables[rng.random(tables.shape) < 0.35] = 0
    tables[0] = 0
    gain = criterion("entropy")
    assert gain.scores(tables) == [gain.score(t) for t in tables]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["gini", "gini-impurity"]), st.integers(2, 5), st.integers(1, 3),
       st.integers(0, 2**32 - 1))  # fmt: skip
def test_the_fractions_of_many_tables_are_those_of_one_at_a_time(
    name: str, classes: int, values: int, seed: int
) -> None:
    """The stacked scores of an exact criterion (two-row tables as one fraction each, from
    64-bit integers) equal its fractions table by table, normalised alike; up to the largest
    counts the fast path takes (2^20 rows) and past them."""
    rng = np.random.default_rng(seed)
    top = int(rng.choice([3, 40, 5000, 2**19 - 1, 2**21]))
    tables = rng.integers(0, top, (30, values, classes))
    tables[rng.random(tables.shape) < 0.35] = 0
    tables[0] = 0
    crit = criterion(name)
    got, want = crit.scores(tables), [crit.score(t) for t in tables]
    assert [(f.numerator, f.denominator) for f in got] == [
        (f.numerator, f.denominator) for f in want
    ]


def test_a_tree_thousands_of_levels_deep_is_counted_and_measured() -> None:
    """A chain of threshold splits 3,000 deep (a nearly unique column peeled a record at a
    time makes such chains): its depth and its nodes in depth-first order are walked without
    recursion, and its JSON and rendering, nested one level per split, have the room they
    need."""
    counts = {"a": 1.0, "b": 1.0}
    tree: Any = Leaf(counts, "a")
    for t in range(3000):
        tree = Split("x", counts, {"<=": Leaf(counts, "b"), ">": tree}, kind="threshold",
                     threshold=float(t), missing="<=")  # fmt: skip
    assert depth(tree) == 3000
    walked = list(nodes(tree))
    assert len(walked) == 6001 and walked[0] is tree and walked[1] is tree.children["<="]
    model = ID3Classifier()
    model.tree_ = tree
    assert model.get_depth() == 3000
    with room_for_deep_trees():  # comparing nested dicts recurses too
        assert to_json(from_json(to_json(tree))) == to_json(tree)
    assert render(tree).count("\n") == 6000 - 1


def test_a_number_peeled_a_record_at_a_time_grows_a_tree_as_deep_as_its_rows() -> None:
    """Alternating classes along one number: information gain peels a record at a time, a
    chain 1,499 splits deep, which the learner grows without recursion and which predicts
    every training row."""
    n = 1500
    x = [float(i) for i in range(n)]
    y = ["a" if i % 2 else "b" for i in range(n)]
    model = ID3Classifier(splits="threshold", bins=None).fit(numeric_table(x, y))
    assert model.get_depth() == n - 1
    assert list(model.predict(numeric_table(x, y))) == y
