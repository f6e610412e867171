"""``mpc run cdbs-load``: load on one CDBS, N concurrent clients of one data owner, M cdtl
predictions each (:func:`parties.programs.cdtl.load_run`). The data owner's table is
outsourced whole by ``client1``, so its bins (``--bin-attributes``) are fitted on all of its
rows; then every client (the same owner's key) sends its predictions of random rows at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc.crypto.sealed import ClientKey
from mpc.datasets import load_dataset, resolve_data_dir
from mpc.deployment.launcher import PartySpec
from parties.params import AtLeast, option
from parties.programs.cdtl_tables import fit_bins, table_doc, with_class
from parties.systems.base import Audit, Plan, System
from parties.systems.cdtl import Binning, cdtl_audit
from protocols.cdtl.cdtl import CDBS, CLIENT

__all__ = ["CdbsLoad", "LoadOptions"]


@dataclass(frozen=True)
class LoadOptions(Binning):
    """The options of ``mpc run cdbs-load``."""

    dataset: str = option(
        "house-votes-84", flag="--dataset", metavar="NAME", help="(house-votes-84)"
    )
    data_dir: str | None = option(
        None, flag="--data-dir", metavar="DIR", help="where the UCI datasets are"
    )
    sensitive: str = option(
        "physician-fee-freeze", flag="--sensitive", metavar="COL", help="the sensitive attribute"
    )
    class_column: str | None = option(None, flag="--class", metavar="COL")
    l: int = option(2, flag="--l", help="l of l-diversity (2)")  # noqa: E741
    clients: int = option(
        4, flag="--clients", check=AtLeast(1), help="concurrent client processes (4)"
    )
    predictions: int = option(
        100, flag="--predictions", check=AtLeast(1), help="predictions per client (100)"
    )
    seed: int = option(
        0,
        flag="--seed",
        help="seed of the demo workload: the rows the clients ask about (0); never of any "
        "secret randomness (anatomization, salts, keys and nonces come from the OS)",
    )
    db: str | None = option(
        None, flag="--db", metavar="FILE", output="file", help="the CDBS's SQLite database"
    )


def load_plan(args: LoadOptions) -> Plan:
    """One data owner's table outsourced by ``client1``; then every client (the same owner's
    key) sends ``--predictions`` cdtl predictions of random rows at once. The table is
    outsourced whole, so its bins (``--bin-attributes``) are fitted on all of its rows."""
    table, extra = load_dataset(args.dataset, resolve_data_dir(args.data_dir))
    if extra is not None:
        table = table.concat(extra)
    table = with_class(table, args.class_column)
    discretizer = fit_bins(
        table, sensitive=args.sensitive, bins=args.bins, bin_attributes=args.bin_attributes
    )
    if discretizer is not None:
        table = discretizer.transform(table)
    doc = table_doc(table)
    key = ClientKey.generate().key_bytes().hex()  # the data owner's key, in each client's file
    rng = np.random.default_rng(args.seed)
    clients = [f"{CLIENT}{i + 1}" for i in range(args.clients)]
    specs = [
        PartySpec(
            c,
            CLIENT,
            {
                "table": doc,
                "key": key,
                "queries": rng.integers(0, table.n_rows, args.predictions).tolist(),
            },
        )
        for c in clients
    ]
    specs.append(PartySpec(CDBS, CDBS, {}))
    params = {
        "sensitive": args.sensitive,
        "l": args.l,
        "db": str(Path(args.db).resolve()) if args.db else "",
        "clients": clients,
    }
    return Plan(specs, params, {"table": table})


def load_result(reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
    clients = [str(c) for c in plan.params["clients"]]
    res = {c: reports[c].get("result") or {} for c in clients}
    lat = np.concatenate([np.asarray(r["latencies_s"]) for r in res.values()])
    wall = max(float(r["seconds"]) for r in res.values())
    cdbs = reports[CDBS].get("result") or {}
    # the same query gets the same prediction from every client
    answers: dict[int, set[str]] = {}
    for r in res.values():
        for q, pred in zip(r["queries"], r["predictions"], strict=True):
            answers.setdefault(int(q), set()).add(str(pred))
    leaves = list(cdbs.get("leaves_with_subtrees") or [])
    learned = sum(int(r["subtrees_learned"]) for r in res.values())
    return {
        "clients": len(clients),
        "predictions": int(lat.size),
        "throughput_per_s": lat.size / wall if wall > 0 else None,
        "latency_ms": {
            "p50": float(np.percentile(lat, 50) * 1000),
            "p99": float(np.percentile(lat, 99) * 1000),
            "max": float(lat.max() * 1000),
        },
        "subtrees_stored": cdbs.get("subtrees"),
        "subtrees_learned_by_clients": learned,
        "duplicated_subtrees": len(leaves) - len(set(leaves)),
        "consistent_predictions": all(len(v) == 1 for v in answers.values()),
    }


def load_summary(result: dict[str, Any]) -> list[str]:
    lat = result["latency_ms"]
    return [
        f"clients:     {result['clients']} concurrent, {result['predictions']} cdtl predictions",
        f"throughput:  {result['throughput_per_s']:.1f} predictions/s",
        f"latency:     p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, max {lat['max']:.2f} ms",
        f"subtrees:    {result['subtrees_stored']} stored, {result['subtrees_learned_by_clients']} "
        f"learned by clients (a leaf refined by two clients at once is stored once), "
        f"{result['duplicated_subtrees']} duplicated",
        f"consistent:  {result['consistent_predictions']} (every query answered alike by all)",
    ]


class CdbsLoad(System):
    name = "cdbs-load"
    help = "load on one CDBS: N concurrent clients of one data owner, M cdtl predictions each"
    options = LoadOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        return load_plan(options)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        return load_result(reports, plan)

    def summary(self, result: Any) -> list[str]:
        return load_summary(result)

    def audit(self, result: Any) -> Audit:
        return cdtl_audit(result)
