"""Sealed blobs and anatomization: l-diverse groups, exact joins, tamper detection, key files."""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import re
import stat
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.crypto.sealed import (
    OVERHEAD,
    ClientKey,
    associated_data,
    extend_associated_data,
    open_json,
    open_rows,
    open_sealed,
    seal,
    seal_json,
)
from mpc.datasets import Table, weather
from mpc.errors import AuthenticationError, ConfigError, ProtocolError
from mpc.learners.c45 import C45Classifier
from mpc.learners.coded_table import CodedTable
from mpc.learners.tree import Leaf, to_json
from mpc.runtime.codec import decode, encode
from protocols.cdtl.anatomization import anatomize, is_l_diverse, max_l
from protocols.cdtl.eseq import ESEQ_BYTES
from protocols.cdtl.joins import (
    group_join,
    join,
    join_with_rows,
    joined_learning_table,
    leaf_learning_table,
    true_instances,
)
from protocols.cdtl.tables import Candidates, IdentifyingTable, SensitiveTable, TableSchema

KEY = ClientKey.from_bytes(bytes(range(32)))
OTHER_KEY = ClientKey.from_bytes(bytes(range(1, 33)))


# --------------------------------------------------------------------------------------------
# Sealed blobs


@settings(max_examples=60, deadline=None)
@given(plaintext=st.binary(max_size=300), aad=st.binary(min_size=1, max_size=40))
def test_seal_round_trip(plaintext: bytes, aad: bytes) -> None:
    blob = seal(KEY, plaintext, aad)
    assert len(blob) == len(plaintext) + OVERHEAD and blob[0] == 1
    assert open_sealed(KEY, blob, aad) == plaintext


def test_seal_is_randomized() -> None:
    assert seal(KEY, b"same", b"aad") != seal(KEY, b"same", b"aad")


@settings(max_examples=60, deadline=None)
@given(data=st.data(), plaintext=st.binary(max_size=64))
def test_a_changed_byte_is_rejected(data: st.DataObject, plaintext: bytes) -> None:
    blob = bytearray(seal(KEY, plaintext, b"leaf 3"))
    i = data.draw(st.integers(0, len(blob) - 1), label="index")
    blob[i] ^= data.draw(st.integers(1, 255), label="xor")
    with pytest.raises(AuthenticationError):
        open_sealed(KEY, bytes(blob), b"leaf 3")


@settings(max_examples=40, deadline=None)
@given(data=st.data(), plaintext=st.binary(max_size=64))
def test_a_truncated_blob_is_rejected(data: st.DataObject, plaintext: bytes) -> None:
    blob = seal(KEY, plaintext, b"leaf 3")
    cut = data.draw(st.integers(0, len(blob) - 1), label="length")
    with pytest.raises(AuthenticationError):
        open_sealed(KEY, blob[:cut], b"leaf 3")


def test_subtrees_swapped_between_leaves_are_detected() -> None:
    tree3 = {"split": "outlook", "children": {"sunny": "no", "rainy": "yes"}}
    tree7 = {"leaf": "yes"}
    aad3 = associated_data("subtree", "weather", 3)
    aad7 = associated_data("subtree", "weather", 7)
    blob3, blob7 = seal_json(KEY, tree3, aad3), seal_json(KEY, tree7, aad7)
    assert open_json(KEY, blob3, aad3) == tree3
    assert open_json(KEY, blob7, aad7) == tree7
    for blob, aad in ((blob3, aad7), (blob7, aad3)):  # the server stored them the other way
        with pytest.raises(AuthenticationError, match="failed authentication"):
            open_json(KEY, blob, aad)


def test_a_blob_under_another_key_is_rejected() -> None:
    blob = seal(OTHER_KEY, b"subtree", b"leaf 1")
    with pytest.raises(AuthenticationError, match=KEY.fingerprint):
        open_sealed(KEY, blob, b"leaf 1")


def test_seal_arguments() -> None:
    with pytest.raises(ConfigError, match="aad must not be empty"):
        seal(KEY, b"x", b"")
    with pytest.raises(TypeError):
        seal(KEY, "text", b"aad")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not JSON-serializable"):
        seal_json(KEY, {"gain": math.nan}, b"aad")
    with pytest.raises(ProtocolError, match="seal_json"):
        open_json(KEY, seal(KEY, b"\xff not json", b"aad"), b"aad")
    blob = seal_json(KEY, {"counts": np.array([1, 2]), "n": np.int64(3)}, b"aad")
    assert open_json(KEY, blob, b"aad") == {"counts": [1, 2], "n": 3}


def test_associated_data_is_unambiguous() -> None:
    variants = [("leaf", "1", "23"), ("leaf", "12", "3"), ("leaf", 1, "23"), ("leaf1", "23")]
    assert len({associated_data(*v) for v in variants}) == len(variants)


parts_st = st.lists(
    st.one_of(st.text(max_size=8), st.binary(max_size=8), st.integers(-(2**70), 2**70)),
    min_size=1,
    max_size=4,
)


@settings(max_examples=100, deadline=None)
@given(prefix=parts_st, suffix=parts_st)
def test_extended_associated_data_equals_the_whole(prefix: list, suffix: list) -> None:
    whole = associated_data(*prefix, *suffix)
    assert extend_associated_data(associated_data(*prefix), *suffix) == whole
    with pytest.raises(ConfigError):
        extend_associated_data(b"not made by associated_data", *suffix)


def test_client_key_file(tmp_path) -> None:
    key = ClientKey.generate()
    old_umask = os.umask(0)  # even with a permissive umask the file is private
    try:
        path = key.save(tmp_path / "client.key")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ClientKey.load(path) == key
    assert ClientKey.load(path) != OTHER_KEY
    with pytest.raises(ConfigError, match="already exists"):
        key.save(path)
    os.chmod(path, 0o644)
    with pytest.raises(AuthenticationError, match="chmod 600"):
        ClientKey.load(path)
    bad = tmp_path / "bad.key"
    bad.write_text('sealing-key = "abcd"\n')
    bad.chmod(0o600)
    with pytest.raises(AuthenticationError, match="64 hex digits"):
        ClientKey.load(bad)
    with pytest.raises(AuthenticationError, match="does not exist"):
        ClientKey.load(tmp_path / "missing.key")


def test_client_key_repr_hides_the_key() -> None:
    key = ClientKey.generate()
    text = repr(key) + str(key)
    raw = key.key_bytes()
    assert "hidden" in text and key.fingerprint in text
    assert raw.hex() not in text and repr(raw) not in text
    with pytest.raises(TypeError, match="not picklable"):
        copy.copy(key)
    with pytest.raises(AuthenticationError, match="32 bytes"):
        ClientKey.from_bytes(b"short")


# --------------------------------------------------------------------------------------------
# Anatomization


def _table(counts: list[int], seed: int) -> Table:
    """A table with a unique ``id``, a nominal and a continuous attribute, the sensitive
    attribute ``s`` (value ``v{i}`` ``counts[i]`` times, shuffled) and a class."""
    rng = np.random.default_rng(seed)
    s = np.array([f"v{i}" for i, c in enumerate(counts) for _ in range(c)], dtype=object)
    n = len(s)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.2] = np.nan
    return Table(
        name="t",
        attributes=("id", "a", "s", "x"),
        kinds=("nominal", "nominal", "nominal", "continuous"),
        columns=(
            np.array([f"r{i}" for i in range(n)], dtype=object),
            np.array(rng.choice(["p", "q", "?"], size=n), dtype=object),
            rng.permutation(s),
            x,
        ),
        target=np.array(rng.choice(["yes", "no"], size=n), dtype=object),
        class_name="c",
        source="test",
    )


def _check_groups(st_: SensitiveTable, l: int) -> None:  # noqa: E741
    groups = st_.groups()
    for values in groups.values():
        assert l <= len(values) <= 2 * l - 1
        assert len(set(values)) == len(values)  # every value at most once: >= l distinct
    assert is_l_diverse(st_, l)
    assert sorted(groups) == list(range(len(groups)))
    assert len(groups) == st_.n_rows // l


counts_st = st.lists(st.integers(1, 9), min_size=1, max_size=7)


@settings(max_examples=250, deadline=None)
@given(counts=counts_st, l=st.integers(2, 5), seed=st.integers(0, 2**32 - 1))
def test_anatomize_is_l_diverse_and_join_restores(counts: list[int], l: int, seed: int) -> None:  # noqa: E741
    table = _table(counts, seed)
    n, top = sum(counts), max(counts)
    if top * l > n:
        with pytest.raises(
            ConfigError, match=re.escape(f"{top / n:.1%} of the sensitive column 's'")
        ):
            anatomize(table, "s", l, KEY, rng=np.random.default_rng(seed))
        return
    a = anatomize(table, "s", l, KEY, rng=np.random.default_rng(seed))
    it, st_ = a.it, a.st
    _check_groups(st_, l)
    assert sorted(st_.seq.tolist()) == list(range(n))  # SEQ: a permutation
    assert it.table.attributes == ("id", "a", "x") and it.table.class_name == "c"
    assert it.eseq.shape == (n, ESEQ_BYTES)
    assert Counter(it.gid.tolist()) == Counter(st_.gid.tolist())
    # the CDBS gets the table's name, never where the client keeps it (its source)
    assert it.table.source == table.name != table.source
    restored = dataclasses.replace(table, source=table.name)
    assert join(it, st_, KEY) == restored
    joined, rows_of_it = join_with_rows(it, st_, KEY)
    assert joined == restored
    assert rows_of_it.tolist() == [int(r[1:]) for r in it.table.column("id")]
    assert true_instances(group_join(it, st_), KEY) == restored

    leaf = np.random.default_rng(seed).permutation(n)[: max(1, n // 3)]
    candidates = group_join(it.subset(leaf), st_)
    sizes = Counter(st_.gid.tolist())
    assert candidates.n_pairs == sum(sizes[g] for g in it.gid[leaf].tolist())
    rows = sorted(int(r[1:]) for r in it.table.column("id")[leaf])
    assert true_instances(candidates, KEY) == restored.subset(rows)

    # the client's coded path from the wire gives the learner the same tables
    coded, coded_rows = joined_learning_table(
        _wire(it.to_wire()), _wire(st_.to_wire()), KEY, name="t"
    )
    _assert_same_coded(coded, CodedTable.from_table(table))
    assert coded_rows.tolist() == rows_of_it.tolist()
    schema = TableSchema.of(it.to_wire(), st_.to_wire())
    coded, coded_rows = leaf_learning_table(
        _wire(candidates.to_wire(schema)), schema, KEY, name="t"
    )
    _assert_same_coded(coded, CodedTable.from_table(table.subset(rows)))
    assert coded_rows.tolist() == rows


def _wire(body: object) -> object:
    """``body`` as the other party receives it."""
    return decode(encode("msg", "t", 0, body)).body


def _assert_same_coded(a: CodedTable, b: CodedTable) -> None:
    assert (a.attributes, a.kinds, a.domains, a.classes) == (
        b.attributes,
        b.kinds,
        b.domains,
        b.classes,
    )
    assert a.y.tolist() == b.y.tolist()
    for x, y in zip(a.data, b.data, strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype == np.float64)


def test_the_coded_tables_learn_the_same_trees() -> None:
    rng = np.random.default_rng(11)
    n = 90
    a_ = rng.choice(["p", "q", "?"], size=n)
    s_ = rng.choice(["v0", "v1", "v2"], size=n)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    y = np.where((a_ == "p") | ((s_ == "v0") & (np.nan_to_num(x) > 0)), "yes", "no")
    table = Table(
        name="t",
        attributes=("a", "s", "x"),
        kinds=("nominal", "nominal", "continuous"),
        columns=(np.array(a_, dtype=object), np.array(s_, dtype=object), x),
        target=np.array(y, dtype=object),
        class_name="c",
        source="test",
    )
    a = anatomize(table, "s", 2, KEY, rng=np.random.default_rng(4))
    coded, _ = joined_learning_table(_wire(a.it.to_wire()), _wire(a.st.to_wire()), KEY, name="t")
    prune = list(range(0, table.n_rows, 5))
    for learner in (C45Classifier(), C45Classifier(min_leaf=1, pruning="none")):
        want = learner.fit(table, prune_rows=prune).tree_
        assert not isinstance(want, Leaf)  # a tree worth comparing
        assert to_json(learner.fit(coded, prune_rows=prune).tree_) == to_json(want)


@settings(max_examples=250, deadline=None)
@given(counts=counts_st, seed=st.integers(0, 2**32 - 1))
def test_the_largest_eligible_l_always_succeeds(counts: list[int], seed: int) -> None:
    table = _table(counts, seed)
    l = max_l(table, "s")  # noqa: E741
    assert l == sum(counts) // max(counts)
    if l < 2:
        return
    a = anatomize(table, "s", l, KEY, rng=np.random.default_rng(seed))
    _check_groups(a.st, l)
    with pytest.raises(ConfigError, match=f"l = {l + 1} is impossible"):
        anatomize(table, "s", l + 1, KEY)


def test_an_impossible_l_names_the_share() -> None:
    with pytest.raises(ConfigError) as info:
        anatomize(weather(), "humidity", 3, KEY)
    message = str(info.value)
    assert message.startswith("l = 3 is impossible: 'high' is 50.0% of the sensitive column")
    assert "at most 33.3% allowed" in message and "largest possible l is 2" in message


def test_is_l_diverse_follows_definition_3() -> None:
    def st_of(gid: list[int], values: list[str]) -> SensitiveTable:
        return SensitiveTable("t", "s", 0, list(range(len(gid))), gid, values)

    assert is_l_diverse(st_of([0, 0, 0, 0], ["a", "b", "a", "b"]), 2)
    assert not is_l_diverse(st_of([0, 0, 0, 0], ["a", "b", "a", "b"]), 3)
    assert not is_l_diverse(st_of([0, 0, 1, 1], ["a", "b", "c", "c"]), 2)


def test_parameters_are_checked() -> None:
    w = weather()
    for bad_l in (1, 0, 2.0, True):
        with pytest.raises(ConfigError, match="l must be an integer"):
            anatomize(w, "outlook", bad_l, KEY)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="is the class"):
        anatomize(w, "play", 2, KEY)
    with pytest.raises(ConfigError, match="is not an attribute"):
        anatomize(w, "colour", 2, KEY)
    t = _table([3, 3], 0)
    with pytest.raises(ConfigError, match="continuous"):
        anatomize(t, "x", 2, KEY)


def test_os_randomness_by_default() -> None:
    w = weather()
    a, b = anatomize(w, "outlook", 2, KEY), anatomize(w, "outlook", 2, KEY)
    w = dataclasses.replace(w, source=w.name)
    assert join(a.it, a.st, KEY) == w == join(b.it, b.st, KEY)
    assert a.st.seq.tolist() == list(range(14))  # ST is kept in SEQ order
    assert a.st.values.tolist() != b.st.values.tolist() or a.st.gid.tolist() != b.st.gid.tolist()
    assert not np.array_equal(a.it.eseq, b.it.eseq)


def test_eseq_is_bound_to_its_table_and_group() -> None:
    a = anatomize(weather(), "outlook", 2, KEY, rng=np.random.default_rng(1))
    it = a.it
    with pytest.raises(AuthenticationError):
        join(it, a.st, OTHER_KEY)
    with pytest.raises(AuthenticationError):  # ESEQs of table "weather" presented as another
        join(it, a.st, KEY, name="golf")
    i = 0
    j = int(np.flatnonzero(it.gid != it.gid[i])[0])
    eseq = it.eseq.copy()
    eseq[[i, j]] = eseq[[j, i]]  # the server moves two ESEQs between groups
    with pytest.raises(AuthenticationError):
        join(IdentifyingTable(it.table, it.gid, eseq), a.st, KEY)


def test_an_altered_server_answer_is_detected() -> None:
    table = _table([4, 3, 3, 2], 5)
    a = anatomize(table, "s", 3, KEY, rng=np.random.default_rng(2))
    c = group_join(a.it, a.st)
    # drop the true pair of IT tuple 0 from leafIns: trueInstances must notice
    original_row = int(a.it.table.column("id")[0][1:])
    true_value = table.column("s")[original_row]
    keep = ~((c.row == 0) & (c.value == true_value))
    assert np.count_nonzero(~keep) == 1
    cut = Candidates(c.it, c.attribute, c.position, c.row[keep], c.seq[keep], c.value[keep])
    with pytest.raises(ProtocolError, match="1 tuples lack their true sensitive value"):
        true_instances(cut, KEY)
    with pytest.raises(ProtocolError, match="1 tuples lack their true sensitive value"):
        schema = TableSchema.of(a.it.to_wire(), a.st.to_wire())
        leaf_learning_table(cut.to_wire(schema), schema, KEY, name="t")
    st_ = a.st
    m = len(st_.groups())
    moved = SensitiveTable("t", "s", st_.position, st_.seq, (st_.gid + 1) % m, st_.values)
    with pytest.raises(ProtocolError, match="another group"):
        join(a.it, moved, KEY)
    with pytest.raises(ProtocolError, match="another group"):
        joined_learning_table(a.it.to_wire(), moved.to_wire(), KEY, name="t")
    short = SensitiveTable("t", "s", st_.position, st_.seq[1:], st_.gid[1:], st_.values[1:])
    with pytest.raises(ProtocolError, match="no ST tuple with their SEQ"):
        join(a.it, short, KEY)
    with pytest.raises(ProtocolError, match="have no tuple in ST"):
        group_join(a.it, SensitiveTable("t", "s", 2, st_.seq[:0], st_.gid[:0], st_.values[:0]))


def test_wire_round_trip_through_the_codec() -> None:
    w = weather()
    a = anatomize(w, "temperature", 2, KEY, rng=np.random.default_rng(3))
    leaf = group_join(a.it.subset([0, 4, 9]), a.st)
    schema = TableSchema.of(a.it.to_wire(), a.st.to_wire())
    body = {
        "it": a.it.to_wire(),
        "st": a.st.to_wire(),
        "leaf": leaf.to_wire(schema),
        "schema": schema.to_wire(),
    }
    got = decode(encode("msg", "upload", 0, body)).body
    it = IdentifyingTable.from_wire(got["it"])
    st_ = SensitiveTable.from_wire(got["st"])
    assert join(it, st_, KEY) == dataclasses.replace(w, source=w.name)
    # the schema travels as it is, and the receiver's schema of the tables is the same
    assert TableSchema.from_wire(got["schema"]) == schema
    assert TableSchema.of(got["it"], got["st"]).digest == schema.digest
    assert true_instances(Candidates.from_wire(got["leaf"], schema), KEY) == true_instances(
        leaf, KEY
    )
    with pytest.raises(ProtocolError, match="eseq"):
        IdentifyingTable.from_wire({**got["it"], "eseq": got["it"]["eseq"][:, :-1]})
    with pytest.raises(ProtocolError, match=r"ST\.domain"):
        SensitiveTable.from_wire({**got["st"], "domain": [1, 2]})
    with pytest.raises(ProtocolError, match=r"ST\.codes"):
        SensitiveTable.from_wire({**got["st"], "codes": got["st"]["codes"] + 99})
    with pytest.raises(ProtocolError, match=r"IT\.codes"):
        IdentifyingTable.from_wire({**got["it"], "codes": got["it"]["codes"] - 1})
    with pytest.raises(ProtocolError, match=r"IT\.domains"):
        IdentifyingTable.from_wire({**got["it"], "domains": got["it"]["domains"][:-1]})
    with pytest.raises(ProtocolError, match=r"continuous"):
        IdentifyingTable.from_wire({**got["it"], "continuous": [np.zeros(1)]})
    pairs = got["leaf"]["pairs"]
    with pytest.raises(ProtocolError, match=r"leafIns\.pairs"):
        Candidates.from_wire({**got["leaf"], "pairs": pairs[:, :2]}, schema)
    wrong_value = pairs.copy()
    wrong_value[0, 2] = len(schema.sensitive_domain)
    with pytest.raises(ProtocolError, match=r"leafIns\.pairs' values .*outside its domain"):
        Candidates.from_wire({**got["leaf"], "pairs": wrong_value}, schema)
    wrong_code = got["leaf"]["codes"].copy()
    wrong_code[0, 0] = len(schema.domains[0])
    with pytest.raises(ProtocolError, match=r"IT\.codes\[:, 0\] .*outside its domain"):
        Candidates.from_wire({**got["leaf"], "codes": wrong_code}, schema)
    # a leafIns coded with another schema (here: another sensitive domain) is refused
    other = TableSchema.from_wire({**schema.to_wire(), "sensitive_domain": ["cool", "hot"]})
    assert other.digest != schema.digest
    with pytest.raises(ProtocolError, match="refers to schema"):
        Candidates.from_wire(got["leaf"], other)
    with pytest.raises(ProtocolError, match="refers to schema"):
        leaf_learning_table(got["leaf"], other, KEY, name=w.name)


def test_the_wire_codes_nominal_columns_once() -> None:
    """Nominal columns travel as one int32 code matrix with a domain per column (the class
    last); every column decodes to the values it had."""
    w = weather()
    a = anatomize(w, "temperature", 2, KEY, rng=np.random.default_rng(3))
    doc = a.it.to_wire()
    nominal = [j for j, k in enumerate(a.it.table.kinds) if k != "continuous"]
    assert doc["codes"].dtype == np.int32
    assert doc["codes"].shape == (a.it.n_rows, len(nominal) + 1)
    for col, j in enumerate(nominal):
        values = np.asarray(doc["domains"][col], dtype=object)[doc["codes"][:, col]]
        assert values.tolist() == [str(v) for v in a.it.table.columns[j]]
    assert IdentifyingTable.from_wire(doc).table == a.it.table
    # a continuous column travels as its float64 array, missing values included
    t = _table([3, 3, 2], seed=1)
    b = anatomize(t, "s", 2, KEY, rng=np.random.default_rng(0))
    got = decode(encode("msg", "upload", 0, b.it.to_wire())).body
    assert len(got["continuous"]) == 1 and got["codes"].shape == (t.n_rows, 3)
    assert join(IdentifyingTable.from_wire(got), b.st, KEY) == dataclasses.replace(t, source=t.name)


def test_open_rows_equals_open_sealed_and_rejects_what_it_does() -> None:
    aads = [associated_data("t", i) for i in range(5)]
    blobs = [seal(KEY, f"row {i:02d}".encode(), aads[i]) for i in range(5)]
    rows = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(5, -1)
    assert open_rows(KEY, rows, aads) == [
        open_sealed(KEY, b, a) for b, a in zip(blobs, aads, strict=True)
    ]
    with pytest.raises(AuthenticationError, match="associated data"):
        open_rows(KEY, rows[[1, 0, 2, 3, 4]], aads)  # two rows swapped
    flipped = rows.copy()
    flipped[3, -1] ^= 1
    with pytest.raises(AuthenticationError, match="altered"):
        open_rows(KEY, flipped, aads)
    versioned = rows.copy()
    versioned[2, 0] = 7
    with pytest.raises(AuthenticationError, match="format version 7"):
        open_rows(KEY, versioned, aads)
    with pytest.raises(AuthenticationError, match="fewer than"):
        open_rows(KEY, rows[:, : OVERHEAD - 1], aads)
    with pytest.raises(AuthenticationError, match="another key"):
        open_rows(ClientKey.generate(), rows, aads)
    with pytest.raises(ConfigError, match="one aad per row"):
        open_rows(KEY, rows, aads[:-1])
    with pytest.raises(TypeError):
        open_rows(KEY, rows.astype(np.int64), aads)
    assert open_rows(KEY, rows[:0], []) == []
