"""DistributionCounts, IsSameClass and the counts of ComputeInfoGain behind one interface.

Vaidya & Clifton, *Privacy-Preserving Decision Trees over Vertically Partitioned Data*:
Algorithm 3 (DistributionCounts), Algorithm 4 (IsSameClass), Algorithm 6 (ComputeInfoGain) and
the constraint sets of Figure 1 (``Constraints``, ``FormTransSet``).

A *count oracle* answers, for the current node, the counts PPID3 needs; it is a collective call
(every site calls it at the same point with its own constraint set):

* :meth:`CountOracle.distribution_counts` — the class distribution of the rows reaching the
  node, to the class site (Algorithm 3);
* :meth:`CountOracle.attribute_counts` — for every remaining attribute ``A`` of every site, the
  ``(values of A) x (classes)`` count matrix, to the site owning ``A`` (Algorithm 6, lines 1-7
  for all attributes of the node at once).

:class:`PSICountOracle` is the paper-faithful backend: every count is an intersection
cardinality ``|Y_1 ∩ ... ∩ Y_k|`` of the sites' constraint sets, computed by
:mod:`protocols.primitives.psi_ca`. One invocation carries all groups of a node (constant rounds per
node); each group — the class distribution, or one attribute — has fresh keys, so the receiver
of a group learns that group's counts and their sub-intersections (Lemma 2) and cannot combine
constraint sets of two different attributes. What each site learns (Lemmas 2-4):

* the class site: the class distribution of every node (and its sub-intersection sizes);
* the site owning attribute ``A``: ``|S_a|`` per class for each value ``a`` of ``A`` at every
  node where ``A`` is a candidate (and their sub-intersection sizes);
* every site: the sizes of all constraint sets (the sets travel past it, encrypted).

**Class order.** Only the class site knows which class is which (Section 1 of the paper:
another site must not learn whether a class at one node is the same class as one at another
node). So the class site puts its per-class sets in a fresh order at every node, drawn from
the OS generator (:func:`protocols.primitives.psi_ca.os_permutation`), and undoes the order on the
counts it receives. Every other site sees the class site's sets, and the owner of an attribute its
count matrix's class columns, in an order that is a fresh uniform permutation at each node
(one for the node's distribution counts, another for its attribute counts). What remains
visible are the values. A class whose count is unique at two nodes can still be matched by it
(the paper's "except to the extent that this can be deduced from the tree and its own
attributes"). And in this backend a class whose set size ``|Y_k ∩ class|`` is unique can be
matched by its size between nodes where the class site's own constraint set ``Y_k`` is the
same: set sizes are the set-intersection protocol's leakage (padding the class site's sets
with dummy elements to one size would hide them, at the price of more encryptions). Gains do
not depend on the order: :func:`gain_in_any_class_order`.

Faster backends (e.g. secret sharing with a dealer) implement the same two methods, with the
same contract about the class order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.crypto.curve25519 import hash_ids
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.id3 import candidate_thresholds, information_gain
from mpc.runtime.party import Party
from protocols.primitives.psi_ca import GroupInput, os_permutation, set_intersection_cardinality

__all__ = [
    "Constraints",
    "CountOracle",
    "PSICountOracle",
    "SiteView",
    "classes_unordered",
    "columns_sorted",
    "form_trans_set",
    "gain_in_any_class_order",
    "is_same_class",
    "unpermute_classes",
]


def columns_sorted(rows: Any) -> Any:
    """Rows of counts with their columns (classes) in sorted order: what a matrix whose
    columns come in an order unknown to its receiver tells it."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        return rows
    return [list(r) for r in zip(*sorted(zip(*rows, strict=True)), strict=True)]


def classes_unordered(by_attribute: dict[str, Any]) -> dict[str, Any]:
    """An owner's count matrices of one node (attribute -> values x classes), with the class
    columns, common to all of them, in sorted order: what they tell an owner that does not
    know the order of the classes (a ledger entry's ``canonical``)."""
    names = list(by_attribute)
    rows = [list(r) for a in names for r in by_attribute[a]]
    if not rows:
        return by_attribute
    stacked = columns_sorted(rows)
    out, i = {}, 0
    for a in names:
        n = len(by_attribute[a])
        out[a] = stacked[i : i + n]
        i += n
    return out


@dataclass
class SiteView:
    """One site's share of the training data, encoded.

    ``codes[:, j]`` indexes ``domains[j]`` (the values of ``attributes[j]`` seen in training,
    sorted); ``tids`` are the common transaction ids; the class site also has ``y`` (indexes
    into ``classes``). An attribute split at a threshold (:meth:`encode`'s ``numbers``) has
    its candidate thresholds in ``thresholds[j]`` (ascending, ``K`` of them) and the code of a
    row is the number of thresholds below its value (a missing one: 0), one of ``K + 1``:
    ``x <= thresholds[j][i]`` exactly when its code is at most ``i``, the plain learner's
    rule (:mod:`mpc.learners.id3`)."""

    name: str
    attributes: list[str]
    domains: list[list[str]]
    codes: np.ndarray
    tids: np.ndarray
    classes: list[str] | None = None
    y: np.ndarray | None = None
    thresholds: dict[int, np.ndarray] = field(default_factory=dict)
    #: the thresholds are every distinct value but the largest (so every code holds a row),
    #: not the cut points of bins: public, as the run's choice of candidates is
    exact: bool = False
    _hashed: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def encode(
        cls,
        name: str,
        attributes: Sequence[str],
        columns: Sequence[Sequence[str]],
        tids: Sequence[int],
        target: Sequence[str] | None = None,
        numbers: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
        exact: bool = False,
    ) -> SiteView:
        """Encode a site's columns; ``numbers`` maps the index of each attribute split at a
        threshold to its values (floats, NaN where missing) and its candidate thresholds
        (ascending), which replace its column of ``columns``; ``exact``: those are every
        distinct value but the largest."""
        n = len(tids)
        numbers = numbers or {}
        codes = np.empty((n, len(attributes)), dtype=np.int64)
        domains: list[list[str]] = []
        thresholds: dict[int, np.ndarray] = {}
        for j, col in enumerate(columns):
            if j in numbers:
                x, t = (np.asarray(a, dtype=np.float64) for a in numbers[j])
                if len(x) != n:
                    raise ConfigError(
                        f"{name}: column {attributes[j]!r} has {len(x)} rows, not {n}"
                    )
                if np.any(np.diff(t) <= 0) or np.isnan(t).any():
                    raise ConfigError(f"{name}: the thresholds of {attributes[j]!r} must ascend")
                code = np.searchsorted(t, x, side="left")
                code[np.isnan(x)] = 0  # missing: below every number
                thresholds[j] = t
                domains.append([f"<={v:g}" for v in t] + [f">{t[-1]:g}" if len(t) else "any"])
                codes[:, j] = code
                continue
            if len(col) != n:
                raise ConfigError(f"{name}: column {attributes[j]!r} has {len(col)} rows, not {n}")
            values, inverse = np.unique(np.asarray(col, dtype=str), return_inverse=True)
            domains.append([str(v) for v in values])
            codes[:, j] = inverse.ravel()
        classes = y = None
        if target is not None:
            values, inverse = np.unique(np.asarray(target, dtype=str), return_inverse=True)
            classes, y = [str(v) for v in values], inverse.ravel().astype(np.int64)
        return cls(name, list(attributes), domains, codes, np.asarray(tids, np.int64), classes, y,
                   thresholds, exact and bool(thresholds))  # fmt: skip

    @property
    def is_class_site(self) -> bool:
        return self.y is not None

    @property
    def hashed(self) -> np.ndarray:
        """The transaction ids hashed onto the curve, computed once and reused."""
        if self._hashed is None:
            self._hashed = hash_ids(self.tids.tolist())
        return self._hashed


def table_view(
    name: str, table: Any, tids: Sequence[int], *, with_class: bool, thresholds: bool,
    bins: int | None = None,
) -> SiteView:  # fmt: skip
    """A site's :class:`SiteView` of its own ``table`` (a :class:`mpc.datasets.Table`): its
    nominal columns as they are and, with ``thresholds``, its continuous ones split at a
    threshold, with the plain learner's candidates on these rows
    (:func:`mpc.learners.id3.candidate_thresholds`: every distinct value but the largest, or
    the cut points of ``bins`` bins); the class with ``with_class``."""
    numbers: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if thresholds:
        cuts = candidate_thresholds(table, bins)
        numbers = {j: (np.asarray(table.columns[j], dtype=np.float64), cuts[a])
                   for j, a in enumerate(table.attributes) if a in cuts}  # fmt: skip
    columns = [[] if j in numbers else [str(v) for v in c] for j, c in enumerate(table.columns)]
    target = [str(v) for v in table.target] if with_class else None
    return SiteView.encode(name, list(table.attributes), columns, tids, target, numbers,
                           exact=thresholds and bins is None)  # fmt: skip


class Constraints:
    """The constraint tuple of one site (Figure 1): attribute -> required value, or ``'?'``."""

    DONT_CARE = "?"

    def __init__(self, view: SiteView) -> None:
        self.view = view
        self._values: dict[int, int] = {}

    def set(self, attribute: int, value: int | None) -> None:
        """``Constraints.set(attr, val)``; ``value=None`` is the don't-care ``'?'``."""
        if value is None:
            self._values.pop(attribute, None)
        else:
            self._values[attribute] = value

    def as_dict(self) -> dict[str, str]:
        v = self.view
        return {
            a: (v.domains[j][self._values[j]] if j in self._values else self.DONT_CARE)
            for j, a in enumerate(v.attributes)
        }


def form_trans_set(constraints: Constraints) -> np.ndarray:
    """FormTransSet: a boolean mask of the local rows that satisfy ``constraints``."""
    view = constraints.view
    mask = np.ones(len(view.tids), dtype=bool)
    for j, value in constraints._values.items():
        mask &= view.codes[:, j] == value
    return mask


def is_same_class(counts: np.ndarray) -> bool:
    """IsSameClass (Algorithm 4, line 2): exactly one class count is non-zero."""
    return int(np.count_nonzero(counts)) == 1


def gain_in_any_class_order(counts: np.ndarray) -> float:
    """ComputeInfoGain (Algorithm 6, line 8) of a ``(values x classes)`` count matrix whose
    class columns come in an order only the class site knows.

    The gain does not depend on the order of the classes, but its floating-point rounding
    does; the columns are sorted (lexicographically) first, so every order of the same matrix
    gives the same float, and every count backend the same gains."""
    joint = np.asarray(counts)
    if joint.ndim == 2 and joint.shape[1] > 1:
        joint = joint[:, np.lexsort(joint[::-1])]
    return information_gain(joint)


def unpermute_classes(counts: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The class site's inverse of its class order: ``counts[..., i]`` is the count of class
    ``order[i]``; the result has the classes in their own order."""
    out = np.empty_like(counts)
    out[..., order] = counts
    return out


class CountOracle(ABC):
    """The counts a PPID3 node needs; every site calls each method at the same point."""

    name: str = "abstract"

    @abstractmethod
    async def distribution_counts(
        self, party: Party, constraints: Constraints, *, class_site: str, tag: str
    ) -> np.ndarray | None:
        """Algorithm 3: the node's class counts ``(cnt_1, ..., cnt_p)`` at the class site,
        ``None`` elsewhere."""

    @abstractmethod
    async def attribute_counts(
        self,
        party: Party,
        constraints: Constraints,
        remaining: Sequence[int],
        *,
        remaining_per_site: Sequence[int],
        class_site: str,
        tag: str,
    ) -> dict[int, np.ndarray]:
        """Algorithm 6's counts for this site's ``remaining`` attributes: attribute index ->
        ``(|domain| x p)`` matrix. ``remaining_per_site`` (public: it follows from the tree
        structure) is how many attributes each site still has, in site order."""


class PSICountOracle(CountOracle):
    """Every count by commutative-encryption set-intersection cardinality (the paper's way).

    The class site submits its per-class sets in a fresh class order at every call (one per
    node and kind of count); the owner of an attribute receives its count matrix with the
    class columns in that order. (The ``psi-ca/counts`` entries of every ledger, the class
    site's included, hold the tensors as they were counted, in that order.)"""

    name = "psi"

    def __init__(self) -> None:
        self.intersections = 0  # intersection cardinalities computed (count tensor entries)
        self.invocations = 0

    async def distribution_counts(
        self, party: Party, constraints: Constraints, *, class_site: str, tag: str
    ) -> np.ndarray | None:
        view = constraints.view
        base = form_trans_set(constraints)  # line 2: Y_i
        order: np.ndarray | None = None
        if view.is_class_site:
            assert view.y is not None and view.classes is not None
            # lines 5-6: the class restriction, one set per class, in a fresh class order
            order = os_permutation(len(view.classes), f"{tag}/order")
            sets = [view.hashed[base & (view.y == c)] for c in order]
        else:
            sets = [view.hashed[base]]
        (counts,) = await self._run(party, [GroupInput(class_site, sets, "class")], tag, class_site)
        if counts is None:
            return None
        assert order is not None  # the class site is the receiver
        return unpermute_classes(self._class_axis(party, counts, class_site), order)

    async def attribute_counts(
        self,
        party: Party,
        constraints: Constraints,
        remaining: Sequence[int],
        *,
        remaining_per_site: Sequence[int],
        class_site: str,
        tag: str,
    ) -> dict[int, np.ndarray]:
        view = constraints.view
        names = list(party.parties)
        if len(remaining_per_site) != len(names):
            raise ConfigError("remaining_per_site needs one entry per site")
        base = form_trans_set(constraints)
        class_sets: list[np.ndarray] | None = None
        order = np.zeros(0, dtype=np.int64)
        if view.is_class_site:
            assert view.y is not None and view.classes is not None
            order = os_permutation(len(view.classes), f"{tag}/order")  # this node's class order
            class_sets = [view.hashed[base & (view.y == c)] for c in order]
        groups: list[GroupInput] = []
        mine: list[int] = []
        for s, owner in enumerate(names):
            for slot in range(remaining_per_site[s]):
                if owner == party.name:
                    j = remaining[slot]
                    mine.append(j)
                    values = range(len(view.domains[j]))
                    column = view.codes[:, j]
                    if class_sets is not None:  # the owner is the class site: (value, class)
                        assert view.y is not None
                        sets = [
                            view.hashed[base & (column == a) & (view.y == c)]
                            for a in values
                            for c in order
                        ]
                    else:
                        sets = [view.hashed[base & (column == a)] for a in values]
                elif class_sets is not None:
                    sets = class_sets
                else:
                    sets = [view.hashed[base]]
                groups.append(GroupInput(owner, sets, f"{owner}#{slot}"))
        if len(mine) != len(remaining):
            raise ProtocolError(
                f"{party.name} has {len(remaining)} attributes left but the public structure "
                f"says {remaining_per_site[names.index(party.name)]}"
            )
        results = await self._run(party, groups, tag, class_site)
        out: dict[int, np.ndarray] = {}
        got = [r for r in results if r is not None]
        for j, counts in zip(mine, got, strict=True):
            n_values = len(view.domains[j])
            if view.is_class_site:
                assert view.classes is not None
                out[j] = unpermute_classes(counts.reshape(n_values, len(view.classes)), order)
            else:
                me, k_site = names.index(party.name), names.index(class_site)
                moved = np.moveaxis(counts, (me, k_site), (0, 1))
                out[j] = moved.reshape(moved.shape[0], moved.shape[1])
        return out

    async def _run(
        self, party: Party, groups: list[GroupInput], tag: str, class_site: str
    ) -> list[np.ndarray | None]:
        self.invocations += 1
        results = await set_intersection_cardinality(party, groups, tag=tag, permuted=class_site)
        self.intersections += sum(int(np.prod(r.shape)) for r in results if r is not None)
        return results

    @staticmethod
    def _class_axis(party: Party, counts: np.ndarray, class_site: str) -> np.ndarray:
        axis = list(party.parties).index(class_site)
        return np.moveaxis(counts, axis, 0).reshape(-1)
