"""The decisions of PPID3's ``--reveal tree`` mode (:mod:`protocols.ppid3.reveal_tree`) on
additive shares: two sites, ``p0`` and ``p1``, hold shares in ``Z_{2^K}`` of every count of a
level and compute on them, with triples dealt by the party that deals their products, what
the plain learner decides from the counts — and open only the decision.

* :func:`node_decisions`: per node, shares of ``[stop]`` (one class left, which includes no
  rows, or fewer than ``min_samples_split``) and of the leaf label (the first largest class
  count, or the parent's label when the node is empty: the plain learner's rule);
* :func:`gini_fractions`: per candidate attribute, shares of the numerator and denominator
  of ``Σ_v S_v / (8 n_v + 1)`` (:func:`mpc.learners.criteria.gini_score`, the plain
  learner's ``gini``), as MPyC's ``GI``: ``S_v = Σ_c n_vc²`` by one round of products, the
  sum of fractions by a tree of ``(a d + c b) / (b d)``, ``⌈log2 |V|⌉`` rounds;
* the split is :func:`protocols.primitives.secure_comparison.argmax` over the candidates'
  fractions, cross-multiplied, ties to the first candidate (the plain learner's order);
* :func:`gini_ring`: the ring wide enough for every value these compute (a public bound
  from the number of rows and the largest domain), so that nothing wraps.

What ``p0`` and ``p1`` receive here: triples from the dealing party (uniform seeds and
corrections) and each other's masked values (uniform): ``compare/dealt``,
``compare/masked``. Nothing is opened here; the caller opens the decisions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpc.learners.criteria import GINI_ALPHA
from mpc.runtime.party import Party
from protocols.ppid3.level_dealing import Dealing
from protocols.primitives.ring import Ring, ring_for_bits
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
    receive_pool,
    tournament,
)

__all__ = ["Duo", "gini_fractions", "gini_needs", "gini_ring", "node_decisions"]


def gini_ring(rows: int, values: int) -> Ring:
    """The ring of ``--reveal tree`` with Gini: every denominator ``Π_v (8 n_v + 1)`` over
    ``|V| <= values`` branches with ``Σ n_v <= rows`` is at most ``D = ⌈(8 rows + |V|) /
    |V|⌉^|V|`` (the product of numbers of a fixed sum is largest when they are equal), a
    numerator at most ``D rows``, and the comparison's cross products at most ``D² rows``;
    the ring holds twice that, signed."""
    v = max(1, values)
    d = (-(-(GINI_ALPHA * rows + v) // v)) ** v
    return ring_for_bits((2 * d * d * max(1, rows)).bit_length())


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

    def const(self, value: int, shape: int | tuple[int, ...]) -> np.ndarray:
        """Shares of a public constant: ``p0`` holds it, ``p1`` zero."""
        return self.ring.constant(value if self.role == 0 else 0, shape)

    async def pool(self, tag: str, needs: Needs) -> Pool:
        """The batch's triples: ``p0`` asks the dealing party, both receive."""
        if self.role == 0:
            await self.dealing.ask({"kind": "triples", "peer": self.p1, "tag": tag,
                                    "shape": [self.ring.bits], "and": needs.bits,
                                    "words": needs.words})  # fmt: skip
        helper = self.dealing.of(self.p0, self.p1)
        return await receive_pool(self.party, helper, tag, self.role, needs, self.ring)

    async def mul(self, x: np.ndarray, y: np.ndarray, pool: Pool, tag: str) -> np.ndarray:
        shape = x.shape
        out = await multiply(self.party, x.reshape(-1), y.reshape(-1), pool, role=self.role,
                             other=self.other, tag=tag, ring=self.ring)  # fmt: skip
        return out.reshape(shape)

    async def lift(self, x: np.ndarray, width: int, pool: Pool, tag: str) -> np.ndarray:
        return await lift(self.party, x, width, pool, role=self.role, other=self.other, tag=tag,
                          ring=self.ring)  # fmt: skip


def decision_needs(nodes: int, p: int, ring: Ring, small: bool) -> Needs:
    """The triples of :func:`node_decisions` on ``nodes`` nodes of ``p`` classes."""
    tests = nodes * (3 if small else 2)
    return argmax_needs(nodes, p, False, ring) + ltz_needs(tests, ring) + Needs(words=2 * nodes)


async def node_decisions(
    duo: Duo, counts: np.ndarray, parent_label: np.ndarray, min_samples_split: int | None,
    pool: Pool, tag: str,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Shares of each node's ``[stop]`` and leaf label from the shares of its class counts
    (``nodes x p``) and of its parent's label (the root: its own, any value): stop when the
    largest class count is the node's size (one class, or no rows) or the size is below
    ``min_samples_split``; the label is the first largest class, the parent's when the node
    has no rows."""
    ring, role = duo.ring, duo.role
    m = counts.shape[0]
    index, top = await argmax(duo.party, counts, pool, role=role, other=duo.other,
                              tag=f"{tag}/class", ring=ring, with_key=True)  # fmt: skip
    size = ring.reduce(counts.sum(axis=1))
    tests = [size - top - duo.const(1, m), size - duo.const(1, m)]
    if min_samples_split is not None:
        tests.append(size - duo.const(min_samples_split, m))
    below = await less_than_zero(duo.party, ring.reduce(np.concatenate(tests)), pool, role=role,
                                 other=duo.other, tag=f"{tag}/tests", ring=ring)  # fmt: skip
    one_class, empty = below[:m], below[m : 2 * m]
    small = below[2 * m :] if min_samples_split is not None else ring.zeros(m)
    both = await duo.mul(np.concatenate([one_class, empty]),
                         np.concatenate([small, ring.reduce(parent_label - index)]), pool,
                         f"{tag}/or")  # fmt: skip
    stop = ring.reduce(one_class + small - both[:m])
    label = ring.reduce(index + both[m:])
    return stop, label


def gini_needs(candidates: int, values: int, p: int) -> Needs:
    """The word triples of :func:`gini_fractions`."""
    words = candidates * values * p
    for pairs in tournament(values):
        words += 3 * candidates * pairs
    return Needs(words=words)


async def gini_fractions(
    duo: Duo, counts: np.ndarray, pool: Pool, tag: str
) -> tuple[np.ndarray, np.ndarray]:
    """Shares of the numerator and denominator of each candidate's Gini score from the
    shares of its counts (``candidates x values x p``, a shorter domain padded with zero
    rows, which add ``0 / 1``)."""
    ring = duo.ring
    c, v, _ = counts.shape
    squares = await duo.mul(counts, counts, pool, f"{tag}/sq")
    num = ring.reduce(squares.sum(axis=2))
    den = ring.reduce(GINI_ALPHA * counts.sum(axis=2) + duo.const(1, (c, v)))
    level = 0
    while num.shape[1] > 1:
        pairs = num.shape[1] // 2
        a, b = num[:, 0 : 2 * pairs : 2], den[:, 0 : 2 * pairs : 2]
        x, d = num[:, 1 : 2 * pairs : 2], den[:, 1 : 2 * pairs : 2]
        prods = await duo.mul(np.concatenate([a, x, b]), np.concatenate([d, b, d]), pool,
                              f"{tag}/sum{level}")  # fmt: skip
        new_num = ring.reduce(prods[:c] + prods[c : 2 * c])
        new_den = prods[2 * c :]
        if num.shape[1] % 2:
            new_num = np.concatenate([new_num, num[:, -1:]], axis=1)
            new_den = np.concatenate([new_den, den[:, -1:]], axis=1)
        num, den = new_num, new_den
        level += 1
    return num[:, 0], den[:, 0]


def lift_and_score_needs(
    values: int, width: int, candidates: int, max_values: int, p: int, nodes: int,
    per_node: int, ring: Ring,
) -> Needs:  # fmt: skip
    """The triples of a level's lift of ``values`` shares of ``width`` bits, the Gini
    fractions of ``candidates`` candidates and the argmax over ``per_node`` of them for each
    of ``nodes`` nodes."""
    return (
        lift_needs(values, width)
        + gini_needs(candidates, max_values, p)
        + argmax_needs(nodes, per_node, True, ring)
    )


async def best_splits(
    duo: Duo, num: np.ndarray, den: np.ndarray, pool: Pool, tag: str
) -> np.ndarray:
    """Shares of the index of the best candidate of each row (``nodes x per_node``
    fractions; a padded candidate is ``-1 / 1``)."""
    return await argmax(duo.party, num, pool, role=duo.role, other=duo.other, tag=tag,
                        denominators=den, ring=duo.ring)  # fmt: skip
