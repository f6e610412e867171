"""The party runtime: named parties exchanging tagged messages, with deadlines and aborts.

A protocol talks only to :class:`Party`::

    RING = uniform("sum/ring", "the running sum plus a mask", modulus=M)
    await party.send("bob", "sum/ring", value)
    value = await party.recv("alice", "sum/ring", RING)    # deadline: party.timeout
    views = await party.gather(["bob", "carol"], "counts", COUNTS)
    await party.broadcast("result", total)

Messages are matched by ``(sender, tag)``; a message that arrives before its ``recv`` is
buffered, so any number of protocol instances can run interleaved as long as their tags
differ (use :meth:`Party.tag` to derive deterministic per-instance tags).

Every receive names a :class:`~mpc.runtime.view.Receipt`: what the message is (public,
uniform, or declared leakage). The runtime accounts every message a party receives under
its receipt (:meth:`Party.received`, the report's ``received``), so a party's record of what
it saw is complete by construction; a message that arrives and is never received is listed
as ``undeclared``. With ``record_view`` the party also keeps its whole view for the
record-swap tests (:class:`~mpc.runtime.view.ViewRecorder`).

Startup is a handshake: every party sends HELLO (with the protocol version and its role) to
every peer and waits for all of theirs, never a sleep. Every receive has a deadline, which
bounds silence, not work: when it passes, the party asks the peer what it is doing (a PROBE,
answered by the peer's runtime even while a long computation holds its event loop,
:mod:`mpc.runtime.health`). A peer that answers that it is computing is waited for, and asked
again at each deadline; one that does not answer (dead, stopped, cut off), or that is alive
but neither waits nor computes, is blamed. When a party sees a failure (a silent peer, a
protocol error) it broadcasts ABORT naming the peer it blames and the step; every party that
receives it fails at once with :class:`~mpc.errors.PeerAborted`, so the whole deployment ends
within one deadline of the failure.

A monitor holding the deployment's monitor key may PING a party at any time (a container
healthcheck, :mod:`mpc.runtime.monitor`); the runtime answers PONG with the party's name, role,
protocol version and state (``handshake``, ``running``, ``closing`` or ``failed``), nothing
about the protocol's data, and accepts nothing else from a monitor.

Every process announces a fresh random *incarnation* in its HELLO. A HELLO from a peer with
a new incarnation after the handshake means the peer was restarted (a new process on the
same endpoint and key) and lost whatever it held in memory: the run fails with
:class:`~mpc.errors.PeerLost` naming it, unless this party declared with
:meth:`Party.expect_restarts` that the peer keeps its state elsewhere (the CDBS and its
database). Then this party answers the new process's HELLO, calls the callback it gave (e.g.
to send again the requests the old process never answered), and a lost connection to that
peer is not an error by itself: the receives that wait for it keep their deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any

from mpc.errors import (
    ConfigError,
    MPCError,
    PeerAborted,
    PeerError,
    PeerLost,
    PeerMisbehaved,
    PeerTimeout,
    ProtocolError,
)
from mpc.runtime.codec import DEFAULT_MAX_FRAME_BYTES, decode, encode
from mpc.runtime.config import DEFAULT_TIMEOUT
from mpc.runtime.expect import Expect
from mpc.runtime.faults import Fault, inject
from mpc.runtime.handshake import Handshake
from mpc.runtime.health import CPU_SAMPLE_S, MAX_PINGS_PER_S, HealthChecks
from mpc.runtime.metrics import Ledger, Metrics
from mpc.runtime.transport import Transport, is_monitor
from mpc.runtime.view import READY, Receipt, ViewRecorder, tag_pattern

__all__ = ["Party"]

log = logging.getLogger("mpc.runtime.party")

#: How long a party keeps trying to hand over its final messages / its abort notice.
CLOSE_LINGER_S = 1.0
ABORT_LINGER_S = 1.0
#: Messages that arrive before their ``recv`` wait in a buffer, at most this many per peer
#: and (see :class:`Party`'s ``max_buffered_bytes``) this many bytes per peer; a peer that
#: goes past either has flooded this party, and the run ends blaming it.
MAX_BUFFERED_MESSAGES = 65536
#: The default byte bound of a peer's early messages: this many frames of the largest size.
BUFFERED_FRAMES = 4


class Party(Handshake, HealthChecks):
    """One party of a deployment: ``name``, ``role``, the ordered list of all party names.

    ``parties`` is the deployment order (P1 ... Pk) and must contain ``name``.
    ``max_buffered_bytes`` bounds the bytes of one peer's messages waiting for their
    ``recv`` (default: :data:`BUFFERED_FRAMES` frames of ``max_frame_bytes``).

    Nothing a peer or a monitor sends can stop this party reading: a message that fails to
    decode or to be dispatched is rejected and recorded (``metrics.rejected``) and the reader
    goes on; a peer that floods the buffer, or sends what no honest party sends, ends the run
    with :class:`~mpc.errors.PeerMisbehaved` naming it; and should the reader itself ever
    stop, the run fails at once with an error saying so, never silently at a deadline.
    """

    def __init__(
        self,
        name: str,
        role: str,
        parties: Sequence[str],
        transport: Transport,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        fault: Fault | None = None,
        max_buffered_bytes: int | None = None,
        record_view: bool = False,
        agreement: dict[str, str] | None = None,
    ) -> None:
        if name not in parties:
            raise ValueError(f"party {name!r} is not in the deployment {list(parties)}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self.name = name
        self.role = role
        self.parties = list(parties)
        self.peers = [p for p in self.parties if p != name]
        self.timeout = timeout
        self.metrics = Metrics()
        self.ledger = Ledger()
        #: (tag pattern, receipt name, kind, sender) -> [messages, bytes]
        self._received: defaultdict[tuple[str, str, str, str], list[int]] = defaultdict(
            lambda: [0, 0]
        )
        self.view: ViewRecorder | None = ViewRecorder() if record_view else None
        self._agreement = dict(agreement) if agreement is not None else None
        self.peer_roles: dict[str, str] = {}
        self._transport = transport
        self._max_frame = max_frame_bytes
        self._fault = fault
        self._buffer: defaultdict[tuple[str, str], deque[tuple[int, Any, int]]] = defaultdict(deque)
        self._buffered_bytes: defaultdict[str, int] = defaultdict(int)
        self._buffered_count: defaultdict[str, int] = defaultdict(int)
        self._max_buffered_bytes = (
            BUFFERED_FRAMES * max_frame_bytes if max_buffered_bytes is None else max_buffered_bytes
        )
        self._ping_tokens = MAX_PINGS_PER_S
        self._ping_stamp = 0.0
        self.pings_dropped = 0
        self._waiters: dict[tuple[str, str], asyncio.Future[tuple[int, Any, int]]] = {}
        self._hello: dict[str, dict[str, Any]] = {}
        self._hello_event = asyncio.Event()
        self._incarnation = secrets.token_hex(8)
        self._restartable: dict[str, Callable[[], Awaitable[None]]] = {}
        self._failure: MPCError | None = None
        self._aborted_sent = False
        self._left: set[str] = set()
        self._all_left = asyncio.Event()
        self._closing = False
        self._probes: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._probe_seq = 0
        self._cpu_samples: deque[tuple[float, float]] = deque(maxlen=16)
        self._sampler: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        self._seen_depth = 0
        self._sent_total = 0
        self._fault_fired = False
        self._step = "startup"

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the transport and complete the startup handshake with every peer."""
        self._transport.set_failure_handler(self._transport_failed)
        self._transport.set_peer_lost_handler(self._peer_lost)
        self._transport.set_answers(self)
        self._sample_cpu()
        self._sampler = asyncio.create_task(self._sample_loop(), name=f"{self.name}-cpu")
        await self._transport.start()
        self._reader = asyncio.create_task(self._read_loop(), name=f"{self.name}-reader")
        self._reader.add_done_callback(self._reader_done)
        await self._handshake()
        if self._fault is not None and self._fault.after == 0:
            await self._inject_fault()

    async def close(self, *, linger_s: float = CLOSE_LINGER_S) -> None:
        """End the run: unless it failed, say BYE to every peer and wait (at most one
        deadline) until every peer has said BYE or is gone, so that no party leaves while
        a message it sent is still needed; then release the transport."""
        if self._failure is None and self._reader is not None:
            self._closing = True
            for peer in self.peers:  # even to those who said BYE: they wait for ours
                await self._send_raw(peer, "bye", "bye", None, count=False)
            self._check_all_left()
            try:
                await asyncio.wait_for(self._all_left.wait(), self.timeout)
            except TimeoutError:
                missing = [p for p in self.peers if p not in self._left]
                log.warning("%s: closing without a BYE from %s", self.name, ", ".join(missing))
        if self._background:  # e.g. an abort notice still on its way out
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
            self._sampler = None
        await self._transport.close(linger_s)

    async def _sample_loop(self) -> None:
        """Sample the process's CPU time every :data:`~mpc.runtime.health.CPU_SAMPLE_S`
        (what tells a computing party from a stuck one, :meth:`computing`)."""
        while True:
            await asyncio.sleep(CPU_SAMPLE_S)
            self._sample_cpu()

    async def refuse(self, exc: BaseException, *, step: str = "input check") -> None:
        """End, before its start, a run this party cannot take part in (its own input is
        wrong, found before it waits for anyone): tell every peer that it stopped and why,
        in public words (an :class:`~mpc.errors.InputError`'s ``public``), and release the
        transport. The notices wait at most one deadline for their peers to be up, so a peer
        started a little later hears it as soon as it connects."""
        self._step = step
        self._set_failure(exc if isinstance(exc, MPCError) else ProtocolError(str(exc)))
        self._aborted_sent = True
        await self._transport.start()
        notice = {"peer": self.name, "step": step, "reason": self._public_reason(exc)}
        frames = encode("abort", "abort", 0, notice, max_frame_bytes=self._max_frame)
        for peer in self.peers:
            await self._transport.send(peer, frames)  # queued until the peer is up
        await self._transport.close(linger_s=self.timeout)

    async def __aenter__(self) -> Party:
        try:
            await self.start()
        except BaseException as exc:
            await self._fail(exc)
            await self.close(linger_s=ABORT_LINGER_S)
            raise
        return self

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            await self._fail(exc)
            await self.close(linger_s=ABORT_LINGER_S)
        else:
            await self.close()

    # ------------------------------------------------------------------ tags and phases

    @staticmethod
    def tag(*parts: object) -> str:
        """A deterministic tag from parts, e.g. ``Party.tag("is-r-empty", node, "sum")``."""
        return "/".join(str(p) for p in parts)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time a protocol phase; it also names the step in error messages."""
        previous, self._step = self._step, name
        with self.metrics.phase(name):
            yield
        self._step = previous

    # ------------------------------------------------------------------ messaging

    async def send(self, peer: str, tag: str, obj: Any) -> None:
        """Send ``obj`` to ``peer`` under ``tag``."""
        self._check_peer(peer)
        if self._failure is not None:
            raise self._failure
        await self._send_raw(peer, "msg", tag, obj, count=True)

    async def broadcast(self, tag: str, obj: Any, peers: Iterable[str] | None = None) -> None:
        """Send the same ``obj`` to every peer (or to ``peers``), one round."""
        targets = self.peers if peers is None else [p for p in peers if p != self.name]
        for peer in targets:
            await self.send(peer, tag, obj)

    async def barrier(self, tag: str) -> None:
        """Wait until every party is ready (one ``READY`` each way, no data), timed as ``tag``."""
        with self.phase(tag):
            await self.broadcast(tag, True)
            await self.gather(self.peers, tag, READY)

    async def recv(
        self,
        peer: str,
        tag: str,
        receipt: Receipt,
        *,
        timeout: float | None = None,
        expect: Expect | None = None,
    ) -> Any:
        """Wait for the message from ``peer`` under ``tag``, which ``receipt`` declares;
        raise ``PeerTimeout`` after ``timeout`` (default: the deployment deadline). The body
        must have the form ``expect`` (default: the receipt's, :mod:`mpc.runtime.expect`),
        else ``ProtocolError`` names the sender, the step and what was wrong."""
        body = await self._recv(peer, tag, receipt, timeout)
        form = receipt.expect if expect is None else expect
        if form is not None:
            reason = form.problem(body)
            if reason is not None:
                raise ProtocolError(
                    f"{self.name}: {peer} sent, at {tag}, {receipt.what} ({receipt.name}), "
                    f"which must be {form.describe()}: {reason}"
                )
        return body

    async def _recv(self, peer: str, tag: str, receipt: Receipt, timeout: float | None) -> Any:
        self._check_peer(peer)
        if not isinstance(receipt, Receipt):
            raise ProtocolError(
                f"{self.name}: the receive of {tag!r} from {peer} declares no receipt"
            )
        if self._failure is not None:
            raise self._failure
        key = (peer, tag)
        if self._buffer.get(key):
            return self._unbuffer(key, receipt)
        if peer in self._left:
            raise self._left_error(peer, tag)
        if key in self._waiters:
            raise ProtocolError(f"{self.name}: two receives wait for ({peer!r}, {tag!r}) at once")
        limit = self.timeout if timeout is None else timeout
        waited, cycles = 0.0, 0
        while True:
            fut: asyncio.Future[tuple[int, Any, int]] = asyncio.get_running_loop().create_future()
            self._waiters[key] = fut
            try:
                # asyncio.timeout, not wait_for: the receive resumes in the loop iteration
                # that delivers the message (wait_for's extra waiter costs iterations)
                async with asyncio.timeout(limit):
                    depth, body, size = await fut
                return self._consume(key, receipt, depth, body, size)
            except TimeoutError:
                waited += limit
                blamed, chain, ended = await self._trace_blame(peer)
                if self._buffer.get(key):  # it arrived while we were asking around
                    return self._unbuffer(key, receipt)
                if self._failure is not None:
                    raise self._failure from None
                cycles = cycles + 1 if ended == "cycle" else 0
                # alive and at work: a deadline bounds silence, not work; a cycle seen once
                # may be a message in flight, which the next deadline would have delivered
                if ended == "computing" or cycles == 1:
                    why = "; ".join(chain[:-1] if ended == "cycle" else chain)
                    log.warning(
                        "%s: no message from %s for step %r within %gs, but %s; waiting on%s",
                        self.name, peer, tag, waited, why,
                        " (a cycle of waits, perhaps a message in flight: once more)"
                        if ended == "cycle" else "",
                    )  # fmt: skip
                    continue
                err = self._timeout_error(peer, tag, limit, blamed, chain)
                await self._fail(err)
                raise err from None
            finally:
                self._waiters.pop(key, None)

    def _timeout_error(
        self, peer: str, tag: str, limit: float, blamed: str, chain: list[str]
    ) -> PeerTimeout:
        """The error of a receive from ``peer`` that timed out, blaming ``blamed``."""
        link = self._transport.describe_peer(blamed)
        rejected = [r for r in self.metrics.rejected if r.startswith(f"{peer}: ")]
        return PeerTimeout(
            f"{self.name}: no message from {peer} for step {tag!r} within {limit:g}s; "
            + "; ".join(chain)
            + (f"; {link}" if link else "")
            + (f"; rejected from {peer}: {rejected[-1]}" if rejected else ""),
            peer=blamed,
            step=tag,
        )

    def drain(self, peer: str, prefix: str, receipt: Receipt) -> int:
        """Take every message from ``peer`` whose tag starts with ``prefix`` that arrived and
        no receive took, accounting it under ``receipt``: for a protocol whose peer may answer
        twice (a restarted server answering a request its predecessor answered). Returns how
        many were taken."""
        keys = [k for k in self._buffer if k[0] == peer and k[1].startswith(prefix)]
        taken = 0
        for key in keys:
            while self._buffer.get(key):
                self._unbuffer(key, receipt)
                taken += 1
        return taken

    async def gather(
        self, peers: Iterable[str], tag: str, receipt: Receipt, *, expect: Expect | None = None
    ) -> dict[str, Any]:
        """Receive one message under ``tag`` from each of ``peers`` (concurrently), each
        checked as :meth:`recv` checks it."""
        peers = list(peers)
        bodies = await asyncio.gather(*(self.recv(p, tag, receipt, expect=expect) for p in peers))
        return dict(zip(peers, bodies, strict=True))

    def _unbuffer(self, key: tuple[str, str], receipt: Receipt) -> Any:
        """Take the oldest early message under ``key`` out of the buffer."""
        queue = self._buffer[key]
        depth, body, size = queue.popleft()
        if not queue:
            del self._buffer[key]  # tags are many over a run: keep no empty queue
        self._buffered_bytes[key[0]] -= size
        self._buffered_count[key[0]] -= 1
        return self._consume(key, receipt, depth, body, size)

    def _buffer_early(self, sender: str, tag: str, depth: int, body: Any, size: int) -> None:
        """Keep a message that came before its ``recv``; a peer past the bounds has flooded
        this party, and the run ends blaming it."""
        count = self._buffered_count[sender] + 1
        total = self._buffered_bytes[sender] + size
        if count > MAX_BUFFERED_MESSAGES or total > self._max_buffered_bytes:
            what = f"{count} messages" if count > MAX_BUFFERED_MESSAGES else f"{total} bytes"
            err = PeerMisbehaved(
                f"{self.name}: {sender} flooded this party: {what} of its messages wait for a "
                f"receive, over the bounds of {MAX_BUFFERED_MESSAGES} messages and "
                f"{self._max_buffered_bytes} bytes per peer (last tag {tag[:80]!r})",
                peer=sender,
                step=self._step,
            )
            self.metrics.reject(f"{sender}: flooded the receive buffer ({what})")
            self._buffer = defaultdict(deque)  # let the memory go now
            self._buffered_bytes.clear()
            self._buffered_count.clear()
            self._fail_soon(err)
            return
        self._buffered_count[sender] = count
        self._buffered_bytes[sender] = total
        self._buffer[(sender, tag)].append((depth, body, size))

    def _fail_soon(self, err: MPCError) -> None:
        """Fail the run from a callback that cannot await (the reader): every pending receive
        fails now, the abort notice goes out in the background."""
        if self._failure is not None:
            return
        log.error("%s", err)
        self._set_failure(err)
        task = asyncio.create_task(self._fail(err))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _consume(
        self, key: tuple[str, str], receipt: Receipt, depth: int, body: Any, size: int
    ) -> Any:
        """A message reaches the protocol: account it under its receipt (and, recording the
        view, keep it)."""
        self._seen_depth = max(self._seen_depth, depth)
        self.metrics.rounds = max(self.metrics.rounds, depth)
        peer, tag = key
        line = self._received[(tag_pattern(tag), receipt.name, str(receipt.kind), peer)]
        line[0] += 1
        line[1] += size
        if self.view is not None:
            self.view.record(peer, tag, receipt, body)
        return body

    def received(self) -> list[dict[str, Any]]:
        """Every message this party received, by tag pattern, receipt and sender: its kind
        (``public``, ``uniform``, ``declared``; ``undeclared`` for a message that arrived
        and no receive ever took), the number of messages and their bytes."""
        lines = dict(self._received)
        for (peer, tag), queue in self._buffer.items():
            line = lines.setdefault((tag_pattern(tag), "", "undeclared", peer), [0, 0])
            lines[(tag_pattern(tag), "", "undeclared", peer)] = [
                line[0] + len(queue),
                line[1] + sum(size for _, _, size in queue),
            ]
        return [
            {"tag": t, "receipt": r, "kind": k, "from": p, "messages": n, "bytes": b}
            for (t, r, k, p), (n, b) in sorted(lines.items())
        ]

    def _check_peer(self, peer: str) -> None:
        if peer not in self.peers:
            raise ProtocolError(f"{self.name}: {peer!r} is not a peer; peers are {self.peers}")

    async def _send_raw(self, peer: str, kind: str, tag: str, obj: Any, *, count: bool) -> None:
        if self._fault_fired and self._fault is not None and self._fault.action == "kill":
            # dying: the N messages are flushing, and a concurrent send must not join them
            await asyncio.get_running_loop().create_future()
        depth = self._seen_depth + 1 if count else 0
        frames = encode(kind, tag, depth, obj, max_frame_bytes=self._max_frame)
        try:
            # runs inline (no task as wait_for makes): a send that does not block costs no
            # loop iteration
            async with asyncio.timeout(self.timeout):
                await self._transport.send(peer, frames)
        except TimeoutError:
            raise PeerTimeout(
                f"{self.name}: could not hand a message for step {tag!r} to {peer} within "
                f"{self.timeout:g}s (its queue is full: peer dead or not reading)",
                peer=peer,
                step=tag,
            ) from None
        if count:
            self.metrics.rounds = max(self.metrics.rounds, depth)
            self.metrics.bytes_sent[peer] += sum(len(f) for f in frames)
            self.metrics.messages_sent[peer] += 1
            self._sent_total += 1
            if self._fault is not None and self._sent_total >= self._fault.after:
                await self._inject_fault()

    async def _inject_fault(self) -> None:
        """Fault injection, once (:func:`mpc.runtime.faults.inject`)."""
        if self._fault is None or self._fault_fired:
            return
        self._fault_fired = True
        await inject(self._fault, self.name, self._transport, self._sent_total)

    # ------------------------------------------------------------------ incoming

    def _left_error(self, peer: str, tag: str) -> PeerLost:
        return PeerLost(
            f"{self.name}: {peer} finished and left, but step {tag!r} still waits for it; "
            "the parties disagree about the protocol",
            peer=peer,
            step=tag,
        )

    def _peer_lost(self, peer: str, detail: str) -> None:
        """The transport lost ``peer`` for good: fail now instead of waiting for a deadline."""
        if self._closing:  # our work is done: a peer that goes now has simply left
            self._left.add(peer)
            self._check_all_left()
            return
        if peer in self._left or self._failure is not None:
            return
        if peer in self._restartable:
            log.warning("%s: %s; waiting for it to be restarted", self.name, detail)
            return
        waiting = [tag for (p, tag) in self._waiters if p == peer] or [t for _, t in self._waiters]
        step = waiting[0] if waiting else self._step
        self._fail_soon(PeerLost(f"{self.name}: {detail} (step {step!r})", peer=peer, step=step))

    def _check_all_left(self) -> None:
        if all(p in self._left for p in self.peers):
            self._all_left.set()

    def _on_bye(self, sender: str) -> None:
        self._left.add(sender)
        self._check_all_left()
        for (peer, tag), fut in list(self._waiters.items()):
            if peer == sender and not fut.done():
                fut.set_exception(self._left_error(peer, tag))

    def _transport_failed(self, exc: BaseException) -> None:
        if isinstance(exc, PeerError):  # e.g. a peer sent what no honest party sends
            self._fail_soon(exc)
            return
        self._set_failure(
            ProtocolError(
                f"{self.name}: the transport failed at step {self._step!r}: "
                f"{type(exc).__name__}: {exc}"
            )
        )

    def _reader_done(self, task: asyncio.Task[None]) -> None:
        """The reader never stops while the party runs; if it ever does, say so now."""
        if task.cancelled() or self._failure is not None:
            return
        exc = task.exception()
        detail = f"{type(exc).__name__}: {exc}" if exc is not None else "it returned"
        self._fail_soon(
            ProtocolError(
                f"{self.name}: the message reader stopped at step {self._step!r} ({detail}); "
                "no message can be received any more"
            )
        )

    async def _read_loop(self) -> None:
        while True:
            try:
                sender, frames = await self._transport.recv()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the socket is gone: every pending receive must fail
                self._transport_failed(exc)
                return
            try:
                self._dispatch(sender, frames)
            except Exception as exc:  # a message must never stop the reader: reject it
                note = f"{type(exc).__name__}: {exc}"
                self.metrics.reject(f"{sender}: could not be handled: {note[:300]}")
                log.error("%s: rejected a message from %s: %s", self.name, sender, note[:300])

    def _dispatch(self, sender: str, frames: list[bytes | memoryview]) -> None:
        """Handle one message from the transport (runs in the reader; must not await)."""
        if is_monitor(sender):
            self._on_ping(sender, frames)
            return
        if sender not in self.peers:
            self.metrics.reject(f"{sender}: not a peer of this deployment")
            return
        try:
            env = decode(frames, max_frame_bytes=self._max_frame)
        except ProtocolError as exc:
            self.metrics.reject(f"{sender}: {exc}")
            log.error("%s: rejected a message from %s: %s", self.name, sender, exc)
            return
        if env.kind != "msg":  # the runtime's own messages: public, never the protocol's data
            self.count_runtime_message(sender, env.kind, sum(len(f) for f in frames))
        if env.kind == "hello":
            self._on_hello(sender, env.body)
        elif env.kind == "abort":
            self._on_abort(sender, env.body)
        elif env.kind == "bye":
            self._on_bye(sender)
        elif env.kind == "probe":
            self._on_probe(sender, env.body)
        elif env.kind == "status":
            self._on_status(sender, env.body)
        elif env.kind == "msg":
            size = sum(len(f) for f in frames)
            self.metrics.bytes_received[sender] += size
            self.metrics.messages_received[sender] += 1
            key = (sender, env.tag)
            waiter = self._waiters.get(key)
            if waiter is not None and not waiter.done():
                waiter.set_result((env.depth, env.body, size))
            else:
                self._buffer_early(sender, env.tag, env.depth, env.body, size)
        else:  # ping / pong come from monitors only
            self.metrics.reject(f"{sender}: a peer sent a {env.kind!r} message")

    def _background_task(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await coro
            except MPCError as exc:
                self._set_failure(exc)
            except Exception as exc:  # a failure in the background must end the run
                self._set_failure(
                    ProtocolError(
                        f"{self.name}: at step {self._step!r}: {type(exc).__name__}: {exc}"
                    )
                )

        task = asyncio.create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _on_abort(self, sender: str, body: Any) -> None:
        body = body if isinstance(body, dict) else {}
        blamed = str(body.get("peer", sender))
        step = str(body.get("step", "?"))
        reason = str(body.get("reason", "no reason given"))
        what = (  # a party that stops on its own error blames no one
            f"{sender} stopped the run at step {step!r}"
            if blamed == sender
            else f"{sender} aborted the run at step {step!r}, blaming {blamed}"
        )
        self._set_failure(
            PeerAborted(f"{self.name}: {what}: {reason}", peer=blamed, step=step, origin=sender)
        )

    def _set_failure(self, err: MPCError) -> None:
        if self._failure is None:
            self._failure = err
        for fut in self._waiters.values():
            if not fut.done():
                fut.set_exception(err)
        self._hello_event.set()
        self._all_left.set()

    async def _fail(self, exc: BaseException) -> None:
        """Record a local failure and tell every peer (once) that the run is over."""
        if isinstance(exc, PeerAborted):
            self._set_failure(exc)
            return  # the origin has told everyone already
        if isinstance(exc, PeerError):
            peer, step = exc.peer, exc.step
        else:
            peer, step = self.name, self._step
        self._set_failure(
            exc
            if isinstance(exc, MPCError)
            else ProtocolError(f"{self.name}: failed at step {step!r}: {type(exc).__name__}: {exc}")
        )
        if self._aborted_sent:
            return
        self._aborted_sent = True
        notice = {"peer": peer, "step": step, "reason": self._public_reason(exc)}
        frames = encode("abort", "abort", 0, notice, max_frame_bytes=self._max_frame)
        gone = self._left | ({peer} if isinstance(exc, PeerLost) else set())

        async def tell(p: str) -> None:
            try:
                await asyncio.wait_for(self._transport.send(p, frames), ABORT_LINGER_S)
            except Exception as err:  # best effort: the run is failing already; log, go on
                log.warning("%s: could not send the abort notice to %s: %s", self.name, p, err)

        await asyncio.gather(*(tell(p) for p in self.peers if p not in gone))

    def _public_reason(self, exc: BaseException) -> str:
        """Why this party stops, as its peers are told: never a value of its private input
        (an :class:`~mpc.errors.InputError` says only its ``public`` line; another error of
        its input or its deployment entry, found before the run, only that there is one), nor
        of what it computed or received: the runtime's own errors about a peer (a deadline,
        an abort) say so, any other only its type."""
        if isinstance(exc, MPCError) and exc.public:
            return f"{type(exc).__name__}: {exc.public}"
        if isinstance(exc, ConfigError) and self._step == "input check":
            public = getattr(exc, "public", None)  # a DataError says what is wrong, publicly
            what = f"{self.name}: {public}" if public else (
                f"{self.name}'s input or its entry in the deployment file is wrong (its own "
                "error says where and why)"
            )  # fmt: skip
            return f"{type(exc).__name__}: {what}"
        if isinstance(exc, asyncio.CancelledError):  # stopped: the message says by what
            return str(exc) or f"{self.name}'s run was cancelled"
        if isinstance(exc, PeerError):  # the runtime's own words: a peer, a step, a deadline
            return f"{type(exc).__name__}: {exc}"
        # any other error's message may quote what this party computed or received (a value
        # a check refused, another party's message): it stays in this party's own log
        return f"{type(exc).__name__} (its message stays in {self.name}'s log)"

    def report(self) -> dict[str, Any]:
        """Metrics and ledger as plain JSON data. ``metrics`` also lists the connections the
        transport refused (``refused_connections``: unknown CurveZMQ keys)."""
        metrics = self.metrics.to_dict()
        metrics["refused_connections"] = self._transport.refused_connections()
        metrics["refused_total"] = self._transport.refused_total()
        metrics["pings_dropped"] = self.pings_dropped
        return {
            "name": self.name,
            "role": self.role,
            "metrics": metrics,
            "ledger": self.ledger.to_list(),
            "received": self.received(),
            **({"view": self.view.to_dict()} if self.view is not None else {}),
        }
