"""The split criteria (mpc.learners.criteria): the fixed-point ``n log n`` is within its stated
error of ``log2`` and exact where it must be, the exact scores order candidates as their
definitions say, and the ID3 learner grows with each."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.datasets import load_dataset, weather
from mpc.errors import ConfigError
from mpc.learners.criteria import (
    CRITERIA,
    NLOGN_ERROR_BITS,
    NLOGN_SCALE_BITS,
    NLOGN_W,
    entropy_fixed_score,
    gini_score,
    information_gain,
    log2_fixed,
    nlogn_fixed,
)
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import depth, node_count, to_json

SCALE = 2**NLOGN_SCALE_BITS


def test_the_fixed_point_log_is_within_its_error_and_exact_at_powers_of_two() -> None:
    ns = np.unique(np.concatenate([
        np.arange(1, 2**17), np.random.default_rng(1).integers(2**17, 2**NLOGN_W, 20_000),
        [2**NLOGN_W - 1],
    ]))  # fmt: skip
    values = [log2_fixed(int(n)) for n in ns]
    errors = [abs(v / SCALE - math.log2(int(n))) for v, n in zip(values, ns, strict=True)]
    assert max(errors) <= NLOGN_ERROR_BITS
    assert all(b >= a for a, b in itertools.pairwise(values))  # never decreasing
    for k in range(NLOGN_W):
        assert log2_fixed(2**k) == k * SCALE
    # the bound the private side's ring must hold: L(n) below 2^145 for every n < 2^24
    assert 2**144 < nlogn_fixed(2**NLOGN_W - 1) < 2**145 and nlogn_fixed(0) == 0
    with pytest.raises(ConfigError, match=r"\[1, 2\^24\)"):
        log2_fixed(2**NLOGN_W)


matrices = st.integers(1, 5).flatmap(
    lambda p: st.lists(
        st.lists(st.integers(0, 400), min_size=p, max_size=p), min_size=1, max_size=6
    )
)


@settings(max_examples=200, deadline=None)
@given(matrices)
def test_the_gini_score_is_its_formula_in_exact_fractions(rows: list[list[int]]) -> None:
    joint = np.array(rows)
    expected = sum(
        (Fraction(sum(c * c for c in r), 8 * sum(r) + 1) for r in rows), start=Fraction(0)
    )
    assert gini_score(joint) == expected


def _cart_impurity(rows: list[list[int]]) -> Fraction:
    """The weighted Gini impurity of a split as CART and scikit-learn define it:
    ``Σ_v (n_v / n) (1 - Σ_c (n_vc / n_v)²)``, an empty branch weighing nothing."""
    n = sum(sum(r) for r in rows)
    total = Fraction(0)
    for r in rows:
        n_v = sum(r)
        if n_v:
            total += Fraction(n_v, n) * (1 - sum(Fraction(c, n_v) ** 2 for c in r))
    return total


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=1, max_size=30), st.data())
def test_gini_impurity_picks_the_split_of_least_cart_impurity(
    labels: list[int], data: st.DataObject
) -> None:
    """On rows of up to three classes, each candidate splitting them over up to four values
    (ties and empty branches common): ``gini-impurity``'s largest score is the candidate of
    least weighted Gini impurity, the first of equals, and the score is ``n (1 - impurity)``
    exactly."""
    n = len(labels)
    candidates = []
    for _ in range(data.draw(st.integers(1, 5))):
        values = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        joint = [[0, 0, 0] for _ in range(4)]
        for v, c in zip(values, labels, strict=True):
            joint[v][c] += 1
        candidates.append(joint)
    crit = CRITERIA["gini-impurity"]
    scores = [crit.score(np.array(c)) for c in candidates]
    impurities = [_cart_impurity(c) for c in candidates]
    assert scores.index(max(scores)) == impurities.index(min(impurities))
    assert all(s == n * (1 - i) for s, i in zip(scores, impurities, strict=True))


@settings(max_examples=300, deadline=None)
@given(matrices, st.data())
def test_entropy_fixed_orders_candidates_as_the_gain_does_beyond_its_error(
    rows: list[list[int]], data: st.DataObject
) -> None:
    """Two candidates at one node (the same class totals): unless their gains are within
    ``4 ε`` of each other, the fixed-point scores put them in the gain's order; the score is
    ``-N H(C | A)`` within ``2 N ε`` (``ε`` the log's error)."""
    a = np.array(rows)
    totals = a.sum(axis=0)
    # another split of the same rows: a random matrix with the same column totals
    cuts = [sorted(data.draw(st.lists(st.integers(0, int(t)), min_size=2, max_size=2)))
            for t in totals]  # fmt: skip
    b = np.array([[c[0] for c in cuts],
                  [c[1] - c[0] for c in cuts],
                  [int(t) - c[1] for t, c in zip(totals, cuts, strict=True)]])  # fmt: skip
    n = int(totals.sum())
    if n == 0:
        return
    h_c = -sum(t / n * math.log2(t / n) for t in totals if t)
    for m in (a, b):  # score / N = -H(C | A) = gain - H(C), within 2 ε
        approx = entropy_fixed_score(m) / SCALE / n
        assert abs(approx - (information_gain(m) - h_c)) <= 2 * NLOGN_ERROR_BITS + 1e-9
    gap = information_gain(a) - information_gain(b)
    if abs(gap) > 4 * NLOGN_ERROR_BITS:
        assert (entropy_fixed_score(a) > entropy_fixed_score(b)) == (gap > 0)


def test_id3_grows_with_each_criterion_and_refuses_an_unknown_one() -> None:
    car, _ = load_dataset("car", None)
    gini = ID3Classifier(criterion="gini").fit(car)
    # MPyC's np_id3gini -e 0 grows car's full tree with 406 nodes, depth 6 (its own output)
    assert node_count(gini.tree_) == 406 and depth(gini.tree_) == 6
    for name in ("car", "tic-tac-toe", "house-votes-84", "kr-vs-kp"):
        table, _ = load_dataset(name, None)
        assert to_json(ID3Classifier(criterion="entropy-fixed").fit(table).tree_) == to_json(
            ID3Classifier().fit(table).tree_
        ), name
    with pytest.raises(ConfigError, match=r"criterion must be one of \['entropy', 'gini'"):
        ID3Classifier(criterion="twoing").fit(weather())


def test_the_criteria_report_runs_and_says_where_the_trees_differ(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """scripts/criteria_report.py on two tables into a scratch folder: the JSON has every tree's
    size and no differing node where the trees are equal; the table renders from the JSON."""
    import importlib.util
    import json

    from ..conftest import ROOT

    spec = importlib.util.spec_from_file_location("criteria_report", ROOT / "scripts" /
                                                  "criteria_report.py")  # fmt: skip
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--datasets", "weather,car", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "criteria.json").read_text())
    car = next(r for r in doc["datasets"] if r["dataset"] == "car")
    assert car["identical"] and car["differing_nodes"] == []
    assert car["nodes"] == {"entropy": 408, "entropy-fixed": 408, "gini": 406}
    assert "| car | 1,728 | 408 | 408 | 406 | yes | — |" in (tmp_path / "criteria.md").read_text()
    # a differing node is reported with both attributes and the float gain gap
    a = ID3Classifier().fit(weather())
    b = ID3Classifier(criterion="gini").fit(weather())
    b.tree_.attribute = "humidity"  # type: ignore[union-attr]
    (diff,) = script.differing_nodes(a, a.tree_, b.tree_, weather(), np.arange(14), [])
    assert diff["entropy"] == "outlook" and diff["entropy_fixed"] == "humidity"
    assert diff["gap"] == pytest.approx(0.2467 - 0.1518, abs=1e-3)
