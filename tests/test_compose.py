"""docker-compose.yml and the Dockerfile keep their promises (read as files; no Docker needed).

What the services do when they run is tested in test_multihost.py; CI also validates the
file with ``docker-compose config -q``.
"""

from __future__ import annotations

import pytest

from .compose_file import ComposeError, in_profile, interpolate, load_services, one_shot
from .conftest import ROOT

COMPOSE = ROOT / "docker-compose.yml"
PROFILES = ("ppid3", "ppid3-fast", "hybrid-id3", "cdtl")
ENV = {"MPC_DATA_DIR": "/srv/datasets"}


def test_interpolation_follows_compose() -> None:
    env = {"A": "1", "EMPTY": ""}
    assert interpolate("$A ${A} $${A} ${B:-x} ${EMPTY:-y} ${EMPTY-z}", env) == "1 1 ${A} x y "
    assert interpolate("${A:?needed}", env) == "1"
    with pytest.raises(ComposeError, match="B is not set: say why"):
        interpolate("${B:?say why}", env)


def test_the_data_directory_is_required_with_an_explanation() -> None:
    with pytest.raises(ComposeError, match="MPC_DATA_DIR is not set: set MPC_DATA_DIR to"):
        load_services(COMPOSE, {})


@pytest.mark.parametrize("profile", PROFILES)
def test_every_party_of_a_profile_is_keyed_planned_and_health_checked(profile: str) -> None:
    services = in_profile(load_services(COMPOSE, ENV), profile)
    tools = one_shot(services)
    assert tools[0] == "keygen" and len(tools) == 2 and tools[1].startswith("plan-"), tools
    plan = services[tools[1]].command
    assert plan[:2] == ("mpc", "deploy") and "--monitor" in plan
    assert plan[plan.index("--keys") + 1] == "/keys"
    assert any(v.target == "/data" and v.read_only for v in services[tools[1]].volumes)
    keygen = services["keygen"].command
    assert keygen[:4] == ("mpc", "keygen", "--out", "/keys") and "monitor" in keygen
    parties = [n for n in services if n not in tools]
    assert len(parties) >= 2
    for name in parties:
        s = services[name]
        party = s.environment["MPC_PARTY"]
        assert name == party or party in s.aliases or f"dealer={name}" in plan, name
        assert party in keygen, name
        assert s.environment["MPC_SECRET_KEY_FILE"] == f"/keys/{party}.secret"
        assert s.environment["MPC_MONITOR_KEY_FILE"] == "/keys/monitor.secret"
        assert s.environment["MPC_CONFIG"].startswith("/deploy/")
        mounts = {v.target: v for v in s.volumes}
        assert mounts["/keys"].read_only and mounts["/deploy"].read_only, name
        assert s.command[:3] == ("python", "-m", "parties") and "--report" in s.command
        assert s.healthcheck[:4] == ("python", "-m", "parties", "ping"), name
        assert all(d in services for d in s.depends_on), name
        assert {"keygen", tools[1]} <= set(s.depends_on), name


def test_the_image_installs_dependencies_before_the_source_and_runs_as_a_user() -> None:
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines()]

    def first(prefix: str) -> int:
        return next(i for i, ln in enumerate(lines) if ln.startswith(prefix))

    assert first("COPY pyproject.toml") < first("&& pip install -r") < first("COPY mpc")
    assert first("USER mpc") > first("RUN useradd")
    assert any("PYTHONUNBUFFERED=1" in ln for ln in lines)
