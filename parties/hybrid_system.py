"""The ``hybrid-id3`` system: Teng & Du's Hybrid-ID3 with Alice, Bob and a commodity server
(``dealer``) as three processes.

The launcher loads the dataset, discretises continuous columns (equal-frequency bins learned on
the training rows), holds out a stratified test split, divides the attributes at random into two
halves of the same size (Alice's and Bob's, as in the paper's Section 5; Bob holds the class),
splits each party's columns into ``--groups`` randomization groups, and writes each party its
own columns only. The parties then:

1. exchange disguised tables (multi-group randomized response with ``--theta``);
2. build the randomization-only tree (no SMC), the hybrid tree (window ``--window``) and the
   SMC-only tree (window = all), in that order, every SMC count a secure dot product.

Both parties hold every tree (they are the paper's output); accuracy on the held-out rows is the
launcher's audit (classification is not part of Teng & Du's protocol), as is the check that the
SMC-only tree equals plain ID3 on the joined data.

Public and private randomness. ``--seed`` seeds the public choices only: the train/test split,
the Alice/Bob attribute partition and the randomization groups (the partition and the groups
are in the deployment file that every party reads). The randomized-response coins protect a
party's data from the other party, so each party draws its own from its OS CSPRNG; nothing in
the deployment file says anything about them. For reproducible experiments a party may take a
*coin seed* from its own private input file (``coin_seed`` in ``data/<name>.json``; ``mpc run
hybrid-id3 --coin-seeds A,B`` writes Alice's value into Alice's file and Bob's into Bob's). A
coin seed never enters the deployment file, the other party's file or any report: each party
reports only where its coins came from, ``"os"`` or ``"seeded (private)"``.
"""

from __future__ import annotations

import argparse
import json
import logging
import numbers
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.config import DeploymentConfig, PartyConfig
from mpc.errors import ConfigError, ProtocolError
from mpc.launcher import PartySpec
from mpc.runtime import Party
from protocols.hybrid_id3 import ALICE, BOB, DEALER, HybridSetup

__all__ = [
    "COINS_OS",
    "COINS_SEEDED",
    "COIN_SEED_KEY",
    "TREES",
    "hybrid_args",
    "hybrid_plan",
    "hybrid_result",
    "hybrid_run",
    "hybrid_summary",
    "make_setup",
    "parse_coin_seeds",
    "party_coins",
    "split_attributes",
]

log = logging.getLogger("mpc.hybrid")

#: the trees every run builds, in order: (mode, tag prefix)
TREES = (
    ("randomization-only", "hybrid/rand"),
    ("hybrid", "hybrid/hybrid"),
    ("smc-only", "hybrid/smc"),
)

#: the key of a party's coin seed in its own private input file (never in the deployment file)
COIN_SEED_KEY = "coin_seed"
#: where a party's randomized-response coins came from, as its report says
COINS_OS, COINS_SEEDED = "os", "seeded (private)"


def hybrid_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dataset", metavar="NAME", default=None, help="dataset (default: the weather table)"
    )
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument(
        "--theta",
        type=float,
        default=0.7,
        help="probability that a record tells the truth about a group (0.7; 0.5 is refused)",
    )
    p.add_argument(
        "--groups", type=int, default=1, metavar="G", help="randomization groups per party (1)"
    )
    p.add_argument(
        "--window", type=int, default=3, metavar="W", help="ω: candidates checked by SMC (3)"
    )
    p.add_argument(
        "--dot-product",
        choices=("dealer", "paillier"),
        default="dealer",
        help="SMC dot products: the commodity server (default) or Paillier (small tables only)",
    )
    p.add_argument(
        "--code",
        choices=("paired", "onehot"),
        default="paired",
        help="binary code of nominal values (paired: a flip maps a value to its partner)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the public choices only: the train/test split, the Alice/Bob attribute "
        "partition and the randomization groups (default 0); every party sees these choices. "
        "It never seeds the randomized-response coins: each party draws its own from its OS "
        "randomness, unless --coin-seeds gives it a private coin seed",
    )
    p.add_argument(
        "--coin-seeds",
        default=None,
        metavar="A,B",
        help="for reproducible experiments only: Alice's and Bob's coin seeds (two different "
        "non-negative integers). Each value goes only into that party's own private input "
        "file, never into the deployment file; whoever knows a party's coin seed can undo its "
        "disguise (default: coins from each party's OS randomness)",
    )
    p.add_argument(
        "--test-split", type=float, default=0.2, metavar="F", help="held-out fraction (0.2)"
    )
    p.add_argument(
        "--bins", type=int, default=4, help="equal-frequency bins for continuous columns (4)"
    )
    p.add_argument("--max-depth", type=int, default=None, help="stop growing at this depth")


def split_attributes(attributes: Sequence[str], seed: int) -> tuple[list[str], list[str]]:
    """The paper's partition: the attributes divided at random into two halves of the same
    size (Alice gets the smaller half when the count is odd), each kept in column order.
    ``seed`` is the run's public seed: the partition is public."""
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(len(attributes)))
    half = len(attributes) // 2
    alice = sorted(order[:half])
    bob = sorted(order[half:])
    return [attributes[i] for i in alice], [attributes[i] for i in bob]


def _groups(columns: Sequence[str], g: int, rng: np.random.Generator) -> list[list[str]]:
    """``columns`` dealt at random into ``min(g, len(columns))`` non-empty groups."""
    g = min(g, len(columns))
    order = [columns[i] for i in rng.permutation(len(columns))]
    groups: list[list[str]] = [[] for _ in range(g)]
    for i, a in enumerate(order):
        groups[i % g].append(a)
    return [sorted(gr, key=list(columns).index) for gr in groups]


def make_setup(
    table: Any,
    alice: Sequence[str],
    bob: Sequence[str],
    *,
    theta: float,
    groups: int,
    seed: int,
    code: str = "paired",
) -> HybridSetup:
    """The public setup for a training table: domains (the values seen in training, sorted as
    plain ID3 sorts them), Alice's and Bob's randomization groups (Bob's columns include the
    class, dealt at random with the public ``seed``), θ and the code."""
    if groups < 1:
        raise ConfigError(f"--groups must be at least 1, got {groups}")
    domains = {a: sorted({str(v) for v in table.column(a)}) for a in (*alice, *bob)}
    domains[table.class_name] = sorted({str(v) for v in table.target})
    rng = np.random.default_rng(seed + 1)
    return HybridSetup(
        attributes=tuple([(a, ALICE) for a in alice] + [(a, BOB) for a in bob]),
        class_name=table.class_name,
        domains=domains,
        groups={
            ALICE: _groups(list(alice), groups, rng),
            BOB: _groups([*bob, table.class_name], groups, rng),
        },
        theta=theta,
        code=code,
    )


def party_codes(setup: HybridSetup, table: Any, party: str) -> np.ndarray:
    """``party``'s true columns as value positions in the setup's domains."""
    cols = setup.columns_of(party)
    out = np.empty((table.n_rows, len(cols)), dtype=np.int64)
    for j, a in enumerate(cols):
        values = table.target if a == setup.class_name else table.column(a)
        index = {v: i for i, v in enumerate(setup.domains[a])}
        out[:, j] = [index[str(v)] for v in values]
    return out


def parse_coin_seeds(text: str | None) -> dict[str, int] | None:
    """``--coin-seeds A,B``: Alice's and Bob's private coin seeds, or ``None`` (OS coins).

    The two values must differ: with equal seeds each party could rebuild the other's coins
    from its own."""
    if text is None:
        return None
    parts = [t.strip() for t in text.split(",")]
    try:
        values = [int(t) for t in parts]
    except ValueError:
        values = []
    if len(values) != 2 or any(v < 0 for v in values):
        raise ConfigError(
            f"--coin-seeds: expected two non-negative integers A,B (Alice's, then Bob's), "
            f"got {text!r}"
        )
    if values[0] == values[1]:
        raise ConfigError(
            "--coin-seeds: Alice's and Bob's coin seeds are equal, so each party could rebuild "
            "the other's coins from its own; give two different values"
        )
    return {ALICE: values[0], BOB: values[1]}


def party_coins(data: dict[str, Any], me: PartyConfig) -> tuple[np.random.Generator | None, str]:
    """Where this party's randomized-response coins come from: its own private input file's
    ``coin_seed`` when there is one (a reproducible experiment), else the OS (``None``).
    Returns the generator for :func:`protocols.hybrid_id3.exchange_disguised` and the label
    the party reports (:data:`COINS_OS` or :data:`COINS_SEEDED`; never the seed itself)."""
    if COIN_SEED_KEY not in data:
        return None, COINS_OS
    seed = data[COIN_SEED_KEY]
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        # the message names the kind of value only: a report or log must not hold a coin seed
        got = "a negative integer" if isinstance(seed, numbers.Integral) else type(seed).__name__
        raise ConfigError(
            f"party {me.name!r}: data file {me.data}: `{COIN_SEED_KEY}` must be a non-negative "
            f"integer, got {got}"
        )
    if me.data is not None and me.data.stat().st_mode & 0o077:
        log.warning(
            "%s: coin seed read from %s, which other users of this host can read (mode %o); "
            "whoever reads it can undo this party's disguise",
            me.name,
            me.data,
            me.data.stat().st_mode & 0o777,
        )
    return np.random.default_rng(int(seed)), COINS_SEEDED


def hybrid_plan(args: argparse.Namespace) -> Any:
    from mpc.datasets import Discretizer, load_dataset, resolve_data_dir
    from mpc.evaluation import train_test_split
    from mpc.id3 import ID3Classifier
    from parties.systems import Plan

    if args.window < 1:
        raise ConfigError(f"--window must be at least 1, got {args.window}")
    if args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    if args.max_depth is not None and args.max_depth < 1:
        raise ConfigError(f"--max-depth must be at least 1, got {args.max_depth}")
    coin_seeds = parse_coin_seeds(args.coin_seeds)
    seed = 0 if args.seed is None else args.seed  # public choices only, never the coins
    table, extra = load_dataset(args.dataset or "weather", resolve_data_dir(args.data_dir))
    if extra is not None:  # adult ships a separate test file: pool the rows, split 80/20
        table = _concat(table, extra)
    tr, te = train_test_split(table.target, args.test_split, seed=seed)
    train, test = table.subset(tr), table.subset(te)
    discretizer = None
    if "continuous" in train.kinds:
        discretizer = Discretizer.fit(train, args.bins)
        train, test = discretizer.transform(train), discretizer.transform(test)
    alice, bob = split_attributes(list(train.attributes), seed)
    setup = make_setup(
        train, alice, bob, theta=args.theta, groups=args.groups, seed=seed, code=args.code
    )
    specs = []
    for p in (ALICE, BOB):
        data: dict[str, Any] = {"codes": party_codes(setup, train, p).tolist()}
        if coin_seeds is not None:  # into this party's own private input file only
            data[COIN_SEED_KEY] = coin_seeds[p]
        specs.append(PartySpec(p, p, data, tuple(a for a, o in setup.attributes if o == p)))
    if args.dot_product == "dealer":
        specs.append(PartySpec(DEALER, DEALER, {}))
    started = time.perf_counter()
    plain = ID3Classifier(max_depth=args.max_depth)
    plain.fit(train, attribute_order=setup.names, sites={a: 0 for a in alice} | {a: 1 for a in bob})
    params = {
        "setup": json.dumps(setup.to_dict()),
        "window": args.window,
        "method": args.dot_product,
        "max_depth": args.max_depth or 0,
        "rows": train.n_rows,
    }
    context = {
        "dataset": train.name,
        "train": train,
        "test": test,
        "plain": plain,
        "plain_s": time.perf_counter() - started,
        "setup": setup,
        "seed": seed,
        "discretizer": discretizer.to_dict() if discretizer else None,
    }
    return Plan(specs, params, context)


def _concat(a: Any, b: Any) -> Any:
    from mpc.datasets import Table

    return Table(
        name=a.name,
        attributes=tuple(a.attributes),
        kinds=tuple(a.kinds),
        columns=tuple(np.concatenate([x, y]) for x, y in zip(a.columns, b.columns, strict=True)),
        target=np.concatenate([a.target, b.target]),
        class_name=a.class_name,
        source=f"{a.source} + {b.source}",
    )


def _json_param(params: dict[str, Any], key: str) -> Any:
    try:
        return json.loads(str(params[key]))
    except (KeyError, json.JSONDecodeError) as exc:
        raise ConfigError(f"protocol.params.{key}: expected a JSON document ({exc})") from None


async def hybrid_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from parties.systems import load_party_data
    from protocols.hybrid_id3 import (
        DealerDot,
        Estimator,
        exchange_disguised,
        hybrid_id3,
        paillier_dot,
        serve_dealer,
    )

    p = cfg.params
    setup = HybridSetup.from_dict(_json_param(p, "setup"))
    method = str(p["method"])
    if me.role == DEALER:
        smc_trees = [prefix for mode, prefix in TREES if mode != "randomization-only"]
        served = await serve_dealer(party, smc_trees)
        return {"batches": served}
    data = load_party_data(me)
    codes = np.asarray(data.get("codes"), dtype=np.int64)
    want = (int(p["rows"]), len(setup.columns_of(me.role)))
    if codes.shape != want:
        raise ConfigError(f"{me.name}: data file holds a {codes.shape} table, expected {want}")
    rng, coins = party_coins(data, me)
    view = await exchange_disguised(party, setup, codes, rng=rng)
    estimator = Estimator(setup, me.role, codes, view)
    max_depth = int(p.get("max_depth", 0)) or None
    out: dict[str, Any] = {"coins": coins}
    for mode, prefix in TREES:
        started = time.perf_counter()
        dot: Any = None
        if mode != "randomization-only":
            dot = DealerDot(prefix) if method == "dealer" else paillier_dot()
        res = await hybrid_id3(
            party,
            setup,
            estimator,
            codes,
            mode=mode,
            window=int(p["window"]),
            dot=dot,
            max_depth=max_depth,
            tag=prefix,
        )
        if isinstance(dot, DealerDot):
            await dot.close(party)
        out[mode] = {
            "tree": res.tree,
            "nodes": res.nodes,
            "dot_products": res.dot_products,
            "smc_gains": res.smc_gains,
            "smc_batches": res.smc_batches,
            "splits": res.log,
            "train_s": round(time.perf_counter() - started, 3),
        }
    return out


def hybrid_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
    from mpc.evaluation import accuracy, predict_table
    from mpc.tree import depth, from_json, to_json
    from protocols.ppid3 import check_tree_equal

    ctx = plan.context
    a, b = (reports[n].get("result") or {} for n in (ALICE, BOB))
    for mode, _ in TREES:
        if mode not in a or mode not in b:
            raise ProtocolError(f"no {mode} tree in the reports of alice and bob")
        if a[mode]["tree"] != b[mode]["tree"]:
            raise ProtocolError(f"alice and bob ended with different {mode} trees")
    train, test = ctx["train"], ctx["test"]
    plain = ctx["plain"]
    acc: dict[str, float] = {}
    nodes: dict[str, int] = {}
    depths: dict[str, int] = {}
    for mode, _ in TREES:
        tree = from_json(a[mode]["tree"])
        acc[mode] = accuracy(test.target, predict_table(tree, test))
        nodes[mode] = int(a[mode]["nodes"])
        depths[mode] = depth(tree)
    hybrid_dp = int(a["hybrid"]["dot_products"])
    smc_dp = int(a["smc-only"]["dot_products"])
    if int(b["hybrid"]["dot_products"]) != hybrid_dp:
        raise ProtocolError("alice and bob counted different numbers of dot products")
    plain_json = to_json(plain.tree_)
    metrics = {n: r.get("metrics") or {} for n, r in reports.items()}
    setup: HybridSetup = ctx["setup"]
    return {
        "dataset": ctx["dataset"],
        "rows": {"train": train.n_rows, "test": test.n_rows},
        "alice": [x for x, o in setup.attributes if o == ALICE],
        "bob": [x for x, o in setup.attributes if o == BOB],
        "groups": {p: [list(g) for g in gs] for p, gs in setup.groups.items()},
        "theta": setup.theta,
        "window": int(plan.params["window"]),
        "method": plan.params["method"],
        "discretizer": ctx["discretizer"],
        "seed": ctx["seed"],
        "coins": {ALICE: a.get("coins"), BOB: b.get("coins")},
        "accuracy": acc["hybrid"],
        "randomization_only_accuracy": acc["randomization-only"],
        "smc_only_accuracy": acc["smc-only"],
        "plain_accuracy": accuracy(test.target, plain.predict(test)),
        "accuracy_gain_A": acc["hybrid"] - acc["randomization-only"],
        "smc_dot_products": hybrid_dp,
        "smc_only_dot_products": smc_dp,
        "cost_ratio": hybrid_dp / smc_dp if smc_dp else None,
        "smc_gains": int(a["hybrid"]["smc_gains"]),
        "smc_only_gains": int(a["smc-only"]["smc_gains"]),
        "cost_ratio_gains": (
            int(a["hybrid"]["smc_gains"]) / int(a["smc-only"]["smc_gains"])
            if int(a["smc-only"]["smc_gains"])
            else None
        ),
        "smc_only_identical_to_plain": check_tree_equal(a["smc-only"]["tree"], plain_json),
        "nodes": nodes,
        "depth": depths,
        "train_s": {m: a[m]["train_s"] for m, _ in TREES},
        "dealer_batches": (reports.get(DEALER, {}).get("result") or {}).get("batches"),
        "bytes_sent": {n: int(m.get("bytes_sent", 0)) for n, m in metrics.items()},
        "tree": a["hybrid"]["tree"],
        "randomization_only_tree": a["randomization-only"]["tree"],
        "smc_only_tree": a["smc-only"]["tree"],
        "plain_tree": plain_json,
    }


def hybrid_summary(result: dict[str, Any]) -> list[str]:
    from mpc.tree import from_json, render

    groups = "; ".join(
        f"{p}: " + " | ".join(", ".join(g) for g in gs) for p, gs in result["groups"].items()
    )
    return [
        f"dataset:   {result['dataset']} ({result['rows']['train']} training rows, "
        f"{result['rows']['test']} test rows)",
        f"alice:     {', '.join(result['alice'])}",
        f"bob:       {', '.join(result['bob'])} (and the class)",
        f"groups:    {groups}",
        f"theta:     {result['theta']}   window: {result['window']}   "
        f"dot products: {result['method']}",
        f"seed:      {result['seed']} (split, partition, groups)   coins: "
        + ", ".join(f"{p} {c}" for p, c in result["coins"].items()),
        f"accuracy:  hybrid {result['accuracy']:.4f}, randomization-only "
        f"{result['randomization_only_accuracy']:.4f}, SMC-only {result['smc_only_accuracy']:.4f}"
        f" (plain ID3 {result['plain_accuracy']:.4f}); A = {result['accuracy_gain_A']:+.4f}",
        f"SMC cost:  {result['smc_dot_products']} dot products (hybrid) / "
        f"{result['smc_only_dot_products']} (SMC-only) = C {result['cost_ratio']:.1%}; "
        f"exact gains {result['smc_gains']} / {result['smc_only_gains']} = "
        f"{result['cost_ratio_gains']:.1%}",
        "nodes:     "
        + ", ".join(f"{m} {n} (depth {result['depth'][m]})" for m, n in result["nodes"].items()),
        f"SMC-only tree == plain ID3: {result['smc_only_identical_to_plain']}",
        "",
        "hybrid tree:",
        *render(from_json(result["tree"])).splitlines()[:40],
    ]
