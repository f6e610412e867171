"""Correlated randomness dealt by a party that computes nothing with it: the dealer (a
commodity server), or a third site, for the products between two parties: Beaver's triples,
outer-product masks, dot-product masks with the pads of an oblivious transfer, and the
permuted openings of an owner's counts. :class:`Dealing` is a party's side (its numbered
requests, what it receives for a product, the products themselves with what it received);
:func:`serve_level_dealer` and :func:`serve_level_helper` are the dealing party's.
:mod:`protocols.engine.ot_dealing` makes the same products by oblivious transfer, with no one
dealing; :mod:`protocols.engine.preprocessing` is the registry of the three.

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
  randomness by oblivious transfer (:class:`protocols.engine.ot_dealing.OTDealing`, a subclass of
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


**Class order.** The owner ``s`` of an attribute must not see the classes in the same order
at every node (Section 1 of the paper: only the class site knows which class is which; here
the dealing party knows the permutations too, and sees no count). The class site draws a
fresh permutation ``π`` of the classes for every node (OS generator,
:func:`protocols.primitives.psi_ca.os_permutation`) and ``s`` gets ``X_s^T Z`` with its class
columns permuted by ``π``, by a permuted opening (:func:`open_permuted_owner`,
:func:`open_permuted_class_site`): in the dot product with ``s``, the class site subtracts a
fresh uniform ``T`` from its share, so ``s`` ends with ``a = X_s^T Z - T``; the dealing
party gives ``s`` uniform ``K, L`` (as a seed) and the class site ``Kπ - L``; ``s`` sends
``a - K``, the class site answers ``(a - K + T)π + Kπ - L``, and ``s`` adds ``L``:
``(X_s^T Z)π``. The class site sees ``a - K`` (uniform), ``s`` nothing but the permuted
counts; the dealing party knows ``π`` (it receives it with the request) but sees no count.
Gains do not depend on the order
(:func:`protocols.ppid3.distribution_counts.gain_in_any_class_order`).

**The dealing party** records every request as received (``fast-counts/request``,
:func:`request_record`): which two sites multiply, the kind of product, its public shape
and context numbers, and that a seed of a site's mask or the class site's permutations came
with it (``withheld``: randomness drawn for this product, independent of the data, named in
the ledger but not copied into it, since whoever reads a copy could unmask the product).
Each site's closing message (``fast-counts/done``) is recorded too. It receives no data.

References: D. Beaver, *Commodity-based cryptography*, STOC 1997 (a server that deals and
learns nothing); W. Du, Z. Zhan, IEEE ICDM PSDM Workshop 2002 (the dot-product masks); D.
Beaver, CRYPTO 1991 (the triples).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from mpc.crypto import randomness
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.expect import check, integer, list_of, raw, record, text
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.engine.ring import Left, Ring
from protocols.engine.session import Session
from protocols.engine.shuffle import shuffle_helper
from protocols.engine.triples import Needs, Pool, receive_triples
from protocols.engine.triples import deal_triples as triples_dealt

__all__ = [
    "DEALER",
    "DEALT",
    "MASKED",
    "REQUEST",
    "WITHHELD_FIELDS",
    "Dealing",
    "Rule",
    "Sites",
    "dealt",
    "expand_blocks",
    "outer_product",
    "outer_shares",
    "outside",
    "permute_blocks",
    "request_record",
    "requesters_of",
    "run_beside",
    "serve_dealer_requests",
    "serve_level_dealer",
    "serve_level_helper",
    "third_site",
]

DEALER = "dealer"

#: the fields of a request to a dealing party that describe the product (public); the rest
#: is the requester's randomness for it (a mask seed, the class permutations)
REQUEST_PUBLIC = (
    "shape",
    "parents",
    "blocks",
    "p",
    "context",
    "new",
    "transfer",
    "and",
    "words",
    "selects",
    "owns",
    "pairs",
    "range",
)

#: what a party receives, here and in the level driver's products
DEALT = uniform(
    "fast-counts/dealt", "correlated randomness from the dealing party: mask seeds and masks"
)
MASKED = uniform("fast-counts/masked", "the other site's vector or matrix plus a dealt mask")
A_MINUS_K = uniform(
    "fast-counts/a-minus-k", "an owner's masked counts minus a dealt K (class site)"
)
PERMUTED_OPEN = uniform(
    "fast-counts/permuted-open",
    "the owner's counts with the classes in the class site's order for the node, minus the dealt L",
    opens="fast-counts/attribute-counts",
)
REQUEST = uniform(
    "fast-counts/request",
    "a product to deal: its kind, sites, tag and shape (public), with the requester's "
    "randomness for it (a mask seed, the class permutations); or 'done'",
    public=REQUEST_PUBLIC,
    permutations=True,
    ordered=False,
)
RandomWords = Callable[[int], np.ndarray]


class Sites:
    """A party seen as a member of the sites only: ``parties``, ``peers`` and
    :meth:`broadcast` leave out the deployment's dealer, everything else is the party's own.
    PPID3 and its sub-protocols take all of ``party.parties`` as the sites."""

    def __init__(self, party: Party, sites: Sequence[str]) -> None:
        if party.name not in sites:
            raise ConfigError(f"{party.name} is not one of the sites {list(sites)}")
        self._party = party
        self.parties = list(sites)
        self.peers = [p for p in self.parties if p != party.name]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._party, name)

    async def broadcast(self, tag: str, obj: Any, peers: Sequence[str] | None = None) -> None:
        for p in self.peers if peers is None else [p for p in peers if p != self._party.name]:
            await self._party.send(p, tag, obj)

    def as_party(self) -> Party:
        """This view where a :class:`Party` is expected."""
        return cast(Party, self)


# ----------------------------------------------------------------------------- class order


def permute_blocks(x: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """``x`` (``m x B*p``: ``B`` blocks of ``p`` class columns) with the columns of block
    ``b`` in the order ``perms[b]``: ``out[:, b*p + i] = x[:, b*p + perms[b, i]]``."""
    B, p = perms.shape
    return x[:, (np.arange(B)[:, None] * p + perms).reshape(-1)]


def _check_perms(value: object, B: int, p: int, sender: str) -> np.ndarray:
    if not (
        isinstance(value, list)
        and len(value) == B
        and all(isinstance(r, list) and sorted(r) == list(range(p)) for r in value)
    ):
        raise ProtocolError(f"{sender} sent {value!r}, not {B} permutations of {p}")
    return np.asarray(value, dtype=np.int64).reshape(B, p)


async def deal_permuted_open(
    party: Party, site: str, peer: str, tag: str, shape: Sequence[int], req: dict[str, Any],
    dtype: Any,
) -> None:  # fmt: skip
    """The dealing party's part of a permuted opening asked for by the class site ``site``
    with the owner ``peer`` (the dealer, or the third site of the two; never the class site
    itself): ``shape = (m, B, p)`` and ``req["perms"]`` (``B`` permutations of ``p``).
    ``peer`` gets uniform ``K, L`` as a seed, ``site`` gets ``Kπ - L``. The dealing party
    learns the permutations (random, independent of the data) and never a message of the
    opening."""
    m, B, p = (int(d) for d in shape)
    perms = _check_perms(req.get("perms"), B, p, site)
    seed = randomness.seed(f"{tag}/perm")
    K, L = Ring.of(dtype).random(seed, (2, m, B * p))
    await party.send(peer, f"{tag}/dealer", {"seed": seed})
    await party.send(site, f"{tag}/dealer", {"d": pack_array(permute_blocks(K, perms) - L)})


async def open_permuted_owner(
    party: Party, a: np.ndarray, *, class_site: str, dealer: str, tag: str
) -> np.ndarray:
    """The owner's side of a permuted opening: ``a`` (``m x B*p``) is its counts minus the
    class site's mask ``T``; returns ``(a + T)`` with each block's class columns in the class
    site's order for that block. Sends ``a - K`` (``K`` from the dealing party ``dealer``,
    uniform)."""
    got = await party.recv(dealer, f"{tag}/dealer", DEALT, expect=record({"seed": raw(32)}))
    K, L = Ring.of(a.dtype).random(got["seed"], (2, *a.shape))
    await party.send(class_site, f"{tag}/a-K", pack_array(a - K))
    y = unpack_array(await party.recv(class_site, f"{tag}/open", PERMUTED_OPEN), a.dtype, a.shape,
                class_site,
                "permuted counts")  # fmt: skip
    return y + L


async def open_permuted_class_site(
    party: Party,
    T: np.ndarray,
    perms: np.ndarray,
    *,
    owner: str,
    ask: Callable[[dict[str, Any]], Awaitable[None]],
    dealer: str,
    tag: str,
) -> None:
    """The class site's side of a permuted opening with ``owner``: ``T`` (``m x B*p``) is
    the mask it subtracted from its share of the owner's counts, ``perms`` (``B x p``) the
    class order of each block. Asks the dealing party ``dealer`` (through ``ask``) for
    ``Kπ - L``, receives ``a - K`` (uniform) and answers ``(a - K + T)π + Kπ - L``."""
    B, p = perms.shape
    m, cols = T.shape
    if cols != B * p:
        raise ConfigError(f"a permuted opening of {cols} columns needs {cols // p} blocks")
    await ask({"kind": "perm", "peer": owner, "tag": tag, "shape": [m, B, p],
               "perms": perms.tolist()})  # fmt: skip
    got = await party.recv(dealer, f"{tag}/dealer", DEALT)
    d = unpack_array(got.get("d") if isinstance(got, dict) else None, T.dtype, (m, cols), dealer,
                "K pi - L")  # fmt: skip
    x = unpack_array(await party.recv(owner, f"{tag}/a-K", A_MINUS_K), T.dtype, (m, cols), owner,
                "a - K")  # fmt: skip
    await party.send(owner, f"{tag}/open", pack_array(permute_blocks(x + T, perms) + d))


DealerHandler = Callable[[str, str, str, str, list[int], dict[str, Any]], Awaitable[None]]


#: request fields that carry a site's randomness (a mask seed, the class permutations): the
#: dealer's ledger names them but does not copy their values
WITHHELD_FIELDS = ("seed", "perms")


def request_record(site: str, req: dict[str, Any]) -> dict[str, Any]:
    """What the dealer puts on record for a request from ``site``: every field as received,
    its ``tag`` aside (the ledger entry's step), and the names of the randomness fields
    (:data:`WITHHELD_FIELDS`) under ``withheld``."""
    entry: dict[str, Any] = {"site": site}
    withheld = []
    for key in sorted(req):
        if key == "tag":
            continue
        if key in WITHHELD_FIELDS:
            withheld.append(key)
        else:
            entry[key] = req[key]
    if withheld:
        entry["withheld"] = withheld
    return entry


async def serve_dealer_requests(
    party: Party,
    sites: Sequence[str],
    prefix: str,
    handle: DealerHandler,
    *,
    serve: Sequence[str] | None = None,
    label: str = "fast-counts/request",
) -> int:
    """A dealing party's service loop: the numbered requests (``<prefix>/<n>``) of every site
    in ``serve`` (default: all ``sites``; served concurrently, each in order) until the site
    says ``done``. Each request is checked — a dict naming the product (``kind``), another
    site (``peer``), a ``tag`` and a public ``shape`` of positive ints —, put on the ledger as
    received (``label``: ``fast-counts/request`` for the dealer, :func:`request_record`) and
    passed to ``handle(site, kind, peer, tag, shape, request)``. A site's ``done`` is recorded
    as ``fast-counts/done``. Returns the number handled."""
    dealt = 0
    me = party.name
    form = record(
        {"kind": text(), "peer": text(list(sites)), "tag": text(), "shape": list_of(integer(lo=1))},
        extra=True,
    )

    async def one(site: str) -> None:
        nonlocal dealt
        n = 0
        while True:
            req = await party.recv(site, f"{prefix}/{n}", REQUEST)
            n += 1
            if req == "done":
                party.ledger.record("fast-counts/done", {"site": site, "requests": n - 1},
                                    step=f"{prefix}/{n - 1}")  # fmt: skip
                return
            check(form, req, f"{me}: {site}'s request {n - 1}")
            kind, peer, tag, shape = (req[k] for k in ("kind", "peer", "tag", "shape"))
            if peer == site:
                raise ProtocolError(f"{me}: {site} asked for a product with itself")
            party.ledger.record(label, request_record(site, req), step=tag)
            await handle(site, kind, peer, tag, shape, req)
            dealt += 1

    await asyncio.gather(*(one(s) for s in (sites if serve is None else serve)))
    return dealt


# ----------------------------------------------------------------------------- products


def outer_product(a: np.ndarray, b: np.ndarray, parents: np.ndarray, p: int) -> np.ndarray:
    """``T[v, c, t] = a[v, t] * b[parents[v]*p + c, t]`` (``V x p x N``, in the ring): each
    row of ``a`` times the ``p`` rows of ``b`` of its parent, elementwise. (Arrays are kept
    with the ``N`` rows of the table as their last, contiguous axis.)"""
    out = b.reshape(-1, p, b.shape[1])[parents]
    out *= a[:, None, :]
    return out


def expand_blocks(bits: np.ndarray, blocks: Sequence[int], p: int) -> np.ndarray:
    """Per-(attribute, node) bits (``L x B``) as the ``sum(blocks) x B*p`` mask of the count
    blocks they govern (``blocks``: each attribute's number of values; ``p`` classes)."""
    return np.repeat(np.repeat(bits, list(blocks), axis=0), p, axis=1)


def outer_shares(
    a: np.ndarray | None, b: np.ndarray | None, parents: np.ndarray, p: int, masks: dict[str, Any]
) -> np.ndarray:
    """One side of the shares of :func:`outer_product` of ``A`` and ``B`` (``masks``: this
    side's randomness ``R``, ``r`` and the other side's masked input)."""
    if a is not None:  # the side holding A: ra - Ra (x) (B + Rb)
        out = outer_product(masks["R"], masks["other"], parents, p)
        return np.subtract(masks["r"], out, out=out)
    assert b is not None  # the side holding B: (A + Ra) (x) B + rb
    out = outer_product(masks["other"], b, parents, p)
    return np.add(out, masks["r"], out=out)


def dealt(got: Any, key: str, shape: tuple[int, ...], dtype: Any, dealer: str, what: str) -> Any:
    """The array ``key`` of a dealing party's message ``got``: a 32-byte seed expanded by
    :meth:`protocols.engine.ring.Ring.random`, or the array itself (packed)."""
    if not isinstance(got, dict) or key not in got:
        raise ProtocolError(f"{dealer} sent no {what} (correlated randomness)")
    value = got[key]
    if isinstance(value, bytes):
        return Ring.of(dtype).random(value, shape)
    return unpack_array(value, dtype, shape, dealer, what)


# ----------------------------------------------------------------------------- dealing


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


def outside(dealer: str = DEALER) -> Rule:
    """The rule of a commodity server: the party ``dealer`` deals every product."""

    def rule(a: str, b: str, sites: Sequence[str]) -> str:
        return dealer

    return rule


class Dealing:
    """Who deals each product of this site, and its numbered requests to them: the party
    ``rule`` names for the product's two sites (:func:`outside`: the dealer for every
    product; :func:`third_site`: a third site). ``party`` is the site view whose ``parties``
    are the sites; ``requests`` the tag prefix of the numbered requests (one per dealing of a
    run: training, classification). The rule is checked once here (a third site needs
    three sites: a clear error otherwise)."""

    def __init__(self, party: Party, rule: Rule, *, requests: str = REQUESTS) -> None:
        self.party, self.rule, self.requests = party, rule, requests
        self.sites = list(party.parties)
        if len(self.sites) >= 2:
            rule(self.sites[0], self.sites[1], self.sites)
        self._next: dict[str, int] = {}

    def of(self, a: str, b: str) -> str:
        """The party that deals the product between sites ``a`` and ``b``."""
        return self.rule(a, b, self.sites)

    def asked(self) -> list[str]:
        """Every party this site may ask for randomness (and tells ``done`` at the end), in
        site order, an outside party last."""
        me = self.party.name
        order = {s: i for i, s in enumerate(self.sites)}
        return sorted({self.of(me, x) for x in self.sites if x != me},
                      key=lambda s: order.get(s, len(order)))  # fmt: skip

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

    async def triples(self, s: Session, tag: str, needs: Needs, ring: Ring) -> Pool:
        """The triples of a batch of the session ``s`` (its ``p0`` and ``p1``): ``p0`` asks
        the party that deals their products, both receive (:mod:`protocols.engine.triples`)."""
        if s.role == 0:
            await self.ask({"kind": "triples", "peer": s.p1, "tag": tag, "shape": [ring.bits],
                            "and": needs.bits, "words": needs.words,
                            "selects": needs.selects, "owns": needs.owns,
                            "pairs": needs.pairs})  # fmt: skip
        return await receive_triples(s.party, self.of(s.p0, s.p1), tag, s.role, needs, ring)

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
        (:func:`protocols.engine.dealing.outer_product`) of ``a_side``'s ``A`` (``V x N``) and
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
        site's order (:func:`protocols.engine.dealing.open_permuted_owner`)."""
        me = self.party.name
        return await open_permuted_owner(
            self.party, a, class_site=class_site, dealer=self.of(me, class_site), tag=tag
        )

    async def open_permuted_class_site(
        self, T: np.ndarray, perms: np.ndarray, *, owner: str, tag: str
    ) -> None:
        """The class site's side of :meth:`open_permuted_owner`
        (:func:`protocols.engine.dealing.open_permuted_class_site`)."""
        me = self.party.name
        await open_permuted_class_site(
            self.party, T, perms, owner=owner, ask=self.ask, dealer=self.of(me, owner), tag=tag
        )

    async def dot_owner(self, holder: str, cols: int, *, tag: str) -> np.ndarray:
        """A direct dealing's owner share of ``X^T Z_h`` (see :attr:`direct_products`)."""
        raise NotImplementedError("a dealing party deals the dot products' randomness")

    async def dot_holder(
        self, owner: str, z: np.ndarray, *, tag: str, blocks: Sequence[int]
    ) -> np.ndarray:
        """A direct dealing's holder share of ``X^T Z_h`` (see :attr:`direct_products`)."""
        raise NotImplementedError("a dealing party deals the dot products' randomness")


def _level_handler(party: Party, dtype: Any, who: str) -> Any:
    """The dealing of one request (``outer``, ``xdot`` or ``perm``), for the dealer and for a
    helping site alike; ``who`` names the dealing role in error messages."""
    #: (owner, holder, range) -> the seed and shape of the owner's ``Ra``, made again from the
    #: seed where it is used (a pair's last one kept): a dealing party's memory holds one
    #: range per pair, not all the rows of the sites it deals for
    contexts: dict[tuple[str, str, int], tuple[bytes, int, int]] = {}
    made: dict[tuple[str, str], tuple[int, Left]] = {}

    def context(key: tuple[str, str, int]) -> Left | None:
        site, peer, part = key
        last = made.get((site, peer))
        if last is not None and last[0] == part:
            return last[1]
        if key not in contexts:
            return None
        seed, m, rows = contexts[key]
        ring = Ring.of(dtype)
        made[(site, peer)] = (part, ring.left(ring.random(seed, (m, rows))))
        return made[(site, peer)][1]

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
            part = req.get("range", 0)  # the range of rows of a site that splits its rows
            if not isinstance(part, int) or isinstance(part, bool) or part < 0:
                raise ProtocolError(f"{site} sent {who} a bad range {part!r}")
            if isinstance(req.get("seed"), bytes):
                contexts[(site, peer, part)] = (req["seed"], m, rows)
                made.pop((site, peer), None)
            Ra_left = context((site, peer, part))
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
        elif kind == "shuffle" and len(shape) == 3 and shape[2] <= shape[1]:
            cols, n, keep = shape  # the owner's permutation applied to the peer's shares
            await shuffle_helper(party, site, peer, cols, n, keep, dtype, tag)
        elif kind == "triples" and len(shape) == 1:
            await deal_triples(party, site, peer, tag, shape, req)
        else:
            raise ProtocolError(f"{site} asked {who} for {kind!r} of shape {shape}")

    return handle


async def deal_triples(
    party: Party, site: str, peer: str, tag: str, shape: list[int], req: dict[str, Any]
) -> None:
    """The triples of a batch of secure comparisons between ``site`` (``p0``) and ``peer``
    (``p1``) of ``--reveal tree``: ``req["and"]`` AND triples, ``req["words"]`` word
    triples, ``req["selects"]`` selection triples, ``req["owns"]`` own-bit and
    ``req["pairs"]`` paired AND triples over
    ``Z_{2^K}``, ``K = shape[0]`` (:func:`protocols.engine.triples.deal_triples`)."""
    counts = [
        req.get("and"),
        req.get("words"),
        req.get("selects", 0),
        req.get("owns", 0),
        req.get("pairs", 0),
    ]
    if not (
        all(isinstance(n, int) and n >= 0 for n in counts)
        and shape[0] % 64 == 0 and shape[0] <= 2**16
    ):  # fmt: skip
        raise ProtocolError(f"{site} asked for triples {counts!r} of {shape}")
    await triples_dealt(party, site, peer, tag, Needs(*counts), Ring(shape[0]))


async def serve_level_dealer(
    party: Party, sites: Sequence[str], *, dtype: Any, requests: str = REQUESTS
) -> int:
    """The dealer (``helper="dealer"``): serve every site's numbered requests until each says
    ``done``. ``outer``: correlated randomness for an outer product; ``xdot``: for an owner's
    dot products and the oblivious transfer of the holder's share; ``perm``: for the permuted
    opening of an owner's counts; ``shuffle``: the helper's part of an owner-known
    permutation of the peer's shares (:mod:`protocols.engine.shuffle`). Returns the number
    of products dealt. It receives shapes, fan-outs, domain sizes, seeds of masks, the class
    permutations and halves of split permutations, never data."""
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
