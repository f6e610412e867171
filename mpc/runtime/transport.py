"""Transports move frames between named parties; the :class:`~mpc.runtime.party.Party` does the
rest.

Two implementations share one interface:

* :class:`ZmqTransport` — the shipped path. Each party binds one ROUTER and connects one
  DEALER per peer (its routing id is the party's name). With CurveZMQ (the default) every
  connection is encrypted, the server key of each peer is pinned from the deployment file,
  and a ZAP handler admits only the deployment's public keys; the sender of every received
  message is the party name bound to the authenticated key, never a value from the payload.
  The ROUTER and the ZAP handler belong to a thread of their own
  (:mod:`mpc.runtime.receiver`), which answers PINGs and PROBEs while the event loop
  computes, over a second DEALER per peer that carries nothing but those answers.
* A *monitor* (a health check, :mod:`mpc.runtime.monitor`) may connect to a party's ROUTER with
  the deployment's monitor key (``monitor_key``). It is not a peer: its routing id starts
  with :data:`MONITOR_ID`, the runtime answers only its ``ping`` (through :meth:`reply`),
  and it can neither send protocol messages nor receive any.
* Routing ids are ``NAME/RANDOM``: a fresh random suffix per DEALER, so that nobody who
  does not know it (a monitor, say) can connect under a peer's routing id and take over
  its connection (the ROUTER hands an id over to the newest connection, which a restarted
  peer needs). The sender of a message is the authenticated name, never the routing id.
* Nothing is ever sent back over a DEALER (peers answer through their own DEALER), so a
  DEALER admits only tiny messages (:data:`DEALER_MAX_MESSAGE_BYTES`) and a peer that sends
  one anyway fails the run as :class:`~mpc.errors.PeerMisbehaved`: a peer cannot fill an
  unread queue.
* :class:`InMemoryNetwork` — all parties in one event loop, for fast protocol tests and
  debugging. The same codec and :class:`~mpc.runtime.party.Party` run on top of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import zmq
import zmq.asyncio
from zmq.utils import z85
from zmq.utils.monitor import parse_monitor_message

from mpc.errors import AuthenticationError, ConfigError, PeerMisbehaved, ProtocolError
from mpc.runtime.receiver import Answers, Receiver

__all__ = [
    "MONITOR_ID",
    "InMemoryNetwork",
    "PeerAddress",
    "Transport",
    "ZmqTransport",
    "is_monitor",
]

log = logging.getLogger("mpc.runtime.transport")

Frames = Sequence[bytes | memoryview]

#: ZMTP heartbeats: a silent TCP peer is declared gone after HEARTBEAT_TIMEOUT_MS.
HEARTBEAT_IVL_MS = 1000
HEARTBEAT_TIMEOUT_MS = 5000
#: A lost connection that is not re-established within this many seconds (at most half
#: the receive deadline) means the peer is gone; a brief network blip is tolerated.
RECONNECT_GRACE_S = 2.0
#: How often a peer's host name that does not resolve yet is tried again
#: (:meth:`ZmqTransport._connect`).
RESOLVE_RETRY_S = 0.5
ZAP_DOMAIN = b"mpc"
_ZAP_ENDPOINT = "inproc://zeromq.zap.01"
#: The identity bound to the monitor key, and the prefix of a monitor's routing ids
#: (``~monitor/<random>``); ``~`` cannot start a party name, so a monitor is never a peer.
MONITOR_ID = "~monitor"
#: The largest message a DEALER accepts (none is ever sent to one; libzmq drops the
#: connection of a peer that sends more) and how many it queues.
DEALER_MAX_MESSAGE_BYTES = 256
DEALER_RCVHWM = 4
#: Refused connections (unknown keys) described in a report; the rest are only counted.
MAX_REFUSED_NOTES = 20
#: A refused connection is logged at most once per this many seconds (with a count).
REFUSED_LOG_INTERVAL_S = 10.0


def _connect_dealer(dealer: Any, peer: str, endpoint: str) -> None:
    dealer.connect(endpoint)


def is_monitor(sender: str) -> bool:
    """Whether ``sender`` (as :meth:`Transport.recv` returns it) is a monitor, not a peer."""
    return sender.startswith(MONITOR_ID + "/")


class Transport(ABC):
    """Moves whole messages (lists of frames) between named parties."""

    name: str
    _on_failure: Callable[[BaseException], None] | None = None
    _on_peer_lost: Callable[[str, str], None] | None = None
    _answers: Answers | None = None

    @abstractmethod
    async def start(self) -> None:
        """Bind, connect and start background tasks."""

    @abstractmethod
    async def send(self, peer: str, frames: Frames) -> None:
        """Queue one message for ``peer``."""

    @abstractmethod
    async def recv(self) -> tuple[str, list[bytes | memoryview]]:
        """Wait for the next message; return (authenticated sender, frames)."""

    @abstractmethod
    async def close(self, linger_s: float = 0.0) -> None:
        """Release sockets, waiting up to ``linger_s`` for queued messages to leave."""

    def describe_peer(self, peer: str) -> str:
        """What the transport knows about its link to ``peer`` (for error messages)."""
        return ""

    async def reply(self, sender: str, frames: Frames) -> None:
        """Answer ``sender``, a monitor connected to this party (not a peer), over the
        connection it came in on."""
        raise ProtocolError(f"{self.name}: this transport cannot answer a monitor ({sender})")

    def refused_connections(self) -> list[str]:
        """One line per connection the transport refused (e.g. an unknown CurveZMQ key), for
        the first :data:`MAX_REFUSED_NOTES` of them."""
        return []

    def refused_total(self) -> int:
        """How many connections the transport refused in all."""
        return 0

    def set_failure_handler(self, handler: Callable[[BaseException], None]) -> None:
        """Call ``handler`` if a background task of the transport dies."""
        self._on_failure = handler

    def set_peer_lost_handler(self, handler: Callable[[str, str], None]) -> None:
        """Call ``handler(peer, detail)`` when the connection to ``peer`` is lost and does
        not come back within the reconnect grace period (a dead process, a cut link)."""
        self._on_peer_lost = handler

    def set_answers(self, answers: Answers) -> None:
        """The runtime's answers to PINGs and PROBEs. A transport that receives on a thread
        of its own (:class:`ZmqTransport`) gives them there, so that a party answers while
        its event loop computes; the others hand PINGs and PROBEs to the event loop."""
        self._answers = answers

    def _watch(self, task: asyncio.Task[None]) -> asyncio.Task[None]:
        def done(t: asyncio.Task[None]) -> None:
            if t.cancelled() or t.exception() is None:
                return
            exc = t.exception()
            log.error("%s: transport task %s failed: %r", self.name, t.get_name(), exc)
            handler = self._on_failure
            if handler is not None and exc is not None:
                handler(exc)

        task.add_done_callback(done)
        return task


# --------------------------------------------------------------------------- in memory


class InMemoryNetwork:
    """A set of in-process transports that deliver to each other's queues."""

    def __init__(self) -> None:
        self._queues: dict[str, asyncio.Queue[tuple[str, list[bytes | memoryview]]]] = {}
        #: callables ``tap(sender, receiver, frames)`` that see every message (tests use
        #: them to inspect exactly what a party receives on the wire)
        self.taps: list[Callable[[str, str, list[bytes]], None]] = []

    def transport(self, name: str) -> InMemoryTransport:
        self._queues[name] = asyncio.Queue()
        return InMemoryTransport(name, self)

    def deliver(self, sender: str, peer: str, frames: Frames) -> None:
        queue = self._queues.get(peer)
        if queue is None:
            raise ProtocolError(f"{sender}: no party named {peer!r} on this network")
        copied = [bytes(f) for f in frames]
        for tap in self.taps:
            tap(sender, peer, copied)
        queue.put_nowait((sender, list(copied)))


class InMemoryTransport(Transport):
    def __init__(self, name: str, network: InMemoryNetwork) -> None:
        self.name = name
        self._network = network
        self._closed = False

    async def start(self) -> None:
        return None

    async def send(self, peer: str, frames: Frames) -> None:
        if not self._closed:
            self._network.deliver(self.name, peer, frames)

    async def recv(self) -> tuple[str, list[bytes | memoryview]]:
        return await self._network._queues[self.name].get()

    async def close(self, linger_s: float = 0.0) -> None:
        self._closed = True


# --------------------------------------------------------------------------- ZeroMQ


@dataclass(frozen=True)
class PeerAddress:
    """Where a peer listens and (with CURVE) its pinned public key."""

    endpoint: str
    public_key: bytes | None


@dataclass
class _LinkState:
    events: list[str]
    connected: bool = False
    auth_failures: int = 0
    lost_timer: asyncio.TimerHandle | None = None


class ZmqTransport(Transport):
    """ROUTER in, one DEALER per peer out; CurveZMQ + ZAP unless ``keypair`` is None. The
    ROUTER and the ZAP handler belong to the receiving thread
    (:class:`~mpc.runtime.receiver.Receiver`), which answers PINGs and PROBEs itself, over a
    second DEALER per peer that only ever carries those answers.

    ``keypair`` is ``(public_z85, secret_z85)``; pass ``None`` only for an explicitly
    insecure deployment (plaintext, unauthenticated: the sender is the DEALER routing id).
    ``monitor_key`` (Z85) is admitted too, as a monitor that may only ping.
    """

    def __init__(
        self,
        name: str,
        bind: str,
        peers: Mapping[str, PeerAddress],
        *,
        keypair: tuple[bytes, bytes] | None,
        max_frame_bytes: int,
        reconnect_grace_s: float = RECONNECT_GRACE_S,
        monitor_key: bytes | None = None,
    ) -> None:
        self.name = name
        self._grace = reconnect_grace_s
        self._bind = bind
        self._peers = dict(peers)
        self._keypair = keypair
        self._max_frame = max_frame_bytes
        self._ctx = zmq.asyncio.Context()
        # sockets of the receiving thread: synchronous ones, on the same libzmq context (the
        # ZAP handler must share the ROUTER's)
        self._sync: zmq.Context[Any] = zmq.Context.shadow(self._ctx.underlying)
        self._receiver: Receiver | None = None
        self._dealers: dict[str, zmq.asyncio.Socket] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._links = {p: _LinkState(events=[]) for p in self._peers}
        self._known_keys: dict[bytes, str] = {}
        self.refused: list[str] = []
        self.refused_count = 0
        self._refused_logged_at = -REFUSED_LOG_INTERVAL_S
        self._refused_unlogged = 0
        if keypair is not None:
            for peer, addr in self._peers.items():
                if addr.public_key is None:
                    raise AuthenticationError(f"{name}: no public key configured for peer {peer!r}")
                self._known_keys[addr.public_key] = peer
            if monitor_key is not None:
                if monitor_key in self._known_keys or monitor_key == keypair[0]:
                    raise AuthenticationError(
                        f"{name}: the monitor key is also a party's key; make one with "
                        "`mpc keygen --out DIR monitor`"
                    )
                self._known_keys[monitor_key] = MONITOR_ID

    @property
    def secure(self) -> bool:
        return self._keypair is not None

    def refused_connections(self) -> list[str]:
        return list(self.refused)

    def refused_total(self) -> int:
        return self.refused_count

    def _refuse(self, note: str) -> None:
        """Record a refused connection: counted always, described for the first
        :data:`MAX_REFUSED_NOTES`, logged at most once per :data:`REFUSED_LOG_INTERVAL_S`."""
        self.refused_count += 1
        if len(self.refused) < MAX_REFUSED_NOTES:
            self.refused.append(note)
        now = time.monotonic()
        if now - self._refused_logged_at < REFUSED_LOG_INTERVAL_S:
            self._refused_unlogged += 1
            return
        more = (
            f" ({self._refused_unlogged} more refused since the last such line)"
            if self._refused_unlogged
            else ""
        )
        log.warning("%s: %s%s", self.name, note, more)
        self._refused_logged_at = now
        self._refused_unlogged = 0

    async def start(self) -> None:
        ctx, sync = self._ctx, self._sync
        zap = None
        if self._keypair is not None:
            zap = sync.socket(zmq.REP)
            zap.linger = 0
            zap.bind(_ZAP_ENDPOINT)
        router = sync.socket(zmq.ROUTER)
        router.linger = 0
        # hard cap enforced by libzmq before any allocation: a peer sending a bigger frame is
        # disconnected; the codec re-checks every frame against the same limit.
        router.setsockopt(zmq.MAXMSGSIZE, self._max_frame)
        router.setsockopt(zmq.ROUTER_HANDOVER, 1)
        if self._keypair is not None:
            router.curve_server = True
            router.curve_publickey, router.curve_secretkey = self._keypair
            router.zap_domain = ZAP_DOMAIN
        try:
            router.bind(self._bind)
        except zmq.ZMQError as exc:
            router.close(0)
            if zap is not None:
                zap.close(0)
            raise ConfigError(
                f"{self.name}: cannot bind {self._bind}: {exc}; is another process using it?"
            ) from exc
        answering = {peer: self._dealer(sync, addr) for peer, addr in self._peers.items()}
        self._receiver = Receiver(
            self, sync, router, zap, answering, max_frame_bytes=self._max_frame
        )
        self._receiver.answers = self._answers
        self._receiver.start(self._receiver_failed)
        for peer, addr in self._peers.items():
            self._connect(peer, addr.endpoint, self._receiver.connect)
            dealer = self._dealer(ctx, addr)
            monitor = dealer.get_monitor_socket(
                zmq.EVENT_HANDSHAKE_SUCCEEDED
                | zmq.EVENT_DISCONNECTED
                | zmq.EVENT_HANDSHAKE_FAILED_AUTH
                | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
            )
            self._tasks.append(
                self._watch(
                    asyncio.create_task(self._monitor_loop(peer, monitor), name=f"monitor-{peer}")
                )
            )
            self._connect(peer, addr.endpoint, partial(_connect_dealer, dealer))
            self._dealers[peer] = dealer
            self._tasks.append(
                self._watch(asyncio.create_task(self._guard(peer, dealer), name=f"guard-{peer}"))
            )

    def _dealer(self, ctx: zmq.Context[Any], addr: PeerAddress) -> Any:
        """A DEALER to a peer under this party's key, not yet connected: nothing is ever
        received on it (it admits only tiny messages, and queues a few)."""
        dealer = ctx.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.routing_id = f"{self.name}/{secrets.token_hex(8)}".encode()
        dealer.setsockopt(zmq.MAXMSGSIZE, DEALER_MAX_MESSAGE_BYTES)
        dealer.setsockopt(zmq.RCVHWM, DEALER_RCVHWM)
        dealer.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_IVL_MS)
        dealer.setsockopt(zmq.HEARTBEAT_TIMEOUT, HEARTBEAT_TIMEOUT_MS)
        dealer.setsockopt(zmq.HEARTBEAT_TTL, HEARTBEAT_TIMEOUT_MS)
        dealer.setsockopt(zmq.RECONNECT_IVL, 100)
        dealer.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        if self._keypair is not None:
            dealer.curve_publickey, dealer.curve_secretkey = self._keypair
            dealer.curve_serverkey = addr.public_key
        return dealer

    def _receiver_failed(self, exc: BaseException) -> None:
        handler = self._on_failure
        if handler is not None:
            handler(exc)

    def _connect(self, peer: str, endpoint: str, connect: Callable[[str, str], None]) -> None:
        """Call ``connect(peer, endpoint)`` once the endpoint's host name resolves.

        libzmq resolves a host name in its I/O thread, which also runs this party's listening
        socket: a name that does not resolve yet (a peer's container not created yet, its DNS
        record not published) can hold that thread for a resolver's whole timeout, 10 s and
        more, in which no connection is accepted (a monitor's PING goes unanswered). So the
        name is resolved here first, in a thread of its own, retried until it resolves; the
        socket then connects by the name (libzmq resolves it again on every reconnect)."""
        host = endpoint.split("//", 1)[1].rsplit(":", 1)[0].strip("[]")
        try:
            ipaddress.ip_address(host)
            literal = True
        except ValueError:
            literal = host in ("*", "localhost")
        if literal:
            connect(peer, endpoint)
            return

        async def resolve_then_connect() -> None:
            loop = asyncio.get_running_loop()
            link = self._links[peer]
            while True:
                try:
                    await loop.getaddrinfo(host, None)
                    break
                except OSError:
                    note = f"{time.strftime('%H:%M:%S')} {host} does not resolve yet"
                    if not link.events or not link.events[-1].endswith("does not resolve yet"):
                        link.events.append(note)
                    await asyncio.sleep(RESOLVE_RETRY_S)
            connect(peer, endpoint)

        self._tasks.append(
            self._watch(asyncio.create_task(resolve_then_connect(), name=f"resolve-{peer}"))
        )

    async def _guard(self, peer: str, dealer: zmq.asyncio.Socket) -> None:
        """Nothing is ever sent back over a DEALER: a message there is a peer misbehaving."""
        try:
            parts = await dealer.recv_multipart(copy=False)
        except zmq.ZMQError:
            return
        raise PeerMisbehaved(
            f"{self.name}: {peer} sent a message ({sum(len(p) for p in parts)} bytes) over "
            "the link this party sends on; no honest party does",
            peer=peer,
            step="transport",
        )

    def zap_reply(self, request: list[bytes]) -> list[bytes] | None:
        """RFC 27 ZAP: the reply to a request (None: not a request), admitting a CURVE client
        only if its key is in the deployment. Called by the receiving thread."""
        if len(request) < 6:
            return None
        version, request_id, _domain, address, _identity, mechanism = request[:6]
        credentials = request[6:]
        user = b""
        if version != b"1.0":
            status, text = b"400", b"unsupported ZAP version"
        elif mechanism != b"CURVE" or len(credentials) != 1:
            status, text = b"400", b"CURVE required"
        else:
            key = z85.encode(credentials[0])
            peer = self._known_keys.get(key)
            if peer is None:
                status, text = b"400", b"unknown public key"
                source = address.decode(errors="replace")
                note = f"refused a connection from {source} with unknown key {key.decode()}"
                self._refuse(note)
            else:
                status, text, user = b"200", b"OK", peer.encode()
        return [b"1.0", request_id, status, text, user, b""]

    async def _monitor_loop(self, peer: str, monitor: zmq.asyncio.Socket) -> None:
        link = self._links[peer]
        while True:
            try:
                msg = await monitor.recv_multipart()
            except zmq.ZMQError:
                return
            event = parse_monitor_message(msg)["event"]
            stamp = time.strftime("%H:%M:%S")
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                link.connected = True
                link.events.append(f"{stamp} connected")
                if link.lost_timer is not None:
                    link.lost_timer.cancel()
                    link.lost_timer = None
            elif event == zmq.EVENT_DISCONNECTED:
                if link.connected:
                    link.events.append(f"{stamp} connection lost")
                    if link.lost_timer is None:
                        link.lost_timer = asyncio.get_running_loop().call_later(
                            self._grace, self._peer_gone, peer
                        )
                link.connected = False
            elif event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                link.auth_failures += 1
                if link.auth_failures == 1:
                    link.events.append(
                        f"{stamp} {peer} refused our key (CURVE authentication failed)"
                    )
                    log.error("%s: %s refused our CurveZMQ key", self.name, peer)
            else:
                link.events.append(f"{stamp} handshake with {peer} failed")
            del link.events[:-5]

    def _peer_gone(self, peer: str) -> None:
        link = self._links[peer]
        link.lost_timer = None
        if link.connected:
            return
        handler = self._on_peer_lost
        if handler is not None:
            handler(
                peer,
                f"connection to {peer} lost and not re-established within "
                f"{self._grace:g}s ({'; '.join(link.events)})",
            )

    def describe_peer(self, peer: str) -> str:
        link = self._links.get(peer)
        if link is None:
            return ""
        state = "connected" if link.connected else "not connected"
        parts = [f"link to {peer}: {state}"]
        if link.events:
            parts.append("events: " + "; ".join(link.events))
        if self.refused_count:
            parts.append(f"{self.refused_count} connection(s) with unknown keys refused")
        return ", ".join(parts)

    async def send(self, peer: str, frames: Frames) -> None:
        dealer = self._dealers.get(peer)
        if dealer is None:
            raise ProtocolError(
                f"{self.name}: no peer named {peer!r}; peers: {sorted(self._dealers)}"
            )
        await dealer.send_multipart(frames, copy=False)

    async def recv(self) -> tuple[str, list[bytes | memoryview]]:
        assert self._receiver is not None, "start() not called"  # internal invariant
        return await self._receiver.recv()

    def monitor_sender(self, sender: str) -> bool:
        return is_monitor(sender)

    def sender_of(self, routing_id: str, frames: list[zmq.Frame]) -> str | None:
        """Who sent a message that came in under ``routing_id``: the party name bound to its
        authenticated key (the routing id must be ``NAME/...`` of that name), a monitor
        (returned with its routing id, to be answered through :meth:`reply`), or ``None``
        (dropped, logged)."""
        name = routing_id.split("/", 1)[0]
        if self._keypair is None:  # insecure: nothing is authenticated, the id is believed
            user: str | None = MONITOR_ID if is_monitor(routing_id) else name
        else:
            got = frames[0].get("User-Id") if frames else None
            user = got if isinstance(got, str) else None
        if is_monitor(routing_id):
            if user == MONITOR_ID:
                return routing_id
        elif user is not None and user == name and name in self._peers:
            return name
        log.warning(
            "%s: dropped a message whose routing id %r does not match its sender "
            "(authenticated as %r)",
            self.name,
            routing_id[:80],
            user,
        )
        return None

    async def reply(self, sender: str, frames: Frames) -> None:
        if self._receiver is None or not is_monitor(sender):
            raise ProtocolError(f"{self.name}: can only reply to a connected monitor, not {sender}")
        self._receiver.reply(sender, frames)

    async def close(self, linger_s: float = 0.0) -> None:
        self._on_peer_lost = None
        for link in self._links.values():
            if link.lost_timer is not None:
                link.lost_timer.cancel()
        for task in self._tasks:
            task.cancel()
        # failures were reported by _watch when they happened; collect, do not re-raise
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._receiver is not None:
            self._receiver.stop()  # the thread closes the ROUTER and its own DEALERs
        linger_ms = int(linger_s * 1000)
        for dealer in self._dealers.values():
            with contextlib.suppress(zmq.ZMQError):
                dealer.disable_monitor()
            dealer.close(linger=linger_ms)
        self._ctx.destroy(linger=linger_ms)
