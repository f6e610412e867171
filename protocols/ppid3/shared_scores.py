"""The decisions of PPID3's ``--reveal tree`` mode (:mod:`protocols.ppid3.reveal_tree`) on
additive shares: two sites, ``p0`` and ``p1``, hold shares of every count of a level and
compute on them what the plain learner decides from the counts, with triples dealt by the
party that deals their products (or, with ``--helper ot``, made between the two by oblivious
transfer) — and open only the decision.

* :func:`node_decisions`: per node, shares of ``[stop]`` (one class left, which includes no
  rows, or fewer than ``min_samples_split``) and of the leaf label (the first largest class
  count, or the parent's label when the node is empty: the plain learner's rule);
* :func:`fraction_sums`: per candidate attribute of a fraction criterion, shares of the
  numerator and denominator of its score ``Σ_v num_v / den_v`` from the shares of its terms
  (the criterion's :meth:`~mpc.learners.criteria.FractionCriterion.shared_terms`: Gini's
  ``S_v = Σ_c n_vc²`` and ``8 n_v + 1``, MPyC's ``GI``), by a tree of ``(a d + c b) / (b d)``,
  ``⌈log2 |V|⌉`` rounds, each in a ring only as wide as its results (:func:`fraction_rings`,
  from the criterion's public bounds,
  :meth:`~mpc.learners.criteria.FractionCriterion.fraction_bounds`: with Gini on Adult's
  48,842 rows 64 bits for the first round, 576 for the last of its 42 countries), the terms
  of a candidate still summing lifted from one round's ring to the next, a finished
  candidate's fraction left in the ring of its last round;
* the split: :func:`protocols.ppid3.fraction_argmax.fraction_argmax` over the candidates'
  fractions, each comparison in the ring its pair needs; with the ``entropy-fixed``
  criterion the scores are integers
  (:meth:`~mpc.learners.criteria.EntropyFixed.shared_scores`) and :func:`best_splits` takes
  the argmax.

Everything per count (the lift of the folded counts, the squares, the stopping tests) is in
``Z_{2^64}``, whose uint64 arithmetic numpy does at once; only the ``2 |V|`` terms of each
candidate go to wider rings, whose Python integers cost per element, and the cost of a
product made by oblivious transfer grows with the square of its ring's bits.

Each function is a circuit of a :class:`protocols.engine.session.Session` and runs inside its
:meth:`~protocols.engine.session.Session.batch`, which counts the triples it uses by a dry run
of the function itself; no function here says how many it needs.

What ``p0`` and ``p1`` receive here: triples from the dealing party (uniform seeds and
corrections; with ``ot``, the messages of OT extension) and each other's masked values
(uniform): ``compare/dealt``, ``compare/masked``. Nothing is opened here; the caller opens
the decisions.
"""

from __future__ import annotations

import numpy as np

from mpc.learners.criteria import FractionCriterion
from protocols.engine.ring import RING64, Ring, ring_for_bits
from protocols.engine.session import Session

__all__ = [
    "best_splits",
    "final_rings",
    "fraction_rings",
    "fraction_sums",
    "node_decisions",
]


async def node_decisions(
    s: Session, counts: np.ndarray, parent_label: np.ndarray, min_samples_split: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Shares (``Z_{2^64}``) of each node's ``[stop]`` and leaf label from the shares of its
    class counts (``nodes x p``) and of its parent's label (the root: its own, any value):
    stop when the largest class count is the node's size (one class, or no rows) or the size
    is below ``min_samples_split``; the label is the first largest class, the parent's when
    the node has no rows."""
    ring = RING64
    m = counts.shape[0]
    index, top = await s.argmax(counts, "class", ring=ring, with_key=True)
    size = counts.sum(axis=1, dtype=np.uint64)
    one = s.const(1, m, ring)
    tests = [size - top - one, size - one]
    if min_samples_split is not None:
        tests.append(size - s.const(min_samples_split, m, ring))
    below = await s.ltz(ring.reduce(np.concatenate(tests)), "tests", ring)
    one_class, empty = below[:m], below[m : 2 * m]
    small = below[2 * m :] if min_samples_split is not None else ring.zeros(m)
    both = await s.mul(np.concatenate([one_class, empty]),
                       np.concatenate([small, ring.reduce(parent_label - index)]), "or",
                       ring)  # fmt: skip
    stop = ring.reduce(one_class + small - both[:m])
    label = ring.reduce(index + both[m:])
    return stop, label


def _pair_off(lengths: list[int]) -> tuple[list[int], list[int], list[int], list[int]]:
    """One round of the sums of fractions over candidates of ``lengths`` terms each (two or
    more), laid end to end: the positions of the left and right terms of each pair, where
    each new term comes from (``-j - 1``: the ``j``-th pair; else the position of a
    candidate's odd last term, carried over) and the new lengths."""
    left, right, order, new = [], [], [], []
    at = 0
    for n in lengths:
        pairs = n // 2
        left += [at + 2 * i for i in range(pairs)]
        right += [at + 2 * i + 1 for i in range(pairs)]
        order += [-(len(left) - pairs + i) - 1 for i in range(pairs)]
        if n % 2:
            order.append(at + n - 1)
        new.append(pairs + n % 2)
        at += n
    return left, right, order, new


def _active(lengths: list[int]) -> list[list[int]]:
    """The candidates each round of :func:`fraction_sums` works on: those with two terms
    or more left."""
    rounds, left = [], list(lengths)
    while any(n > 1 for n in left):
        active = [c for c, n in enumerate(left) if n > 1]
        rounds.append(active)
        for c in active:
            left[c] = (left[c] + 1) // 2
    return rounds


def fraction_rings(rows: int, lengths: list[int], criterion: FractionCriterion) -> list[Ring]:
    """The ring of each round of :func:`fraction_sums` (none when no candidate has two
    terms): after round ``j`` a fraction sums at most ``2^(j+1)`` of a candidate's terms, so
    the ring holds the criterion's bounds of that many
    (:meth:`~mpc.learners.criteria.FractionCriterion.fraction_bounds`); each ring at least as
    wide as the one before."""
    widest, out = max(lengths, default=1), list[Ring]()
    for j in range(len(_active(lengths))):
        bound = criterion.fraction_bounds(rows, min(2 ** (j + 1), widest))
        bits = ring_for_bits(max(bound)).bits
        out.append(Ring(max(bits, out[-1].bits if out else 64)))
    return out


def final_rings(lengths: list[int], rings: list[Ring]) -> list[int]:
    """The ring (bits) each candidate's fraction ends in: that of its last round (64 for a
    single term)."""
    return [rings[(n - 1).bit_length() - 1].bits if n > 1 else 64 for n in lengths]


async def fraction_sums(
    s: Session, num: np.ndarray, den: np.ndarray, lengths: list[int], rings: list[Ring]
) -> tuple[list[int], list[int]]:
    """This party's shares of the numerator and denominator of each candidate's score of a
    fraction criterion, ``Σ_v num_v / den_v``, from its ``Z_{2^64}`` shares of the terms
    (:meth:`~mpc.learners.criteria.FractionCriterion.shared_terms`), the candidates' terms
    laid end to end (``lengths[c]`` each): a tree of ``(a d + c b) / (b d)``, each round's
    pairs of every candidate still summing in one product, in that round's ring
    (:func:`fraction_rings`), so that the first rounds multiply narrow numbers in narrow
    rings: where the ring grows, the terms of the candidates still summing are lifted from
    the ring before. A candidate's result is in the ring of its last round
    (:func:`final_rings`), as a Python integer."""
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    out_num = [int(num[starts[c]]) for c in range(len(lengths))]
    out_den = [int(den[starts[c]]) for c in range(len(lengths))]
    left = list(lengths)
    active = [c for c, n in enumerate(left) if n > 1]
    pick = [i for c in active for i in range(starts[c], starts[c + 1])]
    num, den = num[pick], den[pick]
    source = 64
    for level, ring in enumerate(rings):
        both = np.concatenate([num, den])
        if ring.bits > source:
            both = await s.lift(both, source, f"up{level}", ring)
        num, den = both[: len(num)], both[len(num) :]
        source = ring.bits
        a_left, a_right, order, new = _pair_off([left[c] for c in active])
        a, b, x, d = num[a_left], den[a_left], num[a_right], den[a_right]
        prods = await s.mul(np.concatenate([a, x, b]), np.concatenate([d, b, d]),
                            f"sum{level}", ring)  # fmt: skip
        n = len(a_left)
        pair_num = ring.reduce(prods[:n] + prods[n : 2 * n])
        pair_den = prods[2 * n :]
        where = np.asarray(order, dtype=np.int64)
        from_pair = where < 0
        new_num, new_den = ring.zeros(len(where)), ring.zeros(len(where))
        new_num[from_pair] = pair_num[-where[from_pair] - 1]
        new_den[from_pair] = pair_den[-where[from_pair] - 1]
        new_num[~from_pair], new_den[~from_pair] = num[where[~from_pair]], den[where[~from_pair]]
        keep, at = list[int](), 0
        for c, m in zip(active, new, strict=True):
            left[c] = m
            if m == 1:
                out_num[c], out_den[c] = int(new_num[at]), int(new_den[at])
            else:
                keep += range(at, at + m)
            at += m
        num, den = new_num[keep], new_den[keep]
        active = [c for c in active if left[c] > 1]
    return out_num, out_den


async def best_splits(s: Session, keys: np.ndarray, tag: str) -> np.ndarray:
    """Shares of the index of the best of each row's integer keys (``nodes x per_node``, in
    the session's ring; a padded candidate below every key), the first on a tie."""
    return await s.argmax(keys, tag, ring=s.ring)
