"""The ``hybrid-id3`` system: Teng & Du's Hybrid-ID3 with Alice, Bob and a commodity server
(``dealer``) as three processes, each organisation bringing its own file. What one party
process does, and the deployment file it reads, is in :mod:`parties.programs.hybrid`; this module
is the system's launcher side: its options, its plan and its audit.

``mpc run hybrid-id3`` plays every organisation on one machine: it reads a named dataset
(``--dataset``) or any CSV file (``--csv FILE --class COL``, with ``--id``, ``--delimiter``,
``--nominal``, ``--continuous``), holds out a stratified test split (``--test-split``, 0 to
train on every row), divides the attributes at random into two halves of the same size (the
paper's Section 5; Bob holds the class), deals the table's columns into ``--groups``
randomization groups (``--grouping``: the paper's ``g`` groups across the whole table, or ``g``
per party; :mod:`parties.programs.hybrid`) and writes each party its own CSV file (the record id
column and its own columns; the class in Bob's), rows shuffled, with only public things in the
deployment file: each party's ``columns`` and kinds, the parameters. ``--model-out DIR`` has
each party save its part of the model (``DIR/alice.model.json``, ``DIR/bob.model.json``;
:mod:`parties.programs.hybrid_model`) for ``mpc run hybrid-id3-classify``
(:mod:`parties.systems.hybrid_classify`). Accuracy on the held-out rows and the checks that
the SMC-only tree (and with ω = every attribute, the hybrid tree) equals plain ID3 on the
joined data are the launcher's audit.

Public and private randomness. ``--seed`` seeds the public choices only: the train/test split,
the Alice/Bob attribute partition, the randomization groups and the row order of each file.
The randomized-response coins protect a party's data from the other party, so each party
draws its own from its OS CSPRNG; nothing in the deployment file says anything about them. For
reproducible experiments ``mpc run hybrid-id3 --coin-seeds A,B`` gives each party a *coin
seed* in its own private input file only (a JSON object around its CSV text, see
:mod:`parties.programs.hybrid`). A coin seed never enters the deployment file, the other party's
file or any report: each party reports only where its coins came from, ``"os"`` or
``"seeded (private)"``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
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
from parties.options import ColumnKinds, DataSource
from parties.params import AtLeast, Between, NumberList, option
from parties.programs.hybrid import (
    COIN_SEED_KEY,
    GROUPINGS,
    TABLE_GROUPS,
    TREES,
    make_groups,
    table_groups,
)
from parties.systems.base import SEMI_HONEST, Audit, Plan, System, number
from parties.vertical_csv import fresh_id_column, kind_entries, party_csv
from protocols.hybrid.hybrid_id3 import ALICE, BOB, DEALER, ESTIMATE_READINGS, MINERS, HybridSetup
from protocols.ppid3.ppid3 import check_tree_equal
from protocols.primitives.dot_product import METHODS

__all__ = [
    "Hybrid",
    "HybridOptions",
    "hybrid_plan",
    "hybrid_result",
    "hybrid_summary",
    "make_setup",
    "parse_coin_seeds",
    "split_attributes",
]


@dataclass(frozen=True)
class HybridOptions(DataSource, ColumnKinds):
    """The options of ``mpc run hybrid-id3``."""

    model_out: Path | None = option(
        None,
        flag="--model-out",
        metavar="DIR",
        output="folder",
        help="after training, each party writes its part of the model (the hybrid tree) to "
        "DIR/alice.model.json and DIR/bob.model.json",
    )
    theta: float = option(
        0.7,
        flag="--theta",
        help="probability that a record tells the truth about a group (0.7; 0.5 is refused)",
    )
    groups: int = option(
        1,
        flag="--groups",
        metavar="G",
        help="g, the number of randomization groups (1): with --grouping table, the table's t "
        "columns (its attributes and the class) dealt into g groups, 1 <= g <= t; with "
        "--grouping party, each party's own columns dealt into g groups",
    )
    grouping: str = option(
        TABLE_GROUPS,
        flag="--grouping",
        choices=GROUPINGS,
        help="how --groups is read: table (default; the paper's g groups across the whole "
        "table, each party flipping one coin for its part of a group) or party (g groups of "
        "each party's own columns)",
    )
    window: int = option(
        3, flag="--window", metavar="W", check=AtLeast(1), help="ω: candidates checked by SMC (3)"
    )
    baseline_estimates: str = option(
        "clipped",
        flag="--baseline-estimates",
        choices=ESTIMATE_READINGS,
        help="how the randomization-only baseline reads its estimates, which the paper leaves "
        "open: clipped (default: negative estimates set to 0 before the gains and the "
        "leaves), raw (kept everywhere, gains by the usual entropy formula), raw-gains (raw "
        "for the gains, clipped for the leaves), raw-leaves (clipped for the gains, raw for "
        "the leaves)",
    )
    baseline_miner: str = option(
        "both",
        flag="--baseline-miner",
        choices=MINERS,
        help="who mines for the randomization-only baseline: both (default: the average of "
        "Alice's and Bob's estimates, as Hybrid-ID3's step 4a), bob (Section 2's single miner, "
        "who holds the class in clear) or alice (a single miner who sees the class disguised)",
    )
    dot_product: str = option(
        "dealer",
        flag="--dot-product",
        choices=METHODS,
        help="the SMC dot products: "
        + "; ".join(f"{m.name}: {m.help}" for m in METHODS.values())
        + " (default dealer)",
    )
    code: str = option(
        "paired",
        flag="--code",
        choices=("paired", "onehot"),
        help="binary code of nominal values (paired: a flip maps a value to its partner)",
    )
    seed: int | None = option(
        None,
        flag="--seed",
        help="seed of the public choices only: the train/test split, the Alice/Bob attribute "
        "partition, the randomization groups and each file's row order (default 0); every "
        "party sees these choices. It never seeds the randomized-response coins: each party "
        "draws its own from its OS randomness, unless --coin-seeds gives it a private coin seed",
    )
    coin_seeds: str | None = option(
        None,
        flag="--coin-seeds",
        parse=NumberList(str),
        metavar="A,B",
        help="for reproducible experiments only: Alice's and Bob's coin seeds (two different "
        "non-negative integers). Each value goes only into that party's own private input "
        "file, never into the deployment file; whoever knows a party's coin seed can undo its "
        "disguise (default: coins from each party's OS randomness)",
    )
    test_split: float = option(
        0.2,
        flag="--test-split",
        metavar="F",
        check=Between(0, 1, True),
        help="held-out fraction for the launcher's accuracy audit (0.2; 0: train on every row)",
    )
    bins: int = option(
        4, flag="--bins", check=AtLeast(2), help="equal-frequency bins for continuous columns (4)"
    )
    max_depth: int | None = option(
        None, flag="--max-depth", check=AtLeast(1), help="stop growing at this depth"
    )


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
    ``grouping`` says, :func:`parties.programs.hybrid.make_groups`; dealt at random with the
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


def _joined(args: HybridOptions) -> tuple[Any, np.ndarray]:
    """The joined table of ``--dataset`` or ``--csv`` and its record ids (strings)."""

    if args.csv is not None:
        if not args.class_column:
            raise ConfigError("--csv needs --class COLUMN naming the class column")
        own = load_party_csv(
            args.csv,
            id_column=args.id_column,
            class_column=args.class_column,
            nominal=None if args.nominal is None else list(args.nominal),
            continuous=None if args.continuous is None else list(args.continuous),
            delimiter=args.delimiter or ",",
            missing=None if args.missing is None else list(args.missing),
        )
        ids = own.ids if args.id_column else [str(i + 1) for i in range(own.table.n_rows)]
        return own.table, np.asarray(ids, dtype=object)
    for flag, value in (
        ("--class", args.class_column),
        ("--id", args.id_column),
        ("--delimiter", args.delimiter),
        ("--nominal", args.nominal),
        ("--continuous", args.continuous),
        ("--missing", args.missing),
    ):
        if value is not None:
            raise ConfigError(f"{flag} goes with --csv; a named dataset knows its columns")
    table, extra = load_dataset(args.dataset or "weather", resolve_data_dir(args.data_dir))
    if extra is not None:  # adult ships a separate test file: pool the rows, split 80/20
        table = table.concat(extra)
    return table, np.array([str(i + 1) for i in range(table.n_rows)], dtype=object)


def hybrid_plan(args: HybridOptions) -> Plan:
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
        binned,
        alice,
        bob,
        theta=args.theta,
        groups=args.groups,
        seed=seed,
        code=args.code,
        grouping=args.grouping,
    )
    id_column = args.id_column or fresh_id_column([*train.attributes, train.class_name])
    rows = np.random.default_rng([seed, 2])  # public: only the row order of each file
    specs = []
    for p, cols in ((ALICE, alice), (BOB, bob)):
        text = party_csv(
            train_ids,
            train,
            cols,
            id_column=id_column,
            with_class=p == BOB,
            order=rows.permutation(train.n_rows),
        )
        entries: dict[str, Any] = {"id": id_column, **kind_entries(train, cols)}
        if args.model_out is not None:
            entries["model_out"] = str((Path(args.model_out) / f"{p}.model.json").resolve())
        if coin_seeds is None:
            specs.append(PartySpec(p, p, columns=tuple(cols), csv=text, entries=entries))
        else:  # the party's CSV and its coin seed, in its own private input file only
            data = {"csv": text, COIN_SEED_KEY: coin_seeds[p]}
            specs.append(PartySpec(p, p, data, tuple(cols), entries=entries))
    helper = METHODS[args.dot_product].helper
    if helper is not None:
        specs.append(PartySpec(helper, helper))
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
        "bins": args.bins,
    }
    if args.max_depth is not None:
        params["max_depth"] = args.max_depth
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
        "model_out": str(Path(args.model_out).resolve()) if args.model_out else None,
    }
    return Plan(specs, params, context)


# ----------------------------------------------------------------------------- the audit


def hybrid_result(reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:

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
        [
            f"model:     {result['model']['model_id']}: "
            + ", ".join(f"{p} {path}" for p, path in saved.items() if path)
        ]
        if any(saved.values())
        else []
    )
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


class Hybrid(System):
    name = "hybrid-id3"
    help = (
        "Teng & Du's Hybrid-ID3: multi-group randomized response shortlists ω attributes, "
        "secure dot products (commodity server or Paillier) count them exactly; each party "
        "reads its own CSV, and --model-out saves each party's part of the tree"
    )
    options = HybridOptions
    has_tree = True

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        return hybrid_plan(options)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        return hybrid_result(reports, plan)

    def summary(self, result: Any) -> list[str]:
        return hybrid_summary(result)

    def audit(self, result: Any) -> Audit:
        method = str(result.get("method"))
        return Audit(
            trust=METHODS[method].trust if method in METHODS else SEMI_HONEST,
            tree=result["tree"],
            sites=("alice", "bob"),
            class_site="bob",
            accuracy=number(result.get("accuracy")),
        )
