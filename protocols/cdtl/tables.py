"""The tables of anatomization and their wire form: ``IT`` (:class:`IdentifyingTable`), ``ST``
(:class:`SensitiveTable`), a leaf's candidates ``leafIns`` (:class:`Candidates`) and the
columns without rows (:class:`TableSchema`); Mancuhan & Clifton, Definition 4 and Figure 2.

Every body that crosses the network is built and checked here: a malformed body raises
:class:`~mpc.errors.ProtocolError` naming the field, never a crash. The public wire helpers
(:func:`wire_mapping`, :func:`code_matrix`, :class:`WireColumns`, ...) are shared with
:mod:`protocols.cdtl.joins`, which rebuilds the client's tables from these bodies.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from mpc.datasets import CONTINUOUS, NOMINAL, Table
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.expect import ANY, check, integer, list_of, mapping, text
from protocols.cdtl.eseq import ESEQ_BYTES

__all__ = [
    "Anatomized",
    "Candidates",
    "IdentifyingTable",
    "SensitiveTable",
    "TableSchema",
    "WireColumns",
    "check_codes",
    "checked_rows",
    "code_matrix",
    "it_arrays",
    "leaf_wire",
    "wire_int",
    "wire_int_array",
    "wire_it",
    "wire_mapping",
    "wire_str",
    "wire_str_array",
    "wire_str_list",
]


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
        gid, eseq = it_arrays(self.table.n_rows, self.gid, np.asarray(self.eseq))
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
        d = wire_mapping(doc, "IT")
        eseq = d.get("eseq")
        if not isinstance(eseq, np.ndarray):
            raise ProtocolError(f"IT.eseq must be a uint8 array, got {type(eseq).__name__}")
        return cls(_table_from_wire(d), wire_int_array(d.get("gid"), "IT.gid"), eseq)


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
        seq = wire_int_array(self.seq, "ST.seq")
        gid = wire_int_array(self.gid, "ST.gid")
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
        d = wire_mapping(doc, "ST")
        return cls(
            name=wire_str(d.get("name"), "ST.name"),
            attribute=wire_str(d.get("attribute"), "ST.attribute"),
            position=wire_int(d.get("position"), "ST.position"),
            seq=wire_int_array(d.get("seq"), "ST.seq"),
            gid=wire_int_array(d.get("gid"), "ST.gid"),
            values=_decoded(
                wire_str_array(d.get("domain"), "ST.domain"),
                wire_int_array(d.get("codes"), "ST.codes"),
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
        row = wire_int_array(self.row, "leafIns.row")
        seq = wire_int_array(self.seq, "leafIns.seq")
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
        cols, gid, eseq, pairs = leaf_wire(doc, schema)
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
        st = wire_mapping(st_wire, "ST")
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
        d = wire_mapping(doc, "schema")
        attributes = wire_str_list(d.get("attributes"), "schema.attributes")
        kinds = wire_str_list(d.get("kinds"), "schema.kinds")
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
        attribute = wire_str(d.get("attribute"), "schema.attribute")
        position = wire_int(d.get("position"), "schema.position")
        if not 0 <= position <= len(attributes) or attribute in attributes:
            raise ProtocolError(
                f"schema: sensitive attribute {attribute!r} cannot go back at position "
                f"{position} of IT's attributes {attributes}"
            )
        return cls(
            name=wire_str(d.get("name"), "schema.name"),
            source=wire_str(d.get("source"), "schema.source"),
            class_name=wire_str(d.get("class_name"), "schema.class_name"),
            attributes=tuple(attributes),
            kinds=tuple(kinds),
            domains=tuple(
                tuple(wire_str_list(x, f"schema.domains[{j}]")) for j, x in enumerate(raw)
            ),
            attribute=attribute,
            position=position,
            sensitive_domain=tuple(
                wire_str_list(d.get("sensitive_domain"), "schema.sensitive_domain")
            ),
        )


def _schema_digest(schema: TableSchema) -> str:
    text = json.dumps(schema.to_wire(), ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def leaf_wire(
    doc: Any, schema: TableSchema
) -> tuple[WireColumns, np.ndarray, np.ndarray, np.ndarray]:
    """A ``leafIns`` body, checked against ``schema``: IT's columns, GIDs, ESEQs and the
    pairs ``(row, seq, sensitive code)``."""
    d = wire_mapping(doc, "leafIns")
    if d.get("schema") != schema.digest:
        raise ProtocolError(
            f"leafIns refers to schema {d.get('schema')!r}, not to {schema.digest} of table "
            f"{schema.name!r}"
        )
    eseq = d.get("eseq")
    if not isinstance(eseq, np.ndarray):
        raise ProtocolError(f"IT.eseq must be a uint8 array, got {type(eseq).__name__}")
    cols = checked_rows(
        WireColumns(
            name=schema.name,
            source=schema.source,
            class_name=schema.class_name,
            attributes=list(schema.attributes),
            kinds=list(schema.kinds),
            domains=[list(x) for x in schema.domains],
            codes=code_matrix(d.get("codes"), "IT.codes", len(schema.domains)),
            continuous=d.get("continuous"),  # type: ignore[arg-type]  # checked next
        )
    )
    gid, eseq = it_arrays(len(cols.codes), d.get("gid"), eseq)
    pairs = code_matrix(d.get("pairs"), "leafIns.pairs", 3)
    n = len(gid)
    if len(pairs) and (pairs[:, 0].min() < 0 or pairs[:, 0].max() >= n):
        raise ProtocolError(
            f"leafIns pairs refer to tuples {pairs[:, 0].min()}..{pairs[:, 0].max()}, but the "
            f"leaf has {n} tuples"
        )
    check_codes(pairs[:, 2], len(schema.sensitive_domain), "leafIns.pairs' values")
    return cols, gid, eseq, pairs


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
    check_codes(codes, len(domain), what)
    return domain[codes]


def code_matrix(x: Any, what: str, width: int) -> np.ndarray:
    """``x`` as an int64 array of shape ``(n, width)``; ProtocolError otherwise."""
    if (
        not isinstance(x, np.ndarray)
        or x.ndim != 2
        or x.shape[1] != width
        or not (x.size == 0 or np.issubdtype(x.dtype, np.integer))
    ):
        raise ProtocolError(f"{what} must be an integer array with {width} columns")
    return x.astype(np.int64, copy=False)


class WireColumns(NamedTuple):
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


def _wire_columns(d: Mapping[str, Any]) -> WireColumns:
    attributes = wire_str_list(d.get("attributes"), "IT.attributes")
    kinds = wire_str_list(d.get("kinds"), "IT.kinds")
    if len(attributes) != len(kinds):
        raise ProtocolError(f"IT has {len(attributes)} attributes but {len(kinds)} kinds")
    raw_domains = d.get("domains")
    n_nominal = sum(k != CONTINUOUS for k in kinds)
    if not isinstance(raw_domains, list) or len(raw_domains) != n_nominal + 1:
        raise ProtocolError(
            f"IT.domains must be a list of {n_nominal + 1} domains (the nominal columns, then "
            "the class)"
        )
    return checked_rows(
        WireColumns(
            name=wire_str(d.get("name"), "IT.name"),
            source=wire_str(d.get("source"), "IT.source"),
            class_name=wire_str(d.get("class_name"), "IT.class_name"),
            attributes=attributes,
            kinds=kinds,
            domains=[wire_str_list(x, f"IT.domains[{j}]") for j, x in enumerate(raw_domains)],
            codes=code_matrix(d.get("codes"), "IT.codes", n_nominal + 1),
            continuous=d.get("continuous"),  # type: ignore[arg-type]  # checked next
        )
    )


def checked_rows(cols: WireColumns) -> WireColumns:
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


def _table_from_columns(cols: WireColumns) -> Table:
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


def wire_it(doc: Any) -> tuple[WireColumns, np.ndarray, np.ndarray]:
    """IT's columns, GIDs and ESEQs as :meth:`IdentifyingTable.to_wire` sends them, with the
    checks of :meth:`IdentifyingTable.from_wire`."""
    d = wire_mapping(doc, "IT")
    eseq = d.get("eseq")
    if not isinstance(eseq, np.ndarray):
        raise ProtocolError(f"IT.eseq must be a uint8 array, got {type(eseq).__name__}")
    cols = _wire_columns(d)
    gid, eseq = it_arrays(len(cols.codes), d.get("gid"), eseq)
    return cols, gid, eseq


def it_arrays(n: int, gid: Any, eseq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """IT's GIDs (int64) and ESEQs, checked: one of each per row, ESEQs uint8 of ESEQ_BYTES."""
    gid = wire_int_array(gid, "IT.gid")
    if gid.shape != (n,):
        raise ProtocolError(f"IT has {n} rows but {len(gid)} GIDs; expected one per row")
    if eseq.dtype != np.uint8 or eseq.shape != (n, ESEQ_BYTES):
        raise ProtocolError(
            f"IT.eseq must be a uint8 array of shape ({n}, {ESEQ_BYTES}), "
            f"got {eseq.dtype} of shape {eseq.shape}"
        )
    return gid, eseq


def check_codes(codes: np.ndarray, size: int, what: str) -> None:
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= size):
        raise ProtocolError(f"{what} has codes outside its domain of {size} values")


#: a map from strings to anything: the body of every table and request
_MAP = mapping(text(), ANY)


def wire_mapping(doc: Any, what: str) -> Mapping[str, Any]:
    return check(_MAP, doc, what)


def wire_str(x: Any, what: str) -> str:
    return check(text(), x, what)


def wire_int(x: Any, what: str) -> int:
    return check(integer(), x, what)


def wire_str_list(x: Any, what: str) -> list[str]:
    return check(list_of(text()), x, what)


def wire_str_array(x: Any, what: str) -> np.ndarray:
    return np.array(wire_str_list(x, what), dtype=object)


def wire_int_array(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x) if isinstance(x, np.ndarray | list) else None
    if arr is None or arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise ProtocolError(f"{what} must be a one-dimensional array of integers")
    return arr.astype(np.int64, copy=False)
