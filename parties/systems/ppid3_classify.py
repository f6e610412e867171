"""``mpc run ppid3-classify``: PPID3's classifyInstance (Vaidya & Clifton, Algorithm 8) on new
records held vertically, with the model parts saved by ``mpc run ppid3 --model-out``
(:mod:`parties.programs.ppid3`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mpc.datasets import CONTINUOUS, Discretizer, csv_header, load_party_csv
from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.model_file import SavedModel, read_model
from mpc.learners.tree import majority
from parties.params import Params, option
from parties.programs.ppid3 import ID_COLUMN, RECORDS, Ppid3Params
from parties.programs.ppid3_outcome import evaluation_text
from parties.systems.base import Audit, Plan, System
from parties.systems.ppid3 import csv_text
from protocols.engine.preprocessing import PREPROCESSING, classify_preprocessing, classify_trust
from protocols.ppid3.ppid3 import DistributedTree

__all__ = ["Ppid3Classify", "Ppid3ClassifyOptions"]


@dataclass(frozen=True)
class Ppid3ClassifyOptions(Params):
    model: str = option(
        flag="--model",
        required=True,
        metavar="DIR",
        help="the folder of saved model parts (SITE.model.json) written by "
        "`mpc run ppid3 --model-out DIR`",
    )
    csv: str | None = option(
        None,
        flag="--csv",
        metavar="FILE",
        group="records",
        help="new records, one table with every site's columns: split into one file per site "
        "as the model's parts list them (a local demo); a class column, if there, goes to the "
        "class site, which evaluates the predictions against it",
    )
    data: str | None = option(
        None,
        flag="--data",
        metavar="FILE1,FILE2,...",
        group="records",
        help="one file per site, in site order, each with the id column and that site's "
        "columns only: what organisations hold (each site's process reads its own)",
    )
    id_column: str | None = option(
        None,
        flag="--id",
        metavar="COLUMN",
        help="the record id column (default with --csv: rows are numbered; with --data: the "
        "id column the model was trained with)",
    )
    delimiter: str | None = option(
        None, flag="--delimiter", metavar="C", help="the CSVs' delimiter (',')"
    )
    deliver_to: str | None = option(
        None,
        flag="--deliver-to",
        metavar="SITE",
        help="the site that receives the predictions (default: the class site)",
    )
    helper: str | None = option(
        None,
        flag="--helper",
        choices=PREPROCESSING,
        help="who makes p0's and p1's randomness when classifying a tree learnt with --reveal "
        "tree (default: the training's, as its model parts say): 'sites' a third site, 'ot' "
        "the two by oblivious transfer, 'dealer' an outside dealer process",
    )
    records: str = option(
        "same",
        flag="--records",
        choices=RECORDS,
        help="same: every site must hold the same record ids (default); common: classify the "
        "records every site holds, found by a private set intersection (each site learns which "
        "of its records those are; no site's other records leave it)",
    )
    scores: bool = option(
        False,
        flag="--scores",
        flag_only=True,
        help="the predictions file also holds, per record, the training records of each class "
        "at the node that classified it (n(CLASS) columns): the leaf's class counts, which "
        "the class site already holds in the paper's mode and sends with the predictions; "
        "for a tree learnt with --reveal tree, selected on shares and opened to the receiver "
        "only (declared to it: classify/scores)",
    )
    predictions_out: str = option(
        "predictions.csv",
        flag="--predictions-out",
        metavar="FILE",
        output="file",
        help="where the receiving site writes id,class (default: predictions.csv)",
    )

    REQUIRED_GROUPS: ClassVar[Mapping[str, bool]] = {"records": True}


def _model_parts(folder: Path) -> dict[str, SavedModel]:
    files = sorted(folder.glob("*.model.json")) if folder.is_dir() else []
    if not files:
        raise ConfigError(f"--model {folder}: no SITE.model.json files there")
    parts = {}
    for f in files:
        m = read_model(f, "ppid3")
        parts[str(m.party)] = m
    sites = list(next(iter(parts.values())).body["sites"])
    if sorted(parts) != sorted(sites):
        raise ConfigError(f"--model {folder}: parts of {sorted(parts)}, the model has {sites}")
    return {s: parts[s] for s in sites}


def _entries(model: SavedModel, id_column: str, receives: bool, out: Path) -> dict[str, Any]:
    assert model.path is not None
    entries: dict[str, Any] = {"id": id_column, "model": str(Path(model.path).resolve())}
    if receives:
        entries["predictions"] = str(out)
    return entries


class Ppid3Classify(System):
    name = "ppid3-classify"
    help = (
        "PPID3's classifyInstance (Vaidya & Clifton, Algorithm 8) on new records held "
        "vertically, with the model parts saved by `mpc run ppid3 --model-out`"
    )
    options = Ppid3ClassifyOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        o: Ppid3ClassifyOptions = options
        parts = _model_parts(Path(o.model))
        sites = list(parts)
        class_site = str(parts[sites[0]].body["class_site"])
        deliver_to = o.deliver_to or class_site
        if deliver_to not in sites:
            raise ConfigError(f"--deliver-to {deliver_to}: not one of the sites {sites}")
        out = Path(o.predictions_out).resolve()
        context: dict[str, Any] = {"model": o.model}
        if o.csv is not None:
            specs, context["joined"] = self._split(o, parts, deliver_to, out)
        else:
            specs = self._own_files(o, parts, deliver_to, out)
        body = parts[sites[0]].body
        helper = None
        if body.get("reveal") == "tree":  # the pair's triples: the training's helper, or o's
            helper = classify_preprocessing(o.helper, body.get("helper"), len(sites))
            outside = PREPROCESSING[helper].outside
            if outside is not None:
                specs.append(PartySpec(outside, outside))
        context["helper"] = helper
        params = Ppid3Params(
            class_site=class_site, sites=tuple(sites), deliver_to=deliver_to, helper=helper,
            records=o.records, scores=o.scores or None,
        ).to_deployment()  # fmt: skip
        context["parts"] = {n: m.body for n, m in parts.items()}
        return Plan(specs, params, context)

    @staticmethod
    def _split(
        o: Ppid3ClassifyOptions, parts: dict[str, SavedModel], deliver_to: str, out: Path
    ) -> tuple[list[PartySpec], Any]:
        """One joined file, split by the launcher into every site's own (a local demo)."""
        assert o.csv is not None
        kinds = {c["name"]: c["kind"] for m in parts.values() for c in m.body["columns"]}
        class_site = str(next(iter(parts.values())).body["class_site"])
        label = parts[class_site].body.get("class")
        labelled = label is not None and label in (csv_header(o.csv, o.delimiter or ",") or [])
        joined = load_party_csv(
            o.csv,
            id_column=o.id_column,
            class_column=label if labelled else None,
            nominal=[a for a, k in kinds.items() if k != CONTINUOUS],
            continuous=[a for a, k in kinds.items() if k == CONTINUOUS],
            delimiter=o.delimiter or ",",
            columns=None,
        )
        missing = [a for a in kinds if a not in joined.table.attributes]
        if missing:
            raise ConfigError(f"--csv {o.csv}: no column for the model's attributes {missing}")
        ids = [str(i) for i in joined.ids]
        id_column = o.id_column or ID_COLUMN
        specs = []
        for i, name in enumerate(parts):
            attrs = parts[name].body["attributes"]
            order = np.random.default_rng([0, i]).permutation(len(ids))
            with_class = labelled and name == class_site
            text = csv_text(ids, joined.table.select(attrs), id_column=id_column,
                            with_class=with_class, order=order)  # fmt: skip
            entries = _entries(parts[name], id_column, name == deliver_to, out)
            specs.append(PartySpec(name, "site", columns=tuple(attrs), csv=text, entries=entries))
        return specs, joined

    @staticmethod
    def _own_files(
        o: Ppid3ClassifyOptions, parts: dict[str, SavedModel], deliver_to: str, out: Path
    ) -> list[PartySpec]:
        """Every site's own file (``--data``), each read by its own process."""
        assert o.data is not None
        files = [f.strip() for f in o.data.split(",")]
        if len(files) != len(parts):
            raise ConfigError(f"--data needs one file per site ({len(parts)}), got {len(files)}")
        specs = []
        for name, f in zip(parts, files, strict=True):
            id_column = o.id_column or parts[name].body.get("id_column") or ID_COLUMN
            entries = {
                "data": str(Path(f).resolve()),
                **_entries(parts[name], id_column, name == deliver_to, out),
            }
            if (o.delimiter or ",") != ",":
                entries["delimiter"] = o.delimiter
            specs.append(
                PartySpec(
                    name, "site", columns=tuple(parts[name].body["attributes"]), entries=entries
                )
            )
        return specs

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
        ctx = plan.context
        sites = list(plan.params["sites"])
        results = {n: reports[n].get("result") or {} for n in sites}
        receiver = str(plan.params["deliver_to"])
        got = results[receiver]
        if "predictions" not in got:
            raise ProtocolError(f"{receiver} reported no predictions")
        out: dict[str, Any] = {
            "model": ctx["model"],
            "model_id": got.get("model_id"),
            "records": got.get("classified"),
            "receiver": receiver,
            "predictions_file": got.get("predictions_file"),
            "classify_s": max(float(r.get("classify_s") or 0) for r in results.values()),
            "predictions": got["predictions"],
            "helper": ctx.get("helper"),
            "trust": classify_trust(ctx.get("helper")),
            "used": {n: results[n]["records"] for n in sites if "records" in results[n]},
            "unseen": [results[n]["unseen_warning"] for n in sites if results[n].get("unseen")],
            **({"evaluation": got["evaluation"]} if "evaluation" in got else {}),
            **({"scores": got["scores"]} if "scores" in got else {}),
        }
        joined = ctx.get("joined")
        if joined is not None:  # the audit: the assembled tree, in plain, on the joined rows
            trees = {n: ctx["parts"][n]["tree"] for n in sites}
            edges = {
                c["name"]: tuple(c["bins"])
                for b in ctx["parts"].values()
                for c in b["columns"]
                if "bins" in c
            }
            table = Discretizer(2, edges).transform(joined.table) if edges else joined.table
            names = table.attributes
            rows = [dict(zip(names, r, strict=True)) for r in zip(*table.columns, strict=True)]
            plain = {
                str(i): walk_parts(trees, row) for i, row in zip(joined.ids, rows, strict=True)
            }
            out["equal_to_plain_tree"] = all(plain[i] == c for i, c in got["predictions"])
        return out

    def audit(self, result: Any) -> Audit:
        return Audit(trust=str(result.get("trust") or classify_trust(None)))

    def summary(self, result: Any) -> list[str]:
        counts = Counter(c for _, c in result["predictions"])
        lines = [
            f"model:       {result['model']} (model id {str(result['model_id'])[:12]}...)",
            f"records:     {result['records']} classified "
            + ("without a path" if result.get("helper") else "by Algorithm 8")
            + " in "
            f"{result['classify_s']:.3f} s",
            f"predictions: {result['predictions_file']} (written by {result['receiver']}; "
            + ", ".join(f"{c} {n}" for c, n in sorted(counts.items()))
            + ")",
        ]
        lines.append(f"trust:       {result['trust']}")
        used = result.get("used") or {}
        if any(u.get("used") != u.get("held") for u in used.values()):
            lines.append("used:        " + ", ".join(
                f"{n} {u['used']} of its {u['held']}" for n, u in used.items()))  # fmt: skip
        lines += [f"warning:     {w}" for w in result.get("unseen") or []]
        lines += evaluation_lines(result.get("evaluation"))
        if "equal_to_plain_tree" in result:
            lines.append(
                f"identical:   {result['equal_to_plain_tree']}  (== the saved tree, assembled "
                "for this audit, applied in plain to the joined records)"
            )
        return lines


def evaluation_lines(ev: dict[str, Any] | None) -> list[str]:
    """The class site's evaluation of the predictions against the classes its file holds:
    accuracy, the majority baseline (and a warning when the tree does worse) and the
    confusion matrix."""
    if not ev:
        return []
    accuracy_, warning, matrix = evaluation_text(ev)
    return [
        f"evaluation:  {accuracy_}, at the class site",
        *([f"warning:     {warning}"] if warning else []),
        "confusion:   rows true, columns predicted",
        *(f"  {line}" for line in matrix),
    ]


def walk_parts(trees: dict[str, dict[str, Any]], row: dict[str, Any]) -> str:
    """The class the saved parts (every site's, as the audit of a local run holds them) give
    ``row`` in plain: down its path from site to site; a value no branch has stops it at
    that node, which gives its majority class (the class site's counts in the paper's mode;
    with only the tree opened, the first two sites' shares of it, added)."""
    parts = {n: DistributedTree.from_dict(t) for n, t in trees.items()}
    class_site = next(p for p in parts.values() if p.leaves or p.classes).site
    owner, nid = next(iter(parts.values())).root or ("", "")
    while True:
        part = parts[owner]
        if nid in part.leaves:
            return str(part.leaves[nid]["class"])
        node = part.interior[nid]
        child = node["children"].get(str(row.get(node["attribute"])))
        if child is None:
            number = int(node["number"])
            counts = parts[class_site].node_counts.get(number)
            if counts:
                return majority(counts)
            pair = list(parts)[:2]
            index = sum(parts[n].label_shares[number] for n in pair) % 2**64
            return parts[class_site].classes[index]
        owner, nid = str(child[0]), str(child[1])
