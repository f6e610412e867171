"""docker-compose.yml and the Dockerfile keep their promises (read as files; no Docker needed).

Who mounts what is derived from the services' own commands: ``keygen --out P --secrets S``
puts NAME's secret key at ``S/NAME/NAME.secret``, ``mpc deploy --private D --out O`` puts
NAME's private input at ``D/NAME/SYSTEM.json`` and the deployment file in ``O``. The volume a
service mounts at (a parent of) that path is the volume holding it. Every party service must
then see its own key, input, the deployment file and the public keys, and nothing of another
party: no other party's secret key, no other party's private input, no report volume another
service mounts, no host folder (the datasets); the monitor's secret key only where a
healthcheck runs. The same checks run on the file as PyYAML reads it (always) and on what
``docker-compose config`` prints (where Debian's docker-compose is installed, as in CI).

What the services do when they run is tested in test_multihost.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping

import pytest
import yaml

from ..compose_file import (
    ComposeError,
    Service,
    in_profile,
    interpolate,
    load_services,
    one_shot,
    parse_services,
)
from ..conftest import ROOT

COMPOSE = ROOT / "docker-compose.yml"
PROFILES = ("ppid3", "ppid3-fast", "hybrid-id3", "cdtl")
ENV = {"MPC_DATA_DIR": "/srv/datasets"}
#: the key pair of the healthchecks (``mpc keygen ... monitor``)
MONITOR = "monitor"


def test_interpolation_follows_compose() -> None:
    env = {"A": "1", "EMPTY": ""}
    assert interpolate("$A ${A} $${A} ${B:-x} ${EMPTY:-y} ${EMPTY-z}", env) == "1 1 ${A} x y "
    assert interpolate("${A:?needed}", env) == "1"
    with pytest.raises(ComposeError, match="B is not set: say why"):
        interpolate("${B:?say why}", env)


def test_the_data_directory_is_required_with_an_explanation() -> None:
    with pytest.raises(ComposeError, match="MPC_DATA_DIR is not set: set MPC_DATA_DIR to"):
        load_services(COMPOSE, {})


def _from_yaml() -> dict[str, Service]:
    return load_services(COMPOSE, ENV)


def _from_docker_compose() -> dict[str, Service]:
    """The services as ``docker-compose config`` resolves them (Debian's docker-compose;
    no Docker engine is needed to print the configuration)."""
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose; CI has it)")
    proc = subprocess.run(
        [binary, "-f", str(COMPOSE), "config"], capture_output=True, text=True, timeout=60,
        cwd=ROOT, env={**os.environ, **ENV}, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return parse_services(yaml.safe_load(proc.stdout)["services"])


READERS = {"pyyaml": _from_yaml, "docker-compose config": _from_docker_compose}


#: a file as a volume holds it: (the volume's source, the path inside the volume)
File = tuple[str, str]


def _positional(command: tuple[str, ...]) -> list[str]:
    """The positional arguments of ``mpc keygen [--opt VALUE]... NAME...``."""
    args, names, i = command[2:], [], 0
    while i < len(args):
        if args[i].startswith("--"):
            i += 2
        else:
            names.append(args[i])
            i += 1
    return names


class Layout:
    """Where the one-shot services of a profile put each party's files (the volume and the
    path inside it), read from their commands; and what a party service sees of them."""

    def __init__(self, services: Mapping[str, Service]) -> None:
        self.services = dict(services)
        self.tools = one_shot(self.services)
        self.parties = [n for n in self.services if n not in self.tools]
        self.keygen = self.services[self.tools[0]]
        self.plan = self.services[self.tools[1]]
        self.system = self.plan.command[2]
        self.names = _positional(self.keygen.command)

    def secret_path(self, name: str) -> str:
        secrets, out = self.keygen.option("--secrets"), self.keygen.option("--out")
        return f"{secrets}/{name}/{name}.secret" if secrets else f"{out}/{name}.secret"

    def input_path(self, name: str) -> str:
        private, out = self.plan.option("--private"), self.plan.option("--out")
        suffix = "csv" if "--split-demo" in self.plan.command else "json"
        if private:
            return f"{private}/{name}/{self.system}.{suffix}"
        return f"{out}/data/{name}.{suffix}"

    def secret(self, name: str) -> File:
        return self._written(self.keygen, self.secret_path(name))

    def private_input(self, name: str) -> File:
        return self._written(self.plan, self.input_path(name))

    def public_keys(self) -> File:
        return self._written(self.keygen, str(self.keygen.option("--out")))

    def deployment(self) -> File:
        return self._written(self.plan, f"{self.plan.option('--out')}/deployment.toml")

    @staticmethod
    def seen(service: Service, path: str) -> File | None:
        """What ``service`` finds at ``path``: a file of which volume (None: of none)."""
        where = service.where(path)
        return None if where is None else (where[0].source, where[1])

    @staticmethod
    def _written(writer: Service, path: str) -> File:
        where = writer.where(path)
        assert where is not None and where[0].named, f"{writer.name} writes {path} to no volume"
        return where[0].source, where[1]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("profile", PROFILES)
def test_every_party_of_a_profile_is_keyed_planned_and_health_checked(
    profile: str, reader: str
) -> None:
    services = in_profile(READERS[reader](), profile)
    tools = one_shot(services)
    assert tools[0] == "keygen" and len(tools) == 2 and tools[1].startswith("plan-"), tools
    layout = Layout(services)
    plan = layout.plan.command
    assert plan[:2] == ("mpc", "deploy") and "--monitor" in plan
    assert layout.plan.option("--keys") == layout.keygen.option("--out")
    assert any(v.target == "/data" and v.read_only for v in layout.plan.volumes)
    assert layout.keygen.command[:2] == ("mpc", "keygen") and MONITOR in layout.names
    assert len(layout.parties) >= 2
    for name in layout.parties:
        s = services[name]
        party = s.environment["MPC_PARTY"]
        assert name == party or party in s.aliases or f"dealer={name}" in plan, name
        assert party in layout.names, name
        # its own secret key and private input, the deployment file, every public key
        assert layout.seen(s, s.environment["MPC_SECRET_KEY_FILE"]) == layout.secret(party)
        assert layout.seen(s, layout.input_path(party)) == layout.private_input(party), name
        assert layout.seen(s, s.environment["MPC_CONFIG"]) == layout.deployment(), name
        assert layout.seen(s, layout.plan.option("--keys") or "") == layout.public_keys()
        assert s.command[:3] == ("python", "-m", "parties") and "--report" in s.command
        assert s.healthcheck[:4] == ("python", "-m", "parties", "ping"), name
        assert layout.seen(s, s.environment["MPC_MONITOR_KEY_FILE"]) == layout.secret(MONITOR)
        assert all(d in services for d in s.depends_on), name
        assert {"keygen", tools[1]} <= set(s.depends_on), name


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("profile", PROFILES)
def test_no_party_service_sees_another_partys_key_input_or_report(
    profile: str, reader: str
) -> None:
    everything = READERS[reader]()
    services = in_profile(everything, profile)
    layout = Layout(services)
    secrets = {n: layout.secret(n) for n in layout.names}
    planned = {services[n].environment["MPC_PARTY"] for n in layout.parties}
    inputs = {q: layout.private_input(q) for q in planned}
    for name in layout.parties:
        s = everything[name]
        party = s.environment["MPC_PARTY"]
        for v in s.volumes:
            assert v.named, f"{name} mounts the host folder {v.source} (only the plan may)"
            keys = [q for q, f in secrets.items() if q not in (party, MONITOR) and f[0] == v.source]
            assert not keys, f"{name} ({party}) mounts {v.source}: the secret keys of {keys}"
            data = [q for q, f in inputs.items() if q != party and f[0] == v.source]
            assert not data, f"{name} ({party}) mounts {v.source}: the private input of {data}"
            # what it may write (its report, the CDBS's database) no other service mounts
            sharing = [
                o.name
                for o in everything.values()
                if o.name != name and any(w.source == v.source for w in o.volumes)
            ]
            assert v.read_only or not sharing, f"{name} writes to {v.source}, shared: {sharing}"
        report = layout.seen(s, s.command[s.command.index("--report") + 1])
        assert report is not None, f"{name} writes its report into no volume"
        assert not next(v for v in s.volumes if v.source == report[0]).read_only, name
    # the monitor's secret key: written by keygen, read only where a healthcheck runs
    for s in everything.values():
        for v in s.volumes:
            if v.source == secrets[MONITOR][0] and s.name != "keygen":
                assert s.healthcheck and v.read_only, f"{s.name}: the monitor key, no healthcheck"


def test_dealers_of_two_systems_are_one_party_with_one_key() -> None:
    """PPID3's and Hybrid-ID3's dealer services are both the party `dealer` (one key pair from
    keygen, one private-input volume with a file per system); each has its own reports."""
    services = _from_yaml()
    a, b = services["ppid3-dealer"], services["hybrid-dealer"]
    assert a.environment["MPC_PARTY"] == b.environment["MPC_PARTY"] == "dealer"
    reports = {Layout.seen(s, s.command[-1]) for s in (a, b)}
    assert len(reports) == 2 and None not in reports


def test_the_image_installs_dependencies_before_the_source_and_runs_as_a_user() -> None:
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines()]

    def first(prefix: str) -> int:
        return next(i for i, ln in enumerate(lines) if ln.startswith(prefix))

    assert first("COPY pyproject.toml") < first("&& pip install -r") < first("COPY mpc")
    assert first("USER mpc") > first("RUN useradd")
    assert any("PYTHONUNBUFFERED=1" in ln for ln in lines)


def test_the_image_makes_every_mount_point_private_to_its_user() -> None:
    """A fresh named volume takes the owner and mode of the folder it is mounted on: each
    volume's mount point must exist in the image, owned by the image's user (so that it can
    write there), and each party's folder must be 0700."""
    text = (ROOT / "Dockerfile").read_text()
    args = {m[0]: m[1].split() for m in re.findall(r'^ARG (\w+)="([^"]*)"', text, re.M)}
    made = {"/public", "/secrets/monitor", "/var/lib/cdbs", "/data"}
    made |= {f"/secrets/{p}" for p in args["PARTIES"]} | {f"/private/{p}" for p in args["PARTIES"]}
    made |= {f"/reports/{s}" for s in args["REPORTS"]} | {f"/models/{m}" for m in args["MODELS"]}
    assert "chown -R mpc:mpc /public /secrets /private /reports /models /var/lib/cdbs" in text
    assert "chmod 0700 /secrets/* /private/* /reports/* /models/* /var/lib/cdbs" in text
    for s in _from_yaml().values():
        for v in s.volumes:
            assert v.target in made, f"{s.name}: {v.target} is not made in the Dockerfile"
