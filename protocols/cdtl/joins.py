"""The joins of collaborative learning on anatomized tables (Mancuhan & Clifton): the
client's ``join`` of ``IT`` and ``ST`` (client naive learning, Section 3.1), the CDBS's
``joinTables(leafIns, ST, GID)`` of FindBDTLeaf (Figure 2, :func:`group_join`), the client's
``trueInstances`` of Inference (Figure 3, :func:`true_instances`), and the client's tables for
the learner made straight from the wire (codes, never value by value).

Who learns what: the CDBS's :func:`group_join` is a join on the public ``GID`` and tells it
nothing new; only the client, holding the key, opens ESEQs (:mod:`protocols.cdtl.eseq`) and so
learns which tuple holds which sensitive value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mpc.crypto.sealed import (
    ClientKey,
)
from mpc.datasets import CONTINUOUS, NOMINAL, Table
from mpc.errors import ProtocolError
from mpc.learners.coded_table import CodedTable
from protocols.cdtl.eseq import open_eseq_blobs
from protocols.cdtl.tables import (
    Candidates,
    IdentifyingTable,
    SensitiveTable,
    TableSchema,
    WireColumns,
    check_codes,
    leaf_wire,
    wire_int,
    wire_int_array,
    wire_it,
    wire_mapping,
    wire_str,
    wire_str_list,
)

# --------------------------------------------------------------------------------------------
# The joins: the client's join and trueInstances, the CDBS's joinTables

__all__ = [
    "group_join",
    "join",
    "join_with_rows",
    "joined_learning_table",
    "leaf_learning_table",
    "open_eseq",
    "true_instances",
    "true_instances_with_rows",
]


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
    return open_eseq_blobs(it.eseq, it.gid, it.name if name is None else name, key)


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
    comes as the learner's :class:`~mpc.learners.coded_table.CodedTable` made from the codes on the
    wire (the same table, so the same tree, without making the values str by str)."""
    cols, gid, eseq, pairs = leaf_wire(doc, schema)
    seq, row = open_eseq_blobs(eseq, gid, name, key)
    sensitive = pairs[_true_pairs(pairs[:, 0], pairs[:, 1], seq), 2]
    return (
        _coded_restore(
            cols, (list(schema.sensitive_domain), sensitive), row, schema.attribute, schema.position
        ),
        np.sort(row),
    )


def joined_learning_table(
    it_doc: Any, st_doc: Any, key: ClientKey, *, name: str
) -> tuple[CodedTable, np.ndarray]:
    """:func:`join_with_rows` of ``IT`` and ``ST`` received as their ``to_wire`` made them,
    with the same checks, the table as the learner's :class:`~mpc.learners.coded_table.CodedTable`
    (see :func:`leaf_learning_table`)."""
    cols, gid, eseq = wire_it(it_doc)
    d = wire_mapping(st_doc, "ST")
    wire_str(d.get("name"), "ST.name")
    attribute = wire_str(d.get("attribute"), "ST.attribute")
    position = wire_int(d.get("position"), "ST.position")
    st_seq = wire_int_array(d.get("seq"), "ST.seq")
    st_gid = wire_int_array(d.get("gid"), "ST.gid")
    domain = wire_str_list(d.get("domain"), "ST.domain")
    codes = wire_int_array(d.get("codes"), "ST.codes")
    if not st_seq.shape == st_gid.shape == codes.shape:
        raise ProtocolError(
            f"ST needs one SEQ, GID and value per row, got {len(st_seq)} SEQs, "
            f"{len(st_gid)} GIDs and {len(codes)} values"
        )
    check_codes(codes, len(domain), "ST.codes")
    seq, row = open_eseq_blobs(eseq, gid, name, key)
    st_rows = _join_index(st_seq, st_gid, seq, gid)
    return _coded_restore(cols, (domain, codes[st_rows]), row, attribute, position), row


def _coded_restore(
    cols: WireColumns,
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
