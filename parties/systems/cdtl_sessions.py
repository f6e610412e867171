"""``mpc run cdtl-outsource`` and ``mpc run cdtl-classify``: the two sessions of one data owner
with a long-lived CDBS (:mod:`parties.programs.cdtl_sessions`, whose docstring says what each
does)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from parties.options import missing_option
from parties.own_party import OwnParty
from parties.params import AtLeast, Params, option
from parties.programs.cdtl_sessions import (
    DB_FILE,
    MODEL_FILE,
    load_client_model,
    model_path,
    rows_to_classify,
)
from parties.programs.cdtl_tables import client_table, csv_entries, csv_text, read_client_csv
from parties.systems.base import Audit, Plan, System
from parties.systems.cdtl import CDBS_TRUST, Binning, ClientCsv
from protocols.cdtl.cdtl import CDBS, CLIENT, SPLITS

__all__ = ["CdtlClassify", "CdtlClassifyOptions", "CdtlOutsource", "OutsourceOptions"]


@dataclass(frozen=True)
class OutsourceOptions(ClientCsv, Binning):
    """The options of ``mpc run cdtl-outsource``."""

    csv: str = option(
        "",
        flag="--csv",
        required=True,
        metavar="FILE",
        help="the client's training CSV (header row)",
    )
    class_column: str = option(
        "", flag="--class", required=True, metavar="COL", help="its class column"
    )
    sensitive: str = option(
        "",
        flag="--sensitive",
        required=True,
        metavar="COL",
        help="the sensitive attribute A_s (a column)",
    )
    model_out: str = option(
        "",
        flag="--model-out",
        required=True,
        metavar="DIR",
        output="either",
        help=f"where the client writes its model file ({MODEL_FILE} in DIR, or a FILE.json): "
        "private, it holds the client's key",
    )
    cdbs_db: str = option(
        "",
        flag="--cdbs-db",
        required=True,
        metavar="DIR",
        output="folder",
        help=f"the CDBS's database folder ({DB_FILE} in it), kept between sessions: "
        "outsource and classify against the same one",
    )
    l: int = option(2, flag="--l", check=AtLeast(2), help="l of l-diversity (default 2)")  # noqa: E741
    nominal_splits: str = option(
        "multiway",
        flag="--nominal-splits",
        choices=SPLITS,
        help="how every tree splits a nominal attribute (default multiway)",
    )
    seed: int = option(
        0,
        flag="--seed",
        help="seed of the public prune set (0); never of the client's secret randomness",
    )
    no_suppress: bool = option(
        False,
        flag="--no-suppress",
        flag_only=True,
        help="fail when a sensitive value covers more than 1/l of the rows, instead of "
        "suppressing the fewest of its tuples",
    )

    BIN_ROWS = "all rows of --csv, which are outsourced whole"


@dataclass(frozen=True)
class CdtlClassifyOptions(Params):
    """The options of ``mpc run cdtl-classify``."""

    csv: str = option(
        "",
        flag="--csv",
        required=True,
        metavar="FILE",
        help="the rows to classify: a CSV with the model's columns (header row; the class "
        "column may be absent, other columns are ignored)",
    )
    id_column: str | None = option(
        None,
        flag="--id",
        metavar="COL",
        help="the record id column (not an attribute; default: rows are numbered)",
    )
    delimiter: str | None = option(
        None, flag="--delimiter", metavar="C", help="the field delimiter (,)"
    )
    missing: tuple[str, ...] | None = missing_option()
    model: str = option(
        "",
        flag="--model",
        required=True,
        metavar="DIR",
        help=f"the client's model of cdtl-outsource ({MODEL_FILE} in DIR, or the FILE)",
    )
    predictions_out: str | None = option(
        None,
        flag="--predictions-out",
        metavar="FILE",
        output="file",
        help="where the client writes id,class (private; default: predictions.csv next to "
        "the model file)",
    )
    cdbs_db: str = option(
        "",
        flag="--cdbs-db",
        required=True,
        metavar="DIR",
        output="folder",
        help=f"the CDBS's database folder ({DB_FILE} in it), kept between sessions: "
        "outsource and classify against the same one",
    )


def outsource_plan(args: OutsourceOptions) -> Plan:
    entries = csv_entries(args)
    own, text = read_client_csv(args, entries)
    table = client_table(
        own.table,
        sensitive=args.sensitive,
        l=args.l,
        bins=args.bins,
        no_suppress=args.no_suppress,
        source=str(args.csv),
    )
    model = model_path(Path(args.model_out).resolve())
    db = Path(args.cdbs_db).resolve() / DB_FILE
    entries["model_out"] = str(model)
    params = {
        "sensitive": args.sensitive,
        "class": args.class_column,
        "l": args.l,
        "bins": args.bins,
        "bin_attributes": args.bin_attributes,
        "seed": args.seed,
        "nominal_splits": args.nominal_splits,
        "no_suppress": args.no_suppress,
        "db": str(db),
        "clients": [CLIENT],
    }
    specs = [PartySpec(CLIENT, CLIENT, csv=text, entries=entries), PartySpec(CDBS, CDBS)]
    return Plan(specs, params, {"csv": str(args.csv), "rows": table.n_rows})


def _client_and_cdbs(reports: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    client = reports.get(CLIENT, {}).get("result")
    if not isinstance(client, dict):
        raise ProtocolError(f"{CLIENT} reported no result")
    return client, reports.get(CDBS, {}).get("result") or {}


def outsource_result(reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
    client, cdbs = _client_and_cdbs(reports)
    return {"csv": plan.context["csv"], **client, "db": cdbs.get("db")}


def outsource_summary(result: dict[str, Any]) -> list[str]:
    lines = [
        f"outsourced: {result['csv']}: {result['outsourced']} of {result['rows']} rows as "
        f"table {result['table']!r} (class {result['class']!r}, sensitive "
        f"{result['sensitive']!r}, l = {result['l']}, {result['groups']} groups, "
        f"{result['suppressed']} suppressed)",
        f"cdbs:       BDT of {result['bdt_leaves']} "
        f"{'leaf' if result['bdt_leaves'] == 1 else 'leaves'} (largest {result['max_leaf']} "
        f"tuples) in {result['db']}",
        f"model:      {result['model']} (private: holds the client's key; model id "
        f"{result['model_id']})",
    ]
    if result.get("warning"):
        lines.append(result["warning"])
    return lines


def classify_plan(args: CdtlClassifyOptions) -> Plan:
    model_file = model_path(Path(args.model).resolve())
    model, saved = load_client_model(model_file)
    entries = csv_entries(args)
    reading = OwnParty(
        CLIENT,
        CLIENT,
        "tcp://127.0.0.1:1",
        "",
        None,
        data=Path(args.csv),
        id_column=entries.get("id"),
        delimiter=entries.get("delimiter", ","),
        missing=tuple(entries.get("missing", ())),
    )
    _, table = rows_to_classify(reading, model)
    db = Path(args.cdbs_db).resolve() / DB_FILE
    if not db.is_file():
        raise ConfigError(
            f"--cdbs-db {args.cdbs_db}: no CDBS database {DB_FILE} there; give the folder "
            "the model's table was outsourced to (cdtl-outsource --cdbs-db)"
        )
    predictions = Path(args.predictions_out or model_file.parent / "predictions.csv").resolve()
    entries.update(model=str(model_file), predictions=str(predictions))
    specs = [
        PartySpec(CLIENT, CLIENT, csv=csv_text(args.csv), entries=entries),
        PartySpec(CDBS, CDBS),
    ]
    context = {"csv": str(args.csv), "rows": table.n_rows, "model_id": saved.model_id}
    return Plan(specs, {"db": str(db), "clients": [CLIENT]}, context)


def classify_result(reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
    client, cdbs = _client_and_cdbs(reports)
    return {
        "csv": plan.context["csv"],
        **client,
        "db": cdbs.get("db"),
        "subtrees_stored": cdbs.get("subtrees"),
    }


def classify_summary(result: dict[str, Any]) -> list[str]:
    classes = ", ".join(f"{c} {n}" for c, n in result["classes"].items())
    lines = [
        f"classified: {result['rows']} rows of {result['csv']} with {result['model']} "
        f"(table {result['table']!r})",
        f"classes:    {classes}",
        f"subtrees:   {result['subtrees_learned']} learned now by the client, "
        f"{result['subtrees_stored']} stored at the CDBS ({result['db']})",
    ]
    if "accuracy" in result:
        lines.append(f"accuracy:   {result['accuracy']:.4f} (the file's class column)")
    lines.append(f"wrote:      {result['predictions']} (id,class; private)")
    return lines


class CdtlOutsource(System):
    name = "cdtl-outsource"
    help = (
        "cdtl, first session: the client anatomizes its CSV and outsources it to a CDBS whose "
        "database outlives the run, and keeps its key in a private model file"
    )
    options = OutsourceOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        return outsource_plan(options)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        return outsource_result(reports, plan)

    def summary(self, result: Any) -> list[str]:
        return outsource_summary(result)

    def audit(self, result: Any) -> Audit:
        return Audit(trust=CDBS_TRUST)


class CdtlClassify(System):
    name = "cdtl-classify"
    help = (
        "cdtl, a later session: a new client process classifies a new CSV with its model file "
        "against the CDBS's stored table (Figure 3), refining leaves as needed"
    )
    options = CdtlClassifyOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        return classify_plan(options)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        return classify_result(reports, plan)

    def summary(self, result: Any) -> list[str]:
        return classify_summary(result)

    def audit(self, result: Any) -> Audit:
        return Audit(trust=CDBS_TRUST)
