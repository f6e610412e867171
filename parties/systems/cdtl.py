"""``mpc run cdtl``: Mancuhan & Clifton's collaborative decision tree learning with a client
process (the data owner) and a CDBS process (the cloud database server), and the baselines
cnl and cdbsl, under K-fold cross-validation.

The client's table is a named dataset (``--dataset``), which the launcher prepares and hands
to the client, or the client's own CSV file (``--csv FILE --class COL``), which the client
reads itself (:func:`~parties.own_data.read_own_table`; ``--id``, ``--delimiter``,
``--nominal``, ``--continuous`` as for every party's own file). Either way the table is
prepared alike (:mod:`parties.programs.cdtl_tables`): rows filtered with ``--where``; with
``--dataset`` the class column chosen with ``--class`` (a continuous class split at its median
into ``low`` / ``high``); the sensitive attribute (``--sensitive``, a column of the table) and
``l`` checked. Continuous attributes stay continuous: every tree (the BDT, the subtrees,
cnl's tree) splits them by thresholds, as the paper's J48 did. A continuous sensitive
attribute, which anatomization needs nominal, is cut into ``--bins`` equal-frequency bins
(``--bin-attributes all`` bins every continuous attribute, as the paper did on autos),
fitted inside each fold on its training rows only and applied to its test rows
(:func:`~parties.programs.cdtl_tables.fold_tables`). The stratified folds and, per fold, the prune
set (20% of the training rows, the same for the three methods) are public choices of
``--cv`` and ``--seed``: the launcher computes them for a dataset, the client for its own
file, with the same function. For every fold the client bins, anatomizes the training rows
(``--l``), outsources them, and classifies the test rows with
each method (cdtl and cnl trading places on every other fold: :func:`method_order`); it
reports accuracy and its own costs: seconds spent (crypto, network, learning, inference;
outsourcing excluded, it is common to all methods) and tuples held. ``ets`` and ``ms`` are the
paper's Equations 1 and 2.

A CDBS that keeps its database between runs, and a client that outsources once and classifies
new files later, are the systems of :mod:`parties.systems.cdtl_sessions`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mpc.datasets import load_dataset, resolve_data_dir
from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from parties.options import missing_option
from parties.params import AtLeast, Params, column_list, option
from parties.programs.cdtl import ANATOMY_SEED_KEY, METHODS
from parties.programs.cdtl_tables import (
    BIN_ATTRIBUTES,
    CLASS_ALIASES,
    binned_attributes,
    cdtl_folds,
    client_table,
    csv_entries,
    filter_rows,
    read_client_csv,
    table_doc,
    with_class,
)
from parties.systems.base import Audit, Plan, System, number
from protocols.cdtl.cdtl import CDBS, CLIENT, PROTOCOLS, SPLITS

__all__ = ["CDBS_TRUST", "Binning", "Cdtl", "CdtlOptions", "ClientCsv", "cdtl_result"]

#: the trust of the cdtl sessions
CDBS_TRUST = "semi-honest client; the CDBS is honest-but-curious and may read everything it stores"


@dataclass(frozen=True)
class ClientCsv(Params):
    """The options of the client's own CSV file, as ``python -m parties`` names them."""

    id_column: str | None = option(
        None,
        flag="--id",
        metavar="COL",
        help="with --csv: the record id column (not an attribute; default: rows are numbered)",
    )
    delimiter: str | None = option(
        None, flag="--delimiter", metavar="C", help="with --csv: the field delimiter (,)"
    )
    nominal: tuple[str, ...] | None = option(
        None,
        flag="--nominal",
        metavar="COL,...",
        parse=column_list,
        help="with --csv: numeric columns to read as categories (coded grades, 0/1 flags)",
    )
    continuous: tuple[str, ...] | None = option(
        None,
        flag="--continuous",
        metavar="COL,...",
        parse=column_list,
        help="with --csv: columns to read as numbers (kept continuous unless --bin-attributes "
        "bins them); other numeric columns are continuous too unless --nominal names them",
    )
    missing: tuple[str, ...] | None = missing_option("with --csv: ")

    def check(self) -> None:
        super().check()
        if self.delimiter is not None and len(self.delimiter) != 1:
            raise ConfigError(f"--delimiter: expected one character, got {self.delimiter!r}")


@dataclass(frozen=True)
class Binning(Params):
    """Which continuous attributes the client bins, and into how many bins."""

    #: the rows the cut points are fitted on, as the help says it
    BIN_ROWS: ClassVar[str] = "each fold's training rows"

    bins: int = option(
        4,
        flag="--bins",
        check=AtLeast(2),
        help="how many equal-frequency bins a binned attribute gets (4); the "
        "cut points are fitted on the rows the client outsources",
    )
    bin_attributes: str = option(
        "sensitive",
        flag="--bin-attributes",
        choices=BIN_ATTRIBUTES,
        help="which continuous attributes to bin: sensitive (the default) bins the sensitive "
        "attribute if it is continuous, since anatomization needs it nominal; the other "
        "continuous attributes stay numbers and every tree splits them by thresholds. all "
        "bins every continuous attribute (as the paper did for autos)",
    )


def method_list(text: str | list[str]) -> tuple[str, ...]:
    """The methods of ``--method``: ``all``, or some of :data:`METHODS` comma-separated (in
    the order of :data:`METHODS`)."""
    if isinstance(text, list):
        return tuple(text)
    if text == "all":
        return METHODS
    chosen = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in METHODS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"expected all, or some of {', '.join(METHODS)} comma-separated; got {text!r}"
        )
    return tuple(m for m in METHODS if m in chosen)


@dataclass(frozen=True)
class CdtlOptions(ClientCsv, Binning):
    """The options of ``mpc run cdtl``."""

    dataset: str | None = option(
        None, flag="--dataset", metavar="NAME", group="source", help="dataset (default: weather)"
    )
    csv: str | None = option(
        None,
        flag="--csv",
        metavar="FILE",
        group="source",
        help="the client's own CSV file with a header row (read by the client process itself)",
    )
    data_dir: str | None = option(
        None, flag="--data-dir", metavar="DIR", help="where the UCI datasets are"
    )
    sensitive: str = option(
        "",
        flag="--sensitive",
        required=True,
        metavar="COL",
        help="the sensitive attribute A_s (a column)",
    )
    class_column: str | None = option(
        None,
        flag="--class",
        metavar="COL",
        help="the attribute to predict: with --csv its class column (required, read as "
        "labels); with --dataset default the dataset's class, and a continuous one is split "
        "at its median into low/high; a dataset's class also goes by the papers' name for it ("
        + "; ".join(
            f"{alias} for {name}'s {column!r}"
            for name, aliases in CLASS_ALIASES.items()
            for alias, column in aliases.items()
        )
        + ")",
    )
    l: int = option(2, flag="--l", check=AtLeast(2), help="l of l-diversity (default 2)")  # noqa: E741
    cv: int = option(10, flag="--cv", metavar="K", help="folds (default 10)")
    method: tuple[str, ...] = option(
        METHODS,
        flag="--method",
        parse=method_list,
        metavar="METHODS",
        help="the methods to run on every fold: all (the default), or some of cdtl, cnl, "
        "cdbsl, comma-separated",
    )
    nominal_splits: str = option(
        "multiway",
        flag="--nominal-splits",
        choices=SPLITS,
        help="how every tree (the BDT, which cdbsl predicts with, the subtrees, cnl's tree) "
        "splits a nominal attribute: a branch per value (J48's default), or a value against "
        "the rest (J48 -B, the paper's trees on vote and australian); default multiway",
    )
    where: tuple[str, ...] = option(
        (),
        flag="--where",
        repeat=True,
        metavar="COL!=VALUE",
        help="keep only rows where COL != VALUE (or COL=VALUE); repeatable",
    )
    seed: int = option(
        0,
        flag="--seed",
        help="seed of the public choices of the experiment: the cross-validation folds and "
        "prune sets (0); never of the client's secret randomness (anatomization groups, GIDs, "
        "SEQs, salts, keys and nonces come from the OS)",
    )
    anatomy_seed: int | None = option(
        None,
        flag="--anatomy-seed",
        metavar="N",
        check=AtLeast(0),
        help="for reproducible experiments and tests only: the client's own seed of its "
        "anatomization's random choices (the tuples suppressed for l-diversity, the groups, "
        "GIDs, SEQs, the order of IT), written into the client's private input file only; "
        "whoever knows it can tell which tuple of a group holds which sensitive value. "
        "Default: the OS",
    )
    db: str | None = option(
        None,
        flag="--db",
        metavar="FILE",
        output="file",
        help="the CDBS's SQLite database (default: a file in the deployment directory)",
    )
    clients: int = option(
        1, flag="--clients", check=AtLeast(1), help="client processes sharing the CDBS"
    )
    protocol: str = option(
        "optimised",
        flag="--protocol",
        choices=tuple(PROTOCOLS),
        help="cdtl as Figures 2-3 draw it (as-drawn), with one of the two shortcuts "
        "(single-leaf: the CDBS answers a leaf whose subtree is sure to be one leaf with its "
        "class; pipelined: updateBDT travels with the next request instead of a round trip "
        "of its own), or with both (optimised, the default); the predictions are the same",
    )
    no_suppress: bool = option(
        False,
        flag="--no-suppress",
        flag_only=True,
        help="fail when a sensitive value covers more than 1/l of the rows, instead of "
        "suppressing the fewest of its tuples before outsourcing",
    )


def cdtl_plan(args: CdtlOptions) -> Plan:
    # the client's own seed: in its private input file only, never in the deployment file
    seeded = {} if args.anatomy_seed is None else {ANATOMY_SEED_KEY: args.anatomy_seed}
    if args.csv is not None:
        entries = csv_entries(args)
        own, text = read_client_csv(args, entries)
        table = filter_rows(own.table, list(args.where))
        source = str(args.csv)
    else:
        for flag in ("id_column", "delimiter", "nominal", "continuous", "missing"):
            if getattr(args, flag) is not None:
                option = "--id" if flag == "id_column" else f"--{flag}"
                raise ConfigError(f"{option} goes with --csv; a named dataset has its own schema")
        table, extra = load_dataset(args.dataset or "weather", resolve_data_dir(args.data_dir))
        if extra is not None:
            table = table.concat(extra)
        table = filter_rows(table, list(args.where))
        table = with_class(table, args.class_column)
        source = table.name
    table = client_table(
        table,
        sensitive=args.sensitive,
        l=args.l,
        bins=args.bins,
        no_suppress=args.no_suppress,
        source=source,
    )
    folds = cdtl_folds(table.target, args.cv, args.seed)
    methods = list(args.method)
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
            input="csv",
            **{"class": args.class_column},
            where=list(args.where),
            cv=args.cv,
            seed=args.seed,
            no_suppress=args.no_suppress,
        )
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


def cdtl_result(reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
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
            table,
            sensitive=str(plan.params["sensitive"]),
            bin_attributes=str(plan.params.get("bin_attributes", "sensitive")),
        ),
        "continuous": [],
        "methods": {},
    }
    out["continuous"] = [
        a
        for a, k in zip(table.attributes, table.kinds, strict=True)
        if k == "continuous" and a not in out["binned"]
    ]
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
        cpu = [
            f["cdtl"]["cpu_seconds"] / f["cnl"]["cpu_seconds"]
            for f in folds
            if f["cnl"]["cpu_seconds"]
        ]
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


class Cdtl(System):
    name = "cdtl"
    help = (
        "Mancuhan & Clifton's collaborative decision tree learning on outsourced anatomized "
        "data (client + CDBS), with the baselines cnl and cdbsl, under cross-validation"
    )
    options = CdtlOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        return cdtl_plan(options)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        return cdtl_result(reports, plan)

    def summary(self, result: Any) -> list[str]:
        return cdtl_summary(result)

    def audit(self, result: Any) -> Audit:
        return cdtl_audit(result)


def cdtl_audit(result: Any) -> Audit:
    """The audit of a cdtl session: its trust, cdtl's cross-validated accuracy."""
    methods = result.get("methods") if isinstance(result, dict) else None
    acc = (methods or {}).get("cdtl", {}).get("accuracy")
    return Audit(trust=CDBS_TRUST, accuracy=number(acc))
