"""One party process of ``hybrid-id3`` (Alice, Bob or the commodity server ``dealer``), each
organisation bringing its own file.

**Each party reads its own CSV** (``data``, with its record ``id`` column, ``delimiter`` and
column kinds ``nominal`` / ``continuous``; :func:`parties.own_data.read_own_table`): Alice's
holds her attributes, Bob's his attributes and the class, each in its own row order. The
deployment file holds only public things: each party's attribute names (``columns``) and the
protocol parameters::

    [protocol.params]
    class = "play"            # the class column (in Bob's file)
    groups = '{"alice": [["outlook"], ["windy"]], "bob": [["temperature", "play"], ...]}'
                              # randomization groups (JSON; or an integer g with `seed`)
    grouping = "table"        # how an integer g is read: "table" (the paper's) or "party"
    theta = 0.7               # probability of telling the truth (0.5 is refused)
    code = "paired"           # binary code of nominal values
    window = 3                # ω
    method = "dealer"         # secure dot products: "dealer" or "paillier"
    max_depth = 6             # stop growing at this depth (left out: no limit)
    bins = 4                  # equal-frequency bins of continuous columns

The number of groups ``g`` has two readings (:data:`GROUPINGS`). ``table``, the default, is the
paper's (Section 4: "attributes are divided into g (1 <= g <= t) groups, where t is the total
number of attributes"): the ``t`` columns of the whole table, the class among them, are dealt
at random into ``g`` groups; ``g = 1`` is one group, ``g = t`` a group per column. A group that
holds columns of both parties is disguised by each party for its own part, with its own coin
(one coin shared by both would let each undo the other's disguise), so each party's coin
groups are its parts of the table's groups. ``party`` deals each party's own columns into ``g``
groups (at most its number of columns), so the table has up to ``2 g`` groups.

A party process (:func:`hybrid_run`):

1. agrees with the others on the mode (train, or classify with ``--model``:
   :func:`parties.programs.hybrid.classify_party`);
2. aligns its records with the other's (:func:`protocols.primitives.record_alignment.align_records`,
   between Alice and Bob only; a mismatch stops every party with ``RecordMismatch``, which
   gives counts only) and puts its rows in the common order;
3. bins its own continuous columns on its own training rows (equal-frequency,
   :class:`mpc.datasets.Discretizer`; per column, the same bins as binning the joined table)
   and agrees on the setup (the domains, :func:`protocols.hybrid.agreement.agree_setup`);
4. exchanges disguised tables, its coins drawn in its own file's row order, and builds the
   randomization-only, hybrid and SMC-only trees (:mod:`protocols.hybrid.hybrid_id3`), every SMC
   count a secure dot product;
5. binds the saved model (:func:`protocols.hybrid.agreement.bind_parts`) and, with
   ``--model-out FILE``, writes its part (:mod:`parties.programs.hybrid_model`): the hybrid tree.

Coins. The randomized-response coins protect a party's data from the other party, so each
party draws its own from its OS CSPRNG. For a reproducible experiment a party may take a *coin
seed* from its own private input file: then that file is a JSON object
``{"csv": "<the party's CSV text>", "coin_seed": N}`` (``mpc run hybrid-id3 --coin-seeds``
writes it so, as the launcher writes one private file per party). A coin seed never enters the
deployment file, the other party's file or any report: each party reports only where its coins
came from, ``"os"`` or ``"seeded (private)"``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import Discretizer
from mpc.errors import ConfigError, InputError
from mpc.learners.model_file import ModelError, SavedModel, write_model
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import private_seed, read_own_file, read_own_table, write_predictions
from parties.own_party import OwnParty
from parties.programs.hybrid_model import LEARNER, HybridPart, load_part, part_body
from protocols.engine.dealing import Sites
from protocols.hybrid.agreement import (
    CLASSIFY,
    TRAIN,
    agree_mode,
    agree_setup,
    bind_parts,
    check_parts,
)
from protocols.hybrid.classify import (
    classify_records,
    consistent_terminals,
    serve_classify_dealer,
    terminal_classes,
)
from protocols.hybrid.dot_session import DotSession, serve_helper
from protocols.hybrid.hybrid_id3 import (
    ALICE,
    BOB,
    DEALER,
    ESTIMATE_READINGS,
    MINERS,
    Estimator,
    HybridSetup,
    exchange_disguised,
    hybrid_id3,
)
from protocols.primitives.dot_product import METHODS
from protocols.primitives.record_alignment import align_records

__all__ = [
    "COINS_OS",
    "COINS_SEEDED",
    "COIN_SEED_KEY",
    "DEFAULT_PREDICTIONS",
    "GROUPINGS",
    "PARTY_GROUPS",
    "SAVED_TREE",
    "TABLE_GROUPS",
    "TREES",
    "TrainingParams",
    "check",
    "classify_party",
    "make_groups",
    "party_codes",
    "party_coins",
    "run",
    "serve_classify",
    "table_groups",
]

log = logging.getLogger("mpc.hybrid")

#: the trees every run builds, in order: (mode, tag prefix)
TREES = (
    ("randomization-only", "hybrid/rand"),
    ("hybrid", "hybrid/hybrid"),
    ("smc-only", "hybrid/smc"),
)
#: the tree a saved model keeps
SAVED_TREE = "hybrid"

#: the key of a party's coin seed in its own private input file (never in the deployment file)
COIN_SEED_KEY = "coin_seed"
#: where a party's randomized-response coins came from, as its report says
COINS_OS, COINS_SEEDED = "os", "seeded (private)"


#: the readings of the number of groups ``g`` (``--grouping``; the deployment's ``grouping``):
#: ``table`` — the paper's: the whole table's ``t`` columns (the class among them) dealt into
#: ``g`` groups, ``1 <= g <= t``; ``party`` — each party's own columns dealt into ``g`` groups
GROUPINGS = ("table", "party")
TABLE_GROUPS, PARTY_GROUPS = GROUPINGS


def _groups(columns: Sequence[str], g: int, rng: np.random.Generator) -> list[list[str]]:
    """``columns`` dealt at random into ``min(g, len(columns))`` non-empty groups."""
    g = min(g, len(columns))
    order = [columns[i] for i in rng.permutation(len(columns))]
    groups: list[list[str]] = [[] for _ in range(g)]
    for i, a in enumerate(order):
        groups[i % g].append(a)
    return [sorted(gr, key=list(columns).index) for gr in groups]


def table_groups(
    alice: Sequence[str], bob: Sequence[str], class_name: str, groups: int, seed: int
) -> list[list[str]]:
    """The paper's ``g`` groups (Section 4): the ``t`` columns of the whole table (Alice's,
    Bob's and the class) dealt at random, with the public ``seed``, into ``g = groups``
    non-empty groups whose sizes differ by at most one; ``1 <= g <= t``."""
    columns = [*alice, *bob, class_name]
    if not 1 <= groups <= len(columns):
        raise ConfigError(
            f"--groups {groups}: the paper's number of groups g is between 1 and t = "
            f"{len(columns)}, the table's columns (its {len(columns) - 1} attributes and the "
            "class); give such a g, or --grouping party for g groups per party"
        )
    return _groups(columns, groups, np.random.default_rng(seed + 1))


def make_groups(
    alice: Sequence[str],
    bob: Sequence[str],
    class_name: str,
    groups: int,
    seed: int,
    *,
    grouping: str = TABLE_GROUPS,
) -> dict[str, list[list[str]]]:
    """Alice's and Bob's randomization (coin) groups, dealt at random with the public
    ``seed``. ``grouping = "table"`` (the paper's reading): each party's groups are its parts
    of the whole table's ``groups`` groups (:func:`table_groups`), in the table groups' order;
    a table group with columns of both parties gives each party a group, each with its own
    coin. ``grouping = "party"``: each party's columns (Bob's with the class) dealt into
    ``min(groups, its columns)`` groups."""
    if grouping not in GROUPINGS:
        raise ConfigError(f"--grouping must be one of {', '.join(GROUPINGS)}, got {grouping!r}")
    if grouping == PARTY_GROUPS:
        if groups < 1:
            raise ConfigError(f"--groups must be at least 1, got {groups}")
        rng = np.random.default_rng(seed + 1)
        return {
            ALICE: _groups(list(alice), groups, rng),
            BOB: _groups([*bob, class_name], groups, rng),
        }
    whole = table_groups(alice, bob, class_name, groups, seed)
    mine = {ALICE: set(alice), BOB: {*bob, class_name}}
    return {
        p: [part for g in whole if (part := [a for a in g if a in mine[p]])] for p in (ALICE, BOB)
    }


def party_codes(setup: HybridSetup, table: Any, party: str) -> np.ndarray:
    """``party``'s true columns as value positions in the setup's domains."""
    cols = setup.columns_of(party)
    out = np.empty((table.n_rows, len(cols)), dtype=np.int64)
    for j, a in enumerate(cols):
        values = table.target if a == setup.class_name else table.column(a)
        index = {v: i for i, v in enumerate(setup.domains[a])}
        out[:, j] = [index[str(v)] for v in values]
    return out


def party_coins(data: dict[str, Any], me: OwnParty) -> tuple[np.random.Generator | None, str]:
    """Where this party's randomized-response coins come from: its own private input file's
    ``coin_seed`` when there is one (a reproducible experiment), else the OS (``None``).
    Returns the generator for :func:`protocols.hybrid.hybrid_id3.exchange_disguised` and the label
    the party reports (:data:`COINS_OS` or :data:`COINS_SEEDED`; never the seed itself)."""
    rng = private_seed(data, COIN_SEED_KEY, me, "its coins and undo its disguise")
    return rng, COINS_OS if rng is None else COINS_SEEDED


# ----------------------------------------------------------------------------- the party


@dataclass(frozen=True)
class TrainingParams:
    """The public parameters of a training run, from the deployment file."""

    class_name: str
    columns: dict[str, tuple[str, ...]]
    groups: dict[str, list[list[str]]]
    theta: float
    code: str
    window: int
    method: str
    max_depth: int | None
    bins: int
    grouping: str = TABLE_GROUPS
    #: the randomization-only baseline's readings
    #: (:data:`protocols.hybrid.hybrid_id3.ESTIMATE_READINGS`,
    #: :data:`protocols.hybrid.hybrid_id3.MINERS`)
    baseline_estimates: str = "clipped"
    baseline_miner: str = "both"

    @property
    def attributes(self) -> list[tuple[str, str]]:
        """``(name, owner)`` in tie order: Alice's columns, then Bob's."""
        return [(a, p) for p in (ALICE, BOB) for a in self.columns[p]]

    def public(self) -> dict[str, Any]:
        """Everything both parties must read alike (compared by digest before training)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_config(cls, cfg: DeploymentConfig) -> TrainingParams:
        p = cfg.params
        roles = {q.role: q for q in cfg.parties}
        for role in (ALICE, BOB):
            q = roles.get(role)
            if q is None or q.name != role:
                raise ConfigError(
                    f"{cfg.path}: Hybrid-ID3 needs parties named alice and bob (roles alike)"
                )
            if not q.columns:
                raise ConfigError(
                    f"{cfg.path}: party {role!r} lists no `columns`; the deployment must name "
                    "each party's attributes (they are public)"
                )
        columns = {role: tuple(roles[role].columns) for role in (ALICE, BOB)}
        class_name = p.get("class")
        if not isinstance(class_name, str) or not class_name:
            raise ConfigError(f"{cfg.path}: protocol.params.class must name the class column")
        try:
            raw_groups = p.get("groups", 1)
            grouping = str(p.get("grouping", TABLE_GROUPS))
            if grouping not in GROUPINGS:
                raise ConfigError(
                    f"{cfg.path}: protocol.params.grouping must be one of "
                    f"{', '.join(GROUPINGS)}, got {grouping!r}"
                )
            if isinstance(raw_groups, int) and not isinstance(raw_groups, bool):
                groups = make_groups(
                    columns[ALICE], columns[BOB], class_name, raw_groups,
                    int(p.get("seed", 0)), grouping=grouping,
                )  # fmt: skip
            else:
                doc = json.loads(str(raw_groups))
                groups = {str(k): [[str(a) for a in g] for g in v] for k, v in doc.items()}
            theta, window = float(p.get("theta", 0.7)), int(p.get("window", 3))
            max_depth, bins = p.get("max_depth"), int(p.get("bins", 4))
            if max_depth is not None and (int(max_depth) < 1 or isinstance(max_depth, bool)):
                raise ValueError(
                    f"max_depth must be at least 1 (leave it out for no limit), got {max_depth}"
                )
            max_depth = None if max_depth is None else int(max_depth)
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{cfg.path}: malformed protocol.params ({exc})") from None
        method, code = str(p.get("method", "dealer")), str(p.get("code", "paired"))
        if method not in METHODS:
            raise ConfigError(f"{cfg.path}: protocol.params.method must be one of {list(METHODS)}")
        estimates = str(p.get("baseline_estimates", "clipped"))
        miner = str(p.get("baseline_miner", "both"))
        if estimates not in ESTIMATE_READINGS or miner not in MINERS:
            raise ConfigError(
                f"{cfg.path}: protocol.params.baseline_estimates must be one of "
                f"{list(ESTIMATE_READINGS)} and baseline_miner one of {list(MINERS)}"
            )
        return cls(
            class_name, columns, groups, theta, code, window, method, max_depth, bins, grouping,
            estimates, miner,
        )  # fmt: skip


def _training_input(cfg: DeploymentConfig, me: OwnParty) -> Any:
    """Alice's or Bob's own file (Bob's with the class), its warning and its private extras."""
    tp = TrainingParams.from_config(cfg)
    return read_own_file(
        me, class_column=tp.class_name if me.role == BOB else None, columns=tp.columns[me.role]
    )


def _classify_input(me: OwnParty) -> tuple[HybridPart, Any, str | None]:
    """Alice's or Bob's saved part and the new records it classifies, read with its columns."""
    part = _load_part(me)
    reader = dataclasses.replace(me, nominal=part.nominal, continuous=part.continuous)
    own, warning = read_own_table(reader, class_column=None, columns=part.own_attributes)
    return part, own, warning


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """Alice's or Bob's own input, read and checked before it waits for anyone (the run finds
    it read): its file with its columns and ids, or its saved model part and the new records
    it classifies with it. The dealer has none."""
    if me.name != me.role or me.role not in (ALICE, BOB, DEALER):
        raise ConfigError(f"Hybrid-ID3's parties are alice, bob and dealer, not {me.name!r}")
    if me.role == DEALER:
        return
    if cfg.protocol != "hybrid-id3" and me.model is None:
        raise ConfigError(
            f"party {me.name!r}: {cfg.protocol} classifies with a saved model part; give "
            "--model FILE (or a `model` entry)"
        )
    if me.model is not None:
        _classify_input(me)
    else:
        _training_input(cfg, me)


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    """One party of ``hybrid-id3`` (and of ``hybrid-id3-classify``): train, or classify with
    a saved model part when Alice and Bob are started with one (``--model``)."""
    if me.name != me.role or me.role not in (ALICE, BOB, DEALER):
        raise ConfigError(f"Hybrid-ID3's parties are alice, bob and dealer, not {me.name!r}")
    classify_only = cfg.protocol != "hybrid-id3"
    if me.role == DEALER:
        if await agree_mode(party, None) == CLASSIFY:
            return await serve_classify(party, cfg)
        if classify_only:
            raise ConfigError(f"{cfg.path}: a {cfg.protocol} deployment classifies only")
        smc_trees = [prefix for mode, prefix in TREES if mode != "randomization-only"]
        method = str(cfg.params.get("method", "dealer"))
        return {"batches": await serve_helper(party, smc_trees, method)}
    if classify_only and me.model is None:
        raise ConfigError(
            f"party {me.name!r}: {cfg.protocol} classifies with a saved model part; give "
            "--model FILE (or a `model` entry)"
        )
    if await agree_mode(party, CLASSIFY if me.model is not None else TRAIN) == CLASSIFY:
        return await classify_party(party, cfg, me)
    return await _train(party, cfg, me)


async def _train(party: Party, cfg: DeploymentConfig, me: OwnParty) -> dict[str, Any]:
    """Steps 2-5 of the module docstring at Alice or Bob; returns the party's report: the
    three trees and their costs, where its coins came from, the saved model's id and path."""
    tp = TrainingParams.from_config(cfg)
    with party.phase("hybrid/input"):
        own, warning, private = _training_input(cfg, me)
    if warning:
        log.warning("%s: %s", me.name, warning)
    alignment = await align_records(Sites(party, [ALICE, BOB]).as_party(), list(own.ids))
    table = own.table.subset(alignment.order)
    discretizer = Discretizer.fit(table, tp.bins) if "continuous" in table.kinds else None
    binned = discretizer.transform(table) if discretizer else table
    domains = {a: sorted({str(v) for v in binned.column(a)}) for a in binned.attributes}
    if me.role == BOB:
        domains[tp.class_name] = sorted({str(v) for v in binned.target})
    setup = await agree_setup(
        party, attributes=tp.attributes, class_name=tp.class_name, groups=tp.groups,
        theta=tp.theta, code=tp.code, domains=domains, public=tp.public(),
    )  # fmt: skip
    codes = party_codes(setup, binned, me.role)
    rng, coins = party_coins(private, me)
    view = await exchange_disguised(party, setup, codes, rng=rng, draw_order=alignment.order)
    estimator = Estimator(setup, me.role, codes, view)
    out: dict[str, Any] = {"coins": coins, "rows": int(codes.shape[0]), "warning": warning}
    for mode, prefix in TREES:
        started = time.perf_counter()
        dot: Any = None
        if mode != "randomization-only":
            dot = DotSession(tp.method, prefix)
        res = await hybrid_id3(
            party, setup, estimator, codes, mode=mode, window=tp.window, dot=dot,
            max_depth=tp.max_depth, tag=prefix, estimates=tp.baseline_estimates,
            miner=tp.baseline_miner,
        )  # fmt: skip
        if dot is not None:
            await dot.close(party)
        out[mode] = {
            "tree": res.tree,
            "nodes": res.nodes,
            "dot_products": res.dot_products,
            "smc_gains": res.smc_gains,
            "gain_computations": res.gain_computations,
            "smc_batches": res.smc_batches,
            "splits": res.log,
            "train_s": round(time.perf_counter() - started, 3),
        }
    body = part_body(
        me.role,
        setup=setup,
        tree=out[SAVED_TREE]["tree"],
        columns=list(zip(table.attributes, table.kinds, strict=True)),
        discretizer=discretizer,
        training={
            "tree": SAVED_TREE, "rows": int(codes.shape[0]), "theta": tp.theta,
            "window": tp.window, "code": tp.code, "groups": tp.groups, "grouping": tp.grouping,
            "max_depth": tp.max_depth, "bins": tp.bins,
        },
    )  # fmt: skip
    model_id, parts, made = await bind_parts(party, body)
    if me.model_out is not None:
        write_model(me.model_out, SavedModel(LEARNER, me.role, model_id, body, parts, made.opening))
        log.info("%s: wrote its part of model %s to %s", me.name, model_id, me.model_out)
    out["model"] = {
        "model_id": model_id,
        "path": None if me.model_out is None else str(me.model_out),
    }
    return out


# ----------------------------------------------------------------------------- classify

#: where the deliverer writes the predictions when it is given no path
DEFAULT_PREDICTIONS = Path("predictions.csv")


def _load_part(me: OwnParty) -> HybridPart:
    """This party's model part, or an :class:`InputError` whose public line (for the peers)
    says what is wrong without the file's path."""
    if me.model is None:
        raise ConfigError(f"party {me.name!r}: no model part to classify with; give --model")
    path = me.model
    try:
        return me.inputs.get(("model", path, me.role), lambda: load_part(path, me.role))
    except ModelError as exc:
        public = str(exc).replace(f"model file {me.model}", "its model file")
        raise InputError(f"{me.name}: {exc}", public=f"{me.name}: {public}") from None


async def classify_party(party: Party, cfg: DeploymentConfig, me: OwnParty) -> dict[str, Any]:
    """Alice's or Bob's side of a classification run (the module docstring's steps 1-3)."""
    method = str(cfg.params.get("method", "dealer"))
    deliver_to = str(cfg.params.get("deliver_to", BOB))
    if deliver_to not in (ALICE, BOB):
        raise ConfigError(
            f"{cfg.path}: protocol.params.deliver_to must be alice or bob, got {deliver_to!r}"
        )
    with party.phase("hybrid-classify/input"):
        part, own, warning = _classify_input(me)
    await check_parts(party, part.model_id, part.parts)
    if warning:
        log.warning("%s: %s", me.name, warning)
    alignment = await align_records(Sites(party, [ALICE, BOB]).as_party(), list(own.ids))
    table = own.table.subset(alignment.order)
    if part.discretizer is not None:
        table = part.discretizer.transform(table)
    values = {
        a: np.array([str(v) for v in table.column(a)], dtype=object) for a in table.attributes
    }
    vectors = consistent_terminals(part.tree, part.owners, me.role, values).astype(np.uint64)
    if me.role == BOB:  # w ∘ v_B: every terminal weighted by 1 + its class's index
        vectors = vectors * (terminal_classes(part.tree, part.classes) + 1).astype(np.uint64)
    labels = await classify_records(
        party, vectors, classes=part.classes, deliver_to=deliver_to, method=method
    )
    result: dict[str, Any] = {
        "records": int(alignment.n), "model_id": part.model_id, "deliver_to": deliver_to,
        "warning": warning,
    }  # fmt: skip
    if labels is not None:
        by_row = [""] * alignment.n  # back to this party's own row order
        for t, row in enumerate(alignment.order.tolist()):
            by_row[row] = labels[t]
        path = write_predictions(
            me.predictions or DEFAULT_PREDICTIONS, list(own.ids), by_row, id_column=me.id_column
        )
        log.info("%s: wrote %d predictions to %s", me.name, len(by_row), path)
        result["predictions"] = str(path.resolve())
        result["per_class"] = {c: labels.count(c) for c in part.classes}
    return result


async def serve_classify(party: Party, cfg: DeploymentConfig) -> dict[str, Any]:
    """The dealer's side of a classification run."""
    method = str(cfg.params.get("method", "dealer"))
    if method not in METHODS or METHODS[method].helper is None:
        raise ConfigError(f"{cfg.path}: method {method!r} needs no dealer")
    return {"batches": await serve_classify_dealer(party, method=method)}
