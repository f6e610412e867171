"""classifyInstance — Vaidya & Clifton, Algorithm 8: classify instances whose attributes are
split across the sites, with the distributed tree of :mod:`protocols.ppid3.ppid3`.

Every site holds its columns of the instances, keyed by instance id. Control passes from site to
site with node ids only: the owner of an interior node reads its own attribute value and hands
the instance to the owner of the child; the class site, which owns the leaves, answers. Many
instances travel together: one exchange per tree level moves every instance one node down
(``depth + 1`` all-to-all rounds in all, however many instances).

An instance whose value at a node was never seen in training stops there; the node's owner
hands it to the class site with the node's public number, and the class site answers with that
node's majority class (it knows every node's class distribution), exactly as plain prediction.

Leakage (Theorem 2): the class site learns which leaf (or stopping node) classifies each
instance; every site learns which instances reach each of its own nodes (it evaluates them),
and so, when it owns a child of a node another site owns, which branch each of those instances
took at that node: children are numbered in the owner's sorted domain order, so the branch is
the other site's value of the instance, up to the order of its domain. No attribute value
leaves its site in any other form. Receipt: ``classify/batch`` (declared); ledger:
``classify/instances``.

This is why PPID3 runs Algorithm 8 on *new* records only (or held-out test records), never on
its training records: the class site would learn every other site's branch of every training
record (a per-record leak that Theorem 1 does not allow). The training accuracy comes from the
leaves' class counts, which the class site holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.errors import ProtocolError
from mpc.learners.tree import majority
from mpc.runtime.expect import array, list_of, text, tuple_of
from mpc.runtime.party import Party
from mpc.runtime.view import declared
from protocols.ppid3.ppid3 import DistributedTree

__all__ = ["BATCH", "branch_hits", "classify_instances", "tree_depth"]

#: what a site receives: instances handed to its nodes (Algorithm 8)
BATCH = declared(
    "classify/batch",
    "the instances that reach each of this site's nodes, by node id (Theorem 2): the class "
    "site, the leaf of each instance; a child's owner, the branch each took at its parent",
    records="positions",
    expect=list_of(tuple_of(text(), array("iu", ndim=1))),
)


def branch_hits(node: dict[str, Any], values: np.ndarray) -> list[np.ndarray]:
    """Which of ``values`` (a site's values at one of its interior nodes, as text) take each
    branch, in the node's order: the value equal to the branch's; at a threshold split,
    ``<= t`` (a missing value too, below every number: ``?``, blank or NaN) and ``> t``."""
    if "threshold" not in node:
        return [values == value for value in node["children"]]
    x = np.array([_number(v) for v in values], dtype=np.float64)
    below = np.isnan(x) | (x <= float(node["threshold"]))
    return [below if branch == "<=" else ~below for branch in node["children"]]


def _number(value: Any) -> float:
    """A value of a number column as a float, NaN where missing or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def tree_depth(structure: Sequence[dict[str, Any]]) -> int:
    """The depth of the tree from its public depth-first structure."""
    records = iter(structure)

    def walk(depth: int) -> int:
        rec = next(records)
        if rec["leaf"]:
            return depth
        return max(walk(depth + 1) for _ in range(rec["children"]))

    return walk(0)


async def classify_instances(
    party: Party,
    tree: DistributedTree,
    columns: dict[str, Sequence[str]],
    ids: Sequence[int],
    *,
    class_site: str,
    depth: int,
    tag: str = "classify",
    counts_out: dict[int, dict[str, float]] | None = None,
) -> dict[int, str] | None:
    """Classify instances ``ids`` (the same ids, in any order, at every site; ``columns`` are
    this site's values of them). Returns ``{id: class}`` at the class site, ``None`` elsewhere.
    At the class site, ``counts_out`` (if given) receives each instance's class counts: those
    of the leaf it reached, or of the node where it stopped at an unseen value (the class site
    holds both; no message carries them)."""
    names = list(party.parties)
    ids_arr = np.asarray(ids, dtype=np.int64)
    position = {int(i): p for p, i in enumerate(ids_arr)}
    if tree.root is None:
        raise ProtocolError("the tree has no root")
    frontier: dict[str, np.ndarray] = {}
    if tree.root[0] == party.name:
        frontier[tree.root[1]] = ids_arr
    answers: dict[int, str] = {}
    majority_of = {n: majority(c) for n, c in tree.node_counts.items() if sum(c.values()) > 0}
    visits = 0
    for level in range(depth + 1):
        outgoing: dict[str, list[list[Any]]] = {n: [] for n in names}
        for nid, batch in frontier.items():
            if nid in tree.leaves:
                label = tree.leaves[nid]["class"]
                answers.update((int(i), label) for i in batch)
                if counts_out is not None:
                    counts_out.update((int(i), dict(tree.leaves[nid]["counts"])) for i in batch)
                continue
            if nid.startswith("#"):  # stopped at a node with an unseen value
                label = majority_of[int(nid[1:])]
                answers.update((int(i), label) for i in batch)
                if counts_out is not None:
                    counts = {c: float(k) for c, k in tree.node_counts[int(nid[1:])].items()}
                    counts_out.update((int(i), counts) for i in batch)
                continue
            node = tree.interior.get(nid)
            if node is None:
                raise ProtocolError(f"{party.name} holds no node {nid!r}")
            visits += len(batch)
            column = columns[node["attribute"]]
            values = np.asarray([column[position[int(i)]] for i in batch], dtype=object)
            unseen = np.ones(len(batch), dtype=bool)
            hits = branch_hits(node, values)
            for hit, (owner, child) in zip(hits, node["children"].values(), strict=True):
                unseen &= ~hit
                if hit.any():
                    outgoing[owner].append([child, batch[hit]])
            if unseen.any():
                outgoing[class_site].append([f"#{node['number']}", batch[unseen]])
        frontier = {}
        for target, items in outgoing.items():
            if target == party.name:
                frontier.update({c: b for c, b in items})
            else:
                await party.send(target, f"{tag}/l{level}", items)
        for sender in names:
            if sender == party.name:
                continue
            items = await party.recv(sender, f"{tag}/l{level}", BATCH)
            for c, b in items:
                frontier[c] = np.concatenate([frontier[c], b]) if c in frontier else b
    if frontier:
        raise ProtocolError(f"{party.name}: instances still in flight after {depth + 1} levels")
    party.ledger.record(
        "classify/instances",
        {"classified_here": len(answers), "node_visits": visits},
        step=tag,
    )
    if party.name != class_site:
        return None
    if len(answers) != len(ids_arr):
        raise ProtocolError(f"classified {len(answers)} of {len(ids_arr)} instances")
    return answers
