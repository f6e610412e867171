"""PPID3 that reveals only the tree (``mpc run ppid3 --reveal tree``): the way of counting
:class:`SharedCounts` of the level grower (:mod:`protocols.ppid3.level_grower`), with every
count, score and stopping test kept on additive shares, and only the tree opened.

The paper's PPID3 (Vaidya & Clifton, Algorithm 7; ``--reveal counts``, the default,
:class:`protocols.ppid3.levels.OpenedCounts`) opens each owner's count matrices at every node
where it is a candidate and gives the class site every node's class distribution and every
site's best gain (Theorem 1). This mode computes the same tree as the plain learner with the
same exact criterion (one of :data:`mpc.learners.criteria.CRITERIA` with ``on_shares``: Gini,
the default, Gini impurity as CART defines it, or the fixed-point information gain) and
opens, to every site:

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
   nothing is opened, so no zero-sharing is needed); a number of many thresholds by two
   owner-known shuffles instead, where a party helps
   (:mod:`protocols.ppid3.threshold_counts`).
3. **Fold**: every site's shares of the level's counts (in the share ring ``Z_{2^16}`` or
   ``Z_{2^32}``) go to the first two sites, ``p0`` and ``p1``, re-randomised: a site other
   than those draws a fresh seed (OS generator), sends it to ``p0`` and its shares less the
   seed's expansion to ``p1``; each receives a uniform message. ``p0`` and ``p1`` lift the
   sums to ``Z_{2^64}`` (:func:`protocols.engine.circuits.lift`).
4. **Decisions on shares** (``p0`` and ``p1``, triples from the run's preprocessing, in
   batches of a :class:`protocols.engine.session.Session`): the stop bits and labels
   (:func:`protocols.ppid3.shared_scores.node_decisions`), then each candidate's score by the
   criterion's circuit: for a fraction criterion its terms
   (:meth:`~mpc.learners.criteria.FractionCriterion.shared_terms`) in ``Z_{2^64}``, summed as
   fractions round by round, each round in a ring only as wide as its results
   (:func:`protocols.ppid3.shared_scores.fraction_rings`), and the argmax over each node's
   candidates (:func:`protocols.ppid3.fraction_argmax.fraction_argmax`: each pair compared
   in the ring it needs); for ``entropy-fixed`` integer scores, each count's fixed-point
   ``n log n`` on shares (:meth:`mpc.learners.criteria.EntropyFixed.shared_scores`), and one
   argmax in their ring. Ties go to the first best in site and column order, the plain
   learner's rule. The split is opened to every site; the children's class counts are the
   winning candidate's rows, still shared, and their stop bits and labels come at the next
   level.

What each party receives: from a dealing party, seeds and masks (uniform); from each other,
masked arrays, shares and a re-randomised fold (uniform); the numbers of distinct values of
every site's attributes (``reveal/domains``, declared: the fan-outs a split on each would
have); with numbers counted by shuffles, which have every distinct value as a candidate
(``reveal/exact``, public) and the shuffles' seeds, permutations and masked matrices
(uniform: :mod:`protocols.engine.shuffle`); the openings of the decisions above
(``reveal/stop-share``, ``reveal/label-share``, ``reveal/split-share``), which ``p0`` and
``p1`` send through their one door (:mod:`protocols.engine.opening`): each share plus a fresh
zero-sharing from a key only the two hold, so that the pair opens what the ledger records
as ``reveal/stops``, ``reveal/labels``, ``reveal/splits`` and each message is uniform beside
everything its receiver holds, the triples it dealt included. A dealing party receives
requests with public shapes, and seeds of masks as in the paper's mode. Trust: the helper's
(``dealer``: it colludes with no site; ``sites``: no two sites collude) and, whatever the
helper, **``p0`` and ``p1`` do not collude**: together they would hold every count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.criteria import NLOGN_W, EntropyFixed, FractionCriterion
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.expect import integer, list_of, raw
from mpc.runtime.view import declared, public, uniform
from protocols.engine.opening import opening
from protocols.engine.ring import RING64, Ring, ring_for_bits
from protocols.engine.session import Session
from protocols.ppid3.fraction_argmax import argmax_plan, fraction_argmax
from protocols.ppid3.level_arrays import threshold_tables
from protocols.ppid3.level_grower import LevelGrower, Split
from protocols.ppid3.level_products import LevelNode, shared_attribute_counts
from protocols.ppid3.ppid3 import DistributedTree
from protocols.ppid3.shared_scores import (
    best_splits,
    final_rings,
    fraction_rings,
    fraction_sums,
    node_decisions,
)
from protocols.ppid3.threshold_counts import threshold_counts

__all__ = ["SEED", "SHARE", "SharedCounts"]

#: candidates of one batch of a level's argmax at most (a node's stay in one batch): with
#: numbers of many thresholds a level has millions, and a batch's triples are made at once
CANDIDATES_PER_BATCH = 2**18

#: a candidate split: ``(site, attribute, threshold index)``, the index -1 for a nominal one
Candidate = tuple[str, int, int]

EXACT = public(
    "reveal/exact",
    "which of a site's numbers counted by shuffles have every distinct value as a candidate "
    "(the run's choice of candidates; it sets the lengths of their shuffles)",
)
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


async def _copies(shares: dict[int, np.ndarray], keys: list[int]) -> dict[int, np.ndarray]:
    """Copies of the shares of ``keys`` (of a range about to be set aside)."""
    return {k: shares[k].copy() for k in keys}


class SharedCounts(LevelGrower):
    """The way of counting that opens only the tree (``--reveal tree``, the module
    docstring): counts, scores and stopping tests on shares, splitting by ``criterion`` (one
    computed on shares: ``criterion.on_shares``)."""

    name = "tree"
    help = "only the tree: counts, scores and stopping tests stay on shares (Gini)"
    default_criterion = "gini"
    on_shares = True
    shuffles = True

    domains: dict[str, list[int]]  # every site's attributes' numbers of values (public)
    duo: Session
    width: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if len(self.names) < 2:
            raise ConfigError("--reveal tree needs at least 2 sites")
        # public: each node's attributes used on the path, per site, and the intervals of
        # threshold indices their paths leave the attributes split at a threshold
        self.used: dict[int, dict[str, frozenset[int]]] = {}
        self.bounds: dict[int, dict[tuple[str, int], tuple[int, int]]] = {}
        # p0 and p1: shares of each node's class counts and label
        self.classes: dict[int, np.ndarray] = {}
        self.labels: dict[int, Any] = {}

    async def start(self, tag: str) -> None:
        await super().start(tag)
        party, view, criterion = self.party, self.view, self.criterion
        mine = list(self.sizes)
        await party.broadcast(f"{tag}/domains", mine)
        got = await party.gather([s for s in self.names if s != party.name], f"{tag}/domains",
                                 DOMAINS, expect=list_of(integer(lo=1)))  # fmt: skip
        self.domains = {party.name: mine, **got}
        for s, a in zip(self.names, self.attribute_counts, strict=True):
            if len(self.domains[s]) != a:
                raise ProtocolError(f"{s} announced {len(self.domains[s])} attributes, not {a}")
        await self._wide(tag)
        self.width = np.dtype(self.dtype).itemsize * 8
        widest = max(max(d, default=1) for d in self.domains.values())
        if isinstance(criterion, FractionCriterion):
            self.duo = Session(party, self.dealing, RING64)
        else:
            assert isinstance(criterion, EntropyFixed)
            if self.n >= 2**NLOGN_W:
                raise ConfigError(f"--criterion entropy-fixed counts at most {2**NLOGN_W - 1:,} "
                                  f"rows; this table has {self.n:,}")  # fmt: skip
            ring = ring_for_bits(criterion.score_bits(widest * (self.p + 1)))
            self.duo = Session(party, self.dealing, ring)
        await self.duo.start(f"{tag}/open-key")
        self.used[0] = {s: frozenset() for s in self.names}
        self.bounds[0] = {(s, j): (-1, self.domains[s][j] - 1)
                          for s in self.names for j in sorted(self.ordered[s])}  # fmt: skip
        counts = None
        if self.is_class:
            assert view.y is not None
            counts = RING64.array(np.bincount(view.y, minlength=self.p))
        root_counts = await self._deal_in(self.class_site, counts, self.p, f"{tag}/root")
        if self.duo.active:
            assert root_counts is not None
            self.classes[0] = root_counts

    async def _wide(self, tag: str) -> None:
        """Every site's numbers counted by shuffles (:mod:`protocols.ppid3.threshold_counts`:
        the same public rule at every site) and which of them have every distinct value as a
        candidate (announced: the lengths of their shuffles)."""
        party = self.party
        for s in self.names:
            self.shuffled[s] = self.shuffled_of(self.domains[s], self.ordered[s])
        exact = sorted(self.shuffled[party.name]) if self.view.exact else []
        exacts = {party.name: frozenset(exact)}
        if any(self.shuffled.values()):
            await party.broadcast(f"{tag}/exact", exact)
            got = await party.gather([s for s in self.names if s != party.name], f"{tag}/exact",
                                     EXACT, expect=list_of(integer(lo=0)))  # fmt: skip
            for s, js in got.items():
                if not set(js) <= self.shuffled[s]:
                    raise ProtocolError(f"{s} named exact numbers {js} not counted by shuffles")
                exacts[s] = frozenset(js)
        #: site -> its numbers counted by shuffles -> (codes, every code holds a row)
        self.wide = {s: {j: (self.domains[s][j], j in exacts[s]) for j in sorted(js)}
                     for s, js in self.shuffled.items() if js}  # fmt: skip

    def finished(self, tree: DistributedTree) -> None:
        """The class names in the order of the opened labels; at ``p0`` and ``p1``, each
        interior node's majority class, still shared (for records with an unseen value), and
        every node's class counts, still shared (for the scores a receiver may ask for)."""
        if self.view.classes is not None:
            tree.classes = list(self.view.classes)
        if self.duo.active:
            order = list(enumerate(self.depth_first()))
            tree.label_shares = {number: int(self.labels[k][0]) for number, k in order
                                 if not self.nodes[k].leaf}  # fmt: skip
            tree.count_shares = {number: [int(x) for x in self.classes[k]]
                                 for number, k in order}  # fmt: skip

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
            (self.max_depth is not None and node.depth >= self.max_depth)
            or not cands  # no attribute left, nor a threshold inside its interval
            for node, cands in zip(level, self._candidates(level), strict=True)
        ]
        stop = label = None
        if duo.active:
            counts = np.stack([self.classes[node.key] for node in level])
            parent = np.concatenate([
                self.labels[node.parent] if node.parent is not None else ring.zeros(1)
                for node in level
            ])  # fmt: skip
            stop, label = await duo.batch(
                f"{t}/dec", node_decisions, counts, parent, self.min_samples_split
            )
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

    def _candidates(self, inner: list[LevelNode]) -> list[list[Candidate]]:
        """Each node's candidates in the plain learner's order (site, column, threshold
        ascending): ``(site, attribute, -1)`` for a nominal attribute not used on the path,
        ``(site, attribute, i)`` for each threshold index ``i`` inside the interval the path
        leaves an attribute split at a threshold. Public: the splits on the path say it."""
        out = []
        for node in inner:
            cands: list[Candidate] = []
            for i, s in enumerate(self.names):
                if node.left[i] == 0:
                    continue
                used, ordered = self.used[node.key][s], self.ordered[s]
                for j in range(len(self.domains[s])):
                    if j in ordered:
                        lo, hi = self.bounds[node.key][(s, j)]
                        cands += [(s, j, at) for at in range(lo + 1, hi)]
                    elif j not in used:
                        cands.append((s, j, -1))
            out.append(cands)
        return out

    def _size(self, c: Candidate) -> int:
        """The number of branches of candidate ``c``: two at a threshold, else the values."""
        s, j, at = c
        return 2 if at >= 0 else self.domains[s][j]

    async def split(self, inner: list[LevelNode], t: str) -> list[Split]:
        """The counts on shares, the fold, the scores and the argmax; opens the splits."""
        party, duo, p = self.party, self.duo, self.p
        widths = {s: [0 if j in self.shuffled[s] else d for j, d in enumerate(ds)]
                  for s, ds in self.domains.items()}  # fmt: skip
        mine = [d for d in widths[party.name] if d]
        ranges = await self.each_range(
            lambda rows: shared_attribute_counts(
                party, self.nodes, inner, rows, mine, self.dealing, p, t, self.cost,
                onehot={s: sum(w) for s, w in widths.items()},
            )
        )  # fmt: skip
        parts = ranges[0]
        for more in ranges[1:]:  # a sum of shares is a share of the sum
            for key, share in more.items():
                parts[key] = parts[key] + share if key in parts else share
        wide = await self._shuffled_counts(inner, t)
        cands = self._candidates(inner)
        offsets = {s: np.concatenate([[0], np.cumsum(w)]).astype(int) for s, w in widths.items()}
        pieces = []
        for node, cs in zip(inner, cands, strict=True):
            prefix: dict[tuple[str, int], np.ndarray] = {}
            for s, j, at in cs:
                size = self.domains[s][j]
                if j in self.shuffled[s]:
                    part, first = wide.get((node.key, s, j)), 0
                else:
                    part, first = parts.get((node.key, s)), offsets[s][j]
                if part is None:
                    pieces.append(np.zeros(self._size((s, j, at)) * p, dtype=self.dtype))
                    continue
                block = part[first : first + size]
                if at < 0:
                    pieces.append(block.reshape(-1))
                    continue
                if (s, j) not in prefix:  # every threshold's two sides at once, on shares
                    prefix[(s, j)] = threshold_tables(block, np.arange(size - 1))
                pieces.append(prefix[(s, j)][at].reshape(-1))
        local = np.concatenate(pieces)
        folded = await self._fold(local, f"{t}/fold")
        ring = RING64 if isinstance(self.criterion, FractionCriterion) else duo.ring
        best = values = None
        if duo.active:
            assert folded is not None
            best, values = await self._best(folded, cands, len(local), t)
        winners = await self._open(best, len(inner), f"{t}/splits", SPLIT_SHARE, ring)
        if any(not 0 <= w < len(cs) for w, cs in zip(winners, cands, strict=True)):
            raise ProtocolError(f"the splits opened to {winners}")
        chosen = [cs[w] for w, cs in zip(winners, cands, strict=True)]
        party.ledger.record("reveal/splits", {str(node.key): [s, j] if at < 0 else [s, j, at]
                                              for node, (s, j, at) in zip(inner, chosen,
                                                                          strict=True)},
                            step=t)  # fmt: skip
        starts = np.cumsum([0] + [self._size(x) for c in cands for x in c])
        splits, first = [], 0
        for cs, w in zip(cands, winners, strict=True):
            s, j, at = cs[w]
            size = self._size(cs[w])
            row = int(starts[first + w])
            rows = None if values is None else values[row : row + size]
            first += len(cs)
            splits.append(Split(s, j, size, rows, threshold=None if at < 0 else at))
        return splits

    async def _shuffled_counts(
        self, inner: list[LevelNode], t: str
    ) -> dict[tuple[int, str, int], np.ndarray]:
        """This site's shares of the per-code counts of the numbers counted by shuffles
        (:func:`protocols.ppid3.threshold_counts.threshold_counts`), over all its rows (the
        ranges' shares side by side)."""
        if not self.wide:
            return {}
        keys = [node.key for node in inner if self.party.name in node.holders]
        if len(self.ranges) == 1:
            shares = self.ranges[0].shares
        else:
            got = await self.each_range(lambda rows: _copies(rows.shares, keys), products=False)
            shares = {k: np.concatenate([g[k] for g in got], axis=1) for k in keys}

        def has_candidates(node: LevelNode, s: str, j: int) -> bool:
            lo, hi = self.bounds[node.key][(s, j)]
            return hi - lo > 1

        return await threshold_counts(self.party, self.nodes, inner, self.view.codes, shares,
                                      self.wide, has_candidates, self.dealing, self.p,
                                      self.dtype, t)  # fmt: skip

    async def _best(
        self, folded: np.ndarray, cands: list[list[Candidate]], size: int, t: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """``p0``'s or ``p1``'s shares of each node's best candidate (by the criterion) and
        of every candidate's counts (each candidate's values end to end, ``sum of values x
        p``, ``Z_{2^64}``), from the folded counts: a batch of the session (its triples
        counted by a dry run) per group of consecutive nodes of at most
        :data:`CANDIDATES_PER_BATCH` candidates, one after another, so that a batch's
        triples and shares fit in memory."""
        p, groups, at, count = self.p, [[0]], 0, len(cands[0])
        for i in range(1, len(cands)):  # consecutive nodes, a node's candidates together
            if count + len(cands[i]) > CANDIDATES_PER_BATCH:
                groups.append([])
                count = 0
            groups[-1].append(i)
            count += len(cands[i])
        best, values = [], []
        for g, nodes in enumerate(groups):
            width = sum(self._size(x) for i in nodes for x in cands[i]) * p
            tag = f"{t}/best" if len(groups) == 1 else f"{t}/best{g}"
            b, v = await self.duo.batch(tag, self._choose, folded[at : at + width],
                                        [cands[i] for i in nodes])  # fmt: skip
            at += width
            best.append(b)
            values.append(v)
        return np.concatenate(best), np.concatenate(values)

    async def _choose(
        self, s: Session, folded: np.ndarray, cands: list[list[Candidate]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The body of :meth:`_best`: lift the counts to ``Z_{2^64}``, then the scores and the
        argmax of the criterion. Every candidate's values stay end to end (``values x p``,
        no candidate padded to the widest): each value's term is its own row's."""
        p = self.p
        lengths = [self._size(x) for c in cands for x in c]
        lifted = await s.lift(folded, self.width, "lift", RING64)
        values = lifted.reshape(-1, p)
        crit = self.criterion
        if isinstance(crit, FractionCriterion):
            rings = fraction_rings(self.n, lengths, crit)
            sizes = [[self._size(x) for x in c] for c in cands]
            plan = argmax_plan(self.n, sizes, final_rings(lengths, rings), crit)
            s_v, y_v = await crit.shared_terms(s, values[None], RING64)
            num, den = await fraction_sums(s, s_v[0], y_v[0], lengths, rings)
            return await fraction_argmax(s, num, den, plan, "cmp"), values
        assert isinstance(crit, EntropyFixed)
        scores = await crit.shared_scores(s, values, lengths, "nlogn", s.ring)
        pad = -(1 << (s.ring.bits - 3))  # below every score the ring holds
        keys = s.const(pad, (len(cands), max(len(c) for c in cands)))
        c = 0
        for i, cs in enumerate(cands):
            keys[i, : len(cs)] = scores[c : c + len(cs)]
            c += len(cs)
        return await best_splits(s, keys, "argmax"), values

    def child_added(self, node: LevelNode, child: LevelNode, split: Split) -> None:
        """Every site: the attributes used on the child's path, per site (public); ``p0`` and
        ``p1``: their shares of the child's class counts."""
        assert split.attribute is not None
        used, bounds = dict(self.used[node.key]), dict(self.bounds[node.key])
        if split.threshold is None:
            used[split.site] = used[split.site] | {split.attribute}
        else:  # "<= t" keeps the thresholds below t, "> t" those above
            lo, hi = bounds[(split.site, split.attribute)]
            at = split.threshold
            bounds[(split.site, split.attribute)] = (lo, at) if child.value == 0 else (at, hi)
        self.used[child.key], self.bounds[child.key] = used, bounds
        if split.rows is not None:
            self.classes[child.key] = split.rows[child.value]
