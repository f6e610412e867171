"""A real party process against a hostile peer that holds a valid key, and against the
monitor key.

The honest party is ``site1`` of a two-party secure sum (or PSI-CA), started as its own
process exactly as a deployment starts it. ``site2`` is played by the test: it holds
site2's real CurveZMQ keys, listens on site2's endpoint and connects to site1, so site1's
transport authenticates it as site2. The scripted peer sends what no honest party sends:
malformed headers, fields of the wrong type, wrong-shaped arrays, replays, floods, a message
back over site1's outgoing link, low-order curve points. Each case ends one of two ways, and
never in a hang: site1 rejects what it got, records it and finishes the protocol with the
peer; or it fails within its deadline with an error naming site2.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
import zmq

from mpc import __version__
from mpc.runtime.codec import MAX_INT_BYTES, Envelope, decode, encode
from mpc.runtime.config import agreement
from mpc.runtime.keys import load_public_key, load_secret_key, write_keypair
from mpc.runtime.transport import MONITOR_ID
from parties.own_party import load_deployment

from ..harness import Parties, plan_deployment

pytestmark = [pytest.mark.processes, pytest.mark.timeout(120)]

#: site1's deadline for every receive: a case that fails must do so within it
TIMEOUT = 8.0


def _packed(header: Any, *frames: bytes) -> list[bytes]:
    return [msgpack.packb(header, use_bin_type=True), *frames]


def _array_ext(dtype: str, shape: list[int], index: int) -> msgpack.ExtType:
    return msgpack.ExtType(3, msgpack.packb([dtype, shape, index]))


#: messages that no honest peer sends; each must be rejected, recorded, and survived
HOSTILE: dict[str, list[bytes]] = {
    "not msgpack": [b"\xc1\xc1"],
    "empty frame": [b""],
    "an unhashable kind": _packed([1, [1], "t", 0, None]),
    "a map as kind": _packed([1, {"k": 1}, "t", 0, None]),
    "an array as version": _packed([_array_ext("<f8", [1], 1), "msg", "t", 0, None], b"\0" * 8),
    "a list as version": _packed([[1], "msg", "t", 0, None]),
    "a list as tag": _packed([1, "msg", ["t"], 0, None]),
    "a negative depth": _packed([1, "msg", "t", -1, None]),
    "an array as depth": _packed([1, "msg", "t", _array_ext("<i8", [1], 1), None], b"\0" * 8),
    "2^32 elements claimed": [b"\x95\x01\xa3msg\xa1t\x00\xdf\xff\xff\xff\xff"],
    "nested 10,000 deep": [b"\x95\x01\xa3msg\xa1t\x00" + b"\x91" * 10_000 + b"\xc0"],
    "a shape that does not fit its frame": _packed(
        [1, "msg", "secure-sum/ring", 1, _array_ext("<i8", [10], 1)], b"\0" * 8
    ),
    "a frame nobody references": _packed([1, "msg", "t", 1, None], b"\0" * 8),
    "a frame index out of range": _packed([1, "msg", "t", 1, _array_ext("<i8", [1], 5)]),
    "an object array": _packed([1, "msg", "t", 1, _array_ext("|O", [1], 1)], b"\0" * 8),
    "an unknown extension": _packed([1, "msg", "t", 1, msgpack.ExtType(9, b"x")]),
    "an integer over the limit": _packed(
        [1, "msg", "t", 1, msgpack.ExtType(1, b"\0" + b"\xff" * (MAX_INT_BYTES + 1))]
    ),
    "an int map key": _packed([1, "msg", "t", 1, {1: 2}]),
    "a HELLO with an array incarnation": _packed(
        [1, "hello", "hello", 0, {"version": 1, "incarnation": _array_ext("<i8", [1], 1)}],
        b"\0" * 8,
    ),
    "a PROBE with a list id": _packed([1, "probe", "probe", 0, {"id": [1]}]),
    "a STATUS with a list id": _packed([1, "status", "status", 0, {"id": [1], "waiting": []}]),
    "a PONG from a peer": _packed([1, "pong", "p", 0, {}]),
}


class ScriptedPeer:
    """Party ``name`` of the deployment ``config``, played by the test against ``target``:
    its real keys, its endpoint, a DEALER to the target and a ROUTER for the target's
    messages (which it answers or not, as the case wants)."""

    def __init__(self, config: Path, name: str, target: str) -> None:
        cfg = load_deployment(config)
        me, other = cfg.party(name), cfg.party(target)
        assert me.secret_key is not None and other.public_key is not None
        keys = load_secret_key(me.secret_key)
        self.name = name
        #: what a true site2 of this deployment says in its HELLO (the handshake compares it)
        self.agreement = agreement(cfg, __version__)
        self.ctx = zmq.Context()
        self.inbox = self.ctx.socket(zmq.ROUTER)
        self.inbox.linger = 0
        self.inbox.curve_server = True
        self.inbox.curve_publickey, self.inbox.curve_secretkey = keys.public, keys.secret
        self.inbox.bind(me.bind or me.endpoint)
        self.out = self.ctx.socket(zmq.DEALER)
        self.out.linger = 0
        self.out.routing_id = f"{name}/{secrets.token_hex(8)}".encode()
        self.out.curve_publickey, self.out.curve_secretkey = keys.public, keys.secret
        self.out.curve_serverkey = load_public_key(other.public_key)
        self.out.connect(other.endpoint)
        self.target_link = b""  # the target's DEALER, as our ROUTER knows it

    def close(self) -> None:
        self.inbox.close(0)
        self.out.close(0)
        self.ctx.term()

    def send(self, frames: list[bytes]) -> None:
        self.out.send_multipart(frames)

    def hello(self) -> None:
        body = {"version": 1, "name": self.name, "role": "site", "incarnation": "scripted",
                "agreement": self.agreement}  # fmt: skip
        self.send(encode("hello", "hello", 0, body))

    def expect(self, tag: str, *, deadline: float = 30.0) -> Envelope:
        """The next message from the target under ``tag`` (others are skipped)."""
        end = time.monotonic() + deadline
        while (left := end - time.monotonic()) > 0:
            if not self.inbox.poll(int(left * 1000) + 1):
                break
            parts = self.inbox.recv_multipart()
            self.target_link = parts[0]
            env = decode(parts[1:])
            if env.tag == tag:
                return env
        raise AssertionError(f"{self.name}: nothing under {tag!r} within {deadline}s")


@contextlib.contextmanager
def against_site2(
    directory: Path, *plan: str, deployment: str = "", greet: bool = True
) -> Iterator[tuple[Parties, ScriptedPeer, Path]]:
    """Plan ``mpc run PLAN`` with two sites (``deployment`` lines added to its
    ``[deployment]`` table), start site1 as a process and play site2 against it; ``greet``:
    exchange HELLOs first. Every process and socket is gone when the block ends."""
    config, roles = plan_deployment(directory, *plan, timeout=TIMEOUT)
    if deployment:
        text = config.read_text().replace("[deployment]\n", f"[deployment]\n{deployment}\n")
        config.write_text(text)
    with Parties(config, roles) as run:
        peer = ScriptedPeer(config, "site2", "site1")
        try:
            run.start("site1")
            if greet:
                peer.hello()
                peer.expect("hello")
            yield run, peer, config
        finally:
            peer.close()


#: a secure sum of site1's 20 and site2's 22 mod 1000
SUM = ("secure-sum", "--parties", "2", "--inputs", "20,22", "--modulus", "1000")


@pytest.fixture
def secure_sum(tmp_path: Path) -> Iterator[tuple[Parties, ScriptedPeer, Path]]:
    """site1 (a process) and the scripted site2 of a secure sum mod 1000, HELLOs exchanged."""
    with against_site2(tmp_path, *SUM) as started:
        yield started


def _finish_sum(
    peer: ScriptedPeer, x: int = 22, m: int = 1000, before_bye: Sequence[Any] = ()
) -> int:
    """Play site2 honestly from here on: add x to the ring value, take the result, send the
    messages ``before_bye`` and leave (site1 ends its run on the goodbye: whatever comes
    after it may never be read)."""
    partial = peer.expect("secure-sum/ring").body
    ring = encode("msg", "secure-sum/ring", 1, (partial + x) % m)
    peer.send(ring)
    result = peer.expect("secure-sum/result").body
    for frames in before_bye:
        peer.send(frames)
    peer.send(encode("bye", "bye", 0, None))
    return int(result)


def _rejected(run: Parties) -> list[str]:
    notes: list[str] = run.report("site1")["metrics"]["rejected_messages"]
    return notes


@pytest.fixture
def lenient_sum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Parties, ScriptedPeer, Path]]:
    """:func:`secure_sum` with site1 as a deployment runs it, not as the other tests do
    (``MPC_STRICT_RECEIPTS``): a message no receive takes is listed in its report, and the
    run goes on."""
    monkeypatch.setenv("MPC_STRICT_RECEIPTS", "0")
    with against_site2(tmp_path, *SUM) as started:
        yield started


def test_malformed_messages_are_rejected_and_the_party_goes_on(
    lenient_sum: tuple[Parties, ScriptedPeer, Path],
) -> None:
    run, peer, _ = lenient_sum
    for frames in HOSTILE.values():
        peer.send(frames)
    replay = encode("msg", "secure-sum/ring", 1, 5)
    # twice a replay of a message already consumed: buffered, never used
    result = _finish_sum(peer, before_bye=[replay, replay])
    assert run.wait(["site1"], deadline=3 * TIMEOUT) == {"site1": 0}, run.log("site1")
    assert result == 42 and run.report("site1")["result"] == 42
    notes = _rejected(run)
    assert len(notes) == len(HOSTILE), notes
    assert all(n.startswith("site2: ") for n in notes), notes
    assert "Traceback" not in run.log("site1")
    # the replays arrived and no receive took them: the report says so
    unclaimed = [r for r in run.report("site1")["received"] if r["kind"] == "undeclared"]
    assert [(r["tag"], r["kind"], r["from"], r["messages"]) for r in unclaimed] == [
        ("secure-sum/ring", "undeclared", "site2", 2)
    ]


def test_a_flood_of_early_messages_fails_the_run_naming_the_peer(tmp_path: Path) -> None:
    """Messages under tags nobody receives pile up in the buffer of early arrivals: past its
    bound (4 frames of the deployment's 64 KiB limit here) the run ends blaming site2."""
    with against_site2(tmp_path, *SUM, deployment="max_frame_bytes = 65536") as (run, peer, _):
        chunk = np.zeros(60_000, dtype=np.uint8)
        started = time.monotonic()
        for i in range(8):
            peer.send([bytes(f) for f in encode("msg", f"flood/{i}", 1, chunk)])
        codes = run.wait(["site1"], deadline=3 * TIMEOUT)
        took = time.monotonic() - started
    log = run.log("site1")
    assert codes == {"site1": 1}, log
    assert "site2 flooded this party" in log and "PeerMisbehaved" in log, log
    assert took < TIMEOUT, f"site1 took {took:.1f}s: it waited for its deadline instead"


def test_a_message_over_the_outgoing_link_fails_the_run_naming_the_peer(
    secure_sum: tuple[Parties, ScriptedPeer, Path],
) -> None:
    """site1 sends on its DEALER and never reads it; a peer that writes back into it anyway
    (a flood there would sit in an unread queue) ends the run, blamed."""
    run, peer, _ = secure_sum
    peer.inbox.send_multipart([peer.target_link, b"x" * 100])
    started = time.monotonic()
    codes = run.wait(["site1"], deadline=3 * TIMEOUT)
    log = run.log("site1")
    assert codes == {"site1": 1}, log
    assert "site2 sent a message" in log and "over the link this party sends on" in log, log
    assert time.monotonic() - started < TIMEOUT


def test_the_monitor_key_cannot_disturb_a_party(tmp_path: Path) -> None:
    """Whoever holds the monitor key (every healthcheck does) sends malformed pings, big
    messages, protocol messages, a flood of pings, and tries to connect under site2's
    routing id: site1 answers pings while it runs, and the sum with site2 still comes out."""
    write_keypair(tmp_path / "keys", "monitor")
    monitor_keys = load_secret_key(tmp_path / "keys" / "monitor.secret")
    monitor_line = 'monitor_key = "keys/monitor.public"'
    ctx = zmq.Context()
    socks: list[zmq.Socket[bytes]] = []
    try:
        with against_site2(tmp_path, *SUM, deployment=monitor_line, greet=False) as started:
            run, peer, config = started
            site1 = load_deployment(config).party("site1")
            assert site1.public_key is not None
            # site2's routing id is site2/<random>: the monitor can only guess the suffix
            guess = f"site2/{secrets.token_hex(8)}".encode()
            for rid in (f"{MONITOR_ID}/x".encode(), b"site2", guess):
                sock = ctx.socket(zmq.DEALER)
                sock.linger = 0
                sock.routing_id = rid
                sock.curve_publickey = monitor_keys.public
                sock.curve_secretkey = monitor_keys.secret
                sock.curve_serverkey = load_public_key(site1.public_key)
                sock.connect(site1.endpoint)
                socks.append(sock)
            monitor, as_site2, guesser = socks
            for frames in HOSTILE.values():
                monitor.send_multipart(frames)
            monitor.send_multipart([b"\x90" * 100_000])
            monitor.send_multipart(encode("msg", "secure-sum/ring", 1, 999))
            hello = {"version": 1, "name": "site2", "role": "site", "incarnation": "m"}
            for sock in (as_site2, guesser):
                sock.send_multipart(encode("hello", "hello", 0, hello))
                sock.send_multipart(encode("msg", "secure-sum/ring", 1, 999))
            for i in range(2000):
                monitor.send_multipart(encode("ping", f"ping/{i}", 0, {"version": 1}))
            peer.hello()
            peer.expect("hello")
            pongs = _ping_until_answered(monitor, "ping/last", deadline=3 * TIMEOUT)
            result = _finish_sum(peer)
            codes = run.wait(["site1"], deadline=3 * TIMEOUT)
    finally:
        for sock in socks:
            sock.close(0)
        ctx.term()
    assert codes == {"site1": 0}, run.log("site1")
    assert result == 42 and run.report("site1")["result"] == 42
    assert any(p.tag == "ping/last" and p.body["state"] == "running" for p in pongs)
    assert 0 < len(pongs) < 2000 // 10, "pings beyond the rate are dropped, not answered"
    report = run.report("site1")
    assert report["metrics"]["pings_dropped"] > 0
    assert all(not n.startswith("site2: ") for n in report["metrics"]["rejected_messages"])
    assert "Traceback" not in run.log("site1")


def _ping_until_answered(sock: zmq.Socket[bytes], tag: str, *, deadline: float) -> list[Envelope]:
    """Collect the PONGs ``sock`` receives, pinging under ``tag`` whenever none comes for
    half a second (the rate limit drops pings while its bucket is empty), until the PONG for
    ``tag`` arrives; fail after ``deadline`` seconds."""
    pongs: list[Envelope] = []
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if not sock.poll(500):
            sock.send_multipart(encode("ping", tag, 0, {"version": 1}))
            continue
        pongs.append(decode(sock.recv_multipart()))
        if pongs[-1].tag == tag:
            return pongs
    raise AssertionError(f"no PONG for {tag} within {deadline}s; {len(pongs)} others")


def test_a_low_order_curve_point_fails_the_run_naming_the_peer_and_the_step(
    tmp_path: Path,
) -> None:
    """PSI-CA between two sites: site2 sends, as its encrypted set, points of order 8 that
    every key maps to the identity. site1 does not crash on X25519's ValueError; it fails
    with an error naming site2 and the hop."""
    psi = ("psi-ca", "--random", "5", "--parties", "2")
    with against_site2(tmp_path, *psi) as (run, peer, _):
        points = np.zeros((5, 32), dtype=np.uint8)
        points[1, 0] = 1  # u = 1 is of order 4: also refused
        peer.send([bytes(f) for f in encode("msg", "psi-ca/hop1", 1, [[points]])])
        codes = run.wait(["site1"], deadline=3 * TIMEOUT)
    log = run.log("site1")
    assert codes == {"site1": 1}, log
    assert "low-order point" in log and "site2" in log and "psi-ca/hop1" in log, log
    assert "Traceback" not in log and "ValueError" not in log, log
    error = json.loads(run.report_path("site1").read_text())["error"]
    assert (error["type"], error["peer"], error["step"]) == (
        "PeerMisbehaved",
        "site2",
        "psi-ca/hop1",
    ), error
