"""A party's answers to questions about itself, which its runtime gives without its protocol:
a monitor's PING (a container healthcheck, :mod:`mpc.runtime.monitor`) and a peer's PROBE
(what are you waiting for?), and the blame a timed-out party traces with those probes.

:class:`HealthChecks` is part of :class:`~mpc.runtime.party.Party`; it reads the party's
state and never touches its protocol's messages. What it reveals: to a monitor, the party's
name, role, protocol version and state; to a peer, the step it is at and whom it waits for
under which tag (public facts of the run's schedule).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mpc.errors import MPCError, ProtocolError
from mpc.runtime.codec import PROTOCOL_VERSION, decode, encode
from mpc.runtime.metrics import Metrics
from mpc.runtime.transport import Transport

__all__ = ["MAX_MONITOR_MESSAGE_BYTES", "MAX_PINGS_PER_S", "PROBE_TIMEOUT_S", "HealthChecks"]

log = logging.getLogger("mpc.runtime.party")

#: How long a timed-out party waits for each answer while it traces who holds the run up.
PROBE_TIMEOUT_S = 2.0
#: A monitor's message is a PING of a few dozen bytes: anything over this is refused unread.
MAX_MONITOR_MESSAGE_BYTES = 1024
#: At most this many PINGs are answered per second (a token bucket of this depth); the rest
#: are counted and dropped, so a monitor cannot keep a party busy.
MAX_PINGS_PER_S = 20.0


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

    async def _send_raw(self, peer: str, kind: str, tag: str, obj: Any, *, count: bool) -> None:
        raise NotImplementedError  # Party's

    async def _trace_blame(self, peer: str) -> tuple[str, list[str]]:
        """Follow the wait-for chain from ``peer`` to the party that holds the run up.

        A party that times out waiting for X asks X what it is waiting for (PROBE/STATUS,
        answered by X's runtime, not its protocol). If X waits for Y, ask Y, and so on: the
        blame goes to the first party that does not answer (dead, unreachable), is not
        waiting for anyone (busy or stuck), or closes a cycle (the parties disagree about
        the protocol). Without this, equal deadlines would blame whoever is next in line.
        """
        chain: list[str] = []
        visited = {self.name}
        current = peer
        probe_s = min(PROBE_TIMEOUT_S, self.timeout / 4)
        for _ in range(len(self.parties)):
            status = await self._probe(current, probe_s)
            if status is None:
                chain.append(f"{current} does not answer a probe (dead, stuck or unreachable)")
                return current, chain
            waits = [(p, t) for p, t in status["waiting"] if p != current]
            if not waits:
                chain.append(
                    f"{current} is alive and not waiting for anyone "
                    f"(busy or stuck at step {status['step']!r})"
                )
                return current, chain
            nxt, nxt_tag = waits[0]
            chain.append(f"{current} is itself waiting for {nxt} (step {nxt_tag!r})")
            visited.add(current)
            if nxt in visited:
                chain.append(
                    "the wait-for chain is a cycle: the parties disagree about the protocol"
                )
                return current, chain
            current = nxt
        return current, chain

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
        waiting = [[p, t] for (p, t), fut in self._waiters.items() if p != self.name]
        return {"step": self._step, "waiting": waiting}

    def _on_probe(self, sender: str, body: Any) -> None:
        probe_id = body.get("id") if isinstance(body, dict) else None
        if type(probe_id) is not int:
            self.metrics.reject(f"{sender}: a PROBE without an id (int)")
            return
        reply = {"id": probe_id, **self._status()}
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
        fut.set_result({"step": str(body.get("step", "?")), "waiting": pairs})

    def state(self) -> str:
        """``handshake``, ``running``, ``closing`` or ``failed``: what a PONG reports."""
        if self._failure is not None:
            return "failed"
        if self._closing:
            return "closing"
        return "handshake" if not self._hello_event.is_set() else "running"

    def _on_ping(self, sender: str, frames: list[bytes | memoryview]) -> None:
        """A monitor's health check: answer PONG, accept nothing else from it.

        A monitor cannot disturb the party: a message over :data:`MAX_MONITOR_MESSAGE_BYTES`
        is refused unread, at most :data:`MAX_PINGS_PER_S` PINGs a second are answered (the
        rest are counted in ``pings_dropped``), and nothing it sends reaches the protocol."""
        size = sum(len(f) for f in frames)
        if size > MAX_MONITOR_MESSAGE_BYTES:
            self.metrics.reject(f"{sender}: a monitor sent {size} bytes; a PING is small")
            return
        now = asyncio.get_running_loop().time()
        self._ping_tokens = min(
            MAX_PINGS_PER_S, self._ping_tokens + (now - self._ping_stamp) * MAX_PINGS_PER_S
        )
        self._ping_stamp = now
        if self._ping_tokens < 1.0:
            self.pings_dropped += 1
            return
        self._ping_tokens -= 1.0
        try:
            env = decode(frames, max_frame_bytes=self._max_frame)
        except ProtocolError as exc:
            self.metrics.reject(f"{sender}: {exc}")
            return
        if env.kind != "ping":
            self.metrics.reject(f"{sender}: a monitor may only ping, sent {env.kind!r}")
            return
        pong = {
            "version": PROTOCOL_VERSION,
            "name": self.name,
            "role": self.role,
            "state": self.state(),
        }
        frames_out = encode("pong", env.tag, 0, pong, max_frame_bytes=self._max_frame)

        async def answer() -> None:
            try:
                await asyncio.wait_for(self._transport.reply(sender, frames_out), self.timeout)
            except (TimeoutError, MPCError) as exc:  # the monitor went away: its problem
                log.warning("%s: could not answer the ping of %s: %s", self.name, sender, exc)

        task = asyncio.create_task(answer())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
