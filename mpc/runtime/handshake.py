"""The startup handshake of a :class:`~mpc.runtime.party.Party`, and the restart of a peer.

Every party sends HELLO (the protocol version, its name and role, a fresh random
*incarnation*, the digest of the deployment it runs) to every peer and waits, at most one
deadline, for all of theirs, never a sleep. A HELLO of another version or deployment ends
the run naming what differs. A HELLO from a peer with a new incarnation after the handshake
means the peer was restarted and lost what it held in memory: the run fails with
:class:`~mpc.errors.PeerLost` naming it, unless this party declared with
:meth:`Handshake.expect_restarts` that the peer keeps its state elsewhere.

:class:`Handshake` is part of :class:`~mpc.runtime.party.Party`, which sets the attributes
below.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mpc.errors import ConfigError, MPCError, PeerLost, PeerTimeout, ProtocolError
from mpc.runtime.codec import PROTOCOL_VERSION
from mpc.runtime.config import AGREEMENT_SECTIONS
from mpc.runtime.metrics import Metrics
from mpc.runtime.transport import Transport

__all__ = ["Handshake"]

log = logging.getLogger("mpc.runtime.party")


class Handshake:
    """HELLO in and out, and restarts (part of :class:`~mpc.runtime.party.Party`)."""

    name: str
    role: str
    peers: list[str]
    timeout: float
    metrics: Metrics
    peer_roles: dict[str, str]
    _transport: Transport
    _agreement: dict[str, str] | None
    _incarnation: str
    _hello: dict[str, dict[str, Any]]
    _hello_event: asyncio.Event
    _restartable: dict[str, Callable[[], Awaitable[None]]]
    _failure: MPCError | None
    _step: str

    async def _send_raw(self, peer: str, kind: str, tag: str, obj: Any, *, count: bool) -> None:
        raise NotImplementedError  # Party's

    def _check_peer(self, peer: str) -> None:
        raise NotImplementedError  # Party's

    def _set_failure(self, err: MPCError) -> None:
        raise NotImplementedError  # Party's

    async def _fail(self, exc: BaseException) -> None:
        raise NotImplementedError  # Party's

    def _background_task(self, coro: Awaitable[None]) -> None:
        raise NotImplementedError  # Party's

    def expect_restarts(self, peer: str, on_restart: Callable[[], Awaitable[None]]) -> None:
        """Let ``peer`` be restarted during the run: it keeps what matters in durable storage
        (the CDBS's database), so a new process of it can take over.

        While ``peer`` is gone this party waits for it instead of failing when the
        connection drops (every receive keeps its deadline, so a peer that never comes back
        still ends the run with :class:`~mpc.errors.PeerTimeout`). When the new process
        says HELLO, this party answers it and awaits ``on_restart()``, which should send
        again whatever the old process received but never answered.
        """
        self._check_peer(peer)
        self._restartable[peer] = on_restart

    def _hello_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "version": PROTOCOL_VERSION,
            "name": self.name,
            "role": self.role,
            "incarnation": self._incarnation,
        }
        if self._agreement is not None:
            body["agreement"] = self._agreement
        return body

    async def _handshake(self) -> None:
        self._step = "startup handshake"
        hello = self._hello_body()
        for peer in self.peers:
            await self._send_raw(peer, "hello", "hello", hello, count=False)
        try:
            await asyncio.wait_for(self._hello_event.wait(), self.timeout)
        except TimeoutError:
            missing = [p for p in self.peers if p not in self._hello]
            detail = "; ".join(self._transport.describe_peer(p) for p in missing)
            raise PeerTimeout(
                f"{self.name}: startup handshake: no HELLO from {', '.join(missing)} within "
                f"{self.timeout:g}s; is it running and reachable, with the key the deployment "
                f"file names? ({detail})",
                peer=missing[0],
                step="startup handshake",
            ) from None
        if self._failure is not None:
            raise self._failure
        self._step = "ready"

    def _on_hello(self, sender: str, body: Any) -> None:
        version = body.get("version") if isinstance(body, dict) else body
        if not isinstance(body, dict) or type(version) is not int or version != PROTOCOL_VERSION:
            self._set_failure(
                ProtocolError(
                    f"{self.name}: {sender} speaks protocol version {str(version)[:40]}, "
                    f"this party speaks {PROTOCOL_VERSION}; run the same release everywhere"
                )
            )
            return
        if type(body.get("incarnation")) not in (str, type(None)):
            self.metrics.reject(f"{sender}: a HELLO whose incarnation is not a str")
            return
        if self._agreement is not None and body.get("agreement") != self._agreement:
            self._set_failure(self._disagreement(sender, body.get("agreement")))
            return
        previous = self._hello.get(sender)
        if previous is not None and previous.get("incarnation") != body.get("incarnation"):
            self._on_restart(sender, body)
            return
        self._hello[sender] = body
        self.peer_roles[sender] = str(body.get("role", ""))
        if all(p in self._hello for p in self.peers):
            self._hello_event.set()

    def _disagreement(self, sender: str, theirs: Any) -> ConfigError:
        """The error of a peer whose deployment differs from this party's (its HELLO's
        ``agreement``, :func:`mpc.runtime.config.agreement`)."""
        mine = self._agreement or {}
        theirs = theirs if isinstance(theirs, dict) else {}
        differ = [s for s in AGREEMENT_SECTIONS if theirs.get(s) != mine.get(s)]
        what = "; ".join(AGREEMENT_SECTIONS[s] for s in differ) or "its deployment"
        release = (
            f" (release {theirs.get('release')} there, {mine.get('release')} here)"
            if "release" in differ
            else ""
        )
        message = (
            f"{self.name}: {sender} runs a different deployment: {what} differ{release}; "
            "every party must run the same release with the same deployment file"
        )
        return ConfigError(message, public=message)  # names parties and sections, no data

    def _on_restart(self, sender: str, body: dict[str, Any]) -> None:
        """A new process of ``sender`` said HELLO: carry on with it if it may restart, else
        the run is over (the old process's state is gone)."""
        on_restart = self._restartable.get(sender)
        if on_restart is None:
            err = PeerLost(
                f"{self.name}: {sender} was restarted (a new process said HELLO at step "
                f"{self._step!r}) and lost the state of this run; start the run again",
                peer=sender,
                step=self._step,
            )
            log.error("%s", err)
            self._set_failure(err)
            self._background_task(self._fail(err))
            return
        log.warning("%s: %s was restarted; carrying on with the new process", self.name, sender)
        self._hello[sender] = body

        async def resume() -> None:
            await self._send_raw(sender, "hello", "hello", self._hello_body(), count=False)
            await on_restart()

        self._background_task(resume())
