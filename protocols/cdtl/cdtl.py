"""Collaborative decision tree learning on outsourced anatomized data — Mancuhan & Clifton,
*Decision Tree Classification on Outsourced Data*: Figure 1 (the CDBS's Main), Figure 2
(``FindBDTLeaf``), Figure 3 (the client's ``Inference``), and the baselines client naive
learning (cnl) and CDBS learning (cdbsl) of Section 3.

Roles:

* **client** — the data owner: holds the table ``D`` and the key ``k`` (a
  :class:`~mpc.crypto.sealed.ClientKey`); outsources ``IT`` and ``ST``
  (:mod:`protocols.cdtl.anatomization`) and asks for predictions. It keeps nothing but the key
  between requests; to come back in a later process it needs the key, the table's name, the digest
  of its schema (checked against the CDBS's: :meth:`CDBSClient.table_schema`) and the shared prune
  rows, which a client keeps in its private model file (the ``cdtl-outsource`` / ``cdtl-classify``
  systems).
* **cdbs** — the cloud database server: stores ``IT``, ``ST``, the base decision tree (BDT)
  and the encrypted subtrees (:class:`CDBSStore`, SQLite), learns the BDT from ``IT`` and
  serves requests (:func:`serve_client`).

Protocol (every request but ``update_bdt`` one round trip, :class:`CDBSClient`):

* ``outsource`` — the client anatomizes its table and uploads ``IT`` and ``ST`` with the
  positions of ``IT``'s prune rows (the shared reduced-error prune set) and how the learner
  splits nominal attributes (:data:`SPLITS`); the CDBS learns the BDT on ``IT``'s identifying
  attributes with the class (Figure 1, ``LearnDT(IT)``) and stores all three in one
  transaction.
* ``find_bdt_leaf`` (Figure 2) — the client sends the instance without the sensitive value and
  the class (its values in IT's attribute order, with a digest of that order, which the CDBS
  checks: :func:`schema_digest`); the CDBS routes it to a BDT leaf and answers with the
  leaf's encrypted subtree if the leaf is refined, else with ``leafIns``: the leaf's ``IT``
  tuples group-joined with ``ST`` on GID (all candidate sensitive values of each tuple).
  IT, ST and the BDT never change after outsourcing, so the CDBS computes every leaf's
  ``leafIns`` once, when it loads the table (:meth:`_Loaded.prepare`), and serves it
  ready. ``leafIns`` carries only the leaf's rows, as codes into the domains of the table's
  :class:`~protocols.cdtl.anatomization.TableSchema` (its columns without rows), which the client
  has from outsourcing; a client that has not (another client of the same owner) asks for it
  once (``table_schema``). Two kinds of leaf need no refinement, and the CDBS answers them
  with a class label instead of ``leafIns``: a leaf without tuples (a value no training tuple
  had), with the BDT's label there; and (with the ``single_leaf`` shortcut) a leaf whose
  subtree is sure to be a single leaf whatever the sensitive values are, because the tuples
  the learner grows on (those not in the shared prune set) all have one class or are too
  few to split, with that leaf's class.
  The CDBS knows this from IT's classes and the prune positions
  (:meth:`~mpc.learners.c45.C45Classifier.single_leaf_label`). The client then neither receives
  tuples nor learns, and its prediction is the one Figure 3's subtree would give.
* ``update_bdt`` — the client uploads the subtree it learned for a leaf, AES-GCM sealed under
  its key with the table and the leaf id as associated data; the CDBS stores the first subtree
  of a leaf and keeps it (a second upload of the same leaf is ignored), so concurrent clients
  leave exactly one. In the optimised protocol the client does not wait for it: the upload
  travels with its next request (or alone after :data:`POST_DELAY_S` without one), the CDBS
  serves it at once to that request and to any other (:meth:`CDBSStore.stage`), stores it
  once the reply is sent, and acknowledges it in its next reply.
* cnl: ``get_tables`` (download ``IT`` and ``ST``), ``put_blob`` / ``get_blob`` (the sealed
  full tree kept at the CDBS); cdbsl: ``predict`` (the CDBS classifies with the BDT).

Two of the steps above are shortcuts that Figures 2-3 do not draw, each a switch of
:class:`Protocol` (:data:`PROTOCOLS` names the four combinations):

* ``single_leaf`` — the CDBS answers a leaf whose subtree is sure to be a single leaf with
  its class. Off, it answers such a leaf as Figure 2 does, with ``leafIns``, and the client
  learns the one-leaf subtree, seals and uploads it (and later queries there get it back).
* ``pipelined`` — ``updateBDT`` is posted and travels with the next request. Off, it is a
  request of its own that the client waits for, as Figure 3 calls it before predicting: one
  more round trip per refined leaf, answered once the CDBS has stored the subtree.

``as-drawn`` (both off) is the protocol of the figures, ``optimised`` (both on) the default.
Both give the same predictions: the one-leaf subtree predicts the class the CDBS would have
answered, and a posted upload is served to the next query as a stored one is. One case the
figures leave open is answered alike by all four: a leaf no training tuple reaches has no
tuples to learn from, so the CDBS answers it with the BDT's label there.

Inference (Figure 3): on a subtree the client decrypts it and predicts; on ``leafIns`` it
decrypts the ESEQs, keeps the true tuples (``trueInstances``), learns the subtree on them with
the sensitive attribute (the same C4.5-style learner, its prune rows those of the shared prune
set that fall in the leaf), seals and uploads it (``updateBDT``) and predicts.

Routing (``findLeaf``): an instance follows its values down the BDT; where its value is missing
or was never seen in training, it stops at that interior node, which then serves as its leaf
(with all the tuples below it). The tuples of a leaf are found the same way, so an instance and
the tuples it is compared with always agree.

What each party learns (ledger):

* the CDBS: the anatomized tables (``cdtl/anatomized``: names, sizes, the learner's kind of
  nominal split; groups' sensitive multisets are in ``ST``), the BDT it learned
  (``cdtl/bdt``), every query instance without its sensitive value and class
  (``cdtl/query``), which leaf each query reached and whether it was refined
  (``cdtl/visited-leaf``), and the sizes of the ciphertexts it stores (``cdtl/ciphertext``);
  cnl: that the client downloaded everything; cdbsl: the queries and its own predictions;
* the client: the leaves' candidate tuples it receives (``cdtl/leaf-instances``, which it could
  compute itself from its own table), nothing it did not own.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from mpc.crypto.sealed import ClientKey, associated_data, open_json, seal_json
from mpc.datasets import Table
from mpc.errors import AuthenticationError, ConfigError, ProtocolError
from mpc.learners.c45 import C45Classifier, CodedTable
from mpc.learners.evaluation import rows_of
from mpc.learners.tree import MISSING, Node, Split, from_json, predict_one, to_json
from mpc.runtime.codec import decode, encode
from mpc.runtime.party import Party
from mpc.runtime.view import Batch, declared
from protocols.cdtl.joins import group_join, joined_learning_table, leaf_learning_table
from protocols.cdtl.tables import Anatomized, IdentifyingTable, SensitiveTable, TableSchema


def _flat_requests(req: Any) -> Any:
    """A request and the posted requests it carries, each on its own and without its number
    or ``sync`` (whether a posted upload travels alone or with the next query, and whether a
    ``sync`` is needed to collect its acknowledgement, is a matter of timing)."""
    if not isinstance(req, dict):
        return req
    posted = req.get("posted")
    items = [p for p in (posted if isinstance(posted, list) else []) if isinstance(p, dict)]
    items.append({k: v for k, v in req.items() if k != "posted"})
    return Batch(
        {k: v for k, v in p.items() if k not in ("n", "later")}
        for p in items
        if p.get("op") != "sync"
    )


#: what the CDBS receives: the client's requests (the anatomized tables, queries without the
#: sensitive value and the class, sealed subtrees)
REQUEST = declared(
    "cdtl/request",
    "the client's requests: the anatomized tables to store, query instances without their "
    "sensitive value and class, subtrees and trees sealed under the client's key",
    canonical=_flat_requests,
    uniform_keys=("eseq", "subtree", "blob"),
)
#: what the client receives: its own tables' rows, sealed subtrees, labels, acknowledgements
REPLY = declared(
    "cdtl/reply",
    "the CDBS's answers: a leaf's tuples group-joined with ST (leafIns), a subtree the client "
    "sealed, a class label, the client's tables or its sealed tree, acknowledgements",
    uniform_keys=("eseq", "subtree", "blob"),
)

__all__ = [
    "CDBS",
    "CLIENT",
    "PROTOCOLS",
    "REPLY",
    "REQUEST",
    "SPLITS",
    "CDBSClient",
    "CDBSStore",
    "Protocol",
    "find_bdt_leaf",
    "leaf_of_rows",
    "learner",
    "serve_client",
    "subtree_aad",
]

CLIENT, CDBS = "client", "cdbs"
#: how long a posted request (``updateBDT``) waits for the client's next request to carry it
#: before it is sent alone
POST_DELAY_S = 0.05
#: the separator of a leaf id's path steps (``attribute=branch``)
_SEP = "\x1f"


#: how the learner splits a nominal attribute: one branch per value (J48's default), or
#: "== v" against the other values (J48 ``-B``, the paper's trees on vote and australian)
SPLITS = ("multiway", "binary")


@dataclass(frozen=True)
class Protocol:
    """Which of the two shortcuts over Figures 2-3 a run takes (see the module docstring):
    ``single_leaf`` (the CDBS's, per :func:`serve_client`) and ``pipelined`` (the client's,
    per :class:`CDBSClient`)."""

    single_leaf: bool = True
    pipelined: bool = True

    @classmethod
    def named(cls, name: str) -> Protocol:
        """The protocol called ``name``, one of :data:`PROTOCOLS`."""
        try:
            return PROTOCOLS[name]
        except KeyError:
            raise ConfigError(
                f"the cdtl protocol must be one of {list(PROTOCOLS)}, got {name!r}"
            ) from None


#: the protocols a run can take, by name: Figures 2-3 as drawn, each shortcut alone, both
PROTOCOLS: dict[str, Protocol] = {
    "as-drawn": Protocol(single_leaf=False, pipelined=False),
    "single-leaf": Protocol(single_leaf=True, pipelined=False),
    "pipelined": Protocol(single_leaf=False, pipelined=True),
    "optimised": Protocol(single_leaf=True, pipelined=True),
}


def learner(seed: int = 0, nominal_splits: str = "multiway") -> C45Classifier:
    """The learner of every tree here (BDT, subtrees, cnl): C4.5-style with reduced-error
    pruning, as the paper's Weka J48 runs; the client chooses ``nominal_splits`` (one of
    :data:`SPLITS`) when it outsources, and the CDBS learns the BDT with it."""
    return C45Classifier(pruning="reduced-error", nominal_splits=nominal_splits, seed=seed)


def subtree_aad(table: str, leaf: str) -> bytes:
    """Associated data binding a sealed subtree to its table and BDT leaf: a subtree moved to
    another leaf fails authentication."""
    return associated_data("cdtl/subtree", table, leaf)


def _cnl_aad(table: str) -> bytes:
    return associated_data("cnl/tree", table)


# ----------------------------------------------------------------------------- findLeaf


def _missing(value: Any) -> bool:
    return value is None or value == MISSING or (isinstance(value, float) and np.isnan(value))


def _heaviest_child(node: Split) -> str:
    """The child that got the most training weight (ties: the first key)."""
    if node.weights:
        return max(sorted(node.weights), key=lambda k: node.weights[k])
    sizes = {k: sum(c.counts.values()) for k, c in node.children.items()}
    return max(sorted(sizes), key=lambda k: sizes[k])


def find_bdt_leaf(tree: Node, row: Mapping[str, Any]) -> tuple[str, Node]:
    """``findLeaf(BDT, ins)`` of Figure 2: the id of the leaf ``row`` reaches, and that leaf.

    A value that is missing or was not seen in training at a split follows the branch that
    got the most training weight. (C4.5's fractional routing would send the row down every
    branch; here that would hand the client the union of several leaves and make it learn
    from them all.) Training rows are routed the same way, so the leaves partition ``IT``.
    """
    node, steps = tree, []
    while isinstance(node, Split):
        value = row.get(node.attribute)
        key = None if _missing(value) else node.branch(value)
        if key is None:
            key = _heaviest_child(node)
        steps.append(f"{node.attribute}={key}")
        node = node.children[key]
    return _SEP.join(steps), node


def leaf_of_rows(tree: Node, table: Table) -> list[str]:
    """The leaf id of every row of ``table`` (as :func:`find_bdt_leaf` routes it)."""
    return [find_bdt_leaf(tree, r)[0] for r in rows_of(table)]


def _rows_at(ids: Sequence[str], leaf: str) -> np.ndarray:
    """The rows whose leaf is ``leaf``."""
    return np.flatnonzero(np.asarray(ids, dtype=object) == leaf)


def _wire_value(v: Any) -> str | float:
    """A query value as it travels: str (floats stay float)."""
    return v if type(v) is str else float(v) if isinstance(v, float | np.floating) else str(v)


def schema_digest(attributes: Sequence[str]) -> str:
    """A short digest of an attribute order: a query sends its values in IT's order with
    this digest, and the CDBS refuses values in another order."""
    joined = "\x1f".join(attributes).encode("utf-8")
    return hashlib.blake2b(joined, digest_size=8).hexdigest()


# ----------------------------------------------------------------------------- the store


def _pack(body: Any) -> bytes:
    return bytes(msgpack.packb([bytes(f) for f in encode("msg", "store", 0, body)]))


def _unpack(blob: bytes) -> Any:
    frames = msgpack.unpackb(blob)
    if not isinstance(frames, list):
        raise ProtocolError("a stored record is not a list of frames")
    return decode(frames).body


class CDBSStore:
    """The CDBS's database: a SQLite file (or ``:memory:``), one transaction per change.

    Tables: ``outsourced`` (IT, ST and the BDT of every uploaded table), ``subtrees`` (one
    sealed subtree per table and leaf: the first stored wins), ``blobs`` (other sealed objects
    the client keeps here, e.g. cnl's tree). A restart reopens the file with nothing lost."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        if self.path != ":memory:":
            # readers never block the writer; a committed transaction survives a crash of the
            # process (NORMAL syncs the WAL at checkpoints: a power cut may lose the last ones)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(
            """
            CREATE TABLE IF NOT EXISTS outsourced (
                name TEXT PRIMARY KEY, it BLOB NOT NULL, st BLOB NOT NULL,
                bdt TEXT NOT NULL, prune BLOB NOT NULL, created REAL NOT NULL);
            CREATE TABLE IF NOT EXISTS subtrees (
                name TEXT NOT NULL, leaf TEXT NOT NULL, blob BLOB NOT NULL, created REAL NOT NULL,
                PRIMARY KEY (name, leaf));
            CREATE TABLE IF NOT EXISTS blobs (
                name TEXT NOT NULL, key TEXT NOT NULL, blob BLOB NOT NULL,
                PRIMARY KEY (name, key));
            """
        )
        self._cache: dict[str, _Loaded] = {}
        # (table, leaf) -> the stored subtree: what this process stored or read (the rows
        # never change once stored, and only this process writes them); every subtree of a
        # table in _complete (read when the table was loaded), so a miss needs no query
        self._subtrees: dict[tuple[str, str], bytes] = {}
        self._complete: set[str] = set()
        # (table, key) -> blob, as for subtrees: what this process stored or read
        self._blobs: dict[tuple[str, str], bytes] = {}
        # (table, leaf) -> a subtree received but not stored yet (see stage)
        self._staged: dict[tuple[str, str], bytes] = {}

    def close(self) -> None:
        self._db.close()

    def _tx(self, sql: str, args: Sequence[Any]) -> int:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                cur = self._db.execute(sql, args)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return cur.rowcount

    def put_tables(
        self, it: IdentifyingTable, st: SensitiveTable, bdt: Node, prune: np.ndarray
    ) -> None:
        """Store an outsourced table, replacing an earlier upload of the same name (and its
        subtrees, which belong to the old BDT)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM subtrees WHERE name = ?", (it.name,))
                self._db.execute(
                    "INSERT OR REPLACE INTO outsourced VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        it.name,
                        _pack(it.to_wire()),
                        _pack(st.to_wire()),
                        json.dumps(to_json(bdt)),
                        _pack(np.asarray(prune, dtype=np.int64)),
                        time.time(),
                    ),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self._cache.pop(it.name, None)
        self._complete.discard(it.name)
        self._subtrees = {k: v for k, v in self._subtrees.items() if k[0] != it.name}
        self._staged = {k: v for k, v in self._staged.items() if k[0] != it.name}

    def load(self, name: str) -> _Loaded:
        hit = self._cache.get(name)
        if hit is not None:
            return hit
        row = self._db.execute(
            "SELECT it, st, bdt, prune FROM outsourced WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            raise ProtocolError(f"the CDBS holds no table {name!r}; outsource it first")
        it = IdentifyingTable.from_wire(_unpack(row[0]))
        st = SensitiveTable.from_wire(_unpack(row[1]))
        bdt = from_json(json.loads(row[2]))
        loaded = _Loaded(it, st, bdt, _unpack(row[3]), leaf_of_rows(bdt, it.table))
        loaded.prepare()
        query = "SELECT leaf, blob FROM subtrees WHERE name = ?"
        for leaf, blob in self._db.execute(query, (name,)):
            self._subtrees[name, leaf] = bytes(blob)
        self._complete.add(name)
        self._cache[name] = loaded
        return loaded

    def names(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT name FROM outsourced ORDER BY name")]

    def subtree(self, name: str, leaf: str) -> bytes | None:
        """The leaf's stored subtree, else the one staged for it, else None."""
        hit = self._subtrees.get((name, leaf))
        if hit is not None:
            return hit
        if name in self._complete:
            return self._staged.get((name, leaf))
        row = self._db.execute(
            "SELECT blob FROM subtrees WHERE name = ? AND leaf = ?", (name, leaf)
        ).fetchone()
        if row is None:
            return self._staged.get((name, leaf))
        blob = self._subtrees[name, leaf] = bytes(row[0])
        return blob

    def stage(self, name: str, leaf: str, blob: bytes) -> None:
        """Serve ``blob`` as the leaf's subtree until :meth:`put_subtree` stores it (or the
        subtree stored first)."""
        self._staged.setdefault((name, leaf), blob)

    def put_subtree(self, name: str, leaf: str, blob: bytes) -> bool:
        """Store the first subtree of a leaf; False if the leaf already had one."""
        try:
            n = self._tx(
                "INSERT OR IGNORE INTO subtrees VALUES (?, ?, ?, ?)",
                (name, leaf, blob, time.time()),
            )
        finally:
            self._staged.pop((name, leaf), None)
        if n == 1:
            self._subtrees[name, leaf] = blob
        return n == 1

    def is_loaded(self, name: str) -> bool:
        """Whether this process has loaded table ``name``."""
        return name in self._cache

    def subtree_count(self, name: str | None = None) -> int:
        if name is None:
            return int(self._db.execute("SELECT COUNT(*) FROM subtrees").fetchone()[0])
        q = "SELECT COUNT(*) FROM subtrees WHERE name = ?"
        return int(self._db.execute(q, (name,)).fetchone()[0])

    def subtree_leaves(self) -> list[str]:
        """The leaf of every stored subtree (a leaf twice would be a duplicate)."""
        return [r[0] for r in self._db.execute("SELECT leaf FROM subtrees ORDER BY name, leaf")]

    def put_blob(self, name: str, key: str, blob: bytes) -> None:
        self._tx("INSERT OR REPLACE INTO blobs VALUES (?, ?, ?)", (name, key, blob))
        self._blobs[name, key] = blob

    def blob(self, name: str, key: str) -> bytes:
        hit = self._blobs.get((name, key))
        if hit is not None:
            return hit
        row = self._db.execute(
            "SELECT blob FROM blobs WHERE name = ? AND key = ?", (name, key)
        ).fetchone()
        if row is None:
            raise ProtocolError(f"the CDBS holds no {key!r} for table {name!r}")
        blob = self._blobs[name, key] = bytes(row[0])
        return blob


@dataclass
class _Loaded:
    """An outsourced table as the CDBS serves it: IT, ST, the BDT, the prune positions, the
    leaf of every IT row, and the answers it prepares once (:meth:`prepare`)."""

    it: IdentifyingTable
    st: SensitiveTable
    bdt: Node
    prune: np.ndarray
    leaf_ids: list[str]
    leaves: dict[str, np.ndarray] = field(default_factory=dict)
    #: leaf id -> the wire body of its ``leafIns`` (its IT tuples group-joined with ST)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: leaf id -> the class of every prediction there if the subtree is sure to be a single
    #: leaf (:meth:`single_leaf_label`), else None
    single: dict[str, str | None] = field(default_factory=dict)
    #: cnl's download: IT and ST as wire bodies
    tables: dict[str, Any] = field(default_factory=dict)
    #: the identifying attributes a query's values follow, and their digest
    attributes: tuple[str, ...] = ()
    schema: str = ""
    #: IT's and ST's columns without their rows, which ``leafIns`` refers to
    table_schema: TableSchema | None = None

    def rows_of(self, leaf: str) -> np.ndarray:
        rows = self.leaves.get(leaf)
        if rows is None:
            rows = self.leaves[leaf] = _rows_at(self.leaf_ids, leaf)
        return rows

    def leaf_sizes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for x in self.leaf_ids:
            out[x] = out.get(x, 0) + 1
        return out

    def prepare(self) -> None:
        """Compute, once, what the CDBS serves from these fixed tables: every leaf's rows,
        single-leaf label and ``leafIns`` (Figure 2's ``joinTables``, group-joined on GID and
        encoded for the wire), and the wire form of IT and ST. IT, ST and the BDT never change after
        outsourcing, so the answers are those a join per request would give; a restarted CDBS
        computes them again from the same database when it loads the table."""
        self.tables = {"it": self.it.to_wire(), "st": self.st.to_wire()}
        self.table_schema = TableSchema.of(self.tables["it"], self.tables["st"])
        self.attributes = tuple(self.it.table.attributes)
        self.schema = schema_digest(self.attributes)
        ids = np.asarray(self.leaf_ids, dtype=object)
        for leaf in dict.fromkeys(self.leaf_ids):
            self.leaves[leaf] = np.flatnonzero(ids == leaf)
            self.leaf_answer(leaf)
            self.single_leaf_label(leaf)

    def final_label(self, leaf: str, node: Node, single_leaf: bool = True) -> str | None:
        """The class a query that reaches ``leaf`` gets without refinement, or None if the
        leaf is to be refined: the BDT's label at a leaf without tuples, else (with
        ``single_leaf``, the shortcut) :meth:`single_leaf_label`."""
        if not len(self.rows_of(leaf)):
            return node.label
        return self.single_leaf_label(leaf) if single_leaf else None

    def single_leaf_label(self, leaf: str) -> str | None:
        """The class the client's subtree of ``leaf`` predicts everywhere when the learner is
        sure to make it a single leaf whatever the sensitive values are: the tuples it grows
        on (those not in the shared prune set) all have one class, or are too few to split
        (:meth:`~mpc.learners.c45.C45Classifier.single_leaf_label`; the CDBS has every tuple's class
        and the prune positions). None if the subtree depends on the sensitive values
        (computed on first use)."""
        if leaf not in self.single:
            rows = self.rows_of(leaf)
            within = np.flatnonzero(np.isin(rows, self.prune)).tolist()
            target = self.it.table.target[rows]
            self.single[leaf] = (
                learner().single_leaf_label(target, prune_rows=within) if len(rows) else None
            )
        return self.single[leaf]

    def leaf_answer(self, leaf: str) -> dict[str, Any]:
        """The wire body of ``leafIns`` of ``leaf`` (computed on first use; a leaf no IT row
        reaches has no tuples)."""
        hit = self.answers.get(leaf)
        if hit is None:
            if self.table_schema is None:
                raise ConfigError("prepare() the table before answering a leaf")
            rows = self.rows_of(leaf)
            joined = group_join(self.it.subset(rows), self.st)
            hit = self.answers[leaf] = joined.to_wire(self.table_schema)
        return hit


# ----------------------------------------------------------------------------- the CDBS


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
        req = await party.recv(client, "cdtl/req", REQUEST)
        posted = req.get("posted", []) if isinstance(req, dict) else None
        if not isinstance(posted, list) or not all(_is_request(p, later=True) for p in posted):
            raise ProtocolError(f"{client} sent a `posted` that is not a list of posted requests")
        if not _is_request(req, later=bool(req.get("later"))):
            raise ProtocolError(
                f"{client} sent a request that is not {{'op': ..., 'n': ..., 'later': bool}}"
            )
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


def _is_request(req: Any, *, later: bool) -> bool:
    """``req`` is ``{"op": str, "n": int >= 0}``, with ``"later": True`` iff ``later``."""
    if not isinstance(req, dict):
        return False
    n = req.get("n")
    return (
        isinstance(req.get("op"), str)
        and isinstance(n, int)
        and not isinstance(n, bool)
        and n >= 0
        and req.get("later", False) is later
    )


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


def _query(req: Mapping[str, Any], loaded: _Loaded) -> dict[str, Any]:
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
        ins = _query(req, loaded)
        leaf, node = find_bdt_leaf(loaded.bdt, ins)
        # both values plain JSON, made here: names and leaf ids are str, the query's values
        # str or float (checked by _query)
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
        ins = _query(req, loaded)
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


# ----------------------------------------------------------------------------- the client


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
        if not isinstance(reply, dict):
            raise ProtocolError(f"{self.cdbs} answered {op!r} with {type(reply).__name__}")
        acks = reply.pop("acks", None)
        if not isinstance(acks, list):
            raise ProtocolError(f"{self.cdbs} answered {op!r} without `acks`")
        for ack in acks:
            m = ack[0] if isinstance(ack, list) and len(ack) == 2 else None
            if not isinstance(m, int) or not 0 <= m < self._seq or not isinstance(ack[1], dict):
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
        return {"values": [_wire_value(row[a]) for a in schema[0]], "schema": schema[1]}

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
            blob=seal_json(self.key, to_json(tree), _cnl_aad(name)),
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
            sealed = open_json(self.key, blob, _cnl_aad(name))
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
