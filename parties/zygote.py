"""``python -m parties.zygote``: a process with the party program loaded that forks parties
on request (the other end of :class:`parties.forker.Forker`, which ``mpc run`` uses).

It is a new interpreter, started as ``python -m parties`` is, with the modules of
``python -m parties`` and every system's party program loaded and nothing else: no launcher
code, no table, no key. A party forked from it is what ``python -m parties ARGS`` would be
after its imports: its own process, in a session of its own, its log file as standard output
and error, its environment as the launcher gives it, named ``mpc NAME`` (``ps -e``, ``top``);
it reads its own deployment file, key and input and talks to the others over TCP only.

Requests come on standard input, one JSON line each: ``{"argv": [...], "log": FILE, "env":
{...}}`` (``argv`` as after ``python -m parties``; ``log`` must exist). Replies go to
standard output: ``{"pid": PID}`` once a party is forked, ``{"exited": PID, "code": CODE}``
when it ends (a pidfd per party says so; ``CODE`` as :attr:`subprocess.Popen.returncode`).
The zygote ends when its input closes and its last party has ended.
"""

import os
import sys

# One BLAS thread per party, before numpy loads, as parties/__main__.py sets it.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import parties.programs.registry  # noqa: E402, F401  (every system's program, loaded once)
from parties.process import run_process  # noqa: E402


def serve(requests: int, replies: int) -> int:
    """Fork a party per request; report each party's pid and, when it ends, its code."""
    children: dict[int, int] = {}  # pidfd -> pid
    open_requests = True
    pending = b""

    def reply(doc: dict[str, Any]) -> None:
        os.write(replies, json.dumps(doc).encode() + b"\n")

    while open_requests or children:
        watch = [*children, *([requests] if open_requests else [])]
        ready, _, _ = select.select(watch, [], [])
        for fd in ready:
            if fd == requests:
                chunk = os.read(requests, 65536)
                if not chunk:
                    open_requests = False
                    continue
                pending += chunk
                while b"\n" in pending:
                    line, _, pending = pending.partition(b"\n")
                    pid = _fork_party(json.loads(line))
                    children[os.pidfd_open(pid)] = pid
                    reply({"pid": pid})
            else:
                pid = children.pop(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                reply({"exited": pid, "code": os.waitstatus_to_exitcode(status)})
    return 0


def _fork_party(request: dict[str, Any]) -> int:
    """Fork one party; the child runs ``python -m parties`` with the request's arguments and
    leaves with its exit code."""
    for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
        stream.flush()
    pid = os.fork()
    if pid != 0:
        return pid
    code = 1
    try:
        os.setsid()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.closerange(3, _max_fd())  # the zygote's pipes and pidfds are not the party's
        # Fresh streams over fds 1 and 2, unbuffered as the launcher's PYTHONUNBUFFERED asks.
        sys.stdout = _text_stream(1)
        sys.stderr = _text_stream(2)
        for handler in list(logging.root.handlers):  # the party sets up its own logging
            logging.root.removeHandler(handler)
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [sys.executable, *request["argv"]]
        _name_process(request["argv"])
        code = run_process()
    except SystemExit as exc:  # what the interpreter makes of sys.exit()
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:  # what the interpreter prints for an uncaught exception
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _text_stream(fd: int) -> io.TextIOWrapper:
    return io.TextIOWrapper(
        io.FileIO(fd, "w", closefd=False), line_buffering=True, write_through=True,
        errors="backslashreplace",
    )  # fmt: skip


def _name_process(argv: Sequence[str]) -> None:
    """Name the party's process ``mpc NAME`` (what ``ps -e``, ``top`` and ``/proc/PID/comm``
    show; its command line stays the zygote's)."""
    if "--name" in argv[:-1]:
        with contextlib.suppress(OSError):
            Path("/proc/self/comm").write_text(f"mpc {argv[argv.index('--name') + 1]}"[:15])


def _max_fd() -> int:
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (OSError, ValueError):
        return 1024


if __name__ == "__main__":
    # (its parties have ended, and it holds nothing to clean up: it leaves at once, without
    # the interpreter's teardown, which the launcher would otherwise wait for)
    sys.stdout.flush()
    os._exit(serve(0, 1))
