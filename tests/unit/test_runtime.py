"""The Party runtime over the in-memory transport: matching, buffering, deadlines, aborts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.errors import PeerAborted, PeerLost, PeerTimeout, ProtocolError
from mpc.runtime.codec import decode, encode
from mpc.runtime.local import run_in_memory
from mpc.runtime.metrics import Ledger, jsonable
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork
from mpc.runtime.view import public as _public
from protocols.primitives.secure_sum import secure_sum

#: the receipt of this test's own messages
ANY = _public("test/message", "a message of this test")


def test_messages_match_by_sender_and_tag_and_early_arrivals_wait() -> None:
    async def alice(p: Party):
        await p.send("bob", "x", 1)
        await p.send("bob", "y", np.arange(3))
        await p.send("bob", "x", 2)  # same tag twice: delivered in order
        return await p.recv("bob", "back", ANY)

    async def bob(p: Party):
        y = await p.recv("alice", "y", ANY)  # arrives second, asked for first
        x1 = await p.recv("alice", "x", ANY)
        x2 = await p.recv("alice", "x", ANY)
        await p.send("alice", "back", [x1, x2, y.tolist()])
        return None

    results, _ = asyncio.run(run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}))
    assert results["alice"] == [1, 2, [0, 1, 2]]


def test_many_protocol_instances_run_interleaved() -> None:
    names = ["a", "b", "c", "d"]
    inputs = {n: i + 1 for i, n in enumerate(names)}

    async def program(p: Party):
        runs = [secure_sum(p, inputs[p.name] * j, modulus=2**32, tag=f"sum{j}") for j in range(25)]
        return await asyncio.gather(*runs)

    results, parties = asyncio.run(run_in_memory(names, program))
    for n in names:
        assert results[n] == [10 * j for j in range(25)]
    # 25 instances side by side cost the rounds of one: ring of 4 plus the broadcast
    assert max(p.metrics.rounds for p in parties.values()) == 5


def test_gather_and_broadcast() -> None:
    async def program(p: Party):
        await p.broadcast("hi", p.name.upper())
        return await p.gather(p.peers, "hi", ANY)

    results, parties = asyncio.run(run_in_memory(["a", "b", "c"], program))
    assert results["a"] == {"b": "B", "c": "C"}
    assert all(p.metrics.rounds == 1 for p in parties.values())
    assert parties["a"].metrics.messages_sent["b"] == 1


def test_silent_peer_times_out_and_everyone_else_is_aborted() -> None:
    async def a(p: Party):
        await asyncio.sleep(5)  # alive but silent

    async def b(p: Party):
        return await p.recv("a", "step-1", ANY, timeout=0.3)

    async def c(p: Party):
        return await p.recv("b", "step-2", ANY, timeout=5)

    # b times out, c is aborted by b; whichever surfaces first blames a at step-1
    with pytest.raises((PeerTimeout, PeerAborted)) as info:
        asyncio.run(run_in_memory(["a", "b", "c"], {"a": a, "b": b, "c": c}, timeout=5))
    assert info.value.peer == "a" and info.value.step == "step-1"
    assert "no message from a for step 'step-1'" in str(info.value)


def _failures(programs: dict[str, object], timeout: float) -> dict[str, BaseException]:
    """Run one Party per program over the in-memory network; return who raised what."""
    seen: dict[str, BaseException] = {}

    async def main() -> None:
        network = InMemoryNetwork()
        names = list(programs)
        parties = {n: Party(n, "site", names, network.transport(n), timeout=timeout) for n in names}

        async def run(n: str) -> None:
            try:
                async with parties[n] as p:
                    await programs[n](p)  # type: ignore[operator]
            except BaseException as exc:
                seen[n] = exc

        await asyncio.gather(*(run(n) for n in names))

    asyncio.run(main())
    return seen


def test_abort_reaches_waiting_parties_with_the_blamed_peer() -> None:
    # a stays busy well past b's deadline, so that b times out waiting for it even on a
    # loaded machine (where b's 0.3 s timer may fire seconds late)
    seen = _failures(
        {
            "a": lambda p: asyncio.sleep(4.0),
            "b": lambda p: p.recv("a", "step-1", ANY, timeout=0.3),
            "c": lambda p: p.recv("b", "step-2", ANY),
        },
        timeout=8,
    )
    assert isinstance(seen["b"], PeerTimeout)
    assert isinstance(seen["c"], PeerAborted)
    assert seen["c"].origin == "b" and seen["c"].peer == "a" and seen["c"].step == "step-1"
    assert "a" not in seen  # a finished its own work; it was told, but not waiting


def test_malformed_messages_are_reported_and_the_receiver_keeps_serving() -> None:
    async def main() -> tuple[object, list[str]]:
        network = InMemoryNetwork()
        names = ["a", "b"]
        a = Party("a", "site", names, network.transport("a"), timeout=5)
        b = Party("b", "site", names, network.transport("b"), timeout=5)
        await asyncio.gather(a.start(), b.start())
        for junk in ([b"\xc1"], [b""], [encode("msg", "t", 1, None)[0], b"extra"], []):
            network.deliver("b", "a", junk)
        await b.send("a", "t", "still here")
        value = await a.recv("b", "t", ANY)
        rejected = list(a.metrics.rejected)
        await asyncio.gather(a.close(), b.close())
        return value, rejected

    value, rejected = asyncio.run(main())
    assert value == "still here"
    assert len(rejected) == 4
    assert all(r.startswith("b: ") for r in rejected)


def test_version_mismatch_fails_the_handshake() -> None:
    async def main() -> None:
        network = InMemoryNetwork()
        a = Party("a", "site", ["a", "b"], network.transport("a"), timeout=2)
        network.transport("b")
        network.deliver("b", "a", encode("hello", "hello", 0, {"version": 999, "name": "b"}))
        async with a:
            pass

    with pytest.raises(ProtocolError, match="version 999"):
        asyncio.run(main())


def test_handshake_names_the_missing_peer() -> None:
    async def main() -> None:
        network = InMemoryNetwork()
        network.transport("b")
        async with Party("a", "site", ["a", "b"], network.transport("a"), timeout=0.3):
            pass

    with pytest.raises(PeerTimeout, match="no HELLO from b") as info:
        asyncio.run(main())
    assert info.value.step == "startup handshake"


def test_misuse_is_refused() -> None:
    async def program(p: Party):
        with pytest.raises(ProtocolError, match="not a peer"):
            await p.send("zed", "t", 1)
        with pytest.raises(ProtocolError, match="not a peer"):
            await p.send(p.name, "t", 1)
        return True

    results, _ = asyncio.run(run_in_memory(["a", "b"], program))
    assert results == {"a": True, "b": True}


def test_timeout_blame_follows_the_wait_for_chain() -> None:
    """c gives up first (shortest deadline) while waiting for b, but b only waits for a,
    which is alive and busy: c must blame a, not the innocent b."""

    async def busy(p: Party) -> None:
        with p.phase("long local work"):
            await asyncio.sleep(3)

    seen = _failures(
        {
            "a": busy,
            "b": lambda p: p.recv("a", "from-a", ANY, timeout=2.5),
            "c": lambda p: p.recv("b", "from-b", ANY, timeout=0.5),
        },
        timeout=4,
    )
    err = seen["c"]
    assert isinstance(err, PeerTimeout)
    assert err.peer == "a" and err.step == "from-b"
    assert "b is itself waiting for a (step 'from-a')" in str(err)
    assert "a is alive and not waiting for anyone (busy or stuck at step 'long local work')" in str(
        err
    )
    # b learns of the failure from c's abort, blaming a
    assert isinstance(seen["b"], PeerAborted) and seen["b"].peer == "a"


def _burn(seconds: float) -> int:
    """CPU-bound work for ``seconds`` (a loop that never waits for anything)."""
    import time

    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += sum(range(200))
    return n


def test_a_peer_computing_past_the_deadline_is_waited_for() -> None:
    """a computes (CPU-bound, off its event loop) for three of b's deadlines before it sends:
    b's deadline passes, its probe finds a alive, waiting for no one and computing, so b
    waits on and gets the message; a peer that is alive but neither waits nor computes
    (asleep) is still blamed (test_timeout_blame_follows_the_wait_for_chain)."""

    async def busy(p: Party) -> None:
        with p.phase("long local work"):
            await asyncio.to_thread(_burn, 1.5)
        await p.send("b", "from-a", 42)

    async def waits(p: Party) -> Any:
        return await p.recv("a", "from-a", ANY, timeout=0.5)

    results, _ = asyncio.run(run_in_memory(["a", "b"], {"a": busy, "b": waits}, timeout=4))
    assert results["b"] == 42


def test_a_peer_that_never_answers_is_blamed() -> None:
    async def main() -> None:
        network = InMemoryNetwork()
        names = ["a", "b"]
        a = Party("a", "site", names, network.transport("a"), timeout=0.4)
        b_transport = network.transport("b")  # b says hello, then nothing at all
        network.deliver("b", "a", encode("hello", "hello", 0, {"version": 1, "role": "site"}))
        async with a:
            await a.recv("b", "x", ANY)
        del b_transport

    with pytest.raises(PeerTimeout, match="b does not answer a probe") as info:
        asyncio.run(main())
    assert info.value.peer == "b" and info.value.step == "x"


def _hello(incarnation: str) -> list[bytes | memoryview]:
    return encode("hello", "hello", 0, {"version": 1, "role": "site", "incarnation": incarnation})


def test_a_restarted_peer_ends_the_run_unless_its_restarts_are_expected() -> None:
    """A second HELLO from a new process of b: the run fails naming b, as the old process's
    state is gone; a party that expects b's restarts answers the new process and resumes."""

    async def main(expect: bool) -> tuple[list[str], list[str]]:
        network = InMemoryNetwork()
        sent: list[str] = []  # the kinds of the messages a sends
        network.taps.append(
            lambda s, r, frames: sent.append(decode(frames).kind) if s == "a" else None
        )
        a = Party("a", "site", ["a", "b"], network.transport("a"), timeout=0.5)
        network.transport("b")
        network.deliver("b", "a", _hello("first"))
        resumed: list[str] = []

        async def on_restart() -> None:
            resumed.append("b")

        async with a:
            if expect:
                a.expect_restarts("b", on_restart)
            network.deliver("b", "a", _hello("second"))
            network.deliver("b", "a", encode("msg", "x", 1, "from the new b"))
            assert await a.recv("b", "x", ANY) == "from the new b"
            await asyncio.sleep(0)  # let the answer to b's new HELLO go out
        return resumed, sent

    with pytest.raises(PeerLost, match="b was restarted") as info:
        asyncio.run(main(expect=False))
    assert info.value.peer == "b"
    resumed, sent = asyncio.run(main(expect=True))
    assert resumed == ["b"]
    # a's HELLO of the handshake, and its answer to the new process's HELLO
    assert sent.count("hello") == 2


def test_the_launcher_relays_progress_lines_of_party_logs(tmp_path: Path) -> None:
    from mpc.deployment.launcher import _relay_progress

    log = tmp_path / "site1.log"
    log.write_bytes(b"2026 site1 INFO started\n2026 mpc.ppid3 INFO PROGRESS node 25 (depth 3)\n")
    offsets = {"site1": 0}
    said: list[str] = []
    _relay_progress({"site1": log}, offsets, said.append)
    assert said == ["site1: node 25 (depth 3)"]
    # a line still being written is left for the next look; nothing is shown twice
    with log.open("ab") as fh:
        fh.write(b"x INFO PROGRESS node 50 (depth 4)\nx INFO PROGRESS node 7")
    _relay_progress({"site1": log}, offsets, said.append)
    assert said[1:] == ["site1: node 50 (depth 4)"]
    with log.open("ab") as fh:
        fh.write(b"5 (depth 5)\n")
    _relay_progress({"site1": log}, offsets, said.append)
    assert said[2:] == ["site1: node 75 (depth 5)"]
    _relay_progress({"missing": tmp_path / "none.log"}, {"missing": 0}, said.append)
    assert len(said) == 3


def _plain_json(value: Any) -> Any:
    """What the ledger must hold for ``value``, spelled out case by case."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_json(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


_ledger_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.integers(-(2**31), 2**31).map(np.int64),
    st.lists(st.integers(-9, 9), max_size=4).map(lambda x: np.asarray(x, dtype=np.int64)),
)
_ledger_values = st.recursive(
    _ledger_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(-9, 9)), inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(_ledger_values)
def test_a_ledger_value_is_kept_as_plain_json(value: Any) -> None:
    """Whatever a party puts on record (dicts with int keys, tuples, numpy values, bytes,
    nested), the ledger keeps plain JSON types with the same content."""
    out = jsonable(value)
    assert out == _plain_json(value)
    assert json.loads(json.dumps(out)) == out


def test_the_ledger_copies_a_value_unless_it_is_declared_plain() -> None:
    ledger = Ledger()
    value = {"name": "t", "instance": {"a": "x", "b": 1.5}}
    ledger.record("p/copied", value, step="s")
    ledger.record("p/plain", value, step="s", plain=True)
    value["instance"]["a"] = "changed"  # a caller that breaks the promise of plain=True
    copied, plain = ledger.entries
    assert copied.value == {"name": "t", "instance": {"a": "x", "b": 1.5}}
    assert plain.value is value
    assert ledger.to_list()[0] == {"label": "p/copied", "value": copied.value, "step": "s"}


def test_a_party_s_error_reaches_its_peers_in_public_words_only() -> None:
    """A party that fails tells its peers why, but an error's message may quote what it
    holds (a value a check refused, another party's message): its peers hear the type and
    the step of an error without a public message, and the public message of one that has
    it; the party itself keeps the whole message."""
    heard: dict[str, str] = {}

    async def program(party: Party) -> Any:
        if party.name == "a":
            await asyncio.sleep(0.01)
            raise ProtocolError("site b sent the permutations [2, 0, 1], not 3 of 2")
        if party.name == "c":
            await asyncio.sleep(0.01)
        try:
            await party.recv("a", "never", _public("x", "y"))
        except PeerAborted as exc:
            heard[party.name] = str(exc)
        raise PeerAborted("done", peer="a", step="x")

    with pytest.raises(ProtocolError, match=r"\[2, 0, 1\]"):
        asyncio.run(run_in_memory(["a", "b"], program, timeout=5))
    assert "ProtocolError" in heard["b"] and "[2, 0, 1]" not in heard["b"], heard

    async def public(party: Party) -> Any:
        if party.name == "a":
            raise ProtocolError("13 records differ at 'x'", public="13 records differ")
        try:
            await party.recv("a", "never", _public("x", "y"))
        except PeerAborted as exc:
            heard[party.name] = str(exc)
        raise PeerAborted("done", peer="a", step="x")

    with pytest.raises(ProtocolError):
        asyncio.run(run_in_memory(["a", "b"], public, timeout=5))
    assert "13 records differ" in heard["b"] and "'x'" not in heard["b"], heard
