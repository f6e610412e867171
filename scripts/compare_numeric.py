#!/usr/bin/env python3
"""Numbers as numbers: the accuracy of ID3 with threshold splits (exact, and at the cut points
of 32 and 256 bins), of ID3 on 4 equal-frequency bins split multiway (what the private
learners do today), of Weka's J48 and of scikit-learn's ``DecisionTreeClassifier``, on the
same stratified cross-validation folds of every dataset of the data directory that has
continuous columns.

Per fold, every learner trains on the fold's training rows only (bins and thresholds
included) and predicts its test rows:

* ``id3 4 bins``: ``ID3Classifier(bins=4)``, information gain, one branch per bin;
* ``id3 thresholds 32`` / ``256``: ``ID3Classifier(splits="threshold", bins=B)``, two
  branches at one of the B - 1 cut points;
* ``id3 exact thresholds``: ``ID3Classifier(splits="threshold", bins=None)``: every distinct
  value a candidate;
* ``J48``: Weka 3.6's J48 with its defaults (``-C 0.25 -M 2``: C4.5 with error-based pruning
  and two rows per branch at least), on ARFF files declaring every value of the table;
* ``sklearn entropy``: ``DecisionTreeClassifier(criterion="entropy", random_state=seed)``,
  grown fully, nominal columns one-hot (a missing value its own category), missing numbers
  as NaN (scikit-learn sends them where the split's gain is best).

The ID3 rows are fully grown (no depth limit, no pruning): the plain reference the private
learners must equal, not a tuned classifier. It writes ``compare.json`` (every fold) and
``compare.md`` (mean and standard deviation of the accuracy, mean tree size and seconds per
fold) into ``--out`` (default ``results/numeric``); ``--quick`` (australian and autos, 3
folds) writes to a scratch folder, never over the results.

    python scripts/compare_numeric.py               # adult, australian, autos (about 20 minutes)
    python scripts/compare_numeric.py --quick       # a smoke run
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its neighbours

from bench_runs import machine  # noqa: E402
from compare_j48 import declared_values, run_j48, weka_jar, write_arff  # noqa: E402

from mpc.datasets import Table, available_datasets, load_dataset, resolve_data_dir  # noqa: E402
from mpc.learners.evaluation import stratified_kfold  # noqa: E402
from mpc.learners.id3 import ID3Classifier  # noqa: E402
from mpc.learners.tree import node_count  # noqa: E402

#: the ID3 configurations, by the report's name
ID3_RUNS: dict[str, dict[str, Any]] = {
    "id3 4 bins": {"bins": 4},
    "id3 thresholds 32": {"splits": "threshold", "bins": 32},
    "id3 thresholds 256": {"splits": "threshold", "bins": 256},
    "id3 exact thresholds": {"splits": "threshold", "bins": None},
}
LEARNERS = (*ID3_RUNS, "J48", "sklearn entropy")
#: J48's default options: C4.5 with error-based pruning, two rows per branch at least
J48_OPTIONS = ("-C", "0.25", "-M", "2")


def _sklearn_matrix(train: Table, test: Table) -> tuple[np.ndarray, np.ndarray]:
    """The features scikit-learn reads: numbers as they are (NaN missing), nominal columns
    one-hot over the training rows' values (an unseen value all zeros)."""
    parts_train, parts_test = [], []
    for a, kind in zip(train.attributes, train.kinds, strict=True):
        x_tr, x_te = train.column(a), test.column(a)
        if kind == "continuous":
            parts_train.append(np.asarray(x_tr, dtype=np.float64)[:, None])
            parts_test.append(np.asarray(x_te, dtype=np.float64)[:, None])
            continue
        values = sorted({str(v) for v in x_tr.tolist()})
        tr, te = np.asarray(x_tr, dtype=str), np.asarray(x_te, dtype=str)
        parts_train.append(np.stack([tr == v for v in values], axis=1).astype(np.float64))
        parts_test.append(np.stack([te == v for v in values], axis=1).astype(np.float64))
    return np.hstack(parts_train), np.hstack(parts_test)


def run_fold(
    jar: Path | None, folder: Path, train: Table, test: Table, seed: int
) -> dict[str, Any]:
    """Every learner on one fold: its accuracy, tree size and seconds."""
    want = np.asarray(test.target, dtype=str)
    out: dict[str, Any] = {}
    for name, params in ID3_RUNS.items():
        started = time.perf_counter()
        model = ID3Classifier(**params).fit(train)
        predicted = np.asarray(model.predict(test), dtype=str)
        out[name] = {"accuracy": float(np.mean(predicted == want)),
                     "size": node_count(model.tree_),
                     "seconds": round(time.perf_counter() - started, 3)}  # fmt: skip
    if jar is not None:
        values, classes = declared_values(train.concat(test))
        tr, te = folder / "train.arff", folder / "test.arff"
        write_arff(tr, train, values, classes)
        write_arff(te, test, values, classes)
        started = time.perf_counter()
        j48 = run_j48(jar, tr, te, J48_OPTIONS, predictions=False)
        out["J48"] = {"accuracy": j48["accuracy"], "size": j48["size"],
                      "seconds": round(time.perf_counter() - started, 3)}  # fmt: skip
    from sklearn.tree import DecisionTreeClassifier  # an optional dependency of this script

    started = time.perf_counter()
    x_tr, x_te = _sklearn_matrix(train, test)
    tree = DecisionTreeClassifier(criterion="entropy", random_state=seed)
    tree.fit(x_tr, np.asarray(train.target, dtype=str))
    out["sklearn entropy"] = {"accuracy": float(np.mean(tree.predict(x_te) == want)),
                              "size": int(tree.tree_.node_count),
                              "seconds": round(time.perf_counter() - started, 3)}  # fmt: skip
    return out


def compare(names: list[str], folds: int, seed: int, jar: Path | None) -> list[dict[str, Any]]:
    data_dir = resolve_data_dir(None)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            table, _ = load_dataset(name, data_dir)
            per: dict[str, list[dict[str, Any]]] = {k: [] for k in LEARNERS}
            for k, (tr, te) in enumerate(stratified_kfold(table.target, folds, seed=seed)):
                print(f"[numeric] {name}: fold {k + 1} of {folds} ...", file=sys.stderr, flush=True)
                got = run_fold(jar, Path(scratch), table.subset(tr), table.subset(te), seed)
                for learner, r in got.items():
                    per[learner].append({"fold": k, **r})
            rows.append({"dataset": name, "rows": table.n_rows,
                         "continuous": sum(kd == "continuous" for kd in table.kinds),
                         "attributes": len(table.attributes), "folds": per})  # fmt: skip
    return rows


def numeric_datasets() -> list[str]:
    """The datasets of the data directory with at least one continuous column."""
    data_dir = resolve_data_dir(None)
    return [d.name for d in available_datasets(data_dir)
            if "continuous" in load_dataset(d.name, data_dir)[0].kinds]  # fmt: skip


def _stat(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def markdown(rows: list[dict[str, Any]], header: str, folds: int, seed: int) -> str:
    lines = [
        f"Accuracy on {folds}-fold stratified cross-validation (seed {seed}), every learner on "
        f"the same folds; {header}",
        "",
        "| dataset | learner | accuracy (mean ± sd) | tree nodes (mean) | s per fold |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        title = (
            f"{r['dataset']} ({r['rows']:,} rows, {r['continuous']} of {r['attributes']} numeric)"
        )
        for learner in LEARNERS:
            got = r["folds"].get(learner) or []
            if not got:
                continue
            mean, sd = _stat([f["accuracy"] for f in got])
            size = statistics.mean(f["size"] for f in got)
            secs = statistics.mean(f["seconds"] for f in got)
            lines.append(
                f"| {title} | {learner} | {mean:.4f} ± {sd:.4f} | {size:,.0f} | {secs:.2f} |"
            )
            title = ""
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--datasets", default=None,
        help="comma-separated (default: every dataset with continuous columns)",
    )  # fmt: skip
    p.add_argument("--folds", type=int, default=10, help="cross-validation folds (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the folds (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="australian and autos, 3 folds, into a scratch folder")  # fmt: skip
    p.add_argument(
        "--out", type=Path, default=None,
        help="where to write compare.json and compare.md (default results/numeric)",
    )  # fmt: skip
    args = p.parse_args(argv)
    if args.quick:
        names, folds = ["australian", "autos"], 3
        out = args.out or Path(tempfile.mkdtemp(prefix="numeric-"))
    else:
        names = args.datasets.split(",") if args.datasets else numeric_datasets()
        folds, out = args.folds, args.out or ROOT / "results" / "numeric"
    jar = weka_jar()
    if jar is None:
        print("[numeric] no java or Weka jar (apt-get install weka): J48 left out", file=sys.stderr)
    rows = compare(names, folds, args.seed, jar)
    header = machine()
    text = markdown(rows, header, folds, args.seed)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    report = {"machine": header, "folds": folds, "seed": args.seed, "rows": rows}
    (out / "compare.json").write_text(json.dumps(report, indent=1))
    (out / "compare.md").write_text(text)
    print(f"[numeric] wrote {out / 'compare.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
