"""The party programs of ``cdtl`` and ``cdbs-load``: Mancuhan & Clifton's client (the data
owner) and CDBS (the cloud database server), the client running cdtl and the baselines cnl
and cdbsl on every fold of a cross-validation, and one CDBS serving many concurrent clients.

The client's table is a named dataset, which the launcher prepares and hands to it, or its
own CSV file, which it reads itself (:func:`~parties.own_data.read_own_table`), prepared alike
(:mod:`parties.programs.cdtl_tables`). For every fold it bins (on the fold's training rows
only), anatomizes the training rows (``l``), outsources them and classifies the test rows
with each method (cdtl and cnl trading places on every other fold: :func:`method_order`); it
reports accuracy and its own costs: seconds spent (crypto, network, learning, inference;
outsourcing excluded, it is common to all methods) and tuples held. The CDBS serves every
client from one SQLite store (:func:`serve_cdbs`).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from typing import Any

import numpy as np

from mpc.crypto.sealed import ClientKey
from mpc.datasets import Table
from mpc.learners.evaluation import rows_of
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.files import open_private
from mpc.runtime.party import Party
from mpc.runtime.view import READY
from parties.own_data import load_party_data, private_seed, read_own_file
from parties.own_party import OwnParty
from parties.programs.cdtl_tables import (
    cdtl_folds,
    client_table,
    filter_rows,
    fold_input,
    fold_tables,
    own_input,
    table_of_doc,
)
from protocols.cdtl.anatomization import anatomize, suppress_for_l
from protocols.cdtl.cdbs import serve_client
from protocols.cdtl.cdtl import CDBS, Protocol
from protocols.cdtl.client import CDBSClient, ClientCosts
from protocols.cdtl.joins import open_eseq
from protocols.cdtl.store import CDBSStore

__all__ = [
    "ANATOMY_SEED_KEY",
    "METHODS",
    "check",
    "load_check",
    "load_run",
    "method_order",
    "run",
    "serve_cdbs",
]

log = logging.getLogger("mpc.cdtl")

#: the field of the client's private input file that holds its anatomization seed
ANATOMY_SEED_KEY = "anatomy_seed"
#: the methods a run compares: cdtl and the baselines cnl and cdbsl
METHODS = ("cdtl", "cnl", "cdbsl")


def method_order(methods: list[str], fold: int) -> list[str]:
    """The order the client runs ``methods`` in on fold ``fold``: cdtl and cnl trade places
    on every other fold, so that neither always runs first after the outsourcing (the
    method that does pays the most for what outsourcing left cold: measured, cdtl costs
    ~8% more on house-votes-84 when it always runs first, cnl no more)."""
    if fold % 2 == 0 or not {"cdtl", "cnl"} <= set(methods):
        return list(methods)
    a, b = methods.index("cdtl"), methods.index("cnl")
    out = list(methods)
    out[a], out[b] = out[b], out[a]
    return out


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    p = cfg.params
    clients = [str(c) for c in p["clients"]]
    # numpy imports numpy.ma lazily on the first np.unique (~70 ms); do it before any method
    # is timed, so that start-up is not billed to whichever method runs first
    importlib.import_module("numpy.ma")
    protocol = Protocol.named(str(p.get("protocol", "optimised")))
    if me.role == CDBS:
        return await serve_cdbs(party, cfg, clients, single_leaf=protocol.single_leaf)
    table, folds, data = _client_input(cfg, me)
    rng = private_seed(data, ANATOMY_SEED_KEY, me, "its anatomization")
    bins, bin_attributes = int(p.get("bins", 4)), str(p.get("bin_attributes", "sensitive"))
    key = ClientKey.generate("cdtl/client-key")  # never leaves this process
    client = CDBSClient(
        party,
        key,
        sensitive=str(p["sensitive"]),
        class_name=table.class_name,
        nominal_splits=str(p.get("nominal_splits", "multiway")),
        pipelined=protocol.pipelined,
    )
    methods = [str(m) for m in p["methods"]]
    folds_out = []
    for i, fold in enumerate(folds):
        # the bins are fitted on this fold's training rows only, the test rows binned alike
        train, test, discretizer = fold_tables(
            table, fold, sensitive=client.sensitive, bins=bins, bin_attributes=bin_attributes
        )
        with fold_input(me, i, client.sensitive, discretizer):
            keep = suppress_for_l(train, client.sensitive, int(p["l"]), rng)
        prune_positions = set(int(r) for r in fold["prune"])
        prune = {i for i, r in enumerate(keep.tolist()) if r in prune_positions}
        suppressed = train.n_rows - len(keep)
        train = train.subset(keep)
        name = f"{table.name}/fold{i}" + ("" if len(clients) == 1 else f"/{me.name}")
        train = _renamed(train, name)
        started = time.perf_counter()
        with party.phase("cdtl/outsource"):
            with fold_input(me, i, client.sensitive, discretizer):
                an = anatomize(train, client.sensitive, int(p["l"]), key, rng)
            _, original = open_eseq(an.it, key)
            positions = np.flatnonzero(np.isin(original, list(prune)))
            info = await client.outsource(an, positions)
        out: dict[str, Any] = {
            "fold": i, "train": train.n_rows, "test": test.n_rows, "suppressed": suppressed,
            "outsource_s": round(time.perf_counter() - started, 4),
            "bdt_leaves": info.get("leaves"), "max_leaf": info.get("max_leaf"),
        }  # fmt: skip
        rows = rows_of(test)
        for method in method_order(methods, i):
            costs = ClientCosts()
            with party.phase(f"cdtl/{method}"):
                if method == "cdtl":
                    pred = [await client.inference(name, r, prune, costs) for r in rows]
                    # the reply to the last pipelined update_bdt is cdtl's, not the next
                    # method's, to wait for
                    with costs.clock():
                        costs.round_trips += await client.settle()
                    memory = int(info.get("max_leaf") or 0)
                elif method == "cnl":
                    await client.cnl_learn(name, costs)
                    pred = [await client.cnl_predict(name, r, costs) for r in rows]
                    memory = train.n_rows
                else:
                    pred = [await client.cdbsl_predict(name, r, costs) for r in rows]
                    memory = 0
            correct = sum(a == str(b) for a, b in zip(pred, test.target, strict=True))
            out[method] = {
                "accuracy": correct / max(1, test.n_rows),
                "seconds": round(costs.seconds, 5),
                "cpu_seconds": round(costs.cpu_seconds, 5),
                "memory_tuples": memory,
                "tuples_held": costs.tuples,
                "subtrees_learned": costs.subtrees_learned,
                "requests": costs.requests,
                "round_trips": costs.round_trips,
            }
        folds_out.append(out)
    await client.done()
    return {"folds": folds_out}


def _client_input(cfg: DeploymentConfig, me: OwnParty) -> tuple[Any, Any, dict[str, Any]]:
    """The client's table, its folds and its private extras: from its own CSV file, or from
    the input file the launcher wrote."""
    p = cfg.params

    def read() -> tuple[Any, Any, dict[str, Any]]:
        if p.get("input") == "csv":
            return own_table_and_folds(me, p)
        data = load_party_data(me)
        return table_of_doc(data["table"]), data["folds"], data

    return me.inputs.get(("cdtl-client",), read)


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """The client's own input, read and prepared before it waits for anyone (the run finds it
    read): its file with its columns, ids and classes, the table it outsources and its folds.
    The CDBS has none."""
    if me.role != CDBS:
        _client_input(cfg, me)


def load_check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """A load client's input file, read before it waits for anyone."""
    if me.role != CDBS:
        load_party_data(me)


def own_table_and_folds(
    me: OwnParty, p: dict[str, Any]
) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """The client's own CSV file (``--csv``) prepared as the launcher prepares a dataset, the
    folds of the run's public ``cv`` and ``seed``, and the private extras of its input file
    (an anatomization seed)."""
    own, warning, private = read_own_file(me, class_column=str(p["class"]))
    if warning:
        log.warning("%s: %s", me.name, warning)
    with own_input(me):
        table = filter_rows(own.table, [str(w) for w in p.get("where", [])])
        table = client_table(
            table, sensitive=str(p["sensitive"]), l=int(p["l"]), bins=int(p.get("bins", 4)),
            no_suppress=bool(p.get("no_suppress", False)), source=str(me.data),
        )  # fmt: skip
        folds = cdtl_folds(table.target, int(p["cv"]), int(p.get("seed", 0)))
    return table, folds, private


async def serve_cdbs(
    party: Party, cfg: DeploymentConfig, clients: list[str], *, single_leaf: bool = True
) -> dict[str, Any]:
    """The CDBS process: serve every client concurrently from one store until all are done
    (``single_leaf``: the shortcut of :class:`~protocols.cdtl.cdtl.Protocol`).

    The store is the SQLite file ``protocol.params.db`` (default: ``cdbs.sqlite`` next to the
    deployment file), made private (mode 0600) before SQLite opens it; a new process on the
    same file serves everything an earlier one stored."""
    db = str(cfg.params.get("db") or "") or str(cfg.path.parent / "cdbs.sqlite")
    if db != ":memory:":
        # what the CDBS stores for its clients is for it alone: the file (and its folder, if
        # made here) private before SQLite opens it; SQLite gives its WAL files the same mode
        open_private(db, "ab").close()
    store = CDBSStore(db)
    try:
        started = time.perf_counter()
        served = await asyncio.gather(
            *(serve_client(party, store, c, single_leaf=single_leaf) for c in clients)
        )
        return {
            "requests": dict(zip(clients, served, strict=True)),
            "db": db,
            "seconds": time.perf_counter() - started,
            "subtrees": store.subtree_count(),
            "leaves_with_subtrees": store.subtree_leaves(),
        }
    finally:
        store.close()


def _renamed(table: Any, name: str) -> Any:
    return Table(
        name=name, attributes=table.attributes, kinds=table.kinds, columns=table.columns,
        target=table.target, class_name=table.class_name, source=table.source,
    )  # fmt: skip


async def load_run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    p = cfg.params
    clients = [str(c) for c in p["clients"]]
    # numpy imports numpy.ma lazily on the first np.unique (~70 ms); do it before any method
    # is timed, so that start-up is not billed to whichever method runs first
    importlib.import_module("numpy.ma")
    if me.role == CDBS:
        return await serve_cdbs(party, cfg, clients)
    data = load_party_data(me)
    table = table_of_doc(data["table"])
    key = ClientKey.from_bytes(bytes.fromhex(str(data["key"])))
    client = CDBSClient(party, key, sensitive=str(p["sensitive"]), class_name=table.class_name)
    first = clients[0]
    if me.name == first:
        keep = suppress_for_l(table, client.sensitive, int(p["l"]))
        an = anatomize(table.subset(keep), client.sensitive, int(p["l"]), key)
        await client.outsource(an, np.array([], dtype=np.int64))
        await party.broadcast("load/ready", True, [c for c in clients if c != first])
    else:
        await party.recv(first, "load/ready", READY)
    rows = rows_of(table)
    latencies, preds = [], []
    costs = ClientCosts()
    started = time.perf_counter()
    with party.phase("cdbs-load/predict"):
        for q in data["queries"]:
            t0 = time.perf_counter()
            preds.append(await client.inference(table.name, rows[int(q)], set(), costs))
            latencies.append(time.perf_counter() - t0)
    seconds = time.perf_counter() - started
    await client.done()
    return {
        "latencies_s": latencies,
        "seconds": seconds,
        "predictions": preds,
        "queries": data["queries"],
        "subtrees_learned": costs.subtrees_learned,
    }
