"""PPID3 level by level — Vaidya & Clifton, Algorithm 7, with the counts of Algorithms 3 and 6
computed on additive shares for every node of a tree level at once. The correlated randomness
of each product between two sites comes from a party that is neither: a commodity server, the
``dealer`` (``helper="dealer"``), or, with ``k >= 3`` sites and no outside party, a third site
(``helper="sites"``; :mod:`protocols.engine.dealing`); or the two sites make it themselves by
oblivious transfer, with no third party at all and any ``k >= 2`` (``helper="ot"``;
:mod:`protocols.engine.ot_dealing`, whose docstring says what each site learns there).

The depth-first driver of :mod:`protocols.ppid3.ppid3` visits one node per exchange, about ten round
trips a node; a depth-6 tree on Adult has 13,041 nodes. This driver builds the same tree one
*level* per exchange: every message carries all nodes of the level. Everything it decides is
decided as in Algorithm 7, from the same integer counts with the same tie rules
(:func:`mpc.learners.id3.best_site_attribute`), so the tree equals
:class:`mpc.learners.id3.ID3Classifier` on the joined data and the one of
:mod:`protocols.ppid3.ppid3`.

Roles: ``k >= 2`` sites (one holds the class) and, with ``helper="dealer"``, the dealer; with
``helper="sites"`` each site also deals, in a task beside its own program, the products of
the pairs of sites :func:`protocols.engine.dealing.third_site` assigns to it; with
``helper="ot"`` the two sites of each product compute it by oblivious transfer over OT
sessions of their own, and make the rest of the randomness a dealer would deal (the transfer
pads and the permuted opening) in such a task
(:class:`protocols.engine.ot_dealing.OTDealing`). For an interior node ``ν`` the sites in
``H_ν`` (the class site and the owners of the splits on its path: public) hold additive
shares, in the ring ``Z_{2^b}`` (``b = 16`` when there are fewer than
``2^16`` rows, else 32; :meth:`protocols.engine.ring.Ring.for_rows`), of the ``N x p`` matrix
``Z^ν[t, c] = [row t reaches ν][class of t is c]``. At the start every pair of sites agrees on
a key (for the zero-sharing of step 3). A level:

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
   ``h`` a commodity dot product in which ``X_s^T + Ra`` (every attribute of ``s``) travels
   once per run. ``h`` cannot know which attributes of ``s`` remain at ``ν``, and ``s`` must
   not see the counts of the attributes it already used on the path (their row ``a`` would be
   ``ν``'s class distribution); so ``h``'s share comes back through a 1-out-of-2 oblivious
   transfer per (attribute, node) with precomputed randomness (Beaver's OT precomputation):
   ``s`` receives ``h``'s share of a remaining attribute and a zero block for a used one,
   ``h`` learns a uniformly random bit. When ``ν`` has two or more holders besides ``s``, each
   adds to its transferred share its part of a *zero-sharing* (pairwise ``±PRF(key_{h,h'},
   ν)``, summing to zero over the holders), so ``s`` learns the sum of the holders' shares,
   never one holder's ``X_s^T Z_h`` alone.
   **Class order**: the owner must not see the classes in the same order at every node
   (Section 1 of the paper). The class site draws a fresh permutation ``π_{ν,s}`` of the
   classes for every interior node and every owner (OS generator) and subtracts a fresh
   uniform mask ``T`` from the share of the counts it hands the owner, and a *permuted
   opening* (:func:`protocols.engine.dealing.open_permuted_owner`: one exchange between the owner
   and the class site per level, the dealing party giving the owner ``K, L`` and the class
   site ``Kπ - L``) gives the owner ``X_s^T Z^ν`` with its class columns in the order
   ``π_{ν,s}``. The class site sees a uniformly masked array; the dealing party knows the
   permutation but sees no count.
4. **Best gains** (Algorithm 5): each site sends the class site its best gain per node (gains
   do not depend on the class order:
   :func:`protocols.ppid3.distribution_counts.gain_in_any_class_order`); the class site announces
   the winning site of each node (site order breaks ties).
5. **Branching** (lines 11-19): each winner announces its nodes' number of children, and sends
   the class site the class distributions of the children — the rows of the winning
   attribute's count matrix, which it has already, in its class order for the node, which the
   class site undoes (Theorem 1 lets the class site learn every node's class distribution;
   the depth-first driver gets the same numbers with a DistributedCounts call per child).

Steps 2 and 3, the products, are in :mod:`protocols.ppid3.level_products`; who deals their
randomness, and the dealing, in :mod:`protocols.engine.dealing`.

Finally each site tells the owner of every parent of its nodes the nodes' random ids, and the
public structure is numbered depth first as in :mod:`protocols.ppid3.ppid3`, so classification
(:mod:`protocols.ppid3.classify_instance`) and the audit view are the same.

What each party learns (ledger):

* the class site: the class distribution of every node (``ppid3/node-counts``) and each
  site's best gain at every interior node (``ppid3/best-gains``) — Theorem 1;
* the owner of an attribute: its ``|A| x p`` count matrix at every node where it is a
  candidate (``fast-counts/attribute-counts``) — Theorem 1's ``|S_a|`` per class, with the
  class columns in a fresh order per node that it does not know;
* every site: the public structure (``ppid3/structure``) and which sites hold shares of each
  node (the owners on its path: the structure tells it); every message from another site is
  a masked array, a share, an OT choice bit, or a pairwise key, each uniform beside what the
  site holds (its own randomness, what it dealt: the joint-view tests);
* the dealer (``helper="dealer"``): every request as received (``fast-counts/request``):
  which two sites multiply, the shapes (rows, classes, the number of nodes of a batch), the
  fan-outs (the parent of each child in an outer product), the domain sizes of the owner's
  attributes (``blocks``) and the number of classes; that a mask seed or the class site's
  permutations came with a request (named, not copied); each site's ``fast-counts/done``.
  Never a count or a row;
* a helping site (``helper="sites"``): the same, for the products it deals
  (``fast-counts/helped``; ``fast-counts/done``), besides everything it learns as a site.

No site learns the size of another site's constraint set, any sub-intersection size, or which
of another site's attributes were used on a path. Trust: semi-honest sites and **a dealer
that colludes with no site** (``helper="dealer"``), or **semi-honest sites, no two colluding**
(``helper="sites"``: a site that pooled its view with the dealing site of a product could
unmask the other party's arrays), or **semi-honest sites, with no third party**
(``helper="ot"``: each pair computes its products, and makes what a dealer would deal, by
oblivious transfer).

**The helping sites** (``helper="sites"``). A helping site ``H`` deals the products between
two other sites; it learns no count and no row, nothing of the data it did not already hold
in PPID3, but it does receive other sites' randomness (below), which is not nothing: pooled
with one of the two sites of a product it dealt, it would unmask the other's arrays (the
trust statement: no two sites collude):

* *Who multiplies, and the shapes*: every site runs this same driver on the public structure
  (owners and fan-outs of every split, leaves, which site has attributes left on each path),
  so it computes for itself which pairs multiply at each level, the number of children or
  nodes of each batch and each child's parent; the number of rows follows record alignment
  and the number of classes is announced to every site. The numbers of values of the owner's
  attributes (``blocks``) are public in PPID3 as well: the paper's DistributionCounts runs one
  set intersection per value with every site taking part (Algorithm 6), and the holders of a
  dot product receive them here.
* *Randomness*: what it sends is drawn from its own OS generator (masks, their products, the
  oblivious transfers' precomputed pads and choice bits); what it receives besides public
  shapes is randomness too — the owner's seed of the mask ``Ra`` of ``X_s^T + Ra``
  and the class site's permutations ``π_{ν,s}``, each uniform and independent of the data
  (receipt ``fast-counts/request``, their uniformity tested). So ``K`` and ``L`` of a
  permuted opening expand from ``H``'s seed, and ``Ra`` from a seed ``H`` holds: the masks
  that hide an owner's data from its partner are known to ``H``, which never sees the masked
  data; they never come from a seed the party that sees the masked data can know.
  The masked messages that randomness protects go between the two parties of the product
  over their own encrypted channel; ``H`` never receives one of them, and every masked array
  ``H`` receives as a party of its own products is masked with randomness dealt by a site
  other than ``H``.
* *Shares it helped make*: ``H`` knows the masks of an outer product, hence a linear relation
  between the two shares it produced and the other party's input. The only values ever opened
  from shares are the owner's counts of step 3; an owner that had dealt the product that made
  holder ``h``'s share could, from ``X_H^T Z_h`` alone, learn random-weighted sums of
  another site's membership vector. The zero-sharing among the holders hides every single
  holder's part: ``H`` opens only the sum, ``X_H^T Z^ν`` less ``X_H^T`` of its own share
  (which it holds), on its remaining attributes: what Theorem 1 gives it. (An OT choice
  ``e = want ⊕ c`` goes from the owner to the holder; ``H`` knows ``c`` but never sees ``e``,
  so it does not learn which of the owner's attributes were used.)
* *The class order*: ``H`` deals the permuted opening between the class site and an owner
  ``s`` only when it is neither (so never the class site), and knows ``π_{ν,s}``. It never
  sees a message of that opening (``a - K`` goes from ``s`` to the class site, the answer
  back), and its own counts at ``ν`` come in ``π_{ν,H}``, drawn independently of
  ``π_{ν,s}``: knowing ``π_{ν,s}`` tells it neither a count nor which of its own columns is
  which class. (One permutation per node shared by all owners would: ``H`` could undo it on
  its own counts. That is why the order is drawn per node and per owner.)

So a helping site's view is its view as a site plus public shapes and independent
randomness: the ledger of a helping site holds only the entries listed above
(``tests/protocols/test_helper_sites.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal

import numpy as np

from mpc.errors import ConfigError
from mpc.learners.criteria import Criterion
from mpc.learners.id3 import best_site_attribute
from mpc.learners.tree import majority
from mpc.runtime.expect import boolean, check, integer, list_of, nothing_or, text
from mpc.runtime.party import Party
from mpc.runtime.view import declared
from protocols.engine.dealing import DEALER, Dealing, serve_level_dealer
from protocols.engine.preprocessing import Preprocessing
from protocols.engine.ring import Ring
from protocols.ppid3.distribution_counts import (
    SiteView,
    columns_sorted,
    is_same_class,
    unpermute_classes,
)
from protocols.ppid3.level_arrays import threshold_tables
from protocols.ppid3.level_grower import LevelGrower, Split
from protocols.ppid3.level_products import LevelNode, pair_keys, remaining_attribute_counts
from protocols.ppid3.ppid3 import BEST, BRANCHING, LEAF, WINNER, DistributedTree, check_sites
from protocols.ppid3.reveal_tree import SharedCounts
from protocols.primitives.psi_ca import os_permutation

#: what the class site receives besides the receipts of :mod:`protocols.ppid3.ppid3`
DISTS = declared(
    "ppid3/child-dists",
    "the class distributions of the children of the nodes a site split, in the classes' "
    "order the class site chose for it (Theorem 1)",
    canonical=lambda nodes: (
        [columns_sorted(d) for d in nodes] if isinstance(nodes, list) else nodes
    ),
)

__all__ = [
    "DEALER",
    "DISTS",
    "REVEALS",
    "OpenedCounts",
    "ppid3_levels",
    "serve_level_dealer",
]


class OpenedCounts(LevelGrower):
    """The paper's way of counting (``--reveal counts``, steps 1-5 of the module docstring):
    owners open their count matrices, the class site decides every node in the clear."""

    name = "counts"
    help = (
        "the paper's PPID3: owners open their count matrices, the class site every node's "
        "class distribution and every site's best gain (Theorem 1)"
    )
    default_criterion = "entropy"

    whole_rows = (
        "--reveal counts opens each node's counts to their owner in one transfer over all rows "
        "(a range's counts alone would say more than the node's); it takes a site's rows whole"
    )

    async def start(self, tag: str) -> None:
        await super().start(tag)
        self.keys = await pair_keys(self.party, f"{tag}/pair-key")
        if self.is_class:
            assert self.view.y is not None
            self.nodes[0].counts = np.bincount(self.view.y, minlength=self.p).astype(np.int64)

    async def decide(self, level: list[LevelNode], t: str) -> list[LevelNode]:
        """Step 1: the class site decides and announces the level's leaves."""
        party, view, class_site = self.party, self.view, self.class_site
        depth = level[0].depth
        if self.is_class:
            flags = []
            for node in level:
                assert node.counts is not None and view.classes is not None
                total = int(node.counts.sum())
                named = {c: int(x) for c, x in zip(view.classes, node.counts, strict=True)}
                parent_label = self.nodes[node.parent].label if node.parent is not None else None
                node.label = majority(named) if total > 0 else parent_label
                if node.label is None:
                    raise ConfigError("the training set is empty")
                flags.append(
                    (self.max_depth is not None and depth >= self.max_depth)
                    or sum(node.left) == 0
                    or total == 0
                    or is_same_class(node.counts)
                    or (self.min_samples_split is not None and total < self.min_samples_split)
                )
            await party.broadcast(f"{t}/leaf", flags)
        else:
            flags = await party.recv(
                class_site, f"{t}/leaf", LEAF, expect=list_of(boolean(), len(level))
            )
        for node, f in zip(level, flags, strict=True):
            node.leaf = f
            if f:
                node.owner = class_site
        return [node for node in level if not node.leaf]

    async def split(self, inner: list[LevelNode], t: str) -> list[Split]:
        """Steps 3-5: the owners' counts, the winners, their fan-outs and, to the class site,
        the children's class distributions."""
        await self.counts(inner, t)
        winners, local = await self.winners(inner, t)
        return await self.branch(inner, winners, local, t)

    async def counts(self, inner: list[LevelNode], t: str) -> None:
        """Step 3: every owner's attribute counts, with the classes in a fresh order per node
        and owner."""
        if self.is_class:
            for node in inner:
                node.perms = {s: os_permutation(self.p, f"{t}/perm/{node.key}/{s}")
                              for i, s in enumerate(self.names)
                              if s != self.class_site and node.left[i] > 0}  # fmt: skip
        await remaining_attribute_counts(
            self.party, self.nodes, inner, self.ranges[0], self.view, self.dealing, self.keys,
            self.p, self.class_site, t, self.cost,
        )  # fmt: skip

    def _candidates(self, node: LevelNode) -> tuple[list[tuple[int, int | None]], list[Any]]:
        """This site's candidate splits of ``node`` in the plain learner's order, ``(attribute,
        threshold index or None)``, and their scores: a nominal attribute not used on the
        path once, an attribute split at a threshold once per threshold inside its interval
        (its two-row tables from the prefix sums of its per-code counts)."""
        crit = self.criterion
        cands: list[tuple[int, int | None]] = []
        gains: list[Any] = []
        for j in range(len(self.view.attributes)):
            if j in self.view.thresholds:
                lo, hi = node.bounds[j]
                inside = np.arange(lo + 1, hi)
                if not len(inside):
                    continue
                tables = threshold_tables(node.by_attr[j], inside)
                if self.p > 1:  # each table's classes sorted: the same score in any order
                    order = np.lexsort((tables[:, 1], tables[:, 0]), axis=-1)
                    tables = np.take_along_axis(tables, order[:, None, :], axis=2)
                cands += [(j, int(i)) for i in inside]
                gains += crit.scores(tables)
            elif j not in node.used:
                cands.append((j, None))
                gains.append(crit.score_in_any_class_order(node.by_attr[j]))
        return cands, gains

    async def winners(
        self, inner: list[LevelNode], t: str
    ) -> tuple[list[str | None], list[tuple[int, int | None]]]:
        """Step 4: every site's best score per node to the class site, which announces the
        winners (None where no site has a candidate: the node is a leaf). Returns them and
        this site's best candidate per node."""
        party, names, class_site, crit = self.party, self.names, self.class_site, self.criterion
        best: list[Any] = []
        local: list[tuple[int, int | None]] = []
        for node in inner:
            cands, gains = self._candidates(node)
            i = best_site_attribute([gains], crit.tie)[1] if gains else -1
            best.append(crit.to_wire(gains[i]) if gains else None)
            local.append(cands[i] if gains else (-1, None))
        if not self.is_class:
            await party.send(class_site, f"{t}/best", best)
            announced: list[str | None] = await party.recv(
                class_site, f"{t}/winner", WINNER,
                expect=list_of(nothing_or(text(names)), len(inner)),
            )  # fmt: skip
            return announced, local
        reported = await party.gather(
            [s for s in names if s != party.name], f"{t}/best", BEST,
            expect=list_of(nothing_or(crit.wire_form()), len(inner)),
        )  # fmt: skip
        reported[party.name] = best
        winners: list[str | None] = []
        for i, node in enumerate(inner):
            gains_i = {s: reported[s][i] for s in names}
            node_gains = [[crit.from_wire(g)] if g is not None else [] for g in gains_i.values()]
            if any(node_gains):
                winners.append(names[best_site_attribute(node_gains, crit.tie)[0]])
            else:  # no candidate anywhere (numbers whose thresholds all lie on the path)
                winners.append(None)
            node.gains = gains_i
        await party.broadcast(f"{t}/winner", winners)
        return winners, local

    async def branch(
        self,
        inner: list[LevelNode],
        winners: list[str | None],
        local: list[tuple[int, int | None]],
        t: str,
    ) -> list[Split]:
        """Step 5: the winners announce their fan-outs and send the class site the children's
        class distributions (the rows of the winning attribute's counts, or a threshold's
        two sides, in the winner's class order for the node)."""
        party, names, class_site, view = self.party, self.names, self.class_site, self.view
        mine = [i for i, w in enumerate(winners) if w == party.name]
        branching = [len(view.domains[local[i][0]]) if local[i][1] is None else 2 for i in mine]
        dists = [node_dists(inner[i].by_attr[local[i][0]], local[i][1]) for i in mine]
        if mine:  # the winners are public: only they announce their nodes' fan-outs
            await party.broadcast(f"{t}/branching", branching)
        if not self.is_class and mine:
            await party.send(class_site, f"{t}/dists", dists)
        got_branching: dict[str, list[int]] = {party.name: branching}
        for s in names:
            if s != party.name and s in winners:
                got_branching[s] = await party.recv(
                    s, f"{t}/branching", BRANCHING,
                    expect=list_of(integer(lo=1), winners.count(s)),
                )  # fmt: skip
        child_dists: dict[str, list[Any]] = {party.name: dists}
        if self.is_class:
            for s in names:
                if s != party.name and s in winners:
                    child_dists[s] = await party.recv(s, f"{t}/dists", DISTS)
        seen = {s: 0 for s in names}
        splits = []
        for i, node in enumerate(inner):
            w = winners[i]
            if w is None:
                splits.append(Split("", None, 0))
                node.by_attr = {}
                continue
            nb = got_branching[w][seen[w]]
            dist = child_dists[w][seen[w]] if self.is_class else None
            seen[w] += 1
            if dist is not None:
                check(list_of(list_of(integer(lo=0), self.p), nb), dist,
                      f"{w}'s class distributions of the children")  # fmt: skip
            j, at = local[i] if w == party.name else (None, None)
            splits.append(Split(w, j, nb, dist, threshold=at))
            node.by_attr = {}
        return splits

    def child_added(self, node: LevelNode, child: LevelNode, split: Split) -> None:
        """At the class site, the child's class distribution, in the class order it knows."""
        if split.rows is None:
            return
        child.counts = np.asarray(split.rows[child.value], dtype=np.int64)
        if split.site != self.party.name:  # the winner's counts come in its order for the node
            child.counts = unpermute_classes(child.counts, node.order_of(split.site))


def node_dists(by_attr_j: np.ndarray, threshold: int | None = None) -> list[list[int]]:
    """The children's class distributions: the rows of the winning attribute's counts, or the
    two sides of its threshold at index ``threshold``."""
    rows = by_attr_j if threshold is None else threshold_tables(by_attr_j, [threshold])[0]
    return [[int(x) for x in row] for row in rows]


#: the ways of counting, by name (``--reveal``): ``counts``, the paper's PPID3 (Theorem 1's
#: counts and gains); ``tree``, only the tree (:mod:`protocols.ppid3.reveal_tree`)
REVEALS: dict[str, type[LevelGrower]] = {g.name: g for g in (OpenedCounts, SharedCounts)}


async def ppid3_levels(
    party: Party,
    view: SiteView,
    *,
    class_site: str,
    attribute_counts: Sequence[int],
    preprocessing: Preprocessing,
    reveal: type[LevelGrower] = OpenedCounts,
    criterion: Criterion | None = None,
    max_depth: int | None = None,
    min_samples_split: int | None = None,
    tag: str = "ppid3",
    progress: Callable[[str], None] | None = None,
    row_block: int | Literal["auto"] | None = None,
    shuffle_from: int | None = None,
) -> tuple[DistributedTree, dict[str, int]]:
    """Algorithm 7 at one site, one tree level per exchange, counting as ``reveal`` does (an
    entry of :data:`REVEALS`: the paper's :class:`OpenedCounts` by default) and splitting by
    ``criterion`` (its default when None). ``party`` is the site view
    (:class:`protocols.engine.dealing.Sites`) whose ``parties`` are the sites;
    ``preprocessing`` makes the correlated randomness of the products between two sites (an
    entry of :data:`protocols.engine.preprocessing.PREPROCESSING`: a dealer, a third site, or
    the two sites by oblivious transfer, set up here once). ``attribute_counts`` and the
    number of classes (announced by the class site) are public. Returns the site's part of
    the tree and its cost counters (with a third site dealing, ``dealt``: the products it
    dealt for others; by oblivious transfer, ``ot_requests``: the requests for randomness it
    made with a partner). ``row_block`` splits every site's rows into ranges of that many,
    whose products run range by range, one range in memory at a time and the others on the
    site's disk (one range by default; ``"auto"``: ranges of
    :data:`protocols.ppid3.level_grower.ROW_BLOCK` where the way of counting and the
    products take them; :class:`protocols.ppid3.level_products.RowRange`). ``shuffle_from``:
    with ``--reveal tree`` and a helping party, numbers of more codes are counted by shuffles
    (:mod:`protocols.ppid3.threshold_counts`; its :data:`SHUFFLE_FROM` when None)."""
    check_sites(party, view, class_site, attribute_counts)
    preprocessing.check(len(party.parties))
    if criterion is not None:
        reveal.check_criterion(criterion)

    def grow(dealing: Dealing) -> Coroutine[Any, Any, tuple[DistributedTree, dict[str, int]]]:
        grower = reveal(party, view, dealing, class_site=class_site,
                        attribute_counts=attribute_counts, criterion=criterion,
                        max_depth=max_depth, min_samples_split=min_samples_split,
                        row_block=row_block, shuffle_from=shuffle_from)  # fmt: skip
        return grower.grow(tag, progress)

    dtype = Ring.for_rows(len(view.tids)).dtype
    return await preprocessing.run(party, view, dtype=dtype, tag=tag, grow=grow)
