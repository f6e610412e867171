"""Synthetic tables labelled by a planted decision tree: any size, seeded, for tests and the
scaling benchmarks (:func:`synthetic`)."""

from __future__ import annotations

import numpy as np

from mpc.datasets.table import NOMINAL, DataError, Table

# --------------------------------------------------------------------------------------------
# Synthetic data


def _value_range(n_values: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(n_values, tuple):
        return int(n_values[0]), int(n_values[1])
    return int(n_values), int(n_values)


def synthetic(
    n_rows: int,
    *,
    n_attributes: int = 6,
    n_values: int | tuple[int, int] = 3,
    depth: int = 3,
    noise: float = 0.05,
    n_classes: int = 2,
    seed: int = 0,
) -> Table:
    """Random nominal rows labelled by a planted random decision tree.

    Attributes ``a0 .. a{n_attributes-1}`` take values ``v0 .. v{n_values-1}`` uniformly at
    random; with ``n_values = (lo, hi)`` each attribute has its own number of values, drawn
    uniformly from ``lo .. hi``. The planted tree tests a random unused attribute at every
    interior node, down to ``depth``, and gives every leaf a random class ``c0 ..
    c{n_classes-1}``. Each label is then replaced by a different class (uniformly) with
    probability ``noise``. The same arguments always give the same table
    (``numpy.random.default_rng(seed)``)."""
    checks = (
        (n_rows >= 1, f"n_rows must be at least 1, got {n_rows}"),
        (n_attributes >= 1, f"n_attributes must be at least 1, got {n_attributes}"),
        (
            2 <= _value_range(n_values)[0] <= _value_range(n_values)[1],
            f"n_values must be at least 2 (or a range lo <= hi of such), got {n_values}",
        ),
        (n_classes >= 2, f"n_classes must be at least 2, got {n_classes}"),
        (
            0 <= depth <= n_attributes,
            f"depth must be in [0, n_attributes={n_attributes}] (a path tests an attribute "
            f"at most once), got {depth}",
        ),
        (0.0 <= noise <= 1.0, f"noise must be a probability in [0, 1], got {noise}"),
    )
    for ok, message in checks:
        if not ok:
            raise DataError(f"synthetic: {message}")
    rng = np.random.default_rng(seed)
    lo, hi = _value_range(n_values)
    if lo == hi:
        sizes = np.full(n_attributes, lo)
        codes = rng.integers(0, lo, size=(n_rows, n_attributes))
    else:
        sizes = rng.integers(lo, hi + 1, size=n_attributes)
        codes = (rng.random((n_rows, n_attributes)) * sizes[None, :]).astype(np.int64)
    y = np.zeros(n_rows, dtype=np.int64)

    def grow(rows: np.ndarray, free: list[int], level: int) -> None:
        if level == depth:
            y[rows] = rng.integers(0, n_classes)
            return
        a = free[int(rng.integers(0, len(free)))]
        rest = [f for f in free if f != a]
        for v in range(int(sizes[a])):
            grow(rows[codes[rows, a] == v], rest, level + 1)

    grow(np.arange(n_rows), list(range(n_attributes)), 0)
    flip = rng.random(n_rows) < noise
    y[flip] = (y[flip] + rng.integers(1, n_classes, size=int(flip.sum()))) % n_classes
    value_names = np.array([f"v{i}" for i in range(hi)], dtype=object)
    class_names = np.array([f"c{i}" for i in range(n_classes)], dtype=object)
    params = (
        f"n_rows={n_rows}, n_attributes={n_attributes}, n_values={n_values}, depth={depth}, "
        f"noise={noise}, n_classes={n_classes}, seed={seed}"
    )
    return Table(
        name="synthetic",
        attributes=tuple(f"a{i}" for i in range(n_attributes)),
        kinds=(NOMINAL,) * n_attributes,
        columns=tuple(value_names[codes[:, i]] for i in range(n_attributes)),
        target=class_names[y],
        class_name="class",
        source=f"synthetic({params})",
    )
