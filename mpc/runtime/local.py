"""Run several parties in one process over the in-memory transport (tests, debugging).

The shipped path runs each party as its own process over ZeroMQ (see
:mod:`mpc.deployment.launcher`); this module runs *the same protocol code* on
:class:`~mpc.runtime.transport.InMemoryNetwork`. It is the debugging path of a party program: no
sockets, no keys, every party in one event loop, and the first exception raised comes back with its
traceback::

    results, parties = asyncio.run(run_in_memory(["alice", "bob"], my_protocol))
    parties["alice"].ledger.labels()     # what alice learned
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mpc.errors import PeerAborted
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork

__all__ = ["run_in_memory"]

PartyMain = Callable[[Party], Awaitable[Any]]


async def run_in_memory(
    names: Sequence[str],
    program: PartyMain | dict[str, PartyMain],
    *,
    roles: dict[str, str] | None = None,
    timeout: float = 10.0,
    network: InMemoryNetwork | None = None,
) -> tuple[dict[str, Any], dict[str, Party]]:
    """Start one :class:`Party` per name, run ``program(party)`` on each concurrently and
    return ``(results, parties)``. When a party fails, the run fails with its exception (the
    error that ended the run, not a peer's notice that it was aborted)."""
    network = network or InMemoryNetwork()
    parties = {
        n: Party(n, (roles or {}).get(n, "site"), names, network.transport(n), timeout=timeout)
        for n in names
    }
    programs = program if isinstance(program, dict) else {n: program for n in names}

    async def one(name: str) -> Any:
        async with parties[name] as party:
            return await programs[name](party)

    values = await asyncio.gather(*(one(n) for n in names), return_exceptions=True)
    errors = [v for v in values if isinstance(v, BaseException)]
    if errors:  # the party whose failure ended the run, rather than a peer that heard of it
        raise next((e for e in errors if not isinstance(e, PeerAborted)), errors[0])
    return dict(zip(names, values, strict=True)), parties
