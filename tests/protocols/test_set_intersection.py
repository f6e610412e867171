"""Record alignment on the records every site holds (``align_records(common=True)``, the
private set intersection of :mod:`protocols.primitives.set_intersection`): every site goes on
with exactly the common records, in one order; equal sets keep their fast path; a site's view
depends only on its own ids, the intersection and the running sizes the protocol declares."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.crypto import randomness
from mpc.runtime.local import run_in_memory
from mpc.runtime.view import ViewRecorder
from parties.api import run_system
from protocols.primitives import set_intersection
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


def _chain(sets: dict[str, list[str]], captured: dict[str, Any]) -> dict[str, Any]:
    """``intersection_members`` alone (in memory) on hashed ids, every message the last site
    receives kept in ``captured["received"]`` (tag, body), the tags it unmasks from OTs in
    ``captured["unmasked"]`` and its own tags in ``captured["own"]``."""
    names = list(sets)
    sizes = {n: len(s) for n, s in sets.items()}

    async def program(p: Any) -> Any:
        if p.name == names[-1]:
            recv = p.recv

            async def kept(*args: Any, **kwargs: Any) -> Any:
                body = await recv(*args, **kwargs)
                captured.setdefault("received", []).append((args[1], body))
                return body

            p.recv = kept
        return await set_intersection.intersection_members(p, _hashed(sets[p.name]), sizes)

    async def own_tags(party: Any, peer: str, rows: np.ndarray, *, tag: str) -> np.ndarray:
        tags = await receive(party, peer, rows, tag=tag)
        if party.name == names[-1]:
            captured["own"] = tags
        return tags

    async def unmasked(*args: Any, **kwargs: Any) -> np.ndarray:
        tags = await masked(*args, **kwargs)
        captured.setdefault("unmasked", []).append(tags)
        return tags

    receive, masked = set_intersection.oprf_receive, set_intersection._masked_tags_receive
    set_intersection.oprf_receive = own_tags
    set_intersection._masked_tags_receive = unmasked
    try:
        results, _ = asyncio.run(run_in_memory(names, program, timeout=60))
    finally:
        set_intersection.oprf_receive = receive
        set_intersection._masked_tags_receive = masked
    return results


def _hashed(ids: list[str]) -> np.ndarray:
    data = b"".join(hashlib.sha256(i.encode()).digest()[:16] for i in ids)
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, 16)


def _rows16(body: Any) -> list[bytes]:
    """Every 16-byte row of the uint8 arrays of a message body (wider rows cut in 16s)."""
    if isinstance(body, np.ndarray) and body.dtype == np.uint8 and body.ndim == 2:
        flat = np.ascontiguousarray(body).reshape(-1)
        return [flat[i : i + 16].tobytes() for i in range(0, len(flat) - 15, 16)]
    if isinstance(body, list | tuple):
        return [r for b in body for r in _rows16(b)]
    return []


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_last_site_sees_its_own_tags_for_the_common_records_only(k: int) -> None:
    """Everything the last site receives, and unmasks, holds of the tags it has for its own
    records those of the records every site holds and no other, though it shares further
    records with the site before it (and with the first): the tags of a middle site's other
    records stay masked."""
    common = [f"c{i}" for i in range(20)]
    last = [*common, "p1", "p2", "p3", "own1"]  # p*: held by the site before, not the first
    sets = {f"site{j + 1}": [*common, f"x{j}", "p1", "p2", "p3"] for j in range(k - 1)}
    sets["site1"] = [*common, "x0", "x00"] if k > 2 else [*common, "p1", "p2", "p3"]
    sets[f"site{k}"] = last
    captured: dict[str, Any] = {}
    members = _chain(sets, captured)[f"site{k}"]
    want = set.intersection(*(set(s) for s in sets.values()))
    assert {x for x, m in zip(last, members, strict=True) if m} == want
    seen = {r for _, body in captured["received"] for r in _rows16(body)}
    seen |= {r for tags in captured.get("unmasked", []) for r in _rows16(tags)}
    own = {x: captured["own"][i].tobytes() for i, x in enumerate(last)}
    assert {x for x, t in own.items() if t in seen} == want


@pytest.mark.parametrize("k", [2, 3])
def test_where_a_match_lies_tells_the_last_site_nothing_of_another_site_s_row_order(
    k: int,
) -> None:
    """The first site's tags (k = 2) and a middle site's (k = 3) reach the last site in a
    random order: the common records, the first 30 rows of that site's file, match at
    positions spread over all of its 60."""
    common = [f"c{i}" for i in range(30)]
    sets = {f"site{j + 1}": [*common, *(f"s{j}-{i}" for i in range(30))] for j in range(k)}
    spread = []
    for _ in range(3):
        captured: dict[str, Any] = {}
        _chain(sets, captured)
        got = {tag.split("/")[1]: body for tag, body in captured["received"]
               if tag.endswith("/0") and "/u" not in tag}  # fmt: skip
        first = got["first"].reshape(-1, 16)
        # k = 2: the first site's tags, 3 per record, against the last site's own; k = 3: the
        # middle site's, 1 per record, against the first site's (under the same key)
        tags, per_record = (first, 3) if k == 2 else (got["site2"], 1)
        mine = {t.tobytes() for t in (captured["own"] if k == 2 else first)}
        at = [i // per_record for i, t in enumerate(tags) if t.tobytes() in mine]
        assert len(at) == 30
        spread.append(max(at))
    assert max(spread) >= 40, spread


def test_mpc_run_psi_finds_the_intersection_across_processes() -> None:
    """``mpc run psi`` (the alignment alone, a process per site over CurveZMQ): four sites,
    each ending with exactly its common elements, which the launcher checks by digest."""
    run = run_system("psi", random=400, parties=4, overlap=0.3, seed=3, timeout=60)
    assert run.ok, run.error
    assert run.result["correct"] is True
    assert run.result["common"] == {f"site{i}": 120 for i in range(1, 5)}
    entries = {e["label"] for e in run.reports["site4"]["ledger"]}
    assert {"intersection/running", "intersection/members"} <= entries
    assert not any(e["label"].startswith("intersection/")
                   for e in run.reports["site2"]["ledger"])  # fmt: skip
