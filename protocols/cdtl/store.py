"""The CDBS's store (Mancuhan & Clifton, Figure 1's outsourced tables): IT, ST and the base
decision tree of every uploaded table, the sealed subtrees of refined leaves, and the client's
other sealed objects, in one SQLite file that outlives a run (:class:`CDBSStore`), and a
loaded table's per-leaf answers computed once (:class:`LoadedTable`).

The CDBS may read everything it stores: IT and ST as anatomized
(:mod:`protocols.cdtl.anatomization` states what they reveal), the BDT it learned itself, and
ciphertexts it cannot open (AES-GCM under the client's key, :mod:`mpc.crypto.sealed`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.tree import Node, from_json, to_json
from mpc.runtime.codec import decode, encode
from protocols.cdtl.cdtl import learner
from protocols.cdtl.find_leaf import (
    leaf_of_rows,
    rows_at,
    schema_digest,
)
from protocols.cdtl.joins import group_join
from protocols.cdtl.tables import IdentifyingTable, SensitiveTable, TableSchema


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
        self._cache: dict[str, LoadedTable] = {}
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

    def load(self, name: str) -> LoadedTable:
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
        loaded = LoadedTable(it, st, bdt, _unpack(row[3]), leaf_of_rows(bdt, it.table))
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
class LoadedTable:
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
            rows = self.leaves[leaf] = rows_at(self.leaf_ids, leaf)
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
