"""How a process of the framework stops on SIGINT or SIGTERM: a party process, the launcher of
a local run and the ``mpc`` command alike. :class:`Stopped` carries the signal to where the
process prints one line and exits 128 + its number; :func:`stop_on_signals` turns the
signals into it; :func:`recorded` notes them for a caller that must stop at a point of its
choosing (the launcher, between starting a party and taking note of it)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["STOP_SIGNALS", "Stopped", "recorded", "stop_on_signals"]

#: the signals that stop a run (Ctrl-C, and what ``kill`` or a service manager sends)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(BaseException):
    """The launcher was stopped by a signal (SIGINT or SIGTERM) before its run ended.

    Derived from :class:`BaseException`, as :class:`KeyboardInterrupt` is, so that no
    ``except Exception`` on the way up swallows it. :func:`mpc.deployment.launcher.launch` raises it
    once its parties are killed and its temporary deployment is removed; ``str()`` is the line to
    show and :attr:`exit_code` the conventional exit code (128 + the signal number: 130 for SIGINT,
    143 for SIGTERM).
    """

    def __init__(
        self,
        signum: int,
        *,
        killed: int | None = None,
        directory: Path | None = None,
        kept: bool = False,
    ) -> None:
        self.signum = signum
        self.killed = killed
        self.directory = directory
        self.kept = kept
        super().__init__(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        text = f"stopped by {_signal_name(self.signum)}"
        if self.killed is None:
            return text
        text += f": {self.killed} {'party' if self.killed == 1 else 'parties'} killed"
        if self.directory is not None:
            text += (
                f", the deployment kept in {self.directory}"
                if self.kept
                else f", {self.directory} removed with its keys and private inputs"
            )
        return text


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise :class:`Stopped` (rather than
    :class:`KeyboardInterrupt` with its traceback, or an exit that skips every ``finally``).
    :func:`mpc.deployment.launcher.launch` inside the block takes them over while its parties run.
    Signals the process was told to ignore stay ignored.

    Once the block is stopped, further SIGINT and SIGTERM are ignored (a Ctrl-C pressed
    again while the run is being cleaned up must not cut the cleanup short or end the
    process by the signal); the handlers in place before come back only when the block ends
    without :class:`Stopped`."""

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (see _handlers)
        return
    handled = [s for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]

    def stop(signum: int, frame: object) -> None:
        for s in handled:
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in handled}
    stopped = False
    try:
        yield
    except Stopped:
        stopped = True
        for s in handled:
            signal.signal(s, signal.SIG_IGN)
        raise
    finally:
        if not stopped:
            for s, old in previous.items():
                signal.signal(s, old if old is not None else signal.SIG_DFL)


@contextlib.contextmanager
def recorded(signums: Sequence[signal.Signals]) -> Iterator[list[int]]:
    """While the block runs, the signals ``signums`` are recorded in the list it yields
    rather than acted on, so that the launcher stops at a point of its choosing (never between
    starting a party and taking note of it). Outside the main thread (where Python cannot set
    handlers) nothing is recorded."""
    got: list[int] = []

    def record(signum: int, frame: object) -> None:
        got.append(signum)

    with _handlers(record, signums):
        yield got


@contextlib.contextmanager
def _handlers(
    handler: Callable[[int, Any], None], signums: Sequence[signal.Signals] = STOP_SIGNALS
) -> Iterator[None]:
    """``handler`` for ``signums`` while the block runs, the previous handlers after it. Only
    in the main thread (the only one Python lets set handlers), and never for a signal the
    process was told to ignore (a shell's background job ignores SIGINT), as Python does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = [s for s in signums if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, handler) for s in handled}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)
