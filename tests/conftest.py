"""Shared helpers: run the ``mpc`` command and party processes with hard deadlines."""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import datasets

ROOT = Path(__file__).resolve().parent.parent

# A shell without job control starts a background command (`pytest &`) with SIGINT ignored,
# and an ignored signal stays ignored in every process started from it: the Ctrl-C tests would
# then signal parties that cannot hear it. A handled signal is reset to its default at exec,
# so handling it here gives every process the tests start the SIGINT of a foreground command.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Every party process the tests start fails when it received a message that no receive of
# its program declared (mpc.runtime.view): a run cannot pass with an unaccounted message.
os.environ["MPC_STRICT_RECEIPTS"] = "1"


#: markers whose tests share a machine-wide resource (a Docker engine and the image it builds
#: once per worker, network namespaces and shaped links, the fixed ports of a page's
#: commands): each runs in its own xdist groups
EXCLUSIVE = ("docker", "netns", "pages")


#: the container tests run in two lines of their own, side by side on one Docker engine (each
#: test its own compose project): the compose profiles of PPID3, and the rest
DOCKER_LINES = (("[ppid3", "docker"), ("", "docker-2"))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the project's modules once, before the workers start: the tests start hundreds
    of ``mpc`` commands and party processes, and where no bytecode is cached (a fresh
    checkout, or ``PYTHONDONTWRITEBYTECODE`` set) each would compile them again. An installed
    package has its bytecode already: pip compiles it at install."""
    if hasattr(session.config, "workerinput"):
        return
    for package in ("mpc", "protocols", "parties"):
        compileall.compile_dir(ROOT / package, quiet=2)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give the tests of each :data:`EXCLUSIVE` marker one ``xdist_group`` (the container
    tests two, :data:`DOCKER_LINES`), so that ``--dist loadgroup`` runs the tests of a group
    one after the other on one worker."""
    for item in items:
        for name in EXCLUSIVE:
            if item.get_closest_marker(name) is not None:
                group = name
                if name == "docker":
                    group = next(g for part, g in DOCKER_LINES if part in item.nodeid)
                item.add_marker(pytest.mark.xdist_group(group))
                break


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tell :mod:`tests.data` whether the test about to run is marked ``datasets``: its
    helpers fail a test that reads a dataset without the mark."""
    datasets.current.marked = item.get_closest_marker(datasets.MARKER) is not None


def pytest_runtest_teardown(item: pytest.Item) -> None:
    datasets.current.marked = None


def run_mpc(*args: str, deadline: float = 60.0) -> tuple[int, str, str]:
    """Run ``python -m mpc ARGS`` with a deadline; return (exit code, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mpc", *args],
        capture_output=True,
        text=True,
        timeout=deadline,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode, proc.stdout, proc.stderr


def run_mpc_json(*args: str, deadline: float = 60.0) -> tuple[int, dict[str, Any]]:
    code, out, err = run_mpc(*args, "--json", deadline=deadline)
    try:
        return code, json.loads(out)
    except json.JSONDecodeError:
        pytest.fail(f"not JSON (exit {code}):\nstdout: {out}\nstderr: {err}")


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` in their command line or in
    a file they hold open (to find leftovers: a party forked by ``mpc run`` has the
    launcher's command line, and its log file in the deployment folder as fd 1 and 2)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline or any(text in target for target in _open_files(entry)):
            found.append(f"{entry.name}: {cmdline}")
    return found


def _open_files(proc: Path) -> list[str]:
    """Where the file descriptors of process ``proc`` (a /proc entry) point."""
    targets = []
    with contextlib.suppress(OSError):
        for fd in (proc / "fd").iterdir():
            with contextlib.suppress(OSError):
                targets.append(os.readlink(fd))
    return targets
