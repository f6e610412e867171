"""What a peer can make a party spend: the reader never stops, buffers and logs are bounded.

In one process (the in-memory network, or a real ZeroMQ transport on loopback): a message
that breaks the decoder or the dispatch is rejected and the next one is received; a peer's
early messages are bounded in count and bytes, and the peer that floods them is blamed; a
reader that stops anyway fails the run at once; connections with unknown keys are counted,
described a bounded number of times and logged at a bounded rate; a low-order curve point
is a ProtocolError, not a ValueError from X25519.
"""

from __future__ import annotations

import asyncio
import logging
import time

import msgpack
import numpy as np
import pytest
import zmq

from mpc.crypto.curve25519 import InvalidPoint, X25519Key
from mpc.deployment.launcher import free_ports
from mpc.errors import PeerMisbehaved, ProtocolError
from mpc.runtime import party as runtime
from mpc.runtime.codec import encode
from mpc.runtime.keys import generate_keypair
from mpc.runtime.metrics import MAX_REJECTED_NOTES, Metrics
from mpc.runtime.party import Party
from mpc.runtime.transport import MAX_REFUSED_NOTES, InMemoryNetwork, PeerAddress, ZmqTransport
from mpc.runtime.view import public as _public

#: the receipt of this test's own messages
ANY = _public("test/message", "a message of this test")

pytestmark = pytest.mark.timeout(60)

HELLO = {"version": 1, "name": "b", "role": "site", "incarnation": "b1"}


def _pair(network: InMemoryNetwork, **kwargs: object) -> Party:
    party = Party("a", "site", ["a", "b"], network.transport("a"), timeout=3, **kwargs)  # type: ignore[arg-type]
    network.transport("b")
    network.deliver("b", "a", encode("hello", "hello", 0, HELLO))
    return party


@pytest.mark.parametrize(
    "frames",
    [
        [msgpack.packb([1, [1], "t", 0, None])],
        [msgpack.packb([[1], "msg", "t", 0, None])],
        [msgpack.packb([1, "status", "status", 0, {"id": [1], "waiting": []}])],
        [msgpack.packb([1, "hello", "hello", 0, {"version": 1, "incarnation": [1]}])],
        [msgpack.packb([1, "probe", "probe", 0, {"id": {"x": 1}}])],
    ],
    ids=["list-kind", "list-version", "status-list-id", "hello-list-incarnation", "probe-map-id"],
)
def test_a_message_that_breaks_decoding_or_dispatch_does_not_stop_the_reader(
    frames: list[bytes],
) -> None:
    async def main() -> tuple[object, list[str]]:
        network = InMemoryNetwork()
        async with _pair(network) as a:
            network.deliver("b", "a", frames)
            network.deliver("b", "a", encode("msg", "after", 1, 7))
            value = await a.recv("b", "after", ANY)
            network.deliver("b", "a", encode("bye", "bye", 0, None))
            return value, list(a.metrics.rejected)

    value, rejected = asyncio.run(main())
    assert value == 7
    assert len(rejected) == 1 and rejected[0].startswith("b: "), rejected


def test_a_peer_that_floods_early_messages_is_blamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "MAX_BUFFERED_MESSAGES", 50)

    async def main() -> None:
        network = InMemoryNetwork()
        async with _pair(network) as a:
            for i in range(51):
                network.deliver("b", "a", encode("msg", f"early/{i}", 1, i))
            await a.recv("b", "never", ANY)

    with pytest.raises(PeerMisbehaved, match="b flooded this party: 51 messages") as info:
        asyncio.run(main())
    assert info.value.peer == "b"


def test_early_messages_are_bounded_in_bytes_too() -> None:
    async def main() -> None:
        network = InMemoryNetwork()
        async with _pair(network, max_buffered_bytes=10_000) as a:
            for i in range(3):
                network.deliver("b", "a", encode("msg", f"early/{i}", 1, np.zeros(4000, np.uint8)))
            await a.recv("b", "never", ANY)

    with pytest.raises(PeerMisbehaved, match="b flooded this party: 12"):
        asyncio.run(main())


def test_early_messages_within_the_bounds_are_all_delivered_and_the_buffer_empties() -> None:
    async def main() -> tuple[list[int], int, int]:
        network = InMemoryNetwork()
        async with _pair(network, max_buffered_bytes=100_000) as a:
            for i in range(20):
                network.deliver("b", "a", encode("msg", f"early/{i}", 1, np.full(100, i)))
            got = [int((await a.recv("b", f"early/{i}", ANY))[0]) for i in range(20)]
            network.deliver("b", "a", encode("bye", "bye", 0, None))
            return got, len(a._buffer), a._buffered_bytes["b"]

    got, queues, held = asyncio.run(main())
    assert got == list(range(20))
    assert queues == 0 and held == 0


def test_a_reader_that_stops_fails_the_run_at_once() -> None:
    """Should the reader ever end with an exception, every receive fails now, saying why,
    instead of waiting for its deadline."""

    async def main() -> None:
        network = InMemoryNetwork()
        async with _pair(network) as a:

            async def broken_reader() -> None:
                raise RuntimeError("the socket went away")

            task = asyncio.create_task(broken_reader())
            task.add_done_callback(a._reader_done)
            await a.recv("b", "anything", ANY, timeout=30)

    started = time.monotonic()
    with pytest.raises(ProtocolError, match=r"the message reader stopped .*socket went away"):
        asyncio.run(main())
    assert time.monotonic() - started < 10


def test_rejected_messages_are_counted_and_described_a_bounded_number_of_times() -> None:
    metrics = Metrics()
    for i in range(MAX_REJECTED_NOTES * 3):
        metrics.reject(f"b: bad message {i}")
    report = metrics.to_dict()
    assert report["rejected_total"] == MAX_REJECTED_NOTES * 3
    assert len(report["rejected_messages"]) == MAX_REJECTED_NOTES


def test_refused_connections_are_bounded_and_their_log_rate_limited(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Sixty strangers with unknown keys knock: all are counted, twenty described, and the
    log says so once (not sixty times)."""
    me, friend = generate_keypair(), generate_keypair()
    port, friend_port = free_ports(2)
    endpoint = f"tcp://127.0.0.1:{port}"
    strangers = 60

    async def main() -> tuple[int, int]:
        transport = ZmqTransport(
            "a",
            endpoint,
            {"b": PeerAddress(f"tcp://127.0.0.1:{friend_port}", friend.public)},
            keypair=(me.public, me.secret),
            max_frame_bytes=4096,
        )
        await transport.start()
        ctx = zmq.Context()
        socks = []
        try:
            for _ in range(strangers):
                keys = generate_keypair()
                sock = ctx.socket(zmq.DEALER)
                sock.linger = 0
                sock.setsockopt(zmq.RECONNECT_IVL, 60_000)  # one knock each
                sock.curve_publickey, sock.curve_secretkey = keys.public, keys.secret
                sock.curve_serverkey = me.public
                sock.connect(endpoint)
                socks.append(sock)
            end = time.monotonic() + 30
            while transport.refused_total() < strangers and time.monotonic() < end:
                await asyncio.sleep(0.05)
            return transport.refused_total(), len(transport.refused_connections())
        finally:
            for sock in socks:
                sock.close(0)
            ctx.term()
            await transport.close()

    with caplog.at_level(logging.WARNING, logger="mpc.runtime.transport"):
        total, described = asyncio.run(main())
    assert total == strangers
    assert described == MAX_REFUSED_NOTES
    lines = [r for r in caplog.records if "refused a connection" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in lines]


@pytest.mark.parametrize("u", [0, 1, 2**255 - 20], ids=["zero", "order-4", "p-1"])
def test_a_low_order_point_is_a_protocol_error(u: int) -> None:
    key = X25519Key.generate()
    good = (9).to_bytes(32, "little")
    bad = u.to_bytes(32, "little")
    with pytest.raises(InvalidPoint, match=r"element 2 .* low-order point") as info:
        key.encrypt_many(np.frombuffer(good * 2 + bad, dtype=np.uint8).reshape(3, 32))
    assert isinstance(info.value, ProtocolError) and info.value.row == 2
    with pytest.raises(InvalidPoint):
        key.encrypt(bad)
