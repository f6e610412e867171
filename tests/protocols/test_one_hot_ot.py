"""protocols.ot.one_hot: products of a chooser's one-hot data, fixed for a session, and the
other side's vectors. The shares add up to ``X^T D`` for every use (hypothesis, every ring);
each use's pads are fresh; what each side receives is uniform whatever the choices and the
vectors (chi-square with fixed seeds); a malformed peer is refused by name; the ledger holds
sizes only."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.errors import MPCError, ProtocolError
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork
from mpc.runtime.view import public as _public
from protocols.ot import iknp
from protocols.ot.one_hot import one_hot_chooser, one_hot_vectors

from .test_oblivious_transfer import pvalue, tapped

#: the receipt of this test's own messages
ANY = _public("test/message", "a message of this test")


def one_hot(codes: np.ndarray, sizes: list[int]) -> np.ndarray:
    """``X`` (``n x Σ sizes``, uint64), the one-hot rows of every attribute."""
    return np.concatenate(
        [np.eye(s, dtype=np.uint64)[codes[:, j]] for j, s in enumerate(sizes)], axis=1
    )


def run_session(
    codes: np.ndarray,
    sizes: list[int],
    uses: list[np.ndarray],
    *,
    network: InMemoryNetwork | None = None,
) -> tuple[dict[str, Any], dict[str, Party]]:
    """alice holds the vectors of every use, bob chooses by ``codes``."""
    n = codes.shape[0]

    async def alice(p: Party) -> Any:
        session = await iknp.extension_sender(p, "bob")
        vectors = await one_hot_vectors(p, session, n, tag="oh")
        return [await vectors.products(p, d_use, tag=f"use{i}") for i, d_use in enumerate(uses)]

    async def bob(p: Party) -> Any:
        session = await iknp.extension_receiver(p, "alice")
        chooser = await one_hot_chooser(p, session, codes, sizes, tag="oh")
        return [await chooser.products(p, d_use.shape[0], d_use.dtype, tag=f"use{i}")
                for i, d_use in enumerate(uses)]  # fmt: skip

    return asyncio.run(
        run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}, network=network, timeout=30)
    )


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 300),
    st.lists(st.integers(1, 9), min_size=1, max_size=4),
    st.lists(st.integers(1, 20), min_size=1, max_size=3),
    st.sampled_from([np.uint16, np.uint32, np.uint64]),
    st.integers(0, 2**32 - 1),
)
def test_shares_add_up_to_the_one_hot_rows_times_the_vectors_at_every_use(
    n: int, sizes: list[int], widths: list[int], dtype: Any, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, s, size=n) for s in sizes], axis=1)
    top = np.iinfo(dtype).max
    uses = [rng.integers(0, top, size=(w, n), dtype=np.uint64, endpoint=True).astype(dtype)
            for w in widths]  # fmt: skip
    results, parties = run_session(codes, sizes, uses)
    x = one_hot(codes, sizes)
    for i, d_use in enumerate(uses):
        want = (x.T @ d_use.T.astype(np.uint64)).astype(dtype)  # wraps mod 2^64, then mod 2^l
        got = results["alice"][i] + results["bob"][i]
        assert got.dtype == dtype and got.shape == (sum(sizes), d_use.shape[0])
        np.testing.assert_array_equal(got, want)
    for name in ("alice", "bob"):
        entries = parties[name].ledger.to_list()
        assert {e["label"] for e in entries} == {"ot/base", "ot/kept", "ot/one-hot-setup",
                                                 "ot/one-hot-use"}  # fmt: skip
        (setup,) = [e["value"] for e in entries if e["label"] == "ot/one-hot-setup"]
        assert setup["records"] == n and setup["sizes"] == sizes  # sizes only
        widths_seen = [e["value"]["width"] for e in entries if e["label"] == "ot/one-hot-use"]
        assert widths_seen == widths


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_products_are_exact_over_many_slices_of_records(
    monkeypatch: pytest.MonkeyPatch, dtype: Any
) -> None:
    """Pads hashed a slice of records at a time (the fewest, 64, here): the last slice
    partial, values with few records, a one-valued attribute."""
    from protocols.ot import one_hot as one_hot_ot

    monkeypatch.setattr(one_hot_ot, "PAD_BYTES", 1)
    assert one_hot_ot.records_per_slice() == 64
    rng = np.random.default_rng(11)
    n, sizes = 1000, [3, 1, 7]
    codes = np.stack([rng.integers(0, s, size=n) for s in sizes], axis=1)
    codes[:5, 2] = 6  # value 6 of the last attribute only in the first slice
    top = np.iinfo(dtype).max
    uses = [rng.integers(0, top, size=(w, n), dtype=np.uint64, endpoint=True).astype(dtype)
            for w in (5, 40)]  # fmt: skip
    results, _ = run_session(codes, sizes, uses)
    x = one_hot(codes, sizes)
    for i, d_use in enumerate(uses):
        want = (x.T @ d_use.T.astype(np.uint64)).astype(dtype)
        np.testing.assert_array_equal(results["alice"][i] + results["bob"][i], want)


def test_every_use_has_fresh_pads() -> None:
    """The same vectors at two uses: the corrections differ everywhere (new pads), and so do
    the vector side's shares, while both products are right."""
    rng = np.random.default_rng(5)
    n, sizes = 2000, [3, 2]
    codes = np.stack([rng.integers(0, s, size=n) for s in sizes], axis=1)
    d_use = rng.integers(0, 2**16, size=(8, n)).astype(np.uint16)
    network = InMemoryNetwork()
    seen = tapped(network)
    results, _ = run_session(codes, sizes, [d_use, d_use], network=network)
    first = [body for _, tag, body in seen if tag.startswith("use0/")]
    second = [body for _, tag, body in seen if tag.startswith("use1/")]
    assert len(first) == len(second) == len(sizes)
    for a, b in zip(first, second, strict=True):
        assert (a != b).mean() > 0.99
    assert (results["alice"][0] != results["alice"][1]).all()
    np.testing.assert_array_equal(results["alice"][0] + results["bob"][0],
                                  results["alice"][1] + results["bob"][1])  # fmt: skip


# --------------------------------------------------------------------------- what is seen


@pytest.fixture
def seeded(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Replace the OS generator by a seeded stream (tests only): the protocols then send the
    same bytes on every run, so a chi-square test has one fixed outcome."""

    def seed(value: int) -> None:
        rng = np.random.default_rng(value)
        monkeypatch.setattr(secrets, "token_bytes", lambda n=32: rng.bytes(n))

    return seed


@pytest.mark.parametrize("choice", ["first", "last", "mixed"])
def test_what_each_side_receives_is_uniform_whatever_the_choices_and_the_vectors(
    choice: str, seeded: Callable[[int], None]
) -> None:
    """All-zero vectors and the same value everywhere (nothing to hide behind): the chooser
    still receives uniform corrections, the vector side a uniform extension matrix and
    nothing at a use; the vector side's share is uniform too."""
    seeded({"first": 21, "last": 22, "mixed": 23}[choice])
    n, sizes = 4096, [4, 2]
    values = {"first": np.zeros(n), "last": np.full(n, 3), "mixed": np.arange(n) % 4}[choice]
    codes = np.stack([values, values % 2], axis=1).astype(np.int64)
    zeros = np.zeros((16, n), dtype=np.uint16)
    network = InMemoryNetwork()
    seen = tapped(network)
    results, _ = run_session(codes, sizes, [zeros, zeros], network=network)
    corrections = [body for s, tag, body in seen if s == "alice" and tag.startswith("use")]
    assert len(corrections) == 2 * len(sizes)
    assert pvalue(np.concatenate([c.reshape(-1) for c in corrections])) > 0.01, "the chooser's"
    assert not [tag for s, tag, _ in seen if s == "bob" and tag.startswith("use")]
    u = [body for s, tag, body in seen if s == "bob" and tag.endswith("/u")]
    assert u and pvalue(np.concatenate([m.reshape(-1) for m in u])) > 0.01, "the vector side's"
    for i in range(2):
        assert pvalue(results["alice"][i]) > 0.001
        assert not (results["alice"][i] + results["bob"][i]).any()  # the products are zero


# --------------------------------------------------------------------------- hostile peers


def test_a_chooser_refuses_corrections_of_the_wrong_shape_naming_the_peer() -> None:
    n, sizes = 50, [3]
    codes = np.zeros((n, 1), dtype=np.int64)
    errors: dict[str, BaseException] = {}

    async def alice(p: Party) -> Any:
        session = await iknp.extension_sender(p, "bob")
        await one_hot_vectors(p, session, n, tag="oh")
        await p.send("bob", "use/c0", np.zeros((1, n, 7), dtype=np.uint16))  # not (1, n, 8)
        await p.recv("bob", "never sent", ANY)

    async def bob(p: Party) -> Any:
        session = await iknp.extension_receiver(p, "alice")
        chooser = await one_hot_chooser(p, session, codes, sizes, tag="oh")
        try:
            return await chooser.products(p, 8, np.uint16, tag="use")
        except BaseException as exc:
            errors["bob"] = exc
            raise

    with pytest.raises(MPCError):
        asyncio.run(run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}, timeout=20))
    assert isinstance(errors["bob"], ProtocolError)
    assert "alice" in str(errors["bob"]) and "corrections" in str(errors["bob"])


def test_a_vector_side_refuses_a_bad_announcement() -> None:
    errors: dict[str, BaseException] = {}

    async def alice(p: Party) -> Any:
        session = await iknp.extension_sender(p, "bob")
        try:
            return await one_hot_vectors(p, session, 10, tag="oh")
        except BaseException as exc:
            errors["alice"] = exc
            raise

    async def bob(p: Party) -> Any:
        await iknp.extension_receiver(p, "alice")
        await p.send("alice", "oh/sizes", {"sizes": [0, 3], "n": 10})
        await p.recv("alice", "never sent", ANY)

    with pytest.raises(MPCError):
        asyncio.run(run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}, timeout=20))
    assert isinstance(errors["alice"], ProtocolError) and "bob" in str(errors["alice"])
