"""The batched OPRF (:mod:`protocols.primitives.batched_oprf`) and its cuckoo hashing
(:mod:`mpc.crypto.cuckoo`): every element placed once in one of its bins; a sender's tag
equals the receiver's exactly for the elements the receiver holds; each side's view is
uniform, fresh from run to run with its own randomness fixed, and the same for two receiver
sets of one size."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.crypto import randomness
from mpc.crypto.cuckoo import HASHES, CuckooFailure, bins_for, candidate_bins, cuckoo_table
from mpc.runtime.local import run_in_memory
from mpc.runtime.view import ViewRecorder
from protocols.primitives.batched_oprf import codewords, oprf_receive, oprf_send

from ..views import canonical_view, differences, joint_failures, uniformity_failures

SEED = bytes(range(32))


def elements(words: list[int]) -> np.ndarray:
    """Distinct 16-byte elements from small integers (as keyed hashes would be)."""
    data = b"".join(hashlib.sha256(str(w).encode()).digest()[:16] for w in words)
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, 16)


def run_oprf(
    held: np.ndarray, asked: np.ndarray, *, record: bool = False, fixed: str | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The receiver's tags of ``held``, the sender's tags of ``asked``, the two parties."""

    async def program(p: Any) -> Any:
        with randomness.fixed(SEED) if p.name == fixed else contextlib.nullcontext():
            if record:
                p.view = ViewRecorder()
            if p.name == "sender":
                key = await oprf_send(p, "receiver", len(held), tag="oprf")
                return key.tags(asked)
            return await oprf_receive(p, "sender", held, tag="oprf")

    results, parties = asyncio.run(run_in_memory(["sender", "receiver"], program, timeout=60))
    return results["receiver"], results["sender"], parties


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 2**32 - 1))
def test_every_element_is_placed_once_in_one_of_its_own_bins(n: int, salt: int) -> None:
    m = bins_for(n)
    bins = candidate_bins(elements(list(range(salt, salt + n))), salt.to_bytes(4, "big"), m)
    table, slot = cuckoo_table(bins, m)
    held = table[table >= 0]
    assert sorted(held.tolist()) == list(range(n))
    assert (table[bins[np.arange(n), slot]] == np.arange(n)).all()
    assert m >= 1.27 * n and m % 512 == 0


def test_more_elements_than_bins_is_a_failure_not_a_loop() -> None:
    bins = np.zeros((600, HASHES), dtype=np.int64)  # every element wants bin 0
    with pytest.raises(CuckooFailure):
        cuckoo_table(bins, 512)
    with pytest.raises(CuckooFailure, match="could not be placed"):
        cuckoo_table(np.zeros((3, HASHES), dtype=np.int64), 512)


@settings(max_examples=15, deadline=None)
@given(st.sets(st.integers(0, 400), max_size=120), st.sets(st.integers(0, 400), max_size=120))
def test_a_sender_tag_equals_the_receivers_exactly_for_the_elements_it_holds(
    held: set[int], asked: set[int]
) -> None:
    h, a = sorted(held), sorted(asked)
    mine, theirs, _ = run_oprf(elements(h), elements(a))
    assert mine.shape == (len(h), 16) and theirs.shape == (len(a), HASHES, 16)
    own = {row.tobytes(): x for row, x in zip(mine, h, strict=True)}
    for x, tags in zip(a, theirs, strict=True):
        hits = [own[t.tobytes()] for t in tags if t.tobytes() in own]
        assert hits == ([x] if x in held else []), (x, hits)
    assert len({row.tobytes() for row in mine}) == len(h)


def test_the_code_is_a_wide_random_code() -> None:
    """Codewords of distinct elements differ in about half their 512 bits (the OPRF needs
    at least 128 everywhere); the code key follows the seed."""
    words = codewords(elements(list(range(2000))), b"s" * 16)
    bits = np.unpackbits(words, axis=1).astype(np.int16)
    apart = np.abs(bits[1:] - bits[:-1]).sum(axis=1)
    assert apart.min() > 180 and abs(apart.mean() - 256) < 4
    assert not (codewords(elements([1]), b"t" * 16) == words[1]).all()


@pytest.mark.parametrize("name", ["sender", "receiver"])
def test_each_side_s_view_is_fresh_and_the_same_for_two_sets_of_one_size(name: str) -> None:
    """With the party's own randomness fixed: what it receives does not repeat from run to
    run, passes the uniformity test, and two receiver sets of the same size (the sender's
    elements the same) look alike."""
    a, b = elements(list(range(300))), elements(list(range(1000, 1300)))
    asked = elements(list(range(150, 450)))
    runs = [run_oprf(held, asked, record=True, fixed=name)[2][name].report()
            for held in (a, a, b)]  # fmt: skip
    assert joint_failures(runs[0], runs[1]) == []
    assert differences(canonical_view(runs[0]), canonical_view(runs[2])) == []
    assert joint_failures(runs[0], runs[2]) == []
    assert uniformity_failures(runs[0]) == []
    receipts = {m["receipt"] for m in runs[0]["view"]["messages"]}
    assert ("oprf/u" in receipts) == (name == "sender"), receipts
