"""Classification without a path, for trees learnt with ``--reveal tree``
(:mod:`protocols.ppid3.reveal_tree`): no party learns which branches a record takes; only
the predicted class is opened, to the party that asks for it.

Algorithm 8 of the paper (:mod:`protocols.ppid3.classify_instance`) hands each record from
site to site down its path: every site learns which records reach its nodes (Theorem 2).
Here every node of the public tree is a *terminal* (a leaf; or an interior node, where a
record stops when its value there was never seen in training, as plain prediction does),
and each record selects exactly one terminal:

1. **Local tests** (each site, no message): for every record ``r`` and terminal ``τ``, the
   product ``b_s[r, τ]`` of this site's tests on the path to ``τ``: ``[value = branch]`` at
   each of its nodes above ``τ``, and ``[value unseen]`` when ``τ`` is one of its interior
   nodes (1 where it owns no node of the path).
2. **Shares**: every site deals its bits to the first two sites, ``p0`` and ``p1``, as
   additive shares in ``Z_{2^64}`` (a fresh seed to one, the rest to the other).
3. **Selection** (``p0`` and ``p1``, Beaver products, their triples from the run's helper,
   as in training: ``dealing``, the outside dealer for ``dealer``, the third site for
   ``sites``, oblivious transfer between the two for ``ot``): the indicator ``Π_s b_s[r,
   τ]``, one product per further site, then the class ``Σ_τ label_τ ind[r, τ]``. A leaf's
   label is public in this mode (the training opened it); an interior node's majority class
   is not, and stays as ``p0``'s and ``p1``'s shares from the training (saved in their model
   parts), multiplied in on shares.
4. **Delivery**: ``p0`` and ``p1`` open the classes to the party that asks (``deliver_to``)
   through their door (:mod:`protocols.engine.opening`): each sends its share re-randomised
   by a zero-sharing only the two know, so that the receiver, even the party that dealt
   their triples, gets a uniform sharing of the classes and nothing of the products that
   made them; the class site sends it the names of the classes.

What each party receives: ``p0`` and ``p1`` the other sites' bits as seeds or shares, each
other's masked values, triples (uniform); ``deliver_to`` two re-randomised shares of each
prediction (they open ``classify/predictions``) and the class names (public); a dealing
party the pair's requests (public shapes). Given its own randomness, a party's view of
classifying two records with the same prediction is the same: nothing it receives depends
on the path (the joint-view tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.expect import integer, list_of, raw, text
from mpc.runtime.party import Party
from mpc.runtime.view import public, uniform
from protocols.engine.dealing import Dealing
from protocols.engine.opening import opening
from protocols.engine.ring import RING64
from protocols.engine.session import Session
from protocols.ppid3.classify_instance import branch_hits
from protocols.ppid3.ppid3 import DistributedTree

__all__ = ["CLASS_NAMES", "PREDICTION_SHARE", "classify_obliviously", "terminal_bits"]

U64 = np.uint64
#: records x terminals of one chunk at most (its products' arrays: 16 MiB each)
CHUNK_ELEMENTS = 2**21
#: chunks a site other than p0 and p1 may send ahead of p1's progress
AHEAD = 2

BIT_SEED = uniform("oblivious/bit-seed", "a site's fresh seed of the part of its test bits")
BIT_SHARE = uniform("oblivious/bit-share", "a site's test bits less a part from a seed")
LEAF_LABELS = public("oblivious/leaf-labels", "the leaves' labels (public in --reveal tree)")
PREDICTION_SHARE = opening(
    "oblivious/prediction-share",
    "p0's or p1's share of the predicted class of every record, re-randomised",
    opens="classify/predictions",
)
SCORE_SHARE = opening(
    "oblivious/score-share",
    "with scores asked for: p0's or p1's share of the class counts of every record's terminal, "
    "re-randomised",
    opens="classify/scores",
)
CHUNK_DONE = public(
    "oblivious/chunk-done", "p1 has finished a chunk of records (its index): flow control"
)
CLASS_COUNT = public("oblivious/class-count", "the number of classes, for the scores' shapes")
CLASS_NAMES = public("oblivious/class-names", "the names of the classes, in the class site's order")


def _walk(structure: Sequence[dict[str, Any]]) -> tuple[list[int | None], list[list[int]]]:
    """Each node's parent and children (by depth-first number) from the public structure."""
    parent: list[int | None] = [None] * len(structure)
    children: list[list[int]] = [[] for _ in structure]
    stack: list[tuple[int, int]] = []  # (node, children still to come)
    for rec in structure:
        n = int(rec["node"])
        if stack:
            p, left = stack[-1]
            parent[n] = p
            children[p].append(n)
            stack[-1] = (p, left - 1)
            while stack and stack[-1][1] == 0:
                stack.pop()
        if not rec["leaf"]:
            stack.append((n, int(rec["children"])))
    return parent, children


def terminal_bits(tree: DistributedTree, columns: dict[str, Sequence[str]], n: int) -> np.ndarray:
    """This site's ``b_s`` (``n`` records x every node of the tree, ``uint64`` 0/1): the
    product of its own tests on the path to each terminal (the module docstring, step 1)."""
    structure = tree.structure
    _, children = _walk(structure)
    mine = {int(node["number"]): node for node in tree.interior.values()}
    bits = np.zeros((n, len(structure)), dtype=U64)
    stack = [(0, np.ones(n, dtype=bool))]
    while stack:
        u, reach = stack.pop()
        node = mine.get(u)
        if node is None:  # a leaf, or another site's node: nothing of mine to test here
            bits[:, u] = reach
            for c in children[u]:
                stack.append((c, reach))
            continue
        values = np.asarray(columns[node["attribute"]], dtype=object)
        branch = list(node["children"])
        if len(branch) != len(children[u]):
            raise ProtocolError(f"node {u} has {len(branch)} branches, the structure "
                                f"{len(children[u])}")  # fmt: skip
        seen = np.zeros(n, dtype=bool)
        for hit, c in zip(branch_hits(node, values), children[u], strict=True):
            seen |= hit
            stack.append((c, reach & hit))
        bits[:, u] = reach & ~seen
    return bits


async def classify_obliviously(
    party: Party,
    tree: DistributedTree,
    columns: dict[str, Sequence[str]],
    n: int,
    *,
    class_site: str,
    deliver_to: str,
    dealing: Dealing,
    tag: str = "oblivious",
    scores_out: list[dict[str, int]] | None = None,
) -> list[str] | None:
    """The predicted class of each of the ``n`` aligned records (``columns``: this site's
    values of them), opened to ``deliver_to`` only (the module docstring), the triples made
    as ``dealing`` makes them (run by :meth:`protocols.engine.preprocessing.Preprocessing.beside`).
    Returns the classes at ``deliver_to``, None elsewhere. With ``scores_out`` (given at
    every site alike), ``p0`` and ``p1`` also select, on shares, the class counts of each
    record's terminal (``Σ_τ ind[r, τ] · counts_τ``, the counts shared since training) and
    open them to ``deliver_to``, whose ``scores_out`` receives one ``{class: count}`` per
    record (declared: ``classify/scores``)."""
    names = list(party.parties)
    p0, p1 = names[0], names[1]
    me = party.name
    active = me in (p0, p1)
    duo = Session(party, dealing, RING64)
    await duo.start(f"{tag}/open-key")
    structure = tree.structure
    t = len(structure)
    leaves = [int(rec["node"]) for rec in structure if rec["leaf"]]
    inner = [int(rec["node"]) for rec in structure if not rec["leaf"]]
    # the leaves' labels (public in this mode) from the class site
    if me == class_site:
        by_number = {int(leaf["number"]): leaf["class"] for leaf in tree.leaves.values()}
        labels = [tree.classes.index(by_number[u]) for u in leaves]
        await party.broadcast(f"{tag}/labels", labels)
    else:
        labels = await party.recv(class_site, f"{tag}/labels", LEAF_LABELS,
                                  expect=list_of(integer(lo=0), len(leaves)))  # fmt: skip
    # records a chunk at a time: a chunk's products and triples stay a few tens of MB
    # (a site other than p0 and p1 sends at most AHEAD chunks before p1 has done them: its
    # bits and, as the third site, its triples would otherwise pile up at p1)
    per = max(1, CHUNK_ELEMENTS // t)
    chunks = list(enumerate(range(0, n, per)))
    opened: list[int] = []
    scored: list[int] = []
    want = scores_out is not None
    p = await _class_count(party, tree, class_site, tag) if want else 0

    async def deliver(c: int, size: int, got: tuple[Any, Any] | None) -> None:
        prediction, score = got if got is not None else (None, None)
        out = await duo.open(prediction, size, to=[deliver_to], tag=f"{tag}/c{c}/prediction",
                             receipt=PREDICTION_SHARE)  # fmt: skip
        if out is not None:
            opened.extend(out)
        if want:
            out = await duo.open(score, size * p, to=[deliver_to], tag=f"{tag}/c{c}/scores",
                                 receipt=SCORE_SHARE)  # fmt: skip
            if out is not None:
                scored.extend(out)

    for c, start in chunks:
        if not active and c >= AHEAD:
            await party.recv(p1, f"{tag}/c{c - AHEAD}/done", CHUNK_DONE, expect=integer(lo=0))
        rows = slice(start, min(n, start + per))
        cols = {a: v[rows] for a, v in columns.items()}
        size = rows.stop - rows.start
        got = await _chunk(duo, tree, cols, size, labels, leaves, inner, tag=f"{tag}/c{c}",
                           scores=want)  # fmt: skip
        if active:  # each chunk's classes go out as soon as they are made
            await deliver(c, size, got)
        if me == p1:
            for s in names[2:]:
                await party.send(s, f"{tag}/c{c}/done", c)
    if not active:
        for c in range(max(0, len(chunks) - AHEAD), len(chunks)):
            await party.recv(p1, f"{tag}/c{c}/done", CHUNK_DONE, expect=integer(lo=0))
    if me == class_site and deliver_to != me:
        await party.send(deliver_to, f"{tag}/classes", list(tree.classes))
    if me != deliver_to:
        return None
    classes = (tree.classes if me == class_site else await party.recv(
        class_site, f"{tag}/classes", CLASS_NAMES, expect=list_of(text())))  # fmt: skip
    if not active:
        for c, start in chunks:
            await deliver(c, min(n, start + per) - start, None)
    index = np.asarray(opened, dtype=np.int64)
    if ((index < 0) | (index >= len(classes))).any():
        raise ProtocolError(f"{me}: the predictions opened outside the {len(classes)} classes")
    party.ledger.record("classify/predictions", n, step=tag)
    if scores_out is not None:
        scores_out.extend(_scores(party, scored, n, classes, tag))
    return [classes[i] for i in index]


async def _class_count(party: Party, tree: DistributedTree, class_site: str, tag: str) -> int:
    """The number of classes (public), from the class site, for the shapes of the scores."""
    if party.name == class_site:
        await party.broadcast(f"{tag}/class-count", len(tree.classes))
        return len(tree.classes)
    got = await party.recv(class_site, f"{tag}/class-count", CLASS_COUNT, expect=integer(lo=1))
    return int(got)


def _scores(
    party: Party, scored: list[int], n: int, classes: list[str], tag: str
) -> list[dict[str, int]]:
    """The receiver's opened scores, ``n x len(classes)``, as one ``{class: count}`` per
    record (on its ledger: ``classify/scores``)."""
    counts = np.asarray(scored, dtype=np.int64).reshape(n, len(classes))
    if (counts < 0).any():
        raise ProtocolError(f"{party.name}: the scores opened are not class counts")
    party.ledger.record("classify/scores", n, step=tag)
    return [{c: int(k) for c, k in zip(classes, row, strict=True)} for row in counts]


async def _chunk(
    duo: Session, tree: DistributedTree, columns: dict[str, Sequence[str]], n: int,
    labels: list[int], leaves: list[int], inner: list[int], *, tag: str, scores: bool = False,
) -> tuple[np.ndarray, np.ndarray | None] | None:  # fmt: skip
    """Steps 1-3 for ``n`` records (their columns at this site): ``p0``'s or ``p1``'s shares
    of their classes and, with ``scores``, of their terminals' class counts (``n x p``,
    flat), opened by the caller; None elsewhere."""
    party = duo.party
    names = list(party.parties)
    p0, p1 = duo.p0, duo.p1
    me = party.name
    t = len(tree.structure)
    mine = terminal_bits(tree, columns, n).reshape(-1)
    # every site's bits as shares of p0 and p1: theirs are (own bits, 0), another site's a
    # seed's expansion to p0 and the rest to p1
    shares: list[np.ndarray] = []
    if duo.active:
        for s in names:
            if s == me:
                shares.append(mine)
            elif s in (p0, p1):
                shares.append(np.zeros_like(mine))
            elif duo.role == 0:
                seed = await party.recv(s, f"{tag}/seed", BIT_SEED, expect=raw(32))
                shares.append(RING64.random(SeedStream(seed), mine.size))
            else:
                got = await party.recv(s, f"{tag}/bits", BIT_SHARE)
                shares.append(RING64.unpack(got, mine.shape, s, "bits"))
    else:
        seed = randomness.seed(f"{tag}/seed")
        await party.send(p0, f"{tag}/seed", seed)
        rest = mine - RING64.random(SeedStream(seed), mine.size)
        await party.send(p1, f"{tag}/bits", RING64.pack(rest))
        return None
    # the selection, at p0 and p1, with the triples of the run's helper
    kept = np.asarray([tree.label_shares[u] for u in inner], dtype=U64)
    counts = None
    if scores:
        if len(tree.count_shares) != t:
            raise ConfigError(
                f"{me}: this model part holds no shares of the nodes' class counts (it was "
                "saved before scores could be asked of a tree learnt with --reveal tree); "
                "train again, or classify without scores"
            )
        counts = np.asarray([tree.count_shares[u] for u in range(t)], dtype=U64)
    return await duo.batch(f"{tag}/triples", _select, shares, labels, leaves, inner, kept, n, t,
                           counts)  # fmt: skip


async def _select(
    s: Session, shares: list[np.ndarray], labels: list[int], leaves: list[int],
    inner: list[int], kept: np.ndarray, n: int, t: int, counts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:  # fmt: skip
    """Step 3 at ``p0`` and ``p1``: the indicator of each record's terminal, the product of
    every site's bits, then the class, the leaves' public labels and the interior nodes'
    shared ones weighted by it; with ``counts`` (``t x p`` shares of every terminal's class
    counts), each record's terminal's counts, ``Σ_τ ind[r, τ] counts[τ]``, flat."""
    ind = shares[0]
    for i, other_bits in enumerate(shares[1:]):
        if ind.size:
            ind = await s.mul(ind, other_bits, f"and{i}", RING64)
    ind = ind.reshape(n, t)
    lab = np.zeros(t, dtype=U64)
    lab[leaves] = np.asarray(labels, dtype=U64)  # public: both scale their shares
    prediction = (ind * lab[None, :]).sum(axis=1, dtype=U64)
    if inner and n:  # a root that is a leaf has no interior label to multiply in
        inner_part = await s.mul(ind[:, inner].reshape(-1), np.tile(kept, n), "labels", RING64)
        prediction += inner_part.reshape(n, len(inner)).sum(axis=1, dtype=U64)
    score = None
    if counts is not None:
        p = counts.shape[1]
        products = await s.mul(np.repeat(ind.reshape(-1), p), np.tile(counts.reshape(-1), n),
                               "scores", RING64)  # fmt: skip
        score = products.reshape(n, t, p).sum(axis=1, dtype=U64).reshape(-1)
    return prediction, score
