"""``mpc run hybrid-id3-classify``: Alice and Bob classify new records with their saved
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

A party process (:func:`parties.programs.hybrid.classify_party`):

1. reads and checks its model part (:func:`parties.programs.hybrid_model.load_part`: an edited file
   is
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
tree applied in plain to the joined rows (:func:`parties.programs.hybrid_model.plain_predict`); if
the file has the class column, it also reports accuracy (the parties never see it).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import DataError, load_party_csv
from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.evaluation import accuracy
from parties.params import Params, option
from parties.programs.hybrid import DEFAULT_PREDICTIONS
from parties.programs.hybrid_model import HybridPart, load_part, plain_predict
from parties.systems.base import SEMI_HONEST, Audit, Plan, System
from parties.vertical_csv import fresh_id_column, party_csv
from protocols.hybrid.hybrid_id3 import ALICE, BOB, DEALER
from protocols.primitives.dot_product import METHODS

__all__ = ["HybridClassify", "HybridClassifyOptions"]


@dataclass(frozen=True)
class HybridClassifyOptions(Params):
    """The options of ``mpc run hybrid-id3-classify``."""

    csv: Path = option(
        flag="--csv",
        required=True,
        metavar="FILE",
        help="the new records: a CSV file with a header row holding every attribute of the "
        "model (a class column, if any, is used only for the launcher's accuracy check)",
    )
    model: Path = option(
        flag="--model",
        required=True,
        metavar="DIR",
        help="the folder of `mpc run hybrid-id3 --model-out DIR`: alice.model.json, bob.model.json",
    )
    id_column: str | None = option(
        None,
        flag="--id",
        metavar="COLUMN",
        help="the record id column of --csv (default: the records are numbered 1, 2, ...)",
    )
    delimiter: str | None = option(
        None, flag="--delimiter", metavar="C", help="the field delimiter of --csv (default ,)"
    )
    predictions_out: Path = option(
        DEFAULT_PREDICTIONS,
        flag="--predictions-out",
        metavar="FILE",
        output="file",
        help="where the receiving party writes id,class (default predictions.csv)",
    )
    deliver_to: str = option(
        BOB,
        flag="--deliver-to",
        choices=(ALICE, BOB),
        help="the party that learns the predictions (default bob)",
    )
    dot_product: str = option(
        "dealer",
        flag="--dot-product",
        choices=METHODS,
        help="the secure dot products: "
        + "; ".join(f"{m.name}: {m.help}" for m in METHODS.values())
        + " (default dealer)",
    )
    seed: int = option(
        0,
        flag="--seed",
        help="seed of the row order of the file of the party that does not "
        "receive the predictions (public; 0)",
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


def classify_plan(args: HybridClassifyOptions) -> Plan:
    if not Path(args.model).is_dir():
        raise ConfigError(
            f"--model {args.model}: expected the folder that `mpc run hybrid-id3 --model-out` "
            "wrote (alice.model.json, bob.model.json)"
        )
    parts = {p: load_part(Path(args.model) / f"{p}.model.json", p) for p in (ALICE, BOB)}
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
    predictions = Path(args.predictions_out).resolve()
    rows = np.random.default_rng([args.seed, 3])  # public: only the row order of each file
    specs = []
    for p, part in parts.items():
        model = (Path(args.model) / f"{p}.model.json").resolve()
        entries: dict[str, Any] = {"id": id_column, "model": str(model)}
        if p == args.deliver_to:
            entries["predictions"] = str(predictions)
        order = None if p == args.deliver_to else rows.permutation(table.n_rows)
        text = party_csv(
            ids, table, part.own_attributes, id_column=id_column, with_class=False, order=order
        )
        specs.append(PartySpec(p, p, columns=tuple(part.own_attributes), csv=text, entries=entries))
    helper = METHODS[args.dot_product].helper
    if helper is not None:
        specs.append(PartySpec(helper, helper))
    params = {"method": args.dot_product, "deliver_to": args.deliver_to}
    context = {
        "table": table,
        "ids": [str(i) for i in ids],
        "parts": parts,
        "labelled": has_class,
        "predictions": predictions,
        "source": str(args.csv),
    }
    return Plan(specs, params, context)


def _read_predictions(path: Path) -> dict[str, str]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except OSError as exc:
        raise ProtocolError(f"the predictions file {path} cannot be read: {exc}") from None
    if not rows or len(rows[0]) != 2 or any(len(r) != 2 for r in rows[1:]):
        raise ProtocolError(f"{path} is not an id,class file")
    return {r[0]: r[1] for r in rows[1:]}


def classify_result(reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
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


class HybridClassify(System):
    name = "hybrid-id3-classify"
    help = (
        "classify new records, held vertically by alice and bob, with their saved parts of a "
        "Hybrid-ID3 tree (secure row-wise dot products); one party learns the predictions"
    )
    options = HybridClassifyOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        return classify_plan(options)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        return classify_result(reports, plan)

    def summary(self, result: Any) -> list[str]:
        return classify_summary(result)

    def audit(self, result: Any) -> Audit:
        method = str(result.get("method")) if isinstance(result, dict) else ""
        return Audit(trust=METHODS[method].trust if method in METHODS else SEMI_HONEST)
