"""Who deals the correlated randomness of PPID3's level driver (:mod:`protocols.ppid3.levels`),
and the dealing itself.

Every product between two sites ``a`` and ``b`` of the level driver (an outer product, a dot
product with its oblivious transfer, the permuted opening of an owner's counts) uses
correlated randomness from a party that is neither ``a`` nor ``b``, or, with ``"ot"``, made
by ``a`` and ``b`` themselves. Three ways (``helper``):

* ``"dealer"``: a commodity server, the ``dealer`` party, deals for every product
  (:func:`serve_level_dealer`). Trust: it colludes with no site.
* ``"sites"`` (``k >= 3``): no outside party. The product between ``a`` and ``b`` is dealt by
  the site :func:`third_site` names, never ``a`` or ``b``; each site serves the requests
  addressed to it (:func:`serve_level_helper`) in an asyncio task beside its own PPID3
  program (:func:`run_beside`), under tags of their own. Trust: semi-honest sites, no two
  colluding (an honest majority among the sites).
* ``"ot"`` (``k >= 2``): no one deals; the two sites of each product make the same
  randomness by oblivious transfer (:class:`protocols.ppid3.level_ot.OTDealing`, a subclass of
  :class:`Dealing` with the same ``ask``/``receive``/``close``). Trust: semi-honest sites.

Requests are numbered per (requesting site, dealing party) pair (``levels/req/<n>``) and served
in order; each site ends with ``done`` to every party it may ask (:meth:`Dealing.close`).

What the dealing party sees (its ledger: ``fast-counts/request`` for the dealer,
``fast-counts/helped`` for a helping site, each request as received, its ``tag`` as the entry's
step; ``fast-counts/done`` for each site's closing message): the two sites of each product
(``site``, ``peer``), the kind, the shape (rows, nodes or children of the batch, classes), the
fan-out of each parent in an outer product (``parents``), the numbers of values of the
owner's attributes in a dot product (``blocks``) and the number of classes (``p``); and that
a mask seed (of the owner's ``X^T + Ra``) or the class site's permutations for one owner came
with a request (``withheld``: named, never copied). It sends only randomness of its own and
receives no row, share or count. Why a helping site learns nothing from this that it did not
hold in PPID3 is argued in :mod:`protocols.ppid3.levels` ("The helping sites").
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array
from mpc.runtime.party import Party
from protocols.ppid3.fast_counts import DEALER, DEALT, deal_permuted_open, serve_dealer_requests
from protocols.ppid3.share_ring import (
    Left,
    expand_blocks,
    outer_product,
    ring_left,
    ring_matmul,
    ring_random,
)

__all__ = [
    "DEALER",
    "HELPERS",
    "Dealing",
    "requesters_of",
    "run_beside",
    "serve_level_dealer",
    "serve_level_helper",
    "third_site",
]

#: who deals: a third site of each product (``sites``, k >= 3), the commodity server, or the
#: two sites of each product themselves by oblivious transfer (``ot``,
#: :mod:`protocols.ppid3.level_ot`)
HELPERS = ("sites", "dealer", "ot")
#: the tag prefix of a site's numbered requests to a dealing party
REQUESTS = "levels/req"

T = TypeVar("T")
S = TypeVar("S")


def third_site(a: str, b: str, sites: Sequence[str]) -> str:
    """The site that deals a product between sites ``a`` and ``b`` (``--helper sites``): with
    ``i``, ``j`` their positions among the ``k`` sites, the first of ``(i + j) mod k``,
    ``(i + j + 1) mod k``, ... that is neither. Never ``a`` or ``b``; public, since every site
    applies the same rule; with three sites, the third; with more, the pairs spread over
    the sites (the class site's many products do not all land on one helper)."""
    names = list(sites)
    if a == b or a not in names or b not in names:
        raise ConfigError(f"no third site for a product between {a!r} and {b!r} of {names}")
    k = len(names)
    if k < 3:
        raise ConfigError(f"--helper sites needs at least 3 sites (a third site deals each "
                          f"product between two), got {k}: use --helper dealer")  # fmt: skip
    start = names.index(a) + names.index(b)
    for step in range(k):
        candidate = names[(start + step) % k]
        if candidate not in (a, b):
            return candidate
    raise AssertionError("unreachable: k >= 3 sites hold a third")


def requesters_of(me: str, sites: Sequence[str]) -> list[str]:
    """The sites that may ask ``me`` to deal (``--helper sites``): those with a product
    partner for which :func:`third_site` names ``me``."""
    return [s for s in sites if s != me and any(
        x not in (s, me) and third_site(s, x, sites) == me for x in sites)]  # fmt: skip


class Dealing:
    """Who deals each product of this site, and its numbered requests to them: the
    ``dealer`` for every product (``helper="dealer"``), or :func:`third_site` of the product's
    two sites (``helper="sites"``). ``party`` is the site view whose ``parties`` are the
    sites."""

    def __init__(self, party: Party, helper: str, *, dealer: str = DEALER) -> None:
        if helper not in HELPERS:
            raise ConfigError(f"helper must be one of {list(HELPERS)}, got {helper!r}")
        if helper == "ot" and type(self) is Dealing:
            raise ConfigError(
                "helper 'ot' needs its OT sessions: use protocols.ppid3.level_ot.ot_dealing"
            )
        self.party, self.helper, self.dealer = party, helper, dealer
        self.sites = list(party.parties)
        if helper == "sites":
            third_site(self.sites[0], self.sites[1], self.sites)  # k >= 3, or a clear error
        self._next: dict[str, int] = {}

    def of(self, a: str, b: str) -> str:
        """The party that deals the product between sites ``a`` and ``b``."""
        return self.dealer if self.helper == "dealer" else third_site(a, b, self.sites)

    def asked(self) -> list[str]:
        """Every party this site may ask for randomness (and tells ``done`` at the end)."""
        if self.helper == "dealer":
            return [self.dealer]
        me = self.party.name
        return sorted({self.of(me, x) for x in self.sites if x != me}, key=self.sites.index)

    async def ask(self, request: Any) -> None:
        """Send ``request`` (a dict naming the product's other site as ``peer``) to the party
        that deals it, numbered in order per dealing party."""
        to = self.of(self.party.name, request["peer"])
        n = self._next.get(to, 0)
        self._next[to] = n + 1  # before the await: products running side by side share it
        await self.party.send(to, f"{REQUESTS}/{n}", request)

    async def receive(self, peer: str, tag: str) -> Any:
        """This site's correlated randomness for the product ``tag`` with site ``peer``, as the
        party that deals it sent it."""
        return await self.party.recv(self.of(self.party.name, peer), f"{tag}/dealer", DEALT)

    async def close(self) -> None:
        """Tell every party this site may ask that it is done."""
        for to in self.asked():
            n = self._next.get(to, 0)
            self._next[to] = n + 1
            await self.party.send(to, f"{REQUESTS}/{n}", "done")


def _level_handler(party: Party, dtype: Any, who: str) -> Any:
    """The dealing of one request (``outer``, ``xdot`` or ``perm``), for the dealer and for a
    helping site alike; ``who`` names the dealing role in error messages."""
    contexts: dict[tuple[str, str], Left] = {}  # (owner, holder) -> its Ra, prepared

    async def handle(
        site: str, kind: str, peer: str, tag: str, shape: list[int], req: dict[str, Any]
    ) -> None:
        if kind == "outer" and len(shape) == 4:
            rows, v, cols, p = shape
            parents = req.get("parents")
            if not (
                isinstance(parents, list)
                and len(parents) == v
                and all(isinstance(i, int) and 0 <= i < cols // p for i in parents)
            ):
                raise ProtocolError(f"{site} sent {who} bad parent indices")
            seed_a, seed_r, seed_b = (secrets.token_bytes(32) for _ in range(3))
            Ra = ring_random(seed_a, (v, rows), dtype)
            ra = ring_random(seed_r, (v, p, rows), dtype)
            Rb = ring_random(seed_b, (cols, rows), dtype)
            rb = outer_product(Ra, Rb, np.asarray(parents, np.int64), p)
            rb -= ra
            await party.send(site, f"{tag}/dealer", {"seed": seed_a, "seed2": seed_r})
            await party.send(peer, f"{tag}/dealer", {"seed": seed_b, "r": pack_array(rb)})
        elif kind == "xdot" and len(shape) == 3:
            m, rows, cols = shape
            blocks, n_cls = req.get("blocks"), req.get("p")  # rows per attribute; classes
            if not (
                isinstance(blocks, list)
                and all(isinstance(b, int) for b in blocks)
                and sum(blocks) == m
                and isinstance(n_cls, int)
                and n_cls >= 1
                and cols % n_cls == 0
            ):
                raise ProtocolError(f"{site} sent {who} bad xdot blocks")
            if isinstance(req.get("seed"), bytes):
                contexts[(site, peer)] = ring_left(ring_random(req["seed"], (m, rows), dtype))
            Ra_left = contexts.get((site, peer))
            if Ra_left is None:
                raise ProtocolError(f"{site} used a context with {peer} it never opened")
            seed_b, seed_r, seed_ot = (secrets.token_bytes(32) for _ in range(3))
            Rb = ring_random(seed_b, (cols, rows), dtype)
            ra = ring_random(seed_r, (m, cols), dtype)
            rb = ring_matmul(Ra_left, Rb.T) - ra
            # Beaver's OT precomputation: the holder gets R0, R1; the owner c and R_c
            R0R1 = ring_random(seed_ot, (2, m, cols), dtype)
            c = np.frombuffer(secrets.token_bytes(len(blocks) * (cols // n_cls)), np.uint8)
            c = (c & 1).astype(bool).reshape(len(blocks), cols // n_cls)
            Rc = np.where(expand_blocks(c, blocks, n_cls), R0R1[1], R0R1[0])
            await party.send(
                site, f"{tag}/dealer", {"seed": seed_r, "c": pack_array(c), "Rc": pack_array(Rc)}
            )
            await party.send(
                peer, f"{tag}/dealer", {"seed": seed_b, "r": pack_array(rb), "ot": seed_ot}
            )
        elif kind == "perm" and len(shape) == 3:
            await deal_permuted_open(party, site, peer, tag, shape, req, dtype)
        else:
            raise ProtocolError(f"{site} asked {who} for {kind!r} of shape {shape}")

    return handle


async def serve_level_dealer(party: Party, sites: Sequence[str], *, dtype: Any) -> int:
    """The dealer (``helper="dealer"``): serve every site's numbered requests until each says
    ``done``. ``outer``: correlated randomness for an outer product; ``xdot``: for an owner's
    dot products and the oblivious transfer of the holder's share; ``perm``: for the permuted
    opening of an owner's counts. Returns the number of products dealt. It receives shapes,
    fan-outs, domain sizes, seeds of masks and the class permutations, never data."""
    handle = _level_handler(party, dtype, "the dealer")
    return await serve_dealer_requests(party, sites, REQUESTS, handle)


async def serve_level_helper(party: Party, sites: Sequence[str], *, dtype: Any) -> int:
    """A helping site (``helper="sites"``): serve the requests of every site that may ask this
    one (:func:`requesters_of`) until each says ``done``, refusing a product this site is not
    the :func:`third_site` of (one of its own, say). Each request goes on this site's ledger
    as ``fast-counts/helped``. Returns the number of products dealt."""
    me = party.name
    deal = _level_handler(party, dtype, f"the helping site {me}")

    async def handle(
        site: str, kind: str, peer: str, tag: str, shape: list[int], req: dict[str, Any]
    ) -> None:
        if third_site(site, peer, sites) != me:
            raise ProtocolError(
                f"{site} asked {me} to deal a product with {peer}; the rule names "
                f"{third_site(site, peer, sites)}"
            )
        await deal(site, kind, peer, tag, shape, req)

    return await serve_dealer_requests(
        party, sites, REQUESTS, handle, serve=requesters_of(me, sites), label="fast-counts/helped"
    )


async def run_beside(main: Coroutine[Any, Any, T], service: Coroutine[Any, Any, S]) -> tuple[T, S]:
    """Run ``main`` (a site's own program) and ``service`` (its dealing for the others) side
    by side until both end; returns both results. The first to fail cancels the other and
    its error is raised, so a failure in either ends the site at once."""
    first, second = asyncio.ensure_future(main), asyncio.ensure_future(service)
    tasks: list[asyncio.Future[Any]] = [first, second]
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                err = task.exception()
                if err is not None:
                    raise err
        return first.result(), second.result()
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
