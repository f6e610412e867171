"""``mpc sanitize``: prepare a release that protects confidential cells against decision-tree
inference (Chang & Tracy; :mod:`mpc.learners.adaptive_modification`).

High names the confidential cells (``--mask FILE`` of ``row,attribute`` lines, rows counted
from 0 in file order, or ``--confidential N --seed S`` to draw N of the known cells). The
dataset's class column is an ordinary attribute (Section 2.1): it may hold confidential cells
and its values may be blocked (``--class-role kept`` keeps it out). The release has the
confidential cells and every blocked value as ``"?"``. The run prints every modification
(attribute, row, method, net loss) and ``E`` (the share of confidential cells that trees
trained on the release misclassify) and ``F`` (the loss of functionality) before and after;
it keeps ``F <= --threshold``. Progress goes to stderr (``--quiet`` silences it).

Variants: ``--control as-written`` (Section 3.4, default: every round is kept until F would
exceed the threshold) or ``undo-no-gain`` (rounds that do not raise E are undone too);
``--method best-first --rank expected|flips --max-modifications N`` (footnote 5, to N hidden
values); ``--pruning error-based|reduced-error`` (the trees' pruning).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mpc.errors import ConfigError
from mpc.learners import adaptive_modification as am
from mpc.learners import confidential_release as cr
from mpc.runtime.files import open_private
from parties.cli.train import add_data_options, load_tables

__all__ = [
    "add_sanitize_parser",
    "check_method_options",
    "read_mask",
    "run_sanitize",
    "write_release",
]


def add_sanitize_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sanitize",
        help="block values so that trees cannot infer confidential cells (Chang & Tracy)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_data_options(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--confidential",
        type=int,
        metavar="N",
        help="draw N confidential cells among the known cells (with --seed)",
    )
    which.add_argument(
        "--mask", type=Path, metavar="FILE", help="CSV of confidential cells: row,attribute"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the draw of the --confidential cells (default 0), and of nothing "
        "else: the data owner's choice for an experiment; whoever knows the seed knows which "
        "cells are confidential, so name them with --mask for a real release",
    )
    p.add_argument(
        "--class-role",
        choices=("ordinary", "kept"),
        default="ordinary",
        help="ordinary (default, Section 2.1): the dataset's class column is an attribute like "
        "the others, it may hold confidential cells and its values may be blocked; kept: it "
        "holds no confidential cell and only I2 blocks its values",
    )
    p.add_argument(
        "--threshold",
        type=float,
        required=True,
        metavar="V",
        help="the largest loss of functionality F allowed (e.g. 0.25)",
    )
    p.add_argument(
        "--method",
        choices=("adaptive", "best-first", "exhaustive"),
        default="adaptive",
        help="adaptive modification (Section 3, default), best-first search (footnote 5) or "
        "exhaustive search (tiny tables only)",
    )
    p.add_argument(
        "--control",
        choices=am.CONTROLS,
        help="adaptive: as-written (default, Section 3.4: keep every round, stop when F would "
        "exceed the threshold) or undo-no-gain (also undo every round that does not raise E)",
    )
    p.add_argument(
        "--rank",
        choices=am.RANKS,
        help="best-first: rank the values by their expected effect on the error (expected, "
        "default) or by the confidential cells they turn wrong (flips)",
    )
    p.add_argument(
        "--max-modifications",
        type=int,
        metavar="N",
        help="adaptive, best-first: stop after N hidden values (best-first runs to N whatever "
        "its estimates say; the paper's best-first made 11)",
    )
    p.add_argument(
        "--pruning",
        choices=cr.PRUNINGS,
        default=cr.DEFAULT_PRUNING,
        help=f"the pruning of the C4.5 trees (default {cr.DEFAULT_PRUNING}): error-based (C4.5's "
        "own, confidence 0.25) or reduced-error (on a fixed 20%% of each tree's rows)",
    )
    p.add_argument(
        "--max-hidden",
        type=int,
        default=2,
        metavar="G",
        help="exhaustive: try every set of at most G hidden values (default 2)",
    )
    p.add_argument(
        "--restore-until",
        type=float,
        metavar="R",
        help="then attack the release (Section 4.3) and hide again, treating restored "
        "values as confidential, until at most a share R of blocked values is restored",
    )
    p.add_argument("--out", type=Path, required=True, metavar="FILE", help="the release (CSV)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def read_mask(path: Path, attributes: list[str], n_rows: int) -> np.ndarray:
    """A confidential mask from a CSV of ``row,attribute`` lines (a header line is allowed)."""
    mask = np.zeros((n_rows, len(attributes)), dtype=bool)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the mask: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the mask is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    if "\0" in text:
        raise ConfigError(f"{path}: the mask is binary data, not a CSV of row,attribute lines")
    for no, fields in enumerate(csv.reader(text.splitlines()), start=1):
        if not fields or not "".join(fields).strip():
            continue
        if no == 1 and [f.strip() for f in fields] == ["row", "attribute"]:
            continue
        if len(fields) != 2:
            raise ConfigError(f"{path}:{no}: expected 'row,attribute', got {len(fields)} fields")
        row, attribute = fields[0].strip(), fields[1].strip()
        if not row.isdigit() or int(row) >= n_rows:
            raise ConfigError(f"{path}:{no}: row must be 0..{n_rows - 1}, got {row!r}")
        if attribute not in attributes:
            raise ConfigError(f"{path}:{no}: no attribute {attribute!r}")
        mask[int(row), attributes.index(attribute)] = True
    if not mask.any():
        raise ConfigError(f"{path}: names no confidential cell")
    return mask


def write_release(path: Path, attributes: list[str], released: np.ndarray) -> None:
    """The release as CSV with a header row (``"?"`` for every hidden value); mode 0600, as
    the data owner decides whom to give it to."""
    with open_private(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(attributes)
        w.writerows(released.tolist())


def check_method_options(args: argparse.Namespace) -> None:
    """Refuse an option the chosen ``--method`` does not use, before any work."""
    used = {
        "control": args.method == "adaptive",
        "rank": args.method == "best-first",
        "max_modifications": args.method in ("adaptive", "best-first"),
    }
    for name, ok in used.items():
        if getattr(args, name) is not None and not ok:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} does not apply to --method {args.method}; drop it or choose a method "
                "it applies to (see mpc sanitize --help)"
            )
    if args.max_modifications is not None and args.max_modifications < 1:
        raise ConfigError(f"--max-modifications must be at least 1, got {args.max_modifications}")


def run_sanitize(args: argparse.Namespace) -> int:
    if not 0 <= args.threshold <= 1:
        raise ConfigError(f"--threshold is a share in [0, 1], got {args.threshold}")
    check_method_options(args)
    table, _ = load_tables(args)
    attributes = [*table.attributes, table.class_name]
    ordinary = args.class_role == "ordinary"
    if args.mask is not None:
        mask = read_mask(args.mask, attributes, table.n_rows)
    else:
        mask = cr.sample_confidential(table, args.confidential, args.seed, include_class=ordinary)
    rel = cr.Release.from_table(table, mask, ordinary_class=ordinary, pruning=args.pruning)

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"[sanitize] {msg}", file=sys.stderr, flush=True)

    def method(r: cr.Release) -> am.Outcome:
        limit = args.max_modifications
        if args.method == "adaptive":
            control = args.control or "as-written"
            return am.adaptive(
                r, args.threshold, control=control, max_modifications=limit, progress=progress
            )
        if args.method == "best-first":
            rank = args.rank or "expected"
            return am.best_first(
                r, args.threshold, rank=rank, max_modifications=limit, progress=progress
            )
        return am.exhaustive(r, args.threshold, max_hidden=args.max_hidden, progress=progress)

    started = time.perf_counter()
    variant = {"adaptive": f"control {args.control or 'as-written'}",
               "best-first": f"rank {args.rank or 'expected'}"}.get(args.method, "")  # fmt: skip
    progress(f"{table.name}: {table.n_rows} rows x {len(attributes)} attributes, "
             f"{int(mask.sum())} confidential cells, method {args.method}"
             f"{' (' + variant + ')' if variant else ''}, {args.pruning} pruning, "
             f"class {args.class_role}")  # fmt: skip
    if args.restore_until is not None:
        outcome, history = am.restore(
            rel, args.threshold, method, until=args.restore_until, progress=progress
        )
    else:
        outcome, history = method(rel), []
    seconds = time.perf_counter() - started
    write_release(args.out, attributes, rel.released)
    doc = {
        "dataset": table.name,
        "rows": table.n_rows,
        "attributes": len(attributes),
        "confidential": int(rel.confidential.sum()),
        "threshold": args.threshold,
        **outcome.to_json(),
        "restoration": history,
        "restoration_below_threshold": (
            None if not history else history[-1]["restoration_rate"] < args.restore_until
        ),
        "seconds": round(seconds, 2),
        "release": str(args.out),
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{'attribute':<40} {'row':>5}  {'method':<10} {'net loss':>8}  class label")
    for m in outcome.modifications:
        loss = "-" if m.net_loss is None else f"{m.net_loss:8.2f}"
        print(f"{m.attribute:<40} {m.row:>5}  {m.method:<10} {loss:>8}  {m.class_label or '-'}")
    b, a = outcome.before, outcome.after
    print(f"\nE: {b.e:.4f} -> {a.e:.4f}   F: {b.f:.4f} -> {a.f:.4f} (threshold {args.threshold})")
    print(f"{len(outcome.modifications)} modifications, {outcome.rounds} rounds "
          f"({outcome.rejected} undone); stopped: {outcome.stopped}")  # fmt: skip
    for h in history:
        print(f"restoration {h['iteration']}: {h['restored']} of {h['blocked']} blocked values "
              f"restored (rate {h['restoration_rate']:.3f}), {h['newly_confidential']} made "
              f"confidential; E {h['E']:.4f}")  # fmt: skip
    if history and history[-1]["restoration_rate"] >= args.restore_until:
        print(f"warning: {history[-1]['restoration_rate']:.3f} of the blocked values can still "
              f"be restored (>= {args.restore_until}); hiding more did not lower it")  # fmt: skip
    print(f"release written to {args.out} ({seconds:.1f} s)")
    return 0
