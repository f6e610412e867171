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
``gini-impurity``  ``Σ_v S_v / n_v`` (``0`` for an empty branch): scikit-learn's and CART's
                   weighted Gini impurity ``Σ_v (n_v / n) (1 - Σ_c (n_vc / n_v)²)``,
                   smallest first, which is ``1 - (1/n) Σ_v S_v / n_v``; a fraction of
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
criterion. Each criterion is one class here, with its plain score and, for an exact one, its
circuit on additive shares (:class:`FractionCriterion.shared_terms`,
:class:`EntropyFixed.shared_scores`), written against the operations of a session over shares
(:class:`Shares`, which :class:`protocols.engine.session.Session` is): one entry of
:data:`CRITERIA` offers it to the plain learners, to the paper's PPID3 (its owners score their
counts with it) and, if exact, to PPID3's ``--reveal tree``.

``entropy-fixed`` orders the candidates as ``entropy`` does except where two gains
are within the approximation's error of each other (:data:`NLOGN_ERROR_BITS` bits of ``log2``
per row, hence at most twice that in a gain); ``scripts/criteria_report.py`` counts, on every
shared dataset, the trees where that happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from mpc.errors import ConfigError
from mpc.runtime.expect import Expect, integer, list_of, real

__all__ = [
    "CRITERIA",
    "GAIN_TIE",
    "GINI_ALPHA",
    "NLOGN_ERROR_BITS",
    "NLOGN_SCALE_BITS",
    "Criterion",
    "EntropyFixed",
    "FractionCriterion",
    "Gini",
    "GiniImpurity",
    "InformationGain",
    "Shares",
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


def _entropies(counts: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """:func:`entropy` of every row of ``counts`` (``(n, classes)``) with its sum
    ``totals``: the same terms in the same order, a zero count's term ``0.0``."""
    out = np.zeros(len(counts))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = counts / totals[:, None]
        terms = np.where(counts > 0, p * np.log2(np.where(counts > 0, p, 1.0)), 0.0)
    for c in range(counts.shape[1]):
        out = out + terms[:, c]
    return np.where(totals > 0, -out, 0.0)


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


class SharedRing(Protocol):
    """What a criterion's circuit needs of a ring of shares
    (:class:`protocols.engine.ring.Ring`)."""

    @property
    def bits(self) -> int: ...

    def array(self, values: Any) -> Any: ...

    def reduce(self, x: Any) -> Any: ...

    def zeros(self, shape: Any) -> Any: ...


class Shares(Protocol):
    """What a criterion's circuit needs of a session over additive shares of two parties
    (:class:`protocols.engine.session.Session`): which of the two this is, shares of public
    constants, and the session's circuits (products, the sign, the bits of a sum, their
    prefix or, bits to the ring), each under a tag of the circuit's choosing."""

    @property
    def role(self) -> int: ...

    def const(self, value: int, shape: Any, ring: Any = None) -> Any: ...

    async def mul(self, x: Any, y: Any, tag: str, ring: Any = None) -> Any: ...

    async def ltz(self, x: Any, tag: str, ring: Any = None) -> Any: ...

    async def sum_bits(self, bits: Any, tag: str, ring: Any) -> tuple[Any, Any]: ...

    async def prefix_or(self, bits: Any, tag: str, ring: Any) -> Any: ...

    async def bit_to_ring(self, bits: Any, tag: str, ring: Any) -> Any: ...


class Criterion:
    """A split criterion: its name, its score of a ``(values x classes)`` count matrix (the
    largest wins), and the tolerance within which two scores tie (0: only equal scores).
    ``on_shares`` says whether PPID3's ``--reveal tree`` computes it on additive shares."""

    name: str = ""
    doc: str = ""
    tie: float = 0.0
    on_shares: bool = False

    def score(self, joint: np.ndarray) -> Any:
        raise NotImplementedError

    def scores(self, joints: np.ndarray) -> list[Any]:
        """:meth:`score` of each of a stack of count tables (``(n, values, classes)``), as
        a learner scores the many thresholds of one attribute; the same values."""
        return [self.score(j) for j in joints]

    def score_in_any_class_order(self, joint: np.ndarray) -> Any:
        """The score of a count matrix whose class columns come in an order the scorer does
        not know (the paper's owners: the class site permutes them per node): the classes
        sorted first, so that every order gives the same score (an exact criterion's is the
        same anyway; a floating-point one's rounding is not)."""
        m = np.asarray(joint)
        if m.ndim == 2 and m.shape[1] > 1:
            m = m[:, np.lexsort(m[::-1])]
        return self.score(m)

    def to_wire(self, score: Any) -> Any:
        """A score as a message carries it (an owner's best score to the class site)."""
        return float(score)

    def from_wire(self, value: Any) -> Any:
        """The inverse of :meth:`to_wire`."""
        return value

    def wire_form(self) -> Expect:
        """The form :meth:`to_wire` gives, to check a message against."""
        return real()


class InformationGain(Criterion):
    """Quinlan's information gain in bits (the module's table)."""

    name = "entropy"
    doc = "information gain in bits (floating point; the papers')"
    tie = GAIN_TIE

    def score(self, joint: np.ndarray) -> float:
        return information_gain(joint)

    def scores(self, joints: np.ndarray) -> list[Any]:
        """:func:`information_gain` of every table at once, bit for bit: the same terms
        summed in the same order (a zero count's term, and an empty row's, are left out of
        :func:`entropy` and the remainder, and adding ``0.0`` in their place changes no
        bit; below 8 classes, where numpy sums a row in order)."""
        j = np.asarray(joints, dtype=np.float64)
        if j.ndim != 3 or not len(j) or j.shape[2] >= 8:  # numpy sums 8 and more by pairs
            return [self.score(x) for x in j]
        total = j.sum(axis=(1, 2))
        rows = j.sum(axis=2)
        gains = _entropies(j.sum(axis=1), total)
        remainder = np.zeros(len(j))
        with np.errstate(divide="ignore", invalid="ignore"):
            for v in range(j.shape[1]):
                term = rows[:, v] / total * _entropies(j[:, v, :], rows[:, v])
                remainder = remainder + np.where(rows[:, v] > 0, term, 0.0)
        out = gains - remainder
        return [0.0 if t <= 0 else float(g) for g, t in zip(out, total, strict=True)]


class FractionCriterion(Criterion):
    """A score ``Σ_v num_v / den_v``, each term an integer function of one value's class
    counts (:meth:`term`), compared exactly. On shares (:meth:`shared_terms`) the terms are
    computed from the shares of the counts; the sums of the fractions and their argmax are
    the engine's, in rings sized by :meth:`fraction_bounds`."""

    on_shares = True

    def term(self, row: Sequence[int]) -> tuple[int, int]:
        raise NotImplementedError

    def score(self, joint: np.ndarray) -> Fraction:
        total = Fraction(0)
        for row in np.asarray(joint, dtype=np.int64):
            num, den = self.term([int(x) for x in row])
            total += Fraction(num, den)
        return total

    def scores(self, joints: np.ndarray) -> list[Any]:
        """:meth:`score` of each of a stack of count tables, the same fractions: for the
        two-row tables of thresholds, each sum of two terms as one fraction,
        ``(a d + c b) / (b d)``, made from 64-bit integers where they cannot overflow (one
        normalisation per table, not four operations on fractions)."""
        j = np.asarray(joints, dtype=np.int64)
        if j.ndim != 3 or j.shape[1] != 2 or not len(j) or j.sum(axis=(1, 2)).max() >= 2**20:
            return [self.score(x) for x in j]
        terms = [self.term_arrays(j[:, v, :]) for v in (0, 1)]
        (a, b), (c, d) = terms
        num, den = a * d + c * b, b * d
        return [Fraction(int(x), int(y)) for x, y in zip(num.tolist(), den.tolist(), strict=True)]

    def term_arrays(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`term` of every row of ``rows`` (``n x classes``, ``int64``): numerators and
        denominators as ``int64`` arrays (counts below ``2^20``, so no product overflows)."""
        out = [self.term([int(x) for x in row]) for row in rows]
        return (np.asarray([t[0] for t in out], dtype=np.int64),
                np.asarray([t[1] for t in out], dtype=np.int64))  # fmt: skip

    def fraction_bounds(self, rows: int, values: int) -> tuple[int, int]:
        """The bits of the largest numerator and denominator of a score summed over at most
        ``values`` branches whose counts add up to at most ``rows``."""
        raise NotImplementedError

    async def shared_terms(self, s: Shares, counts: Any, ring: SharedRing) -> tuple[Any, Any]:
        """Shares of each term's numerator and denominator from the shares of the counts
        (``candidates x values x classes``, in ``ring``, ``Z_{2^64}``; a shorter domain
        padded with zero rows, whose term must be ``0 / 1``)."""
        raise NotImplementedError

    def to_wire(self, score: Any) -> Any:
        return [score.numerator, score.denominator]

    def from_wire(self, value: Any) -> Any:
        return Fraction(int(value[0]), int(value[1]))

    def wire_form(self) -> Expect:
        return list_of(integer(), 2)


class Gini(FractionCriterion):
    """``Σ_v S_v / (α n_v + 1)`` (the module's table), MPyC's ``GI``."""

    name = "gini"
    doc = "weighted Gini impurity, exact fractions (MPyC's scoring)"

    def term(self, row: Sequence[int]) -> tuple[int, int]:
        return sum(c * c for c in row), GINI_ALPHA * sum(row) + 1

    def term_arrays(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (rows * rows).sum(axis=1), GINI_ALPHA * rows.sum(axis=1) + 1

    def fraction_bounds(self, rows: int, values: int) -> tuple[int, int]:
        """``den = Π_v (8 n_v + 1) <= D = ⌈(8 rows + |V|) / |V|⌉^|V|`` (a product of numbers
        of a fixed sum is largest when they are equal) and ``num = den Σ_v S_v / (8 n_v + 1)
        <= D rows / 8``."""
        v = max(1, values)
        d = (-(-(GINI_ALPHA * rows + v) // v)) ** v
        return (d * max(1, rows)).bit_length(), d.bit_length()

    async def shared_terms(self, s: Shares, counts: Any, ring: SharedRing) -> tuple[Any, Any]:
        """``S_v = Σ_c n_vc²`` by one round of products, ``8 n_v + 1`` locally; counts below
        ``2^32`` keep both exact in ``Z_{2^64}``."""
        c, v, _ = counts.shape
        squares = await s.mul(counts, counts, "sq", ring)
        num = squares.sum(axis=2, dtype=np.uint64)
        den = np.uint64(GINI_ALPHA) * counts.sum(axis=2, dtype=np.uint64) + s.const(1, (c, v), ring)
        return num, den


class GiniImpurity(FractionCriterion):
    """``Σ_v S_v / n_v``, an empty branch's term ``0 / 1`` (the module's table): the weighted
    Gini impurity as scikit-learn's ``DecisionTreeClassifier(criterion="gini")`` and CART
    define it, the order of ``1 - Σ_v (n_v / n) Σ_c (n_vc / n_v)²``."""

    name = "gini-impurity"
    doc = "weighted Gini impurity as CART and scikit-learn define it, exact fractions"

    def term(self, row: Sequence[int]) -> tuple[int, int]:
        n = sum(row)
        return sum(c * c for c in row), max(n, 1)

    def term_arrays(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (rows * rows).sum(axis=1), np.maximum(rows.sum(axis=1), 1)

    def fraction_bounds(self, rows: int, values: int) -> tuple[int, int]:
        """``den = Π_v max(n_v, 1) <= Π_v (n_v + 1) <= D = ⌈(rows + |V|) / |V|⌉^|V|`` and
        ``num = den Σ_v S_v / n_v <= D rows`` (each term is at most its ``n_v``)."""
        v = max(1, values)
        d = (-(-(rows + v) // v)) ** v
        return (d * max(1, rows)).bit_length(), d.bit_length()

    async def shared_terms(self, s: Shares, counts: Any, ring: SharedRing) -> tuple[Any, Any]:
        """``S_v = Σ_c n_vc²`` by one round of products; ``n_v + [n_v = 0]``, the emptiness
        by the sign of ``n_v - 1`` (one comparison per value)."""
        c, v, _ = counts.shape
        squares = await s.mul(counts, counts, "sq", ring)
        num = squares.sum(axis=2, dtype=np.uint64)
        n = counts.sum(axis=2, dtype=np.uint64).reshape(-1)
        empty = await s.ltz(ring.reduce(n - s.const(1, c * v, ring)), "empty", ring)
        return num, ring.reduce(n + empty).reshape(c, v)


class EntropyFixed(Criterion):
    """``Σ_v (Σ_c L(n_vc) - L(n_v))`` with ``L`` = :func:`nlogn_fixed` (the module's table): on
    shares (:meth:`shared_scores`) every ``L`` is computed exactly from the bits of the
    count, so the argmax opens to the plain learner's split."""

    name = "entropy-fixed"
    doc = "information gain with a fixed-point n log n, exact integers (computable on shares)"
    on_shares = True

    def score(self, joint: np.ndarray) -> int:
        return entropy_fixed_score(joint)

    def to_wire(self, score: Any) -> Any:
        return int(score)

    def wire_form(self) -> Expect:
        return integer()

    #: the bits of ``L(n)`` below ``2^W`` rows: ``n < 2^24`` times ``log2_fixed(n) < 24 ·
    #: 2^116 + 2^116``
    L_BITS = NLOGN_W + NLOGN_SCALE_BITS + 5

    def score_bits(self, terms: int) -> int:
        """The bits of a ring that holds every score summing at most ``terms`` values of
        ``L`` (``|V| (p + 1)`` of the widest candidate), every difference of two and a pad
        below them, signed."""
        return self.L_BITS + max(1, terms).bit_length() + 3

    async def shared_nlogn(self, s: Shares, x: Any, tag: str, ring: SharedRing) -> Any:
        """Shares in ``ring`` of ``L(n)`` for each count ``n < 2^W`` whose ``Z_{2^64}`` shares
        (``uint64``) this party holds in ``x``:

        1. each party's share mod ``2^W`` as its own bits; the bits of their sum and its carry
           out by a prefix adder: XOR shares of ``n``'s bits;
        2. ``o_i`` = some bit at ``i`` or above is one (a prefix or), ``e_i = o_i ⊕
           o_{i+1}``: the one-hot position ``k`` of ``n``'s top bit (all zero for ``0``);
        3. ``e_i`` and the carry as shares in the ring; ``n = x_0 + x_1 - 2^W carry``, ``k =
           Σ i e_i`` and ``2^{W-k} = Σ 2^{W-i} e_i``, all local;
        4. ``t = n 2^{W-k} - 2^W``, ``t²``, ``t³``, ``t⁴`` (three rounds of products) and
           ``log2_fixed(n) = k 2^{P+4W} + Σ_i A_i t^i 2^{W(4-i)}`` (local), as
           :func:`log2_fixed` does in the clear;
        5. ``L(n) = n · log2_fixed(n)`` (one product): ``0`` when ``n = 0``, whatever the rest.

        Sixteen rounds for any number of counts, nothing rounded."""
        w = NLOGN_W
        m = x.size
        low = np.asarray(x, dtype=np.uint64) & np.uint64((1 << w) - 1)
        own = ((low[:, None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
        bits, carry = await s.sum_bits(own, f"{tag}/add", ring)
        o = await s.prefix_or(bits, f"{tag}/top", ring)
        e = o ^ np.concatenate([o[:, 1:], np.zeros_like(o[:, :1])], axis=1)
        arith = await s.bit_to_ring(np.concatenate([e.reshape(-1), carry]), f"{tag}/b2a", ring)
        e_r, c_r = arith[: m * w].reshape(m, w), arith[m * w :]
        n = ring.reduce(ring.array(low) - (c_r << w))
        k = ring.reduce((e_r * ring.array(np.arange(w))).sum(axis=1))
        scale = ring.array(np.asarray([1 << (w - i) for i in range(w)], dtype=object))
        power = ring.reduce((e_r * scale).sum(axis=1))
        t = ring.reduce(await s.mul(n, power, f"{tag}/t", ring) - s.const(1 << w, m, ring))
        t2 = await s.mul(t, t, f"{tag}/t2", ring)
        t34 = await s.mul(np.concatenate([t2, t2]), np.concatenate([t, t2]), f"{tag}/t34", ring)
        t3, t4 = t34[:m], t34[m:]
        a1, a2, a3, a4 = NLOGN_COEFFS
        q = a1 * (t << (3 * w)) + a2 * (t2 << (2 * w)) + a3 * (t3 << w) + a4 * t4
        log = ring.reduce((k << NLOGN_SCALE_BITS) + q)
        return await s.mul(n, log, f"{tag}/L", ring)

    async def shared_scores(
        self, s: Shares, counts: Any, lengths: Sequence[int], tag: str, ring: SharedRing
    ) -> Any:
        """Shares (``ring``) of each candidate's score from the ``Z_{2^64}`` shares of its
        counts, the candidates' ``(value, class)`` rows laid end to end (``lengths[c]`` rows
        each, ``p`` columns)."""
        m, p = counts.shape
        totals = counts.sum(axis=1, dtype=np.uint64)
        values = np.concatenate([counts.reshape(-1), totals])
        ell = await self.shared_nlogn(s, values, tag, ring)
        terms = ell[: m * p].reshape(m, p).sum(axis=1) - ell[m * p :]
        ends = np.cumsum(lengths)
        out = ring.zeros(len(lengths))
        for c, (start, end) in enumerate(zip(ends - np.asarray(lengths), ends, strict=True)):
            out[c] = terms[start:end].sum()
        return ring.reduce(out)


#: every criterion, by name: the plain learners', the paper's PPID3's, and (``on_shares``)
#: ``--reveal tree``'s
CRITERIA: dict[str, Criterion] = {
    c.name: c for c in (InformationGain(), Gini(), GiniImpurity(), EntropyFixed())
}


def criterion(name: str) -> Criterion:
    """The criterion called ``name`` (a ``ConfigError`` naming the choices otherwise)."""
    if name not in CRITERIA:
        raise ConfigError(f"criterion must be one of {list(CRITERIA)}, got {name!r}")
    return CRITERIA[name]
