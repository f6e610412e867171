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
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import numpy as np

from mpc.crypto import randomness
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from protocols.engine.ring import Left, Ring
from protocols.ppid3.fast_counts import (
    DEALER,
    DEALT,
    MASKED,
    deal_permuted_open,
    open_permuted_class_site,
    open_permuted_owner,
    serve_dealer_requests,
)
from protocols.ppid3.level_arrays import dealt, expand_blocks, outer_product, outer_shares
from protocols.primitives.secure_comparison import Needs, deal_pool

__all__ = [
    "DEALER",
    "DEALER_HELPER",
    "SITES_HELPER",
    "Dealing",
    "Helper",
    "Rule",
    "requesters_of",
    "run_beside",
    "serve_level_dealer",
    "serve_level_helper",
    "third_site",
]

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


#: the rule that names the site dealing a product between two sites: ``rule(a, b, sites)``
Rule = Callable[[str, str, Sequence[str]], str]


def requesters_of(me: str, sites: Sequence[str], rule: Rule = third_site) -> list[str]:
    """The sites that may ask ``me`` to deal (``--helper sites``): those with a product
    partner for which ``rule`` (:func:`third_site`) names ``me``."""
    return [s for s in sites if s != me and any(
        x not in (s, me) and rule(s, x, sites) == me for x in sites)]  # fmt: skip


class Dealing:
    """Who deals each product of this site, and its numbered requests to them: the
    ``dealer`` for every product (``helper="dealer"``), or the site ``rule`` names for the
    product's two sites (``helper="sites"``, :func:`third_site` by default). ``party`` is the
    site view whose ``parties`` are the sites; ``requests`` the tag prefix of the numbered
    requests (one per dealing of a run: training, classification)."""

    def __init__(
        self, party: Party, helper: str, *, dealer: str = DEALER, rule: Rule = third_site,
        requests: str = REQUESTS,
    ) -> None:  # fmt: skip
        if helper not in ("dealer", "sites") and type(self) is Dealing:
            raise ConfigError(
                f"a dealing of dealt randomness is by 'dealer' or 'sites', got {helper!r}"
            )
        if helper == "ot" and type(self) is Dealing:
            raise ConfigError(
                "helper 'ot' needs its OT sessions: use protocols.ppid3.level_ot.ot_dealing"
            )
        self.party, self.helper, self.dealer, self.rule = party, helper, dealer, rule
        self.requests = requests
        self.sites = list(party.parties)
        if helper == "sites":
            rule(self.sites[0], self.sites[1], self.sites)  # k >= 3, or a clear error
        self._next: dict[str, int] = {}

    def of(self, a: str, b: str) -> str:
        """The party that deals the product between sites ``a`` and ``b``."""
        return self.dealer if self.helper == "dealer" else self.rule(a, b, self.sites)

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
        await self.party.send(to, f"{self.requests}/{n}", request)

    async def receive(self, peer: str, tag: str) -> Any:
        """This site's correlated randomness for the product ``tag`` with site ``peer``, as the
        party that deals it sent it."""
        return await self.party.recv(self.of(self.party.name, peer), f"{tag}/dealer", DEALT)

    async def close(self) -> None:
        """Tell every party this site may ask that it is done."""
        for to in self.asked():
            n = self._next.get(to, 0)
            self._next[to] = n + 1
            await self.party.send(to, f"{self.requests}/{n}", "done")

    # ----------------------------------------------------------------- the products

    #: whether the pair computes the owners' dot products itself (:meth:`dot_owner`,
    #: :meth:`dot_holder`) instead of with dealt randomness
    direct_products = False

    async def outer_product(
        self,
        x: np.ndarray,
        *,
        a_side: str,
        b_side: str,
        parents: np.ndarray,
        p: int,
        tag: str,
        derived: np.ndarray | None = None,
    ) -> np.ndarray:
        """This site's additive share of the row-wise outer product
        (:func:`protocols.ppid3.level_arrays.outer_product`) of ``a_side``'s ``A`` (``V x N``) and
        ``b_side``'s ``B`` (``P*p x N``). One exchange: ``a_side`` sends ``A + Ra``, ``b_side``
        sends ``B + Rb``; the dealing party dealt ``Ra`` and ``ra`` (as seeds) to ``a_side``,
        ``Rb`` (a seed) and ``rb = Ra (x) Rb - ra`` to ``b_side``."""
        party = self.party
        me_a = party.name == a_side
        other = b_side if me_a else a_side
        n = x.shape[1]
        v = len(parents)
        got = await self.receive(other, tag)
        dealer = self.of(a_side, b_side)
        dtype = x.dtype
        if me_a:
            R = dealt(got, "seed", (v, n), dtype, dealer, "Ra")
            r = dealt(got, "seed2", (v, p, n), dtype, dealer, "ra")
        else:
            R = dealt(got, "seed", x.shape, dtype, dealer, "Rb")
            r = dealt(got, "r", (v, p, n), dtype, dealer, "rb")
        await party.send(other, f"{tag}/masked", pack_array(x + R))
        shape_other = (None, n) if me_a else (v, n)
        theirs = unpack_array(
            await party.recv(other, f"{tag}/masked", MASKED), dtype, shape_other, other, "x+R"
        )
        masks = {"R": R, "r": r, "other": theirs}
        return outer_shares(x if me_a else None, None if me_a else x, parents, p, masks)

    async def open_permuted_owner(self, a: np.ndarray, *, class_site: str, tag: str) -> np.ndarray:
        """The owner's side of the permuted opening of its counts ``a`` (shares) in the class
        site's order (:func:`protocols.ppid3.fast_counts.open_permuted_owner`)."""
        me = self.party.name
        return await open_permuted_owner(
            self.party, a, class_site=class_site, dealer=self.of(me, class_site), tag=tag
        )

    async def open_permuted_class_site(
        self, T: np.ndarray, perms: np.ndarray, *, owner: str, tag: str
    ) -> None:
        """The class site's side of :meth:`open_permuted_owner`
        (:func:`protocols.ppid3.fast_counts.open_permuted_class_site`)."""
        me = self.party.name
        await open_permuted_class_site(
            self.party, T, perms, owner=owner, ask=self.ask, dealer=self.of(me, owner), tag=tag
        )

    async def dot_owner(self, holder: str, cols: int, *, tag: str) -> np.ndarray:
        """A direct dealing's owner share of ``X^T Z_h`` (see :attr:`direct_products`)."""
        raise NotImplementedError(f"helper {self.helper!r} deals the dot products' randomness")

    async def dot_holder(
        self, owner: str, z: np.ndarray, *, tag: str, blocks: Sequence[int]
    ) -> np.ndarray:
        """A direct dealing's holder share of ``X^T Z_h`` (see :attr:`direct_products`)."""
        raise NotImplementedError(f"helper {self.helper!r} deals the dot products' randomness")


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
            seed_a, seed_r, seed_b = (randomness.seed(f"{tag}/outer") for _ in range(3))
            Ra = Ring.of(dtype).random(seed_a, (v, rows))
            ra = Ring.of(dtype).random(seed_r, (v, p, rows))
            Rb = Ring.of(dtype).random(seed_b, (cols, rows))
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
                ring = Ring.of(dtype)
                contexts[(site, peer)] = ring.left(ring.random(req["seed"], (m, rows)))
            Ra_left = contexts.get((site, peer))
            if Ra_left is None:
                raise ProtocolError(f"{site} used a context with {peer} it never opened")
            seed_b, seed_r, seed_ot = (randomness.seed(f"{tag}/xdot") for _ in range(3))
            Rb = Ring.of(dtype).random(seed_b, (cols, rows))
            ra = Ring.of(dtype).random(seed_r, (m, cols))
            rb = Ring.of(Rb.dtype).matmul(Ra_left, Rb.T) - ra
            if req.get("transfer") is False:  # the product stays shared (--reveal tree)
                await party.send(site, f"{tag}/dealer", {"seed": seed_r})
                await party.send(peer, f"{tag}/dealer", {"seed": seed_b, "r": pack_array(rb)})
                return
            # Beaver's OT precomputation: the holder gets R0, R1; the owner c and R_c
            R0R1 = Ring.of(dtype).random(seed_ot, (2, m, cols))
            n_c = len(blocks) * (cols // n_cls)
            c = np.frombuffer(randomness.token_bytes(n_c, f"{tag}/c"), np.uint8)
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
        elif kind == "triples" and len(shape) == 1:
            await deal_triples(party, site, peer, tag, shape, req)
        else:
            raise ProtocolError(f"{site} asked {who} for {kind!r} of shape {shape}")

    return handle


async def deal_triples(
    party: Party, site: str, peer: str, tag: str, shape: list[int], req: dict[str, Any]
) -> None:
    """The triples of a batch of secure comparisons between ``site`` (``p0``) and ``peer``
    (``p1``) of ``--reveal tree``: ``req["and"]`` AND triples and ``req["words"]`` word
    triples over ``Z_{2^K}``, ``K = shape[0]``
    (:func:`protocols.primitives.secure_comparison.deal_pool`)."""
    n_and, n_words = req.get("and"), req.get("words")
    if not (
        isinstance(n_and, int) and isinstance(n_words, int) and n_and >= 0 and n_words >= 0
        and shape[0] % 64 == 0 and shape[0] <= 2**16
    ):  # fmt: skip
        raise ProtocolError(f"{site} asked for triples {n_and!r}, {n_words!r} of {shape}")
    await deal_pool(party, site, peer, tag, Needs(n_and, n_words), Ring(shape[0]))


async def serve_level_dealer(
    party: Party, sites: Sequence[str], *, dtype: Any, requests: str = REQUESTS
) -> int:
    """The dealer (``helper="dealer"``): serve every site's numbered requests until each says
    ``done``. ``outer``: correlated randomness for an outer product; ``xdot``: for an owner's
    dot products and the oblivious transfer of the holder's share; ``perm``: for the permuted
    opening of an owner's counts. Returns the number of products dealt. It receives shapes,
    fan-outs, domain sizes, seeds of masks and the class permutations, never data."""
    handle = _level_handler(party, dtype, "the dealer")
    return await serve_dealer_requests(party, sites, requests, handle)


async def serve_level_helper(
    party: Party, sites: Sequence[str], *, dtype: Any, rule: Rule = third_site,
    requests: str = REQUESTS,
) -> int:  # fmt: skip
    """A helping site (``helper="sites"``): serve the requests of every site that may ask this
    one (:func:`requesters_of`) until each says ``done``, refusing a product this site is not
    the dealing site of by ``rule`` (:func:`third_site`) (one of its own, say). Each request goes on
    this site's ledger as ``fast-counts/helped``. Returns the number of products dealt."""
    me = party.name
    deal = _level_handler(party, dtype, f"the helping site {me}")

    async def handle(
        site: str, kind: str, peer: str, tag: str, shape: list[int], req: dict[str, Any]
    ) -> None:
        if rule(site, peer, sites) != me:
            raise ProtocolError(
                f"{site} asked {me} to deal a product with {peer}; the rule names "
                f"{rule(site, peer, sites)}"
            )
        await deal(site, kind, peer, tag, shape, req)

    return await serve_dealer_requests(
        party,
        sites,
        requests,
        handle,
        serve=requesters_of(me, sites, rule),
        label="fast-counts/helped",
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


# ----------------------------------------------------------------------------- the helpers


class Helper:
    """Who makes the correlated randomness of the level driver's products between two sites:
    one entry of :data:`protocols.ppid3.helpers.HELPERS`. ``name`` is its name on command
    lines and in deployment files, ``help`` a line for ``--help``, ``trust`` the assumption a
    run with it rests on, ``collusion`` who must not collude with whom and what a collusion
    would give (docs/leakage.md prints it), ``min_sites`` the sites it needs, ``outside`` the
    role of an outside party it adds (the dealer), or None.

    :meth:`run` is a site's part: it makes the site's :class:`Dealing` and grows the tree
    with it (``grow``), running beside it whatever the helper does for the other sites;
    :meth:`serve` is the outside party's whole program."""

    name: str = ""
    help: str = ""
    trust: str = ""
    collusion: str = ""
    min_sites: int = 2
    outside: str | None = None

    def check(self, k: int) -> None:
        """Refuse a run of ``k`` sites this helper cannot serve."""
        if k < self.min_sites:
            raise ConfigError(
                f"--helper {self.name} needs at least {self.min_sites} sites, got {k}"
            )

    async def run(
        self,
        party: Party,
        view: Any,
        *,
        dtype: Any,
        tag: str,
        grow: Callable[[Dealing], Coroutine[Any, Any, tuple[Any, dict[str, int]]]],
    ) -> tuple[Any, dict[str, int]]:
        """Grow the tree at this site with this helper's dealing; returns the site's part of
        the tree and its cost counters."""
        raise NotImplementedError

    async def beside(
        self, party: Party, program: Callable[[Dealing], Awaitable[T]], *, requests: str
    ) -> T:
        """Run ``program(dealing)`` at this site with this helper making the triples of
        ``p0``'s and ``p1``'s products (:class:`protocols.ppid3.shared_scores.Duo`: nothing
        is set up for products between other sites), and whatever this helper does for the
        other sites beside it; ``requests`` is the tag prefix of the dealing's requests (the
        outside party serves the same, :meth:`serve`)."""
        raise NotImplementedError

    async def serve(
        self, party: Party, sites: Sequence[str], *, dtype: Any, requests: str = REQUESTS
    ) -> int:
        """The outside party's program (a helper with an ``outside`` party only)."""
        raise ConfigError(f"--helper {self.name} has no outside party")

    def describe(self, cost: dict[str, Any]) -> str:
        """Where a run's randomness came from, for its summary (``cost``: the run's costs)."""
        return f"randomness from {self.name}"


class DealerHelper(Helper):
    """The commodity server: a ``dealer`` process deals every product."""

    name = "dealer"
    help = "a commodity server, a 'dealer' process that must collude with no site"
    trust = "semi-honest sites; the dealer (commodity server) colludes with no site"
    collusion = (
        "the dealer colludes with no site: with either site of a product it unmasks the "
        "other's input (an owner's one-hot columns from X^T + Ra, the class site's shares of Z "
        "from Z + Rb); the sites do not collude with each other (the paper's assumption: the "
        "holders of a node's shares together learn which records reach it, and their classes)"
    )
    outside = DEALER

    async def run(
        self, party: Party, view: Any, *, dtype: Any, tag: str,
        grow: Callable[[Dealing], Coroutine[Any, Any, tuple[Any, dict[str, int]]]],
    ) -> tuple[Any, dict[str, int]]:  # fmt: skip
        return await grow(Dealing(party, "dealer", dealer=DEALER))

    async def beside(
        self, party: Party, program: Callable[[Dealing], Awaitable[T]], *, requests: str
    ) -> T:
        dealing = Dealing(party, "dealer", dealer=DEALER, requests=requests)
        out = await program(dealing)
        await dealing.close()
        return out

    async def serve(
        self, party: Party, sites: Sequence[str], *, dtype: Any, requests: str = REQUESTS
    ) -> int:
        return await serve_level_dealer(party, sites, dtype=dtype, requests=requests)

    def describe(self, cost: dict[str, Any]) -> str:
        return "randomness from the dealer"


class SitesHelper(Helper):
    """A third site deals each product between two (:func:`third_site`), beside its own
    program: no outside party."""

    name = "sites"
    help = (
        "a third site deals each product between two, never one of the two; no outside party; "
        "needs 3 or more sites, no two of them colluding"
    )
    trust = "semi-honest sites, no two colluding; each product's randomness dealt by a third site"
    collusion = (
        "no two sites collude: the site that deals a product and either site of the product "
        "together unmask the other's input (a site with the helper of its dot product with an "
        "owner recovers the owner's one-hot columns from X^T + Ra and the seed of Ra the owner "
        "sent the helper; with the helper of an outer product, the class site's shares Z + "
        "Rb, hence every record's class); the holders of a node's shares together learn which "
        "records reach it, and their classes"
    )
    min_sites = 3
    #: the site that deals a product between two
    rule: Rule = staticmethod(third_site)

    def check(self, k: int) -> None:
        if k < self.min_sites:
            raise ConfigError(
                f"--helper sites needs at least 3 sites (a third site deals every product "
                f"between two), got {k}; with 2 sites use --helper ot (or --helper dealer)"
            )

    async def run(
        self, party: Party, view: Any, *, dtype: Any, tag: str,
        grow: Callable[[Dealing], Coroutine[Any, Any, tuple[Any, dict[str, int]]]],
    ) -> tuple[Any, dict[str, int]]:  # fmt: skip
        dealing = Dealing(party, "sites", rule=self.rule)  # checks k >= 3
        service = serve_level_helper(party, list(party.parties), dtype=dtype, rule=self.rule)
        (tree, cost), dealt_for_others = await run_beside(grow(dealing), service)
        cost["dealt"] = dealt_for_others
        return tree, cost

    async def beside(
        self, party: Party, program: Callable[[Dealing], Awaitable[T]], *, requests: str
    ) -> T:
        dealing = Dealing(party, "sites", rule=self.rule, requests=requests)

        async def main() -> T:
            out = await program(dealing)
            await dealing.close()
            return out

        service = serve_level_helper(party, list(party.parties), dtype=np.uint64, rule=self.rule,
                                     requests=requests)  # fmt: skip
        out, _ = await run_beside(main(), service)
        return out

    def describe(self, cost: dict[str, Any]) -> str:
        return f"randomness dealt by the sites: {cost['dealt_by_sites']} requests"


DEALER_HELPER = DealerHelper()
SITES_HELPER = SitesHelper()
