"""Watching parties: health checks (``mpc ping``) and the progress lines of a run.

A deployment may name a *monitor key* (``monitor_key`` in ``[deployment]``, made with
``mpc keygen --out DIR monitor``). Every party admits that key besides its peers' keys, bound
to the identity :data:`~mpc.runtime.transport.MONITOR_ID`, not to a party: its holder can send a
PING and get a PONG (name, role, protocol version, state) from the party's runtime, and nothing
else. A container healthcheck is therefore a real exchange with the party: a CurveZMQ
handshake with the key pinned in the deployment file, the ZAP check, the codec, the runtime's
reader answering. A port that is open but served by something else, a party with the wrong
key, or a party whose event loop is stuck all fail the check.

:func:`ping` is the client. It connects one DEALER (routing id ``~monitor/<random>``), sends
one PING and waits at most ``timeout`` seconds for the PONG.

:class:`ProgressLine` shows progress on standard error: on a terminal as one status line
rewritten in place (a carriage return), elsewhere (a pipe, a log file) as plain lines.
:func:`done_of` words a step of a known total (done/total, elapsed, an estimate of the time
left); :func:`describe_progress` words what a party reports when the total is not known in
advance (a tree's node count): what is done so far and the time elapsed, never a total.
"""

from __future__ import annotations

import re
import secrets
import shutil
import sys
import time
from dataclasses import dataclass
from typing import IO, Any

import zmq
from zmq.utils.monitor import parse_monitor_message

from mpc.errors import AuthenticationError, PeerTimeout, ProtocolError
from mpc.runtime.codec import DEFAULT_MAX_FRAME_BYTES, PROTOCOL_VERSION, decode, encode
from mpc.runtime.keys import KeyPair
from mpc.runtime.transport import MONITOR_ID

__all__ = ["Pong", "ProgressLine", "describe_progress", "done_of", "duration", "ping"]

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


# ------------------------------------------------------------------------------- progress


def duration(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``3 min 05 s``, ``2 h 07 min``: a duration as a person reads it."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    hours, rest = divmod(round(seconds) // 60, 60)
    return f"{hours} h {rest:02d} min"


def done_of(done: int, total: int, elapsed: float, *, count: bool = True) -> str:
    """``3/10, 1.2 s elapsed, about 2.8 s left``: a step of a known total, with the time left
    estimated from the pace so far (none before the first step is done, none at the end).
    Without ``count``, only the times (for a line that already says ``3/10``)."""
    text = f"{done}/{total}, " if count else ""
    text += f"{duration(elapsed)} elapsed"
    if 0 < done < total:
        text += f", about {duration(elapsed / done * (total - done))} left"
    return text


#: what PPID3 sites report (``protocols.ppid3.ppid3``: depth first; ``protocols.ppid3.levels``: a
#: level per exchange), then the seconds since training started and the megabytes sent
_NODE = re.compile(r"node (?P<node>\d+) \(depth (?P<depth>\d+)\)(?P<rest>.*)")
_LEVEL = re.compile(
    r"level (?P<depth>\d+): (?P<nodes>\d+) nodes, (?P<inner>\d+) interior(?P<rest>.*)"
)
_SECONDS = re.compile(r", (?P<s>\d+(?:\.\d+)?) s(?=,|$)")


def describe_progress(text: str) -> str:
    """A party's progress report in words: ``node 125 (depth 4), 12.3 s, 1.2 MB sent`` becomes
    ``125 nodes so far, depth 4, 12 s elapsed, 1.2 MB sent``. A tree's node count is not known
    until it is grown, so no total and no time left are given. Other text is kept as it is."""

    def elapsed(rest: str) -> str:
        return _SECONDS.sub(lambda m: f", {duration(float(m['s']))} elapsed", rest, count=1)

    if m := _NODE.fullmatch(text):
        n = int(m["node"])
        return f"{n} node{'' if n == 1 else 's'} so far, depth {m['depth']}{elapsed(m['rest'])}"
    if m := _LEVEL.fullmatch(text):
        return f"level {m['depth']}: {m['nodes']} nodes ({m['inner']} interior){elapsed(m['rest'])}"
    return text


class ProgressLine:
    """Progress on ``stream`` (default: standard error), each line after ``prefix``.

    ``note(line)`` (or calling the object) writes a line that stays; ``update(line)`` writes a
    status line that the next one replaces: on a terminal (``live``, by default when the
    stream is one) it is rewritten in place with a carriage return, cut to the terminal's
    width; elsewhere it is a plain line like any other. ``close()`` clears a status line left
    on the terminal; call it before writing anything else there."""

    def __init__(
        self, stream: IO[str] | None = None, prefix: str = "", *, live: bool | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.prefix = prefix
        if live is None:
            isatty = getattr(self.stream, "isatty", None)
            live = bool(isatty and isatty())
        self.live = live
        self._status = False

    def __call__(self, line: str) -> None:
        self.note(line)

    def note(self, line: str) -> None:
        self.close()
        self._write(f"{self.prefix}{line}\n")

    def update(self, line: str) -> None:
        if not self.live:
            self.note(line)
            return
        width = shutil.get_terminal_size((100, 24)).columns
        text = f"{self.prefix}{line}"
        if len(text) >= width:
            text = text[: max(width - 4, 1)] + "..."
        self._write(f"\r{text}\x1b[K")
        self._status = True

    def close(self) -> None:
        if self._status:
            self._status = False
            self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
