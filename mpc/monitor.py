"""Health checks: ping a running party over its own protocol (``mpc ping``).

A deployment may name a *monitor key* (``monitor_key`` in ``[deployment]``, made with
``mpc keygen --out DIR monitor``). Every party admits that key besides its peers' keys, bound
to the identity :data:`~mpc.transport.MONITOR_ID`, not to a party: its holder can send a PING
and get a PONG (name, role, protocol version, state) from the party's runtime, and nothing
else. A container healthcheck is therefore a real exchange with the party: a CurveZMQ
handshake with the key pinned in the deployment file, the ZAP check, the codec, the runtime's
reader answering. A port that is open but served by something else, a party with the wrong
key, or a party whose event loop is stuck all fail the check.

:func:`ping` is the client. It connects one DEALER (routing id ``~monitor/<random>``), sends
one PING and waits at most ``timeout`` seconds for the PONG.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import zmq
from zmq.utils.monitor import parse_monitor_message

from mpc.codec import DEFAULT_MAX_FRAME_BYTES, PROTOCOL_VERSION, decode, encode
from mpc.errors import AuthenticationError, PeerTimeout, ProtocolError
from mpc.keys import KeyPair
from mpc.transport import MONITOR_ID

__all__ = ["Pong", "ping"]

#: the step named in a failed ping's error
PING_STEP = "ping"


@dataclass(frozen=True)
class Pong:
    """A party's answer to a ping."""

    name: str
    role: str
    version: int
    state: str
    round_trip_s: float


def ping(
    name: str,
    endpoint: str,
    *,
    server_key: bytes | None,
    monitor: KeyPair | None,
    timeout: float = 5.0,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> Pong:
    """PING party ``name`` at ``endpoint`` and return its PONG.

    ``server_key`` is the party's public key (Z85) and ``monitor`` the monitor's key pair;
    both ``None`` only for an insecure deployment. Raises :class:`PeerTimeout` when no answer
    comes within ``timeout`` seconds, :class:`AuthenticationError` when the party refuses the
    monitor key, :class:`ProtocolError` when the answer is not a PONG from ``name``.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    if (server_key is None) != (monitor is None):
        raise ValueError("give both the party's public key and the monitor key, or neither")
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.routing_id = f"{MONITOR_ID}/{secrets.token_hex(8)}".encode()
    sock.setsockopt(zmq.MAXMSGSIZE, max_frame_bytes)
    if server_key is not None and monitor is not None:
        sock.curve_publickey, sock.curve_secretkey = monitor.public, monitor.secret
        sock.curve_serverkey = server_key
    events = sock.get_monitor_socket(
        zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
    )
    try:
        sock.connect(endpoint)
        tag = f"ping/{secrets.token_hex(4)}"
        started = time.perf_counter()
        sock.send_multipart(encode("ping", tag, 0, {"version": PROTOCOL_VERSION}))
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(events, zmq.POLLIN)
        deadline = started + timeout
        while (left := deadline - time.perf_counter()) > 0:
            ready = dict(poller.poll(int(left * 1000) + 1))
            if events in ready:
                event = parse_monitor_message(events.recv_multipart())["event"]
                what = "authentication" if event == zmq.EVENT_HANDSHAKE_FAILED_AUTH else "handshake"
                raise AuthenticationError(
                    f"ping {name} at {endpoint}: the party refused the monitor key ({what} "
                    "failed); is it the deployment's monitor_key, and is the party's public "
                    "key the one in the deployment file?"
                )
            if sock in ready:
                return _pong(name, sock.recv_multipart(), tag, started, max_frame_bytes)
        raise PeerTimeout(
            f"ping {name} at {endpoint}: no PONG within {timeout:g}s (not running, not "
            "reachable, not answering, or its key differs from the deployment file's)",
            peer=name,
            step=PING_STEP,
        )
    finally:
        sock.disable_monitor()
        events.close(0)
        sock.close(0)
        ctx.term()


def _pong(name: str, frames: list[bytes], tag: str, started: float, limit: int) -> Pong:
    env = decode(frames, max_frame_bytes=limit)
    body: Any = env.body
    if env.kind != "pong" or env.tag != tag or not isinstance(body, dict):
        raise ProtocolError(f"ping {name}: expected a PONG for {tag!r}, got {env.kind!r}")
    if body.get("name") != name:
        raise ProtocolError(f"ping {name}: the PONG came from {body.get('name')!r}")
    return Pong(
        name=str(body["name"]),
        role=str(body.get("role", "")),
        version=int(body.get("version", 0)),
        state=str(body.get("state", "?")),
        round_trip_s=time.perf_counter() - started,
    )
