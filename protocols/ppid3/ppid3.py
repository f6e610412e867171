"""PPID3 — Vaidya & Clifton, *Privacy-Preserving Decision Trees over Vertically Partitioned
Data*, Algorithm 7, on k site processes.

Every site runs this module's :func:`ppid3` at the same time. The recursion advances in lockstep
over the *public* tree structure (which site owns each node, how many children it has), so each
step knows which protocol instance it is part of; everything private stays at its site:

* line 1: IsREmpty (Algorithm 2, :mod:`protocols.ppid3.is_r_empty`) — unless the depth limit
  (public)
  already makes the node a leaf;
* lines 3 / 7: DistributionCounts (Algorithm 3) to the class site, which decides locally whether
  the node is a leaf (no attribute left, one class only — IsSameClass, Algorithm 4 — no rows, or
  fewer than ``min_samples_split`` rows) and announces only *leaf or not*;
* line 10: AttribMaxInfoGain (Algorithm 5): the counts of every remaining attribute (Algorithm 6)
  reach the attribute's owner, which computes the gains and sends its best gain to the class
  site; the class site compares them (site order breaks ties,
  :func:`mpc.learners.id3.best_site_attribute`) and announces the winning site;
* lines 12-19: the winning site creates the interior node, announces only its number of
  children, and the recursion visits them in order with its constraint set updated.

The result is a *distributed tree*: each site stores only its own interior nodes (attribute and
value -> child), the class site the leaves (class distribution) and the distributions of all
nodes; node ids are random tokens. Who owns each node and each node's branching factor are
public. The tree equals :class:`mpc.learners.id3.ID3Classifier` on the joined data with the
attributes in site order (the same gains, from the same integer counts, with the same tie rules; a
site that sees the classes in a permuted order sums the same terms in another order, a difference of
a few units in the last place, far inside the tie tolerance :data:`mpc.learners.id3.GAIN_TIE`).

Leakage (Theorem 1), as recorded in the ledgers:

* class site: the class distribution of every node (``ppid3/node-counts``, and the PSI-CA
  entries), the best gain of every site at every interior node (``ppid3/best-gains``);
* the owner of an attribute: its ``|S_a|`` per class at every node where it is a candidate,
  with the classes in a fresh random order at each node that only the class site knows (with
  the fast counts of :mod:`protocols.ppid3.levels`, the party that deals its permuted opening
  knows it too, and sees no count) (so it
  cannot tell whether a class at one node is a class at another, Section 1); its gains do not
  depend on that order (:func:`protocols.ppid3.distribution_counts.gain_in_any_class_order`);
* every site: the tree structure (``ppid3/structure``: owner and branching of every node), the
  IsREmpty answers, the sizes of the encrypted constraint sets that pass through it (the class
  site's per-class sets in a fresh order at each node).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.criteria import CRITERIA, Criterion
from mpc.learners.id3 import best_site_attribute
from mpc.learners.tree import majority
from mpc.runtime.expect import boolean, integer, nothing_or, text
from mpc.runtime.party import Party
from mpc.runtime.view import declared, public, uniform
from protocols.ppid3.distribution_counts import (
    Constraints,
    CountOracle,
    SiteView,
    is_same_class,
)
from protocols.ppid3.is_r_empty import is_r_empty

__all__ = [
    "BEST",
    "BRANCHING",
    "LEAF",
    "NODE_ID",
    "ROOT_ID",
    "WINNER",
    "DistributedTree",
    "NodeRef",
    "ppid3",
]

NodeRef = tuple[str, str]  # (owner site, node id)

#: what a site receives (the tree structure is the public result)
LEAF = public("ppid3/leaf", "whether each node is a leaf (the tree structure)")
BEST = declared(
    "ppid3/best",
    "a site's best gain (its best score by the run's criterion) at each node (class site; "
    "Theorem 1)",
)
WINNER = public("ppid3/winner", "the site that splits each node (the tree structure)")
BRANCHING = public("ppid3/branching", "each node's number of children (the tree structure)")
ROOT_ID = uniform("ppid3/root-id", "the root's random id", tokens=True, expect=text())
NODE_ID = uniform(
    "ppid3/node-id", "the random ids of child nodes, to their parent's owner", tokens=True
)


@dataclass
class DistributedTree:
    """What one site keeps of the tree (its own nodes only) plus the public structure."""

    site: str
    root: NodeRef | None = None
    #: node id -> {"number", "attribute", "children": {value: [owner, id]}}
    interior: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: node id -> {"number", "counts": {class: n}, "class"} (class site only)
    leaves: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: node number -> class counts of every node (class site only)
    node_counts: dict[int, dict[str, int]] = field(default_factory=dict)
    #: public: one record per node in depth-first order
    structure: list[dict[str, Any]] = field(default_factory=list)
    #: ``--reveal tree``: the class names in the order of the opened labels (class site)
    classes: list[str] = field(default_factory=list)
    #: ``--reveal tree``: this site's share (``Z_2^64``) of each interior node's majority
    #: class, by node number (the first two sites; for records with an unseen value)
    label_shares: dict[int, int] = field(default_factory=dict)
    #: ``--reveal tree``: this site's shares (``Z_2^64``) of every node's class counts, in
    #: the order of ``classes``, by node number (the first two sites; for scores)
    count_shares: dict[int, list[int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "root": list(self.root) if self.root else None,
            "interior": self.interior,
            "leaves": self.leaves,
            "node_counts": {str(k): v for k, v in self.node_counts.items()},
            "structure": self.structure,
            **({"classes": self.classes} if self.classes else {}),
            **({"label_shares": {str(k): v for k, v in self.label_shares.items()}}
               if self.label_shares else {}),
            **({"count_shares": {str(k): v for k, v in self.count_shares.items()}}
               if self.count_shares else {}),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> DistributedTree:
        """The inverse of :meth:`to_dict` (a saved model part)."""
        try:
            root = doc["root"]
            return cls(
                site=str(doc["site"]),
                root=(str(root[0]), str(root[1])) if root else None,
                interior=dict(doc["interior"]),
                leaves=dict(doc["leaves"]),
                node_counts={int(k): dict(v) for k, v in doc["node_counts"].items()},
                structure=list(doc["structure"]),
                classes=[str(c) for c in doc.get("classes", [])],
                label_shares={int(k): int(v) for k, v in doc.get("label_shares", {}).items()},
                count_shares={int(k): [int(x) for x in v]
                              for k, v in doc.get("count_shares", {}).items()},
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ProtocolError(f"a malformed tree part: {type(exc).__name__}: {exc}") from None


def check_sites(
    party: Party, view: SiteView, class_site: str, attribute_counts: Sequence[int]
) -> None:
    """The public parameters of a PPID3 run agree with this site's data (before any message)."""
    names = list(party.parties)
    if class_site not in names:
        raise ConfigError(f"class site {class_site!r} is not a party of {names}")
    if (party.name == class_site) != view.is_class_site:
        raise ConfigError(f"{party.name}: only the class site {class_site!r} holds the class")
    if len(attribute_counts) != len(names):
        raise ConfigError("attribute_counts needs one entry per site")
    me = names.index(party.name)
    if attribute_counts[me] != len(view.attributes):
        raise ConfigError(
            f"{party.name} holds {len(view.attributes)} attributes, the deployment says "
            f"{attribute_counts[me]}"
        )


def _new_id() -> str:
    return secrets.token_hex(8)


async def ppid3(
    party: Party,
    view: SiteView,
    oracle: CountOracle,
    *,
    class_site: str,
    attribute_counts: Sequence[int],
    max_depth: int | None = None,
    min_samples_split: int | None = None,
    tag: str = "ppid3",
    progress: Any = None,
    criterion: Criterion | None = None,
) -> DistributedTree:
    """Algorithm 7 at one site. ``attribute_counts`` (public) is how many attributes each site
    holds, in site order; the class site must hold the class. The owners score their counts
    by ``criterion`` (the paper's information gain by default)."""
    check_sites(party, view, class_site, attribute_counts)
    grower = _Grower(
        party, view, oracle, class_site, attribute_counts, max_depth, min_samples_split, progress
    )
    grower.criterion = criterion or CRITERIA["entropy"]
    grower.tree.root = await grower.grow(tag, 0, None, None)
    party.ledger.record("ppid3/structure", grower.tree.structure, step=tag)
    return grower.tree


class _Grower:
    """Algorithm 7's recursion at one site: the state its calls share (the constraints on the
    current path, the attributes left at each site) and one method per step of a node."""

    criterion: Criterion

    def __init__(
        self,
        party: Party,
        view: SiteView,
        oracle: CountOracle,
        class_site: str,
        attribute_counts: Sequence[int],
        max_depth: int | None,
        min_samples_split: int | None,
        progress: Any,
    ) -> None:
        self.party, self.view, self.oracle, self.class_site = party, view, oracle, class_site
        self.max_depth, self.min_samples_split, self.progress = (
            max_depth,
            min_samples_split,
            progress,
        )
        self.names = list(party.parties)
        self.is_class = party.name == class_site
        self.tree = DistributedTree(party.name)
        self.constraints = Constraints(view)
        self.remaining = list(range(len(view.attributes)))
        self.left = list(attribute_counts)  # public: attributes each site still has on this path
        self.counter = 0

    async def grow(
        self, tag: str, depth: int, parent_label: str | None, parent_owner: str | None
    ) -> NodeRef:
        """Build the subtree at the current path; returns its reference for the parent."""
        party, view, names = self.party, self.view, self.names
        number = self.counter
        self.counter += 1
        t = f"{tag}/n{number}"
        if self.progress is not None and number % 25 == 0:
            self.progress(f"node {number} (depth {depth})")
        leaf, label, leaf_id = await self.leaf(t, number, depth, parent_label)
        if leaf:
            self.tree.structure.append({"node": number, "owner": self.class_site, "leaf": True})
            return await _hand_up(party, self.class_site, leaf_id, parent_owner, t)
        winner, local = await self.winner(t, number)

        # lines 11-19: continue at the winning site
        mine = winner == party.name
        j = self.remaining[local] if mine else -1
        n_children = await self.branching(t, winner, len(view.domains[j]) if mine else 0)
        self.tree.structure.append(
            {"node": number, "owner": winner, "leaf": False, "children": n_children}
        )
        w = names.index(winner)
        self.left[w] -= 1
        if mine:
            self.remaining.remove(j)
        children: dict[str, list[str]] = {}
        for v in range(n_children):
            if mine:
                self.constraints.set(j, v)  # line 14
            child = await self.grow(tag, depth + 1, label, winner)  # line 15
            if mine:
                children[view.domains[j][v]] = list(child)  # line 16
        node_id = None
        if mine:
            self.constraints.set(j, None)  # line 18
            self.remaining.insert(local, j)
            node_id = _new_id()
            self.tree.interior[node_id] = {
                "number": number,
                "attribute": view.attributes[j],
                "children": children,
            }
        self.left[w] += 1
        return await _hand_up(party, winner, node_id, parent_owner, t)

    async def leaf(
        self, t: str, number: int, depth: int, parent_label: str | None
    ) -> tuple[bool, str | None, str | None]:
        """Lines 1-9: whether the node is a leaf (decided by the class site, announced to all),
        the class site's majority label and, for a leaf, its id there."""
        party, view, class_site = self.party, self.view, self.class_site
        # line 1: IsREmpty, unless the public depth limit decides
        at_limit = self.max_depth is not None and depth >= self.max_depth
        empty = at_limit or await is_r_empty(party, int(bool(self.remaining)), tag=f"{t}/ire")
        # lines 3 / 7: the class distribution, to the class site only
        counts = await self.oracle.distribution_counts(
            party, self.constraints, class_site=class_site, tag=f"{t}/dc"
        )
        if not self.is_class:
            leaf = await party.recv(class_site, f"{t}/leaf", LEAF, expect=boolean())
            return leaf, None, None
        assert counts is not None and view.classes is not None
        total = int(counts.sum())
        named = {c: int(n) for c, n in zip(view.classes, counts, strict=True)}
        self.tree.node_counts[number] = named
        party.ledger.record("ppid3/node-counts", {"node": number, "counts": named}, step=t)
        label = majority(named) if total > 0 else parent_label
        if label is None:
            raise ConfigError("the training set is empty")
        small = self.min_samples_split is not None and total < self.min_samples_split
        leaf = empty or total == 0 or is_same_class(counts) or small
        leaf_id = None
        if leaf:
            leaf_id = _new_id()
            self.tree.leaves[leaf_id] = {"number": number, "counts": named, "class": label}
        await party.broadcast(f"{t}/leaf", leaf)
        return leaf, label, leaf_id

    async def winner(self, t: str, number: int) -> tuple[str, int]:
        """Line 10, AttribMaxInfoGain: each site's best gain goes to the class site, which
        announces the winning site. Returns the winner and this site's best local index."""
        party, names, class_site = self.party, self.names, self.class_site
        counts_by_attr = await self.oracle.attribute_counts(
            party,
            self.constraints,
            self.remaining,
            remaining_per_site=self.left,
            class_site=class_site,
            tag=f"{t}/gain",
        )
        crit = self.criterion
        gains = [crit.score_in_any_class_order(counts_by_attr[j]) for j in self.remaining]
        local = best_site_attribute([gains], crit.tie)[1] if gains else -1  # column order
        my_best = crit.to_wire(gains[local]) if gains else None
        if not self.is_class:
            await party.send(class_site, f"{t}/best", my_best)
            winner = await party.recv(class_site, f"{t}/winner", WINNER, expect=text(names))
            return winner, local
        reported = await party.gather(
            [n for n in names if n != party.name], f"{t}/best", BEST,
            expect=nothing_or(crit.wire_form()),
        )  # fmt: skip
        reported[party.name] = my_best
        party.ledger.record("ppid3/best-gains", {"node": number, "gains": reported}, step=t)
        winner_index, _ = best_site_attribute(
            [[crit.from_wire(reported[n])] if reported[n] is not None else [] for n in names],
            crit.tie,
        )
        winner = names[winner_index]
        await party.broadcast(f"{t}/winner", winner)
        return winner, local

    async def branching(self, t: str, winner: str, mine: int) -> int:
        """The winner announces the split attribute's fan-out (``mine`` at the winner)."""
        if winner == self.party.name:
            await self.party.broadcast(f"{t}/branching", mine)
            return mine
        return await self.party.recv(winner, f"{t}/branching", BRANCHING, expect=integer(lo=1))


async def _hand_up(
    party: Party, owner: str, node_id: str | None, parent_owner: str | None, t: str
) -> NodeRef:
    """Tell the parent's owner the id of the node just built (only it needs the id)."""
    if parent_owner is None:  # the root: its owner and id are public
        if party.name == owner:
            assert node_id is not None
            await party.broadcast(f"{t}/root", node_id)
            return owner, node_id
        return owner, await party.recv(owner, f"{t}/root", ROOT_ID)
    if party.name == owner:
        assert node_id is not None
        if parent_owner != owner:
            await party.send(parent_owner, f"{t}/id", node_id)
        return owner, node_id
    if party.name == parent_owner:
        return owner, await party.recv(owner, f"{t}/id", NODE_ID, expect=text())
    return owner, ""


def assemble(trees: dict[str, dict[str, Any]], site_index: dict[str, int]) -> dict[str, Any]:
    """The audit view: every site's nodes joined into one tree (JSON of :mod:`mpc.learners.tree`).

    Only the launcher of a test deployment, which gathers every site's report, can build this;
    no party ever holds it."""
    counts: dict[int, dict[str, int]] = {}
    leaves: dict[str, dict[str, Any]] = {}
    interior: dict[tuple[str, str], dict[str, Any]] = {}
    root = None
    for site, doc in trees.items():
        counts.update({int(k): v for k, v in doc.get("node_counts", {}).items()})
        leaves.update({nid: node for nid, node in doc.get("leaves", {}).items()})
        interior.update({(site, nid): node for nid, node in doc.get("interior", {}).items()})
        root = root or doc.get("root")
    if root is None:
        raise ProtocolError("no site reported the root of the tree")

    def build(owner: str, nid: str) -> dict[str, Any]:
        if (owner, nid) in interior:
            node = interior[(owner, nid)]
            out = {
                "attribute": node["attribute"],
                "site": site_index[owner],
                "counts": dict(sorted(counts.get(node["number"], {}).items())),
                "children": {v: build(o, c) for v, (o, c) in node["children"].items()},
            }
            for key in ("threshold", "missing"):  # a number split in two
                if key in node:
                    out[key] = node[key]
            return out
        leaf = leaves[nid]
        return {"counts": dict(sorted(leaf["counts"].items())), "class": leaf["class"]}

    return build(root[0], root[1])


def check_tree_equal(a: dict[str, Any], b: dict[str, Any], *, counts: bool = True) -> bool:
    """Structural equality of two JSON trees (counts compared as numbers; without
    ``counts``, the structure, splits and labels only: a tree that opened no count)."""
    if ("children" in a) != ("children" in b):
        return False
    if "children" not in a:
        return a["class"] == b["class"] and (not counts or _same_counts(a["counts"], b["counts"]))
    return (
        a["attribute"] == b["attribute"]
        and a.get("site") == b.get("site")
        and a.get("threshold") == b.get("threshold")
        and a.get("missing") == b.get("missing")
        and (not counts or _same_counts(a.get("counts", {}), b.get("counts", {})))
        and list(a["children"]) == list(b["children"])
        and all(
            check_tree_equal(a["children"][k], b["children"][k], counts=counts)
            for k in a["children"]
        )
    )


def _same_counts(x: dict[str, Any], y: dict[str, Any]) -> bool:
    keys = set(x) | set(y)
    return all(np.isclose(float(x.get(k, 0)), float(y.get(k, 0))) for k in keys)
