"""The client (Mancuhan & Clifton, Figure 3, its ``Inference``): it outsources its anatomized
table, then classifies instances by asking the CDBS for the leaf each reaches, learning the
leaf's subtree from ``leafIns`` when the leaf is not refined yet and uploading it sealed
(:class:`CDBSClient`); and the baselines' clients, cnl and cdbsl. What the client learns
and sends is stated in :mod:`protocols.cdtl.cdtl`; its costs, time and bytes, in
:class:`ClientCosts`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto.sealed import ClientKey, open_json, seal_json
from mpc.errors import AuthenticationError, ConfigError, ProtocolError
from mpc.learners.coded_table import CodedTable
from mpc.learners.tree import Node, from_json, predict_one, to_json
from mpc.runtime.party import Party
from protocols.cdtl.cdtl import (
    CDBS,
    POST_DELAY_S,
    REPLY,
    SPLITS,
    cnl_aad,
    learner,
    subtree_aad,
)
from protocols.cdtl.find_leaf import (
    schema_digest,
    wire_value,
)
from protocols.cdtl.joins import joined_learning_table, leaf_learning_table
from protocols.cdtl.tables import Anatomized, TableSchema


def learn_subtree(
    table: CodedTable, original: np.ndarray, prune_rows: set[int], nominal_splits: str = "multiway"
) -> Node:
    """``learnDT`` of Figure 3 on ``trueInstances`` (the leaf's true tuples with the sensitive
    attribute, whose original rows are ``original``): pruned on the leaf's share of the
    shared prune set."""
    prune = [i for i, r in enumerate(original.tolist()) if r in prune_rows]
    return learner(nominal_splits=nominal_splits).fit(table, prune_rows=prune).tree_


@dataclass
class ClientCosts:
    """What one method cost the client: ``seconds`` of wall-clock time (crypto + network +
    learning + inference, and any wait for the CDBS), ``cpu_seconds`` of the client
    process's own CPU time over the same spans (all its threads, so the messaging layer's
    encryption too, but not the CDBS's work), tuples held at once, subtrees learned,
    requests (posted ones too) and round trips (requests the client waited for)."""

    seconds: float = 0.0
    cpu_seconds: float = 0.0
    tuples: int = 0
    subtrees_learned: int = 0
    requests: int = 0
    round_trips: int = 0

    @contextmanager
    def clock(self) -> Iterator[None]:
        """Add the wall-clock and CPU time of the block to the costs."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - wall
            self.cpu_seconds += time.process_time() - cpu


class CDBSClient:
    """The client's side: numbered requests to the CDBS, and the paper's procedures.

    The CDBS may be restarted between or during requests (a new process on the same
    database): the client then sends again every request it has no answer for. Use one
    ``CDBSClient`` per party and CDBS (it registers itself with
    :meth:`~mpc.runtime.party.Party.expect_restarts`)."""

    def __init__(
        self,
        party: Party,
        key: ClientKey,
        *,
        cdbs: str = CDBS,
        sensitive: str,
        class_name: str,
        nominal_splits: str = "multiway",
        pipelined: bool = True,
    ) -> None:
        if nominal_splits not in SPLITS:
            raise ConfigError(
                f"nominal_splits must be one of {list(SPLITS)}, got {nominal_splits!r}"
            )
        self.party, self.key, self.cdbs = party, key, cdbs
        self.sensitive, self.class_name = sensitive, class_name
        #: how every tree of this client's tables splits nominal attributes (the CDBS learns
        #: the BDT so too: it comes with the outsourcing)
        self.nominal_splits = nominal_splits
        #: whether ``updateBDT`` is posted (travels with the next request) or waited for, as
        #: Figure 3 draws it (:class:`Protocol`)
        self.pipelined = pipelined
        self._seq = 0
        self._posted: dict[int, str] = {}  # number -> op posted, not acknowledged yet
        self._unanswered: dict[int, dict[str, Any]] = {}  # sent, no reply or ack read yet
        self._outbox: list[dict[str, Any]] = []  # posted, not sent yet
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Future[None] | None = None
        # row keys -> (identifying attributes in that order, their digest)
        self._schemas: dict[tuple[str, ...], tuple[list[str], str]] = {}
        # table name -> the schema its leafIns refer to (from outsourcing, or asked once)
        self._table_schemas: dict[str, TableSchema] = {}
        party.expect_restarts(cdbs, self._resend)

    async def _resend(self) -> None:
        """The CDBS was restarted: send again the requests the old process never answered."""
        self._outbox.clear()  # sent below
        for _, req in sorted(self._unanswered.items()):
            await self.party.send(self.cdbs, "cdtl/req", req)

    async def request(self, op: str, **body: Any) -> dict[str, Any]:
        """Send request ``op`` and wait for its reply (which also acknowledges the requests
        posted before it)."""
        n = self._number(op, body, later=False)
        req = self._unanswered[n]
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._outbox:
            # the posted requests travel with this one: one message, handled first
            req = {**req, "posted": self._outbox}
            self._outbox = []
        await self._flushed()
        await self.party.send(self.cdbs, "cdtl/req", req)
        return await self._reply(n, op)

    async def post(self, op: str, **body: Any) -> int:
        """Send request ``op`` without waiting for its answer: it goes with the client's next
        request, or alone after :data:`POST_DELAY_S`, whichever comes first. The CDBS
        acknowledges it in its next reply; an error in it is raised by the next
        :meth:`request` or :meth:`settle`. Returns the request's number."""
        n = self._number(op, body, later=True)
        self._outbox.append(self._unanswered[n])
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(POST_DELAY_S, self._flush)
        return n

    async def settle(self) -> bool:
        """Wait until the CDBS has acknowledged every posted request (one ``sync`` round
        trip, which carries the requests not sent yet, if any is pending). Returns whether
        it took that round trip."""
        if self._posted:
            await self.request("sync")
            return True
        return False

    def _number(self, op: str, body: dict[str, Any], *, later: bool) -> int:
        """Number a new request and keep it until it is answered."""
        n = self._seq
        self._seq += 1
        req = {"op": op, "n": n, **body}
        if later:
            req["later"] = True
            self._posted[n] = op
        self._unanswered[n] = req
        return n

    def _flush(self) -> None:
        """No request came within POST_DELAY_S: send the posted requests alone."""
        self._timer = None
        if self._outbox:
            reqs, self._outbox = self._outbox, []
            self._flushing = asyncio.ensure_future(self._send_each(reqs, self._flushing))

    async def _send_each(self, reqs: list[dict[str, Any]], before: asyncio.Future | None) -> None:
        if before is not None:
            await before
        for req in reqs:
            await self.party.send(self.cdbs, "cdtl/req", req)

    async def _flushed(self) -> None:
        """Wait for (and raise the error of) a flush in progress: requests leave in order."""
        if self._flushing is not None:
            flushing, self._flushing = self._flushing, None
            await flushing

    async def _reply(self, n: int, op: str) -> dict[str, Any]:
        reply = await self.party.recv(self.cdbs, f"cdtl/rep/{n}", REPLY)
        self._unanswered.pop(n, None)
        acks = reply.pop("acks")  # the form of REPLY: a map with acks, each [number, map]
        for ack in acks:
            m = ack[0]
            if m >= self._seq:
                raise ProtocolError(f"{self.cdbs} acknowledged {ack!r}, which was not sent")
            posted = self._posted.pop(m, None)
            if posted is None:  # acknowledged twice: by a CDBS process and its successor
                continue
            self._unanswered.pop(m, None)
            if "error" in ack[1]:
                raise ProtocolError(f"{self.cdbs} refused {posted!r}: {ack[1]['error']}")
        if "error" in reply:
            raise ProtocolError(f"{self.cdbs} refused {op!r}: {reply['error']}")
        return reply

    async def done(self) -> None:
        await self.request("done")
        if self._timer is not None:
            self._timer.cancel()
        # a CDBS process that took over from one that died may answer again what its
        # predecessor answered: those second answers are the same replies
        self.party.drain(self.cdbs, "cdtl/rep/", REPLY)

    async def outsource(self, anatomized: Anatomized, prune_positions: np.ndarray) -> dict:
        """Upload ``IT`` and ``ST`` with the prune rows' positions in ``IT`` (and keep their
        schema, which the table's ``leafIns`` refer to)."""
        it, st = anatomized.it.to_wire(), anatomized.st.to_wire()
        schema = TableSchema.of(it, st)
        reply = await self.request(
            "outsource",
            it=it,
            st=st,
            prune=np.asarray(prune_positions, dtype=np.int64),
            splits=self.nominal_splits,
        )
        self._table_schemas[schema.name] = schema
        return reply

    def known_schema(self, name: str) -> TableSchema | None:
        """The schema of table ``name`` this client has (from outsourcing it, or asked for),
        else None. Its digest names the outsourced table: a client that comes back later
        checks the CDBS's table against it (:meth:`table_schema`)."""
        return self._table_schemas.get(name)

    async def table_schema(self, name: str, digest: Any) -> TableSchema:
        """The schema of table ``name`` whose digest is ``digest``: the one kept from
        outsourcing, else asked for once (and checked against ``digest``)."""
        schema = self._table_schemas.get(name)
        if schema is not None and schema.digest == digest:
            return schema
        reply = await self.request("table_schema", name=name)
        schema = TableSchema.from_wire(reply.get("schema"))
        if schema.name != name or schema.digest != digest:
            raise ProtocolError(
                f"{self.cdbs} sent a schema for table {schema.name!r} with digest "
                f"{schema.digest}, but its leafIns of table {name!r} refers to {digest!r}"
            )
        self._table_schemas[name] = schema
        return schema

    def _query(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """``sendInstance``'s body: the row's values without the sensitive value and the class,
        in the row's attribute order (IT's), with that order's digest."""
        keys = tuple(row)
        schema = self._schemas.get(keys)
        if schema is None:
            attrs = [a for a in keys if a not in (self.sensitive, self.class_name)]
            schema = self._schemas[keys] = (attrs, schema_digest(attrs))
        return {"values": [wire_value(row[a]) for a in schema[0]], "schema": schema[1]}

    # -- cdtl, Figure 3

    async def inference(
        self, name: str, row: Mapping[str, Any], prune_rows: set[int], costs: ClientCosts
    ) -> str:
        """``Inference(ins)``: the class of ``row`` (a full instance, with the sensitive
        value), refining the BDT leaf on the way if it has no subtree yet."""
        with costs.clock():
            return await self._inference(name, row, prune_rows, costs)

    async def _inference(
        self, name: str, row: Mapping[str, Any], prune_rows: set[int], costs: ClientCosts
    ) -> str:
        reply = await self.request("find_bdt_leaf", name=name, **self._query(row))
        costs.requests += 1
        costs.round_trips += 1
        leaf = reply.get("leaf")
        if not isinstance(leaf, str):
            raise ProtocolError("find_bdt_leaf: the CDBS sent no leaf id")
        if "subtree" in reply:
            blob = reply["subtree"]
            if not isinstance(blob, bytes):
                raise ProtocolError("find_bdt_leaf: the subtree is not bytes")
            try:
                sealed = open_json(self.key, blob, subtree_aad(name, leaf))
            except AuthenticationError as exc:
                raise AuthenticationError(
                    f"{self.party.name}: the subtree {self.cdbs} served for leaf {leaf!r} of "
                    f"table {name!r} failed authentication: it was altered, or sealed for "
                    f"another leaf or table, or under another key ({exc})"
                ) from None
            subtree = from_json(sealed)
        elif "instances" not in reply:  # a leaf with nothing to refine: its class
            label = reply.get("label")
            if not isinstance(label, str):
                raise ProtocolError(
                    "find_bdt_leaf: the CDBS sent neither a subtree, nor leafIns, nor a class label"
                )
            return label
        else:
            instances = reply.get("instances")
            digest = instances.get("schema") if isinstance(instances, dict) else None
            schema = await self.table_schema(name, digest)
            table, original = leaf_learning_table(instances, schema, self.key, name=name)
            if table.n_rows == 0:
                raise ProtocolError(f"find_bdt_leaf: leafIns of leaf {leaf!r} has no tuples")
            self.party.ledger.record(
                "cdtl/leaf-instances", {"name": name, "leaf": leaf, "tuples": table.n_rows},
                step="inference",
            )  # fmt: skip
            costs.tuples = max(costs.tuples, table.n_rows)
            subtree = learn_subtree(table, original, prune_rows, self.nominal_splits)
            costs.subtrees_learned += 1
            blob = seal_json(self.key, to_json(subtree), subtree_aad(name, leaf))
            if self.pipelined:
                # posted: its answer ("stored", or "another client's subtree won") comes with
                # the CDBS's next reply; the prediction below does not depend on it
                await self.post("update_bdt", name=name, leaf=leaf, subtree=blob)
            else:  # Figure 3: updateBDT, then the prediction
                await self.request("update_bdt", name=name, leaf=leaf, subtree=blob)
                costs.round_trips += 1
            costs.requests += 1
        return predict_one(subtree, row)

    # -- cnl

    async def cnl_learn(self, name: str, costs: ClientCosts) -> None:
        """Client naive learning: download ``IT`` and ``ST``, join, learn the whole tree, keep
        it sealed at the CDBS."""
        with costs.clock():
            await self._cnl_learn(name, costs)

    async def _cnl_learn(self, name: str, costs: ClientCosts) -> None:
        reply = await self.request("get_tables", name=name)
        table, original = joined_learning_table(
            reply.get("it"), reply.get("st"), self.key, name=name
        )
        prune_it = set(np.asarray(reply.get("prune"), dtype=np.int64).tolist())
        prune_rows = sorted(int(original[i]) for i in prune_it)
        tree = learner(nominal_splits=self.nominal_splits).fit(table, prune_rows=prune_rows).tree_
        costs.tuples = max(costs.tuples, table.n_rows)
        await self.request(
            "put_blob",
            name=name,
            key="cnl-tree",
            blob=seal_json(self.key, to_json(tree), cnl_aad(name)),
        )
        costs.requests += 2
        costs.round_trips += 2

    async def cnl_predict(self, name: str, row: Mapping[str, Any], costs: ClientCosts) -> str:
        """Every cnl prediction downloads and decrypts the tree."""
        with costs.clock():
            return await self._cnl_predict(name, row, costs)

    async def _cnl_predict(self, name: str, row: Mapping[str, Any], costs: ClientCosts) -> str:
        reply = await self.request("get_blob", name=name, key="cnl-tree")
        blob = reply.get("blob")
        if not isinstance(blob, bytes):
            raise ProtocolError("get_blob: the CDBS sent no bytes")
        try:
            sealed = open_json(self.key, blob, cnl_aad(name))
        except AuthenticationError as exc:
            raise AuthenticationError(
                f"{self.party.name}: the cnl tree {self.cdbs} served for table {name!r} "
                f"failed authentication: it was altered or belongs to another table ({exc})"
            ) from None
        tree = from_json(sealed)
        costs.requests += 1
        costs.round_trips += 1
        return predict_one(tree, row)

    # -- cdbsl

    async def cdbsl_predict(self, name: str, row: Mapping[str, Any], costs: ClientCosts) -> str:
        """CDBS learning: the client drops the sensitive value and the class, the CDBS
        predicts with the BDT."""
        with costs.clock():
            return await self._cdbsl_predict(name, row, costs)

    async def _cdbsl_predict(self, name: str, row: Mapping[str, Any], costs: ClientCosts) -> str:
        reply = await self.request("predict", name=name, **self._query(row))
        costs.requests += 1
        costs.round_trips += 1
        label = reply.get("class")
        if not isinstance(label, str):
            raise ProtocolError("predict: the CDBS sent no class")
        return label
