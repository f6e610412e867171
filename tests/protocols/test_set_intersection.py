"""Record alignment on the records every site holds (``align_records(common=True)``, the
private set intersection of :mod:`protocols.primitives.set_intersection`): every site goes on
with exactly the common records, in one order; equal sets keep their fast path; a site's view
depends only on its own ids, the intersection and the running sizes the protocol declares."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.crypto import randomness
from mpc.runtime.local import run_in_memory
from mpc.runtime.view import ViewRecorder
from protocols.primitives.record_alignment import RecordMismatch, align_records

from ..views import canonical_view, differences, joint_failures, uniformity_failures

SEED = bytes(range(32))


def run_alignment(
    sets: dict[str, list[str]], *, common: bool = True, record: bool = False,
    fixed: dict[str, bytes] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """Every site aligns its ids (in memory); each site's result and party."""

    async def program(p: Any) -> Any:
        seed = (fixed or {}).get(p.name)
        with contextlib.nullcontext() if seed is None else randomness.fixed(seed):
            if record:
                p.view = ViewRecorder()
            return await align_records(p, sets[p.name], common=common)

    return asyncio.run(run_in_memory(list(sets), program, timeout=60))


@st.composite
def overlapping(draw: st.DrawFn) -> dict[str, list[str]]:
    """2-5 sites: a common core and each site's own extra ids, every file in its own order."""
    k = draw(st.integers(2, 5))
    core = draw(st.integers(0, 12))
    pool = [f"p{i:03d}" for i in range(core + 40)]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rng.shuffle(pool)
    common, rest = pool[:core], pool[core:]
    sets = {}
    for j in range(k):
        extra = [x for x in rest if rng.random() < 0.3]
        ids = common + extra
        rng.shuffle(ids)
        sets[f"site{j + 1}"] = ids
    return sets


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(overlapping())
def test_every_site_goes_on_with_exactly_the_common_records_in_one_order(
    sets: dict[str, list[str]],
) -> None:
    want = set.intersection(*(set(s) for s in sets.values()))
    if not want:
        with pytest.raises(RecordMismatch, match="no record id is held by every site"):
            run_alignment(sets)
        return
    results, parties = run_alignment(sets)
    orders = {n: [sets[n][i] for i in r.order] for n, r in results.items()}
    first = next(iter(orders.values()))
    assert set(first) == want and len(first) == len(want)
    assert all(o == first for o in orders.values())
    for name, r in results.items():
        assert (r.n, r.held) == (len(want), len(sets[name]))
        entries = {e["label"]: e["value"] for e in parties[name].ledger.to_list()}
        assert entries["record-alignment/common"] == len(want)
        assert entries["record-alignment/intersection"] == {"held": len(sets[name]),
                                                            "common": len(want)}  # fmt: skip


def test_equal_sets_take_the_fast_path_and_differing_ones_still_stop_by_default() -> None:
    ids = [f"r{i}" for i in range(20)]
    sets = {"site1": ids, "site2": ids[::-1], "site3": ids[5:] + ids[:5]}
    results, parties = run_alignment(sets)
    assert all(r.n == 20 for r in results.values())
    labels = {e["label"] for p in parties.values() for e in p.ledger.to_list()}
    assert not any(x.startswith("record-alignment/intersection") for x in labels), labels
    sets["site2"] = ids[:15]
    with pytest.raises(RecordMismatch, match="15 record ids are held by every site"):
        run_alignment(sets, common=False)


def _twins() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Two inputs with the same sizes, the same intersection and the same running sizes at
    every site, whose records outside the intersection differ: which of the second site's
    records the first site also holds is not the same."""
    common = [f"c{i}" for i in range(6)]
    a = {
        "site1": [*common, "x1", "x2", "x3", "x4"],
        "site2": [*common, "x1", "x2", "y1", "y2"],
        "site3": [*common, "z1", "z2", "z3"],
    }
    b = {
        "site1": [*common, "x1", "x2", "x3", "x4"],
        "site2": [*common, "x3", "x4", "w1", "w2"],
        "site3": [*common, "v1", "v2", "v3"],
    }
    return a, b


@pytest.mark.parametrize("name", ["site1", "site2", "site3"])
def test_a_site_s_view_depends_only_on_its_ids_the_intersection_and_the_declared_sizes(
    name: str,
) -> None:
    """With the site's own randomness fixed: the same input twice repeats nothing uniform it
    receives; two inputs with its own ids, the intersection and the declared running sizes
    the same (the other sites' other records different) look the same to it."""
    a, b = _twins()
    keep = {name: a[name]}
    b = {**b, **keep}
    runs = [run_alignment(x, record=True, fixed={name: SEED})[1][name].report()
            for x in (a, a, b)]  # fmt: skip
    assert joint_failures(runs[0], runs[1]) == []
    assert differences(canonical_view(runs[0]), canonical_view(runs[2])) == []
    assert joint_failures(runs[0], runs[2]) == []
    assert uniformity_failures(runs[0]) == []
