"""The argmax of a level's scores of a fraction criterion on shares (``--reveal tree``: the
``gini`` criteria of :mod:`mpc.learners.criteria`), each comparison in a ring only as wide as
its two fractions need.

A candidate of ``|V|`` values has the fraction ``num / den`` of
:func:`protocols.ppid3.shared_scores.fraction_sums`, with ``den <= D(|V|)`` and ``num <= D(|V|)
rows`` (the criterion's :meth:`~mpc.learners.criteria.FractionCriterion.fraction_bounds`): with
Gini, a few dozen bits for a two-valued attribute, 570 for Adult's 42 countries. Comparing two
fractions is the sign of a difference of cross products, ``n_l d_r - n_r d_l``, whose ring must
hold ``D_l D_r rows``; one ring for every comparison of a level would be that of its two widest
candidates, and with oblivious transfer a product costs the square of its ring's bits. So each
node's tournament (:func:`argmax_plan`, public: it depends only on the domain sizes) is the
tree Huffman's code would build over the candidates' bounds: the two narrowest fractions left
meet, each pair in the ring its two subtrees' bounds need, so that the widest candidates have
byes until the last rounds and meet, once each, the winner of the narrower ones.

Ties go to the earlier candidate in the plain learner's order (site, then column), whatever
the tournament's order, by the index each fraction carries: the right fraction wins when
``(n_l d_r - n_r d_l) 2^s + (i_r - i_l) < 0``, ``2^s`` above any difference of indices.
A level plays as many rounds as its deepest such tree (``⌈log2 m⌉`` for ``m`` candidates
of one width, up to ``m - 1``), whatever the number of nodes: the pairs of a round that share
a ring are one batch, and the batches of a round run at once. A fraction
enters a comparison lifted from its ring (:func:`protocols.engine.circuits.lift`) or
reduced to it (a share mod ``2^K`` is a share mod ``2^k`` for ``k < K``); a winner stays in its
pair's ring. The comparison's sign bit, XOR-shared, moves the winner's numerator, denominator
and index by one selection triple each (:func:`protocols.engine.circuits.select`): the two
cross products are the comparison's only products in its ring. The winners' indices are
returned mod ``2^64``, still shared.

What ``p0`` and ``p1`` receive: the triples of each ring (from the dealing party or made by
oblivious transfer, as many as the session's dry run of :func:`fraction_argmax` counts) and each
other's masked values (uniform), as in :mod:`protocols.engine.circuits`. Nothing is opened
here.
"""

from __future__ import annotations

import asyncio
import heapq
from dataclasses import dataclass, field

import numpy as np

from mpc.learners.criteria import FractionCriterion
from protocols.engine.ring import RING64, Ring, ring_for_bits
from protocols.engine.session import Session

__all__ = ["ArgmaxPlan", "argmax_plan", "fraction_argmax"]


@dataclass
class _Step:
    """One ring's batch of a round: the lifts into it (by source ring) and its pairs
    ``(left slot, right slot, winner's slot)``."""

    ring: Ring
    lifts: dict[int, list[int]] = field(default_factory=dict)
    pairs: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass
class ArgmaxPlan:
    """The public plan of a level's tournaments (:func:`argmax_plan`): slots ``0..C-1`` are
    the candidates laid end to end (node by node, each in its plain order); a round's pairs
    write new slots; :attr:`winners` is each node's last slot, :attr:`rings` every slot's
    ring (bits)."""

    shift: int
    rounds: list[list[_Step]]
    winners: list[int]
    rings: list[int]
    index: list[int]  # each candidate's index at its node (its slot's key for ties)


def argmax_plan(
    rows: int, lengths: list[list[int]], start: list[int], criterion: FractionCriterion
) -> ArgmaxPlan:
    """The tournaments of a level whose node ``i`` has candidates of ``lengths[i]`` values
    (plain order), each candidate's fraction in the ring of ``start`` bits (the candidates
    laid end to end), bounded as ``criterion`` bounds its fractions.

    Each node's pairs are drawn as Huffman merges its leaves (the two narrowest fractions
    left meet, the winner bounded by the wider of the two): the widest candidates have byes
    until the last rounds and meet the others once each, at most one round apart. A pair
    plays in the round after both of its fractions are known."""
    shift = max(len(c) for c in lengths).bit_length()
    of = {v: criterion.fraction_bounds(rows, v) for v in {v for c in lengths for v in c}}
    bounds = [of[v] for c in lengths for v in c]
    rings = list(start)
    index = [k for c in lengths for k in range(len(c))]
    ready = [0] * len(bounds)  # the round from which each slot can play
    played: dict[int, dict[int, _Step]] = {}  # round -> ring bits -> its batch
    winners, at = [], 0
    by_bits: dict[int, Ring] = {}  # a pair's ring, by the bits its comparison needs
    pop, push = heapq.heappop, heapq.heappush
    for c in lengths:
        left_over = [(sum(bounds[s]), s) for s in range(at, at + len(c))]
        heapq.heapify(left_over)
        while len(left_over) > 1:
            left, right = pop(left_over)[1], pop(left_over)[1]
            (nl, dl), (nr, dr) = bounds[left], bounds[right]
            need = max(nl + dr, nr + dl) + shift + 1
            ring = by_bits.get(need)
            if ring is None:
                ring = by_bits[need] = ring_for_bits(need)
            r = max(ready[left], ready[right])
            batches = played.get(r)
            if batches is None:
                batches = played[r] = {}
            step = batches.get(ring.bits)
            if step is None:
                step = batches[ring.bits] = _Step(ring)
            for s in (left, right):
                if rings[s] < ring.bits:
                    step.lifts.setdefault(rings[s], []).append(s)
            out = len(rings)
            rings.append(ring.bits)
            merged = (nl if nl > nr else nr, dl if dl > dr else dr)
            bounds.append(merged)
            ready.append(r + 1)
            step.pairs.append((left, right, out))
            push(left_over, (merged[0] + merged[1], out))
        winners.append(left_over[0][1])
        at += len(c)
    rounds = [[played[r][k] for k in sorted(played[r])] for r in sorted(played)]
    return ArgmaxPlan(shift, rounds, winners, rings, index)


async def fraction_argmax(
    s: Session, num: list[int], den: list[int], plan: ArgmaxPlan, tag: str
) -> np.ndarray:
    """Shares mod ``2^64`` of the index of each node's best candidate (the first best in
    plain order), from this party's shares of the candidates' numerators and denominators
    (each in its ring of ``plan``). The batches of a round run at once, each in its own
    ring (each taking its triples from its ring's pool)."""
    slots: dict[int, tuple[int, int, int]] = {
        slot: (n, d, k if s.role == 0 else 0)
        for slot, (n, d, k) in enumerate(zip(num, den, plan.index, strict=True))
    }
    for r, steps in enumerate(plan.rounds):
        done = await asyncio.gather(*(
            _play(s, step, slots, plan, f"{tag}/r{r}k{step.ring.bits}") for step in steps
        ))  # fmt: skip
        for found in done:
            slots.update(found)
    return RING64.array([slots[w][2] & (2**64 - 1) for w in plan.winners])


async def _play(
    s: Session, step: _Step, slots: dict[int, tuple[int, int, int]], plan: ArgmaxPlan, tag: str
) -> dict[int, tuple[int, int, int]]:
    """One ring's batch: lift the slots that enter it, then compare and select."""
    ring = step.ring
    mine = {slot: slots[slot] for pair in step.pairs for slot in pair[:2]}
    for source in sorted(step.lifts):
        lifted = step.lifts[source]
        flat = Ring(source).array([v for slot in lifted for v in mine[slot]])
        up = await s.lift(flat, source, f"{tag}/up{source}", ring)
        for j, slot in enumerate(lifted):
            mine[slot] = (int(up[3 * j]), int(up[3 * j + 1]), int(up[3 * j + 2]))
    left = [mine[p[0]] for p in step.pairs]
    right = [mine[p[1]] for p in step.pairs]
    kl, dl, il = (ring.array([x[j] for x in left]) for j in range(3))
    kr, dr, ir = (ring.array([x[j] for x in right]) for j in range(3))
    n = len(step.pairs)
    cross = await s.mul(np.concatenate([kl, kr]), np.concatenate([dr, dl]), f"{tag}/cross",
                        ring)  # fmt: skip
    diff = ring.reduce((cross[:n] - cross[n:]) * (1 << plan.shift) + (ir - il))
    beta = await s.sign(diff, f"{tag}/cmp", ring)
    deltas = ring.reduce(np.stack([kr - kl, dr - dl, ir - il], axis=1))
    moved = await s.select(beta, deltas, f"{tag}/sel", ring)
    won = [ring.reduce(a + moved[:, j]) for j, a in enumerate((kl, dl, il))]
    return {out: (int(won[0][j]), int(won[1][j]), int(won[2][j]))
            for j, (_, _, out) in enumerate(step.pairs)}  # fmt: skip
