"""Anatomization: a table split into an identifying table IT and a sensitive table ST.

Mancuhan & Clifton, *Decision Tree Classification on Outsourced Data*, Definitions 2-6
(groups, l-diversity, anatomy with GID, SEQ and ESEQ, simple l-diverse distribution), and the
table operations of the collaborative learning: ``joinTables(leafIns, ST, GID)`` of
``FindBDTLeaf`` (Figure 2) and ``trueInstances`` of ``Inference`` (Figure 3).

Roles, inputs and outputs:

* **client** — holds the person specific table ``D`` and the :class:`~mpc.crypto.sealed.ClientKey`.
  :func:`anatomize` ``(D, A_s, l, key)`` gives ``IT`` and ``ST``, which it uploads to the CDBS.
  :func:`join` ``(IT, ST, key)`` rebuilds ``D`` exactly (client naive learning, Section 3.1);
  :func:`true_instances` ``(leafIns, key)`` keeps the true (tuple, sensitive value) pairs of a
  leaf (Figure 3).
* **CDBS** (cloud database server) — stores ``IT`` and ``ST``, learns the base decision tree on
  ``IT`` (its identifying attributes and the class) and answers :func:`group_join`
  ``(leaf tuples, ST)`` with ``leafIns`` (Figure 2). These are network-free functions; the
  parties' processes call them.

What the CDBS learns from ``IT`` and ``ST``:

* every tuple's identifying attributes and class, in clear (the paper allows the CDBS all
  associations among identifying attributes);
* the group ``GID`` of every tuple, hence the group sizes, and the multiset of sensitive values
  of every group (hence the distribution of ``A_s`` over the whole table);
* the number of tuples ``n``, and that ESEQ has a fixed length (:data:`ESEQ_BYTES`).

It does not learn which tuple of a group holds which of the group's sensitive values: every
value occurs at most once per group, tuples are put into groups at random, the rows of ``IT``
are in a random order, ``ST`` is in the order of ``SEQ`` (a random permutation), and ``ESEQ``
is AES-GCM (semantically secure). So each tuple of a group is, to the CDBS, equally likely to
hold any of the group's values — the simple l-diverse distribution of Definitions 5 and 6.
``group_join`` is a join on the public ``GID`` and tells it nothing new.

Choices where the paper leaves room:

* The class is an identifying attribute (the paper predicts an attribute of ``I_T``; the
  class must not be the sensitive attribute). ``IT`` keeps it as the class of its
  :class:`~mpc.datasets.Table`, ready for the base decision tree.
* Groups are formed as in Xiao & Tao's Anatomy (the algorithm the paper's references build
  on), randomized instead of optimized: while ``l`` sensitive values have tuples left, take
  one random tuple of each of the ``l`` most frequent values (ties broken at random) as a
  group; each of the at most ``l - 1`` tuples left over joins a random group that does not
  hold its value yet. Every group thus has between ``l`` and ``2l - 1`` tuples with pairwise
  distinct sensitive values, and this always succeeds when no value covers more than ``n / l``
  of the tuples (Xiao & Tao, *Anatomy*, VLDB 2006); otherwise :func:`anatomize` raises
  :class:`~mpc.errors.ConfigError` before anything is built.
* ``ESEQ = E_k(salt, s)`` is a :func:`~mpc.crypto.sealed.seal` of ``salt || s || r``: a 16-byte
  random salt, the sequence number ``s`` and the tuple's original row ``r`` (so :func:`join`
  restores the original row order), with associated data naming the table and the tuple's
  ``GID``: an ESEQ moved to another table or group fails authentication.
* ``GID`` are ``0 .. m-1`` and ``SEQ`` are ``0 .. n-1``, both assigned by random permutations.
* The sensitive attribute must be nominal (discretize a continuous one first, as the paper
  does for Autos); a missing value ``"?"`` counts as a value of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from mpc.crypto.sealed import (
    OVERHEAD,
    ClientKey,
    associated_data,
    extend_associated_data_each,
    open_rows,
    seal,
)
from mpc.datasets import CONTINUOUS, NOMINAL, Table
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.c45 import CodedTable

__all__ = [
    "ESEQ_BYTES",
    "SALT_BYTES",
    "Anatomized",
    "Candidates",
    "IdentifyingTable",
    "SensitiveTable",
    "TableSchema",
    "anatomize",
    "group_join",
    "is_l_diverse",
    "join",
    "join_with_rows",
    "joined_learning_table",
    "leaf_learning_table",
    "max_l",
    "open_eseq",
    "suppress_for_l",
    "true_instances",
    "true_instances_with_rows",
]

#: The random salt of ``E_k(salt, s)`` (Definition 4); AES-GCM's random nonce already makes
#: equal sequence numbers encrypt differently, the salt keeps the paper's form.
SALT_BYTES = 16
_ESEQ_FIELDS = struct.Struct(">QQ")  # s, r
_ESEQ_PLAINTEXT = SALT_BYTES + _ESEQ_FIELDS.size
#: Length of every ESEQ blob: the sealed ``salt || s || r``.
ESEQ_BYTES = OVERHEAD + _ESEQ_PLAINTEXT


def _eseq_aads(table_name: str, gids: Sequence[int]) -> dict[int, bytes]:
    """The associated data of an ESEQ of table ``table_name`` in each group of ``gids``:
    ``associated_data("anatomization/ESEQ", table_name, gid)``, the common prefix encoded
    once, and remembered for the table's most recent groups (a client opens the ESEQs of one
    table leaf by leaf)."""
    known = _ESEQ_AADS.get(table_name)
    if known is None:
        if len(_ESEQ_AADS) >= _ESEQ_AAD_TABLES:
            _ESEQ_AADS.pop(next(iter(_ESEQ_AADS)))
        known = _ESEQ_AADS[table_name] = {}
    distinct = set(gids)
    new = list(distinct.difference(known))
    if new:
        if len(known) + len(new) > _ESEQ_AAD_GROUPS:
            known.clear()
            new = list(distinct)
        prefix = associated_data("anatomization/ESEQ", table_name)
        known.update(zip(new, extend_associated_data_each(prefix, new), strict=True))
    return known


#: table name -> group -> ESEQ associated data, for the last few tables (bounded memory)
_ESEQ_AADS: dict[str, dict[int, bytes]] = {}
_ESEQ_AAD_TABLES = 8
_ESEQ_AAD_GROUPS = 1 << 20


# --------------------------------------------------------------------------------------------
# IT, ST and leafIns


@dataclass(frozen=True, eq=False)
class IdentifyingTable:
    """Definition 4's identifying table ``IT = (A_1, ..., A_d, GID, ESEQ)``.

    ``table`` holds ``A_1 .. A_d`` (every attribute except the sensitive one) and the class;
    ``gid[i]`` and ``eseq[i]`` (a row of :data:`ESEQ_BYTES` bytes, ``eseq[i].tobytes()`` is
    the blob) belong to row ``i`` of ``table``.
    """

    table: Table
    gid: np.ndarray
    eseq: np.ndarray

    def __post_init__(self) -> None:
        gid, eseq = _it_arrays(self.table.n_rows, self.gid, np.asarray(self.eseq))
        object.__setattr__(self, "gid", gid)
        object.__setattr__(self, "eseq", eseq)

    @property
    def name(self) -> str:
        """The name of the anatomized table."""
        return self.table.name

    @property
    def n_rows(self) -> int:
        """The number of tuples."""
        return self.table.n_rows

    def subset(self, rows: np.ndarray | Sequence[int]) -> IdentifyingTable:
        """The tuples selected by an index array or a boolean mask (e.g. a leaf's tuples)."""
        idx = np.asarray(rows)
        if idx.size == 0:
            idx = idx.astype(np.int64)
        return IdentifyingTable(self.table.subset(idx), self.gid[idx], self.eseq[idx])

    def to_wire(self) -> dict[str, Any]:
        """A body for :mod:`mpc.runtime.codec`: nominal columns as a domain of str and an int32 code
        array, continuous ones as float64 arrays, GID int64, ESEQ one uint8 array."""
        return {**_table_to_wire(self.table), "gid": self.gid, "eseq": self.eseq}

    @classmethod
    def from_wire(cls, doc: Any) -> IdentifyingTable:
        """The inverse of :meth:`to_wire`; raises :class:`~mpc.errors.ProtocolError` if
        ``doc`` is malformed."""
        d = _mapping(doc, "IT")
        eseq = d.get("eseq")
        if not isinstance(eseq, np.ndarray):
            raise ProtocolError(f"IT.eseq must be a uint8 array, got {type(eseq).__name__}")
        return cls(_table_from_wire(d), _int_array(d.get("gid"), "IT.gid"), eseq)


@dataclass(frozen=True, eq=False)
class SensitiveTable:
    """Definition 4's sensitive table ``ST = (SEQ, GID, A_s)``.

    ``attribute`` is the name of ``A_s`` and ``position`` its index among the original
    table's attributes (so a join puts it back in place); row ``i`` is
    ``(seq[i], gid[i], values[i])``.
    """

    name: str
    attribute: str
    position: int
    seq: np.ndarray
    gid: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        seq = _int_array(self.seq, "ST.seq")
        gid = _int_array(self.gid, "ST.gid")
        values = np.asarray(self.values, dtype=object)
        if not seq.shape == gid.shape == values.shape or values.ndim != 1:
            raise ProtocolError(
                f"ST needs one SEQ, GID and value per row, got {len(seq)} SEQs, {len(gid)} "
                f"GIDs and {len(values)} values"
            )
        if isinstance(self.position, bool) or not isinstance(self.position, int | np.integer):
            raise ProtocolError(f"ST.position must be an int, got {self.position!r}")
        object.__setattr__(self, "position", int(self.position))
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "gid", gid)
        object.__setattr__(self, "values", values)

    @property
    def n_rows(self) -> int:
        """The number of tuples."""
        return len(self.seq)

    def groups(self) -> dict[int, list[str]]:
        """The sensitive values of every group, by GID (the CDBS's view of ST)."""
        out: dict[int, list[str]] = {}
        for g, v in zip(self.gid.tolist(), self.values.tolist(), strict=True):
            out.setdefault(g, []).append(v)
        return out

    def to_wire(self) -> dict[str, Any]:
        """A body for :mod:`mpc.runtime.codec`."""
        return {
            "name": self.name,
            "attribute": self.attribute,
            "position": self.position,
            "seq": self.seq,
            "gid": self.gid,
            **dict(zip(("domain", "codes"), _coded(self.values), strict=True)),
        }

    @classmethod
    def from_wire(cls, doc: Any) -> SensitiveTable:
        """The inverse of :meth:`to_wire`; raises :class:`~mpc.errors.ProtocolError` if
        ``doc`` is malformed."""
        d = _mapping(doc, "ST")
        return cls(
            name=_str(d.get("name"), "ST.name"),
            attribute=_str(d.get("attribute"), "ST.attribute"),
            position=_int(d.get("position"), "ST.position"),
            seq=_int_array(d.get("seq"), "ST.seq"),
            gid=_int_array(d.get("gid"), "ST.gid"),
            values=_decoded(
                _str_array(d.get("domain"), "ST.domain"),
                _int_array(d.get("codes"), "ST.codes"),
                "ST.codes",
            ),
        )


@dataclass(frozen=True)
class Anatomized:
    """What :func:`anatomize` gives the client to upload: ``it``, ``st`` and the ``l`` used."""

    it: IdentifyingTable
    st: SensitiveTable
    l: int  # noqa: E741 (the paper's symbol)

    @property
    def n_groups(self) -> int:
        """The number of groups ``m``."""
        return len(np.unique(self.st.gid))


@dataclass(frozen=True, eq=False)
class Candidates:
    """``leafIns`` of Figure 2: the tuples of a leaf, each with every sensitive value of its
    group.

    ``it`` holds the leaf's IT tuples; pair ``j`` says that tuple ``row[j]`` of ``it`` may have
    the value ``value[j]``, which ST stores under sequence number ``seq[j]``. A tuple of a group
    of size ``|G|`` appears in ``|G|`` pairs, exactly one of them true.
    """

    it: IdentifyingTable
    attribute: str
    position: int
    row: np.ndarray
    seq: np.ndarray
    value: np.ndarray

    def __post_init__(self) -> None:
        row = _int_array(self.row, "leafIns.row")
        seq = _int_array(self.seq, "leafIns.seq")
        value = np.asarray(self.value, dtype=object)
        if not row.shape == seq.shape == value.shape or value.ndim != 1:
            raise ProtocolError(
                f"leafIns needs one row, SEQ and value per pair, got {len(row)} rows, "
                f"{len(seq)} SEQs and {len(value)} values"
            )
        if len(row) and (row.min() < 0 or row.max() >= self.it.n_rows):
            raise ProtocolError(
                f"leafIns pairs refer to tuples {row.min()}..{row.max()}, but the leaf has "
                f"{self.it.n_rows} tuples"
            )
        object.__setattr__(self, "row", row)
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "value", value)

    @property
    def n_pairs(self) -> int:
        """The number of (tuple, candidate value) pairs."""
        return len(self.row)

    def to_wire(self, schema: TableSchema) -> dict[str, Any]:
        """A body for :mod:`mpc.runtime.codec`, in the terms of the table's ``schema`` (which the
        client holds, so only the rows travel): the leaf's IT rows as codes into the
        schema's domains (see :meth:`IdentifyingTable.to_wire`), with their GIDs and ESEQs,
        and the pairs as one int64 array of rows ``(row, seq, code of the value in the
        schema's sensitive domain)``."""
        rows = _table_to_wire(self.it.table, schema.domains)
        index = {v: i for i, v in enumerate(schema.sensitive_domain)}
        try:
            value_codes = np.fromiter(
                map(index.__getitem__, _strings(self.value)), dtype=np.int64, count=len(self.value)
            )
        except KeyError as exc:
            raise ConfigError(f"leafIns: sensitive value {exc} is not in the schema") from None
        return {
            "schema": schema.digest,
            "codes": rows["codes"],
            "continuous": rows["continuous"],
            "gid": self.it.gid,
            "eseq": self.it.eseq,
            "pairs": np.stack([self.row, self.seq, value_codes], axis=1),
        }

    @classmethod
    def from_wire(cls, doc: Any, schema: TableSchema) -> Candidates:
        """The inverse of :meth:`to_wire`; raises :class:`~mpc.errors.ProtocolError` if
        ``doc`` is malformed or made with another schema."""
        cols, gid, eseq, pairs = _leaf_wire(doc, schema)
        domain = np.array(schema.sensitive_domain, dtype=object)
        return cls(
            it=IdentifyingTable(_table_from_columns(cols), gid, eseq),
            attribute=schema.attribute,
            position=schema.position,
            row=pairs[:, 0],
            seq=pairs[:, 1],
            value=domain[pairs[:, 2]],
        )


@dataclass(frozen=True)
class TableSchema:
    """The columns of an anatomized table without its rows: what every ``leafIns`` of the
    table shares. IT's name, source, class, attributes and kinds, the domains of its nominal
    columns and of the class (as :meth:`IdentifyingTable.to_wire` codes them), and ST's
    attribute, position and domain.

    The client knows it from the tables it outsourced (:meth:`of`); so ``leafIns`` carries
    only the leaf's rows, as codes into these domains, and the schema's :attr:`digest`. A
    client that did not outsource the table asks the CDBS for it once and checks it against
    the digest."""

    name: str
    source: str
    class_name: str
    attributes: tuple[str, ...]
    kinds: tuple[str, ...]
    #: the domains of the nominal attributes, then of the class
    domains: tuple[tuple[str, ...], ...]
    attribute: str
    position: int
    sensitive_domain: tuple[str, ...]

    @classmethod
    def of(cls, it_wire: Mapping[str, Any], st_wire: Mapping[str, Any]) -> TableSchema:
        """The schema of IT and ST as their ``to_wire`` made them (checked)."""
        cols = _wire_columns(it_wire)
        st = _mapping(st_wire, "ST")
        return cls.from_wire(
            {
                "name": cols.name,
                "source": cols.source,
                "class_name": cols.class_name,
                "attributes": cols.attributes,
                "kinds": cols.kinds,
                "domains": cols.domains,
                "attribute": st.get("attribute"),
                "position": st.get("position"),
                "sensitive_domain": st.get("domain"),
            }
        )

    @cached_property
    def digest(self) -> str:
        """A digest of every field: a ``leafIns`` names the schema its codes refer to
        (computed once)."""
        return _schema_digest(self)

    def to_wire(self) -> dict[str, Any]:
        """A body for :mod:`mpc.runtime.codec`."""
        return {
            "name": self.name,
            "source": self.source,
            "class_name": self.class_name,
            "attributes": list(self.attributes),
            "kinds": list(self.kinds),
            "domains": [list(d) for d in self.domains],
            "attribute": self.attribute,
            "position": self.position,
            "sensitive_domain": list(self.sensitive_domain),
        }

    @classmethod
    def from_wire(cls, doc: Any) -> TableSchema:
        """The inverse of :meth:`to_wire`; raises :class:`~mpc.errors.ProtocolError` if
        ``doc`` is malformed."""
        d = _mapping(doc, "schema")
        attributes = _str_list(d.get("attributes"), "schema.attributes")
        kinds = _str_list(d.get("kinds"), "schema.kinds")
        if len(attributes) != len(kinds) or not set(kinds) <= {NOMINAL, CONTINUOUS}:
            raise ProtocolError(
                f"schema: {len(attributes)} attributes need as many kinds, each "
                f"{NOMINAL!r} or {CONTINUOUS!r}"
            )
        raw = d.get("domains")
        n_nominal = kinds.count(NOMINAL)
        if not isinstance(raw, list) or len(raw) != n_nominal + 1:
            raise ProtocolError(
                f"schema.domains must be a list of {n_nominal + 1} domains (the nominal "
                "columns, then the class)"
            )
        attribute = _str(d.get("attribute"), "schema.attribute")
        position = _int(d.get("position"), "schema.position")
        if not 0 <= position <= len(attributes) or attribute in attributes:
            raise ProtocolError(
                f"schema: sensitive attribute {attribute!r} cannot go back at position "
                f"{position} of IT's attributes {attributes}"
            )
        return cls(
            name=_str(d.get("name"), "schema.name"),
            source=_str(d.get("source"), "schema.source"),
            class_name=_str(d.get("class_name"), "schema.class_name"),
            attributes=tuple(attributes),
            kinds=tuple(kinds),
            domains=tuple(tuple(_str_list(x, f"schema.domains[{j}]")) for j, x in enumerate(raw)),
            attribute=attribute,
            position=position,
            sensitive_domain=tuple(_str_list(d.get("sensitive_domain"), "schema.sensitive_domain")),
        )


def _schema_digest(schema: TableSchema) -> str:
    text = json.dumps(schema.to_wire(), ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


# --------------------------------------------------------------------------------------------
# Definitions 2-6: anatomize


def max_l(table: Table, sensitive: str) -> int:
    """The largest ``l`` for which ``table`` can be anatomized on ``sensitive``:
    ``floor(n / f)`` where ``f`` is the count of the most frequent sensitive value."""
    values = _sensitive_values(table, sensitive)
    if not len(values):
        return 0
    _, counts = np.unique(values, return_counts=True)
    return len(values) // int(counts.max())


def is_l_diverse(st: SensitiveTable, l: int) -> bool:  # noqa: E741
    """Definition 3: in every group ``G``, every sensitive value ``v`` has
    ``freq(v, G) / |G| <= 1 / l``."""
    if not st.n_rows:
        return True
    pairs = np.stack([st.gid, np.unique(st.values.astype(str), return_inverse=True)[1]], axis=1)
    (gids, sizes) = np.unique(st.gid, return_counts=True)
    uniq_pairs, freq = np.unique(pairs, axis=0, return_counts=True)
    size_of = dict(zip(gids.tolist(), sizes.tolist(), strict=True))
    return all(
        f * l <= size_of[g] for g, f in zip(uniq_pairs[:, 0].tolist(), freq.tolist(), strict=True)
    )


def anatomize(
    table: Table,
    sensitive: str,
    l: int,  # noqa: E741
    key: ClientKey,
    rng: np.random.Generator | None = None,
) -> Anatomized:
    """Split ``table`` into ``IT`` and ``ST`` (Definition 4) over ``l``-diverse groups
    (Definitions 2 and 3), with a simple ``l``-diverse distribution (Definitions 5 and 6).

    ``sensitive`` names the sensitive attribute ``A_s`` (nominal, not the class); every other
    attribute and the class go to ``IT``. Each group holds between ``l`` and ``2l - 1`` tuples
    with pairwise distinct sensitive values. ``rng`` is ``None`` for real use: every random
    choice (groups, GIDs, SEQs, the order of IT) then comes from the OS. A seeded numpy
    ``Generator`` makes those choices reproducible, for tests only: its stream is predictable.
    Salts and nonces always come from the OS.

    Raises :class:`~mpc.errors.ConfigError` when ``l`` is impossible (a sensitive value covers
    more than ``n / l`` of the tuples) or a parameter is wrong.
    """
    if not isinstance(key, ClientKey):
        raise ConfigError(f"key must be a ClientKey, got {type(key).__name__}")
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 2:
        raise ConfigError(f"l must be an integer of at least 2, got {l!r}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ConfigError(f"rng must be None or a numpy Generator, got {type(rng).__name__}")
    l = int(l)  # noqa: E741
    values = _sensitive_values(table, sensitive)
    identifying = [a for a in table.attributes if a != sensitive]
    if not identifying and not table.class_name:
        raise ConfigError(
            f"table {table.name!r} has nothing but the sensitive attribute {sensitive!r}; "
            "IT needs at least one identifying attribute or the class"
        )
    n = len(values)
    domain, codes = np.unique(values, return_inverse=True)
    _check_eligible(domain, np.bincount(codes, minlength=len(domain)), l, sensitive)

    rand = _Randomness(rng)
    groups = _make_groups(codes, len(domain), l, rand)
    gid_label = rand.permutation(len(groups))
    gid_of_row = np.empty(n, dtype=np.int64)
    for g, members in enumerate(groups):
        gid_of_row[members] = gid_label[g]
    seq_of_row = rand.permutation(n)

    it_order = rand.permutation(n)
    eseq = np.empty((n, ESEQ_BYTES), dtype=np.uint8)
    aads = _eseq_aads(table.name, gid_of_row.tolist())
    for i, r in enumerate(it_order.tolist()):
        plaintext = os.urandom(SALT_BYTES) + _ESEQ_FIELDS.pack(int(seq_of_row[r]), r)
        blob = seal(key, plaintext, aads[int(gid_of_row[r])])
        eseq[i] = np.frombuffer(blob, dtype=np.uint8)
    it = IdentifyingTable(table.select(identifying).subset(it_order), gid_of_row[it_order], eseq)

    st_order = np.argsort(seq_of_row, kind="stable")
    st = SensitiveTable(
        name=table.name,
        attribute=sensitive,
        position=table.attributes.index(sensitive),
        seq=seq_of_row[st_order],
        gid=gid_of_row[st_order],
        values=values[st_order],
    )
    return Anatomized(it=it, st=st, l=l)


def suppress_for_l(
    table: Table,
    sensitive: str,
    l: int,  # noqa: E741
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The rows to keep so that ``table`` can be anatomized with ``l``: the fewest tuples of
    the over-frequent sensitive values are suppressed (chosen at random), until no value
    covers more than ``1 / l`` of the rest. Suppressing ``k`` tuples of the most frequent value
    ``f`` needs ``(f - k) l <= n - k``, so each removal gains ``l - 1``.

    Suppressed tuples are not outsourced (the usual remedy of anonymization when a table is not
    eligible). Raises :class:`~mpc.errors.ConfigError` when ``l`` exceeds the number of
    distinct sensitive values: then no suppression helps."""
    values = _sensitive_values(table, sensitive)
    domain, codes = np.unique(values, return_inverse=True)
    if l > len(domain):
        raise ConfigError(
            f"l = {l} is impossible: the sensitive column {sensitive!r} has only "
            f"{len(domain)} distinct values ({', '.join(map(repr, domain[:10].tolist()))}), "
            "and every group needs l different ones"
        )
    counts = np.bincount(codes, minlength=len(domain))
    drop = np.zeros(len(domain), dtype=np.int64)
    n = int(counts.sum())
    while True:
        left = counts - drop
        top = int(left.argmax())
        if int(left[top]) * l <= n - int(drop.sum()):
            break
        drop[top] += 1
    rand = _Randomness(rng)
    keep = np.ones(len(values), dtype=bool)
    for v in np.flatnonzero(drop):
        rows = np.flatnonzero(codes == v)
        keep[rows[rand.permutation(len(rows))[: int(drop[v])]]] = False
    return np.flatnonzero(keep)


def _sensitive_values(table: Table, sensitive: str) -> np.ndarray:
    if sensitive == table.class_name or sensitive not in table.attributes:
        what = (
            "is the class; the class cannot be the sensitive attribute"
            if sensitive == table.class_name
            else "is not an attribute"
        )
        raise ConfigError(
            f"sensitive attribute {sensitive!r} {what} of table {table.name!r}; "
            f"choose one of {list(table.attributes)}"
        )
    if table.kind(sensitive) == CONTINUOUS:
        raise ConfigError(
            f"sensitive attribute {sensitive!r} is continuous; anatomization needs a nominal "
            "one (discretize it first, e.g. with mpc.datasets.Discretizer)"
        )
    return np.array([str(v) for v in table.column(sensitive)], dtype=object)


def _check_eligible(domain: np.ndarray, counts: np.ndarray, l: int, attribute: str) -> None:  # noqa: E741
    """Xiao & Tao's eligibility condition: no value in more than ``n / l`` tuples."""
    n = int(counts.sum())
    if n == 0:
        raise ConfigError("cannot anatomize an empty table")
    top = int(counts.argmax())  # the first, i.e. smallest, of the most frequent values
    f = int(counts[top])
    if f * l <= n:
        return
    best = n // f
    hint = (
        f"the largest possible l is {best}"
        if best >= 2
        else "no l >= 2 is possible with this sensitive attribute"
    )
    raise ConfigError(
        f"l = {l} is impossible: {domain[top]!r} is {f / n:.1%} of the sensitive column "
        f"{attribute!r} ({f} of {n} rows; at most {1 / l:.1%} allowed, i.e. {n // l} rows); "
        f"{hint}"
    )


class _Randomness:
    """Uniform choices drawn from the OS (``rng is None``) or from a numpy Generator."""

    def __init__(self, rng: np.random.Generator | None) -> None:
        self._rng = rng

    def keys(self, n: int) -> np.ndarray:
        """``n`` independent uniform 64-bit integers."""
        if self._rng is None:
            return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
        return self._rng.integers(0, 2**64, size=n, dtype=np.uint64)

    def permutation(self, n: int) -> np.ndarray:
        """A uniform permutation of ``0 .. n-1`` (sorting random 64-bit keys; a tie, with
        probability below ``n^2 / 2^65``, is broken by index)."""
        return np.argsort(self.keys(n), kind="stable").astype(np.int64)

    def below(self, k: int) -> int:
        """A uniform integer in ``0 .. k-1``."""
        if self._rng is None:
            return secrets.randbelow(k)
        return int(self._rng.integers(k))


def _make_groups(codes: np.ndarray, k: int, l: int, rand: _Randomness) -> list[list[int]]:  # noqa: E741
    """Randomized Anatomy grouping (see the module docstring); rows of ``codes`` (sensitive
    value codes ``0 .. k-1``) into groups of ``l .. 2l-1`` rows with distinct codes."""
    buckets: list[list[int]] = []
    for c in range(k):
        rows = np.flatnonzero(codes == c)
        buckets.append(rows[rand.permutation(len(rows))].tolist())
    counts = np.array([len(b) for b in buckets], dtype=np.int64)
    groups: list[list[int]] = []
    while np.count_nonzero(counts) >= l:
        largest = np.lexsort((rand.keys(k), -counts))[:l]
        groups.append([buckets[c].pop() for c in largest.tolist()])
        counts[largest] -= 1
    if counts.max(initial=0) > 1:
        raise ProtocolError(
            "anatomization left a sensitive value with several unplaced tuples although the "
            "table passed the eligibility check; this is a bug"
        )
    group_codes = [{int(codes[r]) for r in g} for g in groups]
    for c in np.flatnonzero(counts).tolist():
        r = buckets[c].pop()
        fits = [g for g, held in enumerate(group_codes) if c not in held]
        if not fits:
            raise ProtocolError(
                "anatomization found no group for a left-over tuple although the table "
                "passed the eligibility check; this is a bug"
            )
        g = fits[rand.below(len(fits))]
        groups[g].append(r)
        group_codes[g].add(c)
    return groups


# --------------------------------------------------------------------------------------------
# The joins: the client's join and trueInstances, the CDBS's joinTables


def join(
    it: IdentifyingTable, st: SensitiveTable, key: ClientKey, *, name: str | None = None
) -> Table:
    """The client rebuilds the original table from ``IT`` and ``ST`` (Section 2, client naive
    learning): decrypt every ESEQ to its sequence number and equi-join it with ST's SEQ.

    ``name`` is the name of the table the client uploaded (default: the name ``it`` carries);
    an ESEQ sealed for another table or group raises :class:`~mpc.errors.AuthenticationError`.
    Rows come back in the original order. Raises :class:`~mpc.errors.ProtocolError` if ``ST``
    lacks a tuple's SEQ or files it under another GID.
    """
    return join_with_rows(it, st, key, name=name)[0]


def join_with_rows(
    it: IdentifyingTable, st: SensitiveTable, key: ClientKey, *, name: str | None = None
) -> tuple[Table, np.ndarray]:
    """:func:`join`, and the original row of every tuple of ``it`` (in ``it``'s order; read
    from the ESEQs the join decrypts anyway)."""
    seq, row = open_eseq(it, key, name)
    st_rows = _join_index(st.seq, st.gid, seq, it.gid)
    return _restore(it, st.values[st_rows], row, st.attribute, st.position, name), row


def _join_index(
    st_seq: np.ndarray, st_gid: np.ndarray, seq: np.ndarray, it_gid: np.ndarray
) -> np.ndarray:
    """The ST row of every IT tuple (whose ESEQ holds ``seq``): the equi-join on SEQ, with
    the checks :func:`join` promises."""
    order = np.argsort(st_seq, kind="stable")
    sorted_seq = st_seq[order]
    if len(sorted_seq) > 1 and bool(np.any(sorted_seq[1:] == sorted_seq[:-1])):
        raise ProtocolError("ST repeats sequence numbers; SEQ must be unique")
    pos = np.searchsorted(sorted_seq, seq)
    found = pos < len(sorted_seq)
    found[found] = sorted_seq[pos[found]] == seq[found]
    if not found.all():
        raise ProtocolError(
            f"{int((~found).sum())} of {len(seq)} IT tuples have no ST tuple with their SEQ; "
            "IT and ST are incomplete or do not belong together"
        )
    st_rows = order[pos]
    moved = int(np.count_nonzero(st_gid[st_rows] != it_gid))
    if moved:
        raise ProtocolError(
            f"{moved} IT tuples are in another group than their ST tuple; ST's GIDs were altered"
        )
    return st_rows


def group_join(it_rows: IdentifyingTable, st: SensitiveTable) -> Candidates:
    """``joinTables(leafIns, ST, GID)`` of ``FindBDTLeaf`` (Figure 2), run by the CDBS: every
    tuple of ``it_rows`` (a leaf's tuples) with all the sensitive values of its group.

    A join on the public GID only: the CDBS learns nothing it did not know. Raises
    :class:`~mpc.errors.ProtocolError` if a tuple's GID has no tuple in ``st``.
    """
    order = np.argsort(st.gid, kind="stable")
    sorted_gid = st.gid[order]
    lo = np.searchsorted(sorted_gid, it_rows.gid, side="left")
    hi = np.searchsorted(sorted_gid, it_rows.gid, side="right")
    size = hi - lo
    if np.any(size == 0):
        missing = sorted(set(it_rows.gid[size == 0].tolist()))
        raise ProtocolError(
            f"GIDs {missing[:5]} of IT have no tuple in ST; IT and ST do not belong together"
        )
    row = np.repeat(np.arange(it_rows.n_rows, dtype=np.int64), size)
    start = np.cumsum(size) - size
    st_rows = order[lo[row] + np.arange(len(row)) - start[row]]
    return Candidates(
        it=it_rows,
        attribute=st.attribute,
        position=st.position,
        row=row,
        seq=st.seq[st_rows],
        value=st.values[st_rows],
    )


def true_instances(candidates: Candidates, key: ClientKey, *, name: str | None = None) -> Table:
    """``trueInstances`` of ``Inference`` (Figure 3); see :func:`true_instances_with_rows`."""
    return true_instances_with_rows(candidates, key, name=name)[0]


def true_instances_with_rows(
    candidates: Candidates, key: ClientKey, *, name: str | None = None
) -> tuple[Table, np.ndarray]:
    """``trueInstances`` of ``Inference`` (Figure 3), run by the client: decrypt each tuple's
    ESEQ and keep the one candidate pair whose SEQ is the tuple's sequence number.

    Returns the leaf's non-anatomized tuples (identifying attributes, sensitive attribute in its
    original place, class), in their original relative order. ``name`` as in :func:`join`.
    Raises :class:`~mpc.errors.ProtocolError` if a tuple has no true pair or several. Also
    returns the tuples' original rows (sorted, as the table's rows are).
    """
    it = candidates.it
    seq, row = open_eseq(it, key, name)
    pairs = _true_pairs(candidates.row, candidates.seq, seq)
    table = _restore(
        it, candidates.value[pairs], row, candidates.attribute, candidates.position, name
    )
    return table, np.sort(row)


def _true_pairs(pair_row: np.ndarray, pair_seq: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The true pair of every tuple of a leaf (whose ESEQ holds ``seq``): the one pair of the
    tuple whose SEQ is the tuple's, as ``trueInstances`` keeps it."""
    true = pair_seq == seq[pair_row]
    hits = np.bincount(pair_row[true], minlength=len(seq))
    if np.any(hits != 1):
        raise ProtocolError(
            f"leafIns is incomplete or altered: {int(np.sum(hits == 0))} tuples lack their true "
            f"sensitive value and {int(np.sum(hits > 1))} have it more than once"
        )
    index = np.empty(len(seq), dtype=np.int64)
    index[pair_row[true]] = np.flatnonzero(true)
    return index


def open_eseq(
    it: IdentifyingTable, key: ClientKey, name: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The client's view of ``it``'s ESEQs: the sequence numbers ``s`` and the original rows
    ``r`` sealed in them (``name`` as in :func:`join`)."""
    return _open_eseq(it.eseq, it.gid, it.name if name is None else name, key)


def _open_eseq(
    eseq: np.ndarray, gid: np.ndarray, table_name: str, key: ClientKey
) -> tuple[np.ndarray, np.ndarray]:
    gids = gid.tolist()
    aads = _eseq_aads(table_name, gids)
    # IT's ESEQ rows all have ESEQ_BYTES (checked when IT was built): so every plaintext has
    # _ESEQ_PLAINTEXT bytes, salt || s || r with s and r big-endian 64-bit
    joined = b"".join(open_rows(key, eseq, list(map(aads.__getitem__, gids))))
    fields = np.frombuffer(joined, dtype=">u8").reshape(-1, _ESEQ_PLAINTEXT // 8)
    s_r = fields[:, SALT_BYTES // 8 :].astype(np.int64)
    return s_r[:, 0].copy(), s_r[:, 1].copy()


def _restore(
    it: IdentifyingTable,
    values: np.ndarray,
    row: np.ndarray,
    attribute: str,
    position: int,
    name: str | None,
) -> Table:
    """``it``'s tuples with the sensitive ``values`` put back, sorted by original row."""
    t = it.table
    order = _restore_order(row, t.attributes, attribute, position)
    columns = [c[order] for c in t.columns]
    return Table(
        name=t.name if name is None else name,
        attributes=(*t.attributes[:position], attribute, *t.attributes[position:]),
        kinds=(*t.kinds[:position], NOMINAL, *t.kinds[position:]),
        columns=(
            *columns[:position],
            np.asarray(values, dtype=object)[order],
            *columns[position:],
        ),
        target=t.target[order] if len(t.target) else t.target,
        class_name=t.class_name,
        source=t.source,
    )


def _restore_order(
    row: np.ndarray, attributes: Sequence[str], attribute: str, position: int
) -> np.ndarray:
    """The order that sorts tuples by original row, checking that no row repeats and that
    the sensitive attribute can go back at ``position``."""
    ordered = np.sort(row)
    if np.any(ordered[1:] == ordered[:-1]):
        raise ProtocolError("IT holds the same tuple more than once (repeated ESEQ)")
    if not 0 <= position <= len(attributes) or attribute in attributes:
        raise ProtocolError(
            f"cannot put sensitive attribute {attribute!r} back at position {position} of "
            f"IT's attributes {list(attributes)}"
        )
    return np.argsort(row, kind="stable")


# --------------------------------------------------------------------------------------------
# The client's tables for the learner, straight from the wire (codes, never str by str)


def leaf_learning_table(
    doc: Any, schema: TableSchema, key: ClientKey, *, name: str
) -> tuple[CodedTable, np.ndarray]:
    """``trueInstances`` of a ``leafIns`` received as :meth:`Candidates.to_wire` made it
    (with ``schema``): :func:`true_instances_with_rows`, with the same checks, but the table
    comes as the learner's :class:`~mpc.learners.c45.CodedTable` made from the codes on the wire
    (the same table, so the same tree, without making the values str by str)."""
    cols, gid, eseq, pairs = _leaf_wire(doc, schema)
    seq, row = _open_eseq(eseq, gid, name, key)
    sensitive = pairs[_true_pairs(pairs[:, 0], pairs[:, 1], seq), 2]
    return (
        _coded_restore(
            cols, (list(schema.sensitive_domain), sensitive), row, schema.attribute, schema.position
        ),
        np.sort(row),
    )


def _leaf_wire(
    doc: Any, schema: TableSchema
) -> tuple[_WireColumns, np.ndarray, np.ndarray, np.ndarray]:
    """A ``leafIns`` body, checked against ``schema``: IT's columns, GIDs, ESEQs and the
    pairs ``(row, seq, sensitive code)``."""
    d = _mapping(doc, "leafIns")
    if d.get("schema") != schema.digest:
        raise ProtocolError(
            f"leafIns refers to schema {d.get('schema')!r}, not to {schema.digest} of table "
            f"{schema.name!r}"
        )
    eseq = d.get("eseq")
    if not isinstance(eseq, np.ndarray):
        raise ProtocolError(f"IT.eseq must be a uint8 array, got {type(eseq).__name__}")
    cols = _checked_rows(
        _WireColumns(
            name=schema.name,
            source=schema.source,
            class_name=schema.class_name,
            attributes=list(schema.attributes),
            kinds=list(schema.kinds),
            domains=[list(x) for x in schema.domains],
            codes=_code_matrix(d.get("codes"), "IT.codes", len(schema.domains)),
            continuous=d.get("continuous"),  # type: ignore[arg-type]  # checked next
        )
    )
    gid, eseq = _it_arrays(len(cols.codes), d.get("gid"), eseq)
    pairs = _code_matrix(d.get("pairs"), "leafIns.pairs", 3)
    n = len(gid)
    if len(pairs) and (pairs[:, 0].min() < 0 or pairs[:, 0].max() >= n):
        raise ProtocolError(
            f"leafIns pairs refer to tuples {pairs[:, 0].min()}..{pairs[:, 0].max()}, but the "
            f"leaf has {n} tuples"
        )
    _check_codes(pairs[:, 2], len(schema.sensitive_domain), "leafIns.pairs' values")
    return cols, gid, eseq, pairs


def joined_learning_table(
    it_doc: Any, st_doc: Any, key: ClientKey, *, name: str
) -> tuple[CodedTable, np.ndarray]:
    """:func:`join_with_rows` of ``IT`` and ``ST`` received as their ``to_wire`` made them,
    with the same checks, the table as the learner's :class:`~mpc.learners.c45.CodedTable` (see
    :func:`leaf_learning_table`)."""
    cols, gid, eseq = _wire_it(it_doc)
    d = _mapping(st_doc, "ST")
    _str(d.get("name"), "ST.name")
    attribute = _str(d.get("attribute"), "ST.attribute")
    position = _int(d.get("position"), "ST.position")
    st_seq = _int_array(d.get("seq"), "ST.seq")
    st_gid = _int_array(d.get("gid"), "ST.gid")
    domain = _str_list(d.get("domain"), "ST.domain")
    codes = _int_array(d.get("codes"), "ST.codes")
    if not st_seq.shape == st_gid.shape == codes.shape:
        raise ProtocolError(
            f"ST needs one SEQ, GID and value per row, got {len(st_seq)} SEQs, "
            f"{len(st_gid)} GIDs and {len(codes)} values"
        )
    _check_codes(codes, len(domain), "ST.codes")
    seq, row = _open_eseq(eseq, gid, name, key)
    st_rows = _join_index(st_seq, st_gid, seq, gid)
    return _coded_restore(cols, (domain, codes[st_rows]), row, attribute, position), row


def _coded_restore(
    cols: _WireColumns,
    sensitive: tuple[list[str], np.ndarray],
    row: np.ndarray,
    attribute: str,
    position: int,
) -> CodedTable:
    """:func:`_restore` for codes: IT's columns and the sensitive one, sorted by row."""
    order = _restore_order(row, cols.attributes, attribute, position)
    n_nominal = cols.codes.shape[1] - 1
    # the sensitive column goes among the nominal ones where it goes among the attributes
    at = sum(k != CONTINUOUS for k in cols.kinds[:position])
    ordered = cols.codes[order]
    codes = np.concatenate([ordered[:, :at], sensitive[1][order, None], ordered[:, at:]], axis=1)
    domains = [*cols.domains[:at], sensitive[0], *cols.domains[at:]]
    assert len(domains) == n_nominal + 2
    kinds = [*cols.kinds[:position], NOMINAL, *cols.kinds[position:]]
    attributes = [*cols.attributes[:position], attribute, *cols.attributes[position:]]
    continuous = [c[order] for c in cols.continuous]
    return CodedTable.from_code_matrix(attributes, kinds, domains, codes, continuous)


# --------------------------------------------------------------------------------------------
# Wire helpers (bodies for mpc.runtime.codec; malformed input raises ProtocolError)


def _table_to_wire(t: Table, domains: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
    """``t`` for the wire: the nominal columns, then the class, as one int32 matrix of codes
    with a domain per column (their distinct values, sorted; or the ``domains`` given, which
    must hold every value), the continuous columns as float64 arrays."""
    nominal = [c for k, c in zip(t.kinds, t.columns, strict=True) if k != CONTINUOUS]
    columns = [*nominal, t.target]
    if domains is None:
        coded = [_coded(c) for c in columns]
    else:
        if len(domains) != len(columns):
            raise ConfigError(f"{len(columns)} nominal columns need as many domains")
        coded = [_coded_in(c, d) for c, d in zip(columns, domains, strict=True)]
    return {
        "name": t.name,
        "source": t.source,
        "class_name": t.class_name,
        "attributes": list(t.attributes),
        "kinds": list(t.kinds),
        # the nominal columns, then the class: one int32 frame of codes, a domain per column
        "domains": [domain for domain, _ in coded],
        "codes": np.stack([codes for _, codes in coded], axis=1),
        "continuous": [
            np.asarray(c, dtype=np.float64)
            for k, c in zip(t.kinds, t.columns, strict=True)
            if k == CONTINUOUS
        ],
    }


def _coded_in(values: np.ndarray, domain: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """:func:`_coded` into a given ``domain``."""
    index = {v: i for i, v in enumerate(domain)}
    text = _strings(np.asarray(values, dtype=object))
    try:
        codes = np.fromiter(map(index.__getitem__, text), dtype=np.int32, count=len(text))
    except KeyError as exc:
        raise ConfigError(f"value {exc} is not in the domain {list(domain)}") from None
    return list(domain), codes


def _strings(values: np.ndarray) -> list[str]:
    """``values`` as a list of str (converted only where they are not str already)."""
    out = values.tolist()
    if set(map(type, out)) <= {str}:
        return out
    return [str(v) for v in out]


def _coded(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """A nominal column for the wire: its distinct values as str (sorted), and an int32 array
    with each row's index among them (decoded with one numpy take, :func:`_decoded`)."""
    text = _strings(np.asarray(values, dtype=object))
    domain = sorted(set(text))
    index = {v: i for i, v in enumerate(domain)}
    codes = np.fromiter(map(index.__getitem__, text), dtype=np.int32, count=len(text))
    return domain, codes


def _decoded(domain: np.ndarray, codes: np.ndarray, what: str) -> np.ndarray:
    """The inverse of :func:`_coded`: an object array of str. Raises
    :class:`~mpc.errors.ProtocolError` if a code is outside ``domain``."""
    _check_codes(codes, len(domain), what)
    return domain[codes]


def _code_matrix(x: Any, what: str, width: int) -> np.ndarray:
    """``x`` as an int64 array of shape ``(n, width)``; ProtocolError otherwise."""
    if (
        not isinstance(x, np.ndarray)
        or x.ndim != 2
        or x.shape[1] != width
        or not (x.size == 0 or np.issubdtype(x.dtype, np.integer))
    ):
        raise ProtocolError(f"{what} must be an integer array with {width} columns")
    return x.astype(np.int64, copy=False)


class _WireColumns(NamedTuple):
    """A table's columns as :func:`_table_to_wire` sends them, checked."""

    name: str
    source: str
    class_name: str
    attributes: list[str]
    kinds: list[str]
    #: the domains of the nominal columns, then of the class
    domains: list[list[str]]
    #: their codes, one column each (within their domain's range)
    codes: np.ndarray
    continuous: list[np.ndarray]


def _wire_columns(d: Mapping[str, Any]) -> _WireColumns:
    attributes = _str_list(d.get("attributes"), "IT.attributes")
    kinds = _str_list(d.get("kinds"), "IT.kinds")
    if len(attributes) != len(kinds):
        raise ProtocolError(f"IT has {len(attributes)} attributes but {len(kinds)} kinds")
    raw_domains = d.get("domains")
    n_nominal = sum(k != CONTINUOUS for k in kinds)
    if not isinstance(raw_domains, list) or len(raw_domains) != n_nominal + 1:
        raise ProtocolError(
            f"IT.domains must be a list of {n_nominal + 1} domains (the nominal columns, then "
            "the class)"
        )
    return _checked_rows(
        _WireColumns(
            name=_str(d.get("name"), "IT.name"),
            source=_str(d.get("source"), "IT.source"),
            class_name=_str(d.get("class_name"), "IT.class_name"),
            attributes=attributes,
            kinds=kinds,
            domains=[_str_list(x, f"IT.domains[{j}]") for j, x in enumerate(raw_domains)],
            codes=_code_matrix(d.get("codes"), "IT.codes", n_nominal + 1),
            continuous=d.get("continuous"),  # type: ignore[arg-type]  # checked next
        )
    )


def _checked_rows(cols: _WireColumns) -> _WireColumns:
    """``cols`` whose names, kinds and domains are checked already: every code within its
    domain, one float64 array of as many rows per continuous attribute."""
    codes, continuous = cols.codes, cols.continuous
    n_continuous = len(cols.kinds) - (codes.shape[1] - 1)
    if not isinstance(continuous, list) or len(continuous) != n_continuous:
        raise ProtocolError(f"IT.continuous must be a list of {n_continuous} columns")
    if len(codes):  # one check of every column's codes against its domain's size
        sizes = np.fromiter(map(len, cols.domains), dtype=np.int64, count=len(cols.domains))
        bad = (codes.min(axis=0) < 0) | (codes.max(axis=0) >= sizes)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ProtocolError(
                f"IT.codes[:, {j}] has codes outside its domain of {sizes[j]} values"
            )
    continuous_attributes = [
        a for a, k in zip(cols.attributes, cols.kinds, strict=True) if k == CONTINUOUS
    ]
    for a, c in zip(continuous_attributes, continuous, strict=True):
        if not isinstance(c, np.ndarray) or c.dtype != np.float64 or c.shape != (len(codes),):
            raise ProtocolError(
                f"IT column {a!r} is continuous: expected a float64 array of {len(codes)} rows"
            )
    return cols


def _table_from_wire(d: Mapping[str, Any]) -> Table:
    return _table_from_columns(_wire_columns(d))


def _table_from_columns(cols: _WireColumns) -> Table:
    domains = [np.array(x, dtype=object) for x in cols.domains]
    nominal_columns = iter([domains[j][cols.codes[:, j]] for j in range(len(domains))])
    continuous_columns = iter(cols.continuous)
    columns = [
        next(continuous_columns) if k == CONTINUOUS else next(nominal_columns) for k in cols.kinds
    ]
    try:
        return Table(
            name=cols.name,
            attributes=tuple(cols.attributes),
            kinds=tuple(cols.kinds),
            columns=tuple(columns),
            target=next(nominal_columns),
            class_name=cols.class_name,
            source=cols.source,
        )
    except ConfigError as exc:
        raise ProtocolError(f"IT is not a valid table: {exc}") from exc


def _wire_it(doc: Any) -> tuple[_WireColumns, np.ndarray, np.ndarray]:
    """IT's columns, GIDs and ESEQs as :meth:`IdentifyingTable.to_wire` sends them, with the
    checks of :meth:`IdentifyingTable.from_wire`."""
    d = _mapping(doc, "IT")
    eseq = d.get("eseq")
    if not isinstance(eseq, np.ndarray):
        raise ProtocolError(f"IT.eseq must be a uint8 array, got {type(eseq).__name__}")
    cols = _wire_columns(d)
    gid, eseq = _it_arrays(len(cols.codes), d.get("gid"), eseq)
    return cols, gid, eseq


def _it_arrays(n: int, gid: Any, eseq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """IT's GIDs (int64) and ESEQs, checked: one of each per row, ESEQs uint8 of ESEQ_BYTES."""
    gid = _int_array(gid, "IT.gid")
    if gid.shape != (n,):
        raise ProtocolError(f"IT has {n} rows but {len(gid)} GIDs; expected one per row")
    if eseq.dtype != np.uint8 or eseq.shape != (n, ESEQ_BYTES):
        raise ProtocolError(
            f"IT.eseq must be a uint8 array of shape ({n}, {ESEQ_BYTES}), "
            f"got {eseq.dtype} of shape {eseq.shape}"
        )
    return gid, eseq


def _check_codes(codes: np.ndarray, size: int, what: str) -> None:
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= size):
        raise ProtocolError(f"{what} has codes outside its domain of {size} values")


def _mapping(doc: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise ProtocolError(f"{what} must be a map, got {type(doc).__name__}")
    return doc


def _str(x: Any, what: str) -> str:
    if not isinstance(x, str):
        raise ProtocolError(f"{what} must be a string, got {type(x).__name__}")
    return x


def _int(x: Any, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise ProtocolError(f"{what} must be an integer, got {type(x).__name__}")
    return x


def _str_list(x: Any, what: str) -> list[str]:
    if not isinstance(x, list) or not set(map(type, x)) <= {str}:
        raise ProtocolError(f"{what} must be a list of strings")
    return x


def _str_array(x: Any, what: str) -> np.ndarray:
    return np.array(_str_list(x, what), dtype=object)


def _int_array(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x) if isinstance(x, np.ndarray | list) else None
    if arr is None or arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise ProtocolError(f"{what} must be a one-dimensional array of integers")
    return arr.astype(np.int64, copy=False)
