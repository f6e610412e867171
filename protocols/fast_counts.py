"""A fast count oracle for PPID3: additive secret sharing mod ``2^64`` with correlated
randomness from a commodity server (``dealer``), behind :class:`CountOracle`'s interface, so
that :func:`protocols.ppid3.ppid3` runs unchanged on it.

For the current node, the sites hold additive shares of the ``N x p`` matrix

    ``Z[t, c] = [row t reaches the node] * [class of row t is c]``

(``t`` over the common transaction ids). The class site starts with ``onehot(y)`` restricted
to its own constraint set; every other site with a constraint on the path multiplies its
private membership vector in, one elementwise product per current holder of a share
(Du & Zhan's commodity-server product, elementwise): ``k - 1`` sequential steps at most, each
one exchange. Then

* **distribution counts** (Algorithm 3): every holder sends the column sums of its share to
  the class site, which adds them;
* **attribute counts** (Algorithm 6, lines 1-7, all attributes of a node at once): the owner
  ``s`` of the remaining attributes stacks their one-hot columns into ``X_s`` (``N x sum
  |A|``) and obtains ``X_s^T Z`` by a batched dealer dot product with every other holder
  (:func:`protocols.dot_product.dot_products`, revealed to ``s``), plus its own share
  locally.

Each node costs a constant number of rounds (one to announce which sites have constraints,
at most ``k - 1`` for the products, two for the counts), all vectorised with numpy.

What each party learns (ledger):

* the class site: the class distribution of every node (``fast-counts/distribution``), as
  with the paper's protocol;
* the owner of an attribute: its ``|A| x p`` count matrix at every node where it is a
  candidate (``fast-counts/attribute-counts``);
* every site: which sites have a constraint on the current path (``fast-counts/active``),
  which the public tree structure already tells it, and the number of values of the
  other sites' remaining attributes (the shapes of the products; the set-intersection
  backend reveals as much, one set per value);
* the dealer: the public shapes it is asked for; it receives no data.

Compared with the set-intersection backend, no site learns the sizes of the other sites'
constraint sets or any sub-intersection size. The extra trust assumption: **the dealer
colludes with no site** (a dealer that shares its randomness with one site lets that site
unmask the other's vectors). Every message a site receives from another site is a vector
masked with fresh uniform randomness, or a share that is itself uniform.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.runtime import Party
from protocols.distribution_counts import Constraints, CountOracle, form_trans_set
from protocols.dot_product import _pack, _unpack, dot_products, os_random_words

__all__ = ["DEALER", "FastCountOracle", "Sites", "elementwise_product", "serve_count_dealer"]

DEALER = "dealer"
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


# ----------------------------------------------------------------------------- products


async def elementwise_product(
    party: Party,
    x: np.ndarray,
    *,
    a: str,
    b: str,
    dealer: str,
    tag: str,
) -> np.ndarray:
    """Additive shares of ``x_a * x_b`` (elementwise, mod ``2^64``) between ``a`` and ``b``,
    each holding its ``x`` (same shape). The dealer has dealt ``(Ra, ra)`` to ``a`` and
    ``(Rb, rb)`` to ``b`` with ``ra + rb = Ra * Rb``; ``a`` sends ``x_a + Ra``, ``b`` sends
    ``x_b + Rb`` (one exchange); ``a`` keeps ``ra - Ra * (x_b + Rb)``, ``b`` keeps
    ``(x_a + Ra) * x_b + rb``."""
    me_a = party.name == a
    other = b if me_a else a
    got = await party.recv(dealer, f"{tag}/dealer")
    if not isinstance(got, dict):
        raise ProtocolError(f"{dealer} sent no correlated randomness for {tag}")
    R = _unpack(got.get("R"), np.uint64, x.shape, dealer, "R")
    r = _unpack(got.get("r"), np.uint64, x.shape, dealer, "r")
    await party.send(other, f"{tag}/masked", _pack(x + R))
    theirs = _unpack(await party.recv(other, f"{tag}/masked"), np.uint64, x.shape, other, "x+R")
    party.metrics.count("elementwise_products", int(x.size))
    if me_a:
        return r - R * theirs
    return theirs * x + r


async def _deal_elementwise(
    party: Party, shape: tuple[int, ...], a: str, b: str, tag: str, words: RandomWords
) -> None:
    size = int(np.prod(shape))
    Ra = words(size).reshape(shape)
    Rb = words(size).reshape(shape)
    ra = words(size).reshape(shape)
    rb = Ra * Rb - ra
    await party.send(a, f"{tag}/dealer", {"R": _pack(Ra), "r": _pack(ra)})
    await party.send(b, f"{tag}/dealer", {"R": _pack(Rb), "r": _pack(rb)})


async def serve_count_dealer(
    party: Party, sites: Sequence[str], *, words: RandomWords | None = None
) -> int:
    """The dealer's side: serve every site's numbered requests (``fast/req/<n>``) until each
    says ``done``. A request names the product (``mul`` or ``dot``), the peer, the public
    shape and the tag; the dealer deals correlated randomness to both. Returns the number of
    products dealt."""
    gen = words or os_random_words
    dealt = 0

    async def serve(site: str) -> None:
        nonlocal dealt
        n = 0
        while True:
            req = await party.recv(site, f"fast/req/{n}")
            n += 1
            if req == "done":
                return
            if not isinstance(req, dict):
                raise ProtocolError(f"{site} sent the dealer {type(req).__name__}, not a request")
            kind, peer, tag, shape = (
                req.get("kind"),
                req.get("peer"),
                req.get("tag"),
                req.get("shape"),
            )
            if not isinstance(peer, str) or peer not in sites or peer == site:
                raise ProtocolError(f"{site} asked the dealer for a product with {peer!r}")
            if not isinstance(tag, str):
                raise ProtocolError(f"{site} asked the dealer for a product with {peer!r}")
            if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape
            ):
                raise ProtocolError(f"{site} asked the dealer for shape {shape!r}")
            if kind == "mul" and len(shape) == 2:
                await _deal_elementwise(party, tuple(shape), site, peer, tag, gen)
            elif kind == "dot" and len(shape) == 3:
                await dot_products(
                    party, None, method="dealer", shape=shape, tag=tag, alice=site, bob=peer,
                    dealer=party.name, reveal_to="alice", record=False, random_words=gen,
                )  # fmt: skip
            else:
                raise ProtocolError(f"{site} asked the dealer for {kind!r} of shape {shape}")
            party.ledger.record("fast-counts/shape", {"kind": kind, "shape": shape}, step=tag)
            dealt += 1

    await asyncio.gather(*(serve(s) for s in sites))
    return dealt


# ----------------------------------------------------------------------------- the oracle


class FastCountOracle(CountOracle):
    """PPID3's counts by secret sharing with a dealer. Every site builds one; ``party``
    passed to the methods is the site view (:class:`Sites`) whose ``parties`` are the sites,
    while the dealer is reached through the underlying party."""

    name = "fast"

    def __init__(self, dealer: str = DEALER) -> None:
        self.dealer = dealer
        self._requests = 0
        self._node: tuple[str, np.ndarray | None, list[str]] | None = None
        self.products = 0  # elementwise products (vectors) and dot-product batches run
        self.dot_batches = 0

    # -- plumbing

    async def _ask(
        self, party: Party, kind: str, peer: str, shape: Sequence[int], tag: str
    ) -> None:
        await party.send(
            self.dealer,
            f"fast/req/{self._requests}",
            {"kind": kind, "peer": peer, "shape": [int(d) for d in shape], "tag": tag},
        )
        self._requests += 1

    async def close(self, party: Party) -> None:
        """Tell the dealer this site is done."""
        await party.send(self.dealer, f"fast/req/{self._requests}", "done")
        self._requests += 1

    # -- the node's shares

    async def _shares(
        self, party: Party, constraints: Constraints, class_site: str, tag: str
    ) -> tuple[np.ndarray | None, list[str]]:
        """This site's share of ``Z`` (or None if it holds none) and the holders."""
        view = constraints.view
        names = list(party.parties)
        active_me = bool(constraints._values)
        await party.broadcast(f"{tag}/active", active_me)
        flags = await party.gather([n for n in names if n != party.name], f"{tag}/active")
        flags[party.name] = active_me
        for n, f in flags.items():
            if not isinstance(f, bool):
                raise ProtocolError(f"{n} announced {f!r} instead of true/false")
        party.ledger.record("fast-counts/active", [n for n in names if flags[n]], step=tag)
        mask = form_trans_set(constraints)
        share: np.ndarray | None = None
        if view.is_class_site:
            assert view.y is not None and view.classes is not None
            onehot = np.zeros((len(view.tids), len(view.classes)), dtype=np.uint64)
            onehot[np.arange(len(view.tids)), view.y] = 1
            share = onehot * mask[:, None].astype(np.uint64)
        holders = [class_site]
        p = await self._n_classes(party, class_site, tag) if share is None else share.shape[1]
        shape = (len(view.tids), p)
        for i in names:
            if i == class_site or not flags[i]:
                continue
            step = f"{tag}/m{names.index(i)}"
            if party.name == i:
                x = np.broadcast_to(mask[:, None].astype(np.uint64), shape).copy()
                for j in holders:
                    await self._ask(party, "mul", j, shape, f"{step}/{j}")
                outs = await asyncio.gather(*(
                    elementwise_product(party, x, a=i, b=j, dealer=self.dealer,
                                        tag=f"{step}/{j}")
                    for j in holders
                ))  # fmt: skip
                share = np.asarray(np.sum(np.stack(outs), axis=0, dtype=np.uint64))
                self.products += len(holders)
            elif party.name in holders:
                assert share is not None
                share = await elementwise_product(
                    party, share, a=i, b=party.name, dealer=self.dealer,
                    tag=f"{step}/{party.name}",
                )  # fmt: skip
            holders.append(i)
        return share, holders

    async def _n_classes(self, party: Party, class_site: str, tag: str) -> int:
        """The number of classes, told by the class site once (public in PPID3)."""
        if not hasattr(self, "_p"):
            if party.name == class_site:
                raise ConfigError("the class site knows its classes")
            p = await party.recv(class_site, "fast/classes")
            if not isinstance(p, int) or isinstance(p, bool) or p < 1:
                raise ProtocolError(f"{class_site} announced {p!r} classes")
            self._p = p
        return self._p

    async def distribution_counts(
        self, party: Party, constraints: Constraints, *, class_site: str, tag: str
    ) -> np.ndarray | None:
        view = constraints.view
        if view.is_class_site and not hasattr(self, "_p"):
            assert view.classes is not None
            self._p = len(view.classes)
            await party.broadcast("fast/classes", self._p)
        share, holders = await self._shares(party, constraints, class_site, tag)
        self._node = (tag, share, holders)
        if party.name != class_site:
            if party.name in holders:
                assert share is not None
                await party.send(
                    class_site, f"{tag}/sum", _pack(share.sum(axis=0, dtype=np.uint64))
                )
            return None
        assert share is not None
        total = share.sum(axis=0, dtype=np.uint64)
        for j in holders:
            if j != party.name:
                total = total + _unpack(
                    await party.recv(j, f"{tag}/sum"), np.uint64, (self._p,), j, "column sums"
                )
        counts = total.astype(np.int64)
        party.ledger.record("fast-counts/distribution", counts.tolist(), step=tag)
        return counts

    async def attribute_counts(
        self,
        party: Party,
        constraints: Constraints,
        remaining: Sequence[int],
        *,
        remaining_per_site: Sequence[int],
        class_site: str,
        tag: str,
    ) -> dict[int, np.ndarray]:
        if self._node is None:
            raise ProtocolError("attribute counts asked before the node's distribution counts")
        _, share, holders = self._node
        view = constraints.view
        names = list(party.parties)
        n, p = len(view.tids), self._p
        tasks = []
        mine: np.ndarray | None = None
        sizes = [len(view.domains[j]) for j in remaining]
        if remaining:
            X = np.zeros((n, sum(sizes)), dtype=np.uint64)
            offset = 0
            for j, size in zip(remaining, sizes, strict=True):
                X[np.arange(n), offset + view.codes[:, j]] = 1
                offset += size
            XT = np.ascontiguousarray(X.T)
            mine = XT @ share if share is not None else np.zeros((sum(sizes), p), np.uint64)
            for h in holders:
                if h == party.name:
                    continue
                t = f"{tag}/x{names.index(party.name)}/{h}"
                await self._ask(party, "dot", h, (XT.shape[0], n, p), t)
                tasks.append(dot_products(party, XT, method="dealer", tag=t, alice=party.name,
                                          bob=h, dealer=self.dealer, reveal_to="alice",
                                          record=False))  # fmt: skip
        if party.name in holders and share is not None:
            for s, owner in enumerate(names):
                if owner == party.name or remaining_per_site[s] == 0:
                    continue
                t = f"{tag}/x{s}/{party.name}"
                tasks.append(dot_products(party, share, method="dealer", tag=t, alice=owner,
                                          bob=party.name, dealer=self.dealer, reveal_to="alice",
                                          record=False))  # fmt: skip
        outs = await asyncio.gather(*tasks)
        self.dot_batches += len(tasks)
        out: dict[int, np.ndarray] = {}
        if remaining:
            assert mine is not None
            total = mine
            for o in outs[: len(holders) - (party.name in holders)]:
                assert o is not None
                total = total + o
            counts = total.astype(np.int64)
            offset = 0
            for j, size in zip(remaining, sizes, strict=True):
                out[j] = counts[offset : offset + size]
                offset += size
            party.ledger.record(
                "fast-counts/attribute-counts",
                {view.attributes[j]: out[j].tolist() for j in remaining},
                step=tag,
            )
        return out
