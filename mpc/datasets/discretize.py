"""Equal-frequency binning of continuous columns for the ID3 family: :class:`Discretizer`
learns its cut points on training rows only (inside each cross-validation fold) and applies
them unchanged to any other rows. It bins every continuous attribute, or only the ones
chosen when it is fitted (``attributes=``: cdtl bins a continuous sensitive attribute, which
anatomization needs nominal, and leaves the others to C4.5's thresholds)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mpc.datasets.table import CONTINUOUS, MISSING, NOMINAL, DataError, Table

# --------------------------------------------------------------------------------------------
# Discretisation


def _number(x: float) -> str:
    return np.format_float_positional(x, trim="-")


@dataclass(frozen=True)
class Discretizer:
    """Equal-frequency binning of continuous attributes, learned on training rows only.

    ``edges[a]`` are the inner cut points of attribute ``a`` in increasing order; a value
    ``x`` falls in the first bin whose upper edge is ``>= x``. A cut point between two
    training values is their midpoint, so ``<=37.5`` reads as "37 or less" on integer data.

    ``partial`` is False when it was fitted on every continuous attribute: :meth:`transform`
    then refuses a continuous attribute it has no cut points for. True when it was fitted on
    chosen attributes only (:meth:`fit` with ``attributes``): :meth:`transform` bins those
    and leaves every other continuous attribute as it is.
    """

    bins: int
    edges: dict[str, tuple[float, ...]] = field(default_factory=dict)
    partial: bool = False

    @classmethod
    def fit(
        cls,
        table: Table,
        bins: int,
        *,
        attributes: Sequence[str] | None = None,
        weights: np.ndarray | None = None,
    ) -> Discretizer:
        """Cut points at the ``i/bins`` quantiles (``i = 1 .. bins-1``) of the non-missing
        values of every continuous attribute (or of the continuous ``attributes`` given,
        each of which must be a continuous attribute of ``table``); repeated cut points are
        merged and a cut point at the largest value is dropped, so an attribute may get
        fewer than ``bins`` bins. With ``weights`` (one per row, positive), a row counts as
        that many rows: whole weights give the cut points of the table with each row repeated
        as often."""
        if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 2:
            raise DataError(f"bins must be an integer of at least 2, got {bins!r}")
        chosen = None if attributes is None else set(attributes)
        if chosen is not None:
            continuous = [a for a, k in zip(table.attributes, table.kinds, strict=True)
                          if k == CONTINUOUS]  # fmt: skip
            wrong = sorted(chosen - set(continuous))
            if wrong:
                raise DataError(
                    f"cannot bin {wrong}: not continuous attributes of table {table.name!r}; "
                    f"its continuous attributes are {continuous}"
                )
        edges: dict[str, tuple[float, ...]] = {}
        for a, kind, col in zip(table.attributes, table.kinds, table.columns, strict=True):
            if kind != CONTINUOUS or (chosen is not None and a not in chosen):
                continue
            known = ~np.isnan(col)
            order = np.argsort(col[known], kind="stable")
            v = col[known][order]
            w = None if weights is None else np.asarray(weights, dtype=np.float64)[known][order]
            n = len(v) if w is None else float(w.sum())
            at = _at(v, w)
            cuts: set[float] = set()
            for i in range(1, int(bins) if len(v) else 1):
                pos = i * (n - 1) / bins
                lo, hi = at(math.floor(pos)), at(math.ceil(pos))
                cut = lo if lo == hi else (lo + hi) / 2
                if cut < v[-1]:
                    cuts.add(cut)
            edges[a] = tuple(sorted(cuts))
        return cls(bins=int(bins), edges=edges, partial=chosen is not None)

    def labels(self, attribute: str) -> tuple[str, ...]:
        """The bin labels of ``attribute`` in increasing order, e.g.
        ``("<=37.5", "(37.5,48]", ">48")``; ``("any",)`` if it has no cut point."""
        if attribute not in self.edges:
            raise DataError(
                f"the discretizer has no attribute {attribute!r}; "
                f"it was fitted on {list(self.edges)}"
            )
        e = [_number(x) for x in self.edges[attribute]]
        if not e:
            return ("any",)
        inner = [f"({lo},{hi}]" for lo, hi in itertools.pairwise(e)]
        return (f"<={e[0]}", *inner, f">{e[-1]}")

    def transform(self, table: Table) -> Table:
        """``table`` with every continuous attribute it was fitted on replaced by its nominal
        bin label; a missing value (NaN) becomes ``"?"``. Other continuous attributes are
        left as they are if the discretizer is :attr:`partial`, else refused."""
        columns = list(table.columns)
        kinds = list(table.kinds)
        for i, (a, kind) in enumerate(zip(table.attributes, table.kinds, strict=True)):
            if kind != CONTINUOUS or (self.partial and a not in self.edges):
                continue
            if a not in self.edges:
                raise DataError(
                    f"attribute {a!r} is continuous but the discretizer was not fitted on it "
                    f"(fitted on {list(self.edges)}); fit on a table with the same attributes"
                )
            x = table.columns[i]
            names = np.array([*self.labels(a), MISSING], dtype=object)
            idx = np.searchsorted(np.asarray(self.edges[a], dtype=np.float64), x, side="left")
            idx[np.isnan(x)] = len(names) - 1
            columns[i] = names[idx]
            kinds[i] = NOMINAL
        return replace(table, kinds=tuple(kinds), columns=tuple(columns))

    def to_dict(self) -> dict[str, Any]:
        """For run reports: ``{"method", "bins", "edges": {attribute: [cut, ...]}}``, and
        ``"partial": true`` if it is :attr:`partial`."""
        out: dict[str, Any] = {
            "method": "equal-frequency",
            "bins": self.bins,
            "edges": {a: list(e) for a, e in self.edges.items()},
        }
        if self.partial:
            out["partial"] = True
        return out


def _at(v: np.ndarray, w: np.ndarray | None) -> Any:
    """The value at position ``k`` of the sorted values ``v``, each repeated as its weight
    says (once each without weights)."""
    if w is None:
        return lambda k: float(v[k])
    ends = np.cumsum(w)
    return lambda k: float(v[min(int(np.searchsorted(ends, k, side="right")), len(v) - 1)])
