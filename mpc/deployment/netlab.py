"""A shaped link between two hosts on one machine: two Linux network namespaces joined by a
veth pair, with a rate limit and a one-way delay, for measuring a deployment as if its
parties sat on either side of a WAN link (the cdtl experiment's client and CDBS).

At a glance::

    with ShapedLink(rate_mbit=100, delay_ms=5) as link:   # needs root and iproute2
        where = link.placement(a=["client"], b=["cdbs"])
        launch("cdtl", params, parties, timeout=60, placement=where)
        print(link.describe())

Side ``a`` is namespace ``<prefix>-a`` (address ``10.233.N.1``), side ``b`` is
``<prefix>-b`` (``10.233.N.2``); each holds one end of the veth pair (``wan0``) and its own
loopback. The link is shaped in each direction on the sending end:

* where the kernel has the ``netem`` qdisc: ``netem delay D rate R`` on both ends;
* where it has not (some virtual machines' kernels lack it), ``tbf rate R`` on both ends for
  the rate, and the delay from a *delay line*: a process in namespace ``b``
  (``python -m mpc.deployment.netlab delay``) that relays every TCP connection between the two sides
  and hands on each chunk of bytes ``D`` after it arrived, in order. A party of ``b``
  listens on its own loopback behind the delay line; a party of ``a`` is reached through
  it. Every byte still crosses the shaped veth once. Unlike netem, the relay ends each TCP
  connection on its own side, so a sender's TCP window opens without waiting for the
  delayed acknowledgements: bulk transfers pay the delay once, not per window.

:meth:`ShapedLink.describe` says which of the two is in use, with the exact ``tc``
commands. What cannot be made (no root, no ``ip``, namespaces not permitted) is reported by
:meth:`ShapedLink.open` as a reason, so that a caller can skip and say why. Closing the link
kills the processes left in its namespaces (the delay line, parties that outlived their
launcher) and deletes both namespaces, which takes the veth pair with them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from mpc.deployment.launcher import Placement
from mpc.errors import ConfigError

__all__ = ["ShapedLink", "delay_line"]

#: every ``ip`` / ``tc`` command finishes within this many seconds
COMMAND_TIMEOUT_S = 15.0
#: how long the delay line may take to listen on all its ports
READY_TIMEOUT_S = 15.0
#: the first port given to a party (side a, then side b, one each)
FIRST_PORT = 7101
#: the token bucket's depth (bytes sent at line rate after a pause) and how long a packet may
#: wait in its queue: 32 KB is ~2.6 ms at 100 Mbit/s
TBF_BURST = "32kb"
TBF_LATENCY = "50ms"


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
    )


def _check(argv: Sequence[str]) -> None:
    proc = _run(argv)
    if proc.returncode != 0:
        raise ConfigError(f"{' '.join(argv)}: {proc.stderr.strip() or proc.returncode}")


@dataclass
class ShapedLink:
    """Two namespaces joined by a veth pair shaped to ``rate_mbit`` and ``delay_ms`` (one
    way, each direction). ``prefer`` is ``"auto"`` (netem where the kernel has it, else tbf
    and the delay line), ``"netem"`` or ``"delay-line"``."""

    rate_mbit: float = 100.0
    delay_ms: float = 5.0
    prefer: str = "auto"
    prefix: str = field(default_factory=lambda: f"nl{secrets.token_hex(3)}")
    subnet: str = field(default_factory=lambda: f"10.233.{secrets.randbelow(256)}")
    #: "netem" or "delay-line", once open
    method: str = ""
    commands: list[str] = field(default_factory=list)
    _made: list[str] = field(default_factory=list)
    _relay: subprocess.Popen[bytes] | None = None
    _relays: list[tuple[str, str]] = field(default_factory=list)
    _probe: str = ""

    def __post_init__(self) -> None:
        if self.rate_mbit <= 0 or self.delay_ms < 0:
            raise ConfigError(
                f"a shaped link needs a rate > 0 and a delay >= 0, got {self.rate_mbit} "
                f"Mbit/s and {self.delay_ms} ms"
            )
        if self.prefer not in ("auto", "netem", "delay-line"):
            raise ConfigError(f"prefer must be auto, netem or delay-line, got {self.prefer!r}")

    @property
    def a(self) -> str:
        return f"{self.prefix}-a"

    @property
    def b(self) -> str:
        return f"{self.prefix}-b"

    def address(self, side: str) -> str:
        return f"{self.subnet}.1" if side == "a" else f"{self.subnet}.2"

    # -- making and removing it

    def open(self) -> str | None:
        """Make the namespaces and the shaped veth pair; the reason when they cannot be made
        here (then nothing is left behind)."""
        if shutil.which("ip") is None or shutil.which("tc") is None:
            return "iproute2's `ip` and `tc` are not installed"
        if os.geteuid() != 0:
            return "network namespaces need root (ip netns add)"
        made = _run(["ip", "netns", "add", self.a])
        if made.returncode != 0:
            return f"`ip netns add` is not permitted here: {made.stderr.strip()}"
        self._made.append(self.a)
        try:
            _check(["ip", "netns", "add", self.b])
            self._made.append(self.b)
            _check(["ip", "link", "add", "wan0", "netns", self.a, "type", "veth",
                    "peer", "name", "wan0", "netns", self.b])  # fmt: skip
            for side, ns in (("a", self.a), ("b", self.b)):
                _check(["ip", "-n", ns, "addr", "add", f"{self.address(side)}/30", "dev", "wan0"])
                _check(["ip", "-n", ns, "link", "set", "wan0", "up"])
                _check(["ip", "-n", ns, "link", "set", "lo", "up"])
            reason = self._shape()
        except (ConfigError, subprocess.TimeoutExpired) as exc:
            reason = f"the shaped link could not be made: {exc}"
        if reason is not None:
            self.close()
        return reason

    def _shape(self) -> str | None:
        rate = f"{self.rate_mbit:g}mbit"
        delay = f"{self.delay_ms:g}ms"
        if self.prefer in ("auto", "netem"):
            netem = ["qdisc", "add", "dev", "wan0", "root", "netem", "delay", delay, "rate", rate]
            first = _run(["tc", "-n", self.a, *netem])
            if first.returncode == 0:
                _check(["tc", "-n", self.b, *netem])
                self.method = "netem"
                self.commands = [f"tc qdisc add dev wan0 root netem delay {delay} rate {rate}"]
                return None
            if self.prefer == "netem":
                return f"the kernel has no netem qdisc: {first.stderr.strip()}"
        tbf = ["qdisc", "add", "dev", "wan0", "root", "tbf", "rate", rate,
               "burst", TBF_BURST, "latency", TBF_LATENCY]  # fmt: skip
        for ns in (self.a, self.b):
            proc = _run(["tc", "-n", ns, *tbf])
            if proc.returncode != 0:
                return f"the kernel has neither netem nor tbf: {proc.stderr.strip()}"
        self.method = "delay-line"
        self.commands = [f"tc qdisc add dev wan0 root tbf rate {rate} burst {TBF_BURST} "
                         f"latency {TBF_LATENCY}"]  # fmt: skip
        return None

    def close(self) -> None:
        """Stop the delay line and what else runs in the namespaces, and delete them."""
        if self._relay is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._relay.pid, signal.SIGKILL)
            self._relay.wait()
            self._relay = None
        for ns in self._made:
            for pid in _run(["ip", "netns", "pids", ns]).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
        for ns in reversed(self._made):
            _run(["ip", "netns", "del", ns])  # takes its end of the veth pair with it
        self._made.clear()

    def __enter__(self) -> ShapedLink:
        reason = self.open()
        if reason is not None:
            raise ConfigError(reason)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- where the parties go

    def placement(self, a: Sequence[str], b: Sequence[str]) -> dict[str, Placement]:
        """Places for the parties named in ``a`` (side a) and ``b`` (side b): each party
        runs in its side's namespace and every byte between the sides crosses the link.
        With the delay line, it is started here for these parties (call once)."""
        if not self._made:
            raise ConfigError("open() the link before placing parties on it")
        if self._relay is not None:
            raise ConfigError("this link's parties are placed already; open another link")
        out: dict[str, Placement] = {}
        port = FIRST_PORT
        # the probe's echo server (round_trip_ms) listens on side a, one port below the parties
        probe = f"{self.address('a')}:{FIRST_PORT - 1}"
        self._probe = probe
        relays: list[tuple[str, str]] = []
        if self.method != "netem":
            self._probe = f"{self.address('b')}:{FIRST_PORT - 1}"
            relays.append((self._probe, probe))
        for side, names in (("a", a), ("b", b)):
            ns = self.a if side == "a" else self.b
            prefix = ("ip", "netns", "exec", ns)
            for name in names:
                here = f"{self.address(side)}:{port}"
                if self.method == "netem":
                    out[name] = Placement(f"tcp://{here}", "", prefix)
                elif side == "a":  # reached through the delay line on b's address
                    front = f"{self.address('b')}:{port}"
                    relays.append((front, here))
                    out[name] = Placement(f"tcp://{front}", f"tcp://{here}", prefix)
                else:  # listens on b's loopback, behind the delay line
                    back = f"127.0.0.1:{port}"
                    relays.append((here, back))
                    out[name] = Placement(f"tcp://{here}", f"tcp://{back}", prefix)
                port += 1
        if relays:
            self._start_delay_line(relays)
        return out

    def _start_delay_line(self, relays: list[tuple[str, str]]) -> None:
        argv = ["ip", "netns", "exec", self.b, sys.executable, "-m", "mpc.deployment.netlab",
                "delay", "--delay-ms", f"{self.delay_ms:g}"]  # fmt: skip
        for listen, target in relays:
            argv += ["--relay", f"{listen}={target}"]
        self._relay = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        self._relays = relays
        out = self._relay.stdout
        ready, _, _ = select.select([out], [], [], READY_TIMEOUT_S) if out else ([], [], [])
        line = out.readline().decode(errors="replace").strip() if out and ready else ""
        if line != "ready":
            self._relay.kill()
            err = self._relay.communicate(timeout=COMMAND_TIMEOUT_S)[1].decode(errors="replace")
            self._relay = None
            raise ConfigError(
                f"the delay line did not start within {READY_TIMEOUT_S:g} s: "
                f"{line or err.strip() or 'no output'}"
            )

    def round_trip_ms(self, count: int = 50) -> list[float]:
        """``count`` round trips of 64 bytes over TCP from side b to side a through the
        link (after :meth:`placement`), in ms: what a request and its reply pay at least."""
        if not self._probe:
            raise ConfigError("place the parties (placement()) before probing the link")
        echo_at = f"{self.address('a')}:{FIRST_PORT - 1}"
        echo = subprocess.Popen(
            ["ip", "netns", "exec", self.a, sys.executable, "-m", "mpc.deployment.netlab", "echo",
             "--listen", echo_at],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        try:
            out = echo.stdout
            ready, _, _ = select.select([out], [], [], READY_TIMEOUT_S) if out else ([], [], [])
            if not (out and ready and out.readline().strip() == b"ready"):
                raise ConfigError("the link's echo server did not start")
            ping = _run(["ip", "netns", "exec", self.b, sys.executable, "-m",
                         "mpc.deployment.netlab", "ping", "--to", self._probe, "--count",
                         str(count)])  # fmt: skip
            if ping.returncode != 0:
                raise ConfigError(f"probing the link failed: {ping.stderr.strip()}")
            return [float(x) for x in ping.stdout.split()]
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(echo.pid, signal.SIGKILL)
            echo.wait()

    def describe(self) -> str:
        """The link in one line: namespaces, rate, delay and the exact shaping."""
        what = (
            f"veth pair between network namespaces {self.a} and {self.b}, "
            f"{self.rate_mbit:g} Mbit/s and {self.delay_ms:g} ms one way in each direction "
            f"(round trip {2 * self.delay_ms:g} ms): "
        )
        if self.method == "netem":
            return what + f"`{self.commands[0]}` on both ends"
        return what + (
            f"`{self.commands[0]}` on both ends (the kernel has no netem qdisc), and a delay "
            f"line in {self.b} (`python -m mpc.deployment.netlab delay --delay-ms "
            f"{self.delay_ms:g}`) that hands on each direction's bytes that much later"
        )


# ----------------------------------------------------------------------------- the delay line


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"expected HOST:PORT, got {address!r}")
    return host, int(port)


async def _forward(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float
) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay_s`` after it arrived, in order."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

    async def feed() -> None:
        try:
            while data := await reader.read(1 << 16):
                queue.put_nowait((loop.time() + delay_s, data))
        except ConnectionError:
            pass
        finally:
            queue.put_nowait(None)

    feeding = asyncio.ensure_future(feed())
    try:
        while (item := await queue.get()) is not None:
            due, data = item
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()
    except ConnectionError:
        pass
    finally:
        feeding.cancel()


async def delay_line(relays: Sequence[tuple[str, str]], delay_s: float) -> None:
    """Listen on every ``listen`` of ``relays`` (``(listen, target)`` as ``HOST:PORT``) and
    relay each connection to its ``target``, both directions ``delay_s`` late. Prints
    ``ready`` once it listens everywhere; runs until killed."""

    def handler(
        target: str,
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            host, port = _split(target)
            try:
                up_reader, up_writer = await asyncio.open_connection(host, port)
            except OSError:
                writer.close()
                return
            await asyncio.gather(
                _forward(reader, up_writer, delay_s), _forward(up_reader, writer, delay_s)
            )
            for w in (writer, up_writer):
                w.close()

        return relay

    servers = []
    for listen, target in relays:
        host, port = _split(listen)
        servers.append(await asyncio.start_server(handler(target), host, port))
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def _echo(listen: str) -> None:
    """Answer every byte of one connection with itself (the probe's far end)."""
    host, port = _split(listen)
    with socket.create_server((host, port)) as server:
        print("ready", flush=True)
        conn, _ = server.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while data := conn.recv(1 << 16):
                conn.sendall(data)


def _ping(to: str, count: int) -> list[float]:
    """``count`` round trips of 64 bytes to an echo server, in ms."""
    host, port = _split(to)
    times = []
    with socket.create_connection((host, port), timeout=COMMAND_TIMEOUT_S) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            started = time.perf_counter()
            conn.sendall(b"x" * 64)
            got = 0
            while got < 64:
                chunk = conn.recv(64 - got)
                if not chunk:
                    raise ConnectionError("the echo server closed the connection")
                got += len(chunk)
            times.append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m mpc.deployment.netlab", description="The delay line of a shaped link."
    )
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("delay", help="relay TCP connections, each direction DELAY ms late")
    d.add_argument("--delay-ms", type=float, required=True, help="one-way delay in ms")
    d.add_argument(
        "--relay",
        action="append",
        required=True,
        metavar="LISTEN=TARGET",
        help="HOST:PORT to listen on = HOST:PORT to relay to (repeatable)",
    )
    e = sub.add_parser("echo", help="echo one TCP connection (the probe's far end)")
    e.add_argument("--listen", required=True, metavar="HOST:PORT")
    g = sub.add_parser("ping", help="round trips to an echo server, in ms, one per line")
    g.add_argument("--to", required=True, metavar="HOST:PORT")
    g.add_argument("--count", type=int, default=50)
    args = p.parse_args(argv)
    if args.command == "echo":
        _echo(args.listen)
        return 0
    if args.command == "ping":
        print("\n".join(f"{t:.4f}" for t in _ping(args.to, args.count)))
        return 0
    relays = []
    for item in args.relay:
        listen, sep, target = item.partition("=")
        if not sep:
            p.error(f"--relay needs LISTEN=TARGET, got {item!r}")
        relays.append((listen, target))
    asyncio.run(delay_line(relays, args.delay_ms / 1000.0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
