"""The split criteria of the ID3 family: how a node's candidate attributes are scored from
their ``(values x classes)`` count matrices, and when two scores tie.

=================  ==========================================================================
criterion          a candidate's score (the largest wins)
=================  ==========================================================================
``entropy``        Quinlan's information gain in bits, in floating point
                   (:func:`information_gain`); gains closer than :data:`GAIN_TIE`
                   tie. The papers' criterion, and the default.
``gini``           ``Σ_v S_v / (α n_v + 1)`` with ``S_v = Σ_c n_vc²``, ``n_v = Σ_c n_vc``
                   and ``α = 8`` (:data:`GINI_ALPHA`): the weighted Gini impurity's order
                   (``1 - Σ_v S_v / (n n_v)``, smallest first), with MPyC's denominators
                   ``α n_v + 1``, which keep an empty branch's away from zero. A fraction of
                   integers, compared exactly; only equal scores tie.
``entropy-fixed``  the information gain's order with ``n log2 n`` replaced by
                   :func:`nlogn_fixed`, an integer function of the counts built from a bit
                   length and a polynomial, which additive shares can compute exactly (a bit
                   decomposition and products, no rounding): ``Σ_v (Σ_c L(n_vc) - L(n_v))``,
                   an integer; only equal scores tie.
=================  ==========================================================================

The exact criteria exist for the learners that keep the counts secret (each score is computed
on shares and only the winner is opened): integers and fractions of integers compare the
same on shares as in the clear, so the private tree is the plain learner's with the same
criterion. ``entropy-fixed`` orders the candidates as ``entropy`` does except where two gains
are within the approximation's error of each other (:data:`NLOGN_ERROR_BITS` bits of ``log2``
per row, hence at most twice that in a gain); ``scripts/criteria_report.py`` counts, on every
shared dataset, the trees where that happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from mpc.errors import ConfigError

__all__ = [
    "CRITERIA",
    "GAIN_TIE",
    "GINI_ALPHA",
    "NLOGN_ERROR_BITS",
    "NLOGN_SCALE_BITS",
    "Criterion",
    "criterion",
    "entropy",
    "entropy_fixed_score",
    "gini_score",
    "information_gain",
    "log2_fixed",
    "nlogn_fixed",
]

#: Two information gains closer than this are equal (the first attribute in order wins).
GAIN_TIE = 1e-9

#: MPyC's scale factor in the Gini denominators ``α n_v + 1``
GINI_ALPHA = 8

#: the fixed-point log's mantissa bits: counts below ``2^W`` (16,777,216 rows) are exact
NLOGN_W = 24
#: the bits of the polynomial's coefficients
NLOGN_P = 20
#: ``log2(1 + x)`` on ``[0, 1)`` as ``Σ_i a_i x^i`` (``i = 1..4``), a near-minimax fit with
#: ``p(0) = 0`` and ``p(1) = 1`` exactly (so the log is exact at powers of two and continuous
#: between them); the coefficients are ``A_i / 2^P``, the last one closing the sum to ``2^P``
_A = (1508613, -710708, 336791)
NLOGN_COEFFS = (*_A, 2**NLOGN_P - sum(_A))
#: the scale of :func:`log2_fixed`: ``2^(P + 4W)``
NLOGN_SCALE_BITS = NLOGN_P + 4 * NLOGN_W
#: the largest error of :func:`log2_fixed` against ``log2``, in bits (measured on every
#: mantissa; tests/unit/test_criteria.py checks it)
NLOGN_ERROR_BITS = 1.2e-4


def entropy(counts: np.ndarray) -> float:
    """Shannon entropy (bits) of a vector of class counts."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum())


def information_gain(joint: np.ndarray) -> float:
    """Gain of a split from its ``(values x classes)`` count matrix (ComputeInfoGain).

    ``Gain = H(T) - sum_v |T_v| / |T| * H(T_v)``. Private learners obtain the same integer
    matrix by secure counting and call this function, so their gains are bit-identical.
    """
    joint = np.asarray(joint, dtype=np.float64)
    total = joint.sum()
    if total <= 0:
        return 0.0
    rows = joint.sum(axis=1)
    remainder = sum(r / total * entropy(joint[i]) for i, r in enumerate(rows) if r > 0)
    return entropy(joint.sum(axis=0)) - remainder


def log2_fixed(n: int) -> int:
    """``2^(P + 4W) · log2(n)``, approximately, as an exact integer, for ``1 <= n < 2^W``:
    ``k = bit_length(n) - 1``, the mantissa ``t = n · 2^(W - k) - 2^W`` (an integer in
    ``[0, 2^W)``, exact), and ``k · 2^(P + 4W) + Σ_i A_i t^i 2^(W (4 - i))``. Nothing is
    rounded: on shares, ``k`` and ``2^(W - k)`` come from ``n``'s bits, the rest is products."""
    if not 1 <= n < 2**NLOGN_W:
        raise ConfigError(
            f"entropy-fixed counts must be in [1, 2^{NLOGN_W}); got {n} (a table of at most "
            f"{2**NLOGN_W - 1:,} rows)"
        )
    k = n.bit_length() - 1
    t = (n << (NLOGN_W - k)) - (1 << NLOGN_W)
    q = sum(a * t**i << (NLOGN_W * (4 - i)) for i, a in enumerate(NLOGN_COEFFS, start=1))
    return (k << NLOGN_SCALE_BITS) + q


def nlogn_fixed(n: int) -> int:
    """``L(n) = n · log2_fixed(n)``, and ``L(0) = 0``: ``n log2 n`` at scale
    ``2^(P + 4W) = 2^116``. Below ``2^24`` rows it is under ``2^145``; a score sums at most
    ``|V| (p + 1)`` of them, under ``2^155`` for up to 1,024 values times classes."""
    return 0 if n == 0 else n * log2_fixed(n)


def entropy_fixed_score(joint: np.ndarray) -> int:
    """``Σ_v (Σ_c L(n_vc) - L(n_v))`` of a ``(values x classes)`` count matrix: ``-N · H(C |
    A)`` at scale ``2^(P + 4W)``, so the largest score has the largest information gain (up to
    the approximation)."""
    counts = [[int(c) for c in row] for row in np.asarray(joint, dtype=np.int64)]
    return sum(sum(map(nlogn_fixed, row)) - nlogn_fixed(sum(row)) for row in counts)


def gini_score(joint: np.ndarray) -> Fraction:
    """``Σ_v S_v / (α n_v + 1)`` of a ``(values x classes)`` count matrix (the module's
    table): the largest score has the smallest weighted Gini impurity (with MPyC's
    denominators)."""
    counts = np.asarray(joint, dtype=np.int64)
    total = Fraction(0)
    for row in counts:
        n = int(row.sum())
        total += Fraction(int((row * row).sum()), GINI_ALPHA * n + 1)
    return total


@dataclass(frozen=True)
class Criterion:
    """A split criterion: its name, its score of a count matrix, and the tolerance within
    which two scores tie (0: only equal scores)."""

    name: str
    score: Callable[[np.ndarray], Any]
    tie: float
    doc: str


CRITERIA: dict[str, Criterion] = {
    "entropy": Criterion(
        "entropy",
        information_gain,
        GAIN_TIE,
        "information gain in bits (floating point; the papers')",
    ),
    "gini": Criterion(
        "gini", gini_score, 0.0, "weighted Gini impurity, exact fractions (MPyC's scoring)"
    ),
    "entropy-fixed": Criterion(
        "entropy-fixed",
        entropy_fixed_score,
        0.0,
        "information gain with a fixed-point n log n, exact integers (computable on shares)",
    ),
}


def criterion(name: str) -> Criterion:
    """The criterion called ``name`` (a ``ConfigError`` naming the choices otherwise)."""
    if name not in CRITERIA:
        raise ConfigError(f"criterion must be one of {list(CRITERIA)}, got {name!r}")
    return CRITERIA[name]
