"""Launch a whole deployment as local processes: ``mpc run SYSTEM``.

:func:`launch` writes a deployment into a directory (CurveZMQ keys, the deployment TOML,
one private input file per party), starts one OS process per party on 127.0.0.1
(``python -m parties ROLE --config ... --name ...``, or the same forked from a process
that has loaded the party program, a :class:`Starter` such as ``mpc run``'s zygote), waits
for all of them, and collects their JSON reports. Every child runs in its own process group and is
killed when the launcher leaves, whatever happens, so no process outlives a run.

What a run writes is private (:mod:`mpc.runtime.files`): secret keys, private inputs, logs and
reports are mode 0600 in folders of mode 0700; only the deployment file and the ``.public``
keys may be read by others. A temporary deployment is removed when the run ends, however it
ends. SIGINT (Ctrl-C) and SIGTERM stop a run: :func:`launch` kills its parties, removes its
temporary deployment and raises :class:`Stopped`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mpc.errors import ConfigError
from mpc.runtime.files import open_private, private_dir, write_private
from mpc.runtime.keys import write_keypair
from mpc.runtime.signals import STOP_SIGNALS, Stopped, recorded, stop_on_signals

__all__ = [
    "PARTY_COMMAND",
    "STOP_SIGNALS",
    "LaunchResult",
    "PartySpec",
    "Placement",
    "Stopped",
    "free_ports",
    "launch",
    "stop_on_signals",
    "write_deployment",
]

#: the command that starts one party of a system (its role and options follow)
PARTY_COMMAND = (sys.executable, "-m", "parties")


class Started(Protocol):
    """A party started by a :class:`Starter`: what :func:`launch` uses of a
    :class:`subprocess.Popen`."""

    pid: int

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


class Starter(Protocol):
    """Starts ``python -m parties ARGS`` (``argv``, as to ``exec``) some other way than
    ``exec``, its output appended to ``log`` (which exists), ``env`` its environment."""

    def spawn(self, argv: Sequence[str], *, log: Path, env: Mapping[str, str]) -> Started: ...

    def fileno(self) -> int:
        """A descriptor that becomes readable when a party it started ends."""
        ...


@dataclass(frozen=True)
class PartySpec:
    """One party to launch: its name, role, private input and owned columns.

    The private input is either ``data`` (a JSON object: the toy systems' inputs) or ``csv``
    (the text of the party's own CSV file, written as ``NAME.csv`` where its JSON would go).
    ``entries`` are further per-party fields of the deployment file (``id``, ``nominal``,
    ``model_out``, ...; see :mod:`mpc.runtime.config`); a relative path among them is relative to
    the deployment file. ``files`` are further private files of the party, by the field that
    names them (``{"test": CSV_TEXT}``): written next to its input, named in its entry."""

    name: str
    role: str
    data: dict[str, Any] | None = None
    columns: tuple[str, ...] = ()
    csv: str | None = None
    entries: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """Where one party of a launch lives, when not on 127.0.0.1 at a free port: ``endpoint``
    (where the others connect), ``bind`` (where it listens; empty: the endpoint) and
    ``prefix``, the command its process is started under (``("ip", "netns", "exec", NS)``
    runs it in network namespace NS). :mod:`mpc.deployment.netlab` makes these for a shaped link."""

    endpoint: str
    bind: str = ""
    prefix: tuple[str, ...] = ()


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
    private: str | None = None,
) -> Path:
    """Write per-party data and ``deployment.toml`` into ``directory``; return its path.

    By default every party listens on ``host`` at a free port and a fresh key pair per party
    goes to ``directory/keys`` (a local run). With ``endpoints`` (one ``(endpoint, bind)``
    per party) and ``keys`` (the folder, as the parties will see it, that holds
    ``NAME.public``), the file describes parties on other hosts whose keys were made
    elsewhere (``mpc keygen``); no key is written and no secret key is named: each party
    gets its own with ``--secret-key`` or ``MPC_SECRET_KEY_FILE``. ``monitor`` (with ``keys``)
    admits ``keys/monitor.public`` as the deployment's monitor key (health checks).

    Each party's private input goes to ``directory/data/NAME.json``, or with ``private`` (a
    folder, as the parties see it; relative to ``directory`` like ``keys``) to
    ``private/NAME/PROTOCOL.json``: one folder per party, to hand to that party alone (a
    volume of its own in docker-compose.yml). Private inputs and secret keys are mode 0600 in
    folders of mode 0700; ``directory`` is made with mode 0700 when it holds any of them."""
    holds_private = (keys is None and not insecure) or (
        private is None and any(spec.data is not None or spec.csv is not None for spec in parties)
    )
    if holds_private:
        private_dir(directory)
    else:
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
            private_dir(directory / "keys", tighten=True)
            write_keypair(directory / "keys", spec.name)
            lines += [
                f'public_key = "keys/{spec.name}.public"',
                f'secret_key = "keys/{spec.name}.secret"',
            ]
        elif not insecure:
            lines.append(f"public_key = {_toml_value(f'{keys}/{spec.name}.public')}")
        text = spec.csv if spec.csv is not None else None
        if text is None and spec.data is not None:
            text = json.dumps(spec.data)
        suffix = "csv" if spec.csv is not None else "json"
        if text is not None and private is None:
            private_dir(directory / "data", tighten=True)
            write_private(directory / "data" / f"{spec.name}.{suffix}", text)
            lines.append(f'data = "data/{spec.name}.{suffix}"')
        elif text is not None and private is not None:
            folder = private_dir(directory / private / spec.name, tighten=True)
            write_private(folder / f"{protocol}.{suffix}", text)
            named = f"{private.rstrip('/')}/{spec.name}/{protocol}.{suffix}"
            lines.append(f"data = {_toml_value(named)}")
        for key, body in spec.files.items():
            if private is None:
                private_dir(directory / "data", tighten=True)
                write_private(directory / "data" / f"{spec.name}.{key}.csv", body)
                lines.append(f"{key} = {_toml_value(f'data/{spec.name}.{key}.csv')}")
            else:
                folder = private_dir(directory / private / spec.name, tighten=True)
                write_private(folder / f"{protocol}.{key}.csv", body)
                named = f"{private.rstrip('/')}/{spec.name}/{protocol}.{key}.csv"
                lines.append(f"{key} = {_toml_value(named)}")
        if spec.columns:
            lines.append(f"columns = {_toml_value(list(spec.columns))}")
        lines += [f"{key} = {_toml_value(value)}" for key, value in spec.entries.items()]
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
    command: Sequence[str] | None = None,
    placement: Mapping[str, Placement] | None = None,
    forker: Starter | None = None,
) -> LaunchResult:
    """Run a deployment as local processes and collect the reports.

    Each party is started as ``COMMAND ROLE --config FILE --name NAME --report FILE``, where
    ``command`` is by default :data:`PARTY_COMMAND` (the systems' party program,
    ``python -m parties``); a program of one's own gives the command that runs it (it must
    take those arguments and write that report, as :func:`parties.api.party_main` does).
    ``placement`` (party name -> :class:`Placement`, for every party) puts the parties at
    other addresses and starts them under a prefix, e.g. each in its own network namespace.
    ``timeout`` is the per-receive deadline of every party. ``kill = (name, n)`` makes that
    party SIGKILL itself after sending ``n`` messages (fault injection). ``progress`` is
    a callable taking a line of text, or None; the parties' own progress reports go to its
    ``update`` method when it has one (:class:`mpc.runtime.monitor.ProgressLine`: a status line that
    the next one replaces), else to the callable too.

    The deployment goes to a temporary folder (mode 0700), removed when the run ends however
    it ends, or to ``keep``. Called from the main thread, :func:`launch` handles SIGINT and
    SIGTERM while it runs: it kills every party, removes the temporary folder and raises
    :class:`Stopped` (the handlers in place before are restored first).

    With ``forker`` (a :class:`Starter`, e.g. :class:`parties.forker.Forker`: a zygote with
    the party program loaded), the parties of the default command without ``placement``
    are forked from it instead of started as new interpreters, which saves each its imports.
    """
    say = progress or (lambda line: None)
    update = getattr(progress, "update", None) or say
    if keep and keep.exists() and any(keep.iterdir()):
        if not (keep / "deployment.toml").exists():
            raise ConfigError(
                f"--keep {keep}: the directory exists and is not a previous "
                "deployment; give a new or empty directory"
            )
        for old in ("keys", "data", "reports", "logs"):
            shutil.rmtree(keep / old, ignore_errors=True)
    started = time.perf_counter()
    directory: Path | None = None
    killed: int | None = None
    with recorded(STOP_SIGNALS) as signals:
        try:
            if keep:
                directory = private_dir(keep, tighten=True)
            else:
                directory = Path(tempfile.mkdtemp(prefix="mpc-run-"))
            codes, logs, killed = _run_parties(
                directory, protocol, params, parties, timeout=timeout, insecure=insecure,
                kill=kill, say=say, update=update, signals=signals,
                command=list(command) if command is not None else list(PARTY_COMMAND),
                placement=placement, forker=forker,
            )  # fmt: skip
            if not signals:  # (signals only accumulate: if none now, none came before)
                result = _collect(directory, parties, codes, logs, started)
        finally:
            if directory is not None and keep is None:
                shutil.rmtree(directory, ignore_errors=True)
    if signals:
        raise Stopped(signals[0], killed=killed or 0, directory=directory, kept=keep is not None)
    return result


def _run_parties(
    directory: Path,
    protocol: str,
    params: dict[str, Any],
    parties: Sequence[PartySpec],
    *,
    timeout: float,
    insecure: bool,
    kill: tuple[str, int] | None,
    say: Callable[[str], None],
    update: Callable[[str], None],
    signals: list[int],
    command: list[str],
    placement: Mapping[str, Placement] | None = None,
    forker: Starter | None = None,
) -> tuple[dict[str, int | None], dict[str, Path], int]:
    """Write the deployment, start every party, wait for them (or for a stop signal) and
    kill what is left; return the exit codes, the log files and how many were killed.
    ``say`` takes the launcher's own lines, ``update`` the parties' progress reports."""
    procs: dict[str, subprocess.Popen[bytes] | Started] = {}
    if placement is not None or list(command) != list(PARTY_COMMAND):
        forker = None
    logs: dict[str, Path] = {}
    killed = 0
    try:
        endpoints = None
        if placement is not None:
            missing = [spec.name for spec in parties if spec.name not in placement]
            if missing:
                raise ConfigError(f"placement: no place given for {missing}")
            endpoints = [(placement[s.name].endpoint, placement[s.name].bind) for s in parties]
        config = write_deployment(
            directory, protocol, params, parties, timeout=timeout, insecure=insecure,
            endpoints=endpoints,
        )  # fmt: skip
        private_dir(directory / "reports", tighten=True)
        private_dir(directory / "logs", tighten=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for spec in parties:
            if signals:
                break
            prefix = placement[spec.name].prefix if placement is not None else ()
            cmd = [
                *prefix,
                *command,
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
            procs[spec.name] = _start(cmd, logs[spec.name], env, forker)
        if not signals:
            say(f"started {len(procs)} parties ({', '.join(procs)}) in {directory}")
        # Every party ends by itself within its deadlines; this guard only catches a
        # party that misbehaves after the others have failed.
        first_failure: float | None = None
        grace = 2 * timeout + 15
        offsets = dict.fromkeys(logs, 0)
        last_relay = time.perf_counter()
        while not signals and any(p.poll() is None for p in procs.values()):
            forked = [p for p in procs.values() if not isinstance(p, subprocess.Popen)]
            if forker is not None and any(p.poll() is None for p in forked):
                select.select([forker], [], [], 0.05)  # woken as soon as a party ends
            else:
                time.sleep(0.05)
            if time.perf_counter() - last_relay > 1.0:
                last_relay = time.perf_counter()
                _relay_progress(logs, offsets, update)
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
                killed += 1
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return {n: p.returncode for n, p in procs.items()}, logs, killed


def _start(
    cmd: list[str], log: Path, env: dict[str, str], forker: Starter | None
) -> subprocess.Popen[bytes] | Started:
    """One party, in a session of its own, its output to ``log`` (created private): forked
    by ``forker``, or a new process (also when the forker has stopped)."""
    with open_private(log, "wb") as log_file:
        if forker is not None:
            with contextlib.suppress(OSError):
                return forker.spawn(cmd, log=log, env=env)
        return subprocess.Popen(
            cmd, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )  # fmt: skip


def _collect(
    directory: Path,
    parties: Sequence[PartySpec],
    codes: dict[str, int | None],
    logs: dict[str, Path],
    started: float,
) -> LaunchResult:
    """Every party's report (or, for a party that wrote none, why), its log and exit code."""
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
    return LaunchResult(ok, reports, codes, directory, time.perf_counter() - started, log_text)


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
