"""The receiving thread of :class:`~mpc.runtime.transport.ZmqTransport`: a party answers while
it computes.

A party's event loop can be held for many seconds by a computation that never yields
(numpy on a large table). ZeroMQ's heartbeats go on meanwhile, in libzmq's own threads, but
a peer's PROBE and a monitor's PING are answered by the party's runtime: on a held loop they
would wait, and the party would look dead. So the transport receives on a thread of its
own, :class:`Receiver`, which

* owns the party's ROUTER and the ZAP handler (new connections are admitted while the loop
  computes, a restarted peer's or a healthcheck's);
* answers every PING and every PROBE itself, with the answers of the party's runtime
  (:class:`Answers`, which :class:`~mpc.runtime.health.HealthChecks` implements: they only
  read the party's state); the STATUS that answers a PROBE leaves on a DEALER of the
  thread's own to each peer (a second connection under the party's key, as a socket
  belongs to one thread), on which nothing is ever received;
* hands every other message to the event loop, in the order it arrived, in batches.

Backpressure is kept: the messages that wait for the event loop are bounded
(:data:`INBOX_MESSAGES`, and ``INBOX_FRAMES`` frames of the largest size); past either the
thread stops reading until the loop has taken some, so the ROUTER's queue fills and the
senders wait, as they would for a slow loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import secrets
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import zmq

from mpc.errors import ProtocolError
from mpc.runtime.codec import decode, encode, kind_prefix

__all__ = ["INBOX_FRAMES", "INBOX_MESSAGES", "Answers", "Receiver"]

log = logging.getLogger("mpc.runtime.transport")

Frames = Sequence[bytes | memoryview]

#: The messages waiting for the event loop: at most this many, and at most this many frames
#: of the largest size in bytes; past either, the thread stops reading for a while.
INBOX_MESSAGES = 65536
INBOX_FRAMES = 4
#: How long the thread waits before it looks again at an inbox that was full.
FULL_WAIT_MS = 20
#: The most messages the thread takes from the ROUTER before it hands them on.
BATCH = 256
#: A PROBE is one small frame: anything else is left to the event loop.
MAX_PROBE_BYTES = 256
#: How long stopping waits for the thread.
STOP_WAIT_S = 5.0


class Answers(Protocol):
    """What the party's runtime answers, callable from the receiving thread."""

    def answer_probe(self, sender: str, body: Any) -> dict[str, Any] | None: ...

    def answer_ping(
        self, sender: str, frames: Sequence[bytes | memoryview]
    ) -> list[bytes | memoryview] | None: ...

    def count_runtime_message(self, sender: str, kind: str, size: int) -> None: ...


class Owner(Protocol):
    """What the receiving thread asks of its transport."""

    name: str

    def sender_of(self, routing_id: str, frames: list[zmq.Frame]) -> str | None: ...

    def zap_reply(self, request: list[bytes]) -> list[bytes] | None: ...

    def monitor_sender(self, sender: str) -> bool: ...


_PROBE = kind_prefix("probe")


class Receiver:
    """The thread that receives for a transport (see the module docstring).

    ``router`` and ``zap`` (None without CurveZMQ) are bound sockets of a synchronous
    context; ``liveness`` holds one unconnected DEALER per peer, connected by
    :meth:`connect`. From :meth:`start` on the thread alone uses them, and closes them
    when it ends."""

    def __init__(
        self,
        owner: Owner,
        context: zmq.Context[Any],
        router: zmq.Socket[Any],
        zap: zmq.Socket[Any] | None,
        liveness: dict[str, zmq.Socket[Any]],
        *,
        max_frame_bytes: int,
    ) -> None:
        self._owner = owner
        self._router = router
        self._zap = zap
        self._liveness = liveness
        self._max_frame = max_frame_bytes
        self._max_bytes = INBOX_FRAMES * max_frame_bytes
        self.answers: Answers | None = None
        self._inbox: asyncio.Queue[tuple[str, list[bytes | memoryview], int]] = asyncio.Queue()
        self._lock = threading.Lock()
        self._waiting_messages = 0
        self._waiting_bytes = 0
        self._commands: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        address = f"inproc://mpc-receiver-{secrets.token_hex(8)}"
        self._control_in = context.socket(zmq.PAIR)
        self._control_in.linger = 0
        self._control_in.bind(address)
        self._control_out = context.socket(zmq.PAIR)  # used by the event loop's thread only
        self._control_out.linger = 0
        self._control_out.connect(address)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failed: Callable[[BaseException], None] | None = None
        self._thread = threading.Thread(target=self._run, name=f"{owner.name}-receiver")
        self._thread.daemon = True

    # ------------------------------------------------------------------ the event loop's side

    def start(self, failed: Callable[[BaseException], None]) -> None:
        """Start the thread; ``failed(exc)`` is called on the event loop if it ever dies."""
        self._loop = asyncio.get_running_loop()
        self._failed = failed
        self._thread.start()

    async def recv(self) -> tuple[str, list[bytes | memoryview]]:
        """The next message for the event loop: (authenticated sender, frames)."""
        sender, frames, size = await self._inbox.get()
        with self._lock:
            self._waiting_messages -= 1
            self._waiting_bytes -= size
        return sender, frames

    def connect(self, peer: str, endpoint: str) -> None:
        """Connect the thread's DEALER to ``peer`` (done by the thread)."""
        self._command("connect", (peer, endpoint))

    def reply(self, sender: str, frames: Frames) -> None:
        """Send ``frames`` to the monitor ``sender`` over the ROUTER (done by the thread)."""
        self._command("reply", (sender, list(frames)))

    def stop(self) -> None:
        """End the thread (it closes its sockets) and wait for it, a bounded time."""
        if self._thread.is_alive():
            self._command("stop", None)
            self._thread.join(STOP_WAIT_S)
        for sock in (self._control_out, self._control_in):
            with contextlib.suppress(zmq.ZMQError):
                sock.close(0)

    def _command(self, what: str, arg: Any) -> None:
        self._commands.put((what, arg))
        with contextlib.suppress(zmq.ZMQError):
            self._control_out.send(b"", zmq.NOBLOCK)

    def _deliver(self, batch: list[tuple[str, list[bytes | memoryview], int]]) -> None:
        for item in batch:
            self._inbox.put_nowait(item)

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        try:
            self._serve()
        except BaseException as exc:  # the party must hear of it: it can receive no more
            log.error("%s: the receiving thread failed: %r", self._owner.name, exc)
            self._on_loop(self._failed, exc)
        finally:
            for sock in (self._router, self._zap, *self._liveness.values()):
                if sock is not None:
                    with contextlib.suppress(zmq.ZMQError):
                        sock.close(0)

    def _on_loop(self, fn: Callable[..., None] | None, *args: Any) -> bool:
        """Run ``fn(*args)`` on the event loop; False when the loop is gone."""
        if fn is None or self._loop is None:
            return False
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: the party is gone
            return False
        return True

    def _full(self) -> bool:
        with self._lock:
            return (
                self._waiting_messages >= INBOX_MESSAGES or self._waiting_bytes >= self._max_bytes
            )

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._control_in, zmq.POLLIN)
        if self._zap is not None:
            poller.register(self._zap, zmq.POLLIN)
        reading = False
        while True:
            full = self._full()
            if reading == full:  # reading and full, or not reading and room again
                if full:
                    poller.unregister(self._router)
                else:
                    poller.register(self._router, zmq.POLLIN)
                reading = not full
            events = dict(poller.poll(FULL_WAIT_MS if full else None))
            if self._control_in in events:
                self._control_in.recv()
                if not self._run_commands():
                    return
            if self._zap is not None and self._zap in events:
                self._admit()
            if reading and self._router in events and not self._take():
                return

    def _run_commands(self) -> bool:
        """Do what the event loop asked; False when it asked to stop."""
        while True:
            try:
                what, arg = self._commands.get_nowait()
            except queue.Empty:
                return True
            if what == "stop":
                return False
            if what == "connect":
                peer, endpoint = arg
                self._liveness[peer].connect(endpoint)
            elif what == "reply":
                sender, frames = arg
                self._send(self._router, [sender.encode(), *frames], f"a PONG to {sender}")

    def _admit(self) -> None:
        """Answer every waiting ZAP request (RFC 27)."""
        assert self._zap is not None  # internal invariant: polled only when there is one
        while True:
            try:
                request = self._zap.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            reply = self._owner.zap_reply(request)
            if reply is not None:
                self._zap.send_multipart(reply)

    def _take(self) -> bool:
        """Take the ROUTER's waiting messages (at most :data:`BATCH`): answer PINGs and
        PROBEs, hand the rest to the event loop. False when the loop is gone."""
        batch: list[tuple[str, list[bytes | memoryview], int]] = []
        for _ in range(BATCH):
            try:
                parts = self._router.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            routing_id = bytes(parts[0].bytes).decode(errors="replace")
            frames = parts[1:]
            sender = self._owner.sender_of(routing_id, frames)
            if sender is None:
                continue
            buffers: list[bytes | memoryview] = [f.buffer for f in frames]
            if self._answered(sender, buffers):
                continue
            batch.append((sender, buffers, sum(len(b) for b in buffers)))
        if not batch:
            return True
        with self._lock:
            self._waiting_messages += len(batch)
            self._waiting_bytes += sum(size for _, _, size in batch)
        return self._on_loop(self._deliver, batch)

    def _answered(self, sender: str, frames: list[bytes | memoryview]) -> bool:
        """Answer a monitor's PING or a peer's PROBE here; False for what the event loop
        must handle (the protocol's messages, and anything malformed, which it rejects and
        records)."""
        answers = self.answers
        if answers is None:
            return False
        if self._owner.monitor_sender(sender):
            pong = answers.answer_ping(sender, frames)
            if pong is not None:
                self._send(self._router, [sender.encode(), *pong], f"a PONG to {sender}")
            return True
        size = sum(len(f) for f in frames)
        if len(frames) != 1 or size > MAX_PROBE_BYTES or not bytes(frames[0]).startswith(_PROBE):
            return False
        try:
            env = decode(frames, max_frame_bytes=self._max_frame)
        except ProtocolError:
            return False
        if env.kind != "probe" or sender not in self._liveness:
            return False
        answers.count_runtime_message(sender, "probe", size)
        status = answers.answer_probe(sender, env.body)
        if status is not None:
            out = encode("status", "status", 0, status, max_frame_bytes=self._max_frame)
            self._send(self._liveness[sender], out, f"a STATUS to {sender}")
        return True

    def _send(self, sock: zmq.Socket[Any], frames: Frames, what: str) -> None:
        try:
            sock.send_multipart(frames, zmq.NOBLOCK, copy=False)
        except zmq.ZMQError as exc:  # no connection yet, or its queue full: a lost answer
            log.warning("%s: could not send %s: %s", self._owner.name, what, exc)
