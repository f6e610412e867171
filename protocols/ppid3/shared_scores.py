"""The decisions of PPID3's ``--reveal tree`` mode (:mod:`protocols.ppid3.reveal_tree`) on
additive shares: two sites, ``p0`` and ``p1``, hold shares of every count of a level and
compute on them what the plain learner decides from the counts, with triples dealt by the
party that deals their products (or, with ``--helper ot``, made between the two by oblivious
transfer) — and open only the decision.

* :func:`node_decisions`: per node, shares of ``[stop]`` (one class left, which includes no
  rows, or fewer than ``min_samples_split``) and of the leaf label (the first largest class
  count, or the parent's label when the node is empty: the plain learner's rule);
* :func:`gini_terms` and :func:`gini_fractions`: per candidate attribute, shares of the
  numerator and denominator of ``Σ_v S_v / (8 n_v + 1)``
  (:func:`mpc.learners.criteria.gini_score`, the plain learner's ``gini``), as MPyC's
  ``GI``: ``S_v = Σ_c n_vc²`` by one round of products in ``Z_{2^64}``, the sum of
  fractions by a tree of ``(a d + c b) / (b d)``, ``⌈log2 |V|⌉`` rounds, each in a ring only
  as wide as its results (:func:`fraction_rings`, from the public bounds of
  :func:`fraction_bounds`: on Adult's 48,842 rows 64 bits for the first round, 576 for the
  last of its 42 countries), the terms of a candidate still summing lifted from one round's
  ring to the next, a finished candidate's fraction left in the ring of its last round;
* the split: :func:`protocols.ppid3.gini_argmax.gini_argmax` over the candidates'
  fractions, each comparison in the ring its pair needs; with the ``entropy-fixed``
  criterion the scores are integers and :func:`best_splits` takes the argmax.

Everything per count (the lift of the folded counts, the squares, the stopping tests) is in
``Z_{2^64}``, whose uint64 arithmetic numpy does at once; only the ``2 |V|`` terms of each
candidate go to wider rings, whose Python integers cost per element, and the cost of a
product made by oblivious transfer grows with the square of its ring's bits.

What ``p0`` and ``p1`` receive here: triples from the dealing party (uniform seeds and
corrections; with ``ot``, the messages of OT extension) and each other's masked values
(uniform): ``compare/dealt``, ``compare/masked``. Nothing is opened here; the caller opens
the decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mpc.learners.criteria import GINI_ALPHA
from mpc.runtime.party import Party
from mpc.runtime.view import Receipt
from protocols.engine.opening import Pair, open_shares
from protocols.engine.ring import RING64, Ring, ring_for_bits
from protocols.ot.iknp import ExtensionReceiver, ExtensionSender
from protocols.ppid3.level_dealing import Dealing
from protocols.primitives.secure_comparison import (
    Needs,
    Pool,
    argmax,
    argmax_needs,
    less_than_zero,
    lift,
    lift_needs,
    ltz_needs,
    multiply,
    ot_pool,
    ot_session,
    receive_pool,
)

__all__ = [
    "Duo",
    "best_splits",
    "decision_needs",
    "final_rings",
    "fraction_bounds",
    "fraction_needs",
    "fraction_rings",
    "gini_fractions",
    "gini_terms",
    "node_decisions",
    "score_needs",
]


def fraction_bounds(rows: int, values: int) -> tuple[int, int]:
    """The bits of the largest numerator and denominator of a Gini fraction summed over at
    most ``values`` branches whose counts add up to at most ``rows``: ``den = Π_v (8 n_v +
    1) <= D = ⌈(8 rows + |V|) / |V|⌉^|V|`` (a product of numbers of a fixed sum is largest when
    they are equal) and ``num = den Σ_v S_v / (8 n_v + 1) <= D rows / 8``."""
    v = max(1, values)
    d = (-(-(GINI_ALPHA * rows + v) // v)) ** v
    return (d * max(1, rows)).bit_length(), d.bit_length()


@dataclass
class Duo:
    """``p0`` and ``p1`` (the first two sites) computing on their shares in ``ring``, with
    triples dealt by the party that deals their products (``dealing.of(p0, p1)``). Every
    site makes one; :attr:`active` only at ``p0`` and ``p1``."""

    party: Party
    dealing: Dealing
    ring: Ring

    def __post_init__(self) -> None:
        names = list(self.party.parties)
        self.p0, self.p1 = names[0], names[1]
        self.active = self.party.name in (self.p0, self.p1)
        self.role = 0 if self.party.name == self.p0 else 1
        self.other = self.p1 if self.role == 0 else self.p0
        self.session: ExtensionSender | ExtensionReceiver | None = None
        #: the pair's door for what it opens (:mod:`protocols.engine.opening`)
        self.pair = Pair(self.party, self.p0, self.p1)

    async def start(self, tag: str) -> None:
        """``p0`` and ``p1`` agree the key of their openings' re-randomisation."""
        await self.pair.agree(tag)

    async def open(
        self, values: np.ndarray | None, n: int, *, to: Sequence[str], tag: str,
        receipt: Receipt, ring: Ring | None = None,
    ) -> list[int] | None:  # fmt: skip
        """Open ``n`` shared values to the parties ``to``, re-randomised
        (:func:`protocols.engine.opening.open_shares`): the only way a value leaves the
        pair."""
        return await open_shares(self.pair, values, n, to=to, tag=tag, receipt=receipt,
                                 ring=ring or RING64)  # fmt: skip

    def const(self, value: int, shape: int | tuple[int, ...]) -> np.ndarray:
        """Shares of a public constant in the wide ring: ``p0`` holds it, ``p1`` zero."""
        return self.ring.constant(value if self.role == 0 else 0, shape)

    def const64(self, value: int, shape: int | tuple[int, ...]) -> np.ndarray:
        """The same in ``Z_{2^64}``."""
        return RING64.constant(value if self.role == 0 else 0, shape)

    async def pool(self, tag: str, needs: Needs, ring: Ring | None = None) -> Pool:
        """The batch's triples (over ``ring``, by default the wide one): ``p0`` asks the
        dealing party, both receive."""
        ring = ring or self.ring
        if self.dealing.helper == "ot":  # no one deals: p0 and p1 make them by OT, in one
            if self.session is None:  # session for the whole run (128 base OTs once)
                self.session = await ot_session(self.party, self.other, self.role, tag)
            return await ot_pool(self.party, self.other, self.role, tag, needs, ring,
                                 self.session)  # fmt: skip
        if self.role == 0:
            await self.dealing.ask({"kind": "triples", "peer": self.p1, "tag": tag,
                                    "shape": [ring.bits], "and": needs.bits,
                                    "words": needs.words})  # fmt: skip
        helper = self.dealing.of(self.p0, self.p1)
        return await receive_pool(self.party, helper, tag, self.role, needs, ring)

    async def mul(
        self, x: np.ndarray, y: np.ndarray, pool: Pool, tag: str, ring: Ring | None = None
    ) -> np.ndarray:
        shape = x.shape
        out = await multiply(self.party, x.reshape(-1), y.reshape(-1), pool, role=self.role,
                             other=self.other, tag=tag, ring=ring or self.ring)  # fmt: skip
        return out.reshape(shape)

    async def lift(
        self, x: np.ndarray, width: int, pool: Pool, tag: str, ring: Ring | None = None
    ) -> np.ndarray:
        return await lift(self.party, x, width, pool, role=self.role, other=self.other, tag=tag,
                          ring=ring or self.ring)  # fmt: skip


def decision_needs(nodes: int, p: int, small: bool) -> Needs:
    """The triples (over ``Z_{2^64}``) of :func:`node_decisions` on ``nodes`` nodes of ``p``
    classes."""
    tests = nodes * (3 if small else 2)
    return argmax_needs(nodes, p, False) + ltz_needs(tests) + Needs(words=2 * nodes)


async def node_decisions(
    duo: Duo, counts: np.ndarray, parent_label: np.ndarray, min_samples_split: int | None,
    pool: Pool, tag: str,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Shares of each node's ``[stop]`` and leaf label from the shares of its class counts
    (``nodes x p``) and of its parent's label (the root: its own, any value): stop when the
    largest class count is the node's size (one class, or no rows) or the size is below
    ``min_samples_split``; the label is the first largest class, the parent's when the node
    has no rows."""
    ring, role = RING64, duo.role
    m = counts.shape[0]
    index, top = await argmax(duo.party, counts, pool, role=role, other=duo.other,
                              tag=f"{tag}/class", ring=ring, with_key=True)  # fmt: skip
    size = counts.sum(axis=1, dtype=np.uint64)
    one = duo.const64(1, m)
    tests = [size - top - one, size - one]
    if min_samples_split is not None:
        tests.append(size - duo.const64(min_samples_split, m))
    below = await less_than_zero(duo.party, ring.reduce(np.concatenate(tests)), pool, role=role,
                                 other=duo.other, tag=f"{tag}/tests", ring=ring)  # fmt: skip
    one_class, empty = below[:m], below[m : 2 * m]
    small = below[2 * m :] if min_samples_split is not None else ring.zeros(m)
    both = await duo.mul(np.concatenate([one_class, empty]),
                         np.concatenate([small, ring.reduce(parent_label - index)]), pool,
                         f"{tag}/or", ring)  # fmt: skip
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
    """The candidates each round of :func:`gini_fractions` works on: those with two terms
    or more left."""
    rounds, left = [], list(lengths)
    while any(n > 1 for n in left):
        active = [c for c, n in enumerate(left) if n > 1]
        rounds.append(active)
        for c in active:
            left[c] = (left[c] + 1) // 2
    return rounds


async def gini_terms(
    duo: Duo, counts: np.ndarray, pool: Pool, tag: str
) -> tuple[np.ndarray, np.ndarray]:
    """Shares in ``Z_{2^64}`` of each candidate's ``S_v = Σ_c n_vc²`` and ``8 n_v + 1`` from
    the shares of its counts (``candidates x values x p``, ``Z_{2^64}``; a shorter domain
    padded with zero rows, which add ``0 / 1``). Counts below ``2^32`` keep both exact."""
    c, v, _ = counts.shape
    squares = await duo.mul(counts, counts, pool, f"{tag}/sq", RING64)
    num = squares.sum(axis=2, dtype=np.uint64)
    den = np.uint64(GINI_ALPHA) * counts.sum(axis=2, dtype=np.uint64) + duo.const64(1, (c, v))
    return num, den


def fraction_rings(rows: int, lengths: list[int]) -> list[Ring]:
    """The ring of each round of :func:`gini_fractions` (none when no candidate has two
    terms): after round ``j`` a fraction sums at most ``2^(j+1)`` of a candidate's terms, so
    the ring holds :func:`fraction_bounds` of that many; each ring at least as wide as the
    one before."""
    widest, out = max(lengths, default=1), list[Ring]()
    for j in range(len(_active(lengths))):
        bits = ring_for_bits(max(fraction_bounds(rows, min(2 ** (j + 1), widest)))).bits
        out.append(Ring(max(bits, out[-1].bits if out else 64)))
    return out


def final_rings(lengths: list[int], rings: list[Ring]) -> list[int]:
    """The ring (bits) each candidate's fraction ends in: that of its last round (64 for a
    single term)."""
    return [rings[(n - 1).bit_length() - 1].bits if n > 1 else 64 for n in lengths]


def fraction_needs(lengths: list[int], rings: list[Ring]) -> list[Needs]:
    """The triples of each round of :func:`gini_fractions` over candidates of ``lengths``
    terms, in that round's ring (:func:`fraction_rings`): where the ring grows, the lift of
    the terms of the candidates still summing from the ring before (``Z_{2^64}`` for the
    first round), and three products per pair."""
    out, source, left = [], 64, list(lengths)
    for ring, active in zip(rings, _active(lengths), strict=True):
        terms = sum(left[c] for c in active)
        pairs = sum(left[c] // 2 for c in active)
        needs = Needs(words=3 * pairs)
        if ring.bits > source:
            needs += lift_needs(2 * terms, source)
        out.append(needs)
        for c in active:
            left[c] = (left[c] + 1) // 2
        source = ring.bits
    return out


async def gini_fractions(
    duo: Duo, num: np.ndarray, den: np.ndarray, lengths: list[int], pools: list[Pool],
    rings: list[Ring], tag: str,
) -> tuple[list[int], list[int]]:  # fmt: skip
    """This party's shares of the numerator and denominator of each candidate's Gini score,
    ``Σ_v num_v / den_v``, from its ``Z_{2^64}`` shares of the terms, the candidates' terms
    laid end to end (``lengths[c]`` each): a tree of ``(a d + c b) / (b d)``, each round's
    pairs of every candidate still summing in one product, in that round's ring
    (:func:`fraction_rings`, with the triples of :func:`fraction_needs`), so that the first
    rounds multiply narrow numbers in narrow rings. A candidate's result is in the ring of
    its last round (:func:`final_rings`), as a Python integer."""
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    out_num = [int(num[starts[c]]) for c in range(len(lengths))]
    out_den = [int(den[starts[c]]) for c in range(len(lengths))]
    left = list(lengths)
    active = [c for c, n in enumerate(left) if n > 1]
    pick = [i for c in active for i in range(starts[c], starts[c + 1])]
    num, den = num[pick], den[pick]
    source = 64
    for level, (ring, pool) in enumerate(zip(rings, pools, strict=True)):
        both = np.concatenate([num, den])
        if ring.bits > source:
            both = await duo.lift(both, source, pool, f"{tag}/up{level}", ring)
        num, den = both[: len(num)], both[len(num) :]
        source = ring.bits
        a_left, a_right, order, new = _pair_off([left[c] for c in active])
        a, b, x, d = num[a_left], den[a_left], num[a_right], den[a_right]
        prods = await duo.mul(np.concatenate([a, x, b]), np.concatenate([d, b, d]), pool,
                              f"{tag}/sum{level}", ring)  # fmt: skip
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


def score_needs(candidates: int, max_values: int, p: int) -> Needs:
    """The ``Z_{2^64}`` triples of a level's Gini terms: the squares of the counts of
    ``candidates`` candidates of at most ``max_values`` values and ``p`` classes."""
    return Needs(words=candidates * max_values * p)


async def best_splits(duo: Duo, keys: np.ndarray, pool: Pool, tag: str) -> np.ndarray:
    """Shares of the index of the best of each row's integer keys (``nodes x per_node``, in
    the Duo's ring; a padded candidate below every key), the first on a tie."""
    return await argmax(duo.party, keys, pool, role=duo.role, other=duo.other, tag=tag,
                        ring=duo.ring)  # fmt: skip
