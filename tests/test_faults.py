"""Faults across real processes over TCP with CurveZMQ: a party killed mid-protocol, a party
paused past the deadline, the CDBS process restarted on its database.

Each survivor must end by itself within the deadline, with an error that names the party at
fault and the protocol step. Other fault tests live beside their systems: a killed site
(``test_processes.py``, ``test_ppid3.py``), a CDBS killed mid-request (``test_cdtl.py``).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from .conftest import processes_mentioning, run_mpc_json
from .harness import Parties, plan_deployment

pytestmark = [pytest.mark.processes, pytest.mark.timeout(90)]

HYBRID = ["--dataset", "weather", "--theta", "0.8", "--window", "2", "--seed", "1"]


def _named_error(report: dict[str, Any], peer: str, step_prefix: str) -> dict[str, Any]:
    """The report's error, checked to name ``peer`` and a step starting with ``step_prefix``."""
    err = report["error"]
    assert err is not None, report
    assert err["peer"] == peer and peer in err["message"], err
    assert err["step"].startswith(step_prefix), err
    return dict(err)


def test_the_hybrid_id3_dealer_killed_mid_run_ends_alice_and_bob(tmp_path: Path) -> None:
    keep = tmp_path / "run"
    code, doc = run_mpc_json(
        "run", "hybrid-id3", *HYBRID, "--kill", "dealer", "--after", "10", "--timeout", "5",
        "--keep", str(keep), deadline=80,
    )  # fmt: skip
    assert code == 1 and doc["ok"] is False
    parties = doc["parties"]
    assert parties["dealer"]["exit_code"] == -9
    for name in ("alice", "bob"):
        assert parties[name]["exit_code"] == 1, parties[name]
        err = _named_error(parties[name], "dealer", "hybrid/")
        assert err["type"] in ("PeerLost", "PeerAborted"), err
    assert processes_mentioning(str(keep)) == []


def test_a_client_killed_mid_run_ends_the_cdbs(tmp_path: Path) -> None:
    keep = tmp_path / "run"
    code, doc = run_mpc_json(
        "run", "cdtl", "--sensitive", "windy", "--cv", "2", "--method", "cdtl",
        "--kill", "client", "--after", "4", "--timeout", "5", "--keep", str(keep), deadline=80,
    )  # fmt: skip
    assert code == 1 and doc["ok"] is False
    assert doc["parties"]["client"]["exit_code"] == -9
    cdbs = doc["parties"]["cdbs"]
    assert cdbs["exit_code"] == 1
    err = _named_error(cdbs, "client", "cdtl/req/")
    assert err["type"] == "PeerLost", err
    assert processes_mentioning(str(keep)) == []


@pytest.mark.parametrize(
    ("system", "args", "paused"),
    [("ppid3", ["--sites", "3"], "site2"), ("hybrid-id3", HYBRID, "dealer")],
    ids=["ppid3-site", "hybrid-id3-dealer"],
)
def test_a_party_paused_past_the_deadline_is_named_by_every_other(
    tmp_path: Path, system: str, args: list[str], paused: str
) -> None:
    """SIGSTOP one party once all run the protocol: the others end with PeerTimeout naming
    it (or an abort that relays such a timeout) within the deadline; resumed after they
    left, the paused party ends too."""
    config, roles = plan_deployment(tmp_path, system, *args, timeout=3)
    others = [n for n in roles if n != paused]
    with Parties(config, roles) as run:
        for name in roles:
            run.start(name)
        for name in roles:  # every handshake done: the protocol runs
            run.wait_for_log(name, f"running {system}", deadline=30)
        run.signal(paused, signal.SIGSTOP)
        codes = run.wait(others, deadline=30)
        assert codes == dict.fromkeys(others, 1), {n: run.log(n) for n in others}
        errors = {n: _named_error(run.report(n), paused, "") for n in others}
        timeouts = [n for n, e in errors.items() if e["type"] == "PeerTimeout"]
        assert timeouts, errors  # at least one noticed the silence itself ...
        for name, err in errors.items():  # ... and told the others
            assert err["type"] == "PeerTimeout" or (
                err["type"] == "PeerAborted" and "PeerTimeout" in err["message"]
            ), (name, err)
            assert err["step"] not in ("", "startup handshake"), err
        run.signal(paused, signal.SIGCONT)
        assert run.wait([paused], deadline=30) == {paused: 1}
        late = run.report(paused)["error"]
        assert late["type"] in ("PeerAborted", "PeerLost", "PeerTimeout"), late
        assert late["peer"] in others or late["peer"] == paused, late
    assert processes_mentioning(str(config)) == []
