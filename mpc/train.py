"""``mpc datasets`` and ``mpc train``: the datasets found, and plain reference trees on them.

``mpc train`` evaluates a plain learner the way every experiment of this project does:
with ``--cv K`` by stratified K-fold cross-validation (discretisation learned per fold on the
training part only); on a dataset with its own test split (adult) by training on the
training file and testing on the test file; otherwise by 10-fold cross-validation. The tree
it prints (and exports with ``--tree-out`` / ``--dot``) is learned on all training rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from mpc.errors import ConfigError
from mpc.files import write_private

__all__ = ["add_datasets_parser", "add_train_parser", "run_datasets", "run_train"]


def add_data_options(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", metavar="NAME", help="a UCI dataset by name (see `mpc datasets`)")
    src.add_argument("--csv", type=Path, metavar="FILE", help="any CSV file with a header row")
    p.add_argument(
        "--class", dest="class_column", metavar="COLUMN", help="the class column of --csv"
    )
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="where the UCI datasets are (default: $MPC_DATA_DIR, else "
        "../shared/datasets next to the repository)",
    )


def add_datasets_parser(sub: Any) -> None:
    p = sub.add_parser("datasets", help="list the datasets found (rows, columns, class, source)")
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_train_parser(sub: Any) -> None:
    p = sub.add_parser(
        "train",
        help="train and evaluate a plain (non-private) tree",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--learner",
        choices=("id3", "c45"),
        default="id3",
        help="id3: Algorithm 1 of Vaidya & Clifton (nominal only; continuous columns "
        "discretised); c45: gain ratio, thresholds, reduced-error pruning",
    )
    add_data_options(p)
    p.add_argument("--cv", type=int, default=None, metavar="K", help="K-fold cross-validation")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the cross-validation folds and the pruning split (default 0); a plain "
        "local learner, no secret randomness",
    )
    p.add_argument(
        "--bins",
        type=int,
        default=4,
        help="equal-frequency bins for continuous columns under id3 (default: 4)",
    )
    p.add_argument("--max-depth", type=int, default=None, help="stop growing at this depth")
    p.add_argument(
        "--min-samples-split",
        type=int,
        default=None,
        help="id3: do not split nodes with fewer rows",
    )
    p.add_argument(
        "--pruning",
        choices=("reduced-error", "none"),
        default="reduced-error",
        help="c45 pruning (default: reduced-error on 20%% of the training rows)",
    )
    p.add_argument(
        "--nominal-splits",
        choices=("multiway", "binary"),
        default="multiway",
        help="c45 splits on nominal attributes",
    )
    p.add_argument("--tree-out", type=Path, metavar="FILE", help="write the tree as JSON")
    p.add_argument("--dot", type=Path, metavar="FILE", help="write the tree as Graphviz DOT")
    p.add_argument("--json", action="store_true", help="print a JSON summary")


def run_datasets(args: argparse.Namespace) -> int:
    from mpc.datasets import available_datasets, resolve_data_dir

    data_dir = resolve_data_dir(args.data_dir)
    infos = available_datasets(data_dir)
    if args.json:
        print(
            json.dumps(
                {
                    "data_dir": str(data_dir) if data_dir else None,
                    "datasets": [_info_dict(i) for i in infos],
                },
                indent=2,
            )
        )
        return 0
    print(f"data directory: {data_dir if data_dir else '(none found; only embedded data)'}")
    print(f"{'name':<16} {'rows':>7} {'attrs':>5}  {'class':<12} source")
    for i in infos:
        d = _info_dict(i)
        print(
            f"{d['name']:<16} {d['rows']:>7} {d['attributes']:>5}  {d['class']:<12} {d['source']}"
        )
    return 0


def _info_dict(info: Any) -> dict[str, Any]:
    from dataclasses import asdict, is_dataclass

    d = asdict(info) if is_dataclass(info) and not isinstance(info, type) else dict(info)
    d = {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items()}
    d.setdefault("name", getattr(info, "name", "?"))
    d["rows"] = d.get("rows", d.get("n_rows"))
    d["attributes"] = d.get("attributes", d.get("n_attributes"))
    d["class"] = d.get("class_name", d.get("class"))
    src = d.get("source", d.get("sources", d.get("files", "")))
    d["source"] = ", ".join(map(str, src)) if isinstance(src, list | tuple) else str(src)
    return d


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from mpc.datasets import load_csv, load_dataset, resolve_data_dir

    if args.csv is not None:
        if not args.class_column:
            raise ConfigError("--csv needs --class COLUMN naming the class column")
        return load_csv(args.csv, args.class_column), None
    if args.class_column:
        raise ConfigError("--class goes with --csv; a named dataset knows its class column")
    return load_dataset(args.dataset, resolve_data_dir(args.data_dir))


def _learner(args: argparse.Namespace) -> Any:
    from mpc.c45 import C45Classifier
    from mpc.id3 import ID3Classifier

    if args.learner == "id3":
        return ID3Classifier(max_depth=args.max_depth, min_samples_split=args.min_samples_split)
    return C45Classifier(
        pruning=args.pruning,
        nominal_splits=args.nominal_splits,
        max_depth=args.max_depth,
        seed=args.seed,
    )


def run_train(args: argparse.Namespace) -> int:
    from mpc.datasets import Discretizer, Table
    from mpc.evaluation import accuracy, confusion_matrix, cross_validate
    from mpc.tree import depth, leaf_count, node_count, render, to_dot, to_json

    say = (lambda line: None) if args.json else (lambda line: print(line, file=sys.stderr))
    if args.cv is not None and args.cv < 2:
        raise ConfigError(f"--cv must be at least 2, got {args.cv}")
    if args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    started = time.perf_counter()
    train, test = _load(args)
    say(
        f"loaded {train.name}: {train.n_rows} rows, {len(train.attributes)} attributes"
        + (f", test split {test.n_rows} rows" if test is not None else "")
    )
    needs_bins = args.learner == "id3" and "continuous" in train.kinds

    def prepare(tr: Table, te: Table) -> tuple[Table, Table]:
        if not needs_bins:
            return tr, te
        disc = Discretizer.fit(tr, args.bins)
        return disc.transform(tr), disc.transform(te)

    doc: dict[str, Any] = {"dataset": train.name, "learner": args.learner, "rows": train.n_rows}
    if args.cv is not None or test is None:
        k = args.cv or 10
        res = cross_validate(
            lambda: _learner(args), train, k, seed=args.seed, prepare=prepare, progress=say
        )
        doc.update(
            evaluation=f"{k}-fold cross-validation (stratified, seed {args.seed})",
            accuracy=res.accuracy,
            fold_accuracies=res.fold_accuracies,
            classes=res.classes,
            confusion=res.confusion.tolist(),
            test_rows=train.n_rows,
        )
    else:
        tr, te = prepare(train, test)
        model = _learner(args).fit(tr)
        predicted = model.predict(te)
        classes = sorted({str(c) for c in tr.target} | {str(c) for c in te.target})
        doc.update(
            evaluation=f"train on {train.n_rows} rows, test on {test.n_rows} rows",
            accuracy=accuracy(te.target, predicted),
            classes=classes,
            confusion=confusion_matrix(te.target, predicted, classes).tolist(),
            test_rows=test.n_rows,
        )
    final_train = train
    disc_doc = None
    if needs_bins:
        disc = Discretizer.fit(train, args.bins)
        final_train = disc.transform(train)
        disc_doc = disc.to_dict()
    model = _learner(args).fit(final_train)
    tree = model.tree_
    doc.update(
        nodes=node_count(tree),
        leaves=leaf_count(tree),
        depth=depth(tree),
        discretizer=disc_doc,
        params=model.get_params(),
        wall_s=round(time.perf_counter() - started, 3),
    )
    if args.tree_out:
        write_private(args.tree_out, json.dumps(to_json(tree), indent=2) + "\n")
    if args.dot:
        write_private(args.dot, to_dot(tree, name=train.name))
    if args.json:
        doc["tree"] = to_json(tree)
        print(json.dumps(doc, indent=2))
        return 0
    print(f"dataset:    {train.name} ({train.n_rows} rows, class {train.class_name!r})")
    print(f"learner:    {args.learner} {model.get_params()}")
    print(f"evaluation: {doc['evaluation']}")
    print(f"accuracy:   {doc['accuracy']:.4f}")
    print("confusion (rows: true class, columns: predicted):")
    width = max(len(c) for c in doc["classes"]) + 2
    print(" " * width + "".join(f"{c:>{width}}" for c in doc["classes"]))
    for c, row in zip(doc["classes"], doc["confusion"], strict=True):
        print(f"{c:>{width}}" + "".join(f"{n:>{width}}" for n in row))
    print(
        f"tree (learned on all {final_train.n_rows} training rows): {doc['nodes']} nodes, "
        f"{doc['leaves']} leaves, depth {doc['depth']}"
    )
    text = render(tree)
    lines = text.splitlines()
    print("\n".join(lines[:60]))
    if len(lines) > 60:
        print(f"... ({len(lines) - 60} more lines; --tree-out FILE writes the whole tree)")
    return 0
