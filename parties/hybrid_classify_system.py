"""The ``hybrid-id3-classify`` system: Alice and Bob classify new records with their saved
parts of a Hybrid-ID3 model (``mpc run hybrid-id3 --model-out DIR``), each reading only its own
columns of the new records, and one of them receives the predictions.

A party classifies when it is started with its model part, in a ``hybrid-id3`` deployment or
in one of this system (whose parties classify only)::

    python -m parties alice --config deployment.toml --name alice \\
        --model alice.model.json --data new-alice.csv --id id
    python -m parties bob --config deployment.toml --name bob \\
        --model bob.model.json --data new-bob.csv --id id --predictions-out predictions.csv

Each party's new file holds the record id column and its own attributes (no class), in any row
order; its column kinds and cut points come from its model part, never from the new file.
Protocol parameters (deployment file): ``method`` (``dealer`` or ``paillier``) and
``deliver_to`` (``bob`` by default, or ``alice``): the party that learns the predictions and
writes them (``id,class``, mode 0600) to its ``predictions`` path (``--predictions-out``,
default ``predictions.csv``), in its own file's row order.

A party process (:func:`classify_party`):

1. reads and checks its model part (:func:`parties.hybrid_model.load_part`: an edited file is
   refused) and compares the model id and part digests with the other's
   (:func:`protocols.hybrid.agreement.check_parts`: a part of another training run is refused);
2. reads its new file and aligns the records with the other's
   (:func:`protocols.primitives.record_alignment.align_records`; a mismatch stops every party with
   ``RecordMismatch``, counts only);
3. bins its continuous columns with its saved cut points and runs
   :func:`protocols.hybrid.classify.classify_records` (what each party learns is in that
   module's docstring: the deliverer the predictions, the other nothing, the dealer ``(R, T)``).

Every failure stops every party within the deadline (the runtime's abort), and no message,
report or ledger holds a record id.

``mpc run hybrid-id3-classify --csv new.csv --model DIR`` plays both organisations: it reads
both parts from ``DIR`` (to learn which columns go to whom), cuts the new CSV into Alice's and
Bob's files (the receiving party's in the new file's row order, so that the predictions follow
it; the other's shuffled), runs the parties, and checks the predictions against the saved
tree applied in plain to the joined rows (:func:`parties.hybrid_model.plain_predict`); if the
file has the class column, it also reports accuracy (the parties never see it).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import logging
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import DataError, load_party_csv
from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, InputError, ProtocolError
from mpc.learners.evaluation import accuracy
from mpc.learners.model_file import ModelError
from mpc.runtime.config import DeploymentConfig, PartyConfig
from mpc.runtime.party import Party
from parties.hybrid_model import HybridPart, load_part, plain_predict
from parties.own_data import read_own_table, write_predictions
from parties.vertical_csv import fresh_id_column, party_csv
from protocols.hybrid.agreement import check_parts
from protocols.hybrid.classify import (
    classify_records,
    consistent_terminals,
    serve_classify_dealer,
    terminal_classes,
)
from protocols.hybrid.hybrid_id3 import ALICE, BOB, DEALER
from protocols.ppid3.fast_counts import Sites
from protocols.primitives.dot_product import METHODS
from protocols.primitives.record_alignment import align_records

__all__ = [
    "DEFAULT_PREDICTIONS",
    "classify_args",
    "classify_party",
    "classify_plan",
    "classify_result",
    "classify_summary",
    "serve_classify",
]

log = logging.getLogger("mpc.hybrid")

#: where the deliverer writes the predictions when it is given no path
DEFAULT_PREDICTIONS = Path("predictions.csv")


def classify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--csv",
        type=Path,
        required=True,
        metavar="FILE",
        help="the new records: a CSV file with a header row holding every attribute of the "
        "model (a class column, if any, is used only for the launcher's accuracy check)",
    )
    p.add_argument(
        "--model",
        type=Path,
        required=True,
        metavar="DIR",
        help="the folder of `mpc run hybrid-id3 --model-out DIR`: alice.model.json, bob.model.json",
    )
    p.add_argument(
        "--id",
        dest="id_column",
        metavar="COLUMN",
        help="the record id column of --csv (default: the records are numbered 1, 2, ...)",
    )
    p.add_argument("--delimiter", metavar="C", help="the field delimiter of --csv (default ,)")
    p.add_argument(
        "--predictions-out",
        type=Path,
        default=DEFAULT_PREDICTIONS,
        metavar="FILE",
        help="where the receiving party writes id,class (default predictions.csv)",
    )
    p.add_argument(
        "--deliver-to",
        choices=(ALICE, BOB),
        default=BOB,
        help="the party that learns the predictions (default bob)",
    )
    p.add_argument(
        "--dot-product",
        choices=tuple(METHODS),
        default="dealer",
        help="secure dot products: the commodity server (default) or Paillier (small files)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the row order of the file of the party that does not receive the "
        "predictions (public; 0)",
    )


def _header(path: Path, delimiter: str) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            for row in csv.reader(fh, delimiter=delimiter):
                if any(f.strip() for f in row):
                    return [f.strip() for f in row]
    except (OSError, UnicodeDecodeError, csv.Error):
        pass  # load_party_csv says what is wrong, with the line
    return []


def classify_plan(args: argparse.Namespace) -> Any:
    from parties.plan import Plan

    if not args.model.is_dir():
        raise ConfigError(
            f"--model {args.model}: expected the folder that `mpc run hybrid-id3 --model-out` "
            "wrote (alice.model.json, bob.model.json)"
        )
    parts = {p: load_part(args.model / f"{p}.model.json", p) for p in (ALICE, BOB)}
    class_name = parts[BOB].class_name
    delimiter = args.delimiter or ","
    has_class = class_name in _header(args.csv, delimiter)
    own = load_party_csv(
        args.csv,
        id_column=args.id_column,
        class_column=class_name if has_class else None,
        nominal=[a for p in parts.values() for a in p.nominal],
        continuous=[a for p in parts.values() for a in p.continuous],
        delimiter=delimiter,
    )
    names = [a for a, _ in parts[BOB].attributes]
    table = own.table.select(names)
    ids = np.asarray(own.ids if args.id_column else [str(i + 1) for i in range(table.n_rows)])
    id_column = args.id_column or fresh_id_column([*own.table.attributes, class_name])
    predictions = args.predictions_out.resolve()
    rows = np.random.default_rng([args.seed, 3])  # public: only the row order of each file
    specs = []
    for p, part in parts.items():
        model = (args.model / f"{p}.model.json").resolve()
        entries: dict[str, Any] = {"id": id_column, "model": str(model)}
        if p == args.deliver_to:
            entries["predictions"] = str(predictions)
        order = None if p == args.deliver_to else rows.permutation(table.n_rows)
        text = party_csv(
            ids, table, part.own_attributes, id_column=id_column, with_class=False, order=order
        )
        specs.append(PartySpec(p, p, columns=tuple(part.own_attributes), csv=text, entries=entries))
    if METHODS[args.dot_product].helper is not None:
        specs.append(PartySpec(DEALER, DEALER))
    params = {"method": args.dot_product, "deliver_to": args.deliver_to}
    context = {
        "table": table, "ids": [str(i) for i in ids], "parts": parts, "labelled": has_class,
        "predictions": predictions, "source": str(args.csv),
    }  # fmt: skip
    return Plan(specs, params, context)


# ----------------------------------------------------------------------------- a party


def _load_part(me: PartyConfig) -> HybridPart:
    """This party's model part, or an :class:`InputError` whose public line (for the peers)
    says what is wrong without the file's path."""
    if me.model is None:
        raise ConfigError(f"party {me.name!r}: no model part to classify with; give --model")
    try:
        return load_part(me.model, me.role)
    except ModelError as exc:
        public = str(exc).replace(f"model file {me.model}", "its model file")
        raise InputError(f"{me.name}: {exc}", public=f"{me.name}: {public}") from None


async def classify_party(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> dict[str, Any]:
    """Alice's or Bob's side of a classification run (the module docstring's steps 1-3)."""
    method = str(cfg.params.get("method", "dealer"))
    deliver_to = str(cfg.params.get("deliver_to", BOB))
    if deliver_to not in (ALICE, BOB):
        raise ConfigError(
            f"{cfg.path}: protocol.params.deliver_to must be alice or bob, got {deliver_to!r}"
        )
    with party.phase("hybrid-classify/model"):
        part = _load_part(me)
    await check_parts(party, part.model_id, part.parts)
    reader = dataclasses.replace(me, nominal=part.nominal, continuous=part.continuous)
    with party.phase("hybrid-classify/input"):
        own, warning = read_own_table(reader, class_column=None, columns=part.own_attributes)
    if warning:
        log.warning("%s: %s", me.name, warning)
    alignment = await align_records(Sites(party, [ALICE, BOB]).as_party(), list(own.ids))
    table = own.table.subset(alignment.order)
    if part.discretizer is not None:
        table = part.discretizer.transform(table)
    values = {
        a: np.array([str(v) for v in table.column(a)], dtype=object) for a in table.attributes
    }
    vectors = consistent_terminals(part.tree, part.owners, me.role, values).astype(np.uint64)
    if me.role == BOB:  # w ∘ v_B: every terminal weighted by 1 + its class's index
        vectors = vectors * (terminal_classes(part.tree, part.classes) + 1).astype(np.uint64)
    labels = await classify_records(
        party, vectors, classes=part.classes, deliver_to=deliver_to, method=method
    )
    result: dict[str, Any] = {
        "records": int(alignment.n), "model_id": part.model_id, "deliver_to": deliver_to,
        "warning": warning,
    }  # fmt: skip
    if labels is not None:
        by_row = [""] * alignment.n  # back to this party's own row order
        for t, row in enumerate(alignment.order.tolist()):
            by_row[row] = labels[t]
        path = write_predictions(
            me.predictions or DEFAULT_PREDICTIONS, list(own.ids), by_row, id_column=me.id_column
        )
        log.info("%s: wrote %d predictions to %s", me.name, len(by_row), path)
        result["predictions"] = str(path.resolve())
        result["per_class"] = {c: labels.count(c) for c in part.classes}
    return result


async def serve_classify(party: Party, cfg: DeploymentConfig) -> dict[str, Any]:
    """The dealer's side of a classification run."""
    method = str(cfg.params.get("method", "dealer"))
    if method not in METHODS or METHODS[method].helper is None:
        raise ConfigError(f"{cfg.path}: method {method!r} needs no dealer")
    return {"batches": await serve_classify_dealer(party, method=method)}


# ----------------------------------------------------------------------------- the audit


def _read_predictions(path: Path) -> dict[str, str]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except OSError as exc:
        raise ProtocolError(f"the predictions file {path} cannot be read: {exc}") from None
    if not rows or len(rows[0]) != 2 or any(len(r) != 2 for r in rows[1:]):
        raise ProtocolError(f"{path} is not an id,class file")
    return {r[0]: r[1] for r in rows[1:]}


def classify_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
    ctx = plan.context
    deliver_to = str(plan.params["deliver_to"])
    got = reports[deliver_to].get("result") or {}
    if Path(str(got.get("predictions"))) != ctx["predictions"]:
        raise ProtocolError(f"{deliver_to} wrote no predictions to {ctx['predictions']}")
    by_id = _read_predictions(ctx["predictions"])
    ids: list[str] = ctx["ids"]
    if sorted(by_id) != sorted(ids):
        raise DataError(
            f"{ctx['predictions']} holds {len(by_id)} ids; the new file has {len(ids)} others"
        )
    predicted = np.array([by_id[i] for i in ids], dtype=object)
    plain = plain_predict(ctx["parts"], ctx["table"])
    table = ctx["table"]
    parts: dict[str, HybridPart] = ctx["parts"]
    return {
        "source": ctx["source"],
        "records": len(ids),
        "model_id": parts[BOB].model_id,
        "parts": {p: str(part.path) for p, part in parts.items()},
        "alice": parts[ALICE].own_attributes,
        "bob": parts[BOB].own_attributes,
        "deliver_to": deliver_to,
        "method": plan.params["method"],
        "predictions": str(ctx["predictions"]),
        "per_class": got.get("per_class"),
        "identical_to_plain": bool((predicted == plain).all()),
        "differing": int((predicted != plain).sum()),
        "accuracy": accuracy(table.target, predicted) if ctx["labelled"] else None,
        "dealer_batches": (reports.get(DEALER, {}).get("result") or {}).get("batches"),
    }


def classify_summary(result: dict[str, Any]) -> list[str]:
    per_class = ", ".join(f"{c} {n}" for c, n in (result["per_class"] or {}).items())
    lines = [
        f"model:       {result['model_id']} ({', '.join(result['parts'].values())})",
        f"records:     {result['records']} from {result['source']}; alice holds "
        f"{', '.join(result['alice'])}; bob holds {', '.join(result['bob'])}",
        f"predictions: {result['predictions']} (id,class; learned by {result['deliver_to']} "
        f"only): {per_class}",
        f"check:       predictions == the saved tree in plain on the joined rows: "
        f"{result['identical_to_plain']}"
        + (f" ({result['differing']} differ)" if result["differing"] else ""),
    ]
    if result["accuracy"] is not None:
        lines.append(f"accuracy:    {result['accuracy']:.4f} (the file's class column)")
    return lines
