"""PPID3 level by level — Vaidya & Clifton, Algorithm 7, with the counts of Algorithms 3 and 6
computed on additive shares for every node of a tree level at once. The correlated randomness
of each product between two sites comes from a party that is neither: a commodity server, the
``dealer`` (``helper="dealer"``), or, with ``k >= 3`` sites and no outside party, a third site
(``helper="sites"``; :mod:`protocols.ppid3.level_dealing`); or the two sites make it themselves by
oblivious transfer, with no third party at all and any ``k >= 2`` (``helper="ot"``;
:mod:`protocols.ppid3.level_ot`, whose docstring says what each site learns there).

The depth-first driver of :mod:`protocols.ppid3.ppid3` visits one node per exchange, about ten round
trips a node; a depth-6 tree on Adult has 13,041 nodes. This driver builds the same tree one
*level* per exchange: every message carries all nodes of the level. Everything it decides is
decided as in Algorithm 7, from the same integer counts with the same tie rules
(:func:`mpc.learners.id3.best_site_attribute`), so the tree equals
:class:`mpc.learners.id3.ID3Classifier` on the joined data and the one of
:mod:`protocols.ppid3.ppid3`.

Roles: ``k >= 2`` sites (one holds the class) and, with ``helper="dealer"``, the dealer; with
``helper="sites"`` each site also deals, in a task beside its own program, the products of
the pairs of sites :func:`protocols.ppid3.level_dealing.third_site` assigns to it; with
``helper="ot"`` the two sites of each product compute it by oblivious transfer over OT
sessions of their own, and make the rest of the randomness a dealer would deal (the transfer
pads and the permuted opening) in such a task (:class:`protocols.ppid3.level_ot.OTDealing`). For an
interior
node ``ν`` the sites in ``H_ν`` (the class site and the owners of the splits on its path:
public) hold additive shares, in the ring ``Z_{2^b}`` (``b = 16`` when there are fewer than
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
   opening* (:func:`protocols.ppid3.fast_counts.open_permuted_owner`: one exchange between the owner
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
randomness, and the dealing, in :mod:`protocols.ppid3.level_dealing`.

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

import secrets
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.id3 import best_site_attribute
from mpc.learners.tree import majority
from mpc.runtime.expect import boolean, check, integer, list_of, mapping, nothing_or, real, text
from mpc.runtime.party import Party
from mpc.runtime.view import declared
from protocols.engine.ring import Left, Ring
from protocols.ppid3.distribution_counts import (
    SiteView,
    columns_sorted,
    gain_in_any_class_order,
    is_same_class,
    unpermute_classes,
)
from protocols.ppid3.fast_counts import CLASSES
from protocols.ppid3.helpers import helper_of
from protocols.ppid3.level_arrays import one_hot_columns
from protocols.ppid3.level_dealing import (
    DEALER,
    Dealing,
    serve_level_dealer,
)
from protocols.ppid3.level_products import (
    LevelNode,
    child_shares,
    pair_keys,
    remaining_attribute_counts,
)
from protocols.ppid3.ppid3 import (
    BEST,
    BRANCHING,
    LEAF,
    NODE_ID,
    ROOT_ID,
    WINNER,
    DistributedTree,
    check_sites,
)
from protocols.ppid3.reveal_tree import grow_tree
from protocols.primitives.psi_ca import os_permutation

#: what a run opens: ``counts``, the paper's PPID3 (Theorem 1's counts and gains); ``tree``,
#: only the tree (:mod:`protocols.ppid3.reveal_tree`)
REVEAL = {
    "counts": "the paper's PPID3: owners open their count matrices, the class site every "
    "node's class distribution and every site's best gain (Theorem 1)",
    "tree": "only the tree: counts, scores and stopping tests stay on shares (Gini)",
}

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
    "REVEAL",
    "ppid3_levels",
    "serve_level_dealer",
]

# ----------------------------------------------------------------------------- the driver


async def ppid3_levels(
    party: Party,
    view: SiteView,
    *,
    class_site: str,
    attribute_counts: Sequence[int],
    helper: str = "dealer",
    dealer: str = DEALER,
    max_depth: int | None = None,
    min_samples_split: int | None = None,
    tag: str = "ppid3",
    progress: Callable[[str], None] | None = None,
    reveal: str = "counts",
    criterion: str = "gini",
) -> tuple[DistributedTree, dict[str, int]]:
    """Algorithm 7 at one site, one tree level per exchange. ``reveal="tree"``: the mode of
    :mod:`protocols.ppid3.reveal_tree` (``criterion``, ``"gini"`` or ``"entropy-fixed"``, on
    shares; only the tree is opened). ``party`` is the
    site view (:class:`protocols.ppid3.fast_counts.Sites`) whose ``parties`` are the sites.
    ``helper`` says who deals the correlated randomness: ``"dealer"``, the party ``dealer`` reached
    through the view; ``"sites"`` (``k >= 3``), a third site per product, this one serving its share
    of the requests beside its own program; ``"ot"`` (``k >= 2``), no one: each pair of sites
    computes its products by oblivious transfer and makes the rest of the randomness beside
    the program (the pair's OT sessions set up here, once). ``attribute_counts`` and the
    number of classes (announced by the class site) are public. Returns the site's part of
    the tree and its cost counters (with ``helper="sites"``, ``dealt``: the products it
    dealt for others; with ``helper="ot"``, ``ot_requests``: the requests for randomness it
    made with a partner)."""
    check_sites(party, view, class_site, attribute_counts)
    how = helper_of(helper)
    how.check(len(party.parties))

    if reveal not in REVEAL:
        raise ConfigError(f"reveal must be one of {list(REVEAL)}, got {reveal!r}")

    def grow(dealing: Dealing) -> Coroutine[Any, Any, tuple[DistributedTree, dict[str, int]]]:
        if reveal == "tree":
            return grow_tree(party, view, dealing, class_site, attribute_counts, max_depth,
                             min_samples_split, tag, progress, _finish,
                             criterion=criterion)  # fmt: skip
        return _grow(party, view, dealing, class_site, attribute_counts, max_depth,
                     min_samples_split, tag, progress)  # fmt: skip

    return await how.run(party, view, dtype=Ring.for_rows(len(view.tids)).dtype, tag=tag, grow=grow)


async def _grow(
    party: Party,
    view: SiteView,
    dealing: Dealing,
    class_site: str,
    attribute_counts: Sequence[int],
    max_depth: int | None,
    min_samples_split: int | None,
    tag: str,
    progress: Callable[[str], None] | None,
) -> tuple[DistributedTree, dict[str, int]]:
    """The driver's levels at one site (:func:`ppid3_levels`)."""
    is_class = party.name == class_site
    if is_class:
        assert view.classes is not None
        p = len(view.classes)
        await party.broadcast(f"{tag}/classes", p)
    else:
        p = await party.recv(class_site, f"{tag}/classes", CLASSES, expect=integer(lo=1))
    keys = await pair_keys(party, f"{tag}/pair-key")
    grower = _Levels(party, view, dealing, class_site, p, keys, max_depth, min_samples_split)
    grower.nodes.append(LevelNode(0, 0, None, 0, [class_site], list(attribute_counts)))
    if is_class:
        assert view.y is not None
        onehot = np.zeros((p, len(view.tids)), dtype=grower.dtype)
        onehot[view.y, np.arange(len(view.tids))] = 1
        grower.shares[0] = onehot
        grower.nodes[0].counts = np.bincount(view.y, minlength=p).astype(np.int64)
    frontier = [0]
    while frontier:
        level = [grower.nodes[k] for k in frontier]
        t = f"{tag}/L{level[0].depth}"
        grower.cost["levels"] += 1
        inner = await grower.leaves(level, t)
        if progress is not None:
            progress(f"level {level[0].depth}: {len(level)} nodes, {len(inner)} interior")
        if not inner:
            break
        await grower.counts(inner, t)
        winners, local = await grower.winners(inner, t)
        frontier = await grower.branch(inner, winners, local, t)
    await dealing.close()
    tree = await _finish(party, grower.nodes, view, class_site, tag)
    return tree, grower.cost


class _Levels:
    """One site's state while :func:`_grow` builds the tree level by level: the public nodes,
    this site's shares of ``Z`` and what its products prepared once per run."""

    def __init__(
        self, party: Party, view: SiteView, dealing: Dealing, class_site: str, p: int,
        keys: dict[str, bytes], max_depth: int | None, min_samples_split: int | None,
    ) -> None:  # fmt: skip
        self.party, self.view, self.dealing, self.class_site = party, view, dealing, class_site
        self.p, self.keys = p, keys
        self.max_depth, self.min_samples_split = max_depth, min_samples_split
        self.names = list(party.parties)
        self.is_class = party.name == class_site
        n = len(view.tids)
        self.dtype = Ring.for_rows(n).dtype
        self.cost = {"outer_batches": 0, "dot_batches": 0, "levels": 0}
        # X_s^T: one-hot rows of every attribute of this site, in column order
        sizes = [len(d) for d in view.domains]
        self.xt, self.offsets = one_hot_columns(view.codes, sizes, self.dtype)
        self.prepared: dict[str, Left] = {}  # holder -> the Ra of this site's X^T + Ra
        self.xt_hat: dict[str, Left] = {}  # owner -> X_owner^T + Ra (as a holder)
        self.xt_blocks: dict[str, list[int]] = {}  # owner -> its attributes' numbers of values
        self.nodes: list[LevelNode] = []
        self.shares: dict[int, np.ndarray] = {}  # node -> this site's share of Z (p x N)

    async def leaves(self, level: list[LevelNode], t: str) -> list[LevelNode]:
        """Step 1: the class site decides and announces the level's leaves; returns the
        interior nodes."""
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

    async def counts(self, inner: list[LevelNode], t: str) -> None:
        """Steps 2 and 3: the shares of the interior nodes, then every owner's attribute
        counts, with the classes in a fresh order per node and owner."""
        depth = inner[0].depth
        if depth > 0:
            await child_shares(self.party, self.nodes, inner, self.shares, self.view,
                               self.dealing, self.p, t, self.cost)  # fmt: skip
        for k in [k for k in self.shares if self.nodes[k].depth < depth]:
            del self.shares[k]
        if self.is_class:
            for node in inner:
                node.perms = {s: os_permutation(self.p, f"{t}/perm/{node.key}/{s}")
                              for i, s in enumerate(self.names)
                              if s != self.class_site and node.left[i] > 0}  # fmt: skip
        await remaining_attribute_counts(
            self.party, self.nodes, inner, self.shares, self.view, self.xt, self.offsets,
            self.dealing, self.keys, self.prepared, self.xt_hat, self.xt_blocks, self.p,
            self.class_site, t, self.cost,
        )  # fmt: skip

    async def winners(self, inner: list[LevelNode], t: str) -> tuple[list[str], list[int]]:
        """Step 4: every site's best gain per node to the class site, which announces the
        winners. Returns them and this site's best attribute per node."""
        party, names, class_site = self.party, self.names, self.class_site
        best: list[float | None] = []
        local: list[int] = []
        for node in inner:
            remaining = [j for j in range(len(self.view.attributes)) if j not in node.used]
            gains = [gain_in_any_class_order(node.by_attr[j]) for j in remaining]
            i = best_site_attribute([gains])[1] if gains else -1
            best.append(float(gains[i]) if gains else None)
            local.append(remaining[i] if gains else -1)
        if not self.is_class:
            await party.send(class_site, f"{t}/best", best)
            winners = await party.recv(
                class_site, f"{t}/winner", WINNER, expect=list_of(text(names), len(inner))
            )
            return winners, local
        reported = await party.gather(
            [s for s in names if s != party.name], f"{t}/best", BEST,
            expect=list_of(nothing_or(real()), len(inner)),
        )  # fmt: skip
        reported[party.name] = best
        winners = []
        for i, node in enumerate(inner):
            gains_i = {s: reported[s][i] for s in names}
            node_gains = [[g] if g is not None else [] for g in gains_i.values()]
            winners.append(names[best_site_attribute(node_gains)[0]])
            node.gains = gains_i
        await party.broadcast(f"{t}/winner", winners)
        return winners, local

    async def branch(
        self, inner: list[LevelNode], winners: list[str], local: list[int], t: str
    ) -> list[int]:
        """Step 5: the winners announce their fan-outs and send the class site the children's
        class distributions; every site adds the children. Returns the next frontier."""
        party, names, class_site, view = self.party, self.names, self.class_site, self.view
        mine = [i for i, w in enumerate(winners) if w == party.name]
        branching = [len(view.domains[local[i]]) for i in mine]
        dists = [node_dists(inner[i].by_attr[local[i]]) for i in mine]
        for i in mine:
            inner[i].attribute = local[i]
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
        frontier = []
        for i, node in enumerate(inner):
            w = winners[i]
            node.owner = w
            nb = got_branching[w][seen[w]]
            dist = child_dists[w][seen[w]] if self.is_class else None
            seen[w] += 1
            frontier += self._children(node, w, nb, dist)
            node.by_attr = {}
        return frontier

    def _children(self, node: LevelNode, w: str, nb: int, dist: Any) -> list[int]:
        """Add the ``nb`` children of ``node``, split by site ``w`` (with, at the class site,
        their class distributions ``dist`` in ``w``'s class order); returns their keys."""
        left = list(node.left)
        left[self.names.index(w)] -= 1
        holders = node.holders if w in node.holders else sorted(
            [*node.holders, w], key=self.names.index)  # fmt: skip
        used = node.used | {node.attribute} if w == self.party.name else node.used
        keys = []
        for v in range(nb):
            child = LevelNode(len(self.nodes), node.depth + 1, node.key, v, holders, left,
                              used=used)  # fmt: skip
            if self.is_class:
                child.counts = _dist_row(dist, v, nb, self.p, w)
                if w != self.party.name:  # the winner's counts come in its order for the node
                    child.counts = unpermute_classes(child.counts, node.order_of(w))
            self.nodes.append(child)
            node.children.append(child.key)
            keys.append(child.key)
        return keys


def node_dists(by_attr_j: np.ndarray) -> list[list[int]]:
    """The children's class distributions: the rows of the winning attribute's counts."""
    return [[int(x) for x in row] for row in by_attr_j]


def _dist_row(dist: Any, v: int, nb: int, p: int, sender: str) -> np.ndarray:
    form = list_of(list_of(integer(lo=0), p), nb)
    check(form, dist, f"{sender}'s class distributions of the children")
    return np.asarray(dist[v], dtype=np.int64)


async def _finish(
    party: Party, nodes: list[LevelNode], view: SiteView, class_site: str, tag: str
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
        got = await party.recv(s, f"{tag}/ids", NODE_ID, expect=mapping(text(), text()))
        known.update(got)
    root = nodes[0]
    if root.owner == party.name:
        await party.broadcast(f"{tag}/root", ids[0])
        tree.root = (party.name, ids[0])
    else:
        rid = await party.recv(root.owner, f"{tag}/root", ROOT_ID)
        tree.root = (root.owner, rid)
    is_class = party.name == class_site
    for k in order:
        node = nodes[k]
        if is_class and node.counts is None:  # --reveal tree: no count is known
            if node.leaf:
                tree.leaves[ids[k]] = {"number": number[k], "counts": {}, "class": node.label}
        elif is_class:
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
