"""Secure sum and IsREmpty over the in-memory transport: exactness, ledgers, uniform views."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from mpc.errors import ConfigError
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.transport import InMemoryNetwork
from protocols.ppid3.is_r_empty import is_r_empty
from protocols.primitives.secure_sum import secure_sum


def names(k: int) -> list[str]:
    return [f"p{i + 1}" for i in range(k)]


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    k=st.integers(2, 6),
    modulus=st.integers(2, 2**80),
    reveal=st.sampled_from(["all", "receiver"]),
)
def test_secure_sum_equals_the_plain_sum(data, k: int, modulus: int, reveal: str) -> None:
    xs = data.draw(st.lists(st.integers(0, 2**70), min_size=k, max_size=k))
    receiver = data.draw(st.sampled_from(names(k)))
    inputs = dict(zip(names(k), xs, strict=True))
    results, parties = asyncio.run(
        run_in_memory(
            names(k),
            lambda p: secure_sum(
                p, inputs[p.name], modulus=modulus, receiver=receiver, reveal=reveal
            ),
        )
    )
    expected = sum(xs) % modulus
    for name, party in parties.items():
        learns = reveal == "all" or name == receiver
        assert results[name] == (expected if learns else None)
        # the ledger holds exactly what the party may learn: the sum, or nothing
        assert party.ledger.to_list() == (
            [{"label": "secure-sum/result", "value": expected, "step": "secure-sum"}]
            if learns
            else []
        )


@settings(max_examples=25, deadline=None)
@given(flags=st.lists(st.integers(0, 1), min_size=2, max_size=6), m=st.integers(7, 2**40))
def test_is_r_empty_equals_sum_of_flags_is_zero(flags: list[int], m: int) -> None:
    k = len(flags)
    ar = dict(zip(names(k), flags, strict=True))
    results, parties = asyncio.run(
        run_in_memory(names(k), lambda p: is_r_empty(p, ar[p.name], m=m))
    )
    expected = sum(flags) == 0
    assert set(results.values()) == {expected}
    for party in parties.values():
        assert party.ledger.labels() == ["is-r-empty/result"]
        assert party.ledger.entries[0].value is expected
    # only P1 and Pk exponentiate: 2 each (Algorithm 2, lines 10-12)
    assert parties["p1"].metrics.crypto["modexp"] == 2
    assert parties[f"p{k}"].metrics.crypto["modexp"] == 2
    assert all(parties[n].metrics.crypto["modexp"] == 0 for n in names(k)[1:-1])


def test_is_r_empty_refuses_a_too_small_domain() -> None:
    with pytest.raises(ConfigError, match="domain size m"):
        asyncio.run(run_in_memory(names(3), lambda p: is_r_empty(p, 0, m=3)))


def test_secure_sum_refuses_bad_parameters() -> None:
    with pytest.raises(ConfigError, match="modulus"):
        asyncio.run(run_in_memory(names(2), lambda p: secure_sum(p, 1, modulus=1)))
    with pytest.raises(ConfigError, match="reveal"):
        asyncio.run(run_in_memory(names(2), lambda p: secure_sum(p, 1, modulus=5, reveal="x")))


class _BiasedRandom(random.Random):
    """A broken mask source: r only ever in the lower half of the range."""

    def randrange(self, stop, *args, **kwargs):  # type: ignore[override]
        return super().randrange(max(1, stop // 2))


def _middle_view(inputs: list[int], modulus: int, runs: int, rng: random.Random) -> Counter[int]:
    """What p2 receives in the ring, over ``runs`` invocations with the mask from ``rng``."""
    seen: Counter[int] = Counter()
    network = InMemoryNetwork()

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if receiver == "p2" and env.tag.endswith("/ring"):
            seen[env.body] += 1

    network.taps.append(tap)
    xs = dict(zip(names(3), inputs, strict=True))

    async def program(p):
        for i in range(runs):
            await secure_sum(p, xs[p.name], modulus=modulus, tag=f"s{i}", rng=rng)

    asyncio.run(run_in_memory(names(3), program, network=network))
    return seen


@pytest.mark.parametrize("inputs", [[0, 0, 0], [7, 3, 5], [15, 15, 15]])
def test_middle_party_view_is_uniform_whatever_the_inputs(inputs: list[int]) -> None:
    m, runs = 16, 1600
    seen = _middle_view(inputs, m, runs, random.Random(20261122))
    observed = [seen[v] for v in range(m)]
    assert sum(observed) == runs
    assert chisquare(observed).pvalue > 0.001


def test_uniformity_test_detects_a_biased_mask() -> None:
    m, runs = 16, 1600
    seen = _middle_view([7, 3, 5], m, runs, _BiasedRandom(20261122))
    observed = [seen[v] for v in range(m)]
    assert chisquare(observed).pvalue < 1e-6
