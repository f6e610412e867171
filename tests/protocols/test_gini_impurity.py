"""The weighted Gini impurity as CART and scikit-learn define it (``gini-impurity``, one class
and one entry of :data:`mpc.learners.criteria.CRITERIA`): the paper's PPID3 (counts by
set intersections, depth first, and by shared products, a level at a time) and PPID3
revealing only the tree grow the plain learner's tree with it, with the ledgers of their
modes."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import Partition, Table

from .test_ppid3 import _assert_equal_to_plain, run_ppid3, tables
from .test_ppid3_levels import _assert_ledgers as _assert_level_ledgers
from .test_ppid3_levels import _assert_plain, run_levels
from .test_reveal_tree import _assert_ledgers, _assert_same_tree, run_reveal

CRITERION = "gini-impurity"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([None, 2]))
def test_the_paper_s_ppid3_splits_by_gini_impurity_as_the_plain_learner(
    case: tuple[Table, Partition], max_depth: int | None
) -> None:
    table, part = case
    _assert_equal_to_plain(run_ppid3(table, part, max_depth=max_depth, criterion=CRITERION),
                           table)  # fmt: skip
    out = run_levels(table, part, max_depth=max_depth, criterion=CRITERION)
    _assert_plain(out, table)
    _assert_level_ledgers(out, part)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([None, 2]), st.sampled_from([None, 3]))
def test_revealing_only_the_tree_splits_by_gini_impurity_as_the_plain_learner(
    case: tuple[Table, Partition], max_depth: int | None, mss: int | None
) -> None:
    table, part = case
    helper = "sites" if part.k >= 3 else "dealer"
    out = run_reveal(table, part, helper=helper, max_depth=max_depth, mss=mss,
                     criterion=CRITERION)  # fmt: skip
    _assert_same_tree(out)
    _assert_ledgers(out)
