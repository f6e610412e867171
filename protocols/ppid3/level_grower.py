"""The level grower of PPID3 (Vaidya & Clifton, Algorithm 7, one tree level per exchange): the
skeleton both ways of counting share, parameterised by how a level's counts are obtained.

Every site runs the same loop over the public frontier::

    start                 the class count, the root (the class site's one-hot share of Z)
    for each level:
        decide            which nodes are leaves, and their labels
        shares            the interior nodes' shares of Z (outer products, lines 11-19)
        split             counts, scores and the winning split of each interior node
        children          the children of each split, with what the way of counting keeps
    number                the public structure numbered depth first, node ids handed up

:meth:`LevelGrower.decide` and :meth:`LevelGrower.split` are the way of counting's: the
paper's (:class:`protocols.ppid3.levels.OpenedCounts`: owners open their count matrices, the
class site decides in the clear) or on shares (:class:`protocols.ppid3.reveal_tree.SharedCounts`:
only the tree is opened). Everything else is here, once: the frontier, the shares of ``Z``
(:func:`protocols.ppid3.level_products.child_shares`), the public nodes and their children,
the numbering of the structure and the ids of a site's nodes. A new way of counting is a
subclass that implements the two steps (and registers under a name in
:data:`protocols.ppid3.levels.REVEALS`).

**Rows in ranges.** The products reach a site's rows only through its
:class:`~protocols.ppid3.level_products.RowRange` objects (:attr:`LevelGrower.ranges`; one of
all the rows by default, ``row_block`` rows each otherwise): each range makes its shares of
``Z`` and its shares of the counts with products of its own (their own tags and dealt
randomness), and the counts of a level are the sum over the ranges (a sum of shares is a share
of the sum: no party receives anything it did not before, in more messages). With several
ranges the site works on one after another (:meth:`LevelGrower.each_range`, every site in the
same order) and the others wait on its own disk (a :class:`~protocols.engine.spill.Spill`):
its memory holds one range's one-hot columns, shares and masked columns at a time, and
``row_block="auto"`` takes ranges of :data:`ROW_BLOCK` rows where they are taken. A step that
spreads the ranges over workers replaces where the ranges live, not the protocols. Where the
products take all the rows at once the grower refuses ranges: the paper's way of counting
opens each node's counts to their owner in one transfer, and the pairs' oblivious-transfer
products are set up over all of a site's rows.

**Numbers split at a threshold.** An attribute of a site's :attr:`SiteView.thresholds`
splits a node in two, ``<= t`` and ``> t``, at one of its candidate thresholds, by the plain
learner's rules (:mod:`mpc.learners.id3`): its codes count the thresholds below each value, so
the counts of the two sides of threshold ``i`` are the prefix sums of its per-code counts
(local, linear: the same products as a nominal attribute of ``K + 1`` values give them). It
stays a candidate below, its thresholds narrowed to the interval its path leaves it
(:attr:`LevelNode.bounds`); so a site with such an attribute keeps its public count of
attributes left, and which of its attributes they are is public (``ppid3/ordered``). A way of
counting with :attr:`LevelGrower.shuffles` counts a number of more than ``shuffle_from``
codes by two owner-known shuffles where a party helps the pairs' products
(:mod:`protocols.ppid3.threshold_counts`), so that its one-hot columns (codes x rows) are
never made: the rule is public, applied by every site to every site's public sizes.

What a party receives here: the class count (``fast-counts/classes``, from the class site),
which of each site's attributes split at a threshold (``ppid3/ordered``), the other sites'
node ids (``ppid3/node-id``, ``ppid3/root-id``: random tokens); the rest is the way of
counting's and the products' (their modules say).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.criteria import CRITERIA, Criterion
from mpc.runtime.expect import integer, list_of, mapping, text
from mpc.runtime.party import Party
from mpc.runtime.view import public
from protocols.engine.dealing import Dealing
from protocols.engine.ring import Ring
from protocols.engine.spill import Spill
from protocols.ppid3.distribution_counts import SiteView
from protocols.ppid3.level_products import CLASSES, LevelNode, RowRange, child_shares
from protocols.ppid3.ppid3 import NODE_ID, ROOT_ID, DistributedTree
from protocols.ppid3.threshold_counts import SHUFFLE_FROM, shuffled

T = TypeVar("T")

#: rows of a range where a run asks for ranges of the default size (``row_block="auto"``)
#: and its way of counting and its products take them: a site's memory then holds about
#: this many rows' shares of a level's nodes, one-hot columns and masked columns at a time
ROW_BLOCK = 2**18

__all__ = ["ORDERED", "LevelGrower", "Split"]

ORDERED = public(
    "ppid3/ordered",
    "which of a site's attributes split in two at a threshold (numbers; the others split "
    "into a branch per value)",
)


#: the entries of a site's one-hot columns (values of all its attributes x rows) at most
#: where a number splits at thresholds: every distinct value of a column of many (an id, a
#: weight) would make them rows x rows
MAX_ONE_HOT = 2**28


@dataclass
class Split:
    """The split of an interior node as every site knows it after :meth:`LevelGrower.split`:
    the winning ``site``; its ``attribute`` (the index among the site's, where this site knows
    it: the winner always, every site where the split is opened); the number of children;
    and ``rows``, what the way of counting keeps of each child (class counts at the class
    site, shares of them at ``p0`` and ``p1``), or None; ``threshold``, the index of the
    threshold of a split in two at one (where this site knows the attribute), else None. A
    ``site`` of ``""`` makes the node a leaf after all: no site had a candidate left (an
    attribute split at a threshold stays on the path, so no public count says so)."""

    site: str
    attribute: int | None
    fanout: int
    rows: Any = None
    threshold: int | None = None


class LevelGrower:
    """One site's state while the tree grows level by level (the module docstring).

    ``name`` is the way of counting's name (``--reveal``), ``help`` its ``--help`` line,
    ``default_criterion`` the criterion it splits by when the run names none, ``on_shares``
    whether it computes the criterion on shares (so needs an exact one)."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    default_criterion: ClassVar[str] = "entropy"
    on_shares: ClassVar[bool] = False
    #: why this way of counting takes a site's rows whole ("": it takes them in ranges)
    whole_rows: ClassVar[str] = ""
    #: whether it counts numbers of many thresholds by shuffles where a party helps
    #: (:mod:`protocols.ppid3.threshold_counts`) rather than by one-hot columns
    shuffles: ClassVar[bool] = False

    def __init__(
        self, party: Party, view: SiteView, dealing: Dealing, *, class_site: str,
        attribute_counts: Sequence[int], criterion: Criterion | None = None,
        max_depth: int | None = None, min_samples_split: int | None = None,
        row_block: int | Literal["auto"] | None = None, shuffle_from: int | None = None,
    ) -> None:  # fmt: skip
        self.party, self.view, self.dealing, self.class_site = party, view, dealing, class_site
        self.attribute_counts = list(attribute_counts)
        self.criterion = criterion or CRITERIA[self.default_criterion]
        self.check_criterion(self.criterion)
        self.max_depth, self.min_samples_split = max_depth, min_samples_split
        self.names = list(party.parties)
        self.is_class = party.name == class_site
        self.n = len(view.tids)  # the aligned records (public)
        self.dtype = Ring.for_rows(self.n).dtype
        self.cost = {"outer_batches": 0, "dot_batches": 0, "levels": 0}
        self.p = 0  # the number of classes (announced by the class site)
        #: public: every node of the tree so far (the same list at every site)
        self.nodes: list[LevelNode] = []
        self.sizes = [len(d) for d in view.domains]
        #: public after :meth:`start`: each site's attributes split at a threshold (a split on
        #: one leaves it on the path, so the site's count of attributes left stays)
        self.ordered: dict[str, frozenset[int]] = {party.name: frozenset(view.thresholds)}
        #: public: whether a party helps the pairs' products, so that numbers of many
        #: thresholds are counted by shuffles (a way of counting that does so)
        self.helped = self.shuffles and not dealing.direct_products
        #: public: numbers of more codes than this are counted by shuffles where a party helps
        self.shuffle_from = SHUFFLE_FROM if shuffle_from is None else shuffle_from
        #: public after :meth:`start`: each site's numbers counted by shuffles
        self.shuffled = {party.name: self.shuffled_of(self.sizes, self.ordered[party.name])}
        onehot = [j for j in range(len(self.sizes)) if j not in self.shuffled[party.name]]
        wide = sum(self.sizes[j] for j in onehot) * self.n
        numbers = [a for a in view.thresholds if a in onehot]
        if numbers and wide > MAX_ONE_HOT:
            j = max(numbers, key=lambda a: self.sizes[a])
            raise ConfigError(
                f"{party.name}: {view.attributes[j]!r} has {len(view.thresholds[j]):,} candidate "
                f"thresholds; this site's one-hot columns would be {wide // self.n:,} x "
                f"{self.n:,} (more than {MAX_ONE_HOT:,} entries): give its candidates as the cut "
                "points of bins (--bins 256), or count them by shuffles (--reveal tree with "
                "--helper sites or dealer)"
            )
        if row_block == "auto":  # ranges where they are taken, of tables larger than one
            row_block = None if self.whole_rows or dealing.direct_products else ROW_BLOCK
        several = row_block is not None and self.n > max(1, row_block)
        if several and dealing.direct_products:
            raise ConfigError(
                "rows in ranges: the pairs' oblivious-transfer products are set up over all "
                "of a site's rows; split them with a dealing party"
            )
        if several and self.whole_rows:
            raise ConfigError(f"rows in ranges: {self.whole_rows}")
        #: where the ranges wait between uses when there are several (None: all in memory)
        self.spill = Spill() if several else None
        #: this site's rows in ranges of ``row_block`` (one range of all by default), each
        #: with its one-hot ``X^T``, its shares of ``Z`` and its products' masks
        self.ranges = RowRange.split(view.codes, self.sizes, self.dtype, row_block, self.spill,
                                     onehot=onehot)  # fmt: skip

    def shuffled_of(self, sizes: Sequence[int], ordered: frozenset[int]) -> frozenset[int]:
        """The attributes of a site (``sizes``, ``ordered``: public) counted by shuffles."""
        return shuffled(sizes, ordered, self.helped, self.shuffle_from)

    async def each_range(
        self, work: Callable[[RowRange], Awaitable[T]], *, products: bool = True
    ) -> list[T]:
        """``work`` on every range of this site's rows: all at once when they are in memory,
        else one after another, each read back before (its shares; with ``products`` its
        one-hot columns and masks too) and set aside after (so that one range is in memory
        at a time; every site goes through them in the same order)."""
        if self.spill is None:
            return list(await asyncio.gather(*(work(rows) for rows in self.ranges)))
        out = []
        for rows in self.ranges:
            rows.acquire(products)
            try:
                out.append(await work(rows))
            finally:
                rows.release()
        return out

    @classmethod
    def check_criterion(cls, criterion: Criterion) -> None:
        """Refuse a criterion this way of counting cannot split by."""
        if cls.on_shares and not criterion.on_shares:
            raise ConfigError(f"--reveal {cls.name} splits by a criterion computed on shares, "
                              f"not {criterion.name!r}")  # fmt: skip

    # ----------------------------------------------------------------- the skeleton

    async def grow(
        self, tag: str, progress: Callable[[str], None] | None = None
    ) -> tuple[DistributedTree, dict[str, int]]:
        """Grow the tree at this site; returns its part of the tree and its cost counters."""
        try:
            return await self._grow(tag, progress)
        finally:
            if self.spill is not None:  # the rows' ranges and the bytes they set aside
                self.cost["ranges"] = len(self.ranges)
                self.cost["spilled_bytes"] = self.spill.written
                self.spill.close()

    async def _grow(
        self, tag: str, progress: Callable[[str], None] | None
    ) -> tuple[DistributedTree, dict[str, int]]:
        await self.start(tag)
        frontier = [0]
        while frontier:
            level = [self.nodes[k] for k in frontier]
            t = f"{tag}/L{level[0].depth}"
            self.cost["levels"] += 1
            inner = await self.decide(level, t)
            if progress is not None:
                progress(f"level {level[0].depth}: {len(level)} nodes, {len(inner)} interior")
            if not inner:
                break
            await self.node_shares(inner, t)
            splits = await self.split(inner, t)
            frontier = []
            for node, split in zip(inner, splits, strict=True):
                if split.site:
                    frontier += self.children(node, split)
                else:  # no candidate anywhere: a leaf after all
                    node.leaf, node.owner = True, self.class_site
        await self.dealing.close()
        tree = await self.number(tag)
        self.finished(tree)
        return tree, self.cost

    async def start(self, tag: str) -> None:
        """The class count (from the class site) and the root, whose share of ``Z`` is the
        class site's one-hot class matrix."""
        party, view = self.party, self.view
        if self.is_class:
            assert view.classes is not None
            self.p = len(view.classes)
            await party.broadcast(f"{tag}/classes", self.p)
        else:
            self.p = await party.recv(self.class_site, f"{tag}/classes", CLASSES,
                                      expect=integer(lo=1))  # fmt: skip
        mine = sorted(self.ordered[party.name])
        await party.broadcast(f"{tag}/ordered", mine)
        got = await party.gather([s for s in self.names if s != party.name], f"{tag}/ordered",
                                 ORDERED, expect=list_of(integer(lo=0)))  # fmt: skip
        for s, js in got.items():
            a = self.attribute_counts[self.names.index(s)]
            if any(j >= a for j in js):
                raise ProtocolError(f"{s} named threshold attributes {js} of its {a}")
            self.ordered[s] = frozenset(js)
        root = LevelNode(0, 0, None, 0, [self.class_site], list(self.attribute_counts))
        root.bounds = {j: (-1, len(t)) for j, t in view.thresholds.items()}
        self.nodes.append(root)
        if self.is_class:
            assert view.y is not None
            for rows in self.ranges:
                y = view.y[rows.start : rows.start + rows.n]
                onehot = np.zeros((self.p, rows.n), dtype=self.dtype)
                onehot[y, np.arange(rows.n)] = 1
                rows.acquire(products=False)
                rows.shares[0] = onehot
                rows.release()

    async def decide(self, level: list[LevelNode], t: str) -> list[LevelNode]:
        """Mark the level's leaves (with their labels); returns the interior nodes."""
        raise NotImplementedError

    async def node_shares(self, inner: list[LevelNode], t: str) -> None:
        """This site's shares of ``Z`` of the interior nodes (the root's it has), by outer
        products of the winners' one-hot columns with the holders' shares of the parents'
        (:func:`protocols.ppid3.level_products.child_shares`), every range of rows at once;
        the shares of the level above are dropped."""
        depth = inner[0].depth

        async def one(rows: RowRange) -> None:
            if depth > 0:
                await child_shares(self.party, self.nodes, inner, rows, self.dealing, self.p, t,
                                   self.cost)  # fmt: skip
            for k in [k for k in rows.shares if self.nodes[k].depth < depth]:
                del rows.shares[k]

        await self.each_range(one, products=False)

    async def split(self, inner: list[LevelNode], t: str) -> list[Split]:
        """Each interior node's split, as this site knows it."""
        raise NotImplementedError

    def children(self, node: LevelNode, split: Split) -> list[int]:
        """Add the children of ``node`` split as ``split`` says; returns their keys."""
        me, s = self.party.name, split.site
        node.owner = s
        at = split.threshold if s == me else None
        if s == me:
            assert split.attribute is not None
            node.attribute = split.attribute
            node.threshold = -1 if at is None else at
        left = list(node.left)
        if not self.ordered[s]:  # public: a site with no threshold attribute used one up
            left[self.names.index(s)] -= 1
        holders = node.holders if s in node.holders else sorted(
            [*node.holders, s], key=self.names.index)  # fmt: skip
        used = node.used | {node.attribute} if s == me and at is None else node.used
        keys = []
        for v in range(split.fanout):
            bounds = dict(node.bounds)
            if at is not None:  # "<= t" keeps the thresholds below t, "> t" those above
                lo, hi = bounds[node.attribute]
                bounds[node.attribute] = (lo, at) if v == 0 else (at, hi)
            child = LevelNode(len(self.nodes), node.depth + 1, node.key, v, holders, left,
                              used=used, bounds=bounds)  # fmt: skip
            self.nodes.append(child)
            node.children.append(child.key)
            keys.append(child.key)
            self.child_added(node, child, split)
        return keys

    def child_added(self, node: LevelNode, child: LevelNode, split: Split) -> None:
        """What the way of counting keeps of a new child (``child.value`` is its branch)."""

    def finished(self, tree: DistributedTree) -> None:
        """What the way of counting adds to this site's part of the tree."""

    # ----------------------------------------------------------------- the structure

    def depth_first(self) -> list[int]:
        """The nodes' keys in depth-first order (the public numbering)."""
        order: list[int] = []
        stack = [0]
        while stack:
            k = stack.pop()
            order.append(k)
            stack += reversed(self.nodes[k].children)
        return order

    async def number(self, tag: str) -> DistributedTree:
        """Number the public structure depth first, give this site's nodes random ids and tell
        each parent's owner the ids of its children (one exchange); this site's part of the
        tree (with, at the class site, every count it learned)."""
        party, nodes, view, class_site = self.party, self.nodes, self.view, self.class_site
        order = self.depth_first()
        number = {k: i for i, k in enumerate(order)}
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
        outgoing: dict[str, dict[str, str]] = {s: {} for s in self.names if s != party.name}
        for k, nid in ids.items():
            parent = nodes[k].parent
            if parent is not None and nodes[parent].owner != party.name:
                outgoing[nodes[parent].owner][str(number[k])] = nid
        for s, body in outgoing.items():
            await party.send(s, f"{tag}/ids", body)
        known = {str(number[k]): nid for k, nid in ids.items()}
        for s in outgoing:
            got = await party.recv(s, f"{tag}/ids", NODE_ID, expect=mapping(text(), text()))
            known.update(got)
        root = nodes[0]
        if root.owner == party.name:
            await party.broadcast(f"{tag}/root", ids[0])
            tree.root = (party.name, ids[0])
        else:
            rid = await party.recv(root.owner, f"{tag}/root", ROOT_ID)
            tree.root = (root.owner, rid)
        for k in order:
            node = nodes[k]
            if self.is_class:
                self._class_site_part(tree, node, number[k], ids.get(k), tag)
            if not node.leaf and node.owner == party.name:
                children: dict[str, list[str]] = {}
                for c in node.children:
                    child = nodes[c]
                    cid = known.get(str(number[c]))
                    if cid is None:
                        raise ProtocolError(f"no id arrived for node {number[c]}")
                    children[self._branch_name(node, child.value)] = [child.owner, cid]
                record: dict[str, Any] = {"number": number[k],
                                          "attribute": view.attributes[node.attribute],
                                          "children": children}  # fmt: skip
                if node.threshold >= 0:  # x <= t, a missing value below every number
                    record["threshold"] = float(view.thresholds[node.attribute][node.threshold])
                    record["missing"] = "<="
                tree.interior[ids[k]] = record
        party.ledger.record("ppid3/structure", tree.structure, step=tag)
        return tree

    def _branch_name(self, node: LevelNode, value: int) -> str:
        """The name of branch ``value`` of this site's ``node``: the attribute's value, or
        ``<=`` and ``>`` of a threshold split (:mod:`mpc.learners.tree`'s keys)."""
        if node.threshold >= 0:
            return ("<=", ">")[value]
        return self.view.domains[node.attribute][value]

    def _class_site_part(
        self, tree: DistributedTree, node: LevelNode, number: int, nid: str | None, tag: str
    ) -> None:
        """The class site's record of a node: its counts and gains where it learned them (and
        the ledger entries of Theorem 1), each leaf's label."""
        party, view = self.party, self.view
        if node.counts is None:  # the counts stayed on shares
            if node.leaf:
                assert nid is not None
                tree.leaves[nid] = {"number": number, "counts": {}, "class": node.label}
            return
        assert view.classes is not None
        named = {c: int(x) for c, x in zip(view.classes, node.counts, strict=True)}
        tree.node_counts[number] = named
        party.ledger.record("ppid3/node-counts", {"node": number, "counts": named},
                            step=f"{tag}/n{number}")  # fmt: skip
        if node.gains is not None:
            party.ledger.record("ppid3/best-gains", {"node": number, "gains": node.gains},
                                step=f"{tag}/n{number}")  # fmt: skip
        if node.leaf:
            assert nid is not None
            tree.leaves[nid] = {"number": number, "counts": named, "class": node.label}
