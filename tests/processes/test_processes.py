"""Real processes over TCP with CurveZMQ: the launcher, refused keys, killed parties."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pstats
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq
import zmq.asyncio

from mpc.deployment.launcher import PartySpec, write_deployment
from mpc.runtime.codec import encode
from mpc.runtime.keys import generate_keypair, load_public_key, write_keypair
from mpc.runtime.party import Party
from mpc.runtime.transport import PeerAddress, ZmqTransport
from mpc.runtime.view import public as _public
from parties.own_party import load_deployment

from ..conftest import ROOT, processes_mentioning, run_mpc, run_mpc_json

#: the receipt of this test's own messages
ANY = _public("test/message", "a message of this test")

pytestmark = [pytest.mark.processes, pytest.mark.timeout(120)]


def test_secure_sum_across_five_processes() -> None:
    code, doc = run_mpc_json("run", "secure-sum", "--parties", "5", "--inputs", "3,1,4,1,5")
    assert code == 0, doc
    assert doc["ok"] is True and doc["result"] == 14 and doc["system"] == "secure-sum"
    assert sorted(doc["parties"]) == [f"site{i}" for i in range(1, 6)]
    for name, party in doc["parties"].items():
        assert party["role"] == "site" and party["exit_code"] == 0
        # each party learned the sum and nothing else
        assert party["ledger"] == [
            {"label": "secure-sum/result", "value": 14, "step": "secure-sum"}
        ], name
        metrics = party["metrics"]
        assert metrics["bytes_sent"] > 0 and metrics["messages_received"] >= 1
        assert metrics["rounds"] == 6  # the ring of 5, then the announcement
        assert "secure-sum" in metrics["phases_s"]


@pytest.mark.parametrize(("flags", "expected"), [("0,0,0", True), ("0,1,0", False), ("1,1", False)])
def test_is_r_empty_across_processes(flags: str, expected: bool) -> None:
    code, doc = run_mpc_json("run", "is-r-empty", "--flags", flags)
    assert code == 0, doc
    assert doc["ok"] is True and doc["result"] is expected
    for party in doc["parties"].values():
        assert [e["label"] for e in party["ledger"]] == ["is-r-empty/result"]
    first, last = doc["parties"]["site1"], list(doc["parties"].values())[-1]
    assert first["metrics"]["crypto"] == {"modexp": 2}
    assert last["metrics"]["crypto"] == {"modexp": 2}


def test_human_summary_and_insecure_mode() -> None:
    code, out, err = run_mpc("run", "secure-sum", "--parties", "3", "--insecure")
    assert code == 0, err
    assert "result: 6" in out and "secure-sum/result=6" in out
    assert "plaintext" in err


def test_killed_party_ends_the_run_everywhere(tmp_path: Path) -> None:
    keep = tmp_path / "run"
    started = time.monotonic()
    code, doc = run_mpc_json(
        "run",
        "secure-sum",
        "--parties",
        "4",
        "--kill",
        "site3",
        "--after",
        "0",
        "--timeout",
        "4",
        "--keep",
        str(keep),
        deadline=60,
    )
    elapsed = time.monotonic() - started
    assert code == 1 and doc["ok"] is False and doc["result"] is None
    parties = doc["parties"]
    assert parties["site3"]["exit_code"] == -9
    assert "killed by signal SIGKILL" in parties["site3"]["error"]["message"]
    for name in ("site1", "site2", "site4"):
        err = parties[name]["error"]
        assert parties[name]["exit_code"] == 1, name
        assert err["peer"] == "site3", err  # the dead party is named ...
        assert err["step"].startswith("secure-sum/"), err  # ... and the protocol step
        assert "site3" in err["message"]
        # noticed by the lost connection (or told by a party that noticed), not a deadline
        assert err["type"] in ("PeerLost", "PeerAborted"), err
    site4 = parties["site4"]["error"]
    if site4["type"] == "PeerLost":  # it noticed itself: it was waiting for site3's ring
        assert site4["step"] == "secure-sum/ring", site4
    else:  # told by a party that noticed first: that party's step
        assert site4["step"] in ("secure-sum/ring", "secure-sum/result"), site4
    assert elapsed < 60  # bounded by the test's own deadline, not a performance claim
    assert processes_mentioning(str(keep)) == []


def test_party_killed_mid_protocol_after_sending(tmp_path: Path) -> None:
    # site1 dies after its first ring message: site2..site4 finish the ring, but site1 never
    # returns the total, so site2 and site3 wait on it and site4 (the ring's end) too.
    keep = tmp_path / "run"
    code, doc = run_mpc_json(
        "run",
        "is-r-empty",
        "--flags",
        "1,0,0,1",
        "--kill",
        "site1",
        "--after",
        "1",
        "--timeout",
        "4",
        "--keep",
        str(keep),
        deadline=60,
    )
    assert code == 1 and doc["ok"] is False
    for name in ("site2", "site3", "site4"):
        err = doc["parties"][name]["error"]
        assert err["peer"] == "site1" and err["step"].startswith("is-r-empty/"), err
    assert processes_mentioning(str(keep)) == []


def _spawn_party(config: Path, name: str, report: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "parties",
            "site",
            "--config",
            str(config),
            "--name",
            name,
            "--report",
            str(report),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )


def test_a_party_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    specs = [PartySpec(f"site{i}", "site", {"value": i}) for i in (1, 2, 3)]
    config = write_deployment(
        tmp_path, "secure-sum", {"modulus": "97"}, specs, timeout=4, insecure=False
    )
    # site2 runs with a key pair the others have never seen
    intruder_dir = tmp_path / "intruder"
    write_keypair(intruder_dir, "site2", generate_keypair())
    text = config.read_text()
    intruder_cfg = tmp_path / "intruder.toml"
    intruder_cfg.write_text(
        text.replace(
            'public_key = "keys/site2.public"', 'public_key = "intruder/site2.public"'
        ).replace('secret_key = "keys/site2.secret"', 'secret_key = "intruder/site2.secret"')
    )
    procs = {
        "site1": _spawn_party(config, "site1", tmp_path / "site1.json"),
        "site2": _spawn_party(intruder_cfg, "site2", tmp_path / "site2.json"),
        "site3": _spawn_party(config, "site3", tmp_path / "site3.json"),
    }
    try:
        codes = {n: p.wait(timeout=60) for n, p in procs.items()}
    finally:
        for p in procs.values():
            p.kill()
    assert codes == {"site1": 1, "site2": 1, "site3": 1}
    reports = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in procs}
    for n in ("site1", "site3"):
        err = reports[n]["error"]
        assert err["peer"] == "site2" and err["step"] == "startup handshake", err
        assert "connection(s) with unknown keys refused" in err["message"], err
    assert "refused our key" in reports["site2"]["error"]["message"]


def test_malformed_frames_over_tcp_are_rejected_and_the_party_keeps_serving(
    tmp_path: Path,
) -> None:
    """A peer with a valid key sends garbage, unknown types and an oversized frame; the
    receiving party reports each and still receives the next valid message."""
    write_keypair(tmp_path, "alice")
    write_keypair(tmp_path, "mallory")
    from mpc.runtime.keys import load_secret_key

    alice_keys = load_secret_key(tmp_path / "alice.secret")
    mallory_keys = load_secret_key(tmp_path / "mallory.secret")
    from mpc.deployment.launcher import free_ports

    port_a, port_m = free_ports(2)
    max_frame = 4096

    async def main() -> tuple[object, list[str]]:
        transport = ZmqTransport(
            "alice",
            f"tcp://127.0.0.1:{port_a}",
            {"mallory": PeerAddress(f"tcp://127.0.0.1:{port_m}", mallory_keys.public)},
            keypair=(alice_keys.public, alice_keys.secret),
            max_frame_bytes=max_frame,
        )
        alice = Party(
            "alice", "site", ["alice", "mallory"], transport, timeout=10, max_frame_bytes=max_frame
        )
        ctx = zmq.asyncio.Context()
        raw = ctx.socket(zmq.DEALER)
        raw.linger = 0
        raw.routing_id = b"mallory"
        raw.curve_publickey, raw.curve_secretkey = mallory_keys.public, mallory_keys.secret
        raw.curve_serverkey = load_public_key(tmp_path / "alice.public")
        raw.connect(f"tcp://127.0.0.1:{port_a}")
        await raw.send_multipart(encode("hello", "hello", 0, {"version": 1, "role": "site"}))
        await alice.start()
        for junk in (
            [b"\xc1\xc1"],
            [encode("msg", "t", 1, None)[0][:-1]],
            [b"\x95\x01\xa3msg\xa1t\x00\xc7\x01\x2ax"],
            [b"z" * (max_frame + 10)],
        ):
            await raw.send_multipart(junk)
        await asyncio.sleep(0.3)
        await raw.send_multipart(encode("msg", "t", 1, "still serving"))
        value = await alice.recv("mallory", "t", ANY)
        rejected = list(alice.metrics.rejected)
        await raw.send_multipart(encode("bye", "bye", 0, None))
        await alice.close(linger_s=0)
        raw.close(0)
        ctx.term()
        return value, rejected

    value, rejected = asyncio.run(main())
    assert value == "still serving"
    assert len(rejected) == 3  # the oversized frame never reaches the codec: libzmq drops it
    assert any("unknown extension type 42" in r for r in rejected)
    assert all(r.startswith("mallory: ") for r in rejected)


def test_keygen_command(tmp_path: Path) -> None:
    code, out, err = run_mpc("keygen", "--out", str(tmp_path / "k"), "alice", "bob")
    assert code == 0, err
    assert (tmp_path / "k" / "alice.public").exists() and (tmp_path / "k" / "bob.secret").exists()
    assert "mode 0600" in out


def test_bad_options_fail_before_anything_starts() -> None:
    code, _, err = run_mpc("run", "secure-sum", "--parties", "3", "--inputs", "1,2")
    assert code == 2 and "--inputs has 2 values but --parties is 3" in err
    code, _, err = run_mpc("run", "is-r-empty", "--flags", "0,2")
    assert code == 2 and "every flag must be 0 or 1" in err
    code, _, err = run_mpc("run", "secure-sum", "--kill", "nobody")
    assert code == 2 and "no such party" in err


def test_party_entry_point_validates_its_config(tmp_path: Path) -> None:
    config = write_deployment(
        tmp_path,
        "secure-sum",
        {},
        [PartySpec("a", "site", {"value": 1}), PartySpec("b", "site", {"value": 2})],
        timeout=2,
        insecure=False,
    )
    assert load_deployment(config).names == ["a", "b"]
    proc = subprocess.run(
        [sys.executable, "-m", "parties", "dealer", "--config", str(config), "--name", "a"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert "has role 'site'" in proc.stderr and json.loads(proc.stdout)["ok"] is False
    shutil.rmtree(tmp_path / "keys")


def test_arrays_and_big_integers_cross_curve_tcp_as_raw_frames(tmp_path: Path) -> None:
    import gmpy2
    import numpy as np

    from mpc.deployment.launcher import free_ports
    from mpc.runtime.keys import load_secret_key

    names = ["alice", "bob"]
    for n in names:
        write_keypair(tmp_path, n)
    keys = {n: load_secret_key(tmp_path / f"{n}.secret") for n in names}
    ports = dict(zip(names, free_ports(2), strict=True))
    payload = {
        "counts": np.arange(100_000, dtype=np.uint64),
        "mask": np.array([[True, False], [False, True]]),
        "big": 2**200 + 1,
        "mpz": gmpy2.mpz(3) ** 500,
    }

    def party(n: str) -> Party:
        other = "bob" if n == "alice" else "alice"
        transport = ZmqTransport(
            n,
            f"tcp://127.0.0.1:{ports[n]}",
            {other: PeerAddress(f"tcp://127.0.0.1:{ports[other]}", keys[other].public)},
            keypair=(keys[n].public, keys[n].secret),
            max_frame_bytes=2**24,
        )
        return Party(n, "site", names, transport, timeout=10, max_frame_bytes=2**24)

    async def alice(p: Party) -> object:
        return await p.recv("bob", "payload", ANY)

    async def bob(p: Party) -> None:
        await p.send("alice", "payload", payload)

    async def main() -> tuple[object, int]:
        a, b = party("alice"), party("bob")

        async def run(p: Party, program):  # type: ignore[no-untyped-def]
            async with p:
                return await program(p)

        got, _ = await asyncio.gather(run(a, alice), run(b, bob))
        return got, a.metrics.bytes_received["bob"]

    got, received = asyncio.run(main())
    assert isinstance(got, dict)
    assert np.array_equal(got["counts"], payload["counts"]) and got["counts"].dtype == np.uint64
    assert np.array_equal(got["mask"], payload["mask"])
    assert got["big"] == payload["big"] and got["mpz"] == payload["mpz"]
    # 800,000 bytes of array data plus a small header: no per-element encoding
    assert 800_000 < received < 800_000 + 1024


def test_mpc_deploy_keys_is_a_folder_from_here_written_relative_to_the_deployment(
    tmp_path: Path,
) -> None:
    """``--keys local/keys --out local`` reads local/keys (from the current directory, as
    every path on the command line) and the deployment file names keys/ beside it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def mpc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mpc", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    assert mpc("keygen", "--out", "local/keys", "site1", "site2").returncode == 0
    done = mpc("deploy", "secure-sum", "--parties", "2", "--keys", "local/keys", "--out", "local")
    assert done.returncode == 0, done.stderr
    assert "missing" not in done.stdout and "to be put in local/keys/" in done.stdout, done.stdout
    written = (tmp_path / "local" / "deployment.toml").read_text()
    assert 'public_key = "keys/site1.public"' in written, written
    assert 'public_key = "keys/site2.public"' in written, written


def test_mpc_deploy_writes_a_deployment_each_party_runs_by_hand(tmp_path: Path) -> None:
    """`mpc deploy` + `mpc keygen` + one `python -m parties` per party, as on separate
    hosts (here all reached at 127.0.0.1): PPID3 with the fast counts and its dealer."""
    out = tmp_path / "deploy"
    hosts = [a for n in ("site1", "site2", "site3", "dealer") for a in ("--host", f"{n}=127.0.0.1")]
    port = free_port_block(4)
    code, text, err = run_mpc("deploy", "ppid3", "--split-demo", "--sites", "3", "--counts",
                              "fast", "--reveal", "counts", "--helper", "dealer", "--out",
                              str(out), "--port", str(port), "--timeout", "30",
                              *hosts)  # fmt: skip
    assert code == 0, err
    assert "python -m parties dealer" in text and f"tcp://127.0.0.1:{port + 3}" in text
    cfg = load_deployment(out / "deployment.toml")
    assert [p.name for p in cfg.parties] == ["site1", "site2", "site3", "dealer"]
    assert all(p.secret_key is None for p in cfg.parties)  # each party brings its own
    code, _, err = run_mpc("keygen", "--out", str(out / "keys"), "site1", "site2", "site3",
                           "dealer")  # fmt: skip
    assert code == 0, err
    procs = {
        p.name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "parties",
                p.role,
                "--config",
                str(out / "deployment.toml"),
                "--name",
                p.name,
                "--secret-key",
                str(out / "keys" / f"{p.name}.secret"),
                "--report",
                str(tmp_path / f"{p.name}.json"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )
        for p in cfg.parties
    }
    try:
        codes = {n: p.wait(timeout=90) for n, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
    assert codes == dict.fromkeys(procs, 0), {n: p.stderr.read() for n, p in procs.items()}
    reports = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in procs}
    assert all(r["ok"] for r in reports.values())
    assert reports["site3"]["result"]["train_accuracy"] == 1.0  # weather: the exact tree
    assert reports["dealer"]["result"]["dealt"] > 0


def free_port_block(n: int) -> int:
    """A base port with ``n`` free ports after it (checked, not reserved). The search starts
    at a random block, so that tests running side by side (xdist workers) do not all take the
    first free one."""
    import random
    import socket

    start = random.SystemRandom().randrange(400)
    for k in range(400):
        base = 20_000 + 97 * ((start + k) % 400)
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no block of free ports")


def test_ping_is_answered_by_a_running_party_and_refused_without_the_monitor_key(
    tmp_path: Path,
) -> None:
    """`mpc ping` (the containers' healthcheck) gets a PONG from a party waiting in its
    handshake; a key the deployment does not admit as its monitor is refused; the party's run
    is not disturbed."""
    out = tmp_path / "deploy"
    port = free_port_block(2)
    hosts = ["--host", "site1=127.0.0.1", "--host", "site2=127.0.0.1"]
    deploy = ["deploy", "secure-sum", "--parties", "2", "--out", str(out), "--port", str(port)]
    code, text, err = run_mpc(*deploy, "--timeout", "30", "--monitor", *hosts)
    assert code == 0, err
    assert "monitor" in text
    code, _, err = run_mpc("keygen", "--out", str(out / "keys"), "site1", "site2", "monitor")
    assert code == 0, err
    config = out / "deployment.toml"
    monitor = ["--secret-key", str(out / "keys" / "monitor.secret")]
    # nobody listens yet: no answer, exit 1, the party and the step named
    code, _, err = run_mpc("ping", "--config", str(config), "--name", "site1", "--timeout", "0.5",
                           *monitor)  # fmt: skip
    assert code == 1 and "PeerTimeout: ping site1" in err, err

    def start(name: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "parties", "site", "--config", str(config), "--name", name,
             "--secret-key", str(out / "keys" / f"{name}.secret"),
             "--report", str(tmp_path / f"{name}.json")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            cwd=ROOT,
        )  # fmt: skip

    procs = {"site1": start("site1")}
    try:
        deadline = time.monotonic() + 30
        while True:  # poll until the party is up: each try is one ping with its own deadline
            code, pong, err = run_mpc("ping", "--config", str(config), "--name", "site1",
                                      "--timeout", "1", *monitor)  # fmt: skip
            if code == 0 or time.monotonic() > deadline:
                break
        assert code == 0, err
        assert pong.startswith(f"site1 (site) at tcp://127.0.0.1:{port}: handshake"), pong
        # a deployment file naming another monitor key: the party refuses that key
        write_keypair(tmp_path / "other", "monitor")
        other = out / "other.toml"
        other.write_text(
            config.read_text().replace(
                'monitor_key = "keys/monitor.public"',
                f'monitor_key = "{tmp_path / "other" / "monitor.public"}"',
            )
        )
        other_key = str(tmp_path / "other" / "monitor.secret")
        code, _, err = run_mpc(
            "ping", "--config", str(other), "--name", "site1", "--secret-key", other_key
        )
        assert code == 1 and "refused the monitor key" in err, err
        procs["site2"] = start("site2")
        codes = {n: p.wait(timeout=60) for n, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    assert codes == {"site1": 0, "site2": 0}
    reports = {n: json.loads((tmp_path / f"{n}.json").read_text()) for n in procs}
    assert reports["site1"]["result"] == 3 == reports["site2"]["result"]
    assert reports["site1"]["metrics"]["rejected_messages"] == []


def test_a_monitor_gets_a_pong_and_nothing_else(tmp_path: Path) -> None:
    """The monitor key admits a connection that may only ping: its protocol messages are
    rejected and never counted as received; a monitor routing id with a party's key is
    dropped. Alice is pinged while she waits for bob in her handshake (bob never comes)."""
    from mpc.deployment.launcher import free_ports
    from mpc.errors import PeerTimeout
    from mpc.runtime.codec import decode
    from mpc.runtime.keys import load_secret_key

    for n in ("alice", "bob", "monitor"):
        write_keypair(tmp_path, n)
    alice_keys, bob_keys, monitor_keys = (
        load_secret_key(tmp_path / f"{n}.secret") for n in ("alice", "bob", "monitor")
    )
    port_a, port_b = free_ports(2)

    async def main() -> tuple[object, int, Party]:
        transport = ZmqTransport(
            "alice",
            f"tcp://127.0.0.1:{port_a}",
            {"bob": PeerAddress(f"tcp://127.0.0.1:{port_b}", bob_keys.public)},
            keypair=(alice_keys.public, alice_keys.secret),
            max_frame_bytes=4096,
            monitor_key=monitor_keys.public,
        )
        alice = Party("alice", "site", ["alice", "bob"], transport, timeout=4)

        async def run_alice() -> None:
            async with alice:
                pass

        running = asyncio.create_task(run_alice())
        ctx = zmq.asyncio.Context()
        socks = []
        for keys, rid in ((monitor_keys, b"~monitor/1"), (bob_keys, b"~monitor/2")):
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.routing_id = rid
            sock.curve_publickey, sock.curve_secretkey = keys.public, keys.secret
            sock.curve_serverkey = alice_keys.public
            sock.connect(f"tcp://127.0.0.1:{port_a}")
            socks.append(sock)
        monitor, impostor = socks
        await monitor.send_multipart(encode("msg", "t", 1, "forged"))
        await impostor.send_multipart(encode("ping", "p2", 0, {}))
        await monitor.send_multipart(encode("ping", "p1", 0, {}))
        pong = decode(await asyncio.wait_for(monitor.recv_multipart(), 10))
        impostor_answered = await impostor.poll(500)
        with pytest.raises(PeerTimeout, match="no HELLO from bob"):
            await running
        for sock in socks:
            sock.close(0)
        ctx.term()
        return (pong.kind, pong.tag, pong.body), impostor_answered, alice

    (kind, tag, body), impostor_answered, alice = asyncio.run(main())
    assert kind == "pong" and tag == "p1"
    assert body == {"version": 1, "name": "alice", "role": "site", "state": "handshake"}
    assert impostor_answered == 0
    assert alice.metrics.rejected == ["~monitor/1: a monitor may only ping, sent 'msg'"]
    assert sum(alice.metrics.messages_received.values()) == 0


def test_a_stranger_with_an_unknown_key_is_refused_and_reported_while_the_run_goes_on(
    tmp_path: Path,
) -> None:
    """A client with a key the deployment does not know, calling itself site2, knocks on
    site1 before the run: site1 refuses it, logs it and lists it in its report, and the run
    with the real site2 succeeds."""
    from ..harness import Parties, plan_deployment

    config, roles = plan_deployment(tmp_path, "secure-sum", "--parties", "3", timeout=20)
    site1 = load_deployment(config).party("site1")
    assert site1.public_key is not None
    stranger = generate_keypair()
    with Parties(config, roles) as run:
        run.start("site1")
        ctx = zmq.Context()
        try:
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.routing_id = b"site2"
            sock.curve_publickey, sock.curve_secretkey = stranger.public, stranger.secret
            sock.curve_serverkey = load_public_key(site1.public_key)
            sock.connect(site1.endpoint)
            sock.send_multipart(encode("hello", "hello", 0, {"version": 1, "role": "site"}))
            run.wait_for_log("site1", "refused a connection", deadline=30)
            sock.close(0)
        finally:
            ctx.term()
        run.start("site2")
        run.start("site3")
        codes = run.wait(list(roles), deadline=60)
    assert codes == dict.fromkeys(roles, 0), {n: run.log(n) for n in roles}
    report = run.report("site1")
    assert report["result"] == 6
    refused = report["metrics"]["refused_connections"]
    assert refused and all(f"unknown key {stranger.public.decode()}" in r for r in refused)
    assert run.report("site3")["metrics"]["refused_connections"] == []
    assert processes_mentioning(str(config)) == []


def _stderr_until(proc: subprocess.Popen[bytes], text: str, *, deadline_s: float) -> str:
    """What ``proc`` wrote to stderr up to the line holding ``text`` (fails at the deadline)."""
    import selectors

    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + deadline_s
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while text.encode() not in seen or not seen.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} on stderr within {deadline_s}s: {seen.decode()}"
            if sel.select(timeout=left):
                chunk = os.read(proc.stderr.fileno(), 65536)
                assert chunk, f"stderr closed before {text!r}: {seen.decode()}"
                seen += chunk
    return seen.decode()


def _party_pids(directory: Path, n: int, *, deadline_s: float) -> list[int]:
    """The pids of the ``n`` party processes whose command line names ``directory``."""
    deadline = time.monotonic() + deadline_s
    while True:
        pids = [int(p.split(":", 1)[0]) for p in processes_mentioning(str(directory))]
        if len(pids) >= n:
            return pids
        assert time.monotonic() < deadline, f"{len(pids)} of {n} parties started"
        time.sleep(0.05)  # polling /proc, with a deadline


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_launcher_kills_its_parties_and_removes_its_keys(
    signum: signal.Signals, code: int
) -> None:
    """`mpc run` stopped by SIGTERM or Ctrl-C (SIGINT) while its parties run: every party
    process is killed, the temporary deployment (secret keys, private inputs) is removed, and
    the launcher says so in one line, without a traceback, exiting 128 + the signal number.
    The parties are frozen (SIGSTOP) first, so the run cannot end on its own before the
    signal arrives; the run (PPID3 on car by set intersections, tens of seconds) is long
    enough that no party ends between being found and being frozen, however busy the
    machine."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpc", "run", "ppid3", "--dataset", "car", "--sites", "3",
         "--counts", "psi", "--timeout", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        started = _stderr_until(proc, "started 3 parties", deadline_s=60)
        line = next(ln for ln in started.splitlines() if "started 3 parties" in ln)
        directory = Path(line.rsplit(" in ", 1)[1])
        assert (directory / "keys" / "site1.secret").exists()
        pids = _party_pids(directory, 3, deadline_s=30)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        proc.send_signal(signum)
        _, rest = proc.communicate(timeout=30)
        err = started + rest.decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for pid in pids:  # whatever the launcher did, no party outlives the test
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"mpc: stopped by {signum.name}"), err
    assert "3 parties killed" in last and str(directory) in last, last
    assert not directory.exists()
    assert processes_mentioning(str(directory)) == []


def test_each_party_writes_its_profile_when_asked(tmp_path: Path) -> None:
    folder = tmp_path / "profiles"
    proc = subprocess.run(
        [sys.executable, "-m", "mpc", "run", "secure-sum", "--parties", "3", "--inputs", "1,2,3",
         "--json"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL,
        env={**os.environ, "MPC_PROFILE_DIR": str(folder)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == 6
    assert sorted(p.name for p in folder.iterdir()) == ["site1.prof", "site2.prof", "site3.prof"]
    assert all(p.stat().st_mode & 0o077 == 0 for p in folder.iterdir())  # private files
    stats = pstats.Stats(str(folder / "site2.prof")).stats
    functions = {f"{path}:{name}" for path, _, name in stats}
    assert any(f.endswith("parties/main.py:main") for f in functions)
