"""PPID3's level driver with no third party (``helper="ot"``, any ``k >= 2`` sites): the two
sites of every product compute it, or make its correlated randomness, themselves by oblivious
transfer (:mod:`protocols.ot.iknp`), where a dealer or a third site
(:mod:`protocols.engine.dealing`) would deal. The driver (:mod:`protocols.ppid3.levels`) is
unchanged; :mod:`protocols.ppid3.level_products` asks this module instead of a dealing party.

Roles: ``k >= 2`` sites. Every pair ``{a, b}`` of sites sets up, once per run
(:func:`ot_dealing`, all pairs at once), two IKNP sessions in each direction (so either site
may choose), 128 base OTs each, under tags of the pair's own (``<tag>/<i>.<j>/{r,d}/{a,b}``):
a *direct* pair for the products, a *randomness* pair for the requests below; then, over each
direct session, the *one-hot OTs* of the choosing site's attribute values
(:mod:`protocols.ot.one_hot`: one IKNP OT per attribute value and record, kept for the run).
Semi-honest throughout.

**The products, directly.** Both products of the driver have a 0/1 operand: the winner's
one-hot column ``[A = v]`` in step 2, the owner's one-hot ``X_s^T`` in step 3. Oblivious
transfers choosing by those bits multiply it by the other site's ring vector, with no mask and
no dealt randomness (:meth:`OTDealing.outer_product`, :meth:`OTDealing.dot_owner`,
:meth:`OTDealing.dot_holder`):

* *outer* (step 2; winner ``w`` holds ``A``, ``V x N`` bits; holder ``h`` its share ``B``):
  for each ``(v, t)`` ``w`` chooses by ``A[v, t]``, ``h``'s correlation is the row
  ``(B[parent(v) p + c, t])_c``; ``w`` keeps ``y = x + A[v, t] B[...]``, ``h`` keeps ``-x``:
  additive shares of ``A ⊙ B`` row-wise, the product of
  :func:`protocols.engine.dealing.outer_product`. Fresh vector OTs of width ``p`` (the
  attribute ``A`` is the winner's secret, so the OTs of its fixed one-hot data cannot
  serve: the holder would have to know which attribute's). When every child of a parent is
  interior, its last child needs none: every record has one value, so the children's rows
  of ``A`` add up to 1 and the last child's share is the parent's share minus its
  siblings' (public: both sites know which children are leaves). ``(V - 1) N`` OTs for such
  a parent, one for each interior child and record otherwise.
* *dot* (step 3; owner ``s``, holder ``h``): additive shares of ``X_s^T Z_h`` for every
  attribute of ``s``, by the one-hot OTs of ``s``'s values made at the start
  (:meth:`protocols.ot.one_hot.OneHotChooser.products`): the owner's values never change
  during a run, so each product only hashes the kept OT rows under fresh tweaks, and the
  holder sends one correction ``Z_h[t] + Σ_u x_{j,t,u}`` per attribute and record; nothing
  goes back. The holder's share then goes to the owner as before: through the 1-out-of-2
  OT on the remaining attributes, with its part of the holders' zero-sharing.

Each direct session is used by one direction of one pair only, and the driver uses it in the
same order at both sites: per level, the outer-product chunks in which this site is the
winner (one coroutine, chunk by chunk), then the dot-product chunks in which it is the owner
(one coroutine); step 2 ends at a site before its step 3 begins. So the sessions' batch
numbers agree without any coordination.

**The randomness, on request** (:meth:`OTDealing.serve`, beside the site's program as with a
helping site, :func:`protocols.engine.dealing.run_beside`). The requests that a dealer would
serve between ``a`` and ``b`` and that remain: the pads of the 1-out-of-2 OT of a dot product
(``xdot``) and the permuted opening (``perm``). The two sites make them over their
randomness sessions in one order, fixed by the earlier site of the pair, the *leader*: a
site's request goes to the leader (the leader's own into its queue), the leader announces
each in turn (``levels/ot/order/<n>``) and both make it. A request holds only public fields
(kind, sites, tag, shape, attribute sizes, number of classes); the class site's permutations
stay with it.

* *xdot*: Beaver's OT precomputation is a random OT. The owner draws the bits ``c`` (one per
  attribute and node), the holder a uniform ``Δ`` per block; a vector OT gives the owner
  ``y = x + c Δ`` and the holder the pads ``R_0 = x``, ``R_1 = x + Δ``: the owner has
  ``R_c``, as a dealer would have given it.
* *perm*: the dealer gave the owner ``s`` uniform ``K, L`` and the class site ``C`` the array
  ``Kπ - L``. Here ``s`` draws ``K``; ``Kπ`` is ``K`` times the block-diagonal permutation
  matrix that ``C`` holds, whose entries are bits: for each block ``b`` and classes ``j, c``,
  ``C`` chooses by ``[π_b(j) = c]`` and ``s``'s column ``K[:, b p + c]`` is the correlation;
  summing over ``c``, ``C`` gets ``Kπ + Σx`` and ``s`` sets ``L = -Σx``. ``B p^2`` OTs of
  width ``m``. The opening is then the dealer's: ``s`` sends ``a - K``, ``C`` answers
  ``(a - K + T)π + Kπ - L``, ``s`` adds ``L`` (:func:`open_permuted_owner_ot`).

Rings: every OT here computes in the driver's ring ``Z_{2^l}`` (``l = 16`` or 32) directly;
:func:`protocols.ot.iknp.ring_products_send` (Gilboa products of two ring values,
``l`` OTs each) is the same: shares mod ``2^64`` truncated to ``l`` bits are shares mod
``2^l``, since ``2^l`` divides ``2^64``.

**What each site learns** (ledger). What it learns with a dealer (the driver's docstring:
``ppid3/structure``, its own attribute counts, at the class site the node counts and best
gains), plus the requests of its partners (``levels/ot-request``: kind, sites, shape,
attribute sizes, number of classes, all public in the driver, which every site runs on the
public structure) and the sizes of its OTs (``ot/base``, ``ot/vector``, ``ot/kept``,
``ot/one-hot-setup``, ``ot/one-hot-use``: numbers, widths, the attribute sizes). Nothing
else, since every OT message is uniform to its receiver: the chooser's bits (one-hot data,
``c``, ``[π_b(j) = c]``) are hidden from the other site by the OT (the extension matrix is
masked by PRG streams of seeds that site lacks); a one-hot correction ``Z_h[t] + Σ_u
x_{j,t,u}`` is masked by the one pad the owner lacks, fresh at every product
(:mod:`protocols.ot.one_hot`); and the other site's correlation (a share row, ``Δ``, a
column of ``K``) reaches the chooser only as ``x + bit · Δ``, masked by the pad ``x`` it
does not know. The outputs are what a dealer's products give: the two shares of a product
add up to it, the holder's (``-x``, or ``-Σ_t x``) uniform; the pads and ``Kπ - L`` are
uniform. (The chooser does know the other site's share where its own bit is 0, as with any
OT product: there the product is 0, which it knows anyway.) So:

* *outer*, *dot*: neither site learns the other's operand (a share, or one-hot data); each
  keeps a uniform share.
* *xdot* pads: the owner's ``e = want ⊕ c`` still reaches the holder as a uniform bit.
* *perm*: the owner learns nothing of ``π`` (the class site's choices), then its counts in
  the order ``π`` as with a dealer; the class site receives uniform outputs and ``a - K``,
  uniform (``K`` never leaves the owner). Unlike with a dealer or a helping site, no party
  but the class site ever knows a class order.

Trust: **semi-honest sites**, and no third party at all. What two sites of a product hold at
the end is what they hold with a dealer, and no dealer holds the rest. Semi-honest only: an
actively cheating site could send an inconsistent IKNP matrix or wrong correlations
(:mod:`protocols.ot.iknp`); nothing here detects it.

Cost: per outer product of ``V`` children about ``(V - 1) N`` vector OTs of ``p`` ring
elements (``16 + p l`` bytes each, ``l`` bytes an element); per dot product one correction of
``cols`` ring elements per attribute and record (``J N cols l`` bytes for ``J`` attributes,
and AES over ``m N cols l`` bytes of pads at each site), after a setup of ``16 m N`` bytes
per direction of a pair (``m`` the owner's attribute values). About ``J`` times the traffic
of a dealer's masked dot product (``N cols l``): the price of having no dealer. Memory: 16
bytes per attribute value and record of the partner's, and as much of one's own, per
partner.

References: Y. Ishai, J. Kilian, K. Nissim, E. Petrank, CRYPTO 2003 (the OTs); N. Gilboa,
CRYPTO 1999 (the products); D. Beaver, CRYPTO 1991 (the triples).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from mpc.crypto import randomness
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.expect import ANY, boolean, either, integer, list_of, one_of, record, text
from mpc.runtime.party import Party
from mpc.runtime.view import public
from protocols.engine.dealing import A_MINUS_K, PERMUTED_OPEN, Dealing, permute_blocks
from protocols.engine.ring import Ring
from protocols.engine.session import Session
from protocols.engine.triples import Needs, Pool, ot_session, ot_triples
from protocols.ot.iknp import (
    ExtensionReceiver,
    ExtensionSender,
    extension_receiver,
    extension_sender,
)
from protocols.ot.one_hot import OneHotChooser, OneHotVectors, one_hot_chooser, one_hot_vectors
from protocols.ot.vector_ot import vector_ots_receive, vector_ots_send

__all__ = [
    "OTDealing",
    "leader_of",
    "open_permuted_class_site_ot",
    "open_permuted_owner_ot",
    "ot_dealing",
]

T = TypeVar("T")

#: a site's numbered requests to the leader of its pair
REQUESTS = "levels/ot/req"
#: the leader's numbered announcements of the pair's next request
ORDERS = "levels/ot/order"
#: request fields that travel to the partner (public shapes)
PUBLIC_FIELDS = ("kind", "peer", "tag", "shape", "parents", "blocks", "p", "transfer")
DONE = "done"

#: a request of the pair (public fields only), or that the partner is done
_REQUEST_FORM = either(
    one_of(DONE),
    record(
        {
            "site": text(),
            "peer": text(),
            "kind": text(("xdot", "perm")),
            "tag": text(),
            "shape": list_of(integer(lo=1)),
            "parents": ANY,
            "blocks": ANY,
            "p": ANY,
            "transfer": boolean(),
        },
        optional=("parents", "blocks", "p", "transfer"),
    ),
)
#: what a site receives from its partner besides the products' own messages
PAIR_REQUEST = public(
    "levels-ot/request",
    "a product the partner needs randomness for: kind, sites, tag, shapes (public); or 'done'",
    expect=_REQUEST_FORM,
)
PAIR_ORDER = public(
    "levels-ot/order",
    "the pair's next product to make randomness for (the leader's order)",
    ordered=False,
    expect=_REQUEST_FORM,
)


def leader_of(a: str, b: str, sites: Sequence[str]) -> str:
    """The site of a pair that orders its requests: the earlier of the two in ``sites``."""
    names = list(sites)
    return a if names.index(a) < names.index(b) else b


async def ot_dealing(
    party: Party, codes: np.ndarray, sizes: Sequence[int], *, dtype: Any, tag: str = "levels/ot"
) -> OTDealing:
    """Set up OT sessions with every other site (all pairs at once): in each direction a
    *randomness* session and a *direct* one, so either site of a pair may choose; over each
    direct session, the one-hot OTs of the chooser's attribute values (``codes``, ``n x J``,
    attribute ``j`` of ``sizes[j]`` values), kept for the whole run
    (:mod:`protocols.ot.one_hot`). ``party`` is the site view."""
    names = list(party.parties)
    me = party.name
    n = codes.shape[0]

    async def pair(peer: str, use: str) -> tuple[str, tuple[ExtensionSender, ExtensionReceiver]]:
        i, j = sorted((names.index(me), names.index(peer)))
        t = f"{tag}/{i}.{j}/{use}"
        if leader_of(me, peer, names) == me:
            sender = await extension_sender(party, peer, tag=f"{t}/a")
            receiver = await extension_receiver(party, peer, tag=f"{t}/b")
        else:
            receiver = await extension_receiver(party, peer, tag=f"{t}/a")
            sender = await extension_sender(party, peer, tag=f"{t}/b")
        return peer, (sender, receiver)

    async def one_hot(
        peer: str, sessions: tuple[ExtensionSender, ExtensionReceiver]
    ) -> tuple[str, tuple[OneHotVectors, OneHotChooser]]:
        sender, receiver = sessions
        i, j = sorted((names.index(me), names.index(peer)))
        mine = one_hot_chooser(party, receiver, codes, sizes,
                               tag=f"{tag}/{i}.{j}/oh/{names.index(me)}")  # fmt: skip
        theirs = one_hot_vectors(party, sender, n, tag=f"{tag}/{i}.{j}/oh/{names.index(peer)}")
        chooser, vectors = await asyncio.gather(mine, theirs)
        return peer, (vectors, chooser)

    peers = [s for s in names if s != me]
    made = await asyncio.gather(*(pair(s, "r") for s in peers), *(pair(s, "d") for s in peers))
    direct = dict(made[len(peers) :])
    fixed = dict(await asyncio.gather(*(one_hot(s, direct[s]) for s in peers)))
    return OTDealing(party, dict(made[: len(peers)]), direct, fixed, dtype=dtype)


class OTDealing(Dealing):
    """The :class:`~protocols.engine.dealing.Dealing` of ``helper="ot"``: the randomness of a
    product is made by its two sites over their OT session, in the order the pair's leader
    fixes; :meth:`serve` runs beside the site's program and :meth:`receive` hands the
    product code its part, in the dealer's format. It computes products directly
    (:attr:`direct_products`): the owners' dot products are computed by the pair itself
    (:meth:`dot_owner`, :meth:`dot_holder`). Made by :func:`ot_dealing`."""

    direct_products = True

    def __init__(
        self,
        party: Party,
        sessions: dict[str, tuple[ExtensionSender, ExtensionReceiver]],
        direct: dict[str, tuple[ExtensionSender, ExtensionReceiver]],
        fixed: dict[str, tuple[OneHotVectors, OneHotChooser]],
        *,
        dtype: Any,
    ) -> None:
        me = party.name
        super().__init__(party, lambda a, b, sites: b if a == me else a)
        self.sessions, self.direct, self.dtype = sessions, direct, np.dtype(dtype)
        self.fixed = fixed
        self._queues: dict[str, asyncio.Queue[Any]] = {
            s: asyncio.Queue() for s in sessions if leader_of(me, s, self.sites) == me
        }
        self._material: dict[str, asyncio.Future[Any]] = {}
        self._own: dict[str, dict[str, Any]] = {}  # my requests, with their secret fields
        self.made = 0

    def asked(self) -> list[str]:
        return list(self.sessions)

    async def ask(self, request: Any) -> None:
        """Queue ``request`` with the leader of the pair (its public fields only); an outer
        product needs no randomness (:meth:`outer_product`)."""
        if request["kind"] == "outer":
            return
        peer = request["peer"]
        me = self.party.name
        public = {k: request[k] for k in PUBLIC_FIELDS if k in request} | {"site": me}
        self._own[request["tag"]] = request
        await self._to_leader(peer, public)

    async def close(self) -> None:
        for peer in self.sessions:
            await self._to_leader(peer, DONE)

    async def _to_leader(self, peer: str, message: Any) -> None:
        """Into this site's own queue of the pair's requests if it leads the pair with
        ``peer``, else to ``peer``, numbered."""
        if peer in self._queues:
            self._queues[peer].put_nowait(message)
            return
        n = self._next.get(peer, 0)
        self._next[peer] = n + 1
        await self.party.send(peer, f"{REQUESTS}/{n}", message)

    def _future(self, tag: str) -> asyncio.Future[Any]:
        if tag not in self._material:
            self._material[tag] = asyncio.get_running_loop().create_future()
        return self._material[tag]

    async def triples(self, s: Session, tag: str, needs: Needs, ring: Ring) -> Pool:
        """The triples of a batch of the session ``s``: no one deals, ``p0`` and ``p1`` make
        them by oblivious transfer, over one OT session of their own for the whole run (128
        base OTs once), one ring's triples at a time (the session's extensions are numbered
        in order)."""
        async with s.ot_lock:
            if s.ot is None:
                s.ot = await ot_session(s.party, s.other, s.role, tag)
            if (needs.selects or needs.pairs) and s.ot_back is None:  # p1 sending
                s.ot_back = await ot_session(s.party, s.other, 1 - s.role, f"{tag}/back")
            return await ot_triples(s.party, s.other, s.role, tag, needs, ring, s.ot, s.ot_back)

    async def receive(self, peer: str, tag: str) -> Any:
        value = await self._future(tag)
        del self._material[tag]
        return value

    # ------------------------------------------------------------------------- the service

    async def serve(self) -> int:
        """Make the randomness of every product with every partner, in each pair's order,
        until both sites of each pair are done. Returns the number of products made."""
        await asyncio.gather(*(self._serve_pair(peer) for peer in self.sessions))
        left = [t for t, f in self._material.items() if not f.done()]
        if left:
            raise ProtocolError(f"no randomness was made for {left[:3]}")
        return self.made

    async def _serve_pair(self, peer: str) -> None:
        if peer not in self._queues:  # the partner leads: make what it announces, in order
            n = 0
            while True:
                step = f"{ORDERS}/{n}"
                req = await self.party.recv(peer, step, PAIR_ORDER)
                n += 1
                if req == DONE:
                    return
                await self._make(peer, self._checked(peer, req, step))
            return
        queue = self._queues[peer]

        async def read() -> None:
            n = 0
            while True:
                step = f"{REQUESTS}/{n}"
                req = await self.party.recv(peer, step, PAIR_REQUEST)
                n += 1
                if req == DONE:
                    queue.put_nowait(DONE)
                    return
                checked = self._checked(peer, req, step)
                if checked["site"] != peer:
                    raise ProtocolError(f"{peer} sent a request in the name of {checked['site']}")
                queue.put_nowait(checked)

        reader = asyncio.ensure_future(read())
        try:
            done, n = 0, 0
            while done < 2:
                item = await queue.get()
                if item == DONE:
                    done += 1
                    continue
                await self.party.send(peer, f"{ORDERS}/{n}", item)
                n += 1
                await self._make(peer, item)
            await self.party.send(peer, f"{ORDERS}/{n}", DONE)
            await reader
        finally:
            if not reader.done():
                reader.cancel()

    def _checked(self, peer: str, req: Any, step: str) -> dict[str, Any]:
        """A request of the pair (of the receipts' form), between the two of them."""
        me = self.party.name
        site, other, tag = req["site"], req["peer"], req["tag"]
        if {site, other} != {me, peer}:
            raise ProtocolError(f"{peer} sent, at {step}, a request between {site!r}, {other!r}")
        if site == peer:
            record = {k: v for k, v in req.items() if k != "tag"}
            self.party.ledger.record("levels/ot-request", record, step=tag)
        return req

    async def _make(self, peer: str, req: dict[str, Any]) -> None:
        me = self.party.name
        mine = req["site"] == me
        own = self._own.pop(req["tag"], {}) if mine else {}
        kind, shape = req["kind"], req["shape"]
        sender, receiver = self.sessions[peer]
        if kind == "xdot" and len(shape) == 3:
            material = await self._xdot(req, shape, mine, sender, receiver)
        elif kind == "perm" and len(shape) == 3:
            material = await self._perm(own, shape, mine, sender, receiver, f"{req['tag']}/k")
        else:
            raise ProtocolError(f"{req['site']} asked for {kind!r} of shape {shape}")
        self._future(req["tag"]).set_result(material)
        self.made += 1

    async def _xdot(
        self,
        req: dict[str, Any],
        shape: list[int],
        mine: bool,
        sender: ExtensionSender,
        receiver: ExtensionReceiver,
    ) -> dict[str, Any]:
        m, _, cols = shape
        blocks, p = req.get("blocks"), req.get("p")
        if not (
            isinstance(blocks, list)
            and blocks
            and all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in blocks)
            and sum(blocks) == m
            and isinstance(p, int)
            and p >= 1
            and cols % p == 0
        ):
            raise ProtocolError(f"{req['site']} asked for a dot product with bad blocks")
        if req.get("transfer") is False:  # --reveal tree: the product stays shared, no transfer
            return {}
        n_attr, n_blocks, width = len(blocks), cols // p, max(blocks) * p
        if mine:  # the owner: the random OT's choice bits c
            c = (
                np.frombuffer(
                    randomness.token_bytes(n_attr * n_blocks, f"{req['tag']}/c"), np.uint8
                )
                & 1
            )
            y = await vector_ots_receive(self.party, receiver, c, width, self.dtype)
            Rc = _blocks_to_counts(y, blocks, n_blocks, p)
            c_bits = c.astype(bool).reshape(n_attr, n_blocks)
            return {"c": pack_array(c_bits), "Rc": pack_array(Rc)}
        D = Ring.of(self.dtype).random(randomness.seed(f"{req['tag']}/d"),
                                       (n_attr * n_blocks, width))  # fmt: skip
        x = await vector_ots_send(self.party, sender, D)
        R0 = _blocks_to_counts(x, blocks, n_blocks, p)
        R1 = _blocks_to_counts(x + D, blocks, n_blocks, p)
        return {"ot": pack_array(np.stack([R0, R1]))}

    # ------------------------------------------------------------------ the direct products

    async def outer_product(
        self,
        x: np.ndarray,
        *,
        a_side: str,
        b_side: str,
        parents: np.ndarray,
        p: int,
        tag: str = "",
        derived: np.ndarray | None = None,
    ) -> np.ndarray:
        """This site's additive share of :func:`protocols.engine.dealing.outer_product` of
        ``a_side``'s one-hot ``A`` (``V x N``, bits) and ``b_side``'s share ``B``
        (``P p x N``), directly: a vector OT per entry of ``A``, ``a_side`` choosing by
        ``A[v, t]``, ``b_side`` giving the row ``(B[parents[v] p + c, t])_c``. Over the pair's
        direct session in which ``a_side`` chooses.

        ``derived`` (public, both sides alike) marks rows that need no OT: the last child of
        a parent whose every child is in ``A``. Every record has one value, so the rows of a
        parent's children add up to 1 and their products to ``B``'s block: ``b_side`` takes
        its block minus its shares of the siblings, ``a_side`` minus its own."""
        v, n = len(parents), x.shape[1]
        skip = np.zeros(v, dtype=bool) if derived is None else np.asarray(derived, dtype=bool)
        keep = np.flatnonzero(~skip)
        out = np.empty((v, p, n), dtype=x.dtype)
        if self.party.name == a_side:
            _, receiver = self.direct[b_side]
            chosen = x[keep].reshape(-1)
            y = await vector_ots_receive(self.party, receiver, chosen, p, x.dtype)
            out[keep] = y.reshape(len(keep), n, p).transpose(0, 2, 1)
            block = None
        else:
            sender, _ = self.direct[a_side]
            block = x.reshape(-1, p, n)
            rows = block[parents[keep]].transpose(0, 2, 1).reshape(-1, p)
            got = await vector_ots_send(self.party, sender, np.ascontiguousarray(rows))
            out[keep] = -got.reshape(len(keep), n, p).transpose(0, 2, 1)
        for d in np.flatnonzero(skip):
            siblings = np.flatnonzero((parents == parents[d]) & (np.arange(v) != d))
            rest = out[siblings].sum(axis=0, dtype=x.dtype)
            out[d] = -rest if block is None else block[parents[d]] - rest
        return out

    async def open_permuted_owner(self, a: np.ndarray, *, class_site: str, tag: str) -> np.ndarray:
        return await open_permuted_owner_ot(
            self.party, a, class_site=class_site, dealing=self, tag=tag
        )

    async def open_permuted_class_site(
        self, T: np.ndarray, perms: np.ndarray, *, owner: str, tag: str
    ) -> None:
        await open_permuted_class_site_ot(self.party, T, perms, owner=owner, dealing=self, tag=tag)

    async def dot_owner(self, holder: str, cols: int, *, tag: str) -> np.ndarray:
        """The owner's additive share of ``X^T Z_h`` (``m x cols``): its one-hot ``X^T``
        (every attribute, fixed for the run) times the holder's share ``Z_h``, by the
        one-hot OTs made with ``holder`` at the start
        (:meth:`protocols.ot.one_hot.OneHotChooser.products`): one correction per attribute
        and record comes from the holder, nothing goes back."""
        _, chooser = self.fixed[holder]
        return await chooser.products(self.party, cols, self.dtype, tag=tag)

    async def dot_holder(
        self, owner: str, z: np.ndarray, *, tag: str, blocks: Sequence[int]
    ) -> np.ndarray:
        """The holder's side of :meth:`dot_owner`: ``z`` is its share ``Z_h^T``
        (``cols x N``); returns its additive share (``m x cols``). ``blocks``: the owner's
        attribute sizes as it announced them, which must be those of its one-hot OTs."""
        vectors, _ = self.fixed[owner]
        if vectors.sizes != list(blocks):
            raise ProtocolError(
                f"{owner} announced attribute sizes {list(blocks)} unlike those of its one-hot OTs"
            )
        return await vectors.products(self.party, z, tag=tag)

    async def _perm(
        self,
        own: dict[str, Any],
        shape: list[int],
        mine: bool,
        sender: ExtensionSender,
        receiver: ExtensionReceiver,
        label: str,
    ) -> dict[str, Any]:
        m, B, p = shape
        if mine:  # the class site: the bits of its permutation matrices choose
            perms = np.asarray(own.get("perms"), dtype=np.int64)
            if perms.shape != (B, p):
                raise ConfigError(f"a permuted opening of {B} blocks of {p} with {perms.shape}")
            bits = perms[:, :, None] == np.arange(p)[None, None, :]  # [b, j, c]: π_b(j) = c
            y = await vector_ots_receive(self.party, receiver, bits.reshape(-1), m, self.dtype)
            d = y.reshape(B, p, p, m).sum(axis=2, dtype=self.dtype)  # Kπ - L
            return {"d": np.ascontiguousarray(d.transpose(2, 0, 1).reshape(m, B * p))}
        K = Ring.of(self.dtype).random(randomness.seed(label), (m, B * p))
        cols = K.T.reshape(B, 1, p, m)  # [b, ., c]: K[:, b p + c]
        delta = np.broadcast_to(cols, (B, p, p, m)).reshape(-1, m)
        x = await vector_ots_send(self.party, sender, np.ascontiguousarray(delta))
        L = -x.reshape(B, p, p, m).sum(axis=2, dtype=self.dtype)
        return {"K": K, "L": np.ascontiguousarray(L.transpose(2, 0, 1).reshape(m, B * p))}


def _blocks_to_counts(
    values: np.ndarray, blocks: Sequence[int], n_blocks: int, p: int
) -> np.ndarray:
    """One vector per (attribute, node) (``L B x W``) laid out as the ``sum(blocks) x B p``
    count matrix whose block each governs (the layout of
    :func:`protocols.engine.dealing.expand_blocks`)."""
    per = values.reshape(len(blocks), n_blocks, -1)
    parts = [per[j, :, : s * p].reshape(n_blocks, s, p).transpose(1, 0, 2).reshape(s, -1)
             for j, s in enumerate(blocks)]  # fmt: skip
    return np.concatenate(parts, axis=0)


# ----------------------------------------------------------------------------- the opening


async def open_permuted_owner_ot(
    party: Party, a: np.ndarray, *, class_site: str, dealing: OTDealing, tag: str
) -> np.ndarray:
    """The owner's side of the permuted opening with ``K, L`` made with the class site
    (:class:`OTDealing`): sends ``a - K``, receives ``(a - K + T)π + Kπ - L``, adds ``L``."""
    got = await dealing.receive(class_site, tag)
    K, L = got["K"], got["L"]
    if K.shape != a.shape:
        raise ProtocolError(f"{class_site} opened {K.shape} counts, the owner has {a.shape}")
    await party.send(class_site, f"{tag}/a-K", pack_array(a - K))
    y = unpack_array(await party.recv(class_site, f"{tag}/open", PERMUTED_OPEN), a.dtype,
                     a.shape, class_site, "permuted counts")  # fmt: skip
    return y + L


async def open_permuted_class_site_ot(
    party: Party,
    T: np.ndarray,
    perms: np.ndarray,
    *,
    owner: str,
    dealing: OTDealing,
    tag: str,
) -> None:
    """The class site's side: asks for the pair's ``Kπ - L`` (its permutations stay here),
    receives ``a - K`` (uniform) and answers ``(a - K + T)π + Kπ - L``."""
    B, p = perms.shape
    m, cols = T.shape
    if cols != B * p:
        raise ConfigError(f"a permuted opening of {cols} columns needs {cols // p} blocks")
    await dealing.ask({"kind": "perm", "peer": owner, "tag": tag, "shape": [m, B, p],
                       "perms": perms.tolist()})  # fmt: skip
    d = (await dealing.receive(owner, tag))["d"]
    x = unpack_array(await party.recv(owner, f"{tag}/a-K", A_MINUS_K), T.dtype, (m, cols), owner,
                     "a - K")  # fmt: skip
    await party.send(owner, f"{tag}/open", pack_array(permute_blocks(x + T, perms) + d))
