"""``FindBDTLeaf`` (Mancuhan & Clifton, Figure 2): the leaf of the base decision tree an
instance reaches, and its id, a path of ``attribute=branch`` steps.

The CDBS routes every query with :func:`find_bdt_leaf`; a missing value goes down the
heaviest child. :func:`schema_digest` binds a query to the order of IT's attributes, which
the client and the CDBS check alike. What the CDBS learns from a query is stated in
:mod:`protocols.cdtl.cdtl`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mpc.datasets import Table
from mpc.learners.evaluation import rows_of
from mpc.learners.tree import MISSING, Node, Split

#: the separator of a leaf id's path steps (``attribute=branch``)
_SEP = "\x1f"


def _missing(value: Any) -> bool:
    return value is None or value == MISSING or (isinstance(value, float) and np.isnan(value))


def _heaviest_child(node: Split) -> str:
    """The child that got the most training weight (ties: the first key)."""
    if node.weights:
        return max(sorted(node.weights), key=lambda k: node.weights[k])
    sizes = {k: sum(c.counts.values()) for k, c in node.children.items()}
    return max(sorted(sizes), key=lambda k: sizes[k])


def find_bdt_leaf(tree: Node, row: Mapping[str, Any]) -> tuple[str, Node]:
    """``findLeaf(BDT, ins)`` of Figure 2: the id of the leaf ``row`` reaches, and that leaf.

    A value that is missing or was not seen in training at a split follows the branch that
    got the most training weight. (C4.5's fractional routing would send the row down every
    branch; here that would hand the client the union of several leaves and make it learn
    from them all.) Training rows are routed the same way, so the leaves partition ``IT``.
    """
    node, steps = tree, []
    while isinstance(node, Split):
        value = row.get(node.attribute)
        key = None if _missing(value) else node.branch(value)
        if key is None:
            key = _heaviest_child(node)
        steps.append(f"{node.attribute}={key}")
        node = node.children[key]
    return _SEP.join(steps), node


def leaf_of_rows(tree: Node, table: Table) -> list[str]:
    """The leaf id of every row of ``table`` (as :func:`find_bdt_leaf` routes it)."""
    return [find_bdt_leaf(tree, r)[0] for r in rows_of(table)]


def rows_at(ids: Sequence[str], leaf: str) -> np.ndarray:
    """The rows whose leaf is ``leaf``."""
    return np.flatnonzero(np.asarray(ids, dtype=object) == leaf)


def wire_value(v: Any) -> str | float:
    """A query value as it travels: str (floats stay float)."""
    return v if type(v) is str else float(v) if isinstance(v, float | np.floating) else str(v)


def schema_digest(attributes: Sequence[str]) -> str:
    """A short digest of an attribute order: a query sends its values in IT's order with
    this digest, and the CDBS refuses values in another order."""
    joined = "\x1f".join(attributes).encode("utf-8")
    return hashlib.blake2b(joined, digest_size=8).hexdigest()
