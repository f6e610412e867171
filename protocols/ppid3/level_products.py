"""Steps 2 and 3 of PPID3's level driver (:mod:`protocols.ppid3.levels`, whose docstring
states the protocol, what each party learns and why): the products between two sites that
make a level's shares and every owner's counts, with correlated randomness from the party
:class:`protocols.engine.dealing.Dealing` names for each pair, or made by the pair itself by
oblivious transfer (:class:`protocols.engine.ot_dealing.OTDealing`, ``helper="ot"``). A
dealing makes each product its own way
(:meth:`~protocols.engine.dealing.Dealing.outer_product`, the permuted openings; one with
``direct_products`` computes the owners' dot products itself), so the steps here are the
same whatever the helper.

* :func:`child_shares` (step 2): each site's additive shares of ``Z^ν`` for the interior
  nodes of a level, from their parents' shares by row-wise *outer products* (one per pair of
  the parent's winner and another holder, per chunk of :data:`CHUNK_COLUMNS` children);
* :func:`remaining_attribute_counts` (step 3): every owner's ``X_s^T Z^ν`` for its remaining
  attributes: its own share locally, each other holder's by a commodity dot product whose
  result comes back by a 1-out-of-2 oblivious transfer per (attribute, node) (a zero block
  for an attribute used on the path), blinded by the holders' zero-sharing
  (:func:`zero_share`, keys from :func:`pair_keys`) so that the owner opens only the sum;
  then, for an owner other than the class site, the permuted opening in the class site's
  order for that node and owner (:attr:`LevelNode.perms`).

What the parties learn here: the owner, its count matrices (``fast-counts/attribute-counts``);
everyone else, masked arrays, shares, uniform choice bits and pairwise keys.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.expect import boolean, integer, list_of, raw, record
from mpc.runtime.party import Party
from mpc.runtime.view import public, uniform
from protocols.engine.dealing import MASKED, Dealing, dealt, expand_blocks
from protocols.engine.ring import Left, Ring
from protocols.engine.spill import Spill
from protocols.ppid3.distribution_counts import SiteView, classes_unordered
from protocols.ppid3.level_arrays import one_hot_columns

#: a dot product's header: whether the owner's masked columns come now, and their blocks
_HEAD_FORM = record(
    {"new": boolean(), "blocks": list_of(integer(lo=1), min_length=1)},
    optional=("blocks",),
    extra=True,
)

CLASSES = public("fast-counts/classes", "the number of classes")
HEAD = public(
    "fast-counts/head",
    "which remaining-attribute set (context) a dot product uses; whether its masked matrix "
    "comes now",
)
X_PLUS_RA = uniform("fast-counts/x-plus-ra", "the owner's one-hot columns X^T plus a mask Ra")
#: what a site receives here besides :mod:`protocols.engine.dealing`' receipts
OT_PAIR = uniform(
    "fast-counts/ot-pair",
    "a holder's two oblivious-transfer messages of a dot product (the owner unmasks the one "
    "it chose)",
)
OT_CHOICE = uniform(
    "fast-counts/ot-choice", "the owner's choice bits (attribute used or not), xor the dealt ones"
)
PAIR_KEY = uniform("fast-counts/pair-key", "a fresh key shared by two sites (zero-sharing)")

__all__ = [
    "CHUNK_COLUMNS",
    "OT_CHOICE",
    "OT_PAIR",
    "PAIR_KEY",
    "LevelNode",
    "RowRange",
    "child_shares",
    "pair_keys",
    "remaining_attribute_counts",
    "shared_attribute_counts",
    "zero_share",
]

#: columns of one product batch (interior children, or nodes x classes) at most: bounds the
#: memory of a level to a few ``N x CHUNK_COLUMNS`` arrays
CHUNK_COLUMNS = 64
#: elements of one ``N x columns`` array of a batch at most (32 MiB of 32-bit shares): with
#: many rows a batch has fewer columns (8 at a million rows), so that a site's peak memory
#: stays a few GiB however many nodes a level has
CHUNK_ELEMENTS = 2**23


def chunk_columns(n: int) -> int:
    """Columns of one product batch over ``n`` rows: :data:`CHUNK_COLUMNS`, fewer when ``n x``
    that many would pass :data:`CHUNK_ELEMENTS` (one at least). Public: every site knows
    ``n``."""
    return max(1, min(CHUNK_COLUMNS, CHUNK_ELEMENTS // max(1, n)))


@dataclass
class LevelNode:
    """A node of the level driver: its public record (identical at every site) and this
    site's private part."""

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
    #: this site's attributes split at a threshold: the open interval of threshold indices
    #: its path leaves each (the candidates are the thresholds strictly inside)
    bounds: dict[int, tuple[int, int]] = field(default_factory=dict)
    attribute: int = -1  # this site's split attribute, if it won the node
    threshold: int = -1  # and the index of its threshold, if it split at one
    counts: np.ndarray | None = None  # class distribution (class site)
    label: str | None = None  # majority class (class site)
    by_attr: dict[int, np.ndarray] = field(default_factory=dict)  # attribute counts (owner)
    gains: dict[str, float | None] | None = None  # every site's best gain (class site)
    # the class order of each owner's counts at the node, fresh per node and owner (class site)
    perms: dict[str, np.ndarray] = field(default_factory=dict)

    def branch(self, column: np.ndarray, value: int) -> np.ndarray:
        """Which rows of this site's ``column`` (codes of the node's split attribute) go to
        branch ``value``: the code equal to it, or for a threshold split at index ``i``, code
        ``<= i`` (branch 0) or ``> i`` (branch 1). The node's winner only."""
        if self.threshold < 0:
            return column == value
        return column <= self.threshold if value == 0 else column > self.threshold

    def order_of(self, owner: str) -> np.ndarray:
        """The class site's order of ``owner``'s classes at this node."""
        perm = self.perms.get(owner)
        if perm is None:
            raise ConfigError(f"node {self.key} has no class order for {owner}")
        return perm


@dataclass
class RowRange:
    """A range of a site's rows, in the common private order of the records, and what the
    level's products keep for it: the range's codes, its one-hot ``X^T`` (``sum |A| x rows``),
    its shares of ``Z`` per node, and per partner the masks of its dot products. The products
    of a level run range by range (:func:`child_shares`, :func:`shared_attribute_counts`),
    every range with its own tags (``suffix``) and its own dealt randomness, and a site's
    counts are the sum over its ranges; a site holds every range itself by default (one range
    of all its rows, :meth:`split` for several). With a :class:`~protocols.engine.spill.Spill`
    a range's arrays wait on the party's disk between uses (:meth:`release`, :meth:`acquire`):
    one range in memory at a time."""

    start: int
    codes: np.ndarray
    xt: np.ndarray
    offsets: np.ndarray
    dtype: Any  # the share ring's, of the whole table (:meth:`Ring.for_rows`)
    index: int = 0
    suffix: str = ""
    shares: dict[int, np.ndarray] = field(default_factory=dict)  # node -> share of Z (p x rows)
    prepared: dict[str, Left] = field(default_factory=dict)  # holder -> the Ra of X^T + Ra
    xt_hat: dict[str, Left] = field(default_factory=dict)  # owner -> X_owner^T + Ra (holder)
    xt_blocks: dict[str, list[int]] = field(default_factory=dict)  # owner -> its |A| per A
    spill: Spill | None = None  # where the arrays wait between uses (None: in memory)
    sizes: tuple[int, ...] = ()  # the values of each one-hot attribute (to make ``xt`` again)
    #: the attributes in ``xt``, in order (a number counted by shuffles is not:
    #: :mod:`protocols.ppid3.threshold_counts`)
    columns: tuple[int, ...] = ()
    #: holder -> the seed of this site's ``Ra`` with it (to make ``prepared`` again)
    ra_seeds: dict[str, bytes] = field(default_factory=dict)
    held: bool = True  # the shares are in memory
    products: bool = True  # so are ``xt``, ``prepared`` and ``xt_hat``
    #: the arrays in the spill, each with the object it was read back as (while held)
    _stored: dict[str, object] = field(default_factory=dict, repr=False)
    _layout: tuple[Any, ...] = field(default=(), repr=False)

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    @classmethod
    def split(
        cls,
        codes: np.ndarray,
        sizes: Sequence[int],
        dtype: Any,
        block: int | None = None,
        spill: Spill | None = None,
        onehot: Sequence[int] | None = None,
    ) -> list[RowRange]:
        """A site's rows (``codes``, the values of attributes of ``sizes`` values each) in
        ranges of ``block`` rows (all of them in one when None), its shares in the ring of
        ``dtype``; every site splits the same number of records the same way (the number is
        public, the order common). With ``spill`` each range is set aside as soon as it is
        made, so that no more than one range's one-hot columns are ever in memory. The
        one-hot columns are those of the attributes ``onehot`` (default: every one)."""
        n = codes.shape[0]
        step = n if block is None else max(1, int(block))
        starts = list(range(0, n, step)) or [0]
        columns = tuple(range(len(sizes)) if onehot is None else onehot)
        widths = [sizes[j] for j in columns]
        out = []
        for i, s in enumerate(starts):
            part = codes[s : s + step]
            xt, offsets = one_hot_columns(part[:, list(columns)], widths, dtype)
            out.append(cls(s, part, xt, offsets, np.dtype(dtype), i,
                           f"/r{i}" if len(starts) > 1 else "", spill=spill,
                           sizes=tuple(widths), columns=columns))  # fmt: skip
            out[-1].release()
        return out

    def _arrays(self) -> dict[str, np.ndarray]:
        """The arrays that wait in the spill, by their names there: the shares of ``Z`` and,
        while the products are held, the masked columns partners sent (``xt`` and
        ``prepared`` are made again: from the codes, and from their seeds)."""
        out = {f"r{self.index}/z{k}": z for k, z in self.shares.items()}
        if self.products:
            for who, (_, limbs) in self.xt_hat.items():
                out |= {f"r{self.index}/xh/{who}/{i}": a for i, a in enumerate(limbs)}
        return out

    def release(self) -> None:
        """Set the range's arrays aside in its spill (nothing without one): what is new or
        replaced since it was read back is written, a share dropped is removed. Only its
        codes stay in memory."""
        if self.spill is None or not self.held:
            return
        arrays = self._arrays()
        for name, a in arrays.items():
            if self._stored.get(name) is not a:
                self.spill.put(name, a)
        for name in set(self._stored) - set(arrays):
            if name.startswith(f"r{self.index}/z"):
                self.spill.drop(name)
        hats = self._layout[1] if self._layout and not self.products else {
            who: (d, len(limbs)) for who, (d, limbs) in self.xt_hat.items()}  # fmt: skip
        missing = set(self.prepared) - set(self.ra_seeds)
        if missing:
            raise ProtocolError(f"rows in ranges: no seed of the masks with {sorted(missing)}")
        self._layout = (list(self.shares), hats)
        self._stored = {}
        self.xt = np.empty((0, 0), dtype=self.dtype)
        self.shares, self.prepared, self.xt_hat = {}, {}, {}
        self.held = self.products = False

    def acquire(self, products: bool = True) -> None:
        """Read the range's shares back from its spill, and with ``products`` make its
        one-hot columns and its masks again and read its partners' masked columns (nothing
        without a spill, or if held)."""
        if self.spill is None or self.held:
            return
        get, r = self.spill.get, f"r{self.index}"
        keys, hats = self._layout
        self.shares = {k: get(f"{r}/z{k}") for k in keys}
        if products:
            columns = list(self.columns or range(len(self.sizes)))
            self.xt, _ = one_hot_columns(self.codes[:, columns], self.sizes, self.dtype)
            ring = Ring.of(self.dtype)
            self.prepared = {who: ring.left(ring.random(seed, self.xt.shape))
                             for who, seed in self.ra_seeds.items()}  # fmt: skip
            self.xt_hat = {who: (d, tuple(get(f"{r}/xh/{who}/{i}") for i in range(m)))
                           for who, (d, m) in hats.items()}  # fmt: skip
        self.held, self.products = True, products
        self._stored = dict[str, object](self._arrays())


# ----------------------------------------------------------------------------- step 2


async def _outer(
    party: Party,
    x: np.ndarray,
    *,
    a_side: str,
    b_side: str,
    parents: np.ndarray,
    p: int,
    dealing: Dealing,
    tag: str,
    derived: np.ndarray | None = None,
) -> np.ndarray:
    """Additive shares of the row-wise outer product (:func:`outer_product`) of ``a_side``'s
    ``A`` (``V x N``) and ``b_side``'s ``B`` (``P*p x N``), ``parents[v]`` naming the block of
    ``B`` that row ``v`` of ``A`` is paired with, as ``dealing`` makes them
    (:meth:`protocols.engine.dealing.Dealing.outer_product`)."""
    out = await dealing.outer_product(
        x, a_side=a_side, b_side=b_side, parents=parents, p=p, tag=tag, derived=derived
    )
    party.metrics.count("outer_products", x.shape[1] * len(parents) * p)
    return out


async def child_shares(
    party: Party,
    nodes: list[LevelNode],
    inner: list[LevelNode],
    rows: RowRange,
    dealing: Dealing,
    p: int,
    t: str,
    cost: dict[str, int],
) -> None:
    """Step 2: this site's shares of ``Z`` over the range ``rows`` for the interior nodes
    ``inner`` (all children of nodes split at the previous level) from their parents' shares,
    by outer products (``rows.shares``)."""
    n, shares, dtype = rows.n, rows.shares, rows.dtype
    names = list(party.parties)
    by_parent: dict[int, list[LevelNode]] = {}
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
            col = rows.codes[:, parent.attribute]
            for child in children:
                add(child.key, shares[key] * parent.branch(col, child.value).astype(dtype)[None, :])

    async def pair(w: str, h: str, keys: list[int]) -> None:
        for c, chunk in enumerate(_chunks(keys, lambda k: len(by_parent[k]), n)):
            tag = f"{t}{rows.suffix}/o{names.index(w)}.{names.index(h)}.{c}"
            parents = np.asarray(
                [i for i, k in enumerate(chunk) for _ in by_parent[k]], dtype=np.int64
            )
            children = [child for k in chunk for child in by_parent[k]]
            # the last child of a parent all of whose children are interior: no product
            # needed with OT (public: the structure says which children are leaves)
            derived = np.asarray([i == len(by_parent[k]) - 1
                                  and len(by_parent[k]) == len(nodes[k].children) > 1
                                  for k in chunk for i in range(len(by_parent[k]))])  # fmt: skip
            if party.name == w:
                await dealing.ask({"kind": "outer", "peer": h, "tag": tag,
                                    "shape": [n, len(children), len(chunk) * p, p],
                                    "parents": parents.tolist()})  # fmt: skip
                a = np.stack(
                    [nodes[k].branch(rows.codes[:, nodes[k].attribute], child.value)
                     for k in chunk for child in by_parent[k]], axis=0,
                ).astype(dtype)  # fmt: skip
                out = await _outer(party, a, a_side=w, b_side=h, parents=parents, p=p,
                                   dealing=dealing, tag=tag, derived=derived)  # fmt: skip
                cost["outer_batches"] += 1
            else:
                b = np.concatenate([shares[k] for k in chunk], axis=0)
                out = await _outer(party, b, a_side=w, b_side=h, parents=parents, p=p,
                                   dealing=dealing, tag=tag, derived=derived)  # fmt: skip
            for i, child in enumerate(children):
                add(child.key, out[i])

    await asyncio.gather(*(pair(w, h, keys) for (w, h), keys in pairs.items()
                           if party.name in (w, h)))  # fmt: skip
    shares.update(new)


def _chunks(keys: list[int], width: Callable[[int], int], n: int) -> list[list[int]]:
    """``keys`` in consecutive groups of at most :func:`chunk_columns` ``(n)`` columns (one key
    at least)."""
    if not keys:
        return []
    limit = chunk_columns(n)
    out: list[list[int]] = [[]]
    used = 0
    for k in keys:
        w = width(k)
        if out[-1] and used + w > limit:
            out.append([])
            used = 0
        out[-1].append(k)
        used += w
    return out


# ----------------------------------------------------------------------------- step 3


def local_products(
    party: Party, mine: list[LevelNode], rows: RowRange, p: int
) -> dict[int, np.ndarray]:
    """This site's own part of ``X_s^T Z^ν`` over ``rows`` for the nodes of ``mine`` whose
    ``Z`` it holds a share of: the range's ``X^T`` (one-hot) times its share, no message, a
    chunk of nodes at a time."""
    out: dict[int, np.ndarray] = {}
    local = [node.key for node in mine if party.name in node.holders]
    for chunk in _chunks(local, lambda k: p, rows.n):
        z = np.concatenate([rows.shares[k] for k in chunk], axis=0)
        prod = Ring.of(z.dtype).matmul(rows.xt, z.T, binary=True)  # xt is one-hot
        for i, k in enumerate(chunk):
            out[k] = prod[:, i * p : (i + 1) * p]
    return out


async def remaining_attribute_counts(
    party: Party,
    nodes: list[LevelNode],
    inner: list[LevelNode],
    rows: RowRange,
    view: SiteView,
    dealing: Dealing,
    keys: dict[str, bytes],
    p: int,
    class_site: str,
    t: str,
    cost: dict[str, int],
) -> None:
    """Step 3: every site's count matrices of its remaining attributes at every node of
    ``inner`` (``node.by_attr``); a site other than the class site gets them with the class
    columns in its class order for each node (``node.perms`` at the class site). ``keys``:
    the pairwise keys of the holders' zero-sharing. ``rows`` holds every row: a holder's
    share is transferred once per node over all of them (a range's counts opened alone
    would say more than the node's)."""
    names = list(party.parties)
    me = names.index(party.name)
    is_class = party.name == class_site
    offsets = rows.offsets
    m = rows.xt.shape[0]
    sizes = [int(x) for x in np.diff(offsets)]
    mine = [node for node in inner if node.left[me] > 0]
    # the own share, locally (a zero block for an attribute used on the path)
    totals = local_products(party, mine, rows, p)
    for k, block in totals.items():
        for j in nodes[k].used:
            block[offsets[j] : offsets[j + 1]] = 0
    masks: dict[str, np.ndarray] = {}  # the class site: owner -> T it subtracted

    async def as_holder(h: str, held: list[int]) -> None:
        T = await _xdot_holder(party, nodes, held, rows, h, keys, p, dealing, t,
                               mask=is_class)  # fmt: skip
        if T is not None:
            masks[h] = T

    tasks = []
    for h in names:
        if h == party.name:
            continue
        # as the owner: with every other holder h of my nodes
        owned = [node.key for node in mine if h in node.holders]
        if owned:
            tasks.append(_xdot_owner(party, nodes, owned, rows, sizes, h, dealing, totals, p,
                                     t, cost))  # fmt: skip
        # as a holder: for every node where the owner h has attributes left and I hold Z
        s = names.index(h)
        held = [node.key for node in inner if node.left[s] > 0 and party.name in node.holders
                and h != party.name]  # fmt: skip
        if held:
            tasks.append(as_holder(h, held))
    await asyncio.gather(*tasks)
    # the permuted openings: every other owner's counts with the classes in its order per node
    openings = []
    if is_class:
        for s, owner in enumerate(names):
            opened = [node.key for node in inner if node.left[s] > 0]
            if owner == party.name or not opened:
                continue
            perms = np.stack([nodes[k].order_of(owner) for k in opened])
            openings.append(
                dealing.open_permuted_class_site(masks[owner], perms, owner=owner, tag=f"{t}/p{s}")
            )
    elif mine:
        a = np.concatenate([totals[node.key] for node in mine], axis=1)

        async def as_owner() -> None:
            opened = await dealing.open_permuted_owner(a, class_site=class_site, tag=f"{t}/p{me}")
            for i, node in enumerate(mine):
                totals[node.key] = opened[:, i * p : (i + 1) * p]

        openings.append(as_owner())
    await asyncio.gather(*openings)
    for node in mine:
        total = totals.get(node.key)
        if total is None:
            total = np.zeros((m, p), dtype=rows.dtype)
        counts = total.astype(np.int64)
        node.by_attr = {
            j: counts[offsets[j] : offsets[j + 1]] for j in range(len(sizes)) if j not in node.used
        }
        learned = {view.attributes[j]: c.tolist() for j, c in node.by_attr.items()}
        party.ledger.record(
            "fast-counts/attribute-counts", learned, step=f"{t}/n{node.key}",
            canonical=None if party.name == class_site else classes_unordered(learned),
        )  # fmt: skip


async def _xdot_owner(
    party: Party,
    nodes: list[LevelNode],
    keys: list[int],
    rows: RowRange,
    sizes: list[int],
    holder: str,
    dealing: Dealing,
    totals: dict[int, np.ndarray],
    p: int,
    t: str,
    cost: dict[str, int],
    *,
    transfer: bool = True,
) -> None:
    """The owner's side of ``X^T Z_h`` over ``rows`` for the nodes ``keys``: ``X^T + Ra`` once
    per run and range, then per chunk the holder's masked share and, by oblivious transfer,
    the holder's share of the result for the attributes that remain at each node (a zero
    block for the used ones), with the holder's part of the holders' zero-sharing in it.
    Without ``transfer`` the product stays shared: the owner adds its share of ``X^T Z_h``
    (every attribute) to ``totals`` and the holder keeps its own
    (:func:`shared_attribute_counts`)."""
    names = list(party.parties)
    dealer = dealing.of(party.name, holder)
    direct = dealing if dealing.direct_products else None
    xt, prepared = rows.xt, rows.prepared
    m, n = xt.shape
    for c, chunk in enumerate(_chunks(keys, lambda k: p, n)):
        tag = f"{t}{rows.suffix}/x{names.index(party.name)}.{names.index(holder)}.{c}"
        cols = len(chunk) * p
        request: dict[str, Any] = {"kind": "xdot", "peer": holder, "tag": tag,
                                   "shape": [m, n, cols], "blocks": sizes, "p": p}  # fmt: skip
        if rows.suffix:
            request["range"] = rows.index
        if not transfer:
            request["transfer"] = False
        first = holder not in prepared
        if first and direct is None:
            seed = randomness.seed(f"{tag}/ra")  # fresh every run, one per holder
            request["seed"] = seed
        await dealing.ask(request)
        await party.send(holder, f"{tag}/head", {"new": first, "blocks": sizes} if first
                         else {"new": False})  # fmt: skip
        if direct is not None:  # helper "ot": the share of X^T Z_h directly, by OT
            prepared[holder] = (xt.dtype, ())
            mine = await direct.dot_owner(holder, cols, tag=f"{tag}/oh")
        elif first:
            Ra = Ring.of(xt.dtype).random(seed, (m, n))
            prepared[holder] = Ring.of(Ra.dtype).left(Ra)
            rows.ra_seeds[holder] = seed  # to make it again (rows in ranges)
            await party.send(holder, f"{tag}/Ahat", pack_array(xt + Ra))
        got = await dealing.receive(holder, tag)
        if not transfer:
            if direct is None:
                ra = dealt(got, "seed", (m, cols), xt.dtype, dealer, "ra")
                b_hat = unpack_array(await party.recv(holder, f"{tag}/masked", MASKED),
                                     xt.dtype, (cols, n), holder, "z+Rb")  # fmt: skip
                mine = ra - Ring.of(b_hat.dtype).matmul(prepared[holder], b_hat.T)
            part = mine
            party.metrics.count("dot_products", m * cols)
            cost["dot_batches"] += 1
            for i, k in enumerate(chunk):
                block = part[:, i * p : (i + 1) * p]
                totals[k] = totals[k] + block if k in totals else block
            continue
        bits = unpack_array(got.get("c"), np.bool_, (len(sizes), len(chunk)), dealer, "c")
        Rc = unpack_array(got.get("Rc"), xt.dtype, (m, cols), dealer, "Rc")
        # OT choice: b = 1 where the attribute remains at the node
        want = np.array([[j not in nodes[k].used for k in chunk] for j in range(len(sizes))])
        await party.send(holder, f"{tag}/e", pack_array(want ^ bits))
        if direct is None:
            ra = dealt(got, "seed", (m, cols), xt.dtype, dealer, "ra")
            b_hat = unpack_array(await party.recv(holder, f"{tag}/masked", MASKED), xt.dtype,
                                 (cols, n), holder, "z+Rb")  # fmt: skip
            mine = ra - Ring.of(b_hat.dtype).matmul(prepared[holder], b_hat.T)
        y = unpack_array(await party.recv(holder, f"{tag}/ot", OT_PAIR), xt.dtype, (2, m, cols),
                         holder, "y")  # fmt: skip
        mask = expand_blocks(want, sizes, p)
        theirs = np.where(mask, y[1] - Rc, y[0] - Rc)  # the zero block where not wanted
        part = mine + theirs
        party.metrics.count("dot_products", m * cols)
        cost["dot_batches"] += 1
        for i, k in enumerate(chunk):
            block = part[:, i * p : (i + 1) * p]
            totals[k] = totals[k] + block if k in totals else block


async def _xdot_holder(
    party: Party,
    nodes: list[LevelNode],
    keys: list[int],
    rows: RowRange,
    owner: str,
    pairwise: dict[str, bytes],
    p: int,
    dealing: Dealing,
    t: str,
    *,
    mask: bool = False,
    out: dict[int, np.ndarray] | None = None,
) -> np.ndarray | None:
    """The holder's side over ``rows``: send ``Z_h + Rb``; compute its share ``(X^T + Ra) Z_h +
    rb`` of every attribute's counts, add its part of the zero-sharing among the node's
    holders other than the owner (:func:`zero_share`), and hand it over by oblivious transfer
    (the owner's choice bits arrive xor-ed with the dealing party's, so they are uniform
    here). With ``mask`` (the class site) both transfer messages carry a fresh uniform ``-T``
    too; returns ``T`` (``m x len(keys)*p``), for the permuted opening. With ``out`` the
    product stays shared: the holder keeps its share ``(X^T + Ra) Z_h + rb`` of each node's
    counts there (every attribute; no zero-sharing, no transfer)."""
    names = list(party.parties)
    masks: list[np.ndarray] = []
    shares, xt_hat, xt_blocks = rows.shares, rows.xt_hat, rows.xt_blocks
    for c, chunk in enumerate(_chunks(keys, lambda k: p, rows.n)):
        tag = f"{t}{rows.suffix}/x{names.index(owner)}.{names.index(party.name)}.{c}"
        z = np.concatenate([shares[k] for k in chunk], axis=0)
        cols, n = z.shape
        head = await party.recv(owner, f"{tag}/head", HEAD, expect=_HEAD_FORM)
        if head["new"]:
            blocks = head.get("blocks")
            if blocks is None:
                raise ProtocolError(f"{owner} announced new attributes without their sizes")
            if not dealing.direct_products:
                got_hat = unpack_array(await party.recv(owner, f"{tag}/Ahat", X_PLUS_RA), z.dtype,
                                  (sum(blocks), n), owner, "X+Ra")  # fmt: skip
                xt_hat[owner] = Ring.of(got_hat.dtype).left(got_hat)
            xt_blocks[owner] = blocks
        if owner not in xt_blocks:
            raise ProtocolError(f"{owner} reused a context it never sent")
        m = sum(xt_blocks[owner])
        dealer = dealing.of(owner, party.name)
        if dealing.direct_products:  # the share of X^T Z_h directly (helper "ot": by OT)
            v = await dealing.dot_holder(owner, z, tag=f"{tag}/oh", blocks=xt_blocks[owner])
            got = await dealing.receive(owner, tag)
        else:
            got = await dealing.receive(owner, tag)
            Rb = dealt(got, "seed", (cols, n), z.dtype, dealer, "Rb")
            rb = dealt(got, "r", (m, cols), z.dtype, dealer, "rb")
            await party.send(owner, f"{tag}/masked", pack_array(z + Rb))
            v = Ring.of(z.dtype).matmul(xt_hat[owner], z.T) + rb
        if out is not None:
            for i, k in enumerate(chunk):
                out[k] = v[:, i * p : (i + 1) * p]
            continue
        R0, R1 = dealt(got, "ot", (2, m, cols), z.dtype, dealer, "R0, R1")
        for i, k in enumerate(chunk):
            others = [h for h in nodes[k].holders if h not in (owner, party.name)]
            if others:
                v[:, i * p : (i + 1) * p] += zero_share(
                    party.name, others, pairwise, f"{t}/z{names.index(owner)}/n{k}", (m, p),
                    z.dtype, order=names,
                )  # fmt: skip
        e = unpack_array(
            await party.recv(owner, f"{tag}/e", OT_CHOICE), np.bool_, (None, len(chunk)), owner, "e"
        )
        blocks = xt_blocks[owner]
        if e.shape[0] != len(blocks):
            raise ProtocolError(f"{owner} sent {e.shape[0]} choice rows, not {len(blocks)}")
        flip = expand_blocks(e, blocks, p)
        # y_0 = 0 + R_e, y_1 = v + R_{1-e} (each minus T for the class site)
        y0 = np.where(flip, R1, R0)
        y1 = v + np.where(flip, R0, R1)
        if mask:
            T = Ring.of(z.dtype).random(randomness.seed(f"{tag}/t"), (m, cols))
            masks.append(T)
            y0 -= T
            y1 -= T
        await party.send(owner, f"{tag}/ot", pack_array(np.stack([y0, y1])))
    return np.concatenate(masks, axis=1) if mask and masks else None


async def shared_attribute_counts(
    party: Party,
    nodes: list[LevelNode],
    inner: list[LevelNode],
    rows: RowRange,
    sizes: list[int],
    dealing: Dealing,
    p: int,
    t: str,
    cost: dict[str, int],
    onehot: dict[str, int] | None = None,
) -> dict[tuple[int, str], np.ndarray]:
    """Step 3 with nothing opened (``--reveal tree``): this site's additive shares, in the
    share ring, of ``X_s^T Z^ν`` over ``rows`` (every one-hot attribute of ``s``, ``m_s x
    p``) for every node ``ν`` of ``inner`` and every site ``s`` with attributes left there
    that this site is or holds ``Z^ν`` for: as the owner, its own product locally plus its
    side of a commodity dot product with each other holder; as a holder, its side. ``onehot``
    (public): each site's one-hot rows ``m_s``, where a site with none takes no product.
    Returns ``{(node, s): share}``; summed over the sites (and the ranges), the counts."""
    names = list(party.parties)
    me = names.index(party.name)
    some = (lambda s: True) if onehot is None else (lambda s: onehot.get(s, 1) > 0)
    mine = [node for node in inner if node.left[me] > 0] if some(party.name) else []
    totals = local_products(party, mine, rows, p)
    held: dict[str, dict[int, np.ndarray]] = {}
    tasks: list[Coroutine[Any, Any, Any]] = []
    for h in names:
        if h == party.name:
            continue
        owned = [node.key for node in mine if h in node.holders]
        if owned:
            tasks.append(_xdot_owner(party, nodes, owned, rows, sizes, h, dealing, totals, p,
                                     t, cost, transfer=False))  # fmt: skip
        s = names.index(h)
        keys = [node.key for node in inner if node.left[s] > 0 and party.name in node.holders]
        if keys and some(h):
            held[h] = {}
            tasks.append(_xdot_holder(party, nodes, keys, rows, h, {}, p, dealing, t,
                                      out=held[h]))  # fmt: skip
    await asyncio.gather(*tasks)
    result = {(k, party.name): v for k, v in totals.items()}
    for h, got in held.items():
        result.update({(k, h): v for k, v in got.items()})
    return result


async def pair_keys(party: Party, tag: str) -> dict[str, bytes]:
    """A fresh 32-byte key shared by this site and each other site and by no third party: the
    earlier site of each pair draws it (OS generator) and sends it over their channel."""
    names = list(party.parties)
    me = names.index(party.name)
    keys: dict[str, bytes] = {}
    for s in names[me + 1 :]:
        keys[s] = randomness.seed(f"{tag}/{s}")
        await party.send(s, tag, keys[s])
    for s in names[:me]:
        keys[s] = await party.recv(s, tag, PAIR_KEY, expect=raw(32))
    return keys


def zero_share(
    me: str,
    others: Sequence[str],
    keys: dict[str, bytes],
    label: str,
    shape: tuple[int, ...],
    dtype: Any,
    *,
    order: Sequence[str],
) -> np.ndarray:
    """This party's part of a sharing of zero among ``me`` and ``others``:
    ``sum over o of ±PRF(key_{me,o}, label)`` (``+`` where ``me`` comes before ``o`` in
    ``order``), HMAC-SHA-256 expanded by :meth:`protocols.engine.ring.Ring.random`. The parts
    of all the parties sum to zero; anyone without the pairwise keys sees each part as
    uniform (with at least two parties)."""
    out = np.zeros(shape, dtype=dtype)
    for o in others:
        seed = hmac.new(keys[o], label.encode(), hashlib.sha256).digest()
        r = Ring.of(dtype).random(seed, shape)
        if order.index(me) < order.index(o):
            out += r
        else:
            out -= r
    return out
