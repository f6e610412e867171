"""The owner-known permutation of another party's shares (:mod:`protocols.engine.shuffle`)
and the counts of every threshold it makes (:mod:`protocols.ppid3.threshold_counts`):
the shares sum to the plain answer for random matrices, permutations and codes; the helper
refuses an order that is not a permutation. (What each party sees beside its own randomness
is tested on whole trees, in ``test_ppid3_thresholds``' twins with shuffles.)"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.errors import ProtocolError
from mpc.runtime.chunks import pack_array
from mpc.runtime.local import run_in_memory
from protocols.engine.ring import Ring
from protocols.engine.shuffle import (
    random_permutation,
    shuffle_helper,
    shuffle_holder,
    shuffle_owner,
)
from protocols.ppid3.threshold_counts import code_order, per_code, prefix_counts


def _shuffle(z: np.ndarray, perm: np.ndarray, keep: int) -> dict[str, Any]:
    """One shuffle among three parties in memory; each party's result."""
    cols, n = z.shape

    async def owner(p: Any) -> Any:
        return await shuffle_owner(p, "holder", "helper", perm, cols, keep, z.dtype, "t")

    async def holder(p: Any) -> Any:
        return await shuffle_holder(p, "owner", "helper", z, keep, "t")

    async def helper(p: Any) -> Any:
        return await shuffle_helper(p, "owner", "holder", cols, n, keep, z.dtype, "t")

    programs = {"owner": owner, "holder": holder, "helper": helper}
    results, _ = asyncio.run(run_in_memory(list(programs), programs, timeout=30))
    return results


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 60), st.integers(1, 4), st.data(), st.sampled_from([np.uint16, np.uint32]))
def test_the_two_shares_sum_to_the_holder_s_matrix_in_the_owner_s_order(
    n: int, cols: int, data: st.DataObject, dtype: Any
) -> None:
    keep = data.draw(st.integers(1, n))
    perm = np.asarray(data.draw(st.permutations(list(range(n)))), dtype=np.int64)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    z = rng.integers(0, np.iinfo(dtype).max, size=(cols, n), dtype=dtype)
    got = _shuffle(z, perm, keep)
    total = Ring.of(dtype).reduce(got["owner"] + got["holder"])
    assert total.shape == (cols, keep)
    assert np.array_equal(total, z[:, perm[:keep]])
    assert got["helper"] is None


def test_a_random_permutation_is_one_and_each_seed_draws_its_own() -> None:
    a, b = random_permutation(bytes(32), 500), random_permutation(bytes([1] * 32), 500)
    assert sorted(a.tolist()) == list(range(500)) and sorted(b.tolist()) == list(range(500))
    assert not np.array_equal(a, b)
    assert np.array_equal(a, random_permutation(bytes(32), 500))


def test_the_helper_refuses_an_order_that_is_not_a_permutation() -> None:
    async def owner(p: Any) -> None:
        await p.send("helper", "t/split",
                     {"order": pack_array(np.zeros(4, np.uint32)), "mask": bytes(32)})  # fmt: skip

    async def helper(p: Any) -> None:
        await shuffle_helper(p, "owner", "holder", 1, 4, 4, np.uint16, "t")

    async def holder(p: Any) -> None:
        return None

    programs = {"owner": owner, "holder": holder, "helper": helper}
    with pytest.raises(ProtocolError, match="not a permutation of 4"):
        asyncio.run(run_in_memory(list(programs), programs, timeout=30))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 8), st.booleans(), st.data())
def test_the_sorted_prefix_sums_are_the_counts_of_every_code_and_below(
    n: int, values: int, exact: bool, data: st.DataObject
) -> None:
    """Ties, codes with no row (bins' cut points) and a single code: the counts per code
    from the owner's two orders equal a plain count, and so does their pass through two
    shuffles."""
    if exact:
        values = min(values, n)
        codes = np.asarray(
            data.draw(st.permutations(list(range(values)) + data.draw(
                st.lists(st.integers(0, values - 1), min_size=n - values, max_size=n - values)
            ))), dtype=np.int64)  # fmt: skip
    else:
        codes = np.asarray(data.draw(st.lists(st.integers(0, values - 1), min_size=n,
                                              max_size=n)), dtype=np.int64)  # fmt: skip
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    z = rng.integers(0, 50, size=(2, n)).astype(np.uint32)
    want = np.stack([np.bincount(codes, weights=row, minlength=values) for row in z]).astype(
        np.uint32
    )
    first, second = code_order(codes, values, exact)
    assert np.array_equal(per_code(prefix_counts(z, first, second, values)), want)
    # the same through two shuffles of the holder's share (the owner holding none)
    length = first.size
    padded = np.zeros((2, length), np.uint32)
    padded[:, :n] = z
    one = _shuffle(padded, first, length)
    ring = Ring.of(np.uint32)
    s_owner = np.cumsum(one["owner"], axis=1, dtype=np.uint32)
    s_holder = np.cumsum(one["holder"], axis=1, dtype=np.uint32)
    two = _shuffle(s_holder, second, values)
    total = ring.reduce(s_owner[:, second[:values]] + two["owner"] + two["holder"])
    assert np.array_equal(per_code(total), want)


def test_every_distinct_value_as_a_candidate_leaves_no_code_empty() -> None:
    with pytest.raises(ValueError, match="left a code empty"):
        code_order(np.asarray([0, 2, 2]), 3, exact=True)
