"""The CDBS (Mancuhan & Clifton, Figure 1, its Main): it learns the base decision tree from IT
(:func:`learn_bdt`) and serves a client's requests (:func:`serve_client`): uploads, queries
routed by ``FindBDTLeaf`` (:mod:`protocols.cdtl.find_leaf`), subtree uploads and downloads,
and the baselines' requests. Every request is checked before it is served; what the CDBS
learns from each is stated in :mod:`protocols.cdtl.cdtl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.tree import Node, predict_one, to_json
from mpc.runtime.party import Party
from protocols.cdtl.cdtl import REQUEST, SPLITS, learner
from protocols.cdtl.find_leaf import (
    find_bdt_leaf,
)
from protocols.cdtl.store import CDBSStore, LoadedTable
from protocols.cdtl.tables import IdentifyingTable, SensitiveTable


def learn_bdt(it: IdentifyingTable, prune: np.ndarray, nominal_splits: str = "multiway") -> Node:
    """Figure 1, ``LearnDT(IT)``: the base decision tree on the identifying attributes and
    the class (GID and ESEQ are not attributes), pruned on the shared prune rows."""
    return learner(nominal_splits=nominal_splits).fit(it.table, prune_rows=prune).tree_


async def serve_client(
    party: Party, store: CDBSStore, client: str, *, single_leaf: bool = True
) -> int:
    """The CDBS's loop for one client: answer its requests, in the order they arrive, until
    it says ``done``. Returns the number of requests served. With ``single_leaf`` (the
    shortcut of :class:`Protocol`), a leaf whose subtree is sure to be a single leaf is
    answered with its class; without, with ``leafIns`` as Figure 2 draws it.

    Each request carries its number ``n`` (the client's count, not the CDBS's) and is
    answered under ``cdtl/rep/{n}``: so a CDBS process started on the database of one that
    died answers a client in the middle of its requests (the client sends again those it
    got no answer for; every request is idempotent).

    A request marked ``"later": True`` (the client's ``updateBDT``, which it does not wait
    for) gets no message of its own: its answer travels in the ``acks`` of the next reply,
    as ``[n, answer]`` pairs. Such requests usually come in the ``posted`` list of the
    client's next request (handled first; an upload is staged instead, served at once and
    stored once the reply is sent), or alone when the client had no next request soon
    enough. A request that names no answer at all is the client's
    ``sync``: its reply carries the pending acks and nothing else."""
    served = 0
    acks: list[list[Any]] = []
    while True:
        req = await party.recv(client, "cdtl/req", REQUEST)  # of REQUEST's form
        posted = req.get("posted", [])
        op, n = req["op"], req["n"]
        # an upload that came with a query is staged (the query sees it) and stored after the
        # reply is sent: the client does not wait for the database; its ack, in the next
        # reply, still comes only once the subtree is stored
        later = [p for p in posted if op not in ("done", "sync") and _stage(store, p)]
        staged = {p["n"] for p in later}
        for p in posted:
            if p["n"] not in staged:
                acks.append([p["n"], _answer(party, store, p, single_leaf)])
            served += 1
        if op in ("done", "sync"):
            await party.send(client, f"cdtl/rep/{n}", {"ok": True, "acks": acks})
            acks = []
            if op == "done":
                return served
            continue
        reply = _answer(party, store, req, single_leaf)
        served += 1
        if req.get("later"):
            acks.append([n, reply])
            continue
        try:
            await party.send(client, f"cdtl/rep/{n}", {**reply, "acks": acks})
        finally:  # a staged upload is stored even when the reply cannot be sent
            acks = [[p["n"], _answer(party, store, p, single_leaf)] for p in later]


def _stage(store: CDBSStore, req: Mapping[str, Any]) -> bool:
    """Stage a well-formed ``update_bdt`` for a stored table (see :meth:`CDBSStore.stage`);
    False for anything else (answered at once)."""
    name, leaf, blob = req.get("name"), req.get("leaf"), req.get("subtree")
    if req["op"] != "update_bdt" or not isinstance(leaf, str) or not isinstance(blob, bytes):
        return False
    if not isinstance(name, str) or not store.is_loaded(name):
        return False
    store.stage(name, leaf, blob)
    return True


def _answer(
    party: Party, store: CDBSStore, req: Mapping[str, Any], single_leaf: bool = True
) -> dict[str, Any]:
    """The CDBS's answer to one request; a refused request is answered with its error."""
    op = req["op"]
    with party.phase(f"cdtl/{op}"):
        try:
            return _handle(party, store, op, req, single_leaf=single_leaf)
        except (ProtocolError, ConfigError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}


def _name(req: Mapping[str, Any]) -> str:
    name = req.get("name")
    if not isinstance(name, str) or not name:
        raise ProtocolError("a request needs the table's name")
    return name


_QUERY_TYPES = frozenset({str, float})


def query_fields(req: Mapping[str, Any], loaded: LoadedTable) -> dict[str, Any]:
    """The query's instance: its ``values`` (str, or float for a continuous attribute) in the
    order of IT's identifying attributes, which ``schema`` names (:func:`schema_digest`)."""
    values = req.get("values")
    if not isinstance(values, list) or not set(map(type, values)) <= _QUERY_TYPES:
        raise ProtocolError("a query needs `values`, a list of str or float")
    if req.get("schema") != loaded.schema or len(values) != len(loaded.attributes):
        raise ProtocolError(
            f"the query's {len(values)} values do not follow IT's identifying attributes "
            f"{list(loaded.attributes)} (schema {loaded.schema})"
        )
    return dict(zip(loaded.attributes, values, strict=True))


def _handle(
    party: Party,
    store: CDBSStore,
    op: str,
    req: Mapping[str, Any],
    *,
    single_leaf: bool = True,
) -> dict[str, Any]:
    ledger = party.ledger
    if op == "outsource":
        it = IdentifyingTable.from_wire(req.get("it"))
        st = SensitiveTable.from_wire(req.get("st"))
        prune = np.asarray(req.get("prune"), dtype=np.int64)
        splits = req.get("splits", "multiway")
        if splits not in SPLITS:
            raise ProtocolError(
                f"outsource: `splits` must be one of {list(SPLITS)}, got {splits!r}"
            )
        bdt = learn_bdt(it, prune, splits)
        store.put_tables(it, st, bdt, prune)
        loaded = store.load(it.name)
        sizes = loaded.leaf_sizes()
        groups = len(np.unique(st.gid))
        ledger.record(
            "cdtl/anatomized",
            {
                "name": it.name,
                "rows": it.n_rows,
                "groups": groups,
                "sensitive": st.attribute,
                "splits": splits,
            },
            step="outsource",
        )
        ledger.record("cdtl/bdt", {"name": it.name, "tree": to_json(bdt)}, step="outsource")
        return {"leaves": len(sizes), "max_leaf": max(sizes.values()), "groups": groups}
    name = _name(req)
    if op == "find_bdt_leaf":
        loaded = store.load(name)
        ins = query_fields(req, loaded)
        leaf, node = find_bdt_leaf(loaded.bdt, ins)
        # both values plain JSON, made here: names and leaf ids are str, the query's values
        # str or float (checked by query_fields)
        ledger.record(
            "cdtl/query", {"name": name, "instance": ins}, step="find_bdt_leaf", plain=True
        )
        final = loaded.final_label(leaf, node, single_leaf)
        blob = None if final is not None else store.subtree(name, leaf)
        ledger.record(
            "cdtl/visited-leaf", {"name": name, "leaf": leaf, "refined": blob is not None},
            step="find_bdt_leaf", plain=True,
        )  # fmt: skip
        if final is not None:  # nothing to refine: the class every subtree would predict
            return {"leaf": leaf, "label": final}
        if blob is not None:
            return {"leaf": leaf, "subtree": blob}
        # prepared when the table was loaded (Figure 2's joinTables on the fixed IT and ST)
        return {"leaf": leaf, "instances": loaded.leaf_answer(leaf)}
    if op == "update_bdt":
        leaf_id, blob = req.get("leaf"), req.get("subtree")
        if not isinstance(leaf_id, str) or not isinstance(blob, bytes):
            raise ProtocolError("update_bdt needs `leaf` (str) and `subtree` (bytes)")
        leaf = leaf_id
        store.load(name)  # the table must exist
        stored = store.put_subtree(name, leaf, blob)
        ledger.record(
            "cdtl/ciphertext", {"name": name, "leaf": leaf, "bytes": len(blob), "stored": stored},
            step="update_bdt",
        )  # fmt: skip
        return {"stored": stored}
    if op == "predict":  # cdbsl
        loaded = store.load(name)
        ins = query_fields(req, loaded)
        ledger.record("cdtl/query", {"name": name, "instance": ins}, step="predict")
        return {"class": predict_one(loaded.bdt, ins)}
    if op == "get_tables":  # cnl
        loaded = store.load(name)
        return {**loaded.tables, "prune": loaded.prune}
    if op == "table_schema":  # what leafIns refers to, for a client that did not outsource
        schema = store.load(name).table_schema
        assert schema is not None
        return {"schema": schema.to_wire()}
    if op == "put_blob":
        key, blob = req.get("key"), req.get("blob")
        if not isinstance(key, str) or not isinstance(blob, bytes):
            raise ProtocolError("put_blob needs `key` (str) and `blob` (bytes)")
        store.put_blob(name, key, blob)
        ledger.record(
            "cdtl/ciphertext", {"name": name, "key": key, "bytes": len(blob)}, step="put_blob"
        )
        return {"stored": True}
    if op == "get_blob":
        key = req.get("key")
        if not isinstance(key, str):
            raise ProtocolError("get_blob needs `key` (str)")
        return {"blob": store.blob(name, key)}
    raise ProtocolError(f"unknown request {op!r}")
