"""The zygote that forks the parties of ``mpc run`` (:mod:`parties.forker`,
:mod:`parties.zygote`): a forked party holds nothing of the launcher's memory, runs in a
session of its own, and its exit code, its death by a signal and the zygote's own death reach
the launcher (which then starts new interpreters)."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mpc.deployment.launcher import PARTY_COMMAND, PartySpec, launch, write_deployment
from parties.forker import ForkedParty, Forker

from ..conftest import processes_mentioning

pytestmark = [
    pytest.mark.processes,
    pytest.mark.timeout(90),
    pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the zygote needs os.pidfd_open"),
]


def _waiting_party(
    folder: Path, forker: Forker, *, report: str = "site1.json"
) -> tuple[ForkedParty, Path]:
    """site1 of a two-party secure sum whose site2 never comes: it waits for it (up to its
    30 s start-up deadline) until the test kills it."""
    specs = [PartySpec(f"site{i}", "site", {"value": i}) for i in (1, 2)]
    config = write_deployment(
        folder, "secure-sum", {"modulus": "97"}, specs, timeout=30, insecure=False
    )
    log = folder / "site1.log"
    log.touch(mode=0o600)
    argv = [*PARTY_COMMAND, "site", "--config", str(config), "--name", "site1",
            "--report", str(folder / report)]  # fmt: skip
    return forker.spawn(argv, log=log, env=dict(os.environ)), log


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether the readable memory of process ``pid`` holds ``needle`` (read through
    /proc/PID/mem: the test process is the party's ancestor)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r") or "[vvar]" in line or "[vsyscall]" in line:
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except (OSError, OverflowError, ValueError):
                continue
    return False


def _wait_until(predicate, deadline_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + deadline_s
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)  # polling a process's state, with a deadline


def test_a_forked_party_holds_nothing_of_the_launcher(tmp_path: Path) -> None:
    """The zygote is a new interpreter: a secret the launcher held before starting it is
    not in a forked party's memory; the party's own arguments are (the scan finds what is
    there)."""
    secret = ("launcher-" + secrets.token_hex(24)).encode()
    own = "party-" + secrets.token_hex(24)
    assert _memory_holds(os.getpid(), secret)
    forker = Forker.start()
    assert forker is not None
    party, _ = _waiting_party(tmp_path, forker, report=f"{own}.json")
    try:
        _wait_until(lambda: "site1" in Path(f"/proc/{party.pid}/comm").read_text(), 30,
                    "the party never named its process")  # fmt: skip
        assert _memory_holds(party.pid, own.encode())
        assert not _memory_holds(party.pid, secret)
        assert not _memory_holds(forker.pid, secret)
    finally:
        os.killpg(party.pid, signal.SIGKILL)
        assert party.wait() == -signal.SIGKILL
        forker.close()


def test_a_forked_party_runs_in_its_own_session_named_after_it(tmp_path: Path) -> None:
    forker = Forker.start()
    assert forker is not None
    party, _ = _waiting_party(tmp_path, forker)
    try:
        _wait_until(lambda: "site1" in Path(f"/proc/{party.pid}/comm").read_text(), 30,
                    "the party never named its process")  # fmt: skip
        assert os.getsid(party.pid) == party.pid != os.getsid(0)
        assert Path(f"/proc/{party.pid}/comm").read_text().strip() == "mpc site1"
        assert processes_mentioning(str(tmp_path))  # its log, as fd 1 and 2
        assert party.poll() is None and party.returncode is None
    finally:
        os.killpg(party.pid, signal.SIGKILL)
    assert party.wait() == -signal.SIGKILL
    forker.close()
    _wait_until(lambda: not processes_mentioning(str(tmp_path)), 10, "a party was left")


def test_a_party_that_fails_gives_its_exit_code_and_its_log(tmp_path: Path) -> None:
    """`python -m parties` refusing its arguments exits 2 with its usage on stderr; a
    forked one gives the same code, its usage in its log."""
    forker = Forker.start()
    assert forker is not None
    log = tmp_path / "party.log"
    log.touch(mode=0o600)
    party = forker.spawn([*PARTY_COMMAND, "site", "--no-such-option"], log=log, env={})
    assert party.wait() == 2
    forker.close()
    assert re.search(r"usage: .*--config", log.read_text()), log.read_text()


def test_a_zygote_that_dies_takes_its_parties_with_it(tmp_path: Path) -> None:
    forker = Forker.start()
    assert forker is not None
    party, _ = _waiting_party(tmp_path, forker)
    os.kill(forker.pid, signal.SIGKILL)
    assert party.wait() == -signal.SIGKILL
    _wait_until(lambda: not processes_mentioning(str(tmp_path)), 10, "a party was left")
    forker.close()


def test_a_run_whose_zygote_has_gone_starts_new_interpreters() -> None:
    forker = Forker.start()
    assert forker is not None
    os.kill(forker.pid, signal.SIGKILL)
    specs = [PartySpec(f"site{i}", "site", {"value": i}) for i in (1, 2, 3)]
    result = launch("secure-sum", {"modulus": "97"}, specs, timeout=30, forker=forker)
    forker.close()
    assert result.ok, result.reports
    assert {r["result"] for r in result.reports.values()} == {6}


def test_the_environment_can_ask_for_new_interpreters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPC_PARTY_START", "exec")
    assert Forker.start() is None


def test_only_the_party_program_is_forked(tmp_path: Path) -> None:
    forker = Forker.start()
    assert forker is not None
    try:
        with pytest.raises(ValueError, match="python -m parties"):
            forker.spawn([sys.executable, "my_party.py", "site"], log=tmp_path / "x", env={})
    finally:
        forker.close()


def test_mpc_run_forks_its_parties_and_says_the_same(tmp_path: Path) -> None:
    """The same run, forked and started as new interpreters: the same result, ledgers and
    received messages (a forked party is the same program, not a shortcut)."""

    def run(start: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "mpc", "run", "ppid3", "--dataset", "weather", "--sites",
             "3", "--reveal", "tree", "--json"],
            capture_output=True, text=True, timeout=80, check=True,
            env={**os.environ, "MPC_PARTY_START": start},
        )  # fmt: skip
        return json.loads(out.stdout)

    def view(doc: dict[str, Any]) -> dict[str, Any]:
        return {
            name: (
                sorted((e["label"], e["step"]) for e in party["ledger"]),
                sorted((r["receipt"], r["from"], r["messages"]) for r in party["received"]),
            )
            for name, party in doc["parties"].items()
        }

    forked, started = run("fork"), run("exec")
    assert forked["ok"] and started["ok"]
    assert _timeless(forked["result"]) == _timeless(started["result"])
    assert view(forked) == view(started)


def _timeless(doc: Any) -> Any:
    """``doc`` without what varies from run to run: times (keys ending in ``_s``), byte
    counts (``bytes_*``: a random share's encoding varies in length) and rounds (they
    depend on how messages interleave)."""
    if isinstance(doc, dict):
        return {
            k: _timeless(v)
            for k, v in doc.items()
            if not k.endswith("_s") and not k.startswith("bytes_") and k != "rounds"
        }
    return [_timeless(v) for v in doc] if isinstance(doc, list) else doc
