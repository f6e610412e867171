"""Multi-group randomized response (MRR) — Teng & Du, *A Hybrid Multi-Group Privacy-Preserving
Approach for Building Decision Trees*, Section 4 ("Data Disguise", "Estimating N(E)",
Theorems 1 and 2), the randomization half of Hybrid-ID3 (Section 3.1).

Roles: a *data owner* (Alice or Bob) disguises its own attributes and sends the disguised table
``D̂`` to the other party, the *estimator*, which estimates ``N(E)`` for conjunctions ``E``
from ``D̂`` (and, for the conditions on its own attributes, from its own true data).

* Owner's input: its columns (attribute → values), the public domains, the public grouping of
  its attributes and the public truth probability ``θ``. Output: ``D̂``, which it sends.
* Estimator's input: ``D̂``, the grouping, ``θ``, a conjunction ``E``. Output: an unbiased
  estimate of ``P(E)`` (or ``N(E) = n P(E)``). Estimation is local: no message is exchanged.

What is revealed, and to whom:

* ``D̂`` is given to the other party (the protocol that sends it records it in the ledger).
  Per record and group it equals the truth with probability ``θ`` and the bitwise opposite
  with probability ``1 - θ``; the receiver also learns ``n`` and the record order (the rows are
  aligned with the other party's by the common transaction ids of the vertical partition).
* Public: ``θ``, the grouping, the attributes, their domains and the bit layout
  (:class:`BitLayout`). Nothing else leaves the owner; the coin flips stay with it, and so
  does whatever seeds them: the coins come from the owner's OS CSPRNG, or, for a
  reproducible experiment, from a seed that the owner alone holds.
* ``θ = 1`` sends the true data and ``θ = 0`` its exact complement: both reveal everything.
  ``θ = 0.5`` reveals nothing about a record but makes estimation impossible (Theorem 2).
* Attributes of one group share their coin: whoever learns one of them in a record learns
  whether the record's group was flipped, hence the others (Section 4's privacy trade-off).
* The bitwise opposite of a valid code word need not be a valid code word. Where it is not,
  the receiver sees that the group was flipped and undoes it. :attr:`BitLayout.flip_revealing`
  lists the attributes for which this happens (see *Binary encoding* below).

Binary encoding (the paper assumes binary attributes and does not say how nominal ones are
encoded). :func:`binary_encode` offers two codes:

* ``"onehot"`` (the default): one bit per (attribute, value), so ``A = v`` is the single bit
  condition ``bit(A, v) = 1`` and its opposite ``bit(A, v) = 0``. A true record has exactly one
  1 per attribute; a flipped one has ``k - 1``. For ``k >= 3`` values a flip is visible, so
  one-hot is safe only for two-valued attributes.
* ``"paired"``: ``max(1, ⌈log2 k⌉)`` bits per attribute, with the values taken in pairs whose
  code words are bitwise complements; ``A = v`` is the condition "the attribute's bits equal
  the word of ``v``". A flip turns a value into its partner, so for an even ``k`` every
  disguised word is a valid value and flips are invisible; for an odd ``k`` the last value
  has no partner and reveals its flips.

Estimation (Theorem 1). With ``E = e_1 ∧ … ∧ e_m`` split by group, the ``2^m`` variations
``E_j = f_1 ∧ … ∧ f_m`` take ``f_k = ē_k`` (the bitwise opposite) where bit ``k`` of ``j`` is
1, so ``E_0 = E``. With ``A(i, j) = P(E_i → E_j) = θ^u (1-θ)^(m-u)``, ``u`` the common bits of
``i`` and ``j``, the disguised frequencies satisfy ``P* = A P``; :func:`estimate_probability`
solves this system. Theorem 2: ``A`` is invertible iff ``θ ≠ 0.5``.

The ``O(m)`` method (stated, not given, by the paper): ``A`` is the ``m``-fold Kronecker
product of the one-group matrix ``[[θ, 1-θ], [1-θ, θ]]``, so the row of ``A⁻¹`` that gives
``P(E_0)`` factorises, and ``P(E)`` is the mean over records of the per-record weight
``∏_k (θ [e_k] - (1-θ) [ē_k]) / (2θ - 1)`` with ``[e_k]`` the disguised record's match of the
sub-pattern. Each weight is unbiased for that record's true indicator of ``E`` (the coins are
independent of the data), so multiplying by exact conditions the estimator holds in clear
(e.g. ``class = C``) stays unbiased: this is ``masks`` in :func:`estimate_counts`.
Estimates are unbiased, not clipped: they may be negative or exceed ``n``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mpc.crypto import randomness
from mpc.errors import ConfigError

__all__ = [
    "CODES",
    "THETA_SINGULAR_TOLERANCE",
    "BitColumn",
    "BitLayout",
    "binary_encode",
    "disguise",
    "estimate_counts",
    "estimate_probability",
    "estimate_probability_fast",
    "unbiased_weights",
]

#: the binary codes :func:`binary_encode` knows (see the module docstring)
CODES = ("onehot", "paired")

#: ``|2θ - 1|`` below this counts as ``θ = 0.5``: ``det A = (2θ - 1)^(m 2^(m-1))`` and the
#: estimator's weights grow like ``(2θ - 1)^(-m)``, so closer to 0.5 nothing useful is left
THETA_SINGULAR_TOLERANCE = 1e-9

Bits = npt.NDArray[np.uint8]
Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


# ----------------------------------------------------------------------------- encoding


class BitColumn(NamedTuple):
    """What one bit column encodes: ``label`` is the value (``"onehot"``) or the position of
    the bit in the attribute's code word, 0 = most significant (``"paired"``)."""

    attribute: str
    label: Hashable


@dataclass(frozen=True, eq=False)
class BitLayout:
    """The public bit layout of an owner's attributes (built by :func:`binary_encode`).

    ``columns[j]`` says what bit column ``j`` encodes; ``words(a)`` is the ``k x b`` matrix of
    code words of attribute ``a`` (row ``i`` encodes ``domains[a][i]``)."""

    code: str
    attributes: tuple[str, ...]
    domains: Mapping[str, tuple[Hashable, ...]]
    columns: tuple[BitColumn, ...]
    _offsets: Mapping[str, int]
    _words: Mapping[str, Bits]

    @property
    def n_bits(self) -> int:
        return len(self.columns)

    def words(self, attribute: str) -> Bits:
        return self._words[self._known(attribute)].copy()

    def bits_of(self, attribute: str) -> list[int]:
        """The bit columns of ``attribute``."""
        a = self._known(attribute)
        start = self._offsets[a]
        return list(range(start, start + self._words[a].shape[1]))

    def groups(self, attribute_groups: Sequence[Sequence[str]]) -> list[list[int]]:
        """Bit-column groups for :func:`disguise` from groups of attributes."""
        return [[j for a in group for j in self.bits_of(a)] for group in attribute_groups]

    def conjunction(self, condition: Mapping[str, Hashable]) -> dict[int, int]:
        """The bit conditions of ``A_1 = v_1 ∧ A_2 = v_2 ∧ …`` (one value per attribute)."""
        bits: dict[int, int] = {}
        for attribute, value in condition.items():
            a = self._known(attribute)
            try:
                i = self.domains[a].index(value)
            except ValueError:
                raise ConfigError(
                    f"value {value!r} is not in the domain of attribute {a!r} "
                    f"{list(self.domains[a])}"
                ) from None
            start = self._offsets[a]
            if self.code == "onehot":  # a true record has exactly one 1: bit (a, v) decides
                bits[start + i] = 1
            else:
                bits.update({start + b: int(x) for b, x in enumerate(self._words[a][i])})
        return bits

    @property
    def flip_revealing(self) -> tuple[str, ...]:
        """Attributes whose code words are not closed under the bitwise opposite: in a record
        where such an attribute's group was flipped, the receiver may see an invalid word,
        learn that it was flipped and undo it (for the whole group)."""
        out = []
        for a in self.attributes:
            words = {tuple(w) for w in self._words[a].tolist()}
            if any(tuple(1 - x for x in w) not in words for w in words):
                out.append(a)
        return tuple(out)

    def _known(self, attribute: str) -> str:
        if attribute not in self._offsets:
            raise ConfigError(
                f"unknown attribute {attribute!r}; this layout encodes {list(self.attributes)}"
            )
        return attribute

    def __repr__(self) -> str:
        return f"BitLayout(code={self.code!r}, attributes={self.attributes}, bits={self.n_bits})"


def _code_words(k: int, code: str) -> Bits:
    if code == "onehot":
        return np.eye(k, dtype=np.uint8)
    b = max(1, math.ceil(math.log2(k)))
    top = (1 << b) - 1
    # value 2j gets word j (leading bit 0), value 2j + 1 its complement
    ints = [i // 2 if i % 2 == 0 else top - i // 2 for i in range(k)]
    return np.array([[(x >> (b - 1 - s)) & 1 for s in range(b)] for x in ints], dtype=np.uint8)


def binary_encode(
    columns: Mapping[str, Any],
    domains: Mapping[str, Sequence[Hashable]],
    *,
    code: str = "onehot",
) -> tuple[Bits, BitLayout]:
    """Binary-encode nominal columns (attribute → values, in the layout's order) over their
    public domains. Returns the ``(n x bits)`` ``uint8`` matrix and its :class:`BitLayout`,
    whose ``columns`` maps every bit column to ``(attribute, value or code-bit position)``.

    ``code`` is ``"onehot"`` or ``"paired"``; see the module docstring for which of them lets
    the receiver see flips (:attr:`BitLayout.flip_revealing`)."""
    if code not in CODES:
        raise ConfigError(f"code must be one of {list(CODES)}, got {code!r}")
    if not columns:
        raise ConfigError("binary_encode needs at least one column, got none")
    n: int | None = None
    blocks: list[Bits] = []
    layout_columns: list[BitColumn] = []
    offsets: dict[str, int] = {}
    words_of: dict[str, Bits] = {}
    domains_of: dict[str, tuple[Hashable, ...]] = {}
    for attribute, values in columns.items():
        if attribute not in domains:
            raise ConfigError(f"attribute {attribute!r} has no domain; pass it in domains")
        domain = tuple(domains[attribute])
        index = {v: i for i, v in enumerate(domain)}
        if not domain or len(index) != len(domain):
            raise ConfigError(
                f"the domain of {attribute!r} must be non-empty with distinct values, "
                f"got {list(domain)}"
            )
        column = np.asarray(values, dtype=object)
        if column.ndim != 1 or (n is not None and column.shape[0] != n):
            raise ConfigError(
                f"column {attribute!r} must be 1-D with {n} values like the first column, "
                f"got shape {column.shape}"
            )
        n = column.shape[0]
        try:
            codes = np.fromiter((index[v] for v in column), dtype=np.intp, count=n)
        except (KeyError, TypeError):
            bad = next(i for i, v in enumerate(column) if not _in(v, index))
            raise ConfigError(
                f"column {attribute!r}, row {bad}: value {column[bad]!r} is not in its domain "
                f"{list(domain)}"
            ) from None
        words = _code_words(len(domain), code)
        offsets[attribute] = sum(block.shape[1] for block in blocks)
        words_of[attribute] = words
        domains_of[attribute] = domain
        blocks.append(words[codes])
        if code == "onehot":
            layout_columns += [BitColumn(attribute, v) for v in domain]
        else:
            layout_columns += [BitColumn(attribute, s) for s in range(words.shape[1])]
    layout = BitLayout(
        code=code,
        attributes=tuple(columns),
        domains=domains_of,
        columns=tuple(layout_columns),
        _offsets=offsets,
        _words=words_of,
    )
    return np.ascontiguousarray(np.hstack(blocks), dtype=np.uint8), layout


def _in(value: Any, index: Mapping[Hashable, int]) -> bool:
    try:
        return value in index
    except TypeError:  # unhashable
        return False


# ----------------------------------------------------------------------------- disguise


def disguise(
    bits: Any,
    groups: Sequence[Sequence[int]],
    theta: float,
    rng: int | np.random.Generator | None = None,
) -> Bits:
    """Data disguise (Section 4): per record and group one coin with ``P(truth) = θ``; on
    truth every bit of the group is kept, otherwise every bit of the group is flipped.

    ``groups`` are disjoint lists of bit columns covering every column (a bit outside all
    groups would leave undisguised). ``rng`` ``None`` draws the coins straight from the OS
    CSPRNG (``secrets``): a statistical generator's state can be recovered from its outputs,
    and a receiver who knows some true records knows their coins. An ``int`` seed or a numpy
    ``Generator`` makes the coins reproducible, for experiments only, and must be the owner's
    alone: whoever knows the seed rebuilds the coins and undoes the disguise, so never pass a
    seed that the receiver can see or derive (a public or shared seed, one in a shared file).
    Returns a new ``uint8`` matrix."""
    X = _as_bits(bits, "bits")
    theta = _check_theta(theta, estimating=False)
    group_of = _group_index(groups, X.shape[1])
    n, g = X.shape[0], len(groups)
    truth = _coins(n * g, theta, rng).reshape(n, g)
    flip = ~truth[:, group_of]
    return X ^ flip.astype(np.uint8)


def _coins(count: int, theta: float, rng: int | np.random.Generator | None) -> Bools:
    """``count`` independent Bernoulli(θ) draws."""
    if rng is None:
        # 53-bit uniforms from the OS; u < θ 2^53 has probability θ up to 2^-53 (exactly
        # 0 and 1 at θ = 0 and θ = 1)
        u = np.frombuffer(randomness.token_bytes(8 * count, "rr/coins"), dtype="<u8") >> np.uint64(
            11
        )
        return np.asarray(u.astype(np.float64) < theta * 2.0**53)
    if isinstance(rng, np.random.Generator):
        generator = rng
    elif isinstance(rng, numbers.Integral) and not isinstance(rng, bool) and int(rng) >= 0:
        generator = np.random.default_rng(int(rng))
    else:
        raise ConfigError(
            f"rng must be None (OS randomness), a non-negative int seed or a "
            f"numpy.random.Generator, got {rng!r}"
        )
    return np.asarray(generator.random(count) < theta)


# ----------------------------------------------------------------------------- estimation


def estimate_probability(
    disguised: Any,
    conjunction: Mapping[int, int],
    groups: Sequence[Sequence[int]],
    theta: float,
) -> float:
    """``P(E)`` by solving the ``2^m x 2^m`` system ``P* = A P`` of Theorem 1, where ``m`` is
    the number of groups ``E`` touches. ``conjunction`` maps bit columns to required bits
    (:meth:`BitLayout.conjunction` builds it from ``attribute = value`` pairs).
    Cost ``O(2^m n + 8^m)``; :func:`estimate_probability_fast` gives the same value in
    ``O(m n)``."""
    X, parts, theta = _prepare(disguised, conjunction, groups, theta)
    ones = np.ones(X.shape[0], dtype=np.float64)
    return _theorem1_count(X, parts, theta, ones) / X.shape[0]


def estimate_probability_fast(
    disguised: Any,
    conjunction: Mapping[int, int],
    groups: Sequence[Sequence[int]],
    theta: float,
) -> float:
    """``P(E)`` by the ``O(m)`` method: the mean of :func:`unbiased_weights` (the first row of
    ``A⁻¹``, which factorises over the ``m`` groups; see the module docstring). Equal to
    :func:`estimate_probability` up to rounding."""
    return float(unbiased_weights(disguised, conjunction, groups, theta).mean())


def unbiased_weights(
    disguised: Any,
    conjunction: Mapping[int, int],
    groups: Sequence[Sequence[int]],
    theta: float,
) -> Floats:
    """Per-record weights ``∏_k (θ [e_k] - (1-θ) [ē_k]) / (2θ - 1)``; the expectation of a
    record's weight over the coins is 1 if the record's true data satisfies ``E``, else 0."""
    X, parts, theta = _prepare(disguised, conjunction, groups, theta)
    return _weights(X, parts, theta, {})


def estimate_counts(
    disguised: Any,
    conjunctions: Sequence[Mapping[int, int]],
    groups: Sequence[Sequence[int]],
    theta: float,
    *,
    masks: Any = None,
    method: str = "fast",
) -> Floats:
    """Estimated ``N(E)`` for many conjunctions at once (e.g. ``E ∧ A = v`` for every value
    ``v`` of a disguised attribute at a tree node).

    ``masks`` are exact 0/1 conditions the estimator holds in clear, one row per condition
    (e.g. ``class = C`` for every class): the result is then ``N(E_i ∧ mask_j)`` as a
    ``(conjunctions x masks)`` matrix; a single 1-D mask or no mask gives a vector.
    ``method`` is ``"fast"`` (the ``O(m)`` weights; sub-pattern factors are shared between
    the conjunctions) or ``"exact"`` (Theorem 1's system, per conjunction and mask)."""
    X = _as_bits(disguised, "disguised")
    theta = _check_theta(theta, estimating=True)
    group_of = _group_index(groups, X.shape[1])
    n = X.shape[0]
    if method not in ("fast", "exact"):
        raise ConfigError(f"method must be 'fast' or 'exact', got {method!r}")
    if isinstance(conjunctions, Mapping) or not isinstance(conjunctions, Sequence):
        raise ConfigError(
            "conjunctions must be a sequence of conjunctions (bit column → bit), got "
            f"{type(conjunctions).__name__}"
        )
    M = _masks(masks, n)
    parts = [_split(c, group_of, X.shape[1]) for c in conjunctions]
    if method == "fast":
        counts = _weighted_counts(X, parts, theta, M.astype(bool))
    else:
        counts = np.array(
            [[_theorem1_count(X, p, theta, mask) for mask in M] for p in parts],
            dtype=np.float64,
        ).reshape(len(parts), M.shape[0])
    if masks is None or np.ndim(masks) == 1:
        return np.asarray(counts[:, 0], dtype=np.float64)
    return np.asarray(counts, dtype=np.float64)


# ----------------------------------------------------------------------------- the math

#: one group's sub-pattern ``e_k``: its bit columns and the bits they must have
_Part = tuple[npt.NDArray[np.intp], Bits]


def _match(X: Bits, part: _Part) -> tuple[Bools, Bools]:
    """``[e_k]`` and ``[ē_k]`` for every disguised record."""
    cols, req = part
    sub = X[:, cols]
    return (sub == req).all(axis=1), (sub != req).all(axis=1)


def _weights(X: Bits, parts: list[_Part], theta: float, cache: dict[bytes, Floats]) -> Floats:
    w = np.ones(X.shape[0], dtype=np.float64)
    for part in parts:
        key = part[0].tobytes() + b"|" + part[1].tobytes()
        factor = cache.get(key)
        if factor is None:
            sat, opp = _match(X, part)
            factor = (theta * sat - (1.0 - theta) * opp) / (2.0 * theta - 1.0)
            cache[key] = factor
        w *= factor
    return w


def _weighted_counts(
    X: Bits, conjunctions: list[list[_Part]], theta: float, masks: Bools
) -> Floats:
    """``Σ_r w_r [mask_j]`` for every conjunction and mask, from integer counts only.

    A record's weight (:func:`_weights`) is 0 unless it matches or opposes every group of the
    conjunction, and then ``a^s b^(m-s)`` with ``s`` the groups it matches,
    ``a = θ / (2θ - 1)`` and ``b = -(1 - θ) / (2θ - 1)``. So the sum is ``Σ_s C_s a^s
    b^(m-s)`` with ``C_s`` the number of masked records with ``s`` matching groups: it
    depends on the records only through these counts, never on their order (a sum of
    floats record by record would, in its last bits)."""
    a = theta / (2.0 * theta - 1.0)
    b = -(1.0 - theta) / (2.0 * theta - 1.0)
    n = X.shape[0]
    cache: dict[bytes, tuple[Bools, Bools]] = {}
    out = np.empty((len(conjunctions), masks.shape[0]), dtype=np.float64)
    for i, parts in enumerate(conjunctions):
        m = len(parts)
        matched = np.zeros(n, dtype=np.int64)
        valid = np.ones(n, dtype=bool)
        for part in parts:
            key = part[0].tobytes() + b"|" + part[1].tobytes()
            got = cache.get(key)
            if got is None:
                got = cache[key] = _match(X, part)
            sat, opp = got
            matched += sat
            valid &= sat | opp
        s = np.arange(m + 1)
        w = a**s * b ** (m - s)
        for j, mask in enumerate(masks):
            C = np.bincount(matched[valid & mask], minlength=m + 1)
            out[i, j] = float(C @ w)
    return out


def _theorem1_count(X: Bits, parts: list[_Part], theta: float, mask: Floats) -> float:
    """``N(E ∧ mask)``: ``N*(E_j)`` counted on the masked records, then ``A N = N*`` solved
    for ``N(E_0)``."""
    m = len(parts)
    j = np.arange(2**m)
    matches = np.ones((2**m, X.shape[0]), dtype=bool)
    for k, part in enumerate(parts):
        sat, opp = _match(X, part)
        opposite = ((j >> k) & 1).astype(bool)[:, None]  # f_k = ē_k in E_j
        matches &= np.where(opposite, opp[None, :], sat[None, :])
    n_star = matches.astype(np.float64) @ mask
    differing = np.zeros((2**m, 2**m), dtype=np.intp)
    for k in range(m):
        differing += ((j[:, None] ^ j[None, :]) >> k) & 1
    u = m - differing  # common bits of i and j
    A = theta**u * (1.0 - theta) ** (m - u)
    return float(np.linalg.solve(A, n_star)[0])


# ----------------------------------------------------------------------------- checks


def _prepare(
    disguised: Any, conjunction: Mapping[int, int], groups: Sequence[Sequence[int]], theta: float
) -> tuple[Bits, list[_Part], float]:
    X = _as_bits(disguised, "disguised")
    theta = _check_theta(theta, estimating=True)
    group_of = _group_index(groups, X.shape[1])
    if X.shape[0] == 0:
        raise ConfigError("disguised has no records; P(E) needs at least one")
    return X, _split(conjunction, group_of, X.shape[1]), theta


def _check_theta(theta: Any, *, estimating: bool) -> float:
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real):
        raise ConfigError(f"theta must be a real number in [0, 1], got {theta!r}")
    t = float(theta)
    if not 0.0 <= t <= 1.0:
        raise ConfigError(
            f"theta (the probability of telling the truth) must be in [0, 1], got {theta!r}"
        )
    if estimating and abs(2.0 * t - 1.0) < THETA_SINGULAR_TOLERANCE:
        raise ConfigError(
            f"theta = {theta!r}: at θ = 0.5 the matrix A of Theorem 1 is singular (Teng & Du, "
            "Theorem 2: A is invertible iff θ ≠ 0.5), so P(E) cannot be estimated from the "
            "disguised data; disguise with a θ away from 0.5"
        )
    return t


def _as_bits(x: Any, name: str) -> Bits:
    a = np.asarray(x)
    if a.ndim != 2:
        raise ConfigError(f"{name} must be a 2-D (records x bits) 0/1 matrix, got shape {a.shape}")
    if a.dtype != np.bool_ and not np.issubdtype(a.dtype, np.integer):
        raise ConfigError(f"{name} must hold integers 0 and 1, got dtype {a.dtype}")
    if a.size and (a.min() < 0 or a.max() > 1):
        bad = sorted(set(np.unique(a).tolist()) - {0, 1})
        raise ConfigError(f"{name} must hold only 0 and 1, found {bad[:5]}")
    return np.asarray(a, dtype=np.uint8)


def _group_index(groups: Sequence[Sequence[int]], n_bits: int) -> npt.NDArray[np.intp]:
    """The group of every bit column; the groups must be disjoint and cover every column."""
    if isinstance(groups, str | bytes | Mapping) or not isinstance(groups, Sequence):
        raise ConfigError(f"groups must be a list of lists of bit columns, got {groups!r}")
    group_of = np.full(n_bits, -1, dtype=np.intp)
    for k, group in enumerate(groups):
        if isinstance(group, str | bytes) or not isinstance(group, Sequence) or not group:
            raise ConfigError(f"group {k} must be a non-empty list of bit columns, got {group!r}")
        for c in group:
            if isinstance(c, bool) or not isinstance(c, numbers.Integral) or not 0 <= c < n_bits:
                raise ConfigError(f"group {k}: {c!r} is not a bit column (an int in [0, {n_bits}))")
            if group_of[c] >= 0:
                raise ConfigError(
                    f"bit column {c} is in groups {group_of[c]} and {k}; groups must be disjoint"
                )
            group_of[c] = k
    missing = np.flatnonzero(group_of < 0).tolist()
    if missing:
        raise ConfigError(
            f"bit columns {missing} are in no group; every bit column must belong to exactly "
            "one group (a bit outside every group would be sent undisguised)"
        )
    return group_of


def _split(
    conjunction: Mapping[int, int], group_of: npt.NDArray[np.intp], n_bits: int
) -> list[_Part]:
    """``E = e_1 ∧ … ∧ e_m``: the sub-pattern of every group ``E`` touches, in group order."""
    if not isinstance(conjunction, Mapping):
        raise ConfigError(
            "a conjunction must map bit columns to required bits (BitLayout.conjunction builds "
            f"one from attribute = value pairs), got {type(conjunction).__name__}"
        )
    by_group: dict[int, list[tuple[int, int]]] = {}
    for c, bit in conjunction.items():
        if isinstance(c, bool) or not isinstance(c, numbers.Integral) or not 0 <= c < n_bits:
            raise ConfigError(f"conjunction: {c!r} is not a bit column (an int in [0, {n_bits}))")
        if isinstance(bit, bool | np.bool_):
            bit = int(bit)
        if bit not in (0, 1):
            raise ConfigError(f"conjunction: bit column {c} must be required 0 or 1, got {bit!r}")
        by_group.setdefault(int(group_of[c]), []).append((int(c), int(bit)))
    parts: list[_Part] = []
    for k in sorted(by_group):
        pairs = sorted(by_group[k])
        parts.append(
            (
                np.array([c for c, _ in pairs], dtype=np.intp),
                np.array([b for _, b in pairs], dtype=np.uint8),
            )
        )
    return parts


def _masks(masks: Any, n: int) -> Floats:
    if masks is None:
        return np.ones((1, n), dtype=np.float64)
    M = np.asarray(masks)
    if M.ndim == 1:
        M = M[None, :]
    if M.ndim != 2 or M.shape[1] != n:
        raise ConfigError(
            f"masks must be a 0/1 vector of {n} records or a (conditions x {n}) matrix, "
            f"got shape {np.shape(masks)}"
        )
    if M.dtype != np.bool_ and not np.issubdtype(M.dtype, np.integer):
        raise ConfigError(f"masks must hold 0 and 1 (or booleans), got dtype {M.dtype}")
    if M.size and (M.min() < 0 or M.max() > 1):
        raise ConfigError("masks must hold only 0 and 1 (or booleans)")
    return M.astype(np.float64)
