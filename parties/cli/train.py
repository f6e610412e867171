"""``mpc datasets`` and ``mpc train``: the datasets found, and plain reference trees on them.

``mpc train`` evaluates a plain learner the way every experiment of this project does:
with ``--cv K`` by stratified K-fold cross-validation (discretisation learned per fold on the
training part only); on a test set of its own (adult's test file, or ``--test FILE`` with
``--csv``) by training on all training rows and testing on the test set; otherwise by 10-fold
cross-validation. The tree it prints (and exports with ``--tree-out`` / ``--dot`` /
``--model-out``) is learned on all training rows: with a test set, it is the very tree that
was tested, so ``mpc predict --model FILE`` on the test file gives ``--predictions-out``'s
predictions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mpc.datasets import (
    KNOWN_DATASETS,
    MISSING,
    available_datasets,
    kinds_warning,
    load_csv,
    load_dataset,
    resolve_data_dir,
    write_party_files,
)
from mpc.datasets.fetch import fetch_dataset, import_dataset, user_data_dir
from mpc.datasets.table import DATA_DIR_ENV
from mpc.errors import ConfigError
from mpc.learners.c45 import C45Classifier
from mpc.learners.criteria import CRITERIA
from mpc.learners.evaluation import (
    accuracy,
    below_majority_warning,
    confusion_matrix,
    cross_validate,
    format_confusion,
    unseen_warning,
)
from mpc.learners.id3 import SPLITS, ID3Classifier
from mpc.learners.plain_model import PlainModel, read_rows, save_plain_model
from mpc.learners.plot import plot_tree
from mpc.learners.tree import (
    depth,
    leaf_count,
    node_count,
    render,
    room_for_deep_trees,
    to_dot,
    to_json,
)
from mpc.runtime.files import write_private
from mpc.runtime.monitor import ProgressLine
from parties.cli.predict import write_predictions
from parties.params import column_list

if TYPE_CHECKING:
    from mpc.datasets import Discretizer, Table
    from mpc.runtime.monitor import ProgressLine

__all__ = ["add_datasets_parser", "add_train_parser", "run_datasets", "run_train"]


def add_data_options(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", metavar="NAME", help="a UCI dataset by name (see `mpc datasets`)")
    src.add_argument("--csv", type=Path, metavar="FILE", help="any CSV file with a header row")
    p.add_argument(
        "--class", dest="class_column", metavar="COLUMN", help="the class column of --csv"
    )
    p.add_argument(
        "--id",
        dest="id_column",
        metavar="COLUMN",
        help="the record id column of --csv: never an attribute (a column with a different "
        "value in every row is refused without it, or without --nominal naming it)",
    )
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="where the UCI datasets are (default: $MPC_DATA_DIR, else "
        f"../shared/datasets next to the repository, else {user_data_dir()}); weather and "
        "the tables the package ships need none",
    )


def add_datasets_parser(sub: Any) -> None:
    p = sub.add_parser(
        "datasets",
        help="list the datasets found (rows, columns, class, source); fetch or import one",
        description="List the named datasets found in the data directory: --data-dir, else "
        "$MPC_DATA_DIR, else the one next to the repository, else "
        f"{user_data_dir()} (where fetch and import write). `mpc datasets fetch NAME` "
        "downloads a dataset from the UCI archive, `mpc datasets import NAME FILE...` takes "
        "copies you have; both check every file's size and SHA-256 first. `mpc datasets "
        "split NAME --parts ...` cuts a dataset into one CSV file per organisation.",
    )
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    actions = p.add_subparsers(dest="datasets_command", metavar="ACTION")
    fetch = actions.add_parser(
        "fetch", help="download named datasets from the UCI archive, each file checked"
    )
    fetch.add_argument("names", nargs="+", metavar="NAME", help="dataset names (car, adult, ...)")
    fetch.add_argument("--data-dir", metavar="DIR", help="where to write them")
    fetch.add_argument(
        "--from", dest="base", metavar="URL",
        help="the archive's machine-learning-databases/ address (default: the UCI archive's)",
    )  # fmt: skip
    imp = actions.add_parser(
        "import", help="take copies of a named dataset's files, each recognised by its SHA-256"
    )
    imp.add_argument("name", metavar="NAME", help="the dataset's name")
    imp.add_argument("files", nargs="+", type=Path, metavar="FILE", help="its files")
    imp.add_argument("--data-dir", metavar="DIR", help="where to write it")
    split = actions.add_parser(
        "split",
        help="cut a named dataset into one CSV file per organisation, as each would hold it",
        description="Write PARTY.csv for each party of --parts: an id column all share, the "
        "party's own columns and, at the last party (or --class-at), the class; each file "
        "lists the records in an order of its own. With --new N the last N records of a "
        "shuffle (--seed) go to PARTY-new.csv instead, without the class: new records to "
        "classify with a trained model.",
    )
    split.add_argument("name", metavar="NAME", help="the dataset's name (see mpc datasets)")
    split.add_argument(
        "--parts",
        required=True,
        metavar="PARTY=COL,...;...",
        help="each party's name and columns, parties separated by ';' (e.g. "
        "'bank=buying,maint;garage=lug_boot,safety')",
    )
    split.add_argument(
        "--class-at", metavar="PARTY", help="who holds the class (default: the last)"
    )
    split.add_argument("--new", type=int, default=0, metavar="N", help="new records (default 0)")
    split.add_argument("--seed", type=int, default=0, help="seed of the shuffle (default 0)")
    split.add_argument("--out", type=Path, default=Path("."), metavar="DIR",
                       help="where to write the files (default: here)")  # fmt: skip
    split.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")


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
        "discretised, cut points learned on each fold's training rows); c45: C4.5 as Weka's "
        "J48 grows it (gain ratio, thresholds on continuous columns), pruned by --pruning",
    )
    add_data_options(p)
    p.add_argument(
        "--nominal",
        metavar="COL,...",
        help="--csv columns read as nominal values even when they look like numbers "
        "(integer-coded categories); other columns keep their inferred kind",
    )
    p.add_argument(
        "--continuous",
        metavar="COL,...",
        help="--csv columns read as numbers (id3 bins them, c45 splits on thresholds)",
    )
    p.add_argument(
        "--delimiter", metavar="C", help="the field delimiter of --csv and --test (default ,)"
    )
    p.add_argument(
        "--missing",
        metavar="M,...",
        help="more cell values of --csv and --test that mean missing, such as NA,n/a (a blank "
        "cell and ? always do)",
    )
    p.add_argument("--cv", type=int, default=None, metavar="K", help="K-fold cross-validation")
    p.add_argument(
        "--test",
        type=Path,
        metavar="FILE",
        help="with --csv: evaluate on this CSV file (the class column and every attribute of "
        "--csv, read with the same kinds) instead of by cross-validation",
    )
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
        default=None,
        help="equal-frequency bins for continuous columns under id3 (default: 4): one branch "
        "per bin, or with --splits threshold the bins' cut points as the candidate thresholds "
        "(default there: every distinct value)",
    )
    p.add_argument(
        "--splits",
        choices=list(SPLITS),
        default="multiway",
        help="how id3 splits a continuous column: multiway (into its bins, one branch each; "
        "the default) or threshold (in two, <= t and > t, as CART and C4.5 do; the column "
        "may be split again below, and a missing value goes to <= t)",
    )
    p.add_argument("--max-depth", type=int, default=None, help="stop growing at this depth")
    p.add_argument(
        "--min-samples-split",
        type=int,
        default=None,
        help="id3: do not split nodes with fewer rows",
    )
    p.add_argument(
        "--criterion",
        choices=list(CRITERIA),
        default=None,
        help="id3's split criterion: entropy (information gain, the default), gini (MPyC's), "
        "gini-impurity (CART's) or entropy-fixed; the private learners' --criterion, so that "
        "a tree of `mpc run ppid3 --reveal tree` (Gini by default) can be grown here in plain",
    )
    _add_c45_options(p)
    _add_outputs(p)


def _add_c45_options(p: argparse.ArgumentParser) -> None:
    """The options of ``--learner c45``."""
    p.add_argument(
        "--pruning",
        choices=("error-based", "reduced-error", "none"),
        default="reduced-error",
        help="c45 pruning: error-based (C4.5's pessimistic estimate with subtree raising, as "
        "Weka's J48 by default), reduced-error on 20%% of the training rows (the default; "
        "J48's -R), or none",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=0.25,
        metavar="CF",
        help="c45 --pruning error-based: the confidence level of the pessimistic error "
        "estimate, in (0, 0.5]; smaller prunes more (default 0.25, J48's -C)",
    )
    p.add_argument(
        "--nominal-splits",
        choices=("multiway", "binary"),
        default="multiway",
        help="c45 splits on nominal attributes",
    )


def _add_outputs(p: argparse.ArgumentParser) -> None:
    """What ``mpc train`` writes besides its summary."""
    p.add_argument("--tree-out", type=Path, metavar="FILE", help="write the tree as JSON")
    p.add_argument("--dot", type=Path, metavar="FILE", help="write the tree as Graphviz DOT")
    p.add_argument(
        "--plot",
        type=Path,
        metavar="FILE",
        help="draw the tree to FILE.svg or FILE.png, leaves with their class counts (a tree of "
        "more than 50 nodes to the depth that keeps it within 50; needs matplotlib: the "
        "experiments extra)",
    )
    p.add_argument(
        "--model-out",
        type=Path,
        metavar="FILE",
        help="save the model (the printed tree, its columns and their kinds, id3's cut points) "
        "for `mpc predict`; private, mode 0600",
    )
    p.add_argument(
        "--predictions-out",
        type=Path,
        metavar="FILE",
        help="write the test set's predictions as CSV id,class (id: the row number in the "
        "test file, from 0), made by the printed and saved tree; needs a test set of its own "
        "(adult, or --csv with --test) and no --cv",
    )
    p.add_argument("--json", action="store_true", help="print a JSON summary")


def _target_dir(value: str | None) -> Path:
    """Where fetch and import write: --data-dir, else $MPC_DATA_DIR, else the user's data
    directory (created)."""
    if value:
        return Path(value)
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else user_data_dir()


def run_datasets(args: argparse.Namespace) -> int:
    if args.datasets_command == "fetch":
        target = _target_dir(args.data_dir)
        for name in args.names:
            folder = fetch_dataset(
                name, target, base=args.base, progress=lambda line: print(f"[mpc] {line}",
                                                                           file=sys.stderr)
            )  # fmt: skip
            print(f"{name}: {folder} (every file's SHA-256 checked)")
        return 0
    if args.datasets_command == "split":
        return _split(args)
    if args.datasets_command == "import":
        folder = import_dataset(args.name, _target_dir(args.data_dir), args.files)
        print(f"{args.name}: {folder} (every file's SHA-256 checked)")
        return 0
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
    shown = data_dir if data_dir else "none found; the tables the package ships"
    print(f"data directory: {shown}")
    print(f"{'name':<16} {'rows':>7} {'attrs':>5}  {'class':<12} source")
    for i in infos:
        d = _info_dict(i)
        print(
            f"{d['name']:<16} {d['rows']:>7} {d['attributes']:>5}  {d['class']:<12} {d['source']}"
        )
    absent = [n for n in KNOWN_DATASETS if n not in {i.name for i in infos}]
    if absent:
        print(f"not found: {', '.join(absent)} (mpc datasets fetch NAME downloads one)")
    return 0


def _parts(text: str) -> dict[str, list[str]]:
    """``--parts 'bank=buying,maint;garage=lug_boot,safety'`` as party -> columns."""
    parts: dict[str, list[str]] = {}
    for item in text.split(";"):
        party, sep, columns = item.partition("=")
        cols = [c.strip() for c in columns.split(",") if c.strip()]
        if not sep or not party.strip() or not cols or party.strip() in parts:
            raise ConfigError(
                f"--parts: expected PARTY=COL,... for each party, separated by ';', each party "
                f"once; got {item!r}"
            )
        parts[party.strip()] = cols
    return parts


def _split(args: argparse.Namespace) -> int:
    table, _ = load_dataset(args.name, resolve_data_dir(args.data_dir))
    written = write_party_files(
        table, _parts(args.parts), args.out, class_at=args.class_at, new=args.new,
        seed=args.seed,
    )  # fmt: skip
    for f in written:
        print(f"{f.path}: {f.records} records ({', '.join(f.header)})")
    return 0


def _info_dict(info: Any) -> dict[str, Any]:
    d = asdict(info) if is_dataclass(info) and not isinstance(info, type) else dict(info)
    d = {k: (str(v) if isinstance(v, Path) else v) for k, v in d.items()}
    d.setdefault("name", getattr(info, "name", "?"))
    d["rows"] = d.get("rows", d.get("n_rows"))
    d["attributes"] = d.get("attributes", d.get("n_attributes"))
    d["class"] = d.get("class_name", d.get("class"))
    src = d.get("source", d.get("sources", d.get("files", "")))
    d["source"] = ", ".join(map(str, src)) if isinstance(src, list | tuple) else str(src)
    return d


def _columns(value: str | None, option: str) -> list[str] | None:
    """The column names of ``--nominal A,B`` (:func:`parties.params.column_list`; None when
    the option is not given); a wrong list is a ``ConfigError`` naming the option."""
    if value is None:
        return None
    try:
        return list(column_list(value))
    except argparse.ArgumentTypeError:
        raise ConfigError(
            f"{option} needs column names separated by commas, got {value!r}"
        ) from None


#: the options that only a --csv file takes, and why a named dataset does without them
_CSV_ONLY = {
    "class_column": ("--class", "a named dataset knows its class column"),
    "id_column": ("--id", "a named dataset has no record id column"),
    "nominal": ("--nominal", "a named dataset's schema declares its column kinds"),
    "continuous": ("--continuous", "a named dataset's schema declares its column kinds"),
    "delimiter": ("--delimiter", "a named dataset's schema declares its delimiter"),
    "missing": ("--missing", "a named dataset's schema declares its missing-value marker"),
    "test": ("--test", "a named dataset brings its own test split, if it has one"),
}


def load_tables(args: argparse.Namespace) -> tuple[Table, Table | None]:
    """The training table and the test table (None: none of its own) that ``args`` name;
    ``args`` has the options of :func:`add_data_options` and may have those of ``mpc train``
    (``--nominal``, ``--continuous``, ``--delimiter``, ``--missing``, ``--test``)."""

    given = {dest: getattr(args, dest, None) for dest in _CSV_ONLY}
    if args.csv is None:
        for dest, (option, reason) in _CSV_ONLY.items():
            if given[dest] is not None:
                raise ConfigError(f"{option} goes with --csv; {reason}")
        return load_dataset(args.dataset, resolve_data_dir(args.data_dir))
    if not args.class_column:
        raise ConfigError("--csv needs --class COLUMN naming the class column")
    nominal = _columns(given["nominal"], "--nominal")
    continuous = _columns(given["continuous"], "--continuous")
    if continuous is not None and nominal is None:
        nominal = []  # the columns not listed keep their inferred kind
    delimiter = "," if given["delimiter"] is None else given["delimiter"]
    missing = _columns(given["missing"], "--missing")
    train = load_csv(
        args.csv, args.class_column, nominal=nominal, continuous=continuous, delimiter=delimiter,
        id_column=given["id_column"], missing=missing,
    )  # fmt: skip
    if given["test"] is None:
        return train, None
    rows = read_rows(
        given["test"], train.attributes, train.kinds, train.class_name, delimiter=delimiter,
        id_column=given["id_column"], need_class=True, missing=missing,
    )  # fmt: skip
    return train, rows.table


def _column_summary(table: Table, disc: Discretizer | None) -> list[dict[str, Any]]:
    """Each attribute's name and kind; a nominal one's number of values, a binned one's cut
    points and bin labels."""

    out: list[dict[str, Any]] = []
    for a, kind, col in zip(table.attributes, table.kinds, table.columns, strict=True):
        entry: dict[str, Any] = {"name": a, "kind": kind}
        if kind == "nominal":
            entry["values"] = len(set(col.tolist()) - {MISSING})
        elif disc is not None:
            entry["cut_points"] = list(disc.edges[a])
            entry["bins"] = list(disc.labels(a))
        out.append(entry)
    return out


def _describe(column: dict[str, Any]) -> str:
    if column["kind"] == "nominal":
        return f"nominal, {column['values']} values"
    if "bins" in column:
        n = len(column["bins"])
        return f"continuous, {n} bin{'s' if n != 1 else ''}: {', '.join(column['bins'])}"
    return "continuous, threshold splits"


def _bins(args: argparse.Namespace) -> int | None:
    """``--bins``, or its default: 4 bins for multiway splits, every distinct value as a
    threshold (None) for threshold splits."""
    if args.bins is not None:
        return int(args.bins)
    return None if args.splits == "threshold" else 4


def _learner(args: argparse.Namespace) -> Any:
    if args.learner == "id3":
        return ID3Classifier(
            max_depth=args.max_depth, min_samples_split=args.min_samples_split,
            bins=_bins(args), criterion=args.criterion or "entropy", splits=args.splits,
        )  # fmt: skip
    if args.criterion is not None:
        raise ConfigError("--criterion chooses id3's split criterion; c45 uses the gain ratio")
    return C45Classifier(
        pruning=args.pruning,
        confidence=args.confidence,
        nominal_splits=args.nominal_splits,
        max_depth=args.max_depth,
        seed=args.seed,
    )


def run_train(args: argparse.Namespace) -> int:
    display = ProgressLine(sys.stderr)
    try:
        return _train(args, display)
    finally:
        display.close()


def _train(args: argparse.Namespace, display: ProgressLine) -> int:
    """``mpc train``: progress lines go to ``display`` (a
    :class:`mpc.runtime.monitor.ProgressLine`); with ``--json`` none do."""

    say = (lambda line: None) if args.json else display.note
    fold = (lambda line: None) if args.json else display.update
    if args.cv is not None and args.cv < 2:
        raise ConfigError(f"--cv must be at least 2, got {args.cv}")
    if args.bins is not None and args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    if args.splits != "multiway" and args.learner != "id3":
        raise ConfigError("--splits chooses how id3 splits numbers; c45 splits them at thresholds")
    if args.test is not None and args.cv is not None:
        raise ConfigError("--test and --cv are two ways to evaluate; give one of them")
    started = time.perf_counter()
    no_test = (
        "--predictions-out writes the predictions of a test set, and this run has none "
        "(cross-validation predicts each row with a tree of its own fold): use a dataset "
        "with a test split (adult) or --csv with --test FILE, without --cv"
    )
    if args.predictions_out is not None and (
        args.cv is not None or (args.csv is not None and args.test is None)
    ):
        raise ConfigError(no_test)
    train, test = load_tables(args)
    if args.predictions_out is not None and test is None:
        raise ConfigError(no_test)
    if args.csv is not None:
        warning = kinds_warning(train)
        if warning is not None:
            display.note(warning)
    say(
        f"loaded {train.name}: {train.n_rows} rows, {len(train.attributes)} attributes"
        + (f", test split {test.n_rows} rows" if test is not None else "")
    )

    doc, model, disc = _evaluate(args, train, test, display, fold)
    try:
        with room_for_deep_trees():  # a number split a few records at a time nests deep
            picture = _write_outputs(args, doc, model, disc, train)
            doc["wall_s"] = round(time.perf_counter() - started, 3)
            if args.json:
                doc["tree"] = to_json(model.tree_)
                print(json.dumps(doc, indent=2))
                return 0
            _print_summary(args, doc, model, train, picture)
    except RecursionError:  # a tree nested deeper than that room
        raise ConfigError(
            f"the tree is {depth(model.tree_)} levels deep: too deep to write as nested JSON "
            "or to draw (a number split a few records at a time); give --max-depth"
        ) from None
    return 0


def _fit(args: argparse.Namespace, tr: Table) -> tuple[Any, Discretizer | None]:
    """The learner fitted on ``tr``; id3 bins its continuous columns with cut points it
    learns on ``tr`` (so each fold of a cross-validation bins on its own training rows)."""
    model = _learner(args).fit(tr)
    return model, getattr(model, "discretizer_", None)


def _evaluate(
    args: argparse.Namespace, train: Table, test: Table | None, display: ProgressLine,
    fold: Any,
) -> tuple[dict[str, Any], Any, Discretizer | None]:  # fmt: skip
    """Cross-validation, or training on every training row and testing on the test table;
    the summary's document, the tree learned on every training row and its discretizer."""
    doc: dict[str, Any] = {"dataset": train.name, "learner": args.learner, "rows": train.n_rows}
    if args.cv is not None or test is None:
        k = args.cv or 10
        res = cross_validate(lambda: _learner(args), train, k, seed=args.seed, progress=fold)
        display.close()
        doc.update(
            evaluation=f"{k}-fold cross-validation (stratified, seed {args.seed})",
            accuracy=res.accuracy,
            fold_accuracies=res.fold_accuracies,
            classes=res.classes,
            confusion=res.confusion.tolist(),
            test_rows=train.n_rows,
        )
        model, disc = _fit(args, train)
    else:
        # learned on all training rows: the tree tested here is the one printed and saved
        model, disc = _fit(args, train)
        predicted = model.predict(test)
        classes = sorted({str(c) for c in train.target} | {str(c) for c in test.target})
        doc.update(
            evaluation=f"train on {train.n_rows} rows, test on {test.n_rows} rows",
            accuracy=accuracy(test.target, predicted),
            classes=classes,
            confusion=confusion_matrix(test.target, predicted, classes).tolist(),
            test_rows=test.n_rows,
        )
        warned = [unseen_warning(model.unseen_values(test), test.n_rows),
                  below_majority_warning(test.target, doc["accuracy"])]  # fmt: skip
        doc["warnings"] = [w for w in warned if w]
        if args.predictions_out is not None:
            ids = [str(i) for i in range(test.n_rows)]
            write_predictions(args.predictions_out, ids, predicted)
            doc["predictions_out"] = str(args.predictions_out)
    tree = model.tree_
    doc.update(
        columns=_column_summary(train, disc),
        nodes=node_count(tree),
        leaves=leaf_count(tree),
        depth=depth(tree),
        discretizer=None if disc is None else disc.to_dict(),
        params=model.get_params(),
    )
    return doc, model, disc


def _write_outputs(
    args: argparse.Namespace, doc: dict[str, Any], model: Any, disc: Discretizer | None,
    train: Table,
) -> Any:  # fmt: skip
    """The saved model, the tree as JSON and DOT, its picture (what the options ask for);
    returns the picture's :class:`~mpc.learners.plot.PlotInfo`, or None."""
    tree = model.tree_
    picture = None
    if args.model_out:
        training = {
            "data": train.name,
            "source": train.source,
            "rows": train.n_rows,
            "bins": None if disc is None else _bins(args),
        }
        plain = PlainModel.from_fitted(args.learner, model, train, disc, training=training)
        saved = save_plain_model(args.model_out, plain)
        doc.update(model_out=str(args.model_out), model_id=saved.model_id)
    if args.tree_out:
        write_private(args.tree_out, json.dumps(to_json(tree), indent=2) + "\n")
    if args.dot:
        write_private(args.dot, to_dot(tree, name=train.name))
    if args.plot:
        title = f"{train.name}: {args.learner} on all {train.n_rows} training rows"
        picture = plot_tree(tree, args.plot, title=title)
        doc.update(plot=str(picture.path), plot_left_out=picture.left_out)
    return picture


def _print_summary(
    args: argparse.Namespace, doc: dict[str, Any], model: Any, train: Table, picture: Any
) -> None:
    tree = model.tree_
    print(f"dataset:    {train.name} ({train.n_rows} rows, class {train.class_name!r})")
    print(f"columns:    {len(train.attributes)} attributes")
    width = max((len(c["name"]) for c in doc["columns"]), default=0)
    for column in doc["columns"]:
        print(f"  {column['name']:<{width}}  {_describe(column)}")
    print(f"learner:    {args.learner} {model.get_params()}")
    print(f"evaluation: {doc['evaluation']}")
    print(f"accuracy:   {doc['accuracy']:.4f}")
    for warning in doc.get("warnings", []):
        print(f"warning:    {warning}")
    print("confusion (rows: true class, columns: predicted):")
    print("\n".join("  " + line for line in format_confusion(doc["classes"], doc["confusion"])))
    print(
        f"tree (learned on all {train.n_rows} training rows): {doc['nodes']} nodes, "
        f"{doc['leaves']} leaves, depth {doc['depth']}"
    )
    text = render(tree)
    lines = text.splitlines()
    print("\n".join(lines[:60]))
    if len(lines) > 60:
        print(f"... ({len(lines) - 60} more lines; --tree-out FILE writes the whole tree)")
    if args.model_out:
        print(f"model:      {args.model_out} (for mpc predict; model id {doc['model_id']})")
    if picture is not None:
        left = f"; {picture.left_out} nodes left out" if picture.left_out else ""
        print(f"picture:    {picture.path} ({picture.drawn} nodes drawn{left})")
    if args.predictions_out is not None:
        print(f"predicted:  {args.predictions_out} (id,class of the {doc['test_rows']} test rows)")
