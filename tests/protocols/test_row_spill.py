"""A site's rows in ranges set aside on its own disk (``protocols.engine.spill``,
:class:`protocols.ppid3.level_products.RowRange`): arrays come back as they were written, in
a folder only the party reads, removed at the end; a released range holds nothing but its
codes; a run in ranges holds one range in memory at a time at every site, grows the plain
learner's tree and leaves no folder behind, also when it fails."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import partition
from mpc.errors import ProtocolError
from protocols.engine.ring import Ring
from protocols.engine.spill import Spill
from protocols.ppid3 import level_products
from protocols.ppid3.level_arrays import one_hot_columns
from protocols.ppid3.level_products import RowRange

from .. import datasets
from .test_reveal_tree import _assert_same_tree, run_reveal


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from([np.uint8, np.uint16, np.uint32, np.uint64, np.float64, np.bool_]),
    st.lists(st.integers(0, 6), min_size=0, max_size=3),
    st.randoms(use_true_random=False),
)
def test_a_spilled_array_comes_back_as_it_was_written(
    dtype: Any, shape: list[int], rnd: Any
) -> None:
    rng = np.random.default_rng(rnd.getrandbits(32))
    a = rng.integers(0, 2**8, size=shape).astype(dtype)
    spill = Spill()
    try:
        spill.put("a", a)
        spill.put("b", a.reshape(-1)[::-1].copy())
        got = spill.get("a")
        assert got.dtype == a.dtype and got.shape == a.shape and np.array_equal(got, a)
        spill.drop("b")
        assert "b" not in spill and "a" in spill
        with pytest.raises(ProtocolError, match="nothing was set aside"):
            spill.get("b")
    finally:
        spill.close()
    assert not spill.folder.exists()


def test_a_spill_is_private_to_its_party_and_holds_numbers_only(tmp_path: Path) -> None:
    spill = Spill(tmp_path)
    try:
        assert stat.S_IMODE(spill.folder.stat().st_mode) == 0o700
        spill.put("x", np.arange(5, dtype=np.uint32))
        (path,) = spill.folder.iterdir()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        with pytest.raises(ProtocolError, match="holds numbers"):
            spill.put("o", np.array([1, "two"], dtype=object))
        assert spill.written == 20
    finally:
        spill.close()
    assert list(tmp_path.iterdir()) == []


def test_a_released_range_holds_its_codes_only_and_comes_back_whole() -> None:
    rng = np.random.default_rng(3)
    sizes = [3, 2, 4]
    codes = np.stack([rng.integers(0, k, 50) for k in sizes], axis=1)
    dtype = Ring.for_rows(50).dtype
    spill = Spill()
    try:
        ranges = RowRange.split(codes, sizes, dtype, 16, spill)
        assert [r.n for r in ranges] == [16, 16, 16, 2]
        assert all(not r.held and r.xt.size == 0 and not r.shares for r in ranges)
        r = ranges[1]
        r.acquire()
        want, _ = one_hot_columns(codes[16:32], sizes, dtype)
        assert np.array_equal(r.xt, want)
        ring = Ring.of(dtype)
        z0, z1 = (rng.integers(0, 2**16, (2, 16)).astype(dtype) for _ in range(2))
        r.shares[0], r.shares[1] = z0, z1
        seed = bytes(range(32))
        r.prepared["site2"], r.ra_seeds["site2"] = ring.left(ring.random(seed, want.shape)), seed
        r.prepared["site3"] = ring.left(want)  # masks without their seed cannot be made again
        with pytest.raises(ProtocolError, match="no seed of the masks with"):
            r.release()
        del r.prepared["site3"]
        r.xt_hat["site1"] = ring.left(want + 7)
        r.release()
        assert not r.shares and not r.prepared and not r.xt_hat and r.xt.size == 0
        assert f"r{r.index}/xt" not in spill  # made again from the codes
        r.acquire(products=False)  # the shares alone
        assert np.array_equal(r.shares[0], z0) and not r.prepared and r.xt.size == 0
        del r.shares[0]
        r.shares[5] = z0 + 1  # a new node; the dropped one's file goes
        r.release()
        r.acquire()
        assert sorted(r.shares) == [1, 5] and np.array_equal(r.shares[5], z0 + 1)
        assert np.array_equal(r.shares[1], z1) and f"r{r.index}/z0" not in spill
        assert np.array_equal(r.xt, want)
        assert np.array_equal(r.prepared["site2"][1][0], ring.random(seed, want.shape))
        assert np.array_equal(r.xt_hat["site1"][1][0], want + 7)
    finally:
        spill.close()


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own temporary folder, where spills are made (tests run side by side)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.fixture
def held_ranges(monkeypatch: pytest.MonkeyPatch) -> dict[int, int]:
    """The most ranges of one site's rows in memory at once after they were first set aside
    (by the ranges' spill)."""
    live: dict[int, set[int]] = {}
    most: dict[int, int] = {}
    acquire, release = RowRange.acquire, RowRange.release

    def acquired(self: RowRange, products: bool = True) -> None:
        acquire(self, products)
        now = live.setdefault(id(self.spill), set())
        now.add(id(self))
        most[id(self.spill)] = max(most.get(id(self.spill), 0), len(now))

    def released(self: RowRange) -> None:
        live.get(id(self.spill), set()).discard(id(self))
        release(self)

    monkeypatch.setattr(RowRange, "acquire", acquired)
    monkeypatch.setattr(RowRange, "release", released)
    return most


@settings(max_examples=4, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.sampled_from([("dealer", 2), ("sites", 3), ("dealer", 4)]), st.sampled_from([97, 400]))
def test_a_run_in_ranges_holds_one_range_at_a_time_and_leaves_no_folder(
    held_ranges: dict[int, int], own_tmp: Path, how: tuple[str, int], block: int
) -> None:
    helper, k = how
    table, _ = datasets.table("tic-tac-toe")
    part = partition(table.attributes, k, class_site=k - 1)
    held_ranges.clear()  # one example's sites
    out = run_reveal(table, part, helper=helper, max_depth=3, row_block=block)
    _assert_same_tree(out)
    assert len(held_ranges) == k and set(held_ranges.values()) == {1}
    assert not list(own_tmp.glob("mpc-rows-*"))


def test_a_failed_run_in_ranges_leaves_no_folder(
    monkeypatch: pytest.MonkeyPatch, own_tmp: Path
) -> None:
    table, _ = datasets.table("tic-tac-toe")
    part = partition(table.attributes, 3, class_site=2)
    real = level_products.child_shares

    async def broken(*args: Any, **kwargs: Any) -> None:
        await real(*args, **kwargs)
        raise ProtocolError("a peer went away")

    monkeypatch.setattr("protocols.ppid3.level_grower.child_shares", broken)
    with pytest.raises(Exception, match=r"went away|failed"):
        run_reveal(table, part, helper="sites", max_depth=3, row_block=100)
    assert not list(own_tmp.glob("mpc-rows-*"))
