"""Hybrid-ID3 — Teng & Du, *A Hybrid Multi-Group Privacy-Preserving Approach for Building
Decision Trees*, Section 3.1 (steps 1-6), with the two baselines of Section 5.

Roles: ``alice`` and ``bob`` hold the attributes of a vertically partitioned table, aligned by
record (Bob also holds the class); a ``dealer`` (commodity server) serves correlated randomness
for the secure dot products when the method has a helper
(:func:`protocols.hybrid.dot_session.serve_helper`).

Step 1 (:func:`exchange_disguised`): each party binary-encodes its own columns (Bob's include
the class), disguises them with multi-group randomized response
(:mod:`protocols.hybrid.randomized_response`) and sends them to the other. Alice ends with
``D1 = D_a ∪ D̂_b``, Bob with ``D2 = D̂_a ∪ D_b``. Then both run the same recursion in lockstep
(:func:`hybrid_id3`):

2. if the exact class counts ``N(E ∧ class = C)`` of the node hold one class only: a leaf
   (the counts come from step 4c of the parent; at the root from ``p`` dot products);
3. if no candidate attribute is left (or the depth limit is reached): a majority leaf;
4. (a) each party estimates every candidate's gain from its own data (its true part plus the
   other's disguised part); they exchange the estimates and average them; (b) the ``ω`` best
   averages form the window; (c) secure dot products ``N(E ∧ A = v ∧ class = C) = V_a · V_b``
   give the exact counts, hence the exact gains, of the window's attributes; the best (ties:
   Alice's attributes first, then column order, :func:`mpc.learners.id3.best_site_attribute`)
splits; 5. label the node with it;
6. every value of the split attribute gets a child; (b) a child with no records is a leaf with
   the node's majority class; (c) otherwise recurse — its class counts are the ones of 4c.

Two dot-product batches per node keep every count to one candidate attribute: Alice's rows
``E_a ∧ A = v`` (her candidates) times Bob's columns ``E_b ∧ class = C``, and Alice's row
``E_a`` times Bob's columns ``E_b ∧ B = v ∧ class = C`` (his candidates). Each count is one
dot product of two length-``n`` 0/1 vectors; :attr:`HybridResult.dot_products` counts them all.

Cost (Section 5.4). Table 1's C is the share of gain computations done by SMC:
:attr:`HybridResult.smc_share` = ``smc_gains / gain_computations``, where every node that
chooses a split computes one gain per candidate (``|AL|``), ``min(ω, |AL|)`` of them by SMC; the
SMC-only approach computes all ``|AL|`` by SMC. With Mushroom's 22 attributes and shallow trees
this is about ``ω / 22``, the paper's 10/15/20% for ω = 2/3/4. The dot products, which also
weigh each candidate by its number of values, are the second measure.

Baselines (Section 5): *randomization-only* — the averaged estimates choose every split and the
averaged estimated counts decide the leaves (a class is present when its estimate is at least
one record, a node is empty when its estimate is below one), no SMC at all; *SMC-only* — ``ω``
is every candidate, which makes the tree that of plain ID3 (:class:`mpc.learners.id3.ID3Classifier`
with Alice's attributes first), at the largest SMC cost.

What each party learns (ledger):

* ``hybrid/disguised`` — the other party's disguised table (its shape, groups and digests
  are recorded: ``sha256`` of the table, ``rows_sha256`` of its rows in sorted order; the
  bits themselves stay in memory);
* ``hybrid/estimated-gains`` — the other's estimated gains of every candidate at every node
  (hence their average), and in randomization-only mode ``hybrid/estimated-counts``, the
  other's estimated counts of the chosen attribute;
* ``hybrid/exact-counts`` — the exact ``(value x class)`` counts of the window's attributes at
  every node (and the root's class counts), which SMC reveals to both, as the paper intends;
* ``hybrid/tree`` — the tree, which both parties hold;
* the dealer: ``dot-product/shape`` of every batch (how many counts a node asks for), nothing
  about the data.

What stays secret: each party's true columns, and the coins of its disguise. The coins are the
whole protection of a disguised table (whoever knows them undoes the flips), so each party
draws its own, from its OS CSPRNG by default; a reproducible run may seed them, but only from a
value that party alone holds (:func:`exchange_disguised`), never from a public or shared seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.id3 import best_attribute, best_site_attribute, information_gain
from mpc.learners.tree import majority
from mpc.runtime.expect import array
from mpc.runtime.party import Party
from mpc.runtime.view import declared
from protocols.hybrid.dot_session import ALICE, BOB, DEALER
from protocols.hybrid.randomized_response import (
    THETA_SINGULAR_TOLERANCE,
    BitLayout,
    binary_encode,
    disguise,
)


def sorted_rows(table: Any) -> Any:
    """A table's rows in sorted order: the multiset of its rows."""
    if isinstance(table, np.ndarray) and table.ndim == 2:
        return sorted(map(tuple, table.tolist()))
    return table


#: what a party receives (besides the dot products' receipts)
DISGUISED = declared(
    "hybrid/disguised",
    "the other party's disguised table, a row per record: its columns under multi-group "
    "randomized response with the sender's coins (Step 1)",
    canonical=sorted_rows,
)
ESTIMATES = declared(
    "hybrid/estimates",
    "the other party's estimated gains of the candidates (and in randomization-only mode its "
    "estimated counts of the chosen attribute, at the root its estimated class counts)",
)

__all__ = [
    "ALICE",
    "BOB",
    "DEALER",
    "DISGUISED",
    "ESTIMATES",
    "MODES",
    "DisguisedView",
    "Estimator",
    "HybridResult",
    "HybridSetup",
    "exchange_disguised",
    "hybrid_id3",
    "rows_digest",
]

MODES = ("hybrid", "smc-only", "randomization-only")

#: How the randomization-only baseline reads its estimates. The paper estimates ``N(E)`` by
#: solving ``P* = A P`` (Section 4, Theorem 1) and says nothing of the negative values an
#: unbiased estimate takes: ``clipped`` (the default) sets them to 0 before the gains and the
#: leaves; ``raw`` keeps them everywhere (gains by the usual entropy formula, Equation 1, on
#: the raw numbers); ``raw-gains`` keeps them for the gains and clips them for the leaves;
#: ``raw-leaves`` clips them for the gains and keeps them for the leaves.
ESTIMATE_READINGS = ("clipped", "raw", "raw-gains", "raw-leaves")
#: Who mines for the randomization-only baseline. Step 4(a) of Hybrid-ID3 has "Alice and Bob
#: use the average of their results" (``both``, the default); Section 2's randomization
#: approach has one miner: "Alice then sends D̂a to Bob. Bob now has the full data set
#: D̂a ∪ Db ... Bob can conduct data mining" (``bob``, who holds the class in clear; ``alice``
#: is the miner that sees the class disguised). The paper does not say which its baseline used.
MINERS = ("both", "alice", "bob")

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class HybridSetup:
    """The public parameters both parties (and the launcher) agree on.

    ``attributes`` are ``(name, owner)`` pairs in tie order (Alice's first, then Bob's, each
    in column order); ``domains`` map every attribute and the class to its values (codes are
    positions in these lists); ``groups`` map each party to its randomization groups (lists of
    its attribute names; Bob's include the class), ``theta`` is the probability of telling
    the truth, ``code`` the binary code of
    :func:`protocols.hybrid.randomized_response.binary_encode`.
    """

    attributes: tuple[tuple[str, str], ...]
    class_name: str
    domains: Mapping[str, Sequence[str]]
    groups: Mapping[str, Sequence[Sequence[str]]]
    theta: float
    code: str = "paired"

    def __post_init__(self) -> None:
        owners = {o for _, o in self.attributes}
        if not owners <= {ALICE, BOB}:
            raise ConfigError(f"attribute owners must be alice or bob, got {sorted(owners)}")
        if abs(2.0 * self.theta - 1.0) < THETA_SINGULAR_TOLERANCE:
            raise ConfigError(
                f"theta = {self.theta}: the randomized-response matrix is singular at 0.5, so "
                "nothing can be estimated (Teng & Du, Theorem 2); choose theta != 0.5"
            )
        if not 0.0 <= self.theta <= 1.0:
            raise ConfigError(f"theta must be a probability in [0, 1], got {self.theta}")
        for party in (ALICE, BOB):
            own = set(self.columns_of(party))
            grouped = [a for g in self.groups.get(party, ()) for a in g]
            if sorted(grouped) != sorted(own) or any(not g for g in self.groups.get(party, ())):
                raise ConfigError(
                    f"the groups of {party} must split its columns {sorted(own)} into "
                    f"non-empty disjoint groups, got {self.groups.get(party)}"
                )
        missing = [a for a in (*self.names, self.class_name) if a not in self.domains]
        if missing:
            raise ConfigError(f"no domain for {missing}")

    @property
    def names(self) -> list[str]:
        return [a for a, _ in self.attributes]

    @property
    def classes(self) -> list[str]:
        return list(self.domains[self.class_name])

    def owner(self, attribute: str) -> str:
        if attribute == self.class_name:
            return BOB
        return dict(self.attributes)[attribute]

    def columns_of(self, party: str) -> list[str]:
        """The columns ``party`` holds in the clear (Bob's end with the class)."""
        own = [a for a, o in self.attributes if o == party]
        return [*own, self.class_name] if party == BOB else own

    def to_dict(self) -> dict[str, Any]:
        return {
            "attributes": [list(p) for p in self.attributes],
            "class_name": self.class_name,
            "domains": {a: list(d) for a, d in self.domains.items()},
            "groups": {p: [list(g) for g in gs] for p, gs in self.groups.items()},
            "theta": self.theta,
            "code": self.code,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HybridSetup:
        try:
            return cls(
                attributes=tuple((str(a), str(o)) for a, o in d["attributes"]),
                class_name=str(d["class_name"]),
                domains={str(a): [str(v) for v in vs] for a, vs in d["domains"].items()},
                groups={str(p): [[str(a) for a in g] for g in gs] for p, gs in d["groups"].items()},
                theta=float(d["theta"]),
                code=str(d.get("code", "paired")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"malformed Hybrid-ID3 setup: {exc!r}") from None


@dataclass
class DisguisedView:
    """The other party's table as received: disguised bits and their public layout."""

    layout: BitLayout
    bits: npt.NDArray[np.uint8]
    groups: list[list[str]]


@dataclass
class HybridResult:
    """One tree as both parties hold it (JSON form of :mod:`mpc.learners.tree`) and what it cost."""

    tree: dict[str, Any]
    mode: str
    dot_products: int = 0
    #: attribute gains computed exactly by SMC (one per window attribute per node)
    smc_gains: int = 0
    #: attribute gains computed at all: every candidate at every node that chooses a split
    #: (step 4), by randomization, by SMC or both; SMC-only computes all of them by SMC
    gain_computations: int = 0
    nodes: int = 0
    smc_batches: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)

    @property
    def smc_share(self) -> float | None:
        """Section 5.4's cost ratio C: the share of this tree's gain computations done by SMC,
        ``smc_gains / gain_computations`` (the SMC-only approach computes every candidate's
        gain by SMC at every node; the hybrid only the window's ``min(ω, |AL|)``). ``None``
        for a tree that chose no split."""
        return self.smc_gains / self.gain_computations if self.gain_computations else None


#: ``dot(party, matrices, tag)`` — batches of secure dot products revealed to both parties,
#: run concurrently: Alice passes her ``(m x n)`` matrices, Bob his ``(n x l)`` ones.
DotProducts = Callable[[Party, list[np.ndarray], str], Awaitable[list[np.ndarray]]]


# ----------------------------------------------------------------------------- step 1


def _encode(setup: HybridSetup, party: str, codes: np.ndarray) -> tuple[np.ndarray, BitLayout]:
    cols = setup.columns_of(party)
    domains = {a: list(setup.domains[a]) for a in cols}
    columns = {a: [domains[a][int(c)] for c in codes[:, j]] for j, a in enumerate(cols)}
    return binary_encode(columns, domains, code=setup.code)


async def exchange_disguised(
    party: Party,
    setup: HybridSetup,
    codes: np.ndarray,
    *,
    rng: int | np.random.Generator | None = None,
    draw_order: np.ndarray | None = None,
    tag: str = "hybrid/disguise",
) -> DisguisedView:
    """Step 1: disguise this party's columns (``codes``: rows x :meth:`HybridSetup.columns_of`,
    value positions) with MRR and swap disguised tables with the other party.

    ``rng`` is this party's own source of coins: ``None`` (the default) draws them from the
    OS CSPRNG; a seed or ``Generator`` makes an experiment reproducible, and must be one that
    only this party knows. A seed that the other party, the dealer, a shared file or a log can
    see or derive (a run's public seed, say) lets them rebuild the coins and read the true
    table through the disguise. ``draw_order[t]`` is the draw that row ``t`` takes (a
    permutation; default: row ``t`` takes draw ``t``): with the rows in the common record
    order, which is new in every run, and ``draw_order`` the rows' positions in the party's
    own file, a seeded record keeps its coins from run to run."""
    me = party.name
    other = BOB if me == ALICE else ALICE
    with party.phase(tag):
        bits, layout = _encode(setup, me, codes)
        groups = layout.groups(setup.groups[me])
        if draw_order is None:
            sent = disguise(bits, groups, setup.theta, rng)
        else:
            order = np.asarray(draw_order, dtype=np.int64)
            if sorted(order.tolist()) != list(range(bits.shape[0])):
                raise ConfigError(f"draw_order must be a permutation of the {bits.shape[0]} rows")
            drawn = np.empty_like(order)
            drawn[order] = np.arange(len(order))  # draw i -> row
            sent = disguise(bits[drawn], groups, setup.theta, rng)[order]
        await party.send(other, tag, sent)
        got = await party.recv(other, tag, DISGUISED)
        _, other_layout = _encode(
            setup, other, np.zeros((1, len(setup.columns_of(other))), dtype=np.int64)
        )
        if (
            not isinstance(got, np.ndarray)
            or got.dtype != np.uint8
            or got.ndim != 2
            or got.shape != (codes.shape[0], other_layout.n_bits)
            or (got > 1).any()
        ):
            raise ProtocolError(
                f"{other} sent a disguised table that is not a {codes.shape[0]} x "
                f"{other_layout.n_bits} 0/1 uint8 matrix"
            )
        party.ledger.record(
            "hybrid/disguised",
            {
                "from": other,
                "attributes": list(other_layout.attributes),
                "rows": int(got.shape[0]),
                "bits": int(got.shape[1]),
                "groups": [list(g) for g in setup.groups[other]],
                "theta": setup.theta,
                "sha256": hashlib.sha256(got.tobytes()).hexdigest(),
                "rows_sha256": rows_digest(got),
            },
            step=tag,
        )
    return DisguisedView(other_layout, got, [list(g) for g in setup.groups[other]])


def rows_digest(bits: np.ndarray) -> str:
    """SHA-256 of a 0/1 table's rows in sorted order: the same for the same rows in any
    order (a disguised table received in a new common record order, say)."""
    rows = np.ascontiguousarray(bits, dtype=np.uint8)
    ordered = rows[np.lexsort(rows.T[::-1])] if rows.size else rows
    return hashlib.sha256(ordered.tobytes()).hexdigest()


# ----------------------------------------------------------------------------- estimation


class Estimator:
    """Unbiased estimates of ``N(E ∧ A = v ∧ class = C)`` from one party's data: its true
    columns and the other's disguised table (the ``O(m)`` method of Section 4: per record, the
    product over the groups that ``E`` touches of ``(θ [e_k] - (1-θ) [ē_k]) / (2θ - 1)``,
    times the exact indicators of the conditions on true columns).

    For speed, the matches ``[A = v]`` and ``[(A = v)‾]`` of every disguised attribute value
    are computed once; a group's sub-pattern matches are the products of its conditions'.
    """

    def __init__(self, setup: HybridSetup, me: str, codes: np.ndarray, view: DisguisedView) -> None:
        self.setup = setup
        self.theta = setup.theta
        self.n = codes.shape[0]
        self.own = {a: codes[:, j] for j, a in enumerate(setup.columns_of(me))}
        self.group_of: dict[str, int] = {a: g for g, grp in enumerate(view.groups) for a in grp}
        self.sat: dict[str, Bools] = {}
        self.opp: dict[str, Bools] = {}
        X = view.bits
        for a in view.layout.attributes:
            words = view.layout.words(a)
            cols = view.layout.bits_of(a)
            sub = X[:, cols]  # n x b
            # [A = v] for every v: the record's bits equal v's code word; [(A = v)‾]: their
            # bitwise opposite
            self.sat[a] = (sub[:, None, :] == words[None, :, :]).all(axis=2)
            self.opp[a] = (sub[:, None, :] != words[None, :, :]).all(axis=2)

    def counts(self, path: Sequence[tuple[str, int]], attribute: str | None) -> Floats:
        """Estimated ``(values x classes)`` counts of ``attribute`` at the node ``path``
        (with ``attribute`` ``None``: the node's class counts, shape ``(1 x classes)``)."""
        setup = self.setup
        k = 1 if attribute is None else len(setup.domains[attribute])
        p = len(setup.classes)
        rows = np.ones(self.n, dtype=bool)
        for a, v in path:
            if a in self.own:
                rows &= self.own[a] == v
        idx = np.flatnonzero(rows)
        m = len(idx)
        # per group, the matches of its conditions ANDed by what they range over: "r" the
        # path's conditions (one per row), "k" the attribute's values, "p" the classes
        by_group: dict[int, dict[str, tuple[Bools, Bools]]] = {}

        def add(a: str, axis: str, sat: Bools, opp: Bools) -> None:
            parts = by_group.setdefault(self.group_of[a], {})
            if axis in parts:  # several path conditions in one group
                sat, opp = parts[axis][0] & sat, parts[axis][1] & opp
            parts[axis] = (sat, opp)

        for a, v in path:
            if a not in self.own:
                add(a, "r", self.sat[a][idx, v], self.opp[a][idx, v])
        # the per-row weight is a product of factors over rows, over (rows, values) and over
        # (rows, classes), so the sum over rows is a matrix product; exact conditions on this
        # party's own columns are 0/1 factors
        K: Floats = np.ones((m, 1))
        P: Floats = np.ones((m, 1))
        if attribute is not None:
            if attribute in self.own:
                K = (self.own[attribute][idx][:, None] == np.arange(k)[None, :]).astype(float)
            else:
                add(attribute, "k", self.sat[attribute][idx], self.opp[attribute][idx])
        c = setup.class_name
        if c in self.own:
            P = (self.own[c][idx][:, None] == np.arange(p)[None, :]).astype(np.float64)
        else:
            add(c, "p", self.sat[c][idx], self.opp[c][idx])
        scale = 1.0 / (2.0 * self.theta - 1.0)
        t, f = self.theta * scale, (1.0 - self.theta) * scale  # θ [e] - (1-θ) [ē], scaled
        r: Floats = np.ones(m)
        both: tuple[Bools, Bools, Bools, Bools] | None = None
        every = np.ones(m, dtype=bool)
        for parts in by_group.values():
            sr, orr = parts.get("r", (every, every))
            if "k" in parts and "p" in parts:  # the attribute and the class share a group
                both = (sr[:, None] & parts["k"][0], parts["p"][0],
                        orr[:, None] & parts["k"][1], parts["p"][1])  # fmt: skip
            elif "k" in parts:
                K = K * (t * (sr[:, None] & parts["k"][0]) - f * (orr[:, None] & parts["k"][1]))
            elif "p" in parts:
                P = P * (t * (sr[:, None] & parts["p"][0]) - f * (orr[:, None] & parts["p"][1]))
            else:
                r = r * (t * sr - f * orr)
        left = K * r[:, None]
        if both is None:
            return _sum_over_rows(left, P)
        s_k, s_p, o_k, o_p = both
        return t * _sum_over_rows(left * s_k, P * s_p) - f * _sum_over_rows(left * o_k, P * o_p)


def _sum_over_rows(left: Floats, right: Floats) -> Floats:
    """``left.T @ right`` (``k x p``), each entry summed over the rows in sorted order: the
    result depends on the rows only as a multiset, never on their order (a matrix product's
    sum would, in its last bits: the estimates a party sends would then tell the other the
    order of its records)."""
    terms = left[:, :, None] * right[:, None, :]
    out: Floats = np.sort(terms, axis=0).sum(axis=0)
    return out


# ----------------------------------------------------------------------------- the tree


def _named(counts: np.ndarray, classes: Sequence[str]) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    for c, x in zip(classes, counts, strict=True):
        x = float(x)
        out[c] = round(x) if abs(x - round(x)) < 1e-9 else round(x, 6)
    return dict(sorted(out.items()))


def _leaf(counts: np.ndarray, classes: Sequence[str], label: str) -> dict[str, Any]:
    return {"counts": _named(counts, classes), "class": label}


def _label(counts: np.ndarray, classes: Sequence[str]) -> str:
    return majority({c: float(x) for c, x in zip(classes, counts, strict=True)})


async def hybrid_id3(
    party: Party,
    setup: HybridSetup,
    estimator: Estimator,
    codes: np.ndarray,
    *,
    mode: str = "hybrid",
    window: int | None = None,
    dot: DotProducts | None = None,
    max_depth: int | None = None,
    tag: str = "hybrid",
    estimates: str = "clipped",
    miner: str = "both",
) -> HybridResult:
    """Build the tree at ``alice`` or ``bob`` (both call it; the same tree results at both).

    In ``randomization-only`` mode, ``estimates`` (:data:`ESTIMATE_READINGS`) and ``miner``
    (:data:`MINERS`) choose how the baseline reads the paper where it is open; both parties
    still exchange their estimates, so that both build the same tree.

    ``codes`` are this party's true columns (:meth:`HybridSetup.columns_of`), ``estimator``
    its :class:`Estimator` over ``D1`` or ``D2``; ``mode`` is ``hybrid`` (window ``ω`` =
    ``window``), ``smc-only`` (window = every candidate) or ``randomization-only`` (no SMC).
    ``dot`` runs the secure dot products (:class:`~protocols.hybrid.dot_session.DotSession`)."""
    if mode not in MODES:
        raise ConfigError(f"Hybrid-ID3 mode must be one of {MODES}, got {mode!r}")
    if mode != "randomization-only" and dot is None:
        raise ConfigError(f"mode {mode!r} needs a secure dot-product method")
    if mode == "hybrid" and (window is None or window < 1):
        raise ConfigError(f"the window ω must be an integer >= 1, got {window}")
    if max_depth is not None and max_depth < 0:
        raise ConfigError(f"max_depth must be >= 0, got {max_depth}")
    if estimates not in ESTIMATE_READINGS:
        raise ConfigError(f"estimates must be one of {ESTIMATE_READINGS}, got {estimates!r}")
    if miner not in MINERS:
        raise ConfigError(f"miner must be one of {MINERS}, got {miner!r}")
    if party.name not in (ALICE, BOB):
        raise ConfigError(f"Hybrid-ID3 runs at alice and bob, not at {party.name!r}")
    builder = _TreeBuilder(
        party, setup, estimator, codes, mode=mode, window=window, dot=dot,
        max_depth=max_depth, tag=tag, estimates=estimates, miner=miner,
    )  # fmt: skip
    with party.phase(f"{tag}/{mode}"):
        builder.result.tree = await builder.grow([], setup.names, await builder.root(), None, 0)
    party.ledger.record("hybrid/tree", {"mode": mode, "nodes": builder.result.nodes}, step=tag)
    return builder.result


class _TreeBuilder:
    """One party's side of :func:`hybrid_id3`: the tree grown node by node, steps 2-6."""

    def __init__(
        self, party: Party, setup: HybridSetup, estimator: Estimator, codes: np.ndarray, *,
        mode: str, window: int | None, dot: DotProducts | None, max_depth: int | None,
        tag: str, estimates: str, miner: str,
    ) -> None:  # fmt: skip
        self.party, self.setup, self.estimator, self.codes = party, setup, estimator, codes
        self.mode, self.window, self.dot, self.max_depth = mode, window, dot, max_depth
        self.tag, self.miner = tag, miner
        self.me = party.name
        self.other = BOB if self.me == ALICE else ALICE
        self.classes = setup.classes
        self.p = len(self.classes)
        self.own_cols = {a: codes[:, j] for j, a in enumerate(setup.columns_of(self.me))}
        self.result = HybridResult(tree={}, mode=mode)
        self.counter = 0
        baseline = mode == "randomization-only"
        # the hybrid's window (step 4a) always ranks clipped estimates; the baseline as it reads
        self.clip_gains = not baseline or estimates in ("clipped", "raw-leaves")
        self.clip_leaves = not baseline or estimates in ("clipped", "raw-gains")

    def indicator(self, path: Sequence[tuple[str, int]]) -> np.ndarray:
        """This party's records on ``path`` (its own attributes' tests only)."""
        v = np.ones(self.codes.shape[0], dtype=bool)
        for a, val in path:
            if self.setup.owner(a) == self.me:
                v &= self.own_cols[a] == val
        return v

    def matrices(self, path: Sequence[tuple[str, int]], cands: Sequence[str]) -> list[np.ndarray]:
        """This party's matrices of the dot products that count ``cands`` at the node of
        ``path`` (with ``cands`` empty, the node's class counts)."""
        setup, p = self.setup, self.p
        base = self.indicator(path)
        a_cands = [a for a in cands if setup.owner(a) == ALICE] if cands else []
        b_cands = [a for a in cands if setup.owner(a) == BOB]
        mats: list[np.ndarray] = []
        if self.me == ALICE:
            if not cands:
                mats.append(base[None, :])
            else:
                if a_cands:
                    mats.append(np.stack([
                        base & (self.own_cols[a] == v)
                        for a in a_cands for v in range(len(setup.domains[a]))
                    ]))  # fmt: skip
                if b_cands:
                    mats.append(base[None, :])
            return mats
        y = self.own_cols.get(setup.class_name)
        if y is None:  # pragma: no cover - the setup puts the class at Bob
            raise ConfigError("Bob must hold the class")
        by_class = [base & (y == c) for c in range(p)]
        if not cands or a_cands:
            mats.append(np.stack(by_class, axis=1))
        if b_cands:
            mats.append(np.stack([
                by_class[c] & (self.own_cols[a] == v)
                for a in b_cands for v in range(len(setup.domains[a])) for c in range(p)
            ], axis=1))  # fmt: skip
        return mats

    async def exact(
        self, path: Sequence[tuple[str, int]], cands: Sequence[str], t: str
    ) -> dict[str, np.ndarray]:
        """Step 4c: exact ``(values x classes)`` counts of ``cands``; with ``cands`` empty, the
        node's class counts under the key ``""``."""
        if self.dot is None:  # pragma: no cover - checked by hybrid_id3
            raise ConfigError("no dot-product method")
        setup, p = self.setup, self.p
        mats = self.matrices(path, cands)
        prods = await self.dot(self.party, [m.astype(np.uint64) for m in mats], t)
        self.result.smc_batches += 1
        got = [np.asarray(x).astype(np.int64) for x in prods]
        self.result.dot_products += sum(int(x.size) for x in got)
        if not cands:
            return {"": got[0].reshape(1, p)}
        a_cands = [a for a in cands if setup.owner(a) == ALICE]
        b_cands = [a for a in cands if setup.owner(a) == BOB]
        out: dict[str, np.ndarray] = {}
        i = 0
        if a_cands:
            r1 = got[i].reshape(-1, p)
            i += 1
            row = 0
            for a in a_cands:
                k = len(setup.domains[a])
                out[a] = r1[row : row + k]
                row += k
        if b_cands:
            r2 = got[i].reshape(-1)
            col = 0
            for a in b_cands:
                k = len(setup.domains[a]) * p
                out[a] = r2[col : col + k].reshape(-1, p)
                col += k
        return out

    def decided(self, mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        """What the baseline decides on: the two parties' average, or the miner's own."""
        if self.miner == "both":
            return (mine + theirs) / 2.0 if self.me == ALICE else (theirs + mine) / 2.0
        return mine if self.miner == self.me else theirs

    @staticmethod
    def clipped(counts: np.ndarray, clip: bool) -> np.ndarray:
        return np.clip(counts, 0.0, None) if clip else counts

    async def swap(self, value: np.ndarray, t: str, what: str) -> np.ndarray:
        """Send this party's ``value`` (estimates) and receive the other's."""
        await self.party.send(self.other, t, value)
        theirs = await self.party.recv(
            self.other, t, ESTIMATES, expect=array("iuf", ndim=value.ndim)
        )
        if theirs.shape != value.shape:
            raise ProtocolError(f"{self.other} sent {what} of shape {theirs.shape} at {t}")
        return np.asarray(theirs, dtype=np.float64)

    async def root(self) -> np.ndarray:
        """The root's class counts: estimated (the baseline) or exact."""
        tag = self.tag
        if self.mode == "randomization-only":
            mine = self.estimator.counts([], None).reshape(-1)
            theirs = await self.swap(mine, f"{tag}/root", "estimated class counts")
            self.party.ledger.record(
                "hybrid/estimated-counts",
                {"node": 0, "attribute": None, "counts": theirs.tolist()},
                step=tag,
            )
            return self.clipped(self.decided(mine, theirs), self.clip_leaves)
        ex = await self.exact([], [], f"{tag}/root")
        root = ex[""].reshape(-1).astype(np.float64)
        self.party.ledger.record(
            "hybrid/exact-counts", {"node": 0, "counts": {"": root.tolist()}}, step=tag
        )
        return root

    async def grow(
        self,
        path: list[tuple[str, int]],
        candidates: list[str],
        counts: np.ndarray,
        parent_label: str | None,
        depth: int,
    ) -> dict[str, Any]:
        """The subtree of the node of ``path`` (steps 2-6)."""
        number = self.counter
        self.counter += 1
        self.result.nodes += 1
        t = f"{self.tag}/n{number}"
        classes = self.classes
        if self.mode == "randomization-only":
            present = int((counts >= 1.0).sum())
            empty = float(counts.sum()) < 1.0
        else:
            present = int(np.count_nonzero(counts))
            empty = present == 0
        if empty:  # step 6b: no records, the parent's majority
            return _leaf(counts, classes, parent_label or classes[0])
        label = _label(counts, classes)
        max_depth = self.max_depth
        if present <= 1 or not candidates or (max_depth is not None and depth >= max_depth):
            return _leaf(counts, classes, label)  # steps 2 and 3
        best, child_counts = await self.split(path, candidates, number, depth, t)
        rest = [a for a in candidates if a != best]
        children = {}
        for v, value in enumerate(self.setup.domains[best]):  # step 6
            children[value] = await self.grow(
                [*path, (best, v)], rest, child_counts[v], label, depth + 1
            )
        return {
            "attribute": best,
            "site": 0 if self.setup.owner(best) == ALICE else 1,
            "counts": _named(counts, classes),
            "children": children,
        }

    async def split(
        self, path: list[tuple[str, int]], candidates: list[str], number: int, depth: int, t: str
    ) -> tuple[str, np.ndarray]:
        """Steps 4a-5 at node ``number``: the split attribute and its children's counts."""
        party = self.party
        self.result.gain_computations += len(candidates)
        # step 4a: every candidate's gain estimated from this party's data, then averaged
        raw = {a: self.estimator.counts(path, a) for a in candidates}
        gains = [information_gain(self.clipped(raw[a], self.clip_gains)) for a in candidates]
        mine = np.array(gains)
        theirs = await self.swap(mine, f"{t}/est", "estimated gains")
        avg = (mine + theirs) / 2.0 if self.me == ALICE else (theirs + mine) / 2.0
        party.ledger.record(
            "hybrid/estimated-gains",
            {"node": number, "gains": dict(zip(candidates, theirs.tolist(), strict=True))},
            step=t,
        )
        entry: dict[str, Any] = {"node": number, "depth": depth}
        if self.mode == "randomization-only":
            best = candidates[best_attribute(self.decided(mine, theirs).tolist())]
            mine_c = self.clipped(raw[best], self.clip_leaves)
            theirs_c = await self.swap(mine_c, f"{t}/estc", "estimated counts")
            party.ledger.record(
                "hybrid/estimated-counts",
                {"node": number, "attribute": best, "counts": theirs_c.tolist()},
                step=t,
            )
            child_counts = self.decided(mine_c, theirs_c)
        else:
            k = len(candidates) if self.mode == "smc-only" else min(int(self.window or 1),
                                                                    len(candidates))  # fmt: skip
            order = sorted(range(len(candidates)), key=lambda i: (-avg[i], i))  # step 4b
            cands = [candidates[i] for i in sorted(order[:k])]
            ex = await self.exact(path, cands, t)  # step 4c
            self.result.smc_gains += len(cands)
            party.ledger.record(
                "hybrid/exact-counts",
                {"node": number, "counts": {a: ex[a].tolist() for a in cands}},
                step=t,
            )
            by_site = [[a for a in cands if self.setup.owner(a) == s] for s in (ALICE, BOB)]
            s, j = best_site_attribute([[information_gain(ex[a]) for a in g] for g in by_site])
            best = by_site[s][j]
            entry["window"] = cands
            child_counts = ex[best].astype(np.float64)
        entry["split"] = best
        self.result.log.append(entry)
        return best, child_counts


# ----------------------------------------------------------------------------- dot products
