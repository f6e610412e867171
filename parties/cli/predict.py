"""``mpc predict``: a saved plain model (:mod:`mpc.learners.plain_model`) classifies the rows
of a new CSV file; predictions are written as ``id,class``."""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc.errors import ConfigError
from mpc.learners.evaluation import accuracy, below_majority_warning, unseen_warning
from mpc.learners.plain_model import load_plain_model, read_rows
from mpc.runtime.files import open_private
from parties.params import column_list

__all__ = ["add_predict_parser", "run_predict", "write_predictions"]


def write_predictions(
    out: str | Path | None, ids: Sequence[str] | np.ndarray, predicted: np.ndarray
) -> None:
    """Write CSV ``id,class``, one row per prediction, to ``out`` (a private file, mode 0600)
    or, when ``out`` is None, to standard output."""
    if len(ids) != len(predicted):
        raise ConfigError(f"{len(ids)} ids for {len(predicted)} predictions")
    lines = [("id", "class"), *zip(map(str, ids), map(str, predicted), strict=True)]
    if out is None:
        csv.writer(sys.stdout, lineterminator="\n").writerows(lines)
        return
    with open_private(out, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(lines)


# ------------------------------------------------------------------------ mpc predict


def add_predict_parser(sub: Any) -> None:
    p = sub.add_parser(
        "predict",
        help="classify the rows of a CSV file with a saved plain model (mpc train --model-out)",
        description="Classify every row of --csv with the model of `mpc train --model-out` "
        "and write CSV id,class. The file needs the model's attribute columns (other columns "
        "are ignored), read with the kinds and cut points of training; when it has the class "
        "column too, the accuracy is printed.",
    )
    p.add_argument(
        "--model",
        type=Path,
        required=True,
        metavar="FILE",
        help="a model file written by mpc train --model-out",
    )
    p.add_argument(
        "--csv",
        type=Path,
        required=True,
        metavar="FILE",
        help="the CSV file (with a header row) whose rows to classify",
    )
    p.add_argument(
        "--id",
        dest="id_column",
        metavar="COLUMN",
        help="the column whose values identify the rows (default: row numbers from 0)",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the predictions to FILE (private, mode 0600); default: standard output, "
        "with the summary on standard error",
    )
    p.add_argument(
        "--delimiter", default=",", metavar="C", help="the field delimiter of --csv (default ,)"
    )
    p.add_argument(
        "--missing",
        type=column_list,
        metavar="M,...",
        help="more cell values of --csv that mean missing, such as NA,n/a (a blank cell and ? "
        "always do)",
    )


def run_predict(args: argparse.Namespace) -> int:
    model = load_plain_model(args.model)
    rows = read_rows(
        args.csv,
        model.attributes,
        model.kinds,
        model.class_name,
        id_column=args.id_column,
        delimiter=args.delimiter,
        missing=None if args.missing is None else list(args.missing),
    )
    predicted = model.predict(rows.table)
    write_predictions(args.out, rows.ids, predicted)
    stream = sys.stdout if args.out is not None else sys.stderr
    trained = model.training
    print(
        f"model:      {args.model} ({model.learner}, class {model.class_name!r}, trained on "
        f"{trained.get('data', '?')}: {trained.get('rows', '?')} rows)",
        file=stream,
    )
    print(f"rows:       {rows.table.n_rows} from {args.csv}", file=stream)
    unseen = unseen_warning(model.unseen(rows.table), rows.table.n_rows)
    if unseen:
        print(f"warning:    {unseen}", file=stream)
    if rows.table.class_name:
        score = accuracy(rows.table.target, predicted)
        print(f"accuracy:   {score:.4f} (the file's class column)", file=stream)
        below = below_majority_warning(rows.table.target, score)
        if below:
            print(f"warning:    {below}", file=stream)
    if args.out is not None:
        print(f"wrote:      {args.out} (id,class)", file=stream)
    return 0
