"""One decision-tree model for every learner, plain or private.

A tree is made of :class:`Leaf` and :class:`Split` nodes. Every node keeps the class counts
of the training rows that reached it (fractional for C4.5's fractional instances), so that
a value never seen in training, or a missing value, can still be classified.

JSON form (``to_json`` / ``from_json``)::

    leaf:      {"counts": {class: n, ...}, "class": c}
    interior:  {"attribute": a, "site": s, "counts": {...},
                "children": {value: subtree, ...}}                  # multiway, nominal
               {"attribute": a, "site": s, "counts": {...}, "threshold": t,
                "children": {"<=": subtree, ">": subtree}}           # continuous
               {"attribute": a, "site": s, "counts": {...}, "value": v,
                "children": {"==": subtree, "!=": subtree}}          # binary, nominal

``site`` is the index of the site that owns the attribute in a vertically partitioned run
(``None`` for a plain tree). Prediction follows the rules shared by all learners:

* a nominal value with no child (unseen in training) predicts the node's majority class;
* a missing value (``"?"`` for nominal attributes of C4.5, NaN for continuous) is sent down
  every branch with the branch's share of the training rows (``weights``), and the class
  distributions are added up (Quinlan's fractional instances); the predicted class is the
  first (in sorted order) unless a later one is more probable by more than 1e-6, as in J48.
  ID3 treats ``"?"`` as an ordinary value, so for ID3 trees this only applies to NaN.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "MISSING",
    "Leaf",
    "Node",
    "Split",
    "from_json",
    "majority",
    "to_dot",
    "to_json",
]

#: The missing-value marker of nominal attributes.
MISSING = "?"


def majority(counts: Mapping[str, float]) -> str:
    """The class with the largest count; ties go to the class that sorts first."""
    if not counts:
        raise ValueError("no classes to choose from")
    best = max(counts.values())
    return min(c for c, n in counts.items() if n == best)


@dataclass
class Leaf:
    counts: dict[str, float]
    label: str

    @property
    def is_leaf(self) -> bool:
        return True


@dataclass
class Split:
    """An interior node. ``kind`` is ``"multiway"``, ``"threshold"`` or ``"binary"``."""

    attribute: str
    counts: dict[str, float]
    children: dict[str, Node]
    kind: str = "multiway"
    site: int | None = None
    threshold: float | None = None
    value: str | None = None
    #: share of the node's (known-value) training weight that went to each child
    weights: dict[str, float] = field(default_factory=dict)
    #: the child a missing value goes to, where the learner sends it one way (ID3's
    #: threshold splits: ``"<="``, missing below every number); None spreads it by ``weights``
    missing: str | None = None

    @property
    def is_leaf(self) -> bool:
        return False

    @property
    def label(self) -> str:
        return majority(self.counts)

    def branch(self, value: Any) -> str | None:
        """The child key for ``value``, or None when it is missing / has no child."""
        if self.kind == "threshold":
            if (
                value is None
                or value == MISSING
                or (isinstance(value, float) and math.isnan(value))
            ):
                return self.missing
            return "<=" if float(value) <= float(self.threshold or 0.0) else ">"
        if self.kind == "binary":
            if value == MISSING and self.weights:
                return None
            return "==" if value == self.value else "!="
        key = str(value)
        if key not in self.children:
            return None
        if key == MISSING and self.weights and MISSING not in self.weights:
            return None
        return key


Node = Leaf | Split


#: the recursion a deep tree's JSON (one nesting level per split, in Python and in the JSON
#: codec's C) and its drawing may take: room for trees a few thousand levels deep, well
#: within the C stack of a thread
TREE_RECURSION = 20_000


@contextlib.contextmanager
def room_for_deep_trees() -> Iterator[None]:
    """Python's recursion limit raised to :data:`TREE_RECURSION` for the block (a number
    split a few records at a time makes trees hundreds of levels deep, whose JSON nests as
    deep); restored after. A tree deeper still raises ``RecursionError`` inside."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, TREE_RECURSION))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def nodes(tree: Node) -> Iterator[Node]:
    """Every node, depth first, children in their order (by a stack: a tree of any depth)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Split):
            stack.extend(reversed(list(node.children.values())))


def node_count(tree: Node) -> int:
    return sum(1 for _ in nodes(tree))


def leaf_count(tree: Node) -> int:
    return sum(1 for n in nodes(tree) if isinstance(n, Leaf))


def depth(tree: Node) -> int:
    """The most splits from the root to a leaf (by a stack: a tree of any depth)."""
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, Split):
            stack.extend((c, d + 1) for c in node.children.values())
            deepest = max(deepest, d + (1 if not node.children else 0))
        else:
            deepest = max(deepest, d)
    return deepest


def distribution(tree: Node, row: Mapping[str, Any], classes: Sequence[str]) -> np.ndarray:
    """Class probabilities for one instance (``row`` maps attribute -> value)."""
    out = np.zeros(len(classes))
    index = {c: i for i, c in enumerate(classes)}
    _accumulate(tree, row, 1.0, out, index)
    total = out.sum()
    return out / total if total > 0 else out


def _accumulate(
    tree: Node, row: Mapping[str, Any], weight: float, out: np.ndarray, index: dict[str, int]
) -> None:
    if isinstance(tree, Leaf):
        total = sum(tree.counts.values())
        if total > 0:
            for c, n in tree.counts.items():
                out[index[c]] += weight * n / total
        else:
            out[index[tree.label]] += weight
        return
    key = tree.branch(row.get(tree.attribute))
    if key is not None:
        _accumulate(tree.children[key], row, weight, out, index)
        return
    value = row.get(tree.attribute)
    missing = value is None or value == MISSING or (isinstance(value, float) and math.isnan(value))
    if missing and tree.weights:
        for k, share in tree.weights.items():
            if share > 0:
                _accumulate(tree.children[k], row, weight * share, out, index)
        return
    # an unseen nominal value: the node's majority class
    out[index[tree.label]] += weight


def predict_one(tree: Node, row: Mapping[str, Any]) -> str:
    """The class of one instance by the path it takes (no fractional splitting needed when
    every value is known); falls back to the distribution otherwise."""
    node = tree
    while isinstance(node, Split):
        key = node.branch(row.get(node.attribute))
        if key is None:
            value = row.get(node.attribute)
            missing = (
                value is None
                or value == MISSING
                or (isinstance(value, float) and math.isnan(value))
            )
            if missing and node.weights:
                classes = sorted(node.counts)
                dist = distribution(node, row, classes).tolist()
                # J48's rule: the first class, unless a later one is more probable by more
                # than 1e-6 (sums of fractional weights can differ in their last bits)
                chosen, best = classes[0], dist[0]
                for c, p in zip(classes[1:], dist[1:], strict=True):
                    if p - best > 1e-6:
                        chosen, best = c, p
                return chosen
            return node.label
        node = node.children[key]
    return node.label


# --------------------------------------------------------------------------- export


def to_json(tree: Node) -> dict[str, Any]:
    """The tree as nested JSON data, one level per split (:func:`room_for_deep_trees`: a
    tree thousands of levels deep too)."""
    with room_for_deep_trees():
        return _to_json(tree)


def _to_json(tree: Node) -> dict[str, Any]:
    if isinstance(tree, Leaf):
        return {"counts": _clean(tree.counts), "class": tree.label}
    doc: dict[str, Any] = {"attribute": tree.attribute, "site": tree.site}
    if tree.kind == "threshold":
        doc["threshold"] = tree.threshold
    elif tree.kind == "binary":
        doc["value"] = tree.value
    doc["counts"] = _clean(tree.counts)
    if tree.weights:
        doc["weights"] = tree.weights
    if tree.missing is not None:
        doc["missing"] = tree.missing
    doc["children"] = {k: _to_json(v) for k, v in tree.children.items()}
    return doc


def _clean(counts: Mapping[str, float]) -> dict[str, float | int]:
    return {c: int(n) if float(n).is_integer() else float(n) for c, n in sorted(counts.items())}


def from_json(doc: Mapping[str, Any]) -> Node:
    """The tree of :func:`to_json`'s data (a tree thousands of levels deep too)."""
    with room_for_deep_trees():
        return _from_json(doc)


def _from_json(doc: Mapping[str, Any]) -> Node:
    if "children" not in doc:
        return Leaf({str(k): float(v) for k, v in doc["counts"].items()}, str(doc["class"]))
    kind = "threshold" if "threshold" in doc else "binary" if "value" in doc else "multiway"
    return Split(
        attribute=str(doc["attribute"]),
        counts={str(k): float(v) for k, v in doc.get("counts", {}).items()},
        children={str(k): _from_json(v) for k, v in doc["children"].items()},
        kind=kind,
        site=doc.get("site"),
        threshold=doc.get("threshold"),
        value=doc.get("value"),
        weights={str(k): float(v) for k, v in doc.get("weights", {}).items()},
        missing=doc.get("missing"),
    )


def to_dot(tree: Node, *, name: str = "tree") -> str:
    """Graphviz DOT source: boxes for tests, ellipses for leaves with their counts."""
    lines = [f"digraph {json.dumps(name)} {{", '  node [fontname="Helvetica"];']
    counter = [0]

    def visit(node: Node) -> str:
        ident = f"n{counter[0]}"
        counter[0] += 1
        if isinstance(node, Leaf):
            counts = ", ".join(f"{c}: {_fmt(n)}" for c, n in sorted(node.counts.items()))
            label = f"{_esc(node.label)}\\n({_esc(counts)})"
            lines.append(f'  {ident} [shape=ellipse, label="{label}"];')
            return ident
        site = f"\\n[site {node.site + 1}]" if node.site is not None else ""
        lines.append(f'  {ident} [shape=box, label="{_esc(node.attribute)}{site}"];')
        for key, child in node.children.items():
            edge = key
            if node.kind == "threshold":
                edge = f"{key} {node.threshold:g}"
            elif node.kind == "binary":
                edge = f"{key} {node.value}"
            child_id = visit(child)
            lines.append(f'  {ident} -> {child_id} [label="{_esc(edge)}"];')
        return ident

    with room_for_deep_trees():
        visit(tree)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _fmt(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else f"{n:.2f}"


def render(tree: Node, *, indent: str = "") -> str:
    """A plain-text rendering, one test per line (like Weka's J48 output)."""
    out: list[str] = []

    def visit(node: Node, prefix: str) -> None:
        if isinstance(node, Leaf):
            return
        for key, child in node.children.items():
            if node.kind == "threshold":
                test = f"{node.attribute} {key} {node.threshold:g}"
            elif node.kind == "binary":
                test = f"{node.attribute} {'=' if key == '==' else '!='} {node.value}"
            else:
                test = f"{node.attribute} = {key}"
            if isinstance(child, Leaf):
                total = sum(child.counts.values())
                wrong = total - child.counts.get(child.label, 0)
                out.append(f"{prefix}{test}: {child.label} ({_fmt(total)}/{_fmt(wrong)})")
            else:
                out.append(f"{prefix}{test}")
                visit(child, prefix + "|   ")

    if isinstance(tree, Leaf):
        return f"{indent}{tree.label} ({_fmt(sum(tree.counts.values()))})"
    with room_for_deep_trees():
        visit(tree, indent)
    return "\n".join(out)
