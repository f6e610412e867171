"""Docker for the container tests: is an engine there, the image, compose commands, volumes.

The tests marked ``docker`` build the project's image and run it. Where no Docker engine
answers they skip, saying why, unless ``MPC_REQUIRE_DOCKER=1`` (``.ci/run`` sets it, having
installed and started one): then a missing engine fails them. ``MPC_DOCKER_BASE`` names the
base image (the Dockerfile's ``BASE``; default ``python:3.11-slim``, ``.ci/run`` builds one
from Debian's packages).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT

IMAGE = "mpc-trees:latest"
#: the uid of the image's user (the Dockerfile's ``useradd --uid``)
IMAGE_UID = 10001


@functools.cache
def docker_missing() -> str | None:
    """Why no Docker engine can be used here, or None when one answers."""
    if shutil.which("docker") is None:
        return "no docker command (apt-get install docker.io; .ci/run installs it)"
    if compose_command() is None:
        return "no docker-compose and no `docker compose` (apt-get install docker-compose)"
    try:
        proc = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "the Docker engine does not answer `docker info` within 30 s"
    if proc.returncode != 0:
        return f"no Docker engine answers: {proc.stderr.strip()[:200]}"
    return None


def require_docker() -> None:
    """Skip (or, with ``MPC_REQUIRE_DOCKER=1``, fail) where no Docker engine answers."""
    why = docker_missing()
    if why is None:
        return
    if os.environ.get("MPC_REQUIRE_DOCKER") == "1":
        pytest.fail(f"MPC_REQUIRE_DOCKER=1 but {why}")
    pytest.skip(why)


@functools.cache
def compose_command() -> tuple[str, ...] | None:
    """``docker compose`` where the plugin is there, else ``docker-compose``."""
    if shutil.which("docker"):
        proc = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if proc.returncode == 0:
            return ("docker", "compose")
    if shutil.which("docker-compose"):
        return ("docker-compose",)
    return None


def run(cmd: list[str], *, timeout: float = 300, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    if check and proc.returncode != 0:
        tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    return proc


@functools.cache
def built_image() -> str:
    """Build the project's image once per test session (``MPC_DOCKER_BASE`` as its base)."""
    base = os.environ.get("MPC_DOCKER_BASE", "python:3.11-slim")
    run(
        ["docker", "build", "--network", "host", "--build-arg", f"BASE={base}", "-t", IMAGE, "."],
        timeout=900,
    )
    return IMAGE


def compose(
    project: str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    cmd = compose_command()
    assert cmd is not None
    return run([*cmd, "-p", project, *args], env=env, timeout=timeout, check=check)


def container_exit_codes(project: str) -> dict[str, int]:
    """Every container of a compose project, by service: its exit code (-1 while running)."""
    proc = run(["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={project}",
                "--format", "{{.ID}}"])  # fmt: skip
    out = {}
    for cid in proc.stdout.split():
        info = json.loads(run(["docker", "inspect", cid]).stdout)[0]
        service = info["Config"]["Labels"]["com.docker.compose.service"]
        state = info["State"]
        out[service] = -1 if state["Running"] else int(state["ExitCode"])
    return out


def container_of(project: str, service: str) -> str:
    """The id of a compose service's container (compose v1 and v2 name them differently)."""
    proc = run(["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}",
                "--filter", f"label=com.docker.compose.service={service}"])  # fmt: skip
    ids = proc.stdout.split()
    assert len(ids) == 1, f"{project}/{service}: containers {ids}"
    return ids[0]


def wait_exits(containers: list[str], deadline: float) -> list[int]:
    """Block until every container has exited (``docker wait``: Docker's own event, no
    polling), at most ``deadline`` seconds; their exit codes, in order."""
    proc = run(["docker", "wait", *containers], timeout=deadline)
    return [int(code) for code in proc.stdout.split()]


def wait_for_log(container: str, text: str, deadline: float) -> None:
    """Follow a container's log (``docker logs -f``) until a line holds ``text``; fail after
    ``deadline`` seconds, when the follower is stopped."""
    follow = subprocess.Popen(["docker", "logs", "-f", container], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)  # fmt: skip
    timer = threading.Timer(deadline, follow.kill)
    timer.start()
    try:
        assert follow.stdout is not None
        for line in follow.stdout:
            if text in line:
                return
        raise AssertionError(f"{container}: no log line with {text!r} within {deadline} s")
    finally:
        timer.cancel()
        follow.kill()
        follow.wait()


def read_volume(volume: str, path: str) -> tuple[str, str]:
    """The mode (octal) and text of ``path`` in a volume, read by the image's user."""
    proc = run(["docker", "run", "--rm", "-v", f"{volume}:/v:ro", IMAGE, "sh", "-c",
                f"stat -c %a /v/{path} && cat /v/{path}"])  # fmt: skip
    mode, _, text = proc.stdout.partition("\n")
    return mode.strip(), text


def report(volume: str, path: str) -> tuple[str, dict[str, Any]]:
    mode, text = read_volume(volume, path)
    return mode, json.loads(text)


def remove_project(project: str, *profiles: str, env: dict[str, str] | None = None) -> None:
    """Stop and remove a compose project's containers, networks and volumes."""
    flags = [x for p in profiles for x in ("--profile", p)]
    compose(project, *flags, "down", "-v", "--remove-orphans", env=env, check=False)


def own(path: Path, uid: int = IMAGE_UID) -> None:
    """Make ``path`` (and everything under it) the image user's, as an organisation would
    for the folders it mounts."""
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.chown(p, uid, uid)
