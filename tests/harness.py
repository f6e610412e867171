"""Parties as OS processes under a test's control: start, watch, pause, kill, restart.

``mpc run`` (:func:`mpc.deployment.launcher.launch`) starts every party and waits for all of them;
fault tests need to act on one party while the others run: stop it (SIGSTOP) at a known step,
resume it, kill it, start a new process in its place. :class:`Parties` starts each party
exactly as the launcher does (``python -m parties ROLE --config FILE --name NAME``, its own
process group, a log file and a JSON report per process) and hands the test the process.
Leaving the ``with`` block kills every process group still alive, so no party outlives a
test.

::

    config, roles = plan_deployment(tmp_path, "ppid3", "--sites", "3", timeout=3)
    with Parties(config, roles) as run:
        for name in roles:
            run.start(name)
        for name in roles:  # every handshake is done: the protocol runs
            run.wait_for_log(name, "running ppid3", deadline=30)
        run.signal("site2", signal.SIGSTOP)
        codes = run.wait(["site1", "site3"], deadline=30)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from mpc.deployment.launcher import write_deployment
from parties.cli.main import build_parser
from parties.systems.registry import get_system

from .conftest import ROOT

#: how often a wait polls a log file or the processes
POLL_S = 0.05


def plan_deployment(
    directory: Path, system: str, *args: str, timeout: float
) -> tuple[Path, dict[str, str]]:
    """Plan ``mpc run SYSTEM ARGS`` and write its deployment (fresh CurveZMQ keys, private
    inputs) to ``directory``; return the deployment file and each party's role."""
    ns = build_parser().parse_args(["run", system, *args])
    sys_ = get_system(ns.system)
    plan = sys_.plan_from(ns)
    config = write_deployment(
        directory, sys_.name, plan.params, plan.parties, timeout=timeout, insecure=False
    )
    return config, {p.name: p.role for p in plan.parties}


class Parties:
    """The parties of the deployment file ``config`` (``roles``: name -> role), each started
    on demand as its own process. A process is known by a *label*: the party's name, or
    another label for a second process of the same party (a restart)."""

    def __init__(self, config: Path, roles: dict[str, str]) -> None:
        self.config = config
        self.roles = dict(roles)
        self.directory = config.parent
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        (self.directory / "logs").mkdir(exist_ok=True)
        (self.directory / "reports").mkdir(exist_ok=True)

    def __enter__(self) -> Parties:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL every process group still running (a stopped one too) and reap it."""
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def start(self, name: str, *extra: str, label: str | None = None) -> subprocess.Popen[bytes]:
        """Start party ``name`` (extra arguments for ``python -m parties``, e.g.
        ``--kill-after 5``) as the process ``label`` (default: ``name``)."""
        label = label or name
        if label in self.procs:
            raise ValueError(f"a process labelled {label!r} was started already")
        cmd = [
            sys.executable, "-m", "parties", self.roles[name], "--config", str(self.config),
            "--name", name, "--report", str(self.report_path(label)), *extra,
        ]  # fmt: skip
        with self.log_path(label).open("wb") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
            )  # fmt: skip
        self.procs[label] = proc
        return proc

    def log_path(self, label: str) -> Path:
        return self.directory / "logs" / f"{label}.log"

    def report_path(self, label: str) -> Path:
        return self.directory / "reports" / f"{label}.json"

    def log(self, label: str) -> str:
        return self.log_path(label).read_text(errors="replace")

    def report(self, label: str) -> dict[str, Any]:
        """The JSON report the process wrote when it ended."""
        data: dict[str, Any] = json.loads(self.report_path(label).read_text())
        return data

    def signal(self, label: str, sig: signal.Signals) -> None:
        """Send ``sig`` to the process (and its group)."""
        os.killpg(self.procs[label].pid, sig)

    def wait_for_log(self, label: str, text: str, *, deadline: float) -> None:
        """Poll the process's log until it holds ``text``; fail after ``deadline`` seconds
        or when the process ends without writing it."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if text in self.log(label):
                return
            if self.procs[label].poll() is not None:
                raise AssertionError(f"{label} ended without logging {text!r}:\n{self.log(label)}")
            time.sleep(POLL_S)
        raise AssertionError(f"{label} did not log {text!r} within {deadline}s:\n{self.log(label)}")

    def wait(self, labels: list[str], *, deadline: float) -> dict[str, int]:
        """Wait until every process in ``labels`` has exited; their exit codes. Fails (with
        the logs) if one is still running after ``deadline`` seconds."""
        end = time.monotonic() + deadline
        codes: dict[str, int] = {}
        for n in labels:
            try:
                codes[n] = self.procs[n].wait(timeout=max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
        else:
            return codes
        running = [n for n in labels if self.procs[n].poll() is None]
        logs = "\n".join(f"--- {n}\n{self.log(n)}" for n in running)
        raise AssertionError(f"still running after {deadline}s: {running}\n{logs}")
