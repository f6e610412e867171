"""The ``hybrid-id3`` system: Teng & Du's Hybrid-ID3 with Alice, Bob and a commodity server
(``dealer``) as three processes, each organisation bringing its own file. What one party
process does, and the deployment file it reads, is in :mod:`parties.hybrid_party`; this module
is the system's launcher side: its options, its plan and its audit.

``mpc run hybrid-id3`` plays every organisation on one machine: it reads a named dataset
(``--dataset``) or any CSV file (``--csv FILE --class COL``, with ``--id``, ``--delimiter``,
``--nominal``, ``--continuous``), holds out a stratified test split (``--test-split``, 0 to
train on every row), divides the attributes at random into two halves of the same size (the
paper's Section 5; Bob holds the class), deals the table's columns into ``--groups``
randomization groups (``--grouping``: the paper's ``g`` groups across the whole table, or ``g``
per party; :mod:`parties.hybrid_party`) and writes each party its own CSV file (the record id
column and its own columns; the class in Bob's), rows shuffled, with only public things in the
deployment file: each party's ``columns`` and kinds, the parameters. ``--model-out DIR`` has
each party save its part of the model (``DIR/alice.model.json``, ``DIR/bob.model.json``;
:mod:`parties.hybrid_model`) for ``mpc run hybrid-id3-classify``
(:mod:`parties.hybrid_classify_system`). Accuracy on the held-out rows and the checks that
the SMC-only tree (and with ω = every attribute, the hybrid tree) equals plain ID3 on the
joined data are the launcher's audit.

Public and private randomness. ``--seed`` seeds the public choices only: the train/test split,
the Alice/Bob attribute partition, the randomization groups and the row order of each file.
The randomized-response coins protect a party's data from the other party, so each party
draws its own from its OS CSPRNG; nothing in the deployment file says anything about them. For
reproducible experiments ``mpc run hybrid-id3 --coin-seeds A,B`` gives each party a *coin
seed* in its own private input file only (a JSON object around its CSV text, see
:mod:`parties.hybrid_party`). A coin seed never enters the deployment file, the other party's
file or any report: each party reports only where its coins came from, ``"os"`` or
``"seeded (private)"``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import (
    Discretizer,
    load_dataset,
    load_party_csv,
    resolve_data_dir,
)
from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.evaluation import accuracy, predict_table, train_test_split
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import depth, from_json, render, to_json
from parties.hybrid_party import (
    COIN_SEED_KEY,
    COINS_OS,
    COINS_SEEDED,
    GROUPINGS,
    TABLE_GROUPS,
    TREES,
    TrainingParams,
    hybrid_run,
    make_groups,
    party_codes,
    party_coins,
    table_groups,
)
from parties.vertical_csv import fresh_id_column, kind_entries, party_csv
from protocols.hybrid.hybrid_id3 import ALICE, BOB, DEALER, ESTIMATE_READINGS, MINERS, HybridSetup
from protocols.ppid3.ppid3 import check_tree_equal
from protocols.primitives.dot_product import METHODS

__all__ = [
    "COINS_OS",
    "COINS_SEEDED",
    "COIN_SEED_KEY",
    "GROUPINGS",
    "TREES",
    "TrainingParams",
    "hybrid_args",
    "hybrid_plan",
    "hybrid_result",
    "hybrid_run",
    "hybrid_summary",
    "make_groups",
    "make_setup",
    "parse_coin_seeds",
    "party_codes",
    "party_coins",
    "split_attributes",
]


def hybrid_args(p: argparse.ArgumentParser) -> None:
    from parties.options import NumberList

    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--dataset", metavar="NAME", default=None, help="dataset (default: the weather table)"
    )
    src.add_argument(
        "--csv", type=Path, metavar="FILE", help="any CSV file with a header row (the joined table)"
    )
    p.add_argument("--class", dest="class_column", metavar="COLUMN", help="class column of --csv")
    p.add_argument(
        "--id",
        dest="id_column",
        metavar="COLUMN",
        help="the record id column of --csv (default: the records are numbered)",
    )
    p.add_argument("--delimiter", metavar="C", help="the field delimiter of --csv (default ,)")
    p.add_argument(
        "--nominal", metavar="COL,...", help="--csv columns read as nominal values (coded grades)"
    )
    p.add_argument("--continuous", metavar="COL,...", help="--csv columns read as numbers (binned)")
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument(
        "--model-out",
        type=Path,
        metavar="DIR",
        help="after training, each party writes its part of the model (the hybrid tree) to "
        "DIR/alice.model.json and DIR/bob.model.json",
    )
    p.add_argument(
        "--theta",
        type=float,
        default=0.7,
        help="probability that a record tells the truth about a group (0.7; 0.5 is refused)",
    )
    p.add_argument(
        "--groups",
        type=int,
        default=1,
        metavar="G",
        help="g, the number of randomization groups (1): with --grouping table, the table's t "
        "columns (its attributes and the class) dealt into g groups, 1 <= g <= t; with "
        "--grouping party, each party's own columns dealt into g groups",
    )
    p.add_argument(
        "--grouping",
        choices=GROUPINGS,
        default=TABLE_GROUPS,
        help="how --groups is read: table (default; the paper's g groups across the whole "
        "table, each party flipping one coin for its part of a group) or party (g groups of "
        "each party's own columns)",
    )
    p.add_argument(
        "--window", type=int, default=3, metavar="W", help="ω: candidates checked by SMC (3)"
    )
    p.add_argument(
        "--baseline-estimates",
        choices=ESTIMATE_READINGS,
        default="clipped",
        help="how the randomization-only baseline reads its estimates, which the paper leaves "
        "open: clipped (default: negative estimates set to 0 before the gains and the "
        "leaves), raw (kept everywhere, gains by the usual entropy formula), raw-gains (raw "
        "for the gains, clipped for the leaves), raw-leaves (clipped for the gains, raw for "
        "the leaves)",
    )
    p.add_argument(
        "--baseline-miner",
        choices=MINERS,
        default="both",
        help="who mines for the randomization-only baseline: both (default: the average of "
        "Alice's and Bob's estimates, as Hybrid-ID3's step 4a), bob (Section 2's single miner, "
        "who holds the class in clear) or alice (a single miner who sees the class disguised)",
    )
    p.add_argument(
        "--dot-product",
        choices=tuple(METHODS),
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
        "partition, the randomization groups and each file's row order (default 0); every "
        "party sees these choices. It never seeds the randomized-response coins: each party "
        "draws its own from its OS randomness, unless --coin-seeds gives it a private coin seed",
    )
    p.add_argument(
        "--coin-seeds",
        type=NumberList(str),  # checked by parse_coin_seeds, which names what is wrong
        default=None,
        metavar="A,B",
        help="for reproducible experiments only: Alice's and Bob's coin seeds (two different "
        "non-negative integers). Each value goes only into that party's own private input "
        "file, never into the deployment file; whoever knows a party's coin seed can undo its "
        "disguise (default: coins from each party's OS randomness)",
    )
    p.add_argument(
        "--test-split",
        type=float,
        default=0.2,
        metavar="F",
        help="held-out fraction for the launcher's accuracy audit (0.2; 0: train on every row)",
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


def make_setup(
    table: Any,
    alice: Sequence[str],
    bob: Sequence[str],
    *,
    theta: float,
    groups: int,
    seed: int,
    code: str = "paired",
    grouping: str = TABLE_GROUPS,
) -> HybridSetup:
    """The public setup for a training table: domains (the values seen in training, sorted as
    plain ID3 sorts them), Alice's and Bob's randomization groups (``groups`` read as
    ``grouping`` says, :func:`parties.hybrid_party.make_groups`; dealt at random with the
    public ``seed``; Bob's include the class), θ and the code."""
    dealt = make_groups(alice, bob, table.class_name, groups, seed, grouping=grouping)
    domains = {a: sorted({str(v) for v in table.column(a)}) for a in (*alice, *bob)}
    domains[table.class_name] = sorted({str(v) for v in table.target})
    return HybridSetup(
        attributes=tuple([(a, ALICE) for a in alice] + [(a, BOB) for a in bob]),
        class_name=table.class_name,
        domains=domains,
        groups=dealt,
        theta=theta,
        code=code,
    )


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


# ----------------------------------------------------------------------------- the launcher


def _column_list(text: str | None, flag: str) -> list[str] | None:
    if text is None:
        return None
    names = [c.strip() for c in text.split(",")]
    if not all(names):
        raise ConfigError(f"{flag}: expected comma-separated column names, got {text!r}")
    return names


def _joined(args: argparse.Namespace) -> tuple[Any, np.ndarray]:
    """The joined table of ``--dataset`` or ``--csv`` and its record ids (strings)."""

    if args.csv is not None:
        if not args.class_column:
            raise ConfigError("--csv needs --class COLUMN naming the class column")
        own = load_party_csv(
            args.csv,
            id_column=args.id_column,
            class_column=args.class_column,
            nominal=_column_list(args.nominal, "--nominal"),
            continuous=_column_list(args.continuous, "--continuous"),
            delimiter=args.delimiter or ",",
        )
        ids = own.ids if args.id_column else [str(i + 1) for i in range(own.table.n_rows)]
        return own.table, np.asarray(ids, dtype=object)
    for flag, value in (
        ("--class", args.class_column), ("--id", args.id_column), ("--delimiter", args.delimiter),
        ("--nominal", args.nominal), ("--continuous", args.continuous),
    ):  # fmt: skip
        if value is not None:
            raise ConfigError(f"{flag} goes with --csv; a named dataset knows its columns")
    table, extra = load_dataset(args.dataset or "weather", resolve_data_dir(args.data_dir))
    if extra is not None:  # adult ships a separate test file: pool the rows, split 80/20
        table = table.concat(extra)
    return table, np.array([str(i + 1) for i in range(table.n_rows)], dtype=object)


def hybrid_plan(args: argparse.Namespace) -> Any:
    from parties.plan import Plan

    if args.window < 1:
        raise ConfigError(f"--window must be at least 1, got {args.window}")
    if args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    if args.max_depth is not None and args.max_depth < 1:
        raise ConfigError(f"--max-depth must be at least 1, got {args.max_depth}")
    if not 0 <= args.test_split < 1:
        raise ConfigError(f"--test-split must be in [0, 1), got {args.test_split}")
    coin_seeds = parse_coin_seeds(args.coin_seeds)
    seed = 0 if args.seed is None else args.seed  # public choices only, never the coins
    table, ids = _joined(args)
    if args.test_split > 0:
        tr, te = train_test_split(table.target, args.test_split, seed=seed)
    else:
        tr, te = np.arange(table.n_rows), np.zeros(0, dtype=np.int64)
    train, test = table.subset(tr), table.subset(te)
    train_ids = ids[tr]
    alice, bob = split_attributes(list(train.attributes), seed)
    if not alice or not bob:
        raise ConfigError(
            f"{train.name}: Hybrid-ID3 needs at least 2 attributes (one per party), got "
            f"{list(train.attributes)}"
        )
    discretizer = Discretizer.fit(train, args.bins) if "continuous" in train.kinds else None
    binned = discretizer.transform(train) if discretizer else train
    binned_test = discretizer.transform(test) if discretizer else test
    setup = make_setup(
        binned, alice, bob, theta=args.theta, groups=args.groups, seed=seed, code=args.code,
        grouping=args.grouping,
    )  # fmt: skip
    id_column = args.id_column or fresh_id_column([*train.attributes, train.class_name])
    rows = np.random.default_rng([seed, 2])  # public: only the row order of each file
    specs = []
    for p, cols in ((ALICE, alice), (BOB, bob)):
        text = party_csv(
            train_ids, train, cols, id_column=id_column, with_class=p == BOB,
            order=rows.permutation(train.n_rows),
        )  # fmt: skip
        entries: dict[str, Any] = {"id": id_column, **kind_entries(train, cols)}
        if args.model_out is not None:
            entries["model_out"] = str((args.model_out / f"{p}.model.json").resolve())
        if coin_seeds is None:
            specs.append(PartySpec(p, p, columns=tuple(cols), csv=text, entries=entries))
        else:  # the party's CSV and its coin seed, in its own private input file only
            data = {"csv": text, COIN_SEED_KEY: coin_seeds[p]}
            specs.append(PartySpec(p, p, data, tuple(cols), entries=entries))
    if METHODS[args.dot_product].helper is not None:
        specs.append(PartySpec(DEALER, DEALER))
    started = time.perf_counter()
    plain = ID3Classifier(max_depth=args.max_depth)
    plain.fit(
        binned, attribute_order=setup.names, sites={a: 0 for a in alice} | {a: 1 for a in bob}
    )
    params = {
        "class": train.class_name,
        "groups": json.dumps({p: [list(g) for g in gs] for p, gs in setup.groups.items()}),
        "grouping": args.grouping,
        "theta": args.theta,
        "code": args.code,
        "window": args.window,
        "baseline_estimates": args.baseline_estimates,
        "baseline_miner": args.baseline_miner,
        "method": args.dot_product,
        "max_depth": args.max_depth or 0,
        "bins": args.bins,
    }
    context = {
        "dataset": train.name,
        "train": binned,
        "test": binned_test,
        "plain": plain,
        "plain_s": time.perf_counter() - started,
        "setup": setup,
        "grouping": args.grouping,
        "table_groups": (
            table_groups(alice, bob, train.class_name, args.groups, seed)
            if args.grouping == TABLE_GROUPS
            else None
        ),
        "seed": seed,
        "discretizer": discretizer.to_dict() if discretizer else None,
        "model_out": str(args.model_out.resolve()) if args.model_out else None,
    }
    return Plan(specs, params, context)


# ----------------------------------------------------------------------------- the audit


def hybrid_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:

    ctx = plan.context
    a, b = (reports[n].get("result") or {} for n in (ALICE, BOB))
    for mode, _ in TREES:
        if mode not in a or mode not in b:
            raise ProtocolError(f"no {mode} tree in the reports of alice and bob")
        if a[mode]["tree"] != b[mode]["tree"]:
            raise ProtocolError(f"alice and bob ended with different {mode} trees")
    if (a.get("model") or {}).get("model_id") != (b.get("model") or {}).get("model_id"):
        raise ProtocolError("alice and bob saved parts of different models")
    train, test = ctx["train"], ctx["test"]
    plain = ctx["plain"]

    def score(predicted: Any) -> float | None:
        return accuracy(test.target, predicted) if test.n_rows else None

    acc: dict[str, float | None] = {}
    nodes: dict[str, int] = {}
    depths: dict[str, int] = {}
    for mode, _ in TREES:
        tree = from_json(a[mode]["tree"])
        acc[mode] = score(predict_table(tree, test))
        nodes[mode] = int(a[mode]["nodes"])
        depths[mode] = depth(tree)
    hybrid_dp = int(a["hybrid"]["dot_products"])
    smc_dp = int(a["smc-only"]["dot_products"])
    if int(b["hybrid"]["dot_products"]) != hybrid_dp:
        raise ProtocolError("alice and bob counted different numbers of dot products")
    plain_json = to_json(plain.tree_)
    metrics = {n: r.get("metrics") or {} for n, r in reports.items()}
    setup: HybridSetup = ctx["setup"]
    gain = (
        acc["hybrid"] - acc["randomization-only"]
        if acc["hybrid"] is not None and acc["randomization-only"] is not None
        else None
    )
    smc_gains, gains = int(a["hybrid"]["smc_gains"]), int(a["hybrid"]["gain_computations"])
    return {
        "dataset": ctx["dataset"],
        "rows": {"train": train.n_rows, "test": test.n_rows},
        "alice": [x for x, o in setup.attributes if o == ALICE],
        "bob": [x for x, o in setup.attributes if o == BOB],
        "grouping": ctx["grouping"],
        "table_groups": ctx["table_groups"],
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
        "plain_accuracy": score(plain.predict(test)),
        "accuracy_gain_A": gain,
        "smc_gains": smc_gains,
        "gain_computations": gains,
        "cost_ratio_C": smc_gains / gains if gains else None,
        "smc_dot_products": hybrid_dp,
        "smc_only_dot_products": smc_dp,
        "dot_product_ratio": hybrid_dp / smc_dp if smc_dp else None,
        "smc_only_identical_to_plain": check_tree_equal(a["smc-only"]["tree"], plain_json),
        "hybrid_identical_to_plain": check_tree_equal(a["hybrid"]["tree"], plain_json),
        "nodes": nodes,
        "depth": depths,
        "train_s": {m: a[m]["train_s"] for m, _ in TREES},
        "dealer_batches": (reports.get(DEALER, {}).get("result") or {}).get("batches"),
        "bytes_sent": {n: int(m.get("bytes_sent", 0)) for n, m in metrics.items()},
        "model": {
            "model_id": (a.get("model") or {}).get("model_id"),
            "parts": {n: (r.get("model") or {}).get("path") for n, r in ((ALICE, a), (BOB, b))},
        },
        "tree": a["hybrid"]["tree"],
        "randomization_only_tree": a["randomization-only"]["tree"],
        "smc_only_tree": a["smc-only"]["tree"],
        "plain_tree": plain_json,
    }


def _fraction(x: float | None, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


def hybrid_summary(result: dict[str, Any]) -> list[str]:

    groups = "; ".join(
        f"{p}: " + " | ".join(", ".join(g) for g in gs) for p, gs in result["groups"].items()
    )
    if result["table_groups"] is not None:
        whole = " | ".join(", ".join(g) for g in result["table_groups"])
        groups = f"g = {len(result['table_groups'])} across the table: {whole}; coins: {groups}"
    else:
        groups = f"per party: {groups}"
    saved = result["model"]["parts"]
    models = (
        [f"model:     {result['model']['model_id']}: " + ", ".join(
            f"{p} {path}" for p, path in saved.items() if path)]
        if any(saved.values()) else []
    )  # fmt: skip
    accuracy = (
        f"accuracy:  hybrid {_fraction(result['accuracy'])}, randomization-only "
        f"{_fraction(result['randomization_only_accuracy'])}, SMC-only "
        f"{_fraction(result['smc_only_accuracy'])} (plain ID3 "
        f"{_fraction(result['plain_accuracy'])}); "
        f"A = {_fraction(result['accuracy_gain_A'], '+.4f')}"
        if result["rows"]["test"]
        else "accuracy:  - (no held-out rows: --test-split 0)"
    )
    return [
        f"dataset:   {result['dataset']} ({result['rows']['train']} training rows, "
        f"{result['rows']['test']} test rows)",
        f"alice:     {', '.join(result['alice'])}",
        f"bob:       {', '.join(result['bob'])} (and the class)",
        f"groups:    {groups}",
        f"theta:     {result['theta']}   window: {result['window']}   "
        f"dot products: {result['method']}",
        f"seed:      {result['seed']} (split, partition, groups, row orders)   coins: "
        + ", ".join(f"{p} {c}" for p, c in result["coins"].items()),
        accuracy,
        f"SMC cost:  C = {_fraction(result['cost_ratio_C'], '.1%')} of the hybrid tree's gain "
        f"computations by SMC ({result['smc_gains']} / {result['gain_computations']}); "
        f"dot products {result['smc_dot_products']} (hybrid) / "
        f"{result['smc_only_dot_products']} (SMC-only) = "
        f"{_fraction(result['dot_product_ratio'], '.1%')}",
        "nodes:     "
        + ", ".join(f"{m} {n} (depth {result['depth'][m]})" for m, n in result["nodes"].items()),
        f"SMC-only tree == plain ID3: {result['smc_only_identical_to_plain']}",
        *models,
        "",
        "hybrid tree:",
        *render(from_json(result["tree"])).splitlines()[:40],
    ]
