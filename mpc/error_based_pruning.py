"""Error-based pruning of C4.5 (Quinlan 1993, ch. 4; as Weka's J48 3.6 does it), on a grown
tree that still holds its training rows.

Quinlan's pessimistic estimate: a leaf that covers ``N`` training rows (weights) and
misclassifies ``E`` of them is taken to make ``E + add_errs(N, E, CF)`` errors, where
``E + add_errs`` is the upper limit of a binomial confidence interval of level ``CF``
(default 0.25) on the error count. The tree is pruned bottom-up; at every interior node
three candidates are compared by their estimated errors:

1. the subtree as it is (the sum of its leaves' estimates),
2. a leaf in its place (the estimate of the node's class weights),
3. **subtree raising**: its largest branch (the child with the most training weight) in
   its place, that child's subtree re-counted with *all* the node's training rows.

The node becomes a leaf when (2) is within 0.1 error of (1) and of (3); otherwise the largest
branch is raised when (3) is within 0.1 of (1); then its subtree's class weights are
re-counted with the node's rows and it is pruned again. Before pruning, :func:`collapse`
turns every subtree that does not make fewer training errors than a leaf into a leaf
(C4.5's tree construction does the same; J48 always does it).

The functions are named after Quinlan's C4.5 code (``AddErrs`` of ``stats.c``, the
``EstimateErrors`` of ``prune.c``). They work on :class:`Grown` nodes and learn nothing by
themselves: a :class:`Router` (the learner) says how a node's test sends rows to its
children. Weka's tolerances are kept (values within 1e-6 are equal, ``Utils.SMALL``) so
that the same tree comes out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Protocol

import numpy as np

from mpc.errors import ConfigError

__all__ = [
    "Grown",
    "Router",
    "add_errs",
    "collapse",
    "estimated_errors",
    "estimated_errors_for_distribution",
    "prune",
]

#: Weka's ``Utils.SMALL``: two weights closer than this are equal.
SMALL = 1e-6


def add_errs(n: float, e: float, confidence: float = 0.25) -> float:
    """The extra errors that C4.5 adds to ``e`` observed errors among ``n`` rows: ``e +
    add_errs(n, e, cf)`` is the upper limit of the ``cf`` confidence interval on the
    number of errors (Quinlan's ``AddErrs``; Weka's ``Stats.addErrs``).

    * ``e == 0``: ``n * (1 - cf ** (1/n))`` (the exact binomial limit);
    * ``0 < e < 1``: linear between that and the value at ``e = 1``;
    * ``e + 0.5 >= n``: ``max(n - e, 0)``;
    * otherwise the normal approximation with continuity correction (Wilson's upper
      bound with ``z`` the ``1 - cf`` quantile).

    ``confidence`` must be in (0, 0.5]; J48 leaves the estimate unchanged above 0.5."""
    if not 0 < confidence <= 0.5:
        raise ConfigError(f"add_errs: confidence must be in (0, 0.5], got {confidence!r}")
    if n <= 0:
        raise ConfigError(f"add_errs: n must be positive, got {n!r}")
    if e < 1:
        base = n * (1 - confidence ** (1 / n))
        if e == 0:
            return base
        return base + e * (add_errs(n, 1.0, confidence) - base)
    if e + 0.5 >= n:
        return max(n - e, 0.0)
    z = NormalDist().inv_cdf(1 - confidence)
    f = (e + 0.5) / n
    r = (f + z * z / (2 * n) + z * math.sqrt(f / n - f * f / n + z * z / (4 * n * n))) / (
        1 + z * z / n
    )
    return r * n - e


def _max_class(counts: np.ndarray) -> int:
    """The index of the largest weight; a later one wins only when larger by more than
    :data:`SMALL` (Weka's ``Distribution.maxClass``)."""
    best, index = 0.0, 0
    for i, c in enumerate(counts.tolist()):
        if c - best > SMALL:
            best, index = c, i
    return index


def _max_bag(per_bag: np.ndarray) -> int:
    """The branch with the most weight; on ties (within :data:`SMALL`) the last one
    (Weka's ``Distribution.maxBag``)."""
    best, index = 0.0, -1
    for i, b in enumerate(per_bag.tolist()):
        if best - b < SMALL or b >= best:
            best, index = b, i
    return index


def errors_of(counts: np.ndarray) -> float:
    """The training errors of a leaf with these class weights: all but its class."""
    return float(counts.sum() - counts[_max_class(counts)])


def estimated_errors_for_distribution(counts: np.ndarray, confidence: float) -> float:
    """The pessimistic error estimate of a leaf with these class weights (0 when empty)."""
    total = float(counts.sum())
    if abs(total) < SMALL:
        return 0.0
    e = errors_of(counts)
    return e + add_errs(total, e, confidence)


@dataclass(eq=False)
class Grown:
    """A node of a grown tree with its training rows (indices and weights: fractional for
    rows of unknown value). ``dist[k, c]`` is the weight of class ``c`` in branch ``k``
    (rows of unknown value added in proportion to the known branch weights), one row for a
    leaf; ``test`` is the learner's description of the split (None for a leaf)."""

    rows: np.ndarray
    w: np.ndarray
    dist: np.ndarray
    test: Any = None
    children: list[Grown] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return self.test is None

    @property
    def counts(self) -> np.ndarray:
        """The node's class weights (all branches together)."""
        return self.dist.sum(axis=0)

    def make_leaf(self) -> None:
        self.dist = self.dist.sum(axis=0, keepdims=True)
        self.test = None
        self.children = []


class Router(Protocol):
    """How a learner's tests send rows down a tree."""

    def class_weights(self, rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        """The class weights of these rows."""
        ...

    def distribute(
        self, test: Any, rows: np.ndarray, w: np.ndarray
    ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        """``(dist, parts)``: the class weights per branch of ``test`` (rows of unknown value
        in proportion to the known branch weights) and the rows and weights of each
        branch (a row of unknown value goes to every branch whose share is above
        :data:`SMALL`, with its weight times that share)."""
        ...


def training_errors(node: Grown) -> float:
    """The training errors of the leaves of ``node``'s subtree."""
    if node.is_leaf:
        return errors_of(node.counts)
    return sum(training_errors(c) for c in node.children)


def collapse(node: Grown) -> None:
    """Turn every subtree whose leaves make no fewer training errors (within 1e-3) than a
    leaf in its place into that leaf, from the root down."""
    if node.is_leaf:
        return
    if training_errors(node) >= errors_of(node.counts) - 1e-3:
        node.make_leaf()
        return
    for child in node.children:
        collapse(child)


def estimated_errors(node: Grown, confidence: float) -> float:
    """The pessimistic estimate of ``node``'s subtree: the sum over its leaves."""
    if node.is_leaf:
        return estimated_errors_for_distribution(node.counts, confidence)
    return sum(estimated_errors(c, confidence) for c in node.children)


def estimated_errors_for_branch(
    node: Grown, rows: np.ndarray, w: np.ndarray, router: Router, confidence: float
) -> float:
    """The pessimistic estimate of ``node``'s subtree if ``rows`` were its training rows
    (they are sent down its tests; the tree is not changed)."""
    if node.is_leaf:
        return estimated_errors_for_distribution(router.class_weights(rows, w), confidence)
    _, parts = router.distribute(node.test, rows, w)
    return sum(
        estimated_errors_for_branch(child, r, cw, router, confidence)
        for child, (r, cw) in zip(node.children, parts, strict=True)
    )


def new_distribution(node: Grown, rows: np.ndarray, w: np.ndarray, router: Router) -> None:
    """Make ``rows`` the training rows of ``node``'s subtree and re-count its weights."""
    node.rows, node.w = rows, w
    if node.is_leaf:
        node.dist = router.class_weights(rows, w)[None, :]
        return
    node.dist, parts = router.distribute(node.test, rows, w)
    for child, (r, cw) in zip(node.children, parts, strict=True):
        new_distribution(child, r, cw, router)


def prune(
    node: Grown, router: Router, confidence: float = 0.25, *, subtree_raising: bool = True
) -> None:
    """C4.5's error-based pruning of ``node``'s subtree in place (see the module
    docstring); ``subtree_raising=False`` only replaces subtrees by leaves (J48's ``-S``)."""
    if node.is_leaf:
        return
    for child in node.children:
        prune(child, router, confidence, subtree_raising=subtree_raising)
    largest = _max_bag(node.dist.sum(axis=1))
    if subtree_raising:
        errors_largest = estimated_errors_for_branch(
            node.children[largest], node.rows, node.w, router, confidence
        )
    else:
        errors_largest = math.inf
    errors_leaf = estimated_errors_for_distribution(node.counts, confidence)
    errors_tree = estimated_errors(node, confidence)
    if _sm_or_eq(errors_leaf, errors_tree + 0.1) and _sm_or_eq(errors_leaf, errors_largest + 0.1):
        node.make_leaf()
        return
    if _sm_or_eq(errors_largest, errors_tree + 0.1):
        raised = node.children[largest]
        node.test, node.children = raised.test, raised.children
        new_distribution(node, node.rows, node.w, router)
        prune(node, router, confidence, subtree_raising=subtree_raising)


def _sm_or_eq(a: float, b: float) -> bool:
    """``a <= b`` within :data:`SMALL` (Weka's ``Utils.smOrEq``)."""
    return a - b < SMALL or a <= b
