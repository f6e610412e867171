"""The compose services on separate hosts, without Docker: one network namespace per service.

Each party service of docker-compose.yml runs its own ``command`` inside its own Linux network
namespace (``ip netns exec``), with its own address on a private bridge (10.231.x.y, in a
namespace of its own too, so the host's interfaces are not touched) and the service names in
``/etc/netns/<ns>/hosts``. The one-shot services (keygen, plan) run first, as Compose runs
them; the container paths of the volumes are mapped to temporary directories (a named volume
mounted at ``/secrets/site1`` is ``fs/secrets/site1``, so ``/secrets`` is ``fs/secrets``, as in
the one-shot service's container that mounts every party's folder below it). So the parties
find each other by service name, over real TCP between network stacks, with the keys and the
deployment the compose file's own commands wrote, and the healthcheck is the compose file's.
Each party's own volumes hold its own files and nothing else (who mounts which volume is
checked in test_compose.py).

The tests need root and iproute2; where a namespace cannot be made they skip, saying why.
Namespaces, links, the bridge and ``/etc/netns/<ns>`` are removed whatever happens, and every
process is killed at the end (names carry a random prefix, so parallel runs do not collide).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpc.datasets.fetch import SHIPPED

from ..compose_file import Service, in_profile, load_services, one_shot
from ..conftest import ROOT

pytestmark = [pytest.mark.netns, pytest.mark.processes, pytest.mark.timeout(180)]

COMPOSE = ROOT / "docker-compose.yml"
#: every command of a test's processes finishes within this many seconds
IP_TIMEOUT_S = 15.0


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False
    )


def _check(proc: subprocess.CompletedProcess[str]) -> None:
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, proc.args))}: {proc.stderr.strip()}")


class Lab:
    """Network namespaces standing in for hosts, one per service, all on one bridge."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.hub = f"{prefix}-hub"
        self.subnet = f"10.231.{secrets.randbelow(256)}"
        self.namespaces: dict[str, str] = {}  # service -> namespace
        self.addresses: dict[str, str] = {}

    def open(self) -> str | None:
        """Create the bridge's namespace; the reason when namespaces cannot be made."""
        if shutil.which("ip") is None:
            return "iproute2's `ip` is not installed"
        if os.geteuid() != 0:
            return "network namespaces need root (ip netns add)"
        made = _ip("netns", "add", self.hub)
        if made.returncode != 0:
            return f"`ip netns add` is not permitted here: {made.stderr.strip()}"
        self.namespaces["(hub)"] = self.hub
        _check(_ip("-n", self.hub, "link", "add", "br0", "type", "bridge"))
        _check(_ip("-n", self.hub, "link", "set", "br0", "up"))
        return None

    def add_hosts(self, hosts: Mapping[str, tuple[str, ...]]) -> None:
        """One namespace per service (name -> its aliases), linked to the bridge by a veth
        pair; every namespace's /etc/hosts names them all."""
        for i, name in enumerate(hosts, start=len(self.addresses) + 2):
            ns = f"{self.prefix}-{name}"
            _check(_ip("netns", "add", ns))
            self.namespaces[name] = ns
            self.addresses[name] = f"{self.subnet}.{i}"
            port = f"v{i}"
            _check(_ip("link", "add", "eth0", "netns", ns, "type", "veth",
                       "peer", "name", port, "netns", self.hub))  # fmt: skip
            _check(_ip("-n", self.hub, "link", "set", port, "master", "br0", "up"))
            _check(_ip("-n", ns, "addr", "add", f"{self.addresses[name]}/24", "dev", "eth0"))
            _check(_ip("-n", ns, "link", "set", "eth0", "up"))
            _check(_ip("-n", ns, "link", "set", "lo", "up"))
        lines = ["127.0.0.1 localhost"]
        lines += [f"{self.addresses[n]} {' '.join((n, *a))}" for n, a in hosts.items()]
        for name in self.addresses:
            etc = Path("/etc/netns") / self.namespaces[name]
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text("\n".join(lines) + "\n")

    def exec_argv(self, service: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespaces[service], *argv]

    def cut(self, service: str) -> None:
        """Take the service's link down, as if its cable were pulled."""
        _check(_ip("-n", self.namespaces[service], "link", "set", "eth0", "down"))

    def pids(self) -> list[str]:
        """Processes still running in any of the namespaces."""
        found: list[str] = []
        for ns in self.namespaces.values():
            found += _ip("netns", "pids", ns).stdout.split()
        return found

    def close(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        for ns in self.namespaces.values():
            _ip("netns", "del", ns)  # takes its end of every veth (and the bridge) with it
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)


@pytest.fixture
def lab() -> Iterator[Lab]:
    lab = Lab(f"mt{secrets.token_hex(3)}")
    try:
        reason = lab.open()
        if reason is not None:
            pytest.skip(reason)
        yield lab
    finally:
        lab.close()


class ComposeRun:
    """The services of one compose profile, run as compose would, each in its namespace."""

    def __init__(self, services: Mapping[str, Service], lab: Lab, tmp: Path) -> None:
        self.services = dict(services)
        self.lab = lab
        self.tmp = tmp
        self.one_shot = one_shot(self.services)
        self.parties = [n for n in self.services if n not in self.one_shot]
        # every volume target (container path) -> a directory here: a named volume's mirrors
        # its container path under fs/, a host folder is itself
        self.fs = tmp / "fs"
        self.mounts: dict[str, Path] = {}
        targets: dict[str, str] = {}  # named volume -> its one container path
        for s in self.services.values():
            for v in s.volumes:
                host = self.fs / v.target.lstrip("/") if v.named else Path(v.source)
                if self.mounts.setdefault(v.target, host) != host:
                    raise RuntimeError(f"{v.target} is mounted from two sources")
                if v.named and targets.setdefault(v.source, v.target) != v.target:
                    raise RuntimeError(f"volume {v.source} is mounted at two container paths")
                host.mkdir(parents=True, exist_ok=True)
        (tmp / "logs").mkdir(exist_ok=True)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def volume(self, target: str) -> Path:
        return self.mounts[target]

    def mapped(self, value: str) -> str:
        """A container path as the path of its volume here (a folder above mount points as
        its folder under fs/); anything else unchanged."""
        for target in sorted(self.mounts, key=len, reverse=True):
            if value == target or value.startswith(target + "/"):
                return str(self.mounts[target]) + value[len(target) :]
        if value.startswith("/") and any(
            t.startswith(value.rstrip("/") + "/") for t in self.mounts
        ):
            return str(self.fs / value.lstrip("/"))
        return value

    def argv(self, name: str, command: tuple[str, ...] | None = None) -> list[str]:
        """The service's command (or ``command``) with paths mapped and this interpreter."""
        args = [self.mapped(a) for a in (command or self.services[name].command)]
        if args[0] == "python":
            return [sys.executable, *args[1:]]
        if args[0] == "mpc":
            return [sys.executable, "-m", "mpc", *args[1:]]
        raise RuntimeError(f"service {name}: unknown program {args[0]!r}")

    def env(self, name: str) -> dict[str, str]:
        service = {k: self.mapped(v) for k, v in self.services[name].environment.items()}
        return {**os.environ, **service}

    def prepare(self) -> None:
        """Run the one-shot services (keygen, plan) to completion, as compose does first."""
        for name in self.one_shot:
            proc = subprocess.run(
                self.argv(name), env=self.env(name), capture_output=True, text=True,
                timeout=120, cwd=self.tmp, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            assert proc.returncode == 0, f"{name}: {proc.stderr}"

    def start(self, name: str, *extra: str) -> None:
        """Start a party in its namespace once its health-gated dependencies are healthy;
        ``extra`` arguments go after the service's command (a later run of the party)."""
        for dep, condition in self.services[name].depends_on.items():
            if condition == "service_healthy":
                assert self.healthy(dep, deadline_s=30), f"{dep} never became healthy"
        command = (*self.services[name].command, *extra)
        with (self.tmp / "logs" / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                self.lab.exec_argv(name, self.argv(name, command)), env=self.env(name),
                cwd=self.tmp,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip

    def healthy(self, name: str, *, deadline_s: float) -> bool:
        """Run the service's healthcheck in its namespace until it passes or time is up."""
        check = self.services[name].healthcheck
        assert check, f"{name} has no healthcheck"
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            proc = subprocess.run(
                self.lab.exec_argv(name, self.argv(name, check)), env=self.env(name),
                capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            if proc.returncode == 0:
                return True
            if proc.returncode == 2 or self.procs[name].poll() is not None:
                return False  # the check's configuration is wrong, or the party has ended
        return False

    def log(self, name: str) -> str:
        return (self.tmp / "logs" / f"{name}.log").read_text(errors="replace")

    def wait_for_log(self, name: str, text: str, *, deadline_s: float) -> None:
        deadline = time.monotonic() + deadline_s
        while text not in self.log(name):
            assert self.procs[name].poll() is None, f"{name} ended early:\n{self.log(name)}"
            assert time.monotonic() < deadline, f"{name}: no {text!r} within {deadline_s}s"
            time.sleep(0.05)  # polling a log file, with a deadline

    def wait(self, timeout_s: float) -> dict[str, int | None]:
        deadline = time.monotonic() + timeout_s
        codes: dict[str, int | None] = {}
        try:
            for name, proc in self.procs.items():
                codes[name] = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        finally:
            self.kill()
        return {n: codes.get(n) for n in self.procs}

    def kill(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def reports(self, report: str | None = None) -> dict[str, dict[str, Any]]:
        """Every party's report: the one its command names, or ``report`` in its folder."""
        out = {}
        for name in self.parties:
            command = self.services[name].command
            path = Path(self.mapped(command[command.index("--report") + 1]))
            if report is not None:
                path = path.with_name(report)
            out[self.services[name].environment["MPC_PARTY"]] = json.loads(path.read_text())
        return out


@pytest.fixture
def compose(lab: Lab, tmp_path: Path) -> Iterator[Any]:
    """``compose(profile, **env)``: the services of a profile, ready to run in ``lab``."""
    runs: list[ComposeRun] = []

    def make(profile: str, **env: str) -> ComposeRun:
        services = in_profile(load_services(COMPOSE, env), profile)
        run = ComposeRun(services, lab, tmp_path / profile)
        runs.append(run)
        lab.add_hosts({n: services[n].aliases for n in run.parties})
        return run

    try:
        yield make
    finally:
        for run in runs:
            run.kill()


def _files(folder: Path) -> dict[str, int]:
    """Every file below ``folder`` and its mode."""
    return {
        str(p.relative_to(folder)): p.stat().st_mode & 0o777
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _data_dir() -> Path:
    """The folder mounted as the data directory: the package's own tables (weather is
    embedded; house-votes-84, the compose file's default, is among them)."""
    return SHIPPED


def _audit(run: ComposeRun, plan_service: str) -> dict[str, Any]:
    """The launcher's audit of a run (for PPID3: the tree assembled from every site's own
    nodes against plain ID3), from the plan service's own command and the parties' reports."""
    from parties.cli.main import build_parser
    from parties.systems.registry import get_system

    command = [run.mapped(a) for a in run.services[plan_service].command]
    args = build_parser().parse_args(command[1:])
    system = get_system(args.system)
    result: dict[str, Any] = system.finish(run.reports(), system.plan_from(args))
    return result


@pytest.mark.parametrize(
    ("profile", "counts", "helper", "parties"),
    [
        ("ppid3", "psi", "dealer", ["site1", "site2", "site3"]),
        ("ppid3-fast", "fast", "dealer", ["site1", "site2", "site3", "ppid3-dealer"]),
        # fast counts with no outside party: each product's randomness from the third site
        ("ppid3", "fast", "sites", ["site1", "site2", "site3"]),
    ],
)
def test_ppid3_sites_on_separate_hosts(
    compose: Any, profile: str, counts: str, helper: str, parties: list[str]
) -> None:
    run: ComposeRun = compose(
        profile,
        MPC_DATA_DIR=str(_data_dir()),
        MPC_PPID3_DATASET="weather",
        MPC_PPID3_COUNTS=counts,
        MPC_PPID3_HELPER=helper,
        MPC_TIMEOUT="30",
    )
    assert run.parties == parties
    run.prepare()
    config = run.volume("/public") / "ppid3" / "deployment.toml"
    assert 'endpoint = "tcp://site2:5701"' in config.read_text()  # a service name, not an IP
    # each party's volumes hold its own key and file, the public one neither keys nor inputs
    for name in parties:
        party = run.services[name].environment["MPC_PARTY"]
        assert _files(run.volume(f"/secrets/{party}")) == {f"{party}.secret": 0o600}
        own = {} if party == "dealer" else {"ppid3.csv": 0o600}
        assert _files(run.volume(f"/private/{party}")) == own
    public = _files(run.volume("/public"))
    assert not [f for f in public if not f.endswith((".public", "deployment.toml"))], public
    run.start("site1")
    # the compose healthcheck: a CurveZMQ ping answered by site1 while it waits for its peers
    assert run.healthy("site1", deadline_s=30), run.log("site1")
    for name in parties[1:]:
        run.start(name)
    codes = run.wait(timeout_s=90)
    assert codes == dict.fromkeys(parties, 0), {n: run.log(n) for n in codes}
    assert run.lab.pids() == []
    result = _audit(run, "plan-ppid3")
    assert result["counts"] == counts
    if counts == "fast":
        assert result["helper"] == helper
    assert result["identical"] is True  # the PPID3 tree is plain ID3's
    assert result["accuracy"]["train"] == result["plain_accuracy"]["train"] == 1.0
    for name, report in run.reports().items():
        assert report["ok"] and report["metrics"]["bytes_sent"] > 0, name
    sites = [n for n in parties if n.startswith("site")]
    for name in sites:  # each host keeps its own part of the tree, nothing else
        assert _files(run.volume(f"/models/{name}")) == {"ppid3.model.json": 0o600}

    # months later: new, unlabelled records, each host writing only its own columns (in its
    # own row order), classified by a second run of the parties with their saved parts
    from mpc.datasets import load_dataset
    from mpc.learners.id3 import ID3Classifier

    table, _ = load_dataset("weather", _data_dir())
    part = result["partition"]
    new_ids = [f"new{i}" for i in range(table.n_rows)][::-1]
    for name, attrs in zip(sites, part["sites"], strict=True):
        with (run.volume(f"/private/{name}") / "new.csv").open("w") as fh:
            fh.write(",".join(["id", *attrs]) + "\n")
            for i in np.random.default_rng(len(attrs)).permutation(table.n_rows):
                fh.write(",".join([new_ids[i], *(str(table.column(a)[i]) for a in attrs)]) + "\n")
    run.procs.clear()
    for name in parties:
        party = run.services[name].environment["MPC_PARTY"]
        extra = ["--report", f"/reports/{name}/classify.json"]
        if party != "dealer":
            extra += ["--model", f"/models/{name}/ppid3.model.json",
                      "--data", f"/private/{name}/new.csv", "--id", "id"]  # fmt: skip
        if party == part["site_names"][part["class_site"]]:
            extra += ["--predictions-out", f"/models/{name}/predictions.csv"]
        run.start(name, *extra)
    codes = run.wait(timeout_s=90)
    assert codes == dict.fromkeys(parties, 0), {n: run.log(n) for n in codes}
    order = [a for s in part["sites"] for a in s]
    plain = ID3Classifier().fit(
        table, attribute_order=order, sites={a: i for i, s in enumerate(part["sites"]) for a in s}
    )
    expected = dict(zip(new_ids, map(str, plain.predict(table)), strict=True))
    holder = part["site_names"][part["class_site"]]
    lines = (run.volume(f"/models/{holder}") / "predictions.csv").read_text().split()
    assert lines[0] == "id,class"
    assert dict(line.split(",") for line in lines[1:]) == expected


def test_hybrid_id3_alice_bob_and_commodity_server_on_three_hosts(compose: Any) -> None:
    data = _data_dir()
    run: ComposeRun = compose("hybrid-id3", MPC_DATA_DIR=str(data), MPC_TIMEOUT="30")
    assert run.parties == ["hybrid-dealer", "alice", "bob"]
    run.prepare()
    for name in run.parties:  # alice and bob once the dealer's healthcheck passes
        run.start(name)
    codes = run.wait(timeout_s=120)
    assert codes == dict.fromkeys(run.parties, 0), {n: run.log(n) for n in codes}
    assert run.lab.pids() == []
    result = _audit(run, "plan-hybrid-id3")
    assert result["smc_only_identical_to_plain"] is True
    assert result["dealer_batches"] > 0
    assert 0.85 <= result["accuracy"] <= 1.0


def test_cdtl_client_and_cdbs_on_two_hosts(compose: Any) -> None:
    data = _data_dir()
    run: ComposeRun = compose("cdtl", MPC_DATA_DIR=str(data), MPC_CDTL_FOLDS="3", MPC_TIMEOUT="30")
    assert run.parties == ["cdbs", "client"]
    run.prepare()
    run.start("cdbs")
    run.start("client")  # after the cdbs healthcheck passes (depends_on: service_healthy)
    codes = run.wait(timeout_s=120)
    assert codes == {"cdbs": 0, "client": 0}, {n: run.log(n) for n in codes}
    assert run.lab.pids() == []
    reports = run.reports()
    folds = reports["client"]["result"]["folds"]
    assert len(folds) == 3
    for fold in folds:
        for method in ("cdtl", "cnl", "cdbsl"):
            assert 0.8 <= fold[method]["accuracy"] <= 1.0, (method, fold)
        assert fold["cdtl"]["requests"] > 0
    cdbs = reports["cdbs"]["result"]
    assert cdbs["subtrees"] > 0
    assert Path(cdbs["db"]).parent == run.volume("/var/lib/cdbs")  # the CDBS volume
    assert Path(cdbs["db"]).stat().st_size > 0


def test_a_cut_link_ends_ppid3_on_every_host_naming_the_peer_and_step(compose: Any) -> None:
    """site2's cable is pulled mid-training: every site exits 1 with a PeerError that names
    the peer it lost (site2, or for site2 one of the others) and the protocol step."""
    data = _data_dir()
    # the compose file's default PPID3 run (house-votes-84, depth 4) lasts long enough
    run: ComposeRun = compose("ppid3", MPC_DATA_DIR=str(data), MPC_TIMEOUT="10")
    run.prepare()
    for name in run.parties:
        run.start(name)
    for name in run.parties:  # every site is past the handshake, inside the protocol
        run.wait_for_log(name, "connected to", deadline_s=60)
    run.lab.cut("site2")
    codes = run.wait(timeout_s=90)
    logs = {n: run.log(n) for n in codes}
    assert codes == {"site1": 1, "site2": 1, "site3": 1}, logs
    assert run.lab.pids() == []
    reports = run.reports()
    for name, report in reports.items():
        err = report["error"]
        assert err["type"] in ("PeerLost", "PeerTimeout", "PeerAborted"), (name, err)
        expected = {"site1", "site3"} if name == "site2" else {"site2"}
        assert err["peer"] in expected, (name, err)
        assert err["peer"] in err["message"], (name, err)
        assert err["step"] and err["step"] not in ("startup handshake", "ready"), (name, err)


def test_without_root_the_lab_says_why_and_makes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/sbin/{name}")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    lab = Lab(f"mt{secrets.token_hex(3)}")
    assert lab.open() == "network namespaces need root (ip netns add)"
    assert lab.namespaces == {}
