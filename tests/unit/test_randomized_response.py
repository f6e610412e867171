"""Multi-group randomized response: encoding, disguise, Theorem 1 estimation (2^m system and
the O(m) weights), unbiasedness over many disguises, and the refusals of Theorem 2."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.errors import ConfigError
from protocols.hybrid.randomized_response import (
    binary_encode,
    disguise,
    estimate_counts,
    estimate_probability,
    estimate_probability_fast,
    unbiased_weights,
)

# ----------------------------------------------------------------------------- strategies


@st.composite
def grouped_bits(draw: st.DrawFn, max_groups: int = 4) -> tuple[np.ndarray, list[list[int]]]:
    """A random 0/1 matrix and a random partition of its columns into groups."""
    n = draw(st.integers(1, 30))
    n_bits = draw(st.integers(1, 8))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, size=(n, n_bits), dtype=np.uint8)
    labels = draw(st.lists(st.integers(0, max_groups - 1), min_size=n_bits, max_size=n_bits))
    groups = [[j for j in range(n_bits) if labels[j] == k] for k in sorted(set(labels))]
    return bits, groups


@st.composite
def with_conjunction(
    draw: st.DrawFn, max_groups: int = 4
) -> tuple[np.ndarray, list[list[int]], dict[int, int]]:
    bits, groups = draw(grouped_bits(max_groups))
    cols = draw(st.lists(st.integers(0, bits.shape[1] - 1), unique=True, max_size=bits.shape[1]))
    conjunction = {c: draw(st.integers(0, 1)) for c in cols}
    return bits, groups, conjunction


def true_frequency(bits: np.ndarray, conjunction: dict[int, int]) -> float:
    ok = np.ones(bits.shape[0], dtype=bool)
    for c, b in conjunction.items():
        ok &= bits[:, c] == b
    return float(ok.mean())


# ----------------------------------------------------------------------------- encoding


def test_onehot_encoding_maps_values_to_bits() -> None:
    cols = {"outlook": ["sunny", "rain", "overcast", "sunny"], "windy": ["t", "f", "f", "t"]}
    doms = {"outlook": ["sunny", "overcast", "rain"], "windy": ["f", "t"]}
    bits, layout = binary_encode(cols, doms)
    assert bits.dtype == np.uint8 and bits.shape == (4, 5)
    assert layout.columns[1] == ("outlook", "overcast") and layout.columns[4] == ("windy", "t")
    assert bits.sum(axis=1).tolist() == [2, 2, 2, 2]
    assert layout.conjunction({"outlook": "rain", "windy": "f"}) == {2: 1, 3: 1}
    assert layout.groups([["outlook"], ["windy"]]) == [[0, 1, 2], [3, 4]]
    # a 3-valued one-hot attribute shows its flips; a 2-valued one does not
    assert layout.flip_revealing == ("outlook",)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6, 8])
def test_paired_code_words_are_distinct_and_flips_stay_valid_for_even_domains(k: int) -> None:
    domain = [f"v{i}" for i in range(k)]
    bits, layout = binary_encode({"a": domain}, {"a": domain}, code="paired")
    words = {tuple(w) for w in bits.tolist()}
    assert len(words) == k and layout.words("a").shape[1] == max(1, (k - 1).bit_length())
    for i, v in enumerate(domain):
        cond = layout.conjunction({"a": v})
        assert [bits[i, c] == b for c, b in cond.items()] == [True] * len(cond)
    assert layout.flip_revealing == (() if k % 2 == 0 else ("a",))
    if k % 2 == 0:  # a flipped record is another valid value
        assert {tuple(1 - x for x in w) for w in words} == words


@pytest.mark.parametrize("code", ["onehot", "paired"])
def test_conjunction_on_encoded_bits_is_the_value_condition(code: str) -> None:
    rng = np.random.default_rng(3)
    doms = {"a": ["x", "y", "z"], "b": ["p", "q", "r", "s"]}
    cols = {a: rng.choice(d, size=50) for a, d in doms.items()}
    bits, layout = binary_encode(cols, doms, code=code)
    for va in doms["a"]:
        for vb in doms["b"]:
            truth = np.mean((cols["a"] == va) & (cols["b"] == vb))
            assert true_frequency(bits, layout.conjunction({"a": va, "b": vb})) == truth


def test_encoding_refuses_values_outside_the_domain() -> None:
    with pytest.raises(ConfigError, match=r"column 'a', row 1: value 'w' is not in its domain"):
        binary_encode({"a": ["x", "w"]}, {"a": ["x", "y"]})
    with pytest.raises(ConfigError, match="no domain"):
        binary_encode({"a": ["x"]}, {})
    with pytest.raises(ConfigError, match="code must be one of"):
        binary_encode({"a": ["x"]}, {"a": ["x"]}, code="gray")
    _, layout = binary_encode({"a": ["x"]}, {"a": ["x", "y"]})
    with pytest.raises(ConfigError, match="not in the domain"):
        layout.conjunction({"a": "q"})
    with pytest.raises(ConfigError, match="unknown attribute"):
        layout.conjunction({"b": "x"})


# ----------------------------------------------------------------------------- disguise


@settings(max_examples=50, deadline=None)
@given(grouped_bits())
def test_theta_one_keeps_every_bit(case: tuple[np.ndarray, list[list[int]]]) -> None:
    bits, groups = case
    assert np.array_equal(disguise(bits, groups, 1.0), bits)


@settings(max_examples=50, deadline=None)
@given(grouped_bits())
def test_theta_zero_flips_every_group(case: tuple[np.ndarray, list[list[int]]]) -> None:
    bits, groups = case
    assert np.array_equal(disguise(bits, groups, 0.0), 1 - bits)


@settings(max_examples=50, deadline=None)
@given(grouped_bits(), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
def test_each_group_is_kept_or_flipped_as_a_whole(
    case: tuple[np.ndarray, list[list[int]]], theta: float, seed: int
) -> None:
    bits, groups = case
    out = disguise(bits, groups, theta, seed)
    assert out.dtype == np.uint8
    for g in groups:
        changed = out[:, g] != bits[:, g]
        assert np.all(changed.all(axis=1) | (~changed).all(axis=1))


def test_seeded_disguise_is_reproducible_and_os_randomness_is_not() -> None:
    bits = np.zeros((400, 4), dtype=np.uint8)
    groups = [[0, 1], [2, 3]]
    a = disguise(bits, groups, 0.5, 7)
    assert np.array_equal(a, disguise(bits, groups, 0.5, np.random.default_rng(7)))
    assert not np.array_equal(disguise(bits, groups, 0.5), disguise(bits, groups, 0.5))


def test_whoever_holds_the_seed_undoes_the_disguise_and_nobody_undoes_os_coins() -> None:
    """Why a coin seed must stay with its owner: the receiver who knows it rebuilds the coins
    and reads every true bit; with OS coins, a guessed seed is no better than the disguise."""
    n, theta = 4000, 0.7
    truth = np.random.default_rng(5).integers(0, 2, size=(n, 2), dtype=np.uint8)

    def undone(sent: np.ndarray, seed: int) -> np.ndarray:
        kept = np.random.default_rng(seed).random(n) < theta
        return np.asarray(sent ^ (~kept)[:, None].astype(np.uint8))

    seeded = disguise(truth, [[0, 1]], theta, 1234)
    assert np.array_equal(undone(seeded, 1234), truth)
    os_coins = disguise(truth, [[0, 1]], theta)
    bound = theta + 4 * np.sqrt(theta * (1 - theta) / n)
    assert (os_coins == truth).mean() < bound  # read as it is: right in about θ
    assert max((undone(os_coins, s) == truth).mean() for s in range(50)) < bound


def test_os_coins_are_bernoulli_theta() -> None:
    n = 20_000
    out = disguise(np.zeros((n, 1), dtype=np.uint8), [[0]], 0.3)
    flipped = out[:, 0].mean()
    assert abs(flipped - 0.7) < 4 * np.sqrt(0.21 / n)


def test_disguise_refuses_bad_groups_bits_and_rng() -> None:
    bits = np.zeros((3, 3), dtype=np.uint8)
    with pytest.raises(ConfigError, match=r"bit columns \[2\] are in no group"):
        disguise(bits, [[0, 1]], 0.7)
    with pytest.raises(ConfigError, match="disjoint"):
        disguise(bits, [[0, 1], [1, 2]], 0.7)
    with pytest.raises(ConfigError, match="non-empty"):
        disguise(bits, [[0, 1, 2], []], 0.7)
    with pytest.raises(ConfigError, match="only 0 and 1"):
        disguise(bits + 2, [[0, 1, 2]], 0.7)
    with pytest.raises(ConfigError, match="rng must be"):
        disguise(bits, [[0, 1, 2]], 0.7, rng=-1)


@pytest.mark.parametrize("theta", [-0.1, 1.5, float("nan"), "0.7", True])
def test_theta_outside_unit_interval_is_refused(theta: object) -> None:
    bits = np.zeros((3, 2), dtype=np.uint8)
    with pytest.raises(ConfigError, match="theta"):
        disguise(bits, [[0, 1]], theta)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="theta"):
        estimate_probability(bits, {0: 1}, [[0, 1]], theta)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="theta"):
        estimate_probability_fast(bits, {0: 1}, [[0, 1]], theta)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- estimation


@settings(max_examples=50, deadline=None)
@given(with_conjunction())
def test_theta_one_estimates_the_true_frequency_exactly(
    case: tuple[np.ndarray, list[list[int]], dict[int, int]],
) -> None:
    bits, groups, conjunction = case
    truth = true_frequency(bits, conjunction)
    assert estimate_probability_fast(bits, conjunction, groups, 1.0) == truth
    assert estimate_probability(bits, conjunction, groups, 1.0) == pytest.approx(truth, abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(with_conjunction())
def test_theta_zero_reads_the_complement_exactly(
    case: tuple[np.ndarray, list[list[int]], dict[int, int]],
) -> None:
    bits, groups, conjunction = case
    flipped = disguise(bits, groups, 0.0)
    truth = true_frequency(bits, conjunction)
    assert estimate_probability_fast(flipped, conjunction, groups, 0.0) == truth
    assert estimate_probability(flipped, conjunction, groups, 0.0) == pytest.approx(
        truth, abs=1e-12
    )


@settings(max_examples=100, deadline=None)
@given(
    with_conjunction(),
    st.floats(0.0, 1.0).filter(lambda t: abs(2 * t - 1) >= 0.1),
)
def test_the_2m_system_and_the_fast_method_agree(
    case: tuple[np.ndarray, list[list[int]], dict[int, int]], theta: float
) -> None:
    disguised, groups, conjunction = case
    exact = estimate_probability(disguised, conjunction, groups, theta)
    fast = estimate_probability_fast(disguised, conjunction, groups, theta)
    m = len({k for k, g in enumerate(groups) for c in conjunction if c in g})
    scale = abs(2 * theta - 1) ** -m
    assert fast == pytest.approx(exact, rel=1e-9, abs=1e-9 * scale)


def test_estimate_counts_matches_the_single_estimates_and_the_masks() -> None:
    rng = np.random.default_rng(11)
    doms = {"a": ["x", "y", "z"], "b": ["p", "q"], "c": ["u", "v", "w", "s"]}
    cols = {a: rng.choice(d, size=300) for a, d in doms.items()}
    bits, layout = binary_encode(cols, doms, code="paired")
    groups = layout.groups([["a", "b"], ["c"]])
    disguised = disguise(bits, groups, 0.8, 5)
    klass = rng.integers(0, 2, size=300)
    masks = np.stack([klass == 0, klass == 1])
    conjunctions = [layout.conjunction({"b": "q", "a": v}) for v in doms["a"]]
    conjunctions += [layout.conjunction({"b": "p", "c": v}) for v in doms["c"]]
    fast = estimate_counts(disguised, conjunctions, groups, 0.8, masks=masks)
    exact = estimate_counts(disguised, conjunctions, groups, 0.8, masks=masks, method="exact")
    assert fast.shape == (7, 2)
    np.testing.assert_allclose(fast, exact, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        fast.sum(axis=1), estimate_counts(disguised, conjunctions, groups, 0.8)
    )
    for i, conj in enumerate(conjunctions):
        w = unbiased_weights(disguised, conj, groups, 0.8)
        assert fast[i, 1] == pytest.approx(float(w @ masks[1]))
        assert fast[i].sum() == pytest.approx(
            300 * estimate_probability(disguised, conj, groups, 0.8)
        )
    single = estimate_counts(disguised, conjunctions[:1], groups, 0.8, masks=masks[0])
    assert single.shape == (1,) and single[0] == pytest.approx(fast[0, 0])


@pytest.mark.parametrize("m", [1, 2, 3])
def test_the_estimate_is_unbiased_over_many_disguises(m: int) -> None:
    """Fixed data with known P(E); the mean estimate over fresh disguises is within 4
    standard errors of it."""
    rng = np.random.default_rng(2024 + m)
    n, theta, rounds = 2000, 0.7, 300
    doms = {f"a{k}": ["x", "y", "z", "w"] for k in range(m)}
    # correlated columns, so that P(E) is not a product of marginals
    first = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    cols = {}
    for k, a in enumerate(doms):
        codes = first if k == 0 else np.where(rng.random(n) < 0.6, first, rng.choice(4, size=n))
        cols[a] = np.array(doms[a])[codes]
    bits, layout = binary_encode(cols, doms)
    groups = layout.groups([[a] for a in doms])
    conjunction = layout.conjunction(dict.fromkeys(doms, "x"))
    truth = true_frequency(bits, conjunction)
    assert truth > 0.05
    draws = np.random.default_rng(99 + m)
    estimates = np.array(
        [
            estimate_probability_fast(
                disguise(bits, groups, theta, draws), conjunction, groups, theta
            )
            for _ in range(rounds)
        ]
    )
    standard_error = estimates.std(ddof=1) / np.sqrt(rounds)
    assert abs(estimates.mean() - truth) < 4 * standard_error
    last = disguise(bits, groups, theta, draws)
    assert estimate_probability(last, conjunction, groups, theta) == pytest.approx(
        estimate_probability_fast(last, conjunction, groups, theta)
    )


def test_theta_one_half_is_refused_citing_theorem_2() -> None:
    bits = np.zeros((4, 2), dtype=np.uint8)
    for call in (
        lambda: estimate_probability(bits, {0: 1}, [[0], [1]], 0.5),
        lambda: estimate_probability_fast(bits, {0: 1}, [[0], [1]], 0.5),
        lambda: unbiased_weights(bits, {0: 1}, [[0], [1]], 0.5),
        lambda: estimate_counts(bits, [{0: 1}], [[0], [1]], 0.5),
    ):
        with pytest.raises(ConfigError, match="Theorem 2"):
            call()
    # disguising at θ = 0.5 is allowed: it is only the estimate that is impossible
    assert disguise(bits, [[0], [1]], 0.5, 0).shape == (4, 2)


def test_estimation_refuses_malformed_conjunctions() -> None:
    bits = np.zeros((4, 2), dtype=np.uint8)
    with pytest.raises(ConfigError, match="not a bit column"):
        estimate_probability(bits, {5: 1}, [[0, 1]], 0.7)
    with pytest.raises(ConfigError, match="required 0 or 1"):
        estimate_probability_fast(bits, {0: 2}, [[0, 1]], 0.7)
    with pytest.raises(ConfigError, match="sequence of conjunctions"):
        estimate_counts(bits, {0: 1}, [[0, 1]], 0.7)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="masks must be"):
        estimate_counts(bits, [{0: 1}], [[0, 1]], 0.7, masks=np.ones(3))
