"""A party's answers to questions about itself, which its runtime gives without its protocol:
a monitor's PING (a container healthcheck, :mod:`mpc.runtime.monitor`) and a peer's PROBE
(what are you waiting for?), and the blame a timed-out party traces with those probes.

:class:`HealthChecks` is part of :class:`~mpc.runtime.party.Party`; it reads the party's
state and never touches its protocol's messages. What it reveals: to a monitor, the party's
name, role, protocol version and state; to a peer, the step it is at, whom it waits for
under which tag, and whether it is computing (public facts of the run's schedule).

A party answers while it computes. Over ZeroMQ the transport receives on a thread of its
own, which answers PINGs and PROBEs itself (:meth:`HealthChecks.answer_ping`,
:meth:`HealthChecks.answer_probe`) however long the event loop is held by a computation
that never yields (numpy on a large table). A party *computes* when it waits for no peer
and its process used at least :data:`COMPUTING_CPU_SHARE` of a core lately (the CPU time
sampled every :data:`CPU_SAMPLE_S` on the event loop; a loop held up keeps the last sample,
so the share is that of the whole hold-up). A party that waits for a computing peer past
its deadline waits on, asking again at each deadline; a peer that does not answer (dead,
stopped, cut off), or is alive but neither waits nor computes (stuck), is blamed as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from mpc.errors import MPCError, ProtocolError
from mpc.runtime.codec import PROTOCOL_VERSION, decode, encode
from mpc.runtime.metrics import Metrics
from mpc.runtime.transport import Transport

__all__ = [
    "COMPUTING_CPU_SHARE",
    "CPU_SAMPLE_S",
    "MAX_MONITOR_MESSAGE_BYTES",
    "MAX_PINGS_PER_S",
    "PROBE_TIMEOUT_S",
    "HealthChecks",
]

log = logging.getLogger("mpc.runtime.party")

#: How long a timed-out party waits for each answer while it traces who holds the run up.
PROBE_TIMEOUT_S = 2.0
#: A monitor's message is a PING of a few dozen bytes: anything over this is refused unread.
MAX_MONITOR_MESSAGE_BYTES = 1024
#: At most this many PINGs are answered per second (a token bucket of this depth); the rest
#: are counted and dropped, so a monitor cannot keep a party busy.
MAX_PINGS_PER_S = 20.0
#: How often the event loop samples the process's CPU time (wall clock, CPU seconds).
CPU_SAMPLE_S = 0.25
#: The CPU share is taken over at least this many seconds (the newest sample this old).
CPU_WINDOW_S = 1.0
#: A party that waits for no peer and used at least this share of a core over the window
#: computes (an idle or stuck process uses a few thousandths; a computing one more than this
#: even on a host whose cores each run a dozen other busy processes).
COMPUTING_CPU_SHARE = 0.02


class HealthChecks:
    """PING, PROBE and STATUS, and the blame of a timeout (part of
    :class:`~mpc.runtime.party.Party`, which sets the attributes below)."""

    name: str
    role: str
    parties: list[str]
    timeout: float
    metrics: Metrics
    pings_dropped: int
    _transport: Transport
    _max_frame: int
    _ping_tokens: float
    _ping_stamp: float
    _probes: dict[int, asyncio.Future[dict[str, Any]]]
    _probe_seq: int
    _background: set[asyncio.Task[None]]
    _waiters: dict[tuple[str, str], Any]
    _step: str
    _failure: MPCError | None
    _closing: bool
    _hello_event: asyncio.Event
    _received: Any  # (tag pattern, receipt, kind, sender) -> [messages, bytes]
    _cpu_samples: deque[tuple[float, float]]

    async def _send_raw(self, peer: str, kind: str, tag: str, obj: Any, *, count: bool) -> None:
        raise NotImplementedError  # Party's

    # ---------------------------------------------------------------- computing or not

    def _sample_cpu(self) -> None:
        """One sample of (wall clock, process CPU time); the event loop takes one every
        :data:`CPU_SAMPLE_S`."""
        self._cpu_samples.append((time.monotonic(), time.process_time()))

    def computing(self) -> bool:
        """Whether this party computes: it waits for no peer, and its process used at least
        :data:`COMPUTING_CPU_SHARE` of a core since the newest sample at least
        :data:`CPU_WINDOW_S` old (or the oldest there is). Safe to call from the transport's
        receiving thread: it only reads."""
        if any(p != self.name for p, _ in list(self._waiters)):
            return False
        samples = list(self._cpu_samples)
        if not samples:
            return False
        now, cpu = time.monotonic(), time.process_time()
        old = [s for s in samples if now - s[0] >= CPU_WINDOW_S]
        then, then_cpu = old[-1] if old else samples[0]
        elapsed = now - then
        return elapsed > 0 and (cpu - then_cpu) / elapsed >= COMPUTING_CPU_SHARE

    async def _trace_blame(self, peer: str) -> tuple[str, list[str], str]:
        """Follow the wait-for chain from ``peer`` to the party that holds the run up; also
        what the chain ended in: ``"computing"`` (the run goes on waiting for it), ``"cycle"``
        or ``"held"`` (dead, stopped, unreachable, stuck).

        A party that times out waiting for X asks X what it is waiting for (PROBE/STATUS,
        answered by X's runtime, not its protocol, even while X computes). If X waits for Y,
        ask Y, and so on: the chain ends at the first party that does not answer (dead,
        stopped, unreachable), waits for no one (computing, or stuck when it is not), or
        closes a cycle (the parties disagree about the protocol, or, once, a message in
        flight: X has sent what this party waits for and waits for this party's answer, and
        the probes saw both before the message arrived). Without this, equal deadlines would
        blame whoever is next in line.
        """
        chain: list[str] = []
        visited = {self.name}
        current = peer
        probe_s = min(PROBE_TIMEOUT_S, self.timeout / 4)
        for _ in range(len(self.parties)):
            status = await self._probe(current, probe_s)
            if status is None:
                chain.append(f"{current} does not answer a probe (dead, stuck or unreachable)")
                return current, chain, "held"
            waits = [(p, t) for p, t in status["waiting"] if p != current]
            if not waits:
                if status["computing"]:
                    chain.append(f"{current} is computing at step {status['step']!r}")
                    return current, chain, "computing"
                chain.append(
                    f"{current} is alive and not waiting for anyone "
                    f"(busy or stuck at step {status['step']!r})"
                )
                return current, chain, "held"
            nxt, nxt_tag = waits[0]
            chain.append(f"{current} is itself waiting for {nxt} (step {nxt_tag!r})")
            visited.add(current)
            if nxt in visited:
                chain.append(
                    "the wait-for chain is a cycle: the parties disagree about the protocol"
                )
                return current, chain, "cycle"
            current = nxt
        return current, chain, "held"

    async def _probe(self, peer: str, timeout: float) -> dict[str, Any] | None:
        self._probe_seq += 1
        probe_id = self._probe_seq
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._probes[probe_id] = fut
        try:
            await self._send_raw(peer, "probe", "probe", {"id": probe_id}, count=False)
            return await asyncio.wait_for(fut, timeout)
        except (TimeoutError, MPCError):
            return None
        finally:
            self._probes.pop(probe_id, None)

    def _status(self) -> dict[str, Any]:
        waiting = [[p, t] for (p, t) in list(self._waiters) if p != self.name]
        return {"step": self._step, "waiting": waiting, "computing": self.computing()}

    def count_runtime_message(self, sender: str, kind: str, size: int) -> None:
        """Account one of the runtime's own messages (public) in :meth:`Party.received`."""
        line = self._received[(kind, f"runtime/{kind}", "public", sender)]
        line[0] += 1
        line[1] += size

    def answer_probe(self, sender: str, body: Any) -> dict[str, Any] | None:
        """The STATUS that answers ``sender``'s PROBE (None: refused, and recorded). Called
        by the event loop, or by the transport's receiving thread while the loop computes."""
        probe_id = body.get("id") if isinstance(body, dict) else None
        if type(probe_id) is not int:
            self.metrics.reject(f"{sender}: a PROBE without an id (int)")
            return None
        return {"id": probe_id, **self._status()}

    def _on_probe(self, sender: str, body: Any) -> None:
        reply = self.answer_probe(sender, body)
        if reply is None:
            return
        task = asyncio.create_task(self._send_raw(sender, "status", "status", reply, count=False))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _on_status(self, sender: str, body: Any) -> None:
        if not isinstance(body, dict) or type(body.get("id")) is not int:
            self.metrics.reject(f"{sender}: a STATUS without an id (int)")
            return
        fut = self._probes.get(body["id"])
        waiting = body.get("waiting")
        if fut is None or fut.done() or not isinstance(waiting, list):
            return
        pairs = [(str(w[0]), str(w[1])) for w in waiting if isinstance(w, list) and len(w) == 2]
        fut.set_result(
            {
                "step": str(body.get("step", "?")),
                "waiting": pairs,
                "computing": body.get("computing") is True,
            }
        )

    def state(self) -> str:
        """``handshake``, ``running``, ``closing`` or ``failed``: what a PONG reports."""
        if self._failure is not None:
            return "failed"
        if self._closing:
            return "closing"
        return "handshake" if not self._hello_event.is_set() else "running"

    def answer_ping(
        self, sender: str, frames: Sequence[bytes | memoryview]
    ) -> list[bytes | memoryview] | None:
        """The PONG that answers a monitor's PING (None: refused or dropped, and counted).

        A monitor cannot disturb the party: a message over :data:`MAX_MONITOR_MESSAGE_BYTES`
        is refused unread, at most :data:`MAX_PINGS_PER_S` PINGs a second are answered (the
        rest are counted in ``pings_dropped``), and nothing it sends reaches the protocol.
        Called by the event loop, or by the transport's receiving thread (which then alone
        answers monitors)."""
        size = sum(len(f) for f in frames)
        if size > MAX_MONITOR_MESSAGE_BYTES:
            self.metrics.reject(f"{sender}: a monitor sent {size} bytes; a PING is small")
            return None
        now = time.monotonic()
        self._ping_tokens = min(
            MAX_PINGS_PER_S, self._ping_tokens + (now - self._ping_stamp) * MAX_PINGS_PER_S
        )
        self._ping_stamp = now
        if self._ping_tokens < 1.0:
            self.pings_dropped += 1
            return None
        self._ping_tokens -= 1.0
        try:
            env = decode(frames, max_frame_bytes=self._max_frame)
        except ProtocolError as exc:
            self.metrics.reject(f"{sender}: {exc}")
            return None
        if env.kind != "ping":
            self.metrics.reject(f"{sender}: a monitor may only ping, sent {env.kind!r}")
            return None
        pong = {
            "version": PROTOCOL_VERSION,
            "name": self.name,
            "role": self.role,
            "state": self.state(),
        }
        return encode("pong", env.tag, 0, pong, max_frame_bytes=self._max_frame)

    def _on_ping(self, sender: str, frames: list[bytes | memoryview]) -> None:
        """A monitor's health check that reached the event loop: answer it there."""
        frames_out = self.answer_ping(sender, frames)
        if frames_out is None:
            return

        async def answer() -> None:
            try:
                await asyncio.wait_for(self._transport.reply(sender, frames_out), self.timeout)
            except (TimeoutError, MPCError) as exc:  # the monitor went away: its problem
                log.warning("%s: could not answer the ping of %s: %s", self.name, sender, exc)

        task = asyncio.create_task(answer())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
