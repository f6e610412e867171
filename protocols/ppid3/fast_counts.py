"""The parts of PPID3's fast counts that every helper shares: the sites' view of a
deployment with an outside party (:class:`Sites`), the receipts of the products, the
*permuted opening* that gives an attribute's owner its counts in a class order of the class
site's choosing, and a dealing party's service loop. The level driver
(:mod:`protocols.ppid3.levels`, :mod:`protocols.ppid3.level_products`) computes the counts
with them; its randomness comes from a dealer, a third site or oblivious transfer
(:mod:`protocols.ppid3.helpers`).

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
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import numpy as np

from mpc.crypto import randomness
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.expect import check, integer, list_of, raw, record, text
from mpc.runtime.party import Party
from mpc.runtime.view import public, uniform
from protocols.engine.ring import Ring

__all__ = [
    "DEALER",
    "Sites",
    "deal_permuted_open",
    "open_permuted_class_site",
    "open_permuted_owner",
    "permute_blocks",
    "request_record",
    "serve_dealer_requests",
]

DEALER = "dealer"

#: the fields of a request to a dealing party that describe the product (public); the rest
#: is the requester's randomness for it (a mask seed, the class permutations)
REQUEST_PUBLIC = ("shape", "parents", "blocks", "p", "context", "new", "transfer", "and", "words")

#: what a party receives, here and in the level driver's products
DEALT = uniform(
    "fast-counts/dealt", "correlated randomness from the dealing party: mask seeds and masks"
)
MASKED = uniform("fast-counts/masked", "the other site's vector or matrix plus a dealt mask")
HEAD = public(
    "fast-counts/head",
    "which remaining-attribute set (context) a dot product uses; whether its masked matrix "
    "comes now",
)
X_PLUS_RA = uniform("fast-counts/x-plus-ra", "the owner's one-hot columns X^T plus a mask Ra")
A_MINUS_K = uniform(
    "fast-counts/a-minus-k", "an owner's masked counts minus a dealt K (class site)"
)
PERMUTED_OPEN = uniform(
    "fast-counts/permuted-open",
    "the owner's counts with the classes in the class site's order for the node, minus the dealt L",
    opens="fast-counts/attribute-counts",
)
CLASSES = public("fast-counts/classes", "the number of classes")
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
