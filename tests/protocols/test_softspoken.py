"""SoftSpokenOT's small-field VOLE (:mod:`protocols.ot.softspoken`) under OT extension: the
punctured seeds against the prover's (every one but ``s_{Δ_i}``), the VOLE relation
``w = v ⊕ Δ u`` bit-plane by bit-plane, OTs of every width ``k`` against the plain answer,
and the extension sender's view with its own randomness fixed: fresh from run to run,
uniform, the same whatever the receiver's choices."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from mpc.crypto import randomness
from mpc.crypto.prg import Prg
from mpc.errors import ConfigError
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork
from protocols.ot import iknp, softspoken

KS = (1, 2, 4)


def run_pair(alice: Any, bob: Any, network: InMemoryNetwork | None = None) -> dict[str, Any]:
    results, _ = asyncio.run(
        run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}, network=network, timeout=20)
    )
    return results


def punctured(k: int, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The prover's leaves and the verifier's (with ``delta``), over the in-memory network."""
    results = run_pair(
        lambda p: softspoken.punctured_seeds_verifier(p, "bob", delta, k, "t"),
        lambda p: softspoken.punctured_seeds_prover(p, "alice", k, "t"),
    )
    (mine, d1), (theirs, d0) = results["alice"], results["bob"]
    assert d0 == d1  # both hash the same base-OT transcript
    return theirs, mine


@pytest.mark.parametrize("k", KS)
def test_the_verifier_holds_every_seed_but_the_punctured_one(k: int) -> None:
    delta = np.frombuffer(secrets.token_bytes(128), np.uint8) & 1
    prover, verifier = punctured(k, delta)
    b = 128 // k
    assert prover.shape == (b, 2**k, 16) and verifier.shape == (b, 2**k - 1, 16)
    d = softspoken.bits_value(delta.reshape(b, k))
    for i in range(b):
        for y in range(1, 2**k):
            np.testing.assert_array_equal(verifier[i, y - 1], prover[i, y ^ d[i]])
        # the punctured seed is nowhere in what the verifier holds
        assert not (verifier[i] == prover[i, d[i]]).all(axis=1).any()
    assert len({bytes(x) for x in prover.reshape(-1, 16)}) == b * 2**k  # all distinct


@pytest.mark.parametrize("k", KS)
def test_small_field_vole_gives_w_equal_to_v_plus_delta_u(k: int) -> None:
    delta = np.frombuffer(secrets.token_bytes(128), np.uint8) & 1
    prover, verifier = punctured(k, delta)
    nb = 48
    u, v = softspoken.vole_prover(Prg(prover.reshape(-1, 16)), 7, nb, k)
    w = softspoken.vole_verifier(Prg(verifier.reshape(-1, 16)), 7, nb, k)
    b = 128 // k
    assert u.shape == (b, nb) and v.shape == (128, nb) and w.shape == (b, k, nb)
    expected = v.reshape(b, k, nb) ^ np.where(delta.reshape(b, k, 1) == 1, u[:, None, :], 0)
    np.testing.assert_array_equal(w, expected)
    # another batch number, other expansions: the relation holds and nothing repeats
    u2, v2 = softspoken.vole_prover(Prg(prover.reshape(-1, 16)), 8, nb, k)
    assert not np.array_equal(u, u2) and not np.array_equal(v, v2)


def test_a_width_other_than_one_two_or_four_is_refused() -> None:
    with pytest.raises(ConfigError, match="one of"):
        softspoken.check_k(3)


@settings(max_examples=9, deadline=None)
@given(st.sampled_from(KS), st.integers(0, 700), st.integers(0, 2**32 - 1))
def test_correlated_ots_of_every_width_give_x_plus_b_delta(k: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    delta = rng.integers(0, 2**64, size=m, dtype=np.uint64)
    bits = rng.integers(0, 2, size=m).astype(bool)

    async def alice(p: Party) -> Any:
        s = await iknp.extension_sender(p, "bob", k=k)
        return await iknp.correlated_ots_send(p, s, delta), await iknp.random_ots_send(p, s, m)

    async def bob(p: Party) -> Any:
        s = await iknp.extension_receiver(p, "alice", k=k)
        return (await iknp.correlated_ots_receive(p, s, bits),
                await iknp.random_ots_receive(p, s, m))  # fmt: skip

    results = run_pair(alice, bob)
    (x, (x0, x1)), (y, (r, xr)) = results["alice"], results["bob"]
    np.testing.assert_array_equal(y, x + bits.astype(np.uint64) * delta)
    np.testing.assert_array_equal(xr, np.where(r[:, None] == 1, x1, x0))
    assert not (xr == np.where(r[:, None] == 1, x0, x1)).all(axis=1).any()


def test_the_two_sides_must_agree_on_the_width() -> None:
    async def alice(p: Party) -> Any:
        s = await iknp.extension_sender(p, "bob", k=2)
        return await iknp.random_ots_send(p, s, 64)

    async def bob(p: Party) -> Any:
        s = await iknp.extension_receiver(p, "alice", k=4)
        return await iknp.random_ots_receive(p, s, 64)

    with pytest.raises(Exception, match=r"punctured sums|matrix u"):
        run_pair(alice, bob)


def _pvalue(data: np.ndarray) -> float:
    counts = np.bincount(np.ascontiguousarray(data).view(np.uint8).reshape(-1), minlength=256)
    return float(chisquare(counts).pvalue)


def _sender_view(k: int, choices: np.ndarray, own: bytes) -> dict[str, np.ndarray]:
    """What the extension sender receives (its randomness fixed by ``own``) from a receiver
    of fresh randomness choosing ``choices``: the punctured sums and the matrix ``u``."""
    network = InMemoryNetwork()
    seen: dict[str, np.ndarray] = {}

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if receiver == "alice" and env.kind == "msg" and isinstance(env.body, np.ndarray):
            seen[env.tag.rsplit("/", 1)[-1]] = env.body

    network.taps.append(tap)

    async def alice(p: Party) -> Any:
        with randomness.fixed(own):
            s = await iknp.extension_sender(p, "bob", k=k)
            return await iknp.random_ots_send(p, s, len(choices))

    async def bob(p: Party) -> Any:
        s = await iknp.extension_receiver(p, "alice", k=k)
        return await iknp.random_ots_receive(p, s, len(choices), choices=choices)

    run_pair(alice, bob, network=network)
    return seen


@pytest.mark.parametrize("k", [2, 4])
def test_the_senders_view_is_fresh_and_uniform_whatever_the_choices(k: int) -> None:
    """With the sender's own randomness fixed (its ``Δ``, its base-OT keys), what it
    receives must not repeat between two runs, nor tell all-zero choices from all-one."""
    m = 2**13
    own = bytes(range(32))
    zeros = _sender_view(k, np.zeros(m, dtype=np.uint8), own)
    ones = _sender_view(k, np.ones(m, dtype=np.uint8), own)
    again = _sender_view(k, np.zeros(m, dtype=np.uint8), own)
    for name in ("puncture", "u"):
        a, b, c = zeros[name], ones[name], again[name]
        assert a.shape == b.shape == c.shape
        for x in (a, b, c):
            assert _pvalue(x) > 1e-4, name
        for x, y in ((a, b), (a, c)):
            agree = float(np.mean(x == y))
            assert agree < 3 / 256, (name, agree)  # chance: 1/256 per byte
    assert 0.45 < float(np.unpackbits(zeros["u"]).mean()) < 0.55
    assert 0.45 < float(np.unpackbits(ones["u"]).mean()) < 0.55
