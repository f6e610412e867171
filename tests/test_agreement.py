"""Parties refuse a deployment that drifted: every party compares, in its handshake, a digest
of what all must read alike (:func:`mpc.runtime.config.agreement`: the release, the system
and its parameters, the parties and their columns, their public keys, the deadlines), and a
difference at one party stops every party with one line naming the party that differs and
what differs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpc.runtime.config import agreement, load_config

from .harness import Parties, plan_deployment

pytestmark = pytest.mark.processes


def _drifted(config: Path, pattern: str, replacement: str) -> Path:
    """A copy of ``config`` beside it with one change (paths stay relative to the folder)."""
    text = config.read_text()
    changed, n = re.subn(pattern, replacement, text, count=1, flags=re.M)
    assert n == 1, f"no {pattern!r} in the deployment file"
    other = config.with_name("drifted.toml")
    other.write_text(changed)
    return other


def test_a_parameter_changed_at_one_site_stops_every_site_naming_it(tmp_path: Path) -> None:
    """site3 runs with max_depth = 2, the others with 0: no site trains; each says who
    differs, and that the system's parameters do."""
    config, roles = plan_deployment(tmp_path, "ppid3", "--sites", "3", timeout=10)
    drifted = _drifted(config, r"^max_depth = 0$", "max_depth = 2")
    with Parties(config, roles) as run:
        run.start("site1")
        run.start("site2")
        run.start("site3", "--config", str(drifted))
        codes = run.wait(["site1", "site2", "site3"], deadline=40)
    assert all(code != 0 for code in codes.values()), codes
    for name, blamed in (("site1", "site3"), ("site2", "site3"), ("site3", "site1")):
        message = run.report(name)["error"]["message"]
        assert f"{blamed} runs a different deployment: the system and its parameters differ" in (
            message
        ), (name, message)
        assert "trained on" not in run.log(name)


def test_what_the_agreement_covers_and_what_it_leaves_to_each_host(tmp_path: Path) -> None:
    """The digest changes with a parameter, a party's columns or a public key; not with a
    party's own paths, bind address or the endpoint it reaches a peer at."""
    config, _ = plan_deployment(tmp_path, "ppid3", "--sites", "2", timeout=10)
    base = agreement(load_config(config), "1.0")

    def of(pattern: str, replacement: str) -> dict[str, str]:
        return agreement(load_config(_drifted(config, pattern, replacement)), "1.0")

    assert of(r"^max_depth = 0$", "max_depth = 3")["protocol"] != base["protocol"]
    assert of(r'^columns = \["outlook"', 'columns = ["temperature"')["parties"] != base["parties"]
    assert of(r"^timeout = .*$", "timeout = 11.0")["deployment"] != base["deployment"]
    same = of(r'^data = "(.*)"$', r'data = "\1.elsewhere"')
    assert same == base
    same = of(r'^endpoint = "tcp://127\.0\.0\.1:(\d+)"$', r'endpoint = "tcp://localhost:\1"')
    assert same == base
    assert agreement(load_config(config), "1.1")["release"] != base["release"]
    key = next((tmp_path / "keys").glob("site1.public"))
    key.write_text(next((tmp_path / "keys").glob("site2.public")).read_text())
    assert agreement(load_config(config), "1.0")["keys"] != base["keys"]
