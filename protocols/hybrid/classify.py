"""Classifying new records with a saved Hybrid-ID3 tree when the records are held vertically:
Alice holds some attributes of every record, Bob the others, and neither shows the other its
values. Teng & Du (Section 3.1) end with the tree at both parties and leave classification
open; this is our protocol, built from the paper's own primitive, the secure dot product
``N(E) = V_a · V_b`` (:mod:`protocols.primitives.dot_product`).

Roles: ``alice`` and ``bob``, each with its part of the saved model and its columns of the
``R`` new records, in the common record order of :mod:`protocols.primitives.record_alignment`; a
``dealer`` (commodity server) for the ``dealer`` method (:func:`serve_classify_dealer`); the
*deliverer* ``d``, Alice or Bob, receives the predictions.

**Terminals.** The tree's ``T`` nodes in pre-order (children by sorted value) are where a
record's walk can end: at a leaf, or at an interior node whose value for the record has no
child (a value unseen in training), which predicts the node's majority class — the rule of
:func:`mpc.learners.tree.predict_one`. Every record ends at exactly one terminal.

1. Each party ``P`` computes, for every record ``r`` and terminal ``t``, ``v_P[r, t] = 1``
   when every test on the path to ``t`` on one of ``P``'s attributes holds for ``r`` (and,
   for an interior terminal testing one of ``P``'s attributes, ``r``'s value has no child
   there), else 0 (:func:`consistent_terminals`). Tests on the other's attributes are left
   to the other, so ``v_A[r, t] v_B[r, t] = 1`` for the one terminal ``r`` ends at and 0 for
   every other.
2. Bob, who holds the classes of the terminals, weights his vector:
   ``w_t = 1 + (index of t's class among the sorted classes)`` (:func:`terminal_classes`).
3. Secure row-wise dot products ``s_r = v_A[r] · (w ∘ v_B[r])``, revealed to ``d`` only
   (:func:`classify_records`, :func:`protocols.primitives.dot_product.row_dot_products`). ``s_r -
   1`` is the index of ``r``'s class: the same as the per-class products
   ``v_A[r] · (v_B[r] ∘ [class(t) = c])``, which are 1 for ``r``'s class and 0 for the
   others, since ``s_r = Σ_c (c + 1) [class(r) = c]``, in one product instead of one per
   class.

What each party learns: the deliverer, the predicted class of every record (the output; as
``s_r`` is a function of the prediction alone, nothing more: not the terminal, not the other's
values), on record as ``hybrid-classify/predictions`` (how many records got each class); the
other, nothing (its share of every product is uniform); both, ``R`` (from the alignment) and
``T`` (the tree both hold); the dealer, ``(R, T)`` per batch (``dot-product/row-shape``).
Security of the dot products needs a dealer that colludes with neither party; with
``paillier`` there is no third party.

Cost: ``R`` dot products of length ``T``, in batches of rows of at most :data:`BATCH_ENTRIES`
entries per matrix; per batch, the dealer's message to each party, one exchange of masked
matrices between Alice and Bob and one share to the deliverer (``dealer``), or ``R T``
Paillier encryptions and ``R`` decryptions at Alice (``paillier``, small files only).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.tree import majority
from mpc.runtime.party import Party
from mpc.runtime.view import declared
from protocols.hybrid.hybrid_id3 import ALICE, BOB, DEALER
from protocols.primitives.dot_product import method_of, row_dot_products

__all__ = [
    "BATCH_ENTRIES",
    "classify_records",
    "consistent_terminals",
    "predicted_classes",
    "serve_classify_dealer",
    "terminal_classes",
    "terminal_count",
]


#: what the dealer receives
DEAL = declared(
    "hybrid-classify/deal", "the number of records and of terminals to classify (the dealer)"
)
#: records per batch are chosen so that one party's matrix has at most this many entries
#: (16 MB of uint64), whatever the tree's size
BATCH_ENTRIES = 1 << 21

Bools = npt.NDArray[np.bool_]


def _children(node: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """An interior node's children by sorted value: the terminal order does not depend on
    the order of the keys in a file."""
    kids = node["children"]
    return [(k, kids[k]) for k in sorted(kids)]


def _walk(tree: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield tree
    if "children" in tree:
        for _, child in _children(tree):
            yield from _walk(child)


def terminal_count(tree: Mapping[str, Any]) -> int:
    """``T``: the number of nodes of the tree (JSON form of :mod:`mpc.learners.tree`)."""
    return sum(1 for _ in _walk(tree))


def consistent_terminals(
    tree: Mapping[str, Any],
    owners: Mapping[str, str],
    me: str,
    values: Mapping[str, np.ndarray],
) -> Bools:
    """Step 1: ``v_P`` as an ``R x T`` boolean matrix for party ``me``. ``owners`` maps every
    attribute of the tree to ``alice`` or ``bob``; ``values`` maps each of ``me``'s attributes
    to its ``R`` values as strings (binned already for a continuous column)."""
    lengths = {len(v) for v in values.values()}
    if len(lengths) > 1:
        raise ConfigError(f"{me}: the value columns differ in length: {sorted(lengths)}")
    R = lengths.pop() if lengths else 0
    out = np.zeros((R, terminal_count(tree)), dtype=bool)
    counter = [0]

    def visit(node: Mapping[str, Any], path_ok: Bools) -> None:
        t = counter[0]
        counter[0] += 1
        if "children" not in node:
            out[:, t] = path_ok
            return
        a = str(node["attribute"])
        owner = owners.get(a)
        if owner not in (ALICE, BOB):
            raise ConfigError(f"the tree tests {a!r}, an attribute of neither alice nor bob")
        kids = _children(node)
        if owner != me:  # the other's test: both branches stay possible here
            out[:, t] = path_ok
            for _, child in kids:
                visit(child, path_ok)
            return
        if a not in values:
            raise ConfigError(f"{me}: the tree tests {a!r}, but {me} has no column {a!r}")
        column = values[a]
        seen = np.zeros(R, dtype=bool)
        for key, child in kids:
            here = column == key
            seen |= here
            visit(child, path_ok & here)
        out[:, t] = path_ok & ~seen  # a value with no child ends here

    visit(tree, np.ones(R, dtype=bool))
    return out


def terminal_classes(tree: Mapping[str, Any], classes: Sequence[str]) -> np.ndarray:
    """Step 2 at Bob: the index in ``classes`` of every terminal's class (a leaf's ``class``;
    an interior node's majority, as :func:`mpc.learners.tree.predict_one` predicts there)."""
    index = {c: i for i, c in enumerate(classes)}
    out = []
    for node in _walk(tree):
        if "children" in node:
            counts = node.get("counts")
            if not isinstance(counts, dict) or not counts:
                raise ConfigError("the tree has an interior node without class counts")
            label = majority({str(c): float(n) for c, n in counts.items()})
        else:
            label = str(node.get("class"))
        if label not in index:
            raise ConfigError(f"the tree predicts {label!r}, which is not one of {list(classes)}")
        out.append(index[label])
    return np.asarray(out, dtype=np.int64)


def predicted_classes(sums: np.ndarray, classes: Sequence[str]) -> list[str]:
    """The deliverer's step: ``s_r - 1`` as class labels; a value outside ``1 .. C`` means
    the two parts do not describe the same tree."""
    s = np.asarray(sums, dtype=np.uint64)
    bad = (s < 1) | (s > len(classes))
    if bad.any():
        raise ProtocolError(
            f"{int(bad.sum())} of {len(s)} records reached no terminal or several; alice's and "
            "bob's model parts do not describe the same tree"
        )
    return [classes[int(x) - 1] for x in s]


def _batches(R: int, T: int) -> list[tuple[int, int]]:
    step = max(1, BATCH_ENTRIES // max(T, 1))
    return [(i, min(R, i + step)) for i in range(0, R, step)]


async def classify_records(
    party: Party,
    vectors: np.ndarray,
    *,
    classes: Sequence[str],
    deliver_to: str,
    method: str = "dealer",
    dealer: str = DEALER,
    tag: str = "hybrid-classify",
) -> list[str] | None:
    """Step 3 at Alice (``vectors = v_A``) or Bob (``vectors = w ∘ v_B``), both ``R x T``.
    Returns the ``R`` predicted classes (of ``classes``, the sorted class labels) at the
    deliverer, in the rows' order, and ``None`` at the other."""
    me = party.name
    if me not in (ALICE, BOB):
        raise ConfigError(f"classification runs at alice and bob, not at {me!r}")
    if deliver_to not in (ALICE, BOB):
        raise ConfigError(f"the predictions go to alice or bob, not to {deliver_to!r}")
    how = method_of(method)
    V = np.asarray(vectors, dtype=np.uint64)
    if V.ndim != 2:
        raise ConfigError(f"{me}: expected an R x T matrix, got shape {V.shape}")
    R, T = V.shape
    if how.helper is not None:  # the helper deals every batch: it learns their number
        await party.send(dealer, f"{tag}/deal", {"rows": R, "terminals": T})
    sums: list[np.ndarray] = []
    with party.phase(tag):
        for b, (lo, hi) in enumerate(_batches(R, T)):
            out = await row_dot_products(
                party, V[lo:hi], method=method, shape=(hi - lo, T), reveal_to=deliver_to,
                tag=f"{tag}/b{b}", dealer=dealer, record=False,
            )  # fmt: skip
            if out is not None:
                sums.append(out)
    if me != deliver_to:
        return None
    labels = predicted_classes(
        np.concatenate(sums) if sums else np.zeros(0, dtype=np.uint64), classes
    )
    per_class = {c: labels.count(c) for c in classes}
    party.ledger.record(
        "hybrid-classify/predictions", {"records": R, "per_class": per_class}, step=tag
    )
    return labels


async def serve_classify_dealer(
    party: Party, *, method: str = "dealer", tag: str = "hybrid-classify"
) -> int:
    """The helper's side of :func:`classify_records` (a ``method`` with a helper): learns
    ``(R, T)`` from Alice and Bob (they must agree) and deals every batch. Returns the number
    of batches."""
    a_req = await party.recv(ALICE, f"{tag}/deal", DEAL)
    b_req = await party.recv(BOB, f"{tag}/deal", DEAL)
    try:
        R, T = int(a_req["rows"]), int(a_req["terminals"])
        if (int(b_req["rows"]), int(b_req["terminals"])) != (R, T) or R < 0 or T < 1:
            raise ValueError(f"alice asked for {a_req}, bob for {b_req}")
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"dealer: alice and bob asked for different batches ({exc})") from None
    batches = _batches(R, T)
    with party.phase(tag):
        for b, (lo, hi) in enumerate(batches):
            await row_dot_products(
                party, None, method=method, shape=(hi - lo, T), tag=f"{tag}/b{b}"
            )
    return len(batches)
