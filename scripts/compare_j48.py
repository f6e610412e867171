#!/usr/bin/env python3
"""Our C4.5 (``mpc.learners.c45.C45Classifier``) against Weka's J48 3.6 on the same cross-validation
folds of every dataset of the data directory.

For each dataset, each fold of a stratified ``--folds``-fold cross-validation (seeded with
``--seed``: the folds are a public choice of the experiment) is written as a training and a
test ARFF file into a temporary folder. Both files declare the same values: every value of
each nominal attribute and every class of the whole table, sorted as our learner sorts
them, so that both learners know the same domains and order them alike. J48 is run on the
files (``java -cp WEKA_JAR weka.classifiers.trees.J48 -t train -T test``, once for its tree
and test accuracy, once with ``-p 0`` for its predictions), and our learner is fitted on the
same training rows with the same declared values. Modes (``--modes``):

* ``error-based``: ``C45Classifier(pruning="error-based", confidence=0.25)`` against J48's
  defaults ``-C 0.25 -M 2``;
* ``binary``: the same with ``nominal_splits="binary"`` against ``-B``;
* ``reduced-error``: ``pruning="reduced-error"`` against ``-R -N 5`` (one fold of five
  held out for pruning); our learner is given the rows J48 holds out (``prune_rows``, from
  Weka's stratification, :func:`j48_prune_rows`), so both prune on the same rows;
* ``unpruned``: ``pruning="none"`` against ``-U`` (J48 3.6 still collapses subtrees that do
  not lower the training error; ours does not).

Datasets with continuous attributes are run twice: as they are (both learners split on
thresholds) and binned (equal-frequency ``--bins`` bins, cut points learned on each fold's
training rows only, as the ID3 family needs them).

Per fold it records both accuracies, the share of test rows on which the two predict the
same class, both tree sizes (nodes, as J48 prints "Size of the tree") and leaves, and
whether the two trees are the same node for node (same tests, thresholds to J48's six
printed decimals, leaf weights to its two). It writes ``compare.json`` (every fold) and
``compare.md`` (mean and standard deviation over the folds) into ``--out`` (default
``results/j48``).

    python scripts/compare_j48.py                 # every dataset (about half an hour)
    python scripts/compare_j48.py --quick         # a smoke run into a scratch folder
    python scripts/compare_j48.py --render results/j48/compare.json   # the table again
    python scripts/compare_j48.py --modes reduced-error --into results/j48/compare.json

A smoke run (``--quick``: weather, house-votes-84 and australian, 3 folds, error-based
only) writes to a scratch folder in the temporary directory, never over results/j48
(unless ``--out`` says where).

Needs Java and Weka 3.6 (Debian: ``apt-get install weka``; ``--weka-jar`` or
``$WEKA_JAR`` if the jar is not ``/usr/share/java/weka.jar``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpc.datasets import (  # noqa: E402
    MISSING,
    Discretizer,
    Table,
    available_datasets,
    load_dataset,
    resolve_data_dir,
)
from mpc.learners.c45 import C45Classifier  # noqa: E402
from mpc.learners.coded_table import CodedTable  # noqa: E402
from mpc.learners.evaluation import accuracy, stratified_kfold  # noqa: E402
from mpc.learners.tree import Leaf, Node, Split, leaf_count, node_count  # noqa: E402

DEFAULT_JAR = "/usr/share/java/weka.jar"

#: J48 -R holds out one of this many folds for pruning (our default holds out 20% too)
J48_PRUNE_FOLDS = 5

#: mode -> (our learner's parameters, J48's options)
MODES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "error-based": ({"pruning": "error-based", "confidence": 0.25}, ["-C", "0.25", "-M", "2"]),
    "binary": (
        {"pruning": "error-based", "confidence": 0.25, "nominal_splits": "binary"},
        ["-C", "0.25", "-M", "2", "-B"],
    ),
    "reduced-error": ({"pruning": "reduced-error"}, ["-R", "-N", "5"]),
    "unpruned": ({"pruning": "none"}, ["-U", "-M", "2"]),
}


def weka_jar(given: str | None = None) -> Path | None:
    """The Weka jar to run (``given``, else ``$WEKA_JAR``, else Debian's), or None when it
    or ``java`` is missing."""
    jar = Path(given or os.environ.get("WEKA_JAR") or DEFAULT_JAR)
    if shutil.which("java") is None or not jar.is_file():
        return None
    return jar


# ------------------------------------------------------------------------------ ARFF


def _quote(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _number(x: float) -> str:
    return "?" if math.isnan(x) else repr(float(x))


def declared_values(table: Table) -> tuple[dict[str, list[str]], list[str]]:
    """Every value of each nominal attribute and every class of ``table``, sorted."""
    values = {
        a: sorted({str(v) for v in col.tolist()} - {MISSING})
        for a, kind, col in zip(table.attributes, table.kinds, table.columns, strict=True)
        if kind == "nominal"
    }
    return values, sorted({str(c) for c in table.target.tolist()})


def write_arff(
    path: Path, table: Table, values: dict[str, list[str]], classes: Sequence[str]
) -> None:
    """``table`` as an ARFF file whose header declares ``values`` and ``classes``."""
    lines = [f"@relation {_quote(table.name)}"]
    for a, kind in zip(table.attributes, table.kinds, strict=True):
        domain = "numeric" if kind == "continuous" else "{" + ",".join(map(_quote, values[a])) + "}"
        lines.append(f"@attribute {_quote(a)} {domain}")
    lines.append(f"@attribute {_quote(table.class_name)} {{{','.join(map(_quote, classes))}}}")
    lines.append("@data")
    columns = [
        [_number(v) for v in col.tolist()]
        if kind == "continuous"
        else ["?" if v == MISSING else _quote(v) for v in map(str, col.tolist())]
        for kind, col in zip(table.kinds, table.columns, strict=True)
    ]
    columns.append([_quote(str(c)) for c in table.target.tolist()])
    lines.extend(",".join(row) for row in zip(*columns, strict=True))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------ J48


def j48_prune_rows(target: Sequence[str], classes: Sequence[str], folds: int = 5) -> list[int]:
    """The rows (indices in file order) that J48 ``-R -N folds`` holds out for pruning:
    Weka's ``Instances.stratify`` (rows grouped by class, each group gathered by swapping
    its later members forward; then every ``folds``-th row dealt into one batch) and the
    last fold of ``testCV``. Given to our learner as ``prune_rows``, both prune on the same
    rows."""
    code = {c: i for i, c in enumerate(classes)}
    cls = [code[str(c)] for c in target]
    n = len(cls)
    order = list(range(n))
    index = 1
    while index < n:
        first = cls[order[index - 1]]
        for j in range(index, n):
            if cls[order[j]] == first:
                order[index], order[j] = order[j], order[index]
                index += 1
        index += 1
    dealt = [order[j] for start in range(folds) for j in range(start, n, folds)]
    fold = folds - 1
    size, extra = n // folds, n % folds
    offset = fold if fold < extra else extra
    first_row = fold * size + offset
    return dealt[first_row : first_row + size + (1 if fold < extra else 0)]


@dataclass
class J48Tree:
    """A node of a tree as J48 prints it: a leaf (``label``, ``n`` training weight,
    ``errors``) or a list of ``(attribute, operator, value, child)`` branches."""

    label: str | None = None
    n: float = 0.0
    errors: float = 0.0
    branches: list[tuple[str, str, str, J48Tree]] | None = None

    @property
    def size(self) -> int:
        return 1 + sum(c.size for _, _, _, c in self.branches or [])


_LEAF = r"(?P<label>.+) \((?P<n>[-0-9.E]+)(?:/(?P<e>[-0-9.E]+))?\)"
_LINE = re.compile(r"^(?P<att>.+?) (?P<op><=|>|=|!=) (?P<value>.*?)(?:: " + _LEAF + r")?$")
_ROOT_LEAF = re.compile(r"^: " + _LEAF + "$")


def parse_j48_tree(text: str) -> J48Tree:
    """The tree of J48's printed model (the lines between the dashes and "Number of
    Leaves")."""
    body = text.split("------------------\n", 1)[1].split("\nNumber of Leaves", 1)[0]
    lines = [line for line in body.strip("\n").splitlines() if line.strip()]
    leaf = _ROOT_LEAF.match(lines[0]) if lines else None
    if leaf:
        return J48Tree(leaf["label"], float(leaf["n"]), float(leaf["e"] or 0))
    root = J48Tree(branches=[])
    stack: list[J48Tree] = [root]
    for line in lines:
        depth = 0
        while line.startswith("|   "):
            line, depth = line[4:], depth + 1
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"cannot read J48's tree line {line!r}")
        del stack[depth + 1 :]
        if m["label"] is not None:
            child = J48Tree(m["label"], float(m["n"]), float(m["e"] or 0))
        else:
            child = J48Tree(branches=[])
        parent = stack[depth]
        assert parent.branches is not None
        parent.branches.append((m["att"], m["op"], m["value"], child))
        stack.append(child)
    return root


def run_j48(
    jar: Path, train: Path, test: Path, options: Sequence[str], *, predictions: bool = True
) -> dict[str, Any]:
    """J48 trained on ``train`` and tested on ``test``: its printed tree (text and parsed),
    size, leaves, test accuracy, and (``predictions``) the predicted class index of every
    test row (-1: none)."""
    base = ["java", "-Xmx3g", "-cp", str(jar), "weka.classifiers.trees.J48", *options]
    files = ["-t", str(train), "-T", str(test)]
    out = subprocess.run([*base, *files, "-v"], capture_output=True, text=True, check=True).stdout
    size = int(re.search(r"Size of the tree :\s*(\d+)", out)[1])  # type: ignore[index]
    leaves = int(re.search(r"Number of Leaves  :\s*(\d+)", out)[1])  # type: ignore[index]
    test_part = out.split("=== Error on test data ===", 1)[1]
    right = re.search(r"Correctly Classified Instances\s+(\d+)", test_part)
    total = re.search(r"Total Number of Instances\s+(\d+)", test_part)
    assert right is not None and total is not None
    result: dict[str, Any] = {
        "text": out.split("\n\nNumber of Leaves", 1)[0],
        "tree": parse_j48_tree(out),
        "size": size,
        "leaves": leaves,
        "accuracy": int(right[1]) / int(total[1]),
    }
    if predictions:
        lines = subprocess.run(
            [*base, *files, "-p", "0"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        predicted = []
        for line in lines:
            fields = line.split()
            if len(fields) >= 3 and fields[0].isdigit():
                m = re.match(r"(\d+):", fields[2])
                predicted.append(int(m[1]) - 1 if m else -1)
        result["predicted"] = predicted
    return result


# ------------------------------------------------------------------------------ trees


def _same_threshold(text: str, t: float) -> bool:
    """Whether J48's printed threshold (at most six decimals) is ``t``."""
    try:
        return abs(float(text) - t) <= 5e-7 + 1e-12 * abs(t)
    except ValueError:
        return False


def tree_differences(ours: Node, j48: J48Tree, path: str = "root") -> list[str]:
    """Where our tree and J48's differ (empty: the same tree node for node): tests,
    thresholds to six decimals, leaf weights and errors to two, and the class of every
    non-empty leaf."""
    if isinstance(ours, Leaf) or j48.branches is None:
        if not (isinstance(ours, Leaf) and j48.branches is None):
            kind = "a leaf" if isinstance(ours, Leaf) else "a split"
            return [f"{path}: ours is {kind}, J48's is not"]
        n = sum(ours.counts.values())
        errors = n - max(ours.counts.values(), default=0.0)
        out = []
        if abs(n - j48.n) > 0.011 or abs(errors - j48.errors) > 0.011:
            out.append(f"{path}: leaf weight {n:.2f}/{errors:.2f} vs J48's {j48.n}/{j48.errors}")
        if n > 1e-6 and ours.label != j48.label:
            out.append(f"{path}: leaf class {ours.label!r} vs J48's {j48.label!r}")
        return out
    assert isinstance(ours, Split)
    theirs = [(a, op, v) for a, op, v, _ in j48.branches]
    if ours.kind == "threshold":
        t = float(ours.threshold or 0.0)
        mine = [(ours.attribute, "<=", str(t)), (ours.attribute, ">", str(t))]
        if len(theirs) == 2 and all(_same_threshold(v, t) for _, _, v in theirs):
            theirs = [(a, op, str(t)) for a, op, _ in theirs]
    elif ours.kind == "binary":
        mine = [(ours.attribute, "=", str(ours.value)), (ours.attribute, "!=", str(ours.value))]
    else:
        mine = [(ours.attribute, "=", key) for key in ours.children]
    if mine != theirs:
        return [f"{path}: ours tests {mine[:3]}..., J48 {theirs[:3]}..."]
    out: list[str] = []
    for child, (a, op, v, j48_child) in zip(ours.children.values(), j48.branches, strict=True):
        out.extend(tree_differences(child, j48_child, f"{path} / {a} {op} {v}"))
    return out


# ------------------------------------------------------------------------------ runs


def fit_ours(
    train: Table,
    values: dict[str, list[str]],
    classes: list[str],
    params: dict[str, Any],
    *,
    prune_rows: Sequence[int] | None = None,
) -> C45Classifier:
    coded = CodedTable.from_table(train, values=values, classes=classes)
    return C45Classifier(**params).fit(coded, prune_rows=prune_rows)


def _variants(table: Table) -> list[str]:
    return ["as is", "binned"] if "continuous" in table.kinds else ["as is"]


def run_fold(
    jar: Path,
    folder: Path,
    train: Table,
    test: Table,
    variant: str,
    bins: int,
    modes: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """Both learners on one fold, every mode."""
    if variant == "binned":
        disc = Discretizer.fit(train, bins)  # cut points from the fold's training rows only
        train, test = disc.transform(train), disc.transform(test)
    values, classes = declared_values(train.concat(test))
    train_arff, test_arff = folder / "train.arff", folder / "test.arff"
    write_arff(train_arff, train, values, classes)
    write_arff(test_arff, test, values, classes)
    out = {}
    for mode in modes:
        params, options = MODES[mode]
        started = time.perf_counter()
        prune_rows = None
        if params.get("pruning") == "reduced-error":
            prune_rows = j48_prune_rows(train.target, classes, J48_PRUNE_FOLDS)
        model = fit_ours(train, values, classes, params, prune_rows=prune_rows)
        ours_s = time.perf_counter() - started
        predicted = model.predict(test)
        started = time.perf_counter()
        j48 = run_j48(jar, train_arff, test_arff, options)
        j48_s = time.perf_counter() - started
        theirs = [classes[k] if k >= 0 else "" for k in j48["predicted"]]
        differences = tree_differences(model.tree_, j48["tree"])
        out[mode] = {
            "accuracy": accuracy(test.target, predicted),
            "j48_accuracy": j48["accuracy"],
            "agreement": float(np.mean(np.asarray(predicted, dtype=str) == np.array(theirs))),
            "size": node_count(model.tree_),
            "j48_size": j48["size"],
            "leaves": leaf_count(model.tree_),
            "j48_leaves": j48["leaves"],
            "same_tree": not differences,
            "first_difference": differences[0] if differences else None,
            "seconds": round(ours_s, 3),
            "j48_seconds": round(j48_s, 3),
        }
    return out


def summarise(folds: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and standard deviation over the folds; sizes as mean, minimum and maximum."""

    def stats(key: str) -> dict[str, float]:
        xs = [f[key] for f in folds]
        return {
            "mean": statistics.fmean(xs),
            "sd": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "min": min(xs),
            "max": max(xs),
        }

    keys = ("accuracy", "j48_accuracy", "agreement", "size", "j48_size", "leaves", "j48_leaves")
    out: dict[str, Any] = {k: stats(k) for k in keys}
    out["difference_points"] = 100 * (out["accuracy"]["mean"] - out["j48_accuracy"]["mean"])
    out["same_trees"] = sum(f["same_tree"] for f in folds)
    out["folds"] = len(folds)
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"C4.5 against Weka J48 {report['weka']}, {report['folds']}-fold cross-validation. "
        f"Folds: stratified, seed {report['seed']}, the same for both learners; one run per "
        "fold (both learners are deterministic). Accuracy: mean ± standard deviation over the "
        "folds, in %; Δ: ours minus J48, in points. Agree: share of test rows on which both "
        'predict the same class. Size: nodes (J48\'s "Size of the tree"), mean over the '
        "folds (minimum-maximum). Same trees: folds whose two trees are equal node for node. "
        f"Binned: {report['bins']} equal-frequency bins, cut points from each fold's "
        "training rows.",
        "",
        f"Run {report['date']} on {report['machine']}; load {report['load_start']} at the "
        f"start, {report['load_end']} at the end."
        + "".join(
            f" Rerun {r['date']} (load {r['load_start']}, then {r['load_end']}): "
            + ", ".join(" ".join(row) for row in r["rows"])
            + "."
            for r in report.get("reruns", [])
        ),
        "",
        "| dataset | attributes | mode | ours % | J48 % | Δ | agree % | size ours | size J48 "
        "| same trees |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        s = row["summary"]

        def pct(k: str, s: dict[str, Any] = s) -> str:
            return f"{100 * s[k]['mean']:.2f} ± {100 * s[k]['sd']:.2f}"

        def size(k: str, s: dict[str, Any] = s) -> str:
            return f"{s[k]['mean']:.1f} ({s[k]['min']}-{s[k]['max']})"

        lines.append(
            f"| {row['dataset']} | {row['variant']} | {row['mode']} | {pct('accuracy')} | "
            f"{pct('j48_accuracy')} | {s['difference_points']:+.2f} | "
            f"{100 * s['agreement']['mean']:.2f} | {size('size')} | {size('j48_size')} | "
            f"{s['same_trees']}/{s['folds']} |"
        )
    return "\n".join(lines) + "\n"


def merged(earlier: dict[str, Any], rerun: dict[str, Any]) -> dict[str, Any]:
    """``earlier`` with the rows of ``rerun`` in place of its rows of the same dataset,
    attributes and mode (new ones appended), and the rerun recorded in ``reruns``."""
    key = ("dataset", "variant", "mode")
    fresh = {tuple(r[k] for k in key): r for r in rerun["rows"]}
    rows = [fresh.pop(tuple(r[k] for k in key), r) for r in earlier["rows"]]
    out = dict(earlier, rows=rows + list(fresh.values()))
    out["reruns"] = [
        *earlier.get("reruns", []),
        {
            "rows": [list(k) for k in (tuple(r[k] for k in key) for r in rerun["rows"])],
            **{k: rerun[k] for k in ("date", "machine", "load_start", "load_end")},
        },
    ]
    return out


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def parser() -> argparse.ArgumentParser:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data-dir", help="the datasets (default: as mpc datasets finds them)")
    p.add_argument("--datasets", help="comma-separated names (default: every one found)")
    p.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(MODES)}")
    p.add_argument("--folds", type=int, default=10)
    p.add_argument(
        "--seed", type=int, default=0, help="seeds the folds only (a public choice; default 0)"
    )
    p.add_argument("--bins", type=int, default=4, help="bins of the binned runs (default 4)")
    p.add_argument("--weka-jar", help=f"the Weka jar (default $WEKA_JAR, else {DEFAULT_JAR})")
    p.add_argument("--out", type=Path, help="output folder (default results/j48)")
    p.add_argument("--quick", action="store_true", help="smoke run into a scratch folder")
    p.add_argument(
        "--into",
        type=Path,
        metavar="JSON",
        help="put this run's rows into an earlier compare.json in place of the rows of the "
        "same dataset, attributes and mode (the rerun is recorded there), and write its "
        "compare.md again",
    )
    p.add_argument(
        "--render",
        type=Path,
        metavar="JSON",
        help="only write compare.md beside this compare.json again (no runs)",
    )
    return p


def weka_version(jar: Path) -> str:
    """The version the Weka jar states (empty if it states none)."""
    version = subprocess.run(
        ["java", "-cp", str(jar), "weka.core.Version"], capture_output=True, text=True
    ).stdout.strip()
    return version.splitlines()[0].strip() if version else ""  # the rest is a self-test


def compare_variant(
    jar: Path,
    folder: Path,
    name: str,
    table: Table,
    variant: str,
    folds: int,
    seed: int,
    bins: int,
    modes: Sequence[str],
) -> list[dict[str, Any]]:
    """Both learners on every fold of dataset ``name`` (``variant``: as is or binned), every
    mode: the report's row of each mode, each printed with its mean accuracies, sizes and
    same trees."""
    per_mode: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    splits = stratified_kfold(table.target, folds, seed=seed)
    for k, (train_idx, test_idx) in enumerate(splits):
        result = run_fold(
            jar, folder, table.subset(train_idx), table.subset(test_idx), variant, bins, modes
        )
        for mode, fold in result.items():
            per_mode[mode].append({"fold": k, **fold})
    rows = []
    for mode, fold_results in per_mode.items():
        row = {
            "dataset": name,
            "rows": table.n_rows,
            "variant": variant,
            "mode": mode,
            "folds": fold_results,
            "summary": summarise(fold_results),
        }
        rows.append(row)
        s = row["summary"]
        print(
            f"{name:15} {variant:7} {mode:14} ours {100 * s['accuracy']['mean']:6.2f}"
            f" J48 {100 * s['j48_accuracy']['mean']:6.2f}"
            f" size {s['size']['mean']:8.1f} / {s['j48_size']['mean']:8.1f}"
            f" same {s['same_trees']}/{s['folds']}",
            flush=True,
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.render is not None:
        saved = json.loads(args.render.read_text(encoding="utf-8"))
        (args.render.parent / "compare.md").write_text(markdown(saved), encoding="utf-8")
        return 0
    jar = weka_jar(args.weka_jar)
    if jar is None:
        print("needs java and the Weka jar: apt-get install weka (or --weka-jar)", file=sys.stderr)
        return 2
    data_dir = resolve_data_dir(args.data_dir)
    names = [d.name for d in available_datasets(data_dir)]
    modes = args.modes.split(",")
    folds = args.folds
    if args.quick:
        names, modes, folds = ["weather", "house-votes-84", "australian"], ["error-based"], 3
    if args.datasets:
        names = args.datasets.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        p.error(f"--modes: unknown {unknown}; choose among {list(MODES)}")
    smoke = args.quick or args.datasets is not None or folds != 10 or modes != list(MODES)
    out = args.out or (
        Path(tempfile.mkdtemp(prefix="compare_j48-")) if smoke else ROOT / "results" / "j48"
    )
    out.mkdir(parents=True, exist_ok=True)
    version = weka_version(jar)
    report: dict[str, Any] = {
        "weka": version or "?",
        "folds": folds,
        "seed": args.seed,
        "bins": args.bins,
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_start": _load(),
        "rows": [],
    }
    with tempfile.TemporaryDirectory(prefix="j48-folds-") as tmp:
        for name in names:
            table, _ = load_dataset(name, data_dir)
            for variant in _variants(table):
                report["rows"] += compare_variant(
                    jar, Path(tmp), name, table, variant, folds, args.seed, args.bins, modes
                )
    report["load_end"] = _load()
    if args.into is not None:
        report = merged(json.loads(args.into.read_text(encoding="utf-8")), report)
        out = args.into.parent
    (out / "compare.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (out / "compare.md").write_text(markdown(report), encoding="utf-8")
    print(f"wrote {out / 'compare.md'} and compare.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
