"""``entropy-fixed`` on shares (:meth:`mpc.learners.criteria.EntropyFixed.shared_nlogn`) and the bit
decomposition under it: every ``L(n)`` opens to the plain learner's integer
(:func:`mpc.learners.criteria.nlogn_fixed`), at the edges too (0, 1, powers of two and their
neighbours, the largest count), and a sum's bits, carry and prefix-or are exact."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.learners.criteria import NLOGN_W, EntropyFixed, nlogn_fixed
from protocols.engine.circuits import prefix_or, sum_bits
from protocols.engine.ring import Ring, ring_for_bits
from protocols.engine.session import Session

from .test_secure_comparison import NAMES, run_pair

EDGES = [0, 1, 2, 3, 2**NLOGN_W - 1, 2**23, 2**23 - 1, 2**23 + 1, 255, 256, 257]


def _shares(values: list[int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(values, dtype=np.uint64)
    a = np.random.default_rng(seed).integers(0, 2**63, size=x.shape, dtype=np.uint64) * 2
    return a, x - a  # (uint64 wraps: shares mod 2^64)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 2**NLOGN_W - 1), st.sampled_from(EDGES)),
                min_size=1, max_size=24),
       st.integers(0, 2**32))  # fmt: skip
def test_nlogn_on_shares_is_the_plain_learners_integer(values: list[int], seed: int) -> None:
    ring = ring_for_bits(EntropyFixed().score_bits(64))
    s0, s1 = _shares(values, seed)

    async def body(s: Session) -> Any:
        return await EntropyFixed().shared_nlogn(s, s0 if s.role == 0 else s1, "L", ring)

    out = run_pair(NAMES, body)
    assert ring.signed(ring.reduce(out["p0"] + out["p1"])) == [nlogn_fixed(v) for v in values]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.data())
def test_sum_bits_carry_and_prefix_or_are_exact(width: int, data: Any) -> None:
    n = data.draw(st.integers(1, 12))
    x0 = data.draw(st.lists(st.integers(0, 2**width - 1), min_size=n, max_size=n))
    x1 = data.draw(st.lists(st.integers(0, 2**width - 1), min_size=n, max_size=n))

    def bits(v: list[int]) -> np.ndarray:
        return np.asarray([[(x >> i) & 1 for i in range(width)] for x in v], dtype=np.uint8)

    own = (bits(x0), bits(x1))
    ring = Ring(64)

    async def body(s: Session) -> Any:
        bits_of_sum, c = await sum_bits(s, own[s.role], "s", ring)
        o = await prefix_or(s, bits_of_sum, "o", ring)
        return bits_of_sum, c, o

    out = run_pair(NAMES, body)
    (s0, c0, o0), (s1, c1, o1) = out["p0"], out["p1"]
    total = [a + b for a, b in zip(x0, x1, strict=True)]
    assert ((s0 ^ s1) == bits([t % 2**width for t in total])).all()
    assert (c0 ^ c1).tolist() == [t >> width for t in total]
    expect = [[int((t % 2**width) >> i != 0) for i in range(width)] for t in total]
    assert (o0 ^ o1).tolist() == expect
