"""PPID3 level by level — Vaidya & Clifton, Algorithm 7, with the counts of Algorithms 3 and 6
computed on additive shares (a commodity server, ``dealer``, supplies correlated randomness)
for every node of a tree level at once.

The depth-first driver of :mod:`protocols.ppid3` visits one node per exchange, about ten round
trips a node; a depth-6 tree on Adult has 13,041 nodes. This driver builds the same tree one
*level* per exchange: every message carries all nodes of the level. Everything it decides is
decided as in Algorithm 7, from the same integer counts with the same tie rules
(:func:`mpc.id3.best_site_attribute`), so the tree equals :class:`mpc.id3.ID3Classifier` on
the joined data and the one of :mod:`protocols.ppid3`.

Roles: ``k >= 2`` sites (one holds the class) and the dealer. For an interior node ``ν``
the sites in ``H_ν`` (the class site and the owners of the splits on its path: public) hold
additive shares, in the ring ``Z_{2^b}`` (``b = 16`` when there are fewer than ``2^16`` rows,
else 32), of the ``N x p`` matrix ``Z^ν[t, c] = [row t reaches ν][class of t is c]``. A level:

1. **Leaves** (Algorithm 7, lines 1-9): the class site knows each node's class distribution
   and announces which nodes are leaves (no attribute left — IsREmpty's answer, public in the
   structure —, the depth limit, one class only, no rows, fewer than ``min_samples_split``).
2. **Shares of the interior nodes** (Figure 1's constraint sets, as products): a child
   ``ν = π.v`` of a node ``π`` split by site ``w`` on ``A`` has ``Z^ν = Z^π ⊙ [A = v]``. For
   each holder ``h`` of ``Z^π`` other than ``w``, one *outer product* (Du & Zhan's commodity
   product, row by row: ``w``'s ``N x |V|`` one-hot columns times ``h``'s ``N x p`` share)
   gives both shares of every interior child of every node ``w`` split, in one exchange.
3. **Attribute counts** (Algorithm 6, lines 1-7): the owner ``s`` of remaining attributes
   obtains ``X_s^T Z^ν`` for all of them: its own share locally, and with each other holder
   ``h`` a dealer dot product in which ``X_s^T + Ra`` (every attribute of ``s``) travels once
   per run. ``h`` cannot know which attributes of ``s`` remain at ``ν``, and ``s`` must not
   see the counts of the attributes it already used on the path (their row ``a`` would be
   ``ν``'s class distribution); so ``h``'s share comes back through a 1-out-of-2 oblivious
   transfer per (attribute, node) with the dealer's precomputed randomness (Beaver's OT
   precomputation): ``s`` receives ``h``'s share of a remaining attribute and a zero block
   for a used one, ``h`` learns a uniformly random bit.
   **Class order**: the owner must not see the classes in the same order at every node
   (Section 1 of the paper). The class site draws a fresh permutation ``π_ν`` of the classes
   for every interior node (OS generator) and subtracts a fresh uniform mask ``T`` from the
   share of the counts it hands the owner, and a *permuted opening*
   (:func:`protocols.fast_counts.open_permuted_owner`: one exchange between the owner and the
   class site per level, the dealer giving the owner ``K, L`` and the class site ``Kπ - L``)
   gives the owner ``X_s^T Z^ν`` with its class columns in the order ``π_ν``. The class site
   sees a uniformly masked array; the dealer knows the permutations but sees no count.
4. **Best gains** (Algorithm 5): each site sends the class site its best gain per node (gains
   do not depend on the class order:
   :func:`protocols.distribution_counts.gain_in_any_class_order`); the class site announces
   the winning site of each node (site order breaks ties).
5. **Branching** (lines 11-19): each winner announces its nodes' number of children, and sends
   the class site the class distributions of the children — the rows of the winning
   attribute's count matrix, which it has already, in the node's class order, which the class
   site undoes (Theorem 1 lets the class site learn every node's class distribution; the
   depth-first driver gets the same numbers with a DistributedCounts call per child).

Finally each site tells the owner of every parent of its nodes the nodes' random ids, and the
public structure is numbered depth first as in :mod:`protocols.ppid3`, so classification
(:mod:`protocols.classify_instance`) and the audit view are the same.

What each party learns (ledger):

* the class site: the class distribution of every node (``ppid3/node-counts``) and each
  site's best gain at every interior node (``ppid3/best-gains``) — Theorem 1;
* the owner of an attribute: its ``|A| x p`` count matrix at every node where it is a
  candidate (``fast-counts/attribute-counts``) — Theorem 1's ``|S_a|`` per class, with the
  class columns in a fresh order per node that it does not know;
* every site: the public structure (``ppid3/structure``) and which sites hold shares of each
  node (the owners on its path: the structure tells it); every message from another site is
  a masked array, a share, or an OT choice bit, each uniform on its own;
* the dealer: every request as received (``fast-counts/request``): which two sites multiply,
  the shapes (rows, classes, the number of nodes of a batch), the fan-outs (the parent of
  each child in an outer product), the domain sizes of the owner's attributes (``blocks``) and
  the number of classes; that a mask seed or the class site's permutations came with a
  request (named, not copied); each site's ``fast-counts/done``. Never a count or a row.

No site learns the size of another site's constraint set, any sub-intersection size, or which
of another site's attributes were used on a path. Extra trust assumption: **the dealer
colludes with no site**.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.errors import ConfigError, ProtocolError
from mpc.id3 import best_site_attribute
from mpc.runtime import Party
from mpc.tree import majority
from protocols.distribution_counts import (
    SiteView,
    gain_in_any_class_order,
    is_same_class,
    unpermute_classes,
)
from protocols.dot_product import _pack, _unpack
from protocols.fast_counts import (
    deal_permuted_open,
    open_permuted_class_site,
    open_permuted_owner,
    serve_dealer_requests,
)
from protocols.ppid3 import DistributedTree, check_sites
from protocols.psi_ca import os_permutation

__all__ = [
    "DEALER",
    "outer_shares",
    "ppid3_levels",
    "ring_dtype",
    "ring_matmul",
    "ring_random",
    "serve_level_dealer",
]

DEALER = "dealer"

#: columns of one product batch (interior children, or nodes x classes): bounds the memory of
#: a level to a few ``N x CHUNK_COLUMNS`` arrays
CHUNK_COLUMNS = 64


# ----------------------------------------------------------------------------- the ring


def ring_dtype(n_rows: int) -> type[np.unsignedinteger[Any]]:
    """The ring of the shares: ``Z_{2^16}`` below ``2^16`` rows, else ``Z_{2^32}`` (a count
    never exceeds the number of rows, so it is exact in the ring)."""
    if n_rows < 2**16:
        return np.uint16
    if n_rows < 2**21:
        return np.uint32
    raise ConfigError(f"{n_rows} rows: the share ring supports fewer than 2^21 rows")


def ring_random(seed: bytes, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Uniform ring elements expanded from a 32-byte ``seed`` (AES-256-CTR keystream)."""
    if not isinstance(seed, bytes) or len(seed) != 32:
        raise ProtocolError("a mask seed must be 32 bytes")
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    cipher = Cipher(algorithms.AES(seed), modes.CTR(bytes(16)))
    out = bytearray(size + 15)
    n = cipher.encryptor().update_into(bytes(size), out)
    return np.frombuffer(out, dtype=np.dtype(dtype).newbyteorder("<"), count=n // np.dtype(
        dtype).itemsize).astype(dtype, copy=False).reshape(shape)  # fmt: skip


Left = tuple[Any, tuple[np.ndarray, ...]]  # (ring dtype, float64 16-bit limbs)


def ring_left(a: np.ndarray) -> Left:
    """``a`` prepared as the left operand of :func:`ring_matmul` (its 16-bit limbs as
    float64), for a matrix that multiplies many right-hand sides."""
    if a.dtype == np.uint16:
        return a.dtype, (a.astype(np.float64),)
    if a.dtype == np.uint32:
        return a.dtype, ((a & 0xFFFF).astype(np.float64), (a >> 16).astype(np.float64))
    raise ProtocolError(f"no ring of dtype {a.dtype}")


def ring_matmul(a: np.ndarray | Left, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in the ring of their dtype, exactly, with float64 BLAS: 16-bit limbs whose
    products summed over fewer than ``2^21`` terms stay below ``2^53``. ``a`` may be
    prepared by :func:`ring_left`."""
    dtype, limbs = ring_left(a) if isinstance(a, np.ndarray) else a
    if b.dtype != dtype or limbs[0].shape[1] != b.shape[0]:
        raise ProtocolError(f"ring product of {dtype}{limbs[0].shape} and {b.dtype}{b.shape}")
    if b.shape[0] >= 2**21:
        raise ConfigError("ring products support fewer than 2^21 rows")
    if dtype == np.uint16:
        return (limbs[0] @ b.astype(np.float64)).astype(np.uint64).astype(np.uint16)
    a0, a1 = limbs
    b0, b1 = (b & 0xFFFF).astype(np.float64), (b >> 16).astype(np.float64)
    low = (a0 @ b0).astype(np.uint64)
    mid = ((a0 @ b1).astype(np.uint64) + (a1 @ b0).astype(np.uint64)) << np.uint64(16)
    return (low + mid).astype(np.uint32)


def outer_product(a: np.ndarray, b: np.ndarray, parents: np.ndarray, p: int) -> np.ndarray:
    """``T[v, c, t] = a[v, t] * b[parents[v]*p + c, t]`` (``V x p x N``, in the ring): each
    row of ``a`` times the ``p`` rows of ``b`` of its parent, elementwise. (Arrays are kept
    with the ``N`` rows of the table as their last, contiguous axis.)"""
    out = b.reshape(-1, p, b.shape[1])[parents]
    out *= a[:, None, :]
    return out


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


async def _outer(
    party: Party,
    x: np.ndarray,
    *,
    a_side: str,
    b_side: str,
    parents: np.ndarray,
    p: int,
    dealer: str,
    tag: str,
) -> np.ndarray:
    """Additive shares of the row-wise outer product (:func:`outer_product`) of ``a_side``'s
    ``A`` (``V x N``) and ``b_side``'s ``B`` (``P*p x N``), ``parents[v]`` naming the block of
    ``B`` that row ``v`` of ``A`` is paired with. One exchange: ``a_side`` sends ``A + Ra``,
    ``b_side`` sends ``B + Rb``; the dealer dealt ``Ra`` and ``ra`` (as seeds) to ``a_side``,
    ``Rb`` (a seed) and ``rb = Ra (x) Rb - ra`` to ``b_side``."""
    me_a = party.name == a_side
    other = b_side if me_a else a_side
    n = x.shape[1]
    v = len(parents)
    got = await party.recv(dealer, f"{tag}/dealer")
    if not isinstance(got, dict) or not isinstance(got.get("seed"), bytes):
        raise ProtocolError(f"{dealer} sent no correlated randomness for {tag}")
    dtype = x.dtype
    if me_a:
        R = ring_random(got["seed"], (v, n), dtype)
        r = ring_random(got["seed2"], (v, p, n), dtype)
    else:
        R = ring_random(got["seed"], x.shape, dtype)
        r = _unpack(got.get("r"), dtype, (v, p, n), dealer, "rb")
    await party.send(other, f"{tag}/masked", _pack(x + R))
    shape_other = (None, n) if me_a else (v, n)
    theirs = _unpack(await party.recv(other, f"{tag}/masked"), dtype, shape_other, other, "x+R")
    party.metrics.count("outer_products", n * v * p)
    masks = {"R": R, "r": r, "other": theirs}
    return outer_shares(x if me_a else None, None if me_a else x, parents, p, masks)


# ----------------------------------------------------------------------------- the dealer


async def serve_level_dealer(party: Party, sites: Sequence[str], *, dtype: Any) -> int:
    """The dealer: serve every site's numbered requests (``levels/req/<n>``) until each says
    ``done``. ``outer``: correlated randomness for :func:`_outer`; ``xdot``: for the owner's
    dot products and the oblivious transfer of the holder's share; ``perm``: for the permuted
    opening of an owner's counts. Returns the number of products dealt. It receives shapes,
    fan-outs, domain sizes, seeds of masks and the class permutations, never data."""
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
                raise ProtocolError(f"{site} sent the dealer bad parent indices")
            seed_a, seed_r, seed_b = (secrets.token_bytes(32) for _ in range(3))
            Ra = ring_random(seed_a, (v, rows), dtype)
            ra = ring_random(seed_r, (v, p, rows), dtype)
            Rb = ring_random(seed_b, (cols, rows), dtype)
            rb = outer_product(Ra, Rb, np.asarray(parents, np.int64), p)
            rb -= ra
            await party.send(site, f"{tag}/dealer", {"seed": seed_a, "seed2": seed_r})
            await party.send(peer, f"{tag}/dealer", {"seed": seed_b, "r": _pack(rb)})
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
                raise ProtocolError(f"{site} sent the dealer bad xdot blocks")
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
            Rc = np.where(_expand(c, blocks, n_cls), R0R1[1], R0R1[0])
            await party.send(
                site, f"{tag}/dealer", {"seed": seed_r, "c": _pack(c), "Rc": _pack(Rc)}
            )
            await party.send(peer, f"{tag}/dealer", {"seed": seed_b, "r": _pack(rb), "ot": seed_ot})
        elif kind == "perm" and len(shape) == 3:
            await deal_permuted_open(party, site, peer, tag, shape, req, dtype)
        else:
            raise ProtocolError(f"{site} asked the dealer for {kind!r} of shape {shape}")

    return await serve_dealer_requests(party, sites, "levels/req", handle)


def _expand(bits: np.ndarray, blocks: Sequence[int], p: int) -> np.ndarray:
    """Per-(attribute, node) bits as an ``m x L*p`` mask of the blocks they govern."""
    return np.repeat(np.repeat(bits, list(blocks), axis=0), p, axis=1)


# ----------------------------------------------------------------------------- the driver


@dataclass
class _Node:
    """A node's public record (identical at every site) and this site's private part."""

    key: int
    depth: int
    parent: int | None
    value: int  # index of the branch from the parent
    holders: list[str]  # sites holding shares of Z (public)
    left: list[int]  # attributes each site still has on the path (public)
    leaf: bool = False
    owner: str = ""
    children: list[int] = field(default_factory=list)
    # private
    used: frozenset[int] = frozenset()  # this site's attributes used on the path
    attribute: int = -1  # this site's split attribute, if it won the node
    counts: np.ndarray | None = None  # class distribution (class site)
    label: str | None = None  # majority class (class site)
    by_attr: dict[int, np.ndarray] = field(default_factory=dict)  # attribute counts (owner)
    gains: dict[str, float | None] | None = None  # every site's best gain (class site)
    perm: np.ndarray | None = None  # the node's class order, fresh (class site)


class _Requests:
    """This site's numbered requests to the dealer."""

    def __init__(self, party: Party, dealer: str) -> None:
        self.party, self.dealer, self.n = party, dealer, 0

    async def ask(self, request: Any) -> None:
        n, self.n = self.n, self.n + 1  # before the await: concurrent products share it
        await self.party.send(self.dealer, f"levels/req/{n}", request)


async def ppid3_levels(
    party: Party,
    view: SiteView,
    *,
    class_site: str,
    attribute_counts: Sequence[int],
    dealer: str = DEALER,
    max_depth: int | None = None,
    min_samples_split: int | None = None,
    tag: str = "ppid3",
    progress: Callable[[str], None] | None = None,
) -> tuple[DistributedTree, dict[str, int]]:
    """Algorithm 7 at one site, one tree level per exchange. ``party`` is the site view
    (:class:`protocols.fast_counts.Sites`) whose ``parties`` are the sites; the dealer is
    reached through it. ``attribute_counts`` and the number of classes (announced by the class
    site) are public. Returns the site's part of the tree and its cost counters."""
    check_sites(party, view, class_site, attribute_counts)
    names = list(party.parties)
    is_class = party.name == class_site
    n = len(view.tids)
    if is_class:
        assert view.classes is not None
        p = len(view.classes)
        await party.broadcast(f"{tag}/classes", p)
    else:
        p = await party.recv(class_site, f"{tag}/classes")
        if not isinstance(p, int) or isinstance(p, bool) or p < 1:
            raise ProtocolError(f"{class_site} announced {p!r} classes")
    dtype = ring_dtype(n)
    requests = _Requests(party, dealer)
    cost = {"outer_batches": 0, "dot_batches": 0, "levels": 0}
    # X_s^T: one-hot rows of every attribute of this site, in column order
    sizes = [len(d) for d in view.domains]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    xt = np.zeros((int(offsets[-1]), n), dtype=dtype)
    for j in range(len(sizes)):
        xt[offsets[j] + view.codes[:, j], np.arange(n)] = 1
    prepared: dict[str, Left] = {}  # holder -> the Ra of this site's X^T + Ra
    xt_hat: dict[str, Left] = {}  # owner -> X_owner^T + Ra (as a holder)
    xt_blocks: dict[str, list[int]] = {}  # owner -> its attributes' numbers of values

    nodes: list[_Node] = [_Node(0, 0, None, 0, [class_site], list(attribute_counts))]
    shares: dict[int, np.ndarray] = {}  # node -> this site's share of Z, transposed (p x N)
    if is_class:
        assert view.y is not None
        onehot = np.zeros((p, n), dtype=dtype)
        onehot[view.y, np.arange(n)] = 1
        shares[0] = onehot
        nodes[0].counts = np.bincount(view.y, minlength=p).astype(np.int64)
    frontier = [0]
    while frontier:
        level = [nodes[k] for k in frontier]
        depth = level[0].depth
        t = f"{tag}/L{depth}"
        cost["levels"] += 1
        # 1. leaves, decided by the class site
        if is_class:
            flags = []
            for node in level:
                assert node.counts is not None and view.classes is not None
                total = int(node.counts.sum())
                named = {c: int(x) for c, x in zip(view.classes, node.counts, strict=True)}
                parent_label = nodes[node.parent].label if node.parent is not None else None
                node.label = majority(named) if total > 0 else parent_label
                if node.label is None:
                    raise ConfigError("the training set is empty")
                flags.append(
                    (max_depth is not None and depth >= max_depth)
                    or sum(node.left) == 0
                    or total == 0
                    or is_same_class(node.counts)
                    or (min_samples_split is not None and total < min_samples_split)
                )
            await party.broadcast(f"{t}/leaf", flags)
        else:
            flags = await party.recv(class_site, f"{t}/leaf")
            if not (isinstance(flags, list) and len(flags) == len(level)
                    and all(isinstance(f, bool) for f in flags)):  # fmt: skip
                raise ProtocolError(f"{class_site} announced {flags!r} as the level's leaves")
        for node, f in zip(level, flags, strict=True):
            node.leaf = f
            if f:
                node.owner = class_site
        inner = [node for node in level if not node.leaf]
        if progress is not None:
            progress(f"level {depth}: {len(level)} nodes, {len(inner)} interior")
        if not inner:
            break
        # 2. shares of the interior nodes
        if depth > 0:
            await _child_shares(party, nodes, inner, shares, view, requests, p, dealer, t, cost)
        for k in [k for k in shares if nodes[k].depth < depth]:
            del shares[k]
        # 3. attribute counts, each owner's with the classes in a fresh order per node
        if is_class:
            for node in inner:
                node.perm = os_permutation(p)
        await _attribute_counts(
            party, nodes, inner, shares, view, xt, offsets, requests, prepared, xt_hat,
            xt_blocks, p, dealer, class_site, t, cost,
        )  # fmt: skip
        # 4. best gains -> winners
        best: list[float | None] = []
        local: list[int] = []
        for node in inner:
            remaining = [j for j in range(len(view.attributes)) if j not in node.used]
            gains = [gain_in_any_class_order(node.by_attr[j]) for j in remaining]
            i = best_site_attribute([gains])[1] if gains else -1
            best.append(float(gains[i]) if gains else None)
            local.append(remaining[i] if gains else -1)
        if is_class:
            reported = await party.gather([s for s in names if s != party.name], f"{t}/best")
            reported[party.name] = best
            for s, g in reported.items():
                if not (
                    isinstance(g, list)
                    and len(g) == len(inner)
                    and all(x is None or isinstance(x, float) for x in g)
                ):
                    raise ProtocolError(f"{s} reported best gains {g!r}")  # fmt: skip
            winners = []
            for i, node in enumerate(inner):
                gains_i = {s: reported[s][i] for s in names}
                node_gains = [[g] if g is not None else [] for g in gains_i.values()]
                winners.append(names[best_site_attribute(node_gains)[0]])
                node.gains = gains_i
            await party.broadcast(f"{t}/winner", winners)
        else:
            await party.send(class_site, f"{t}/best", best)
            winners = await party.recv(class_site, f"{t}/winner")
            if not (isinstance(winners, list) and len(winners) == len(inner)
                    and all(w in names for w in winners)):  # fmt: skip
                raise ProtocolError(f"{class_site} announced winners {winners!r}")
        # 5. branching, and the children's class distributions to the class site
        mine = [i for i, w in enumerate(winners) if w == party.name]
        branching = [len(view.domains[local[i]]) for i in mine]
        dists = [node_dists(inner[i].by_attr[local[i]]) for i in mine]
        for i in mine:
            inner[i].attribute = local[i]
        await party.broadcast(f"{t}/branching", branching)
        if not is_class and mine:
            await party.send(class_site, f"{t}/dists", dists)
        got_branching: dict[str, list[int]] = {party.name: branching}
        for s in names:
            if s != party.name and s in winners:
                b = await party.recv(s, f"{t}/branching")
                if not (
                    isinstance(b, list)
                    and len(b) == winners.count(s)
                    and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in b)
                ):
                    raise ProtocolError(f"{s} announced branching {b!r}")  # fmt: skip
                got_branching[s] = b
        child_dists: dict[str, list[Any]] = {party.name: dists}
        if is_class:
            for s in names:
                if s != party.name and s in winners:
                    child_dists[s] = await party.recv(s, f"{t}/dists")
        seen = {s: 0 for s in names}
        frontier = []
        for i, node in enumerate(inner):
            w = winners[i]
            node.owner = w
            nb = got_branching[w][seen[w]]
            dist = child_dists[w][seen[w]] if is_class else None
            seen[w] += 1
            left = list(node.left)
            left[names.index(w)] -= 1
            holders = node.holders if w in node.holders else sorted(
                [*node.holders, w], key=names.index)  # fmt: skip
            used = node.used | {node.attribute} if w == party.name else node.used
            for v in range(nb):
                child = _Node(len(nodes), depth + 1, node.key, v, holders, left, used=used)
                if is_class:
                    child.counts = _dist_row(dist, v, nb, p, w)
                    if w != party.name:  # the winner's counts come in the node's class order
                        assert node.perm is not None
                        child.counts = unpermute_classes(child.counts, node.perm)
                nodes.append(child)
                node.children.append(child.key)
                frontier.append(child.key)
        for node in inner:
            node.by_attr = {}
    await requests.ask("done")
    tree = await _finish(party, nodes, view, class_site, tag)
    return tree, cost


def node_dists(by_attr_j: np.ndarray) -> list[list[int]]:
    """The children's class distributions: the rows of the winning attribute's counts."""
    return [[int(x) for x in row] for row in by_attr_j]


def _dist_row(dist: Any, v: int, nb: int, p: int, sender: str) -> np.ndarray:
    if not (
        isinstance(dist, list)
        and len(dist) == nb
        and all(
            isinstance(r, list) and len(r) == p and all(isinstance(x, int) and x >= 0 for x in r)
            for r in dist
        )
    ):
        raise ProtocolError(f"{sender} sent malformed class distributions")  # fmt: skip
    return np.asarray(dist[v], dtype=np.int64)


async def _child_shares(
    party: Party,
    nodes: list[_Node],
    inner: list[_Node],
    shares: dict[int, np.ndarray],
    view: SiteView,
    requests: _Requests,
    p: int,
    dealer: str,
    t: str,
    cost: dict[str, int],
) -> None:
    """Step 2: this site's shares of ``Z`` for the interior nodes ``inner`` (all children of
    nodes split at the previous level) from their parents' shares, by outer products."""
    n = len(view.tids)
    dtype = ring_dtype(n)
    names = list(party.parties)
    by_parent: dict[int, list[_Node]] = {}
    for node in inner:
        assert node.parent is not None
        by_parent.setdefault(node.parent, []).append(node)
    # every (winner w, holder h != w) pair: one outer product per chunk of children
    pairs: dict[tuple[str, str], list[int]] = {}
    for key in by_parent:
        parent = nodes[key]
        for h in parent.holders:
            if h != parent.owner:
                pairs.setdefault((parent.owner, h), []).append(key)
    new: dict[int, np.ndarray] = {}

    def add(key: int, part: np.ndarray) -> None:
        new[key] = part if key not in new else new[key] + part

    # the winner's own share, locally
    for key, children in by_parent.items():
        parent = nodes[key]
        if parent.owner == party.name and party.name in parent.holders:
            col = view.codes[:, parent.attribute]
            for child in children:
                add(child.key, shares[key] * (col == child.value).astype(dtype)[None, :])

    async def pair(w: str, h: str, keys: list[int]) -> None:
        for c, chunk in enumerate(_chunks(keys, lambda k: len(by_parent[k]))):
            tag = f"{t}/o{names.index(w)}.{names.index(h)}.{c}"
            parents = np.asarray(
                [i for i, k in enumerate(chunk) for _ in by_parent[k]], dtype=np.int64
            )
            children = [child for k in chunk for child in by_parent[k]]
            if party.name == w:
                await requests.ask({"kind": "outer", "peer": h, "tag": tag,
                                    "shape": [n, len(children), len(chunk) * p, p],
                                    "parents": parents.tolist()})  # fmt: skip
                a = np.stack(
                    [(view.codes[:, nodes[k].attribute] == child.value) for k in chunk
                     for child in by_parent[k]], axis=0,
                ).astype(dtype)  # fmt: skip
                out = await _outer(party, a, a_side=w, b_side=h, parents=parents, p=p,
                                   dealer=dealer, tag=tag)  # fmt: skip
                cost["outer_batches"] += 1
            else:
                b = np.concatenate([shares[k] for k in chunk], axis=0)
                out = await _outer(party, b, a_side=w, b_side=h, parents=parents, p=p,
                                   dealer=dealer, tag=tag)  # fmt: skip
            for i, child in enumerate(children):
                add(child.key, out[i])

    await asyncio.gather(*(pair(w, h, keys) for (w, h), keys in pairs.items()
                           if party.name in (w, h)))  # fmt: skip
    shares.update(new)


def _chunks(keys: list[int], width: Callable[[int], int]) -> list[list[int]]:
    """``keys`` in consecutive groups of at most :data:`CHUNK_COLUMNS` columns."""
    if not keys:
        return []
    out: list[list[int]] = [[]]
    used = 0
    for k in keys:
        w = width(k)
        if out[-1] and used + w > CHUNK_COLUMNS:
            out.append([])
            used = 0
        out[-1].append(k)
        used += w
    return out


async def _attribute_counts(
    party: Party,
    nodes: list[_Node],
    inner: list[_Node],
    shares: dict[int, np.ndarray],
    view: SiteView,
    xt: np.ndarray,
    offsets: np.ndarray,
    requests: _Requests,
    prepared: dict[str, Left],
    xt_hat: dict[str, Left],
    xt_blocks: dict[str, list[int]],
    p: int,
    dealer: str,
    class_site: str,
    t: str,
    cost: dict[str, int],
) -> None:
    """Step 3: every site's count matrices of its remaining attributes at every node of
    ``inner`` (``node.by_attr``); a site other than the class site gets them with the class
    columns in each node's class order (``node.perm`` at the class site)."""
    names = list(party.parties)
    me = names.index(party.name)
    is_class = party.name == class_site
    m = xt.shape[0]
    sizes = [int(x) for x in np.diff(offsets)]
    mine = [node for node in inner if node.left[me] > 0]
    totals: dict[int, np.ndarray] = {}
    # the own share, locally (a zero block for an attribute used on the path)
    local = [node for node in mine if party.name in node.holders]
    for chunk in _chunks([node.key for node in local], lambda k: p):
        z = np.concatenate([shares[k] for k in chunk], axis=0)
        prod = ring_matmul(xt, z.T)
        for i, k in enumerate(chunk):
            block = prod[:, i * p : (i + 1) * p]
            for j in nodes[k].used:
                block[offsets[j] : offsets[j + 1]] = 0
            totals[k] = block
    masks: dict[str, np.ndarray] = {}  # the class site: owner -> T it subtracted

    async def as_holder(h: str, keys: list[int]) -> None:
        T = await _xdot_holder(party, keys, shares, h, xt_hat, xt_blocks, p, dealer, t,
                               mask=is_class)  # fmt: skip
        if T is not None:
            masks[h] = T

    tasks = []
    for h in names:
        if h == party.name:
            continue
        # as the owner: with every other holder h of my nodes
        keys = [node.key for node in mine if h in node.holders]
        if keys:
            tasks.append(_xdot_owner(party, nodes, keys, view, xt, sizes, h, requests, prepared,
                                     totals, p, dealer, t, cost))  # fmt: skip
        # as a holder: for every node where the owner h has attributes left and I hold Z
        s = names.index(h)
        keys = [node.key for node in inner if node.left[s] > 0 and party.name in node.holders
                and h != party.name]  # fmt: skip
        if keys:
            tasks.append(as_holder(h, keys))
    await asyncio.gather(*tasks)
    # the permuted openings: every other owner's counts with the classes in the node's order
    openings = []
    if is_class:
        for s, owner in enumerate(names):
            keys = [node.key for node in inner if node.left[s] > 0]
            if owner == party.name or not keys:
                continue
            perms = np.stack([_perm_of(nodes[k]) for k in keys])
            openings.append(open_permuted_class_site(
                party, masks[owner], perms, owner=owner, ask=requests.ask, dealer=dealer,
                tag=f"{t}/p{s}",
            ))  # fmt: skip
    elif mine:
        a = np.concatenate([totals[node.key] for node in mine], axis=1)

        async def as_owner() -> None:
            opened = await open_permuted_owner(party, a, class_site=class_site, dealer=dealer,
                                               tag=f"{t}/p{me}")  # fmt: skip
            for i, node in enumerate(mine):
                totals[node.key] = opened[:, i * p : (i + 1) * p]

        openings.append(as_owner())
    await asyncio.gather(*openings)
    for node in mine:
        total = totals.get(node.key)
        if total is None:
            total = np.zeros((m, p), dtype=xt.dtype)
        counts = total.astype(np.int64)
        node.by_attr = {
            j: counts[offsets[j] : offsets[j + 1]] for j in range(len(sizes)) if j not in node.used
        }
        party.ledger.record(
            "fast-counts/attribute-counts",
            {view.attributes[j]: c.tolist() for j, c in node.by_attr.items()},
            step=f"{t}/n{node.key}",
        )


async def _xdot_owner(
    party: Party,
    nodes: list[_Node],
    keys: list[int],
    view: SiteView,
    xt: np.ndarray,
    sizes: list[int],
    holder: str,
    requests: _Requests,
    prepared: dict[str, Left],
    totals: dict[int, np.ndarray],
    p: int,
    dealer: str,
    t: str,
    cost: dict[str, int],
) -> None:
    """The owner's side of ``X^T Z_h`` for the nodes ``keys``: ``X^T + Ra`` once per run, then
    per chunk the holder's masked share and, by oblivious transfer, the holder's share of the
    result for the attributes that remain at each node (a zero block for the used ones)."""
    names = list(party.parties)
    m, n = xt.shape
    for c, chunk in enumerate(_chunks(keys, lambda k: p)):
        tag = f"{t}/x{names.index(party.name)}.{names.index(holder)}.{c}"
        cols = len(chunk) * p
        request: dict[str, Any] = {"kind": "xdot", "peer": holder, "tag": tag,
                                   "shape": [m, n, cols], "blocks": sizes, "p": p}  # fmt: skip
        first = holder not in prepared
        if first:
            seed = secrets.token_bytes(32)  # fresh every run, one per holder
            request["seed"] = seed
        await requests.ask(request)
        await party.send(holder, f"{tag}/head", {"new": first, "blocks": sizes} if first
                         else {"new": False})  # fmt: skip
        if first:
            Ra = ring_random(seed, (m, n), xt.dtype)
            prepared[holder] = ring_left(Ra)
            await party.send(holder, f"{tag}/Ahat", _pack(xt + Ra))
        got = await party.recv(dealer, f"{tag}/dealer")
        if not isinstance(got, dict) or not isinstance(got.get("seed"), bytes):
            raise ProtocolError(f"{dealer} sent no correlated randomness for {tag}")
        ra = ring_random(got["seed"], (m, cols), xt.dtype)
        bits = _unpack(got.get("c"), np.bool_, (len(sizes), len(chunk)), dealer, "c")
        Rc = _unpack(got.get("Rc"), xt.dtype, (m, cols), dealer, "Rc")
        # OT choice: b = 1 where the attribute remains at the node
        want = np.array([[j not in nodes[k].used for k in chunk] for j in range(len(sizes))])
        await party.send(holder, f"{tag}/e", _pack(want ^ bits))
        b_hat = _unpack(await party.recv(holder, f"{tag}/masked"), xt.dtype, (cols, n), holder,
                        "z+Rb")  # fmt: skip
        y = _unpack(await party.recv(holder, f"{tag}/ot"), xt.dtype, (2, m, cols), holder, "y")
        mask = _expand(want, sizes, p)
        theirs = np.where(mask, y[1] - Rc, y[0] - Rc)  # the zero block where not wanted
        part = ra - ring_matmul(prepared[holder], b_hat.T) + theirs
        party.metrics.count("dot_products", m * cols)
        cost["dot_batches"] += 1
        for i, k in enumerate(chunk):
            block = part[:, i * p : (i + 1) * p]
            totals[k] = totals[k] + block if k in totals else block


async def _xdot_holder(
    party: Party,
    keys: list[int],
    shares: dict[int, np.ndarray],
    owner: str,
    xt_hat: dict[str, Left],
    xt_blocks: dict[str, list[int]],
    p: int,
    dealer: str,
    t: str,
    *,
    mask: bool = False,
) -> np.ndarray | None:
    """The holder's side: send ``Z_h + Rb``; compute its share ``(X^T + Ra) Z_h + rb`` of
    every attribute's counts and hand it over by oblivious transfer (the owner's choice bits
    arrive xor-ed with the dealer's, so they are uniform here). With ``mask`` (the class site)
    both transfer messages carry a fresh uniform ``-T`` too; returns ``T`` (``m x len(keys)*p``),
    for the permuted opening."""
    names = list(party.parties)
    masks: list[np.ndarray] = []
    for c, chunk in enumerate(_chunks(keys, lambda k: p)):
        tag = f"{t}/x{names.index(owner)}.{names.index(party.name)}.{c}"
        z = np.concatenate([shares[k] for k in chunk], axis=0)
        cols, n = z.shape
        head = await party.recv(owner, f"{tag}/head")
        if not isinstance(head, dict) or not isinstance(head.get("new"), bool):
            raise ProtocolError(f"{owner} sent no header for {tag}")
        if head["new"]:
            blocks = head.get("blocks")
            if not (
                isinstance(blocks, list)
                and blocks
                and all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in blocks)
            ):
                raise ProtocolError(f"{owner} announced attribute sizes {blocks!r}")  # fmt: skip
            got_hat = _unpack(await party.recv(owner, f"{tag}/Ahat"), z.dtype,
                              (sum(blocks), n), owner, "X+Ra")  # fmt: skip
            xt_hat[owner] = ring_left(got_hat)
            xt_blocks[owner] = blocks
        a_hat = xt_hat.get(owner)
        if a_hat is None:
            raise ProtocolError(f"{owner} reused a context it never sent")
        m = a_hat[1][0].shape[0]
        got = await party.recv(dealer, f"{tag}/dealer")
        if (
            not isinstance(got, dict)
            or not isinstance(got.get("seed"), bytes)
            or not isinstance(got.get("ot"), bytes)
        ):
            raise ProtocolError(f"{dealer} sent no correlated randomness for {tag}")  # fmt: skip
        Rb = ring_random(got["seed"], (cols, n), z.dtype)
        rb = _unpack(got.get("r"), z.dtype, (m, cols), dealer, "rb")
        R0, R1 = ring_random(got["ot"], (2, m, cols), z.dtype)
        await party.send(owner, f"{tag}/masked", _pack(z + Rb))
        v = ring_matmul(a_hat, z.T) + rb
        e = _unpack(await party.recv(owner, f"{tag}/e"), np.bool_, (None, len(chunk)), owner, "e")
        blocks = xt_blocks[owner]
        if e.shape[0] != len(blocks):
            raise ProtocolError(f"{owner} sent {e.shape[0]} choice rows, not {len(blocks)}")
        flip = _expand(e, blocks, p)
        # y_0 = 0 + R_e, y_1 = v + R_{1-e} (each minus T for the class site)
        y0 = np.where(flip, R1, R0)
        y1 = v + np.where(flip, R0, R1)
        if mask:
            T = ring_random(secrets.token_bytes(32), (m, cols), z.dtype)
            masks.append(T)
            y0 -= T
            y1 -= T
        await party.send(owner, f"{tag}/ot", _pack(np.stack([y0, y1])))
    return np.concatenate(masks, axis=1) if mask and masks else None


def _perm_of(node: _Node) -> np.ndarray:
    if node.perm is None:
        raise ConfigError(f"node {node.key} has no class order")
    return node.perm


async def _finish(
    party: Party, nodes: list[_Node], view: SiteView, class_site: str, tag: str
) -> DistributedTree:
    """Number the public structure depth first, give this site's nodes random ids and tell
    each parent's owner the ids of its children (one exchange)."""
    names = list(party.parties)
    number: dict[int, int] = {}
    order: list[int] = []

    def walk(k: int) -> None:
        number[k] = len(order)
        order.append(k)
        for c in nodes[k].children:
            walk(c)

    walk(0)
    tree = DistributedTree(party.name)
    ids = {k: secrets.token_hex(8) for k in order if nodes[k].owner == party.name}
    for k in order:
        node = nodes[k]
        if node.leaf:
            tree.structure.append({"node": number[k], "owner": class_site, "leaf": True})
        else:
            tree.structure.append({"node": number[k], "owner": node.owner, "leaf": False,
                                   "children": len(node.children)})  # fmt: skip
    # ids of my nodes to the owners of their parents
    outgoing: dict[str, dict[str, str]] = {s: {} for s in names if s != party.name}
    for k, nid in ids.items():
        parent = nodes[k].parent
        if parent is not None and nodes[parent].owner != party.name:
            outgoing[nodes[parent].owner][str(number[k])] = nid
    for s, body in outgoing.items():
        await party.send(s, f"{tag}/ids", body)
    known = {str(number[k]): nid for k, nid in ids.items()}
    for s in outgoing:
        got = await party.recv(s, f"{tag}/ids")
        if not isinstance(got, dict) or not all(isinstance(v, str) for v in got.values()):
            raise ProtocolError(f"{s} sent malformed node ids")
        known.update(got)
    root = nodes[0]
    if root.owner == party.name:
        await party.broadcast(f"{tag}/root", ids[0])
        tree.root = (party.name, ids[0])
    else:
        rid = await party.recv(root.owner, f"{tag}/root")
        if not isinstance(rid, str):
            raise ProtocolError(f"{root.owner} announced a root id {rid!r}")
        tree.root = (root.owner, rid)
    is_class = party.name == class_site
    for k in order:
        node = nodes[k]
        if is_class:
            assert node.counts is not None and view.classes is not None
            named = {c: int(x) for c, x in zip(view.classes, node.counts, strict=True)}
            tree.node_counts[number[k]] = named
            party.ledger.record("ppid3/node-counts", {"node": number[k], "counts": named},
                                step=f"{tag}/n{number[k]}")  # fmt: skip
            if node.gains is not None:
                party.ledger.record("ppid3/best-gains", {"node": number[k], "gains": node.gains},
                                    step=f"{tag}/n{number[k]}")  # fmt: skip
            if node.leaf:
                tree.leaves[ids[k]] = {"number": number[k], "counts": named, "class": node.label}
        if not node.leaf and node.owner == party.name:
            children: dict[str, list[str]] = {}
            for c in node.children:
                child = nodes[c]
                cid = known.get(str(number[c]))
                if cid is None:
                    raise ProtocolError(f"no id arrived for node {number[c]}")
                children[view.domains[node.attribute][child.value]] = [child.owner, cid]
            tree.interior[ids[k]] = {"number": number[k],
                                     "attribute": view.attributes[node.attribute],
                                     "children": children}  # fmt: skip
    party.ledger.record("ppid3/structure", tree.structure, step=tag)
    return tree
