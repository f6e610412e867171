"""The ``cdtl`` system: Mancuhan & Clifton's collaborative decision tree learning with a client
process (the data owner) and a CDBS process (the cloud database server), and the baselines
cnl and cdbsl, under K-fold cross-validation.

The client's table is a named dataset (``--dataset``), which the launcher prepares and hands
to the client, or the client's own CSV file (``--csv FILE --class COL``), which the client
reads itself (:func:`~parties.own_data.read_own_table`; ``--id``, ``--delimiter``,
``--nominal``, ``--continuous`` as for every party's own file). Either way the table is
prepared alike (:mod:`parties.cdtl_tables`): rows filtered with ``--where``; with
``--dataset`` the class column chosen with ``--class`` (a continuous class split at its median
into ``low`` / ``high``); the sensitive attribute (``--sensitive``, a column of the table) and
``l`` checked. Continuous attributes stay continuous: every tree (the BDT, the subtrees,
cnl's tree) splits them by thresholds, as the paper's J48 did. A continuous sensitive
attribute, which anatomization needs nominal, is cut into ``--bins`` equal-frequency bins
(``--bin-attributes all`` bins every continuous attribute, as the paper did on autos),
fitted inside each fold on its training rows only and applied to its test rows
(:func:`~parties.cdtl_tables.fold_tables`). The stratified folds and, per fold, the prune
set (20% of the training rows, the same for the three methods) are public choices of
``--cv`` and ``--seed``: the launcher computes them for a dataset, the client for its own
file, with the same function. For every fold the client bins, anatomizes the training rows
(``--l``), outsources them, and classifies the test rows with
each method (cdtl and cnl trading places on every other fold: :func:`method_order`); it
reports accuracy and its own costs: seconds spent (crypto, network, learning, inference;
outsourcing excluded, it is common to all methods) and tuples held. ``ets`` and ``ms`` are the
paper's Equations 1 and 2.

A CDBS that keeps its database between runs, and a client that outsources once and classifies
new files later, are the systems of :mod:`parties.cdtl_service`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.config import DeploymentConfig, PartyConfig
from mpc.runtime.files import open_private
from mpc.runtime.party import Party
from mpc.runtime.view import READY
from parties.cdtl_tables import (
    bin_args,
    binned_attributes,
    cdtl_folds,
    client_table,
    csv_entries,
    filter_rows,
    fit_bins,
    fold_input,
    fold_tables,
    own_csv_args,
    own_input,
    read_client_csv,
    table_doc,
    table_of_doc,
    with_class,
)
from parties.own_data import private_seed, read_own_file
from protocols.cdtl.cdtl import CDBS, CLIENT, PROTOCOLS, SPLITS, Protocol

__all__ = [
    "METHODS",
    "cdtl_args",
    "cdtl_plan",
    "cdtl_result",
    "cdtl_run",
    "cdtl_summary",
    "method_order",
    "serve_cdbs",
]

#: the field of the client's private input file that holds its anatomization seed
ANATOMY_SEED_KEY = "anatomy_seed"

log = logging.getLogger("mpc.cdtl")

METHODS = ("cdtl", "cnl", "cdbsl")


def cdtl_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", metavar="NAME", default=None, help="dataset (default: weather)")
    src.add_argument(
        "--csv",
        metavar="FILE",
        default=None,
        help="the client's own CSV file with a header row (read by the client process itself)",
    )
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument(
        "--sensitive", required=True, metavar="COL", help="the sensitive attribute A_s (a column)"
    )
    p.add_argument(
        "--class",
        dest="class_column",
        default=None,
        metavar="COL",
        help="the attribute to predict: with --csv its class column (required, read as "
        "labels); with --dataset default the dataset's class, and a continuous one is split "
        "at its median into low/high",
    )
    own_csv_args(p, when="with --csv: ")
    p.add_argument("--l", type=int, default=2, help="l of l-diversity (default 2)")
    p.add_argument("--cv", type=int, default=10, metavar="K", help="folds (default 10)")
    p.add_argument(
        "--method",
        type=method_list,
        default="all",
        metavar="METHODS",
        help="the methods to run on every fold: all (the default), or some of cdtl, cnl, "
        "cdbsl, comma-separated",
    )
    bin_args(p, rows="each fold's training rows")
    p.add_argument(
        "--nominal-splits",
        choices=SPLITS,
        default="multiway",
        help="how every tree (the BDT, which cdbsl predicts with, the subtrees, cnl's tree) "
        "splits a nominal attribute: a branch per value (J48's default), or a value against "
        "the rest (J48 -B, the paper's trees on vote and australian); default multiway",
    )
    p.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="COL!=VALUE",
        help="keep only rows where COL != VALUE (or COL=VALUE); repeatable",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the public choices of the experiment: the cross-validation folds and "
        "prune sets (0); never of the client's secret randomness (anatomization groups, GIDs, "
        "SEQs, salts, keys and nonces come from the OS)",
    )
    p.add_argument(
        "--anatomy-seed",
        type=int,
        default=None,
        metavar="N",
        help="for reproducible experiments and tests only: the client's own seed of its "
        "anatomization's random choices (the tuples suppressed for l-diversity, the groups, "
        "GIDs, SEQs, the order of IT), written into the client's private input file only; "
        "whoever knows it can tell which tuple of a group holds which sensitive value. "
        "Default: the OS",
    )
    p.add_argument(
        "--db",
        default=None,
        metavar="FILE",
        help="the CDBS's SQLite database (default: a file in the deployment directory)",
    )
    p.add_argument("--clients", type=int, default=1, help="client processes sharing the CDBS")
    p.add_argument(
        "--protocol",
        choices=tuple(PROTOCOLS),
        default="optimised",
        help="cdtl as Figures 2-3 draw it (as-drawn), with one of the two shortcuts "
        "(single-leaf: the CDBS answers a leaf whose subtree is sure to be one leaf with its "
        "class; pipelined: updateBDT travels with the next request instead of a round trip "
        "of its own), or with both (optimised, the default); the predictions are the same",
    )
    p.add_argument(
        "--no-suppress",
        action="store_true",
        help="fail when a sensitive value covers more than 1/l of the rows, instead of "
        "suppressing the fewest of its tuples before outsourcing",
    )


def method_list(text: str | list[str]) -> list[str]:
    """The methods of ``--method``: ``all``, or some of :data:`METHODS` comma-separated (in
    the order of :data:`METHODS`)."""
    if isinstance(text, list):
        return text
    if text == "all":
        return list(METHODS)
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in METHODS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"expected all, or some of {', '.join(METHODS)} comma-separated; got {text!r}"
        )
    return [m for m in METHODS if m in chosen]


def cdtl_plan(args: argparse.Namespace) -> Any:
    from mpc.datasets import load_dataset, resolve_data_dir
    from parties.plan import Plan

    if args.l < 2:
        raise ConfigError(f"--l must be at least 2, got {args.l}")
    if args.clients < 1:
        raise ConfigError(f"--clients must be at least 1, got {args.clients}")
    if args.anatomy_seed is not None and args.anatomy_seed < 0:
        raise ConfigError(f"--anatomy-seed must be a non-negative integer, got {args.anatomy_seed}")
    # the client's own seed: in its private input file only, never in the deployment file
    seeded = {} if args.anatomy_seed is None else {ANATOMY_SEED_KEY: args.anatomy_seed}
    if args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    if args.csv is not None:
        entries = csv_entries(args)
        own, text = read_client_csv(args, entries)
        table = filter_rows(own.table, args.where)
        source = str(args.csv)
    else:
        for flag in ("id_column", "delimiter", "nominal", "continuous"):
            if getattr(args, flag) is not None:
                option = "--id" if flag == "id_column" else f"--{flag}"
                raise ConfigError(f"{option} goes with --csv; a named dataset has its own schema")
        table, extra = load_dataset(args.dataset or "weather", resolve_data_dir(args.data_dir))
        if extra is not None:
            table = table.concat(extra)
        table = filter_rows(table, args.where)
        table = with_class(table, args.class_column)
        source = table.name
    table = client_table(
        table, sensitive=args.sensitive, l=args.l, bins=args.bins, no_suppress=args.no_suppress,
        source=source,
    )  # fmt: skip
    folds = cdtl_folds(table.target, args.cv, args.seed)
    methods = method_list(args.method)
    clients = [CLIENT] if args.clients == 1 else [f"{CLIENT}{i + 1}" for i in range(args.clients)]
    params: dict[str, Any] = {
        "sensitive": args.sensitive,
        "l": args.l,
        "methods": methods,
        "db": str(Path(args.db).resolve()) if args.db else "",
        "clients": clients,
        "nominal_splits": args.nominal_splits,
        "protocol": args.protocol,
        "bins": args.bins,
        "bin_attributes": args.bin_attributes,
    }
    if args.csv is not None:
        # the client reads its file and makes the same folds from these public choices
        params.update(
            input="csv", **{"class": args.class_column}, where=list(args.where), cv=args.cv,
            seed=args.seed, no_suppress=args.no_suppress,
        )  # fmt: skip
        specs = [
            PartySpec(c, CLIENT, {"csv": text, **seeded}, entries=entries)
            if seeded
            else PartySpec(c, CLIENT, csv=text, entries=entries)
            for c in clients
        ]
    else:
        doc = table_doc(table)
        specs = [PartySpec(c, CLIENT, {"table": doc, "folds": folds, **seeded}) for c in clients]
    specs.append(PartySpec(CDBS, CDBS, {}))
    context = {"table": table, "folds": folds}
    return Plan(specs, params, context)


def method_order(methods: list[str], fold: int) -> list[str]:
    """The order the client runs ``methods`` in on fold ``fold``: cdtl and cnl trade places
    on every other fold, so that neither always runs first after the outsourcing (the
    method that does pays the most for what outsourcing left cold: measured, cdtl costs
    ~8% more on house-votes-84 when it always runs first, cnl no more)."""
    if fold % 2 == 0 or not {"cdtl", "cnl"} <= set(methods):
        return list(methods)
    a, b = methods.index("cdtl"), methods.index("cnl")
    out = list(methods)
    out[a], out[b] = out[b], out[a]
    return out


async def cdtl_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from mpc.crypto.sealed import ClientKey
    from mpc.learners.evaluation import rows_of
    from parties.plan import load_party_data
    from protocols.cdtl.anatomization import anatomize, suppress_for_l
    from protocols.cdtl.client import CDBSClient, ClientCosts
    from protocols.cdtl.joins import open_eseq

    p = cfg.params
    clients = [str(c) for c in p["clients"]]
    # numpy imports numpy.ma lazily on the first np.unique (~70 ms); do it before any method
    # is timed, so that start-up is not billed to whichever method runs first
    importlib.import_module("numpy.ma")
    protocol = Protocol.named(str(p.get("protocol", "optimised")))
    if me.role == CDBS:
        return await serve_cdbs(party, cfg, clients, single_leaf=protocol.single_leaf)
    if p.get("input") == "csv":
        table, folds, data = own_table_and_folds(me, p)
    else:
        data = load_party_data(me)
        table, folds = table_of_doc(data["table"]), data["folds"]
    rng = private_seed(data, ANATOMY_SEED_KEY, me, "its anatomization")
    bins, bin_attributes = int(p.get("bins", 4)), str(p.get("bin_attributes", "sensitive"))
    key = ClientKey.generate()  # never leaves this process
    client = CDBSClient(
        party,
        key,
        sensitive=str(p["sensitive"]),
        class_name=table.class_name,
        nominal_splits=str(p.get("nominal_splits", "multiway")),
        pipelined=protocol.pipelined,
    )
    methods = [str(m) for m in p["methods"]]
    folds_out = []
    for i, fold in enumerate(folds):
        # the bins are fitted on this fold's training rows only, the test rows binned alike
        train, test, discretizer = fold_tables(
            table, fold, sensitive=client.sensitive, bins=bins, bin_attributes=bin_attributes
        )
        with fold_input(me, i, client.sensitive, discretizer):
            keep = suppress_for_l(train, client.sensitive, int(p["l"]), rng)
        prune_positions = set(int(r) for r in fold["prune"])
        prune = {i for i, r in enumerate(keep.tolist()) if r in prune_positions}
        suppressed = train.n_rows - len(keep)
        train = train.subset(keep)
        name = f"{table.name}/fold{i}" + ("" if len(clients) == 1 else f"/{me.name}")
        train = _renamed(train, name)
        started = time.perf_counter()
        with party.phase("cdtl/outsource"):
            with fold_input(me, i, client.sensitive, discretizer):
                an = anatomize(train, client.sensitive, int(p["l"]), key, rng)
            _, original = open_eseq(an.it, key)
            positions = np.flatnonzero(np.isin(original, list(prune)))
            info = await client.outsource(an, positions)
        out: dict[str, Any] = {
            "fold": i, "train": train.n_rows, "test": test.n_rows, "suppressed": suppressed,
            "outsource_s": round(time.perf_counter() - started, 4),
            "bdt_leaves": info.get("leaves"), "max_leaf": info.get("max_leaf"),
        }  # fmt: skip
        rows = rows_of(test)
        for method in method_order(methods, i):
            costs = ClientCosts()
            with party.phase(f"cdtl/{method}"):
                if method == "cdtl":
                    pred = [await client.inference(name, r, prune, costs) for r in rows]
                    # the reply to the last pipelined update_bdt is cdtl's, not the next
                    # method's, to wait for
                    with costs.clock():
                        costs.round_trips += await client.settle()
                    memory = int(info.get("max_leaf") or 0)
                elif method == "cnl":
                    await client.cnl_learn(name, costs)
                    pred = [await client.cnl_predict(name, r, costs) for r in rows]
                    memory = train.n_rows
                else:
                    pred = [await client.cdbsl_predict(name, r, costs) for r in rows]
                    memory = 0
            correct = sum(a == str(b) for a, b in zip(pred, test.target, strict=True))
            out[method] = {
                "accuracy": correct / max(1, test.n_rows),
                "seconds": round(costs.seconds, 5),
                "cpu_seconds": round(costs.cpu_seconds, 5),
                "memory_tuples": memory,
                "tuples_held": costs.tuples,
                "subtrees_learned": costs.subtrees_learned,
                "requests": costs.requests,
                "round_trips": costs.round_trips,
            }
        folds_out.append(out)
    await client.done()
    return {"folds": folds_out}


def own_table_and_folds(
    me: PartyConfig, p: dict[str, Any]
) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """The client's own CSV file (``--csv``) prepared as the launcher prepares a dataset, the
    folds of the run's public ``cv`` and ``seed``, and the private extras of its input file
    (an anatomization seed)."""
    own, warning, private = read_own_file(me, class_column=str(p["class"]))
    if warning:
        log.warning("%s: %s", me.name, warning)
    with own_input(me):
        table = filter_rows(own.table, [str(w) for w in p.get("where", [])])
        table = client_table(
            table, sensitive=str(p["sensitive"]), l=int(p["l"]), bins=int(p.get("bins", 4)),
            no_suppress=bool(p.get("no_suppress", False)), source=str(me.data),
        )  # fmt: skip
        folds = cdtl_folds(table.target, int(p["cv"]), int(p.get("seed", 0)))
    return table, folds, private


async def serve_cdbs(
    party: Party, cfg: DeploymentConfig, clients: list[str], *, single_leaf: bool = True
) -> dict[str, Any]:
    """The CDBS process: serve every client concurrently from one store until all are done
    (``single_leaf``: the shortcut of :class:`~protocols.cdtl.cdtl.Protocol`).

    The store is the SQLite file ``protocol.params.db`` (default: ``cdbs.sqlite`` next to the
    deployment file), made private (mode 0600) before SQLite opens it; a new process on the
    same file serves everything an earlier one stored."""
    import asyncio

    from protocols.cdtl.cdbs import serve_client
    from protocols.cdtl.store import CDBSStore

    db = str(cfg.params.get("db") or "") or str(cfg.path.parent / "cdbs.sqlite")
    if db != ":memory:":
        # what the CDBS stores for its clients is for it alone: the file (and its folder, if
        # made here) private before SQLite opens it; SQLite gives its WAL files the same mode
        open_private(db, "ab").close()
    store = CDBSStore(db)
    try:
        started = time.perf_counter()
        served = await asyncio.gather(
            *(serve_client(party, store, c, single_leaf=single_leaf) for c in clients)
        )
        return {
            "requests": dict(zip(clients, served, strict=True)),
            "db": db,
            "seconds": time.perf_counter() - started,
            "subtrees": store.subtree_count(),
            "leaves_with_subtrees": store.subtree_leaves(),
        }
    finally:
        store.close()


def _renamed(table: Any, name: str) -> Any:
    from mpc.datasets import Table

    return Table(
        name=name, attributes=table.attributes, kinds=table.kinds, columns=table.columns,
        target=table.target, class_name=table.class_name, source=table.source,
    )  # fmt: skip


def cdtl_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
    clients = [str(c) for c in plan.params["clients"]]
    methods = [str(m) for m in plan.params["methods"]]
    folds = []
    for c in clients:
        res = reports[c].get("result") or {}
        if "folds" not in res:
            raise ProtocolError(f"{c} reported no folds")
        folds += res["folds"]
    table = plan.context["table"]
    out: dict[str, Any] = {
        "dataset": table.name,
        "rows": table.n_rows,
        "class": table.class_name,
        "sensitive": plan.params["sensitive"],
        "l": plan.params["l"],
        "nominal_splits": plan.params["nominal_splits"],
        "protocol": plan.params.get("protocol", "optimised"),
        "folds": len(plan.context["folds"]),
        "bins": int(plan.params.get("bins", 4)),
        "bin_attributes": plan.params.get("bin_attributes", "sensitive"),
        # the attributes binned in every fold, and those every tree splits by thresholds
        "binned": binned_attributes(
            table, sensitive=str(plan.params["sensitive"]),
            bin_attributes=str(plan.params.get("bin_attributes", "sensitive")),
        ),
        "continuous": [],
        "methods": {},
    }  # fmt: skip
    out["continuous"] = [
        a for a, k in zip(table.attributes, table.kinds, strict=True)
        if k == "continuous" and a not in out["binned"]
    ]  # fmt: skip
    for m in methods:
        accs = [f[m]["accuracy"] for f in folds]
        out["methods"][m] = {
            "accuracy": float(np.mean(accs)),
            "accuracy_per_fold": accs,
            "client_seconds": float(sum(f[m]["seconds"] for f in folds)),
            "client_cpu_seconds": float(sum(f[m]["cpu_seconds"] for f in folds)),
            "memory_tuples": float(np.mean([f[m]["memory_tuples"] for f in folds])),
            "tuples_held": float(np.mean([f[m]["tuples_held"] for f in folds])),
            "requests": int(sum(f[m]["requests"] for f in folds)),
            "round_trips": int(sum(f[m]["round_trips"] for f in folds)),
            "subtrees_learned": int(sum(f[m]["subtrees_learned"] for f in folds)),
        }
    if "cdtl" in methods and "cnl" in methods:
        ets = [f["cdtl"]["seconds"] / f["cnl"]["seconds"] for f in folds if f["cnl"]["seconds"]]
        cpu = [f["cdtl"]["cpu_seconds"] / f["cnl"]["cpu_seconds"] for f in folds
               if f["cnl"]["cpu_seconds"]]  # fmt: skip
        ms = [f["cdtl"]["memory_tuples"] / f["cnl"]["memory_tuples"] for f in folds]
        # the tuples the client did hold: the biggest leafIns it received (fewer with the
        # single-leaf shortcut, which answers pure leaves with their class)
        held = [f["cdtl"]["tuples_held"] / f["cnl"]["memory_tuples"] for f in folds]
        out["ets"] = float(np.mean(ets))
        out["ets_cpu"] = float(np.mean(cpu))
        out["ms"] = float(np.mean(ms))
        out["ms_held"] = float(np.mean(held))
        out["ets_per_fold"] = ets
        out["ets_cpu_per_fold"] = cpu
        out["ms_per_fold"] = ms
    cdbs = reports.get(CDBS, {}).get("result") or {}
    out["suppressed_per_fold"] = [int(f.get("suppressed", 0)) for f in folds]
    out["cdbs"] = {"subtrees": cdbs.get("subtrees"), "requests": cdbs.get("requests")}
    out["per_fold"] = folds
    return out


def _protocol_note(result: dict[str, Any]) -> str:
    """``, PROTOCOL protocol`` for a run not of the default (optimised) protocol."""
    protocol = result.get("protocol", "optimised")
    return "" if protocol == "optimised" else f", {protocol} protocol"


def _binning_lines(result: dict[str, Any]) -> list[str]:
    """What became of the table's continuous attributes (nothing for a table without)."""
    binned, continuous = result.get("binned") or [], result.get("continuous") or []
    lines = []
    if binned:
        lines.append(
            f"binned:    {', '.join(map(repr, binned))} into {result['bins']} equal-frequency "
            "bins, fitted on each fold's training rows"
        )
    if continuous:
        lines.append(
            f"kept:      {len(continuous)} continuous, split by thresholds in every tree: "
            f"{', '.join(map(repr, continuous[:6]))}{', ...' if len(continuous) > 6 else ''}"
        )
    return lines


def cdtl_summary(result: dict[str, Any]) -> list[str]:
    lines = [
        f"dataset:   {result['dataset']} ({result['rows']} rows; class {result['class']!r}, "
        f"sensitive {result['sensitive']!r}, l = {result['l']}, {result['folds']}-fold CV, "
        f"{result['nominal_splits']} splits{_protocol_note(result)})",
    ]
    lines += _binning_lines(result)
    lines.append("method    accuracy  client CPU s  client wall s  memory (tuples)")
    for m, v in result["methods"].items():
        lines.append(
            f"{m:<9} {v['accuracy']:8.4f}  {v['client_cpu_seconds']:12.3f}  "
            f"{v['client_seconds']:13.3f}  {v['memory_tuples']:15.1f}"
        )
    if "ets" in result:
        lines.append(
            f"ets = {result['ets']:.3f}  (cdtl / cnl client time: crypto, network, learning, "
            "inference; Equation 1; mean of folds)"
        )
        lines.append(
            f"      {result['ets_cpu']:.3f} in the client's CPU time (without the waits for "
            "the CDBS's own work)"
        )
        lines.append(f"ms  = {result['ms']:.3f}  (cdtl / cnl client memory, Equation 2)")
        lines.append(
            f"      {result['ms_held']:.3f} in the tuples the client did receive (its biggest "
            "leafIns)"
        )
    lines.append(f"subtrees stored at the CDBS: {result['cdbs']['subtrees']}")
    if any(result["suppressed_per_fold"]):
        lines.append(
            f"suppressed for {result['l']}-diversity: {result['suppressed_per_fold']} training "
            "tuples per fold (not outsourced; no method trains on them)"
        )
    return lines


# ----------------------------------------------------------------------------- load


def load_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", metavar="NAME", default="house-votes-84", help="(house-votes-84)")
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument(
        "--sensitive", default="physician-fee-freeze", metavar="COL", help="the sensitive attribute"
    )
    p.add_argument("--class", dest="class_column", default=None, metavar="COL")
    p.add_argument("--l", type=int, default=2, help="l of l-diversity (2)")
    p.add_argument("--clients", type=int, default=4, help="concurrent client processes (4)")
    p.add_argument("--predictions", type=int, default=100, help="predictions per client (100)")
    bin_args(p, rows="all rows of the table, which is outsourced whole")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the demo workload: the rows the clients ask about (0); never of any "
        "secret randomness (anatomization, salts, keys and nonces come from the OS)",
    )
    p.add_argument("--db", default=None, metavar="FILE", help="the CDBS's SQLite database")


def load_plan(args: argparse.Namespace) -> Any:
    """One data owner's table outsourced by ``client1``; then every client (the same owner's
    key) sends ``--predictions`` cdtl predictions of random rows at once. The table is
    outsourced whole, so its bins (``--bin-attributes``) are fitted on all of its rows."""
    from mpc.crypto.sealed import ClientKey
    from mpc.datasets import load_dataset, resolve_data_dir
    from parties.plan import Plan

    if args.clients < 1 or args.predictions < 1:
        raise ConfigError("--clients and --predictions must be at least 1")
    if args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    table, extra = load_dataset(args.dataset, resolve_data_dir(args.data_dir))
    if extra is not None:
        table = table.concat(extra)
    table = with_class(table, args.class_column)
    discretizer = fit_bins(
        table, sensitive=args.sensitive, bins=args.bins, bin_attributes=args.bin_attributes
    )
    if discretizer is not None:
        table = discretizer.transform(table)
    doc = table_doc(table)
    key = ClientKey.generate().key_bytes().hex()  # the data owner's key, in each client's file
    rng = np.random.default_rng(args.seed)
    clients = [f"{CLIENT}{i + 1}" for i in range(args.clients)]
    specs = [
        PartySpec(
            c,
            CLIENT,
            {
                "table": doc,
                "key": key,
                "queries": rng.integers(0, table.n_rows, args.predictions).tolist(),
            },
        )
        for c in clients
    ]
    specs.append(PartySpec(CDBS, CDBS, {}))
    params = {
        "sensitive": args.sensitive,
        "l": args.l,
        "db": str(Path(args.db).resolve()) if args.db else "",
        "clients": clients,
    }
    return Plan(specs, params, {"table": table})


async def load_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from mpc.crypto.sealed import ClientKey
    from mpc.learners.evaluation import rows_of
    from parties.plan import load_party_data
    from protocols.cdtl.anatomization import anatomize, suppress_for_l
    from protocols.cdtl.client import CDBSClient, ClientCosts

    p = cfg.params
    clients = [str(c) for c in p["clients"]]
    # numpy imports numpy.ma lazily on the first np.unique (~70 ms); do it before any method
    # is timed, so that start-up is not billed to whichever method runs first
    importlib.import_module("numpy.ma")
    if me.role == CDBS:
        return await serve_cdbs(party, cfg, clients)
    data = load_party_data(me)
    table = table_of_doc(data["table"])
    key = ClientKey.from_bytes(bytes.fromhex(str(data["key"])))
    client = CDBSClient(party, key, sensitive=str(p["sensitive"]), class_name=table.class_name)
    first = clients[0]
    if me.name == first:
        keep = suppress_for_l(table, client.sensitive, int(p["l"]))
        an = anatomize(table.subset(keep), client.sensitive, int(p["l"]), key)
        await client.outsource(an, np.array([], dtype=np.int64))
        await party.broadcast("load/ready", True, [c for c in clients if c != first])
    else:
        await party.recv(first, "load/ready", READY)
    rows = rows_of(table)
    latencies, preds = [], []
    costs = ClientCosts()
    started = time.perf_counter()
    with party.phase("cdbs-load/predict"):
        for q in data["queries"]:
            t0 = time.perf_counter()
            preds.append(await client.inference(table.name, rows[int(q)], set(), costs))
            latencies.append(time.perf_counter() - t0)
    seconds = time.perf_counter() - started
    await client.done()
    return {
        "latencies_s": latencies,
        "seconds": seconds,
        "predictions": preds,
        "queries": data["queries"],
        "subtrees_learned": costs.subtrees_learned,
    }


def load_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
    clients = [str(c) for c in plan.params["clients"]]
    res = {c: reports[c].get("result") or {} for c in clients}
    lat = np.concatenate([np.asarray(r["latencies_s"]) for r in res.values()])
    wall = max(float(r["seconds"]) for r in res.values())
    cdbs = reports[CDBS].get("result") or {}
    # the same query gets the same prediction from every client
    answers: dict[int, set[str]] = {}
    for r in res.values():
        for q, pred in zip(r["queries"], r["predictions"], strict=True):
            answers.setdefault(int(q), set()).add(str(pred))
    leaves = list(cdbs.get("leaves_with_subtrees") or [])
    learned = sum(int(r["subtrees_learned"]) for r in res.values())
    return {
        "clients": len(clients),
        "predictions": int(lat.size),
        "throughput_per_s": lat.size / wall if wall > 0 else None,
        "latency_ms": {
            "p50": float(np.percentile(lat, 50) * 1000),
            "p99": float(np.percentile(lat, 99) * 1000),
            "max": float(lat.max() * 1000),
        },
        "subtrees_stored": cdbs.get("subtrees"),
        "subtrees_learned_by_clients": learned,
        "duplicated_subtrees": len(leaves) - len(set(leaves)),
        "consistent_predictions": all(len(v) == 1 for v in answers.values()),
    }


def load_summary(result: dict[str, Any]) -> list[str]:
    lat = result["latency_ms"]
    return [
        f"clients:     {result['clients']} concurrent, {result['predictions']} cdtl predictions",
        f"throughput:  {result['throughput_per_s']:.1f} predictions/s",
        f"latency:     p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, max {lat['max']:.2f} ms",
        f"subtrees:    {result['subtrees_stored']} stored, {result['subtrees_learned_by_clients']} "
        f"learned by clients (a leaf refined by two clients at once is stored once), "
        f"{result['duplicated_subtrees']} duplicated",
        f"consistent:  {result['consistent_predictions']} (every query answered alike by all)",
    ]
