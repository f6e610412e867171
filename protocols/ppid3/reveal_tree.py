"""PPID3 that reveals only the tree (``mpc run ppid3 --reveal tree``): the level driver of
:mod:`protocols.ppid3.levels` with every count, score and stopping test kept on additive
shares, and only the tree opened.

The paper's PPID3 (Vaidya & Clifton, Algorithm 7; ``--reveal counts``, the default) opens
each owner's count matrices at every node where it is a candidate and gives the class site
every node's class distribution and every site's best gain (Theorem 1). This mode computes
the same tree as the plain learner with the same criterion (``gini``:
:func:`mpc.learners.criteria.gini_score`, exact fractions) and opens, to every site:

* which nodes are leaves: the stopping tests that depend on the data (one class left, which
  includes no rows; fewer than ``min_samples_split``) decided on shares, one bit per node
  opened; the depth limit and "no attribute left" are public already;
* each leaf's label (the index of its class, as MPyC's ``id3gini`` reveals it);
* the chosen attribute of each interior node (its owner, the attribute's index among the
  owner's, hence its fan-out).

Nothing else: no count, no score, no class distribution, no record's membership in a node.

A level, at every site:

1. **Shares of the interior nodes** as in the paper's mode (step 2 of
   :mod:`protocols.ppid3.levels`: outer products of the winner's one-hot columns with the
   other holders' shares of ``Z^π``). The holders of a node are public as before.
2. **Counts on shares**: every site with attributes left at a node gets, with each holder of
   ``Z^ν``, additive shares of ``X_s^T Z^ν`` (:func:`protocols.ppid3.level_products.
   shared_attribute_counts`: the commodity dot product without its oblivious transfer:
   nothing is opened, so no zero-sharing is needed).
3. **Fold**: every site's shares of the level's counts (in the share ring ``Z_{2^16}`` or
   ``Z_{2^32}``) go to the first two sites, ``p0`` and ``p1``, re-randomised: a site other
   than those draws a fresh seed (OS generator), sends it to ``p0`` and its shares less the
   seed's expansion to ``p1``; each receives a uniform message. ``p0`` and ``p1`` lift the
   sums to ``Z_{2^64}`` (:func:`protocols.primitives.secure_comparison.lift`).
4. **Decisions on shares** (``p0`` and ``p1``, triples dealt by the party that deals their
   products: :mod:`protocols.ppid3.shared_scores`): each candidate's Gini terms in
   ``Z_{2^64}``, summed as fractions round by round, each round in a ring only as wide as
   its results (:func:`protocols.ppid3.shared_scores.fraction_rings`); the argmax over each
   node's candidates (:func:`protocols.ppid3.gini_argmax.gini_argmax`: each pair compared in
   the ring it needs; the first best in site and column order, the plain learner's tie
   rule), opened to every site; the children's class counts are the winning candidate's
   rows, still shared; their stop bits and labels at the next level. With
   ``criterion="entropy-fixed"`` the scores are integers instead, each count's fixed-point
   ``n log n`` on shares (:mod:`protocols.ppid3.shared_entropy`), and one argmax in their
   ring.

What each party receives: from a dealing party, seeds and masks (uniform); from each other,
masked arrays, shares and a re-randomised fold (uniform); the numbers of distinct values of
every site's attributes (``reveal/domains``, declared: the fan-outs a split on each would
have); the openings of the decisions above (``reveal/stop-share``, ``reveal/label-share``,
``reveal/split-share``), which ``p0`` and ``p1`` send through their one door
(:mod:`protocols.engine.opening`): each share plus a fresh zero-sharing from a key only the two
hold, so that the pair opens what the ledger records as ``reveal/stops``, ``reveal/labels``,
``reveal/splits`` and each message is uniform beside everything its receiver holds, the
triples it dealt included. A dealing party receives requests with public shapes, and seeds
of masks as in the paper's mode. Trust: the helper's (``dealer``: it colludes with no site;
``sites``: no two sites collude) and, whatever the helper, **``p0`` and ``p1`` do not
collude**: together they would hold every count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.criteria import NLOGN_W
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.expect import integer, list_of, raw
from mpc.runtime.party import Party
from mpc.runtime.view import declared, uniform
from protocols.engine.opening import opening
from protocols.engine.ring import RING64, Left, Ring
from protocols.ppid3.distribution_counts import SiteView
from protocols.ppid3.fast_counts import CLASSES
from protocols.ppid3.gini_argmax import argmax_plan, gini_argmax, plan_needs
from protocols.ppid3.level_arrays import one_hot_columns
from protocols.ppid3.level_dealing import Dealing
from protocols.ppid3.level_products import LevelNode, child_shares, shared_attribute_counts
from protocols.ppid3.ppid3 import DistributedTree
from protocols.ppid3.shared_entropy import entropy_needs, entropy_pad, entropy_ring, entropy_scores
from protocols.ppid3.shared_scores import (
    Duo,
    best_splits,
    decision_needs,
    final_rings,
    fraction_needs,
    fraction_rings,
    gini_fractions,
    gini_terms,
    node_decisions,
    score_needs,
)
from protocols.primitives.secure_comparison import lift_needs

__all__ = ["SEED", "SHARE", "grow_tree"]

#: the criteria this mode computes on shares (the plain learner's of the same names)
CRITERIA = ("gini", "entropy-fixed")

DOMAINS = declared(
    "reveal/domains",
    "the numbers of distinct values of a site's attributes in the aligned records (the "
    "fan-outs a split on each would have; the paper's DistributionCounts shows them too)",
)
SEED = uniform("reveal/seed", "a site's fresh seed of the part of its shares this party holds")
SHARE = uniform("reveal/share", "a site's shares less the part expanded from a seed")
STOP_SHARE = opening(
    "reveal/stop-share",
    "p0's or p1's share of the level's stop bits, re-randomised",
    opens="reveal/stops",
)
LABEL_SHARE = opening(
    "reveal/label-share",
    "p0's or p1's share of the leaves' labels, re-randomised",
    opens="reveal/labels",
)
SPLIT_SHARE = opening(
    "reveal/split-share",
    "p0's or p1's share of the level's splits, re-randomised",
    opens="reveal/splits",
)


async def grow_tree(
    party: Party,
    view: SiteView,
    dealing: Dealing,
    class_site: str,
    attribute_counts: Sequence[int],
    max_depth: int | None,
    min_samples_split: int | None,
    tag: str,
    progress: Callable[[str], None] | None,
    finish: Callable[..., Any],
    *,
    criterion: str = "gini",
) -> tuple[DistributedTree, dict[str, int]]:
    """The levels of the ``--reveal tree`` mode at one site (the module docstring), splitting
    by ``criterion`` (:data:`CRITERIA`); ``finish`` numbers the public structure
    (:func:`protocols.ppid3.levels._finish`)."""
    if criterion not in CRITERIA:
        raise ConfigError(f"--reveal tree splits by one of {list(CRITERIA)}, not {criterion!r}")
    grower = await _Tree.start(party, view, dealing, class_site, attribute_counts,
                               max_depth, min_samples_split, tag, criterion)  # fmt: skip
    frontier = [0]
    while frontier:
        level = [grower.nodes[k] for k in frontier]
        t = f"{tag}/L{level[0].depth}"
        grower.cost["levels"] += 1
        inner = await grower.decide(level, t)
        if progress is not None:
            progress(f"level {level[0].depth}: {len(level)} nodes, {len(inner)} interior")
        if not inner:
            break
        frontier = await grower.split(inner, t)
    await dealing.close()
    tree = await finish(party, grower.nodes, view, class_site, tag)
    if view.classes is not None:
        tree.classes = list(view.classes)
    if grower.duo.active:  # each interior node's majority class stays shared
        order: list[int] = []
        stack = [0]
        while stack:
            k = stack.pop()
            order.append(k)
            stack += reversed(grower.nodes[k].children)
        tree.label_shares = {number: int(grower.labels[k][0]) for number, k in enumerate(order)
                             if not grower.nodes[k].leaf}  # fmt: skip
    return tree, grower.cost


class _Tree:
    """One site's state in :func:`grow_tree`."""

    p: int  # the number of classes
    domains: dict[str, list[int]]  # every site's attributes' numbers of values (public)
    duo: Duo
    xt: np.ndarray
    dtype: Any
    width: int
    rows: int  # the records every site holds (public)
    max_depth: int | None
    mss: int | None
    criterion: str

    def __init__(self, party: Party, view: SiteView, dealing: Dealing, class_site: str) -> None:
        self.party, self.view, self.dealing, self.class_site = party, view, dealing, class_site
        self.names = list(party.parties)
        self.nodes: list[LevelNode] = []
        self.shares: dict[int, np.ndarray] = {}  # node -> this site's share of Z
        self.cost = {"outer_batches": 0, "dot_batches": 0, "levels": 0}
        self.prepared: dict[str, Left] = {}
        self.xt_hat: dict[str, Left] = {}
        self.xt_blocks: dict[str, list[int]] = {}
        # public: each node's attributes used on the path, per site
        self.used: dict[int, dict[str, frozenset[int]]] = {}
        # p0 and p1: shares of each node's class counts and label
        self.classes: dict[int, np.ndarray] = {}
        self.labels: dict[int, Any] = {}

    @classmethod
    async def start(
        cls, party: Party, view: SiteView, dealing: Dealing, class_site: str,
        attribute_counts: Sequence[int], max_depth: int | None, min_samples_split: int | None,
        tag: str, criterion: str,
    ) -> _Tree:  # fmt: skip
        self = cls(party, view, dealing, class_site)
        self.max_depth, self.mss, self.criterion = max_depth, min_samples_split, criterion
        if len(self.names) < 2:
            raise ConfigError("--reveal tree needs at least 2 sites")
        is_class = party.name == class_site
        if is_class:
            assert view.classes is not None
            self.p = len(view.classes)
            await party.broadcast(f"{tag}/classes", self.p)
        else:
            self.p = await party.recv(class_site, f"{tag}/classes", CLASSES, expect=integer(lo=1))
        mine = [len(d) for d in view.domains]
        await party.broadcast(f"{tag}/domains", mine)
        got = await party.gather([s for s in self.names if s != party.name], f"{tag}/domains",
                                 DOMAINS, expect=list_of(integer(lo=1)))  # fmt: skip
        self.domains = {party.name: mine, **got}
        for s, a in zip(self.names, attribute_counts, strict=True):
            if len(self.domains[s]) != a:
                raise ProtocolError(f"{s} announced {len(self.domains[s])} attributes, not {a}")
        n = self.rows = len(view.tids)
        self.dtype = Ring.for_rows(n).dtype
        self.width = np.dtype(self.dtype).itemsize * 8
        widest = max(max(d, default=1) for d in self.domains.values())
        if criterion == "gini":
            self.duo = Duo(party, dealing, RING64)
        else:
            if n >= 2**NLOGN_W:
                raise ConfigError(f"--criterion entropy-fixed counts at most {2**NLOGN_W - 1:,} "
                                  f"rows; this table has {n:,}")  # fmt: skip
            self.duo = Duo(party, dealing, entropy_ring(widest * (self.p + 1)))
        await self.duo.start(f"{tag}/open-key")
        self.xt, _ = one_hot_columns(view.codes, mine, self.dtype)
        root = LevelNode(0, 0, None, 0, [class_site], list(attribute_counts))
        self.nodes.append(root)
        self.used[0] = {s: frozenset() for s in self.names}
        counts = None
        if is_class:
            assert view.y is not None
            onehot = np.zeros((self.p, n), dtype=self.dtype)
            onehot[view.y, np.arange(n)] = 1
            self.shares[0] = onehot
            counts = RING64.array(np.bincount(view.y, minlength=self.p))
        root_counts = await self._deal_in(class_site, counts, self.p, f"{tag}/root")
        if self.duo.active:
            assert root_counts is not None
            self.classes[0] = root_counts
        return self

    # ----------------------------------------------------------------- moving shares

    async def _deal_in(
        self, owner: str, values: np.ndarray | None, n: int, tag: str
    ) -> np.ndarray | None:
        """``owner``'s values (``Z_{2^64}``) as shares of ``p0`` and ``p1``: a fresh seed's
        expansion to one, the rest to the other."""
        duo, party, ring = self.duo, self.party, RING64
        if party.name == owner:
            assert values is not None
            seed = randomness.seed(f"{tag}/seed")
            rest = ring.reduce(values - ring.random(SeedStream(seed), n))
            if owner == duo.p0:
                await party.send(duo.p1, f"{tag}/seed", seed)
                return rest
            if owner == duo.p1:
                await party.send(duo.p0, f"{tag}/seed", seed)
                return rest
            await party.send(duo.p0, f"{tag}/seed", seed)
            await party.send(duo.p1, f"{tag}/rest", ring.pack(rest))
            return None
        if not duo.active:
            return None
        if owner in (duo.p0, duo.p1) or duo.role == 0:
            seed = await party.recv(owner, f"{tag}/seed", SEED, expect=raw(32))
            return ring.random(SeedStream(seed), n)
        return ring.unpack(await party.recv(owner, f"{tag}/rest", SHARE), (n,), owner, "shares")

    async def _fold(self, x: np.ndarray, tag: str) -> np.ndarray | None:
        """Every site's shares ``x`` (share ring) summed at ``p0`` and ``p1``, re-randomised
        by the sites that are neither (the module docstring, step 3)."""
        duo, party = self.duo, self.party
        others = [s for s in self.names if s not in (duo.p0, duo.p1)]
        if not duo.active:
            seed = randomness.seed(f"{tag}/seed")
            await party.send(duo.p0, f"{tag}/seed", seed)
            await party.send(duo.p1, f"{tag}/rest",
                             pack_array(x - Ring.of(x.dtype).random(seed, x.shape)))  # fmt: skip
            return None
        total = x.copy()
        for s in others:
            if duo.role == 0:
                seed = await party.recv(s, f"{tag}/seed", SEED, expect=raw(32))
                total += Ring.of(x.dtype).random(seed, x.shape)
            else:
                total += unpack_array(await party.recv(s, f"{tag}/rest", SHARE), x.dtype,
                                      x.shape, s, "shares")  # fmt: skip
        return total

    async def _open(
        self, values: np.ndarray | None, n: int, tag: str, receipt: Any, ring: Ring = RING64
    ) -> list[int]:
        """Open ``n`` shared values of ``p0`` and ``p1`` (in ``ring``) to every site, through
        the pair's door (re-randomised: :mod:`protocols.engine.opening`)."""
        got = await self.duo.open(values, n, to=self.names, tag=tag, receipt=receipt, ring=ring)
        assert got is not None  # every site is a receiver
        return got

    # ----------------------------------------------------------------- a level

    async def decide(self, level: list[LevelNode], t: str) -> list[LevelNode]:
        """Stop bits and labels on shares; open the stop bits of the nodes the public rules
        do not stop, and the labels of the leaves. Returns the interior nodes."""
        duo, ring = self.duo, RING64
        public_stop = [
            (self.max_depth is not None and node.depth >= self.max_depth) or sum(node.left) == 0
            for node in level
        ]
        stop = label = None
        if duo.active:
            m = len(level)
            counts = np.stack([self.classes[node.key] for node in level])
            parent = np.concatenate([
                self.labels[node.parent] if node.parent is not None else ring.zeros(1)
                for node in level
            ])  # fmt: skip
            needs = decision_needs(m, self.p, self.mss is not None)
            pool = await duo.pool(f"{t}/dec", needs, RING64)
            stop, label = await node_decisions(duo, counts, parent, self.mss, pool, f"{t}/dec")
            pool.finished()
            for i, node in enumerate(level):
                self.labels[node.key] = label[i : i + 1]
        asked = [i for i, f in enumerate(public_stop) if not f]
        opened = await self._open(None if stop is None else stop[asked], len(asked),
                                  f"{t}/stops", STOP_SHARE)  # fmt: skip
        if any(v not in (0, 1) for v in opened):
            raise ProtocolError(f"the stop bits opened to {opened}")
        stops = {str(level[i].key): v for i, v in zip(asked, opened, strict=True)}
        self.party.ledger.record("reveal/stops", stops, step=t)
        flags = list(public_stop)
        for i, v in zip(asked, opened, strict=True):
            flags[i] = bool(v)
        leaves = [i for i, f in enumerate(flags) if f]
        got = await self._open(None if label is None else label[leaves], len(leaves),
                               f"{t}/labels", LABEL_SHARE)  # fmt: skip
        if any(not 0 <= v < self.p for v in got):
            raise ProtocolError(f"the labels opened to {got}")
        labels = {str(level[i].key): v for i, v in zip(leaves, got, strict=True)}
        self.party.ledger.record("reveal/labels", labels, step=t)
        classes = self.view.classes
        for i, v in zip(leaves, got, strict=True):
            node = level[i]
            node.leaf = True
            node.owner = self.class_site
            node.label = classes[v] if classes is not None else str(v)
        return [node for node, f in zip(level, flags, strict=True) if not f]

    def _candidates(self, inner: list[LevelNode]) -> list[list[tuple[str, int]]]:
        """Each node's candidates, ``(site, attribute)`` in site and column order."""
        out = []
        for node in inner:
            cands = []
            for i, s in enumerate(self.names):
                if node.left[i] > 0:
                    used = self.used[node.key][s]
                    cands += [(s, j) for j in range(len(self.domains[s])) if j not in used]
            out.append(cands)
        return out

    async def split(self, inner: list[LevelNode], t: str) -> list[int]:
        """Shares, counts, the fold, the scores and the argmax; opens the splits and adds
        the children. Returns the next frontier."""
        party, duo, p = self.party, self.duo, self.p
        depth = inner[0].depth
        if depth > 0:
            await child_shares(party, self.nodes, inner, self.shares, self.view, self.dealing, p,
                               t, self.cost)  # fmt: skip
        for k in [k for k in self.shares if self.nodes[k].depth < depth]:
            del self.shares[k]
        parts = await shared_attribute_counts(
            party, self.nodes, inner, self.shares, self.view, self.xt, self.dealing,
            self.prepared, self.xt_hat, self.xt_blocks, p, t, self.cost,
        )  # fmt: skip
        cands = self._candidates(inner)
        offsets = {s: np.concatenate([[0], np.cumsum(d)]).astype(int)
                   for s, d in self.domains.items()}  # fmt: skip
        pieces = []
        for node, cs in zip(inner, cands, strict=True):
            for s, j in cs:
                size = self.domains[s][j]
                part = parts.get((node.key, s))
                pieces.append(np.zeros(size * p, dtype=self.dtype) if part is None else
                              part[offsets[s][j] : offsets[s][j] + size].reshape(-1))  # fmt: skip
        local = np.concatenate(pieces)
        folded = await self._fold(local, f"{t}/fold")
        ring = RING64 if self.criterion == "gini" else duo.ring
        best = blocks = None
        if duo.active:
            assert folded is not None
            best, blocks = await self._best(folded, cands, len(local), t)
        winners = await self._open(best, len(inner), f"{t}/splits", SPLIT_SHARE, ring)
        if any(not 0 <= w < len(cs) for w, cs in zip(winners, cands, strict=True)):
            raise ProtocolError(f"the splits opened to {winners}")
        chosen = [cs[w] for w, cs in zip(winners, cands, strict=True)]
        party.ledger.record("reveal/splits", {str(node.key): [s, j] for node, (s, j) in
                                              zip(inner, chosen, strict=True)}, step=t)  # fmt: skip
        frontier = []
        first = 0
        for node, cs, w in zip(inner, cands, winners, strict=True):
            s, j = cs[w]
            rows = None if blocks is None else blocks[first + w, : self.domains[s][j]]
            first += len(cs)
            frontier += self._children(node, s, j, rows)
        return frontier

    async def _best(
        self, folded: np.ndarray, cands: list[list[tuple[str, int]]], size: int, t: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """``p0``'s or ``p1``'s shares of each node's best candidate (by the criterion) and
        of every candidate's counts (``candidates x values x p``, ``Z_{2^64}``), from the
        folded counts."""
        duo, p = self.duo, self.p
        lengths = [self.domains[s][j] for c in cands for s, j in c]
        count, widest = len(lengths), max(lengths)
        needs = lift_needs(size, self.width)
        if self.criterion == "gini":
            needs += score_needs(count, widest, p)
            rings = fraction_rings(self.rows, lengths)
            plan = argmax_plan(self.rows, [[self.domains[s][j] for s, j in c] for c in cands],
                               final_rings(lengths, rings))  # fmt: skip
        small = await duo.pool(f"{t}/score", needs, RING64)
        if self.criterion == "gini":
            each = zip(fraction_needs(lengths, rings), rings, strict=True)
            rounds = [await duo.pool(f"{t}/sum{j}", n, r) for j, (n, r) in enumerate(each)]
            pools = {bits: await duo.pool(f"{t}/best{bits}", n, Ring(bits))
                     for bits, n in sorted(plan_needs(plan).items())}  # fmt: skip
        else:
            wide = await duo.pool(f"{t}/split", entropy_needs(lengths, p, len(cands),
                                  max(len(c) for c in cands), duo.ring))  # fmt: skip
        lifted = await duo.lift(folded, self.width, small, f"{t}/lift", RING64)
        blocks = RING64.zeros((count, widest, p))
        at = 0
        for c, size_c in enumerate(lengths):
            blocks[c, :size_c] = lifted[at : at + size_c * p].reshape(size_c, p)
            at += size_c * p
        real = np.arange(widest)[None, :] < np.asarray(lengths)[:, None]
        if self.criterion == "gini":
            s_v, y_v = await gini_terms(duo, blocks, small, f"{t}/gini")
            small.finished()
            num, den = await gini_fractions(duo, s_v[real], y_v[real], lengths, rounds, rings,
                                            f"{t}/sum")  # fmt: skip
            best = await gini_argmax(duo, num, den, plan, pools, f"{t}/best")
            for pool in (*rounds, *pools.values()):
                pool.finished()
            return best, blocks
        small.finished()
        scores = await entropy_scores(duo, blocks[real], lengths, wide, f"{t}/nlogn")
        keys = duo.const(entropy_pad(duo.ring), (len(cands), max(len(c) for c in cands)))
        c = 0
        for i, cs in enumerate(cands):
            keys[i, : len(cs)] = scores[c : c + len(cs)]
            c += len(cs)
        best = await best_splits(duo, keys, wide, f"{t}/best")
        wide.finished()
        return best, blocks

    def _children(self, node: LevelNode, s: str, j: int, rows: np.ndarray | None) -> list[int]:
        """Add the children of ``node``, split by site ``s`` on its attribute ``j``; at
        ``p0`` and ``p1``, ``rows`` are the shares of the children's class counts."""
        node.owner = s
        if s == self.party.name:
            node.attribute = j
        left = list(node.left)
        left[self.names.index(s)] -= 1
        holders = node.holders if s in node.holders else sorted(
            [*node.holders, s], key=self.names.index)  # fmt: skip
        used = dict(self.used[node.key])
        used[s] = used[s] | {j}
        mine = node.used | {j} if s == self.party.name else node.used
        keys = []
        for v in range(self.domains[s][j]):
            child = LevelNode(len(self.nodes), node.depth + 1, node.key, v, holders, left,
                              used=mine)  # fmt: skip
            self.nodes.append(child)
            self.used[child.key] = used
            node.children.append(child.key)
            keys.append(child.key)
            if rows is not None:
                self.classes[child.key] = rows[v]
        return keys
