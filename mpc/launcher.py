"""Launch a whole deployment as local processes: ``mpc run SYSTEM``.

:func:`launch` writes a deployment into a directory (CurveZMQ keys, the deployment TOML,
one private input file per party), starts one OS process per party on 127.0.0.1
(``python -m parties ROLE --config ... --name ...``), waits for all of them, and collects
their JSON reports. Every child runs in its own process group and is killed when the
launcher leaves, whatever happens, so no process outlives a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpc.errors import ConfigError
from mpc.keys import write_keypair

__all__ = ["LaunchResult", "PartySpec", "free_ports", "launch", "write_deployment"]


@dataclass(frozen=True)
class PartySpec:
    """One party to launch: its name, role, private input (JSON) and owned columns."""

    name: str
    role: str
    data: dict[str, Any] | None = None
    columns: tuple[str, ...] = ()


@dataclass
class LaunchResult:
    ok: bool
    reports: dict[str, dict[str, Any]]
    exit_codes: dict[str, int | None]
    directory: Path
    wall_s: float
    logs: dict[str, str] = field(default_factory=dict)


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """Ask the OS for ``n`` distinct free TCP ports on ``host``."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            return json.dumps(str(value))
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid TOML basic strings
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def write_deployment(
    directory: Path,
    protocol: str,
    params: dict[str, Any],
    parties: Sequence[PartySpec],
    *,
    timeout: float,
    insecure: bool,
    host: str = "127.0.0.1",
    endpoints: Sequence[tuple[str, str]] | None = None,
    keys: str | None = None,
    monitor: bool = False,
) -> Path:
    """Write per-party data and ``deployment.toml`` into ``directory``; return its path.

    By default every party listens on ``host`` at a free port and a fresh key pair per party
    goes to ``directory/keys`` (a local run). With ``endpoints`` (one ``(endpoint, bind)``
    per party) and ``keys`` (the folder, as the parties will see it, that holds
    ``NAME.public``), the file describes parties on other hosts whose keys were made
    elsewhere (``mpc keygen``); no key is written and no secret key is named: each party
    gets its own with ``--secret-key`` or ``MPC_SECRET_KEY_FILE``. ``monitor`` (with ``keys``)
    admits ``keys/monitor.public`` as the deployment's monitor key (health checks)."""
    directory.mkdir(parents=True, exist_ok=True)
    if endpoints is None:
        endpoints = [(f"tcp://{host}:{port}", "") for port in free_ports(len(parties), host)]
    lines = [
        "# written by `mpc run` / `mpc deploy`; every party of the run reads this file",
        "[deployment]",
        f"timeout = {float(timeout)!r}",
        f"insecure = {_toml_value(insecure)}",
        *([f"monitor_key = {_toml_value(f'{keys}/monitor.public')}"] if monitor and keys else []),
        "",
        "[protocol]",
        f"name = {_toml_value(protocol)}",
        "[protocol.params]",
        *(f"{k} = {_toml_value(v)}" for k, v in params.items()),
    ]
    for spec, (endpoint, bind) in zip(parties, endpoints, strict=True):
        lines += [
            "",
            "[[party]]",
            f"name = {_toml_value(spec.name)}",
            f"role = {_toml_value(spec.role)}",
            f"endpoint = {_toml_value(endpoint)}",
        ]
        if bind:
            lines.append(f"bind = {_toml_value(bind)}")
        if not insecure and keys is None:
            write_keypair(directory / "keys", spec.name)
            lines += [
                f'public_key = "keys/{spec.name}.public"',
                f'secret_key = "keys/{spec.name}.secret"',
            ]
        elif not insecure:
            lines.append(f"public_key = {_toml_value(f'{keys}/{spec.name}.public')}")
        if spec.data is not None:
            data_path = directory / "data" / f"{spec.name}.json"
            data_path.parent.mkdir(exist_ok=True)
            data_path.write_text(json.dumps(spec.data))
            lines.append(f'data = "data/{spec.name}.json"')
        if spec.columns:
            lines.append(f"columns = {_toml_value(list(spec.columns))}")
    path = directory / "deployment.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running (killed by the launcher)"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def launch(
    protocol: str,
    params: dict[str, Any],
    parties: Sequence[PartySpec],
    *,
    timeout: float,
    insecure: bool = False,
    keep: Path | None = None,
    kill: tuple[str, int] | None = None,
    progress: Any = None,
) -> LaunchResult:
    """Run a deployment as local processes and collect the reports.

    ``timeout`` is the per-receive deadline of every party. ``kill = (name, n)`` makes that
    party SIGKILL itself after sending ``n`` messages (fault injection). ``progress`` is
    a callable taking a line of text, or None.
    """
    say = progress or (lambda line: None)
    directory = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="mpc-run-"))
    if keep and directory.exists() and any(directory.iterdir()):
        if not (directory / "deployment.toml").exists():
            raise ConfigError(
                f"--keep {directory}: the directory exists and is not a previous "
                "deployment; give a new or empty directory"
            )
        for old in ("keys", "data", "reports", "logs"):
            shutil.rmtree(directory / old, ignore_errors=True)
    started = time.perf_counter()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {}
    try:
        config = write_deployment(
            directory, protocol, params, parties, timeout=timeout, insecure=insecure
        )
        (directory / "reports").mkdir(exist_ok=True)
        (directory / "logs").mkdir(exist_ok=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for spec in parties:
            cmd = [
                sys.executable,
                "-m",
                "parties",
                spec.role,
                "--config",
                str(config),
                "--name",
                spec.name,
                "--report",
                str(directory / "reports" / f"{spec.name}.json"),
            ]
            if insecure:
                cmd.append("--insecure")
            if kill is not None and kill[0] == spec.name:
                cmd += ["--kill-after", str(kill[1])]
            logs[spec.name] = directory / "logs" / f"{spec.name}.log"
            with logs[spec.name].open("wb") as log_file:
                procs[spec.name] = subprocess.Popen(
                    cmd,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
        say(f"started {len(procs)} parties ({', '.join(procs)}) in {directory}")
        # Every party ends by itself within its deadlines; this guard only catches a
        # party that misbehaves after the others have failed.
        first_failure: float | None = None
        grace = 2 * timeout + 15
        offsets = dict.fromkeys(logs, 0)
        last_relay = time.perf_counter()
        while any(p.poll() is None for p in procs.values()):
            time.sleep(0.05)
            if time.perf_counter() - last_relay > 1.0:
                last_relay = time.perf_counter()
                _relay_progress(logs, offsets, say)
            failed = [n for n, p in procs.items() if p.poll() not in (None, 0)]
            if failed and first_failure is None:
                first_failure = time.perf_counter()
                say(f"{', '.join(failed)} failed; waiting for the others to stop")
            if first_failure is not None and time.perf_counter() - first_failure > grace:
                say("parties still running long after a failure: killing them")
                break
    finally:
        for p in procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    codes = {n: p.returncode for n, p in procs.items()}
    reports: dict[str, dict[str, Any]] = {}
    log_text: dict[str, str] = {}
    for spec in parties:
        log_text[spec.name] = (
            logs[spec.name].read_text(errors="replace") if spec.name in logs else ""
        )
        path = directory / "reports" / f"{spec.name}.json"
        report: dict[str, Any]
        try:
            report = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            report = {
                "name": spec.name,
                "role": spec.role,
                "ok": False,
                "result": None,
                "error": {
                    "type": "ProcessDied",
                    "message": f"{spec.name}: process {_describe_exit(codes.get(spec.name))} "
                    "without writing a report",
                },
                "metrics": {},
                "ledger": [],
            }
        report["exit_code"] = codes.get(spec.name)
        reports[spec.name] = report
    ok = all(c == 0 for c in codes.values()) and all(r.get("ok") for r in reports.values())
    result = LaunchResult(ok, reports, codes, directory, time.perf_counter() - started, log_text)
    if keep is None:
        shutil.rmtree(directory, ignore_errors=True)
    return result


#: a party's log line with this marker is shown on the launching terminal while it runs
PROGRESS_MARKER = " PROGRESS "


def _relay_progress(
    logs: dict[str, Path], offsets: dict[str, int], say: Callable[[str], None]
) -> None:
    """Show the new ``PROGRESS`` lines of every party's log (read from the last offset)."""
    for name, path in logs.items():
        try:
            with path.open("rb") as fh:
                fh.seek(offsets[name])
                chunk = fh.read()
        except OSError:
            continue
        complete = chunk.rfind(b"\n") + 1
        offsets[name] += complete
        for line in chunk[:complete].decode(errors="replace").splitlines():
            if PROGRESS_MARKER in line:
                say(f"{name}: {line.split(PROGRESS_MARKER, 1)[1].strip()}")
