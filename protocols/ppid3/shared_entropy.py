"""Information gain on additive shares for ``--reveal tree --criterion entropy-fixed``: each
count's ``L(n) = n · log2_fixed(n)`` (:func:`mpc.learners.criteria.nlogn_fixed`, the plain
learner's ``entropy-fixed``) computed exactly by ``p0`` and ``p1`` from their shares, so that
the argmax of each node's scores ``Σ_v (Σ_c L(n_vc) - L(n_v))`` picks the plain learner's
split, ties to the first candidate.

For ``m`` counts at once, each ``n < 2^W`` (``W = 24``: :data:`~mpc.learners.criteria.
NLOGN_W`) shared in ``Z_{2^64}``:

1. **Bits**: each party's share, ``mod 2^W``, as its own bits; the bits of their sum and its
   carry out by a prefix adder (:func:`~protocols.primitives.secure_comparison.sum_bits`):
   XOR shares of ``n``'s ``W`` bits;
2. **Leading one**: ``o_i`` = some bit at ``i`` or above is one
   (:func:`~protocols.primitives.secure_comparison.prefix_or`), ``e_i = o_i ⊕ o_{i+1}``:
   the one-hot position ``k`` of ``n``'s top bit (all zero when ``n = 0``);
3. **To the ring**: ``e_i`` and the carry as additive shares in ``Z_{2^K}``
   (:func:`~protocols.primitives.secure_comparison.bit_to_ring`); then ``n = x_0 mod 2^W +
   x_1 mod 2^W - 2^W carry``, ``k = Σ i e_i`` and ``2^{W-k} = Σ 2^{W-i} e_i``, all local;
4. **The polynomial**: ``t = n 2^{W-k} - 2^W`` (one product), ``t²``, then ``t³`` and
   ``t⁴`` (two rounds), and ``log2_fixed(n) = k 2^{P+4W} + Σ_i A_i t^i 2^{W(4-i)}`` (local);
5. ``L(n) = n · log2_fixed(n)`` (one product): ``0`` when ``n = 0``, whatever the rest.

Nothing is rounded, so the shares open to the plain learner's integers. Sixteen rounds for
any number of counts; per count ``W + 2 Σ_d (W - d) + Σ_d (W - d)`` AND triples (291) and
``W + 6`` ring triples (30). The ring (:func:`entropy_ring`) holds every score and every
difference of two: ``L(n) < 2^145`` below ``2^24`` rows, a score sums ``|V| (p + 1)`` of
them.

What ``p0`` and ``p1`` receive here: triples (from the dealing party, or OT messages with
``--helper ot``) and each other's masked values, all uniform. Nothing is opened.
"""

from __future__ import annotations

import numpy as np

from mpc.learners.criteria import NLOGN_COEFFS, NLOGN_SCALE_BITS, NLOGN_W
from mpc.runtime.party import Party
from protocols.engine.ring import Ring, ring_for_bits
from protocols.ppid3.shared_scores import Duo
from protocols.primitives.secure_comparison import (
    Needs,
    Pool,
    argmax_needs,
    bit_to_ring,
    multiply,
    prefix_or,
    prefix_or_needs,
    sum_bits,
    sum_bits_needs,
)

__all__ = [
    "entropy_needs",
    "entropy_pad",
    "entropy_ring",
    "entropy_scores",
    "nlogn_needs",
    "nlogn_shares",
]

#: the bits of ``L(n)`` below ``2^W`` rows: ``n < 2^24`` times ``log2_fixed(n) < 24 · 2^116 +
#: 2^116``
L_BITS = NLOGN_W + NLOGN_SCALE_BITS + 5


def entropy_ring(terms: int) -> Ring:
    """The ring of ``--criterion entropy-fixed`` for scores that sum at most ``terms``
    values of ``L`` (``|V| (p + 1)`` of the widest candidate): every score, every
    difference of two, and :func:`entropy_pad` below them, signed."""
    return ring_for_bits(L_BITS + max(1, terms).bit_length() + 3)


def entropy_pad(ring: Ring) -> int:
    """The key of a padded candidate: below every score the ring holds."""
    return -(1 << (ring.bits - 3))


def nlogn_needs(m: int) -> Needs:
    """The triples of :func:`nlogn_shares` on ``m`` counts (AND triples, and ring triples
    of the entropy ring)."""
    w = NLOGN_W
    return sum_bits_needs(m, w) + prefix_or_needs(m, w) + Needs(words=m * (w + 1 + 5))


async def nlogn_shares(
    party: Party, x: np.ndarray, pool: Pool, *, role: int, other: str, tag: str, ring: Ring
) -> np.ndarray:
    """Shares in ``ring`` of ``L(n)`` for each count ``n < 2^W`` whose ``Z_{2^64}`` shares
    (``uint64``) this party holds in ``x`` (the module docstring)."""
    w = NLOGN_W
    m = x.size
    low = np.asarray(x, dtype=np.uint64) & np.uint64((1 << w) - 1)
    own = ((low[:, None] >> np.arange(w, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
    bits, carry = await sum_bits(party, own, pool, role=role, other=other, tag=f"{tag}/add")
    o = await prefix_or(party, bits, pool, role=role, other=other, tag=f"{tag}/top")
    e = o ^ np.concatenate([o[:, 1:], np.zeros_like(o[:, :1])], axis=1)
    arith = await bit_to_ring(party, np.concatenate([e.reshape(-1), carry]), pool, role=role,
                              other=other, tag=f"{tag}/b2a", ring=ring)  # fmt: skip
    e_r, c_r = arith[: m * w].reshape(m, w), arith[m * w :]
    n = ring.reduce(ring.array(low) - (c_r << w))
    k = ring.reduce((e_r * ring.array(np.arange(w))).sum(axis=1))
    scale = ring.array(np.asarray([1 << (w - i) for i in range(w)], dtype=object))
    power = ring.reduce((e_r * scale).sum(axis=1))

    async def mul(a: np.ndarray, b: np.ndarray, step: str) -> np.ndarray:
        return await multiply(party, a, b, pool, role=role, other=other,
                              tag=f"{tag}/{step}", ring=ring)  # fmt: skip

    one = 1 << w
    t = ring.reduce(await mul(n, power, "t") - ring.constant(one if role == 0 else 0, m))
    t2 = await mul(t, t, "t2")
    t34 = await mul(np.concatenate([t2, t2]), np.concatenate([t, t2]), "t34")
    t3, t4 = t34[:m], t34[m:]
    a1, a2, a3, a4 = NLOGN_COEFFS
    q = a1 * (t << (3 * w)) + a2 * (t2 << (2 * w)) + a3 * (t3 << w) + a4 * t4
    log = ring.reduce((k << NLOGN_SCALE_BITS) + q)
    return await mul(n, log, "L")


def entropy_needs(lengths: list[int], p: int, nodes: int, per_node: int, ring: Ring) -> Needs:
    """The entropy ring's triples of a level: ``L`` of every count and every value's total
    of candidates of ``lengths`` values and ``p`` classes, and the argmax over
    ``per_node`` candidates of each of ``nodes`` nodes."""
    return nlogn_needs(sum(lengths) * (p + 1)) + argmax_needs(nodes, per_node, False, ring)


async def entropy_scores(
    duo: Duo, counts: np.ndarray, lengths: list[int], pool: Pool, tag: str
) -> np.ndarray:
    """Shares (the entropy ring) of each candidate's ``Σ_v (Σ_c L(n_vc) - L(n_v))`` from
    the ``Z_{2^64}`` shares of its counts, the candidates' ``(value, class)`` rows laid end to
    end (``lengths[c]`` rows each, ``p`` columns)."""
    m, p = counts.shape
    totals = counts.sum(axis=1, dtype=np.uint64)
    values = np.concatenate([counts.reshape(-1), totals])
    ell = await nlogn_shares(duo.party, values, pool, role=duo.role, other=duo.other,
                             tag=tag, ring=duo.ring)  # fmt: skip
    terms = ell[: m * p].reshape(m, p).sum(axis=1) - ell[m * p :]
    ends = np.cumsum(lengths)
    out = duo.ring.zeros(len(lengths))
    for c, (start, end) in enumerate(zip(ends - np.asarray(lengths), ends, strict=True)):
        out[c] = terms[start:end].sum()
    return duo.ring.reduce(out)
