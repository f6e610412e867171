"""Fault injection for tests and demos: a party that, once it has sent a number of protocol
messages, dies (SIGKILL), freezes (SIGSTOP) or computes for a while without yielding.

``python -m parties ROLE ... --kill-after N`` / ``--stop-after N`` / ``--compute-after N
--compute-for S`` (and ``mpc run --kill PARTY --after N``) build a :class:`Fault`; the
runtime calls :func:`inject` after the party's N-th protocol message.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass
from typing import Literal

from mpc.runtime.transport import Transport

__all__ = ["FAULT_FLUSH_S", "Fault", "inject"]

log = logging.getLogger("mpc.runtime.party")

#: Fault injection flushes the messages a party has sent before it kills itself, so a
#: "kill after N messages" is exactly that, not a race with the I/O thread.
FAULT_FLUSH_S = 2.0


@dataclass(frozen=True)
class Fault:
    """Fault injection, once this party has sent ``after`` protocol messages: ``"kill"``
    flushes them and SIGKILLs the process; ``"stop"`` SIGSTOPs it (a party frozen at a known
    point of the protocol, to be resumed with SIGCONT); ``"compute"`` computes for
    ``seconds`` on the event loop without ever yielding, as numpy on a large table does,
    then goes on (a party busy, not dead)."""

    after: int
    action: Literal["kill", "stop", "compute"] = "kill"
    seconds: float = 0.0


def compute(seconds: float) -> None:
    """CPU-bound work for ``seconds`` that never yields to the event loop."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))


async def inject(fault: Fault, name: str, transport: Transport, sent: int) -> None:
    """Do ``fault`` to party ``name`` after its ``sent``-th message: compute, then return;
    SIGSTOP the process where it stands (its sockets stay open, so SIGCONT lets it go on);
    or flush what was sent so far, then SIGKILL it."""
    if fault.action == "compute":
        log.warning(
            "%s: fault injection: computing for %g s after %d messages", name, fault.seconds, sent
        )
        compute(fault.seconds)
        return
    verb = "killing" if fault.action == "kill" else "stopping"
    log.error("%s: fault injection: %s this process after %d messages", name, verb, sent)
    if fault.action == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    await transport.close(linger_s=FAULT_FLUSH_S)
    os.kill(os.getpid(), signal.SIGKILL)
