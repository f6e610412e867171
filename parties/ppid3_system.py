"""The ``ppid3`` system: PPID3 (Vaidya & Clifton, Algorithms 2-8) with one process per site.

The launcher loads the dataset, discretises continuous columns (equal-frequency bins learned on
the training rows), partitions the columns over ``k`` sites and writes each site its own
columns only (plus the common transaction ids; the class to the class site). Each site process
then trains the distributed tree with the other sites and classifies the training and test
instances with Algorithm 8. ``--counts psi`` trains depth first with set-intersection counts
(:mod:`protocols.ppid3`); ``--counts fast`` trains a level per exchange on additive shares with
a dealer process (:mod:`protocols.ppid3_levels`).

For auditing, the launcher — which in a test deployment holds every site's report — assembles
the whole tree from every site's own nodes and compares it with plain ID3 on the joined data.
No party can build that view: a site knows only its own nodes and the public structure.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from typing import Any

import numpy as np

from mpc.config import DeploymentConfig, PartyConfig
from mpc.errors import ConfigError, ProtocolError
from mpc.launcher import PartySpec
from mpc.runtime import Party

log = logging.getLogger("mpc.ppid3")

__all__ = ["ppid3_args", "ppid3_plan", "ppid3_result", "ppid3_run", "ppid3_summary"]


def ppid3_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--dataset",
        metavar="NAME",
        default=None,
        help="a dataset by name (see `mpc datasets`; default: the embedded weather table)",
    )
    src.add_argument("--csv", metavar="FILE", help="any CSV file with a header row")
    p.add_argument("--class", dest="class_column", metavar="COLUMN", help="class column of --csv")
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument("--sites", type=int, default=2, metavar="K", help="number of sites (default 2)")
    p.add_argument(
        "--partition",
        default="contiguous",
        metavar="SCHEME",
        help="contiguous (default), round-robin, random:SEED (a seeded shuffle of the columns "
        "over the sites: a public choice), or an explicit 'a,b;c;d'",
    )
    p.add_argument(
        "--class-site",
        type=int,
        default=-1,
        metavar="I",
        help="index of the site holding the class (default -1: the last)",
    )
    test = p.add_mutually_exclusive_group()
    test.add_argument(
        "--test-split", type=float, metavar="F", help="hold out a stratified fraction F for test"
    )
    test.add_argument("--test", metavar="FILE", help="a test CSV with the same columns")
    test.add_argument(
        "--all-rows",
        action="store_true",
        help="train on every row of the dataset, its own test file included (adult: all "
        "48,842 rows); no test accuracy",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the public choice of the test split (default 0); never of any party's "
        "secret randomness (keys and masks always come from each party's OS randomness)",
    )
    p.add_argument(
        "--bins", type=int, default=4, help="equal-frequency bins for continuous columns (4)"
    )
    p.add_argument("--max-depth", type=int, default=None, help="stop growing at this depth")
    p.add_argument(
        "--min-samples-split",
        type=_count_or_fraction,
        default=None,
        metavar="N|F",
        help="do not split nodes with fewer rows: a count (e.g. 20) or a fraction of the "
        "training rows (e.g. 0.05); plain ID3 gets the same count",
    )
    p.add_argument(
        "--counts",
        choices=("psi", "fast"),
        default="psi",
        help="psi: every count by set-intersection cardinality, one node at a time (the "
        "paper's way, default); fast: additive secret sharing with a commodity server (a "
        "'dealer' process that must collude with no site), a whole tree level per exchange",
    )


def _count_or_fraction(text: str) -> int | float:
    """``--min-samples-split``: an int >= 1, or a fraction in (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a fraction, got {text!r}") from None
    if value.is_integer() and value >= 1 and "." not in text:
        return int(value)
    if 0 < value < 1:
        return value
    raise argparse.ArgumentTypeError(f"expected a count >= 1 or a fraction in (0, 1), got {text}")


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from mpc.datasets import load_csv, load_dataset, resolve_data_dir

    if args.csv is not None:
        if not args.class_column:
            raise ConfigError("--csv needs --class COLUMN naming the class column")
        return load_csv(args.csv, args.class_column), None
    if args.class_column:
        raise ConfigError("--class goes with --csv; a named dataset knows its class column")
    return load_dataset(args.dataset or "weather", resolve_data_dir(args.data_dir))


def _site_data(sd: Any, test_sd: Any | None, is_class: bool) -> dict[str, Any]:
    t = sd.table
    doc: dict[str, Any] = {
        "attributes": list(t.attributes),
        "columns": [[str(v) for v in c] for c in t.columns],
        "tids": sd.tids.tolist(),
        "target": [str(v) for v in t.target] if is_class else None,
    }
    if test_sd is not None:
        doc["test"] = {
            "ids": test_sd.tids.tolist(),
            "columns": [[str(v) for v in c] for c in test_sd.table.columns],
            "target": [str(v) for v in test_sd.table.target] if is_class else None,
        }
    return doc


def ppid3_plan(args: argparse.Namespace) -> Any:
    from mpc.datasets import Discretizer, partition, split_vertically
    from mpc.evaluation import train_test_split
    from mpc.id3 import ID3Classifier
    from parties.systems import Plan

    if args.sites < 2:
        raise ConfigError(f"--sites must be at least 2, got {args.sites}")
    if args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    if args.max_depth is not None and args.max_depth < 1:
        raise ConfigError(f"--max-depth must be at least 1, got {args.max_depth}")
    train, test = _load(args)
    if args.all_rows and test is not None:
        train, test = train.concat(test), None
    if args.test_split is not None:
        tr_idx, te_idx = train_test_split(train.target, args.test_split, seed=args.seed)
        train, test = train.subset(tr_idx), train.subset(te_idx)
    elif args.test is not None:
        from mpc.datasets import DataError, load_csv

        test = load_csv(args.test, train.class_name)
        if test.attributes != train.attributes:
            raise DataError(
                f"the test file's columns {list(test.attributes)} are not the training "
                f"columns {list(train.attributes)} (same names, same order)",
                file=args.test,
                line=1,
            )
    discretizer = None
    if "continuous" in train.kinds:
        discretizer = Discretizer.fit(train, args.bins)
        train = discretizer.transform(train)
        test = discretizer.transform(test) if test is not None else None
    if args.sites > len(train.attributes):
        raise ConfigError(
            f"--sites {args.sites}: {train.name} has only {len(train.attributes)} attributes"
        )
    if isinstance(args.min_samples_split, float):  # a fraction of the training rows
        args.min_samples_split = max(1, math.ceil(args.min_samples_split * train.n_rows))
    part = partition(train.attributes, args.sites, args.partition, class_site=args.class_site)
    names = [f"site{i + 1}" for i in range(part.k)]
    sites = split_vertically(train, part)
    test_sites = split_vertically(test, part) if test is not None else None
    specs = [
        PartySpec(
            names[i],
            "site",
            _site_data(sd, test_sites[i] if test_sites else None, i == part.class_site),
            tuple(part.sites[i]),
        )
        for i, sd in enumerate(sites)
    ]
    if args.counts == "fast":
        from protocols.fast_counts import DEALER

        specs.append(PartySpec(DEALER, DEALER, {}))
    started = time.perf_counter()
    site_of = {a: i for i, s in enumerate(part.sites) for a in s}
    plain = ID3Classifier(max_depth=args.max_depth, min_samples_split=args.min_samples_split)
    plain.fit(train, attribute_order=list(part.attributes), sites=site_of)
    plain_s = time.perf_counter() - started
    params = {
        "class_site": names[part.class_site],
        "attribute_counts": [len(s) for s in part.sites],
        "max_depth": args.max_depth or 0,
        "min_samples_split": args.min_samples_split or 0,
        "counts": args.counts,
        "sites": names,
        "rows": train.n_rows,
    }
    context = {
        "dataset": train.name,
        "train": train,
        "test": test,
        "partition": part,
        "names": names,
        "plain": plain,
        "plain_s": plain_s,
        "discretizer": discretizer.to_dict() if discretizer else None,
    }
    return Plan(specs, params, context)


async def ppid3_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from parties.systems import load_party_data
    from protocols.classify_instance import classify_instances, tree_depth
    from protocols.distribution_counts import PSICountOracle, SiteView
    from protocols.fast_counts import Sites
    from protocols.ppid3 import ppid3
    from protocols.ppid3_levels import DEALER, ppid3_levels, ring_dtype, serve_level_dealer

    sites = [str(n) for n in cfg.params.get("sites") or party.parties]
    if me.role == DEALER:
        started = time.perf_counter()
        rows = cfg.params.get("rows")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise ConfigError(
                f"the deployment's ppid3 params need 'rows' (the training rows) for the "
                f"dealer's share ring, got {rows!r}; write the deployment with mpc deploy"
            )
        dealt = await serve_level_dealer(party, sites, dtype=ring_dtype(rows))
        return {"dealt": dealt, "seconds": round(time.perf_counter() - started, 3)}
    fast = cfg.params.get("counts") == "fast"
    site = Sites(party, sites).as_party() if fast else party
    data = load_party_data(me)
    class_site = str(cfg.params["class_site"])
    counts = [int(c) for c in cfg.params["attribute_counts"]]
    max_depth = int(cfg.params.get("max_depth", 0)) or None
    mss = int(cfg.params.get("min_samples_split", 0)) or None
    attrs = list(data["attributes"])
    if list(me.columns) and list(me.columns) != attrs:
        raise ConfigError(f"{me.name}: data columns {attrs} differ from the deployment's")
    view = SiteView.encode(me.name, attrs, data["columns"], data["tids"], data.get("target"))
    started = time.perf_counter()

    shown = [started]

    def progress(msg: str) -> None:
        # relayed to the launching terminal by the launcher (PROGRESS lines of the log),
        # at most every two seconds
        if time.perf_counter() - shown[0] < 2.0:
            return
        shown[0] = time.perf_counter()
        log.info(
            "PROGRESS %s, %.1f s, %.1f MB sent",
            msg, time.perf_counter() - started, party.metrics.to_dict()["bytes_sent"] / 1e6,
        )  # fmt: skip

    shown_progress = progress if party.name == class_site else None
    if fast:  # every node of a level per exchange, on additive shares
        tree, fast_cost = await ppid3_levels(
            site,
            view,
            class_site=class_site,
            attribute_counts=counts,
            max_depth=max_depth,
            min_samples_split=mss,
            progress=shown_progress,
        )
    else:  # the paper's depth-first Algorithm 7 with set-intersection counts
        oracle = PSICountOracle()
        tree = await ppid3(
            site,
            view,
            oracle,
            class_site=class_site,
            attribute_counts=counts,
            max_depth=max_depth,
            min_samples_split=mss,
            progress=shown_progress,
        )
    train_s = time.perf_counter() - started
    depth = tree_depth(tree.structure)
    columns = {a: c for a, c in zip(attrs, data["columns"], strict=True)}
    out: dict[str, Any] = {"tree": tree.to_dict(), "train_s": round(train_s, 3)}
    pred = await classify_instances(
        site, tree, columns, data["tids"], class_site=class_site, depth=depth, tag="classify/train"
    )
    if pred is not None:
        out["train_accuracy"] = _accuracy(pred, data["tids"], data["target"])
    if "test" in data:
        t = data["test"]
        tcols = {a: c for a, c in zip(attrs, t["columns"], strict=True)}
        pred = await classify_instances(
            site, tree, tcols, t["ids"], class_site=class_site, depth=depth, tag="classify/test"
        )
        if pred is not None:
            out["test_accuracy"] = _accuracy(pred, t["ids"], t["target"])
            out["test_predictions"] = [pred[int(i)] for i in t["ids"]]
    if fast:
        out["cost"] = {
            "intersections": 0,
            "psi_invocations": 0,
            "outer_batches": fast_cost["outer_batches"],
            "dot_batches": fast_cost["dot_batches"],
            "levels": fast_cost["levels"],
        }
    else:
        out["cost"] = {"intersections": oracle.intersections,
                       "psi_invocations": oracle.invocations}  # fmt: skip
    return out


def _accuracy(pred: dict[int, str], ids: list[int], target: list[str]) -> float:
    if not ids:
        return float("nan")
    return sum(pred[int(i)] == y for i, y in zip(ids, target, strict=True)) / len(ids)


def ppid3_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
    from mpc.evaluation import accuracy
    from mpc.tree import to_json
    from protocols.ppid3 import assemble, check_tree_equal

    ctx = plan.context
    names: list[str] = ctx["names"]
    results = {n: reports[n].get("result") or {} for n in names}
    missing = [n for n in names if "tree" not in results[n]]
    if missing:
        raise ProtocolError(f"no tree in the reports of {missing}")
    view = assemble({n: results[n]["tree"] for n in names}, {n: i for i, n in enumerate(names)})
    plain = ctx["plain"]
    plain_json = to_json(plain.tree_)
    cls = results[str(plan.params["class_site"])]
    part = ctx["partition"]
    train, test = ctx["train"], ctx["test"]
    acc: dict[str, Any] = {"train": cls.get("train_accuracy")}
    plain_acc: dict[str, Any] = {"train": accuracy(train.target, plain.predict(train))}
    if test is not None:
        acc["test"] = cls.get("test_accuracy")
        plain_pred = plain.predict(test)
        plain_acc["test"] = accuracy(test.target, plain_pred)
        acc["test_predictions_equal_plain"] = list(map(str, plain_pred)) == cls.get(
            "test_predictions"
        )
    structure = results[names[0]]["tree"]["structure"]
    q = len(structure)
    c = len(plain.classes_)
    r = len(train.attributes)
    p = float(np.mean([len(d) for d in plain.domains_]))
    metrics = {n: reports[n].get("metrics") or {} for n in names}
    fast = plan.params.get("counts") == "fast"
    cost = {
        "counts": plan.params.get("counts", "psi"),
        "set_intersections": sum(int(results[n]["cost"]["intersections"]) for n in names),
        "outer_batches": sum(int(results[n]["cost"].get("outer_batches", 0)) for n in names),
        "levels": int(results[names[0]]["cost"].get("levels", 0)),
        "dot_batches": sum(int(results[n]["cost"].get("dot_batches", 0)) for n in names),
        "psi_invocations": int(results[names[0]]["cost"]["psi_invocations"]),
        "paper_estimate_c_q_1_plus_p_r": round(c * q * (1 + p * r)),
        "paper_estimate_terms": {"c": c, "q": q, "p": round(p, 3), "r": r},
        "per_site": {
            n: {
                "x25519": (metrics[n].get("crypto") or {}).get("x25519", 0),
                "modexp": (metrics[n].get("crypto") or {}).get("modexp", 0),
                "bytes_sent": metrics[n].get("bytes_sent", 0),
                "bytes_received": metrics[n].get("bytes_received", 0),
                "messages_sent": metrics[n].get("messages_sent", 0),
                "rounds": metrics[n].get("rounds", 0),
                "train_s": results[n].get("train_s"),
            }
            for n in names
        },
    }
    from mpc.tree import depth as tree_depth_of
    from mpc.tree import from_json, node_count

    assembled = from_json(view)
    trust = (
        "semi-honest sites; the dealer (commodity server) colludes with no site"
        if fast
        else "semi-honest sites"
    )
    return {
        "dataset": ctx["dataset"],
        "counts": plan.params.get("counts", "psi"),
        "trust": trust,
        "rows": {"train": train.n_rows, "test": test.n_rows if test is not None else 0},
        "partition": {**part.to_dict(), "site_names": names},
        "discretizer": ctx["discretizer"],
        "identical": check_tree_equal(view, plain_json),
        "nodes": node_count(assembled),
        "depth": tree_depth_of(assembled),
        "accuracy": acc,
        "plain_accuracy": plain_acc,
        "plain_fit_s": round(ctx["plain_s"], 4),
        "cost": cost,
        "tree": view,
        "plain_tree": plain_json,
    }


def ppid3_summary(result: dict[str, Any]) -> list[str]:
    part = result["partition"]
    lines = [
        f"dataset:   {result['dataset']} ({result['rows']['train']} training rows"
        + (f", {result['rows']['test']} test rows)" if result["rows"]["test"] else ")"),
        "partition: "
        + "; ".join(
            f"{n}{' (class)' if i == part['class_site'] else ''}: {', '.join(s)}"
            for i, (n, s) in enumerate(zip(part["site_names"], part["sites"], strict=True))
        ),
        f"tree:      {result['nodes']} nodes, depth {result['depth']} "
        "(assembled from every site's own nodes for this audit; no site holds it)",
        f"identical: {result['identical']}  (PPID3 tree == plain ID3 on the joined data)",
        "accuracy:  "
        + ", ".join(
            f"{k} {v:.4f} (plain {result['plain_accuracy'][k]:.4f})"
            for k, v in result["accuracy"].items()
            if isinstance(v, float)
        ),
        _cost_line(result),
        f"trust:     {result.get('trust', 'semi-honest sites')}",
        "",
    ]
    lines += render_distributed(result["tree"], part["site_names"], part["class_site"])
    return lines


def _cost_line(result: dict[str, Any]) -> str:
    cost = result["cost"]
    if result.get("counts") == "fast":
        return (
            f"cost:      counts by secret sharing, level by level: {cost['levels']} levels, "
            f"{cost['outer_batches']} outer-product and {cost['dot_batches']} dot-product "
            f"batches over {result['nodes']} nodes, no set intersection"
        )
    return (
        f"cost:      {cost['set_intersections']} set intersections "
        f"(paper's estimate c*q*(1+p*r) = {cost['paper_estimate_c_q_1_plus_p_r']}) "
        f"in {cost['psi_invocations']} batched PSI-CA invocations"
    )


def render_distributed(tree: dict[str, Any], names: list[str], class_site: int) -> list[str]:
    """The tree in the style of the paper's Figure 2: every node with the site that holds it
    (interior nodes at the attribute's site, leaves at the class site)."""
    out: list[str] = []

    def visit(node: dict[str, Any], prefix: str, head: str) -> None:
        if "children" not in node:
            counts = ", ".join(f"{c} {n}" for c, n in node["counts"].items())
            out.append(f"{prefix}{head}[{names[class_site]}] class {node['class']} ({counts})")
            return
        out.append(f"{prefix}{head}[{names[node['site']]}] {node['attribute']}")
        for value, child in node["children"].items():
            visit(child, prefix + "    ", f"= {value}: ")

    visit(tree, "", "")
    return out
