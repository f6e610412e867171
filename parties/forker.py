"""Start the parties of a local run by forking, not by starting a new interpreter each.

A party started as ``python -m parties ...`` spends most of a small run importing: about
0.2-0.3 s of CPU per process with compiled bytecode (0.5 s without), and three or four of
them share two cores. :class:`Forker` pays that once per run: ``mpc run`` starts a *zygote*,
``python -m parties.zygote`` (:mod:`parties.zygote`), before it reads any table or writes any
key; the zygote loads the party program while the launcher prepares the deployment, then
forks each party from that loaded, clean process. A forked party is what ``python -m
parties ARGS`` is after its imports: its own process, in its own session, with its log as
standard output and error, holding nothing but the party program until it reads its own
deployment file, key and input; it talks to the others over TCP only.

The launcher writes requests to the zygote's standard input and reads replies from its
standard output (one JSON line each; see :mod:`parties.zygote`). A :class:`ForkedParty`
offers what the launcher uses of :class:`subprocess.Popen`: ``pid``, ``poll()``, ``wait()``
and ``returncode``.

Only Linux has what the zygote needs (:func:`os.fork` and :func:`os.pidfd_open`); elsewhere,
or with ``MPC_PARTY_START=exec`` in the environment, :meth:`Forker.start` returns None and
the parties start as new interpreters.

The ``mpc`` command starts the zygote of ``mpc run`` first of all (:func:`start_early`,
before its own imports, so that the two processes load their modules at once on two
cores); :func:`forker` then hands that one to the run. This module needs only the standard
library, so that importing it costs nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ZYGOTE_COMMAND", "ForkedParty", "Forker", "forker", "start_early"]

#: ``MPC_PARTY_START=exec``: start every party as a new interpreter, as deployments do
START_VARIABLE = "MPC_PARTY_START"

#: the zygote (:mod:`parties.zygote`)
ZYGOTE_COMMAND = (sys.executable, "-m", "parties.zygote")


class Forker:
    """The launcher's end of a zygote (see the module docstring)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self.pid = process.pid
        self._requests = process.stdin.fileno()
        self._replies = process.stdout.fileno()
        self._pending = b""
        self._codes: dict[int, int] = {}
        self._pids: list[int] = []
        self._gone = False
        self._closed = False

    @classmethod
    def start(cls) -> Forker | None:
        """Start the zygote now (before reading anything private), or None where forking is
        not available or ``MPC_PARTY_START=exec`` asks for new interpreters."""
        if os.environ.get(START_VARIABLE, "fork") == "exec":
            return None
        if not hasattr(os, "fork") or not hasattr(os, "pidfd_open"):
            return None
        process = subprocess.Popen(
            ZYGOTE_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            start_new_session=True, bufsize=0,
        )  # fmt: skip
        return cls(process)

    def spawn(self, argv: Sequence[str], *, log: Path, env: Mapping[str, str]) -> ForkedParty:
        """Start one party: ``argv`` as it would be given to ``exec`` (``[python, "-m",
        "parties", ...]``), its standard output and error appended to ``log`` (which must
        exist), ``env`` its environment."""
        if list(argv[1:3]) != ["-m", "parties"]:
            raise ValueError(f"the zygote runs `python -m parties ...`, not {list(argv)}")
        if self._gone:
            raise OSError("the zygote that starts the parties has stopped")
        line = json.dumps({"argv": list(argv[3:]), "log": str(log), "env": dict(env)})
        os.write(self._requests, line.encode() + b"\n")
        while True:
            reply = self._read(block=True)
            if reply is None:
                raise OSError("the zygote that starts the parties has stopped")
            if "pid" in reply:
                self._pids.append(int(reply["pid"]))
                return ForkedParty(self, int(reply["pid"]))

    def fileno(self) -> int:
        """The zygote's replies: readable when a party has ended (or started)."""
        return self._replies

    def code(self, pid: int, *, block: bool) -> int | None:
        """The exit code of party ``pid`` (as :attr:`subprocess.Popen.returncode`), or None
        while it runs; ``block`` waits for it."""
        while pid not in self._codes:
            if self._read(block=block) is None and not block:
                return None
        return self._codes[pid]

    def _read(self, *, block: bool) -> dict[str, Any] | None:
        """The next reply (exit reports are filed as they come), or None when no whole line
        is there without blocking. A zygote that has gone leaves its parties without a
        code: they are killed and given -SIGKILL."""
        while b"\n" not in self._pending:
            if self._gone or (not block and not select.select([self._replies], [], [], 0)[0]):
                return None
            chunk = os.read(self._replies, 65536)
            if not chunk:
                self._orphaned()
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        if "exited" in reply:
            self._codes[int(reply["exited"])] = int(reply["code"])
        return reply

    def _orphaned(self) -> None:
        """The zygote has gone (killed): stop the parties it left and give them -SIGKILL."""
        self._gone = True
        for pid in self._pids:
            if pid not in self._codes:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                self._codes[pid] = -signal.SIGKILL

    def close(self) -> None:
        """No more parties: the zygote ends once its parties have; wait for it."""
        if self._closed:
            return
        self._closed = True
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()
        while self._read(block=True) is not None:
            pass
        self._process.stdout.close()
        self._process.wait()


class ForkedParty:
    """A party forked by the zygote: what the launcher uses of :class:`subprocess.Popen`."""

    def __init__(self, forker: Forker, pid: int) -> None:
        self._forker = forker
        self.pid = pid

    @property
    def returncode(self) -> int | None:
        return self._forker.code(self.pid, block=False)

    def poll(self) -> int | None:
        return self._forker.code(self.pid, block=False)

    def wait(self) -> int:
        code = self._forker.code(self.pid, block=True)
        assert code is not None
        return code


#: the zygote :func:`start_early` started, until :func:`forker` takes it
_early: list[Forker] = []


def start_early(argv: Sequence[str]) -> None:
    """For ``mpc run SYSTEM ...`` (``argv`` as after ``mpc``), start the zygote now, for
    :func:`forker` to use; nothing for any other command, or for ``--help``."""
    if argv[:1] == ["run"] and len(argv) > 1 and not {"-h", "--help"} & set(argv):
        started = Forker.start()
        if started is not None:
            _early.append(started)


@contextlib.contextmanager
def forker() -> Iterator[Forker | None]:
    """The zygote :func:`start_early` started, else :meth:`Forker.start`; closed (and
    waited for) when the block ends."""
    started = _early.pop() if _early else Forker.start()
    try:
        yield started
    finally:
        if started is not None:
            started.close()
