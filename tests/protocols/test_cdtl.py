"""Collaborative decision tree learning: cdtl subtrees equal the learner on the true leaf rows,
concurrent refinements leave one subtree, the CDBS survives a restart, swapped subtrees are
detected, ledgers hold only what Section 4 allows, and the ``cdtl`` system runs across
processes."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.crypto.sealed import ClientKey, open_json
from mpc.datasets import Table
from mpc.errors import AuthenticationError, ConfigError, MPCError, ProtocolError
from mpc.learners.evaluation import rows_of
from mpc.learners.tree import Leaf, Split, from_json, nodes, predict_one, to_json
from mpc.runtime.local import run_in_memory
from mpc.runtime.metrics import Ledger
from mpc.runtime.party import Party
from mpc.runtime.view import public as _public
from protocols.cdtl.anatomization import anatomize, suppress_for_l
from protocols.cdtl.cdbs import _handle, serve_client
from protocols.cdtl.cdtl import CDBS, POST_DELAY_S, PROTOCOLS, learner, subtree_aad
from protocols.cdtl.client import CDBSClient, ClientCosts
from protocols.cdtl.find_leaf import find_bdt_leaf, leaf_of_rows, schema_digest
from protocols.cdtl.joins import open_eseq
from protocols.cdtl.store import CDBSStore

from .. import datasets
from ..conftest import run_mpc, run_mpc_json

#: the receipt of this test's own messages
ANY = _public("test/message", "a message of this test")

CDBS_LABELS = {"cdtl/anatomized", "cdtl/bdt", "cdtl/query", "cdtl/visited-leaf", "cdtl/ciphertext"}
SENSITIVE = "s"


def table(seed: int, n: int = 160, noise: float = 0.1) -> Table:
    """Class depends on an identifying attribute and on the sensitive one (with ``noise``
    0, the tuples with ``a == "a0"`` all have class c1)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = rng.integers(0, 2, n)
    s = rng.integers(0, 3, n)
    y = np.where(rng.random(n) < noise, rng.integers(0, 2, n), ((a == 0) | (s == 2)).astype(int))
    return Table(
        name="t",
        attributes=("a", "b", SENSITIVE),
        kinds=("nominal",) * 3,
        columns=(
            np.array([f"a{v}" for v in a], dtype=object),
            np.array([f"b{v}" for v in b], dtype=object),
            np.array([f"s{v}" for v in s], dtype=object),
        ),
        target=np.array([f"c{v}" for v in y], dtype=object),
        class_name="y",
        source="test",
    )


def run_pair(
    store: CDBSStore, programs: dict[str, Any], clients: list[str]
) -> tuple[dict[str, Any], dict[str, Party]]:
    async def cdbs(party: Party) -> Any:
        return await asyncio.gather(*(serve_client(party, store, c) for c in clients))

    names = [*clients, CDBS]
    roles = {c: "client" for c in clients} | {CDBS: CDBS}
    return asyncio.run(run_in_memory(names, {**programs, CDBS: cdbs}, roles=roles, timeout=30))


def outsource_program(
    t: Table,
    key: ClientKey,
    prune: set[int],
    l: int = 2,  # noqa: E741
    nominal_splits: str = "multiway",
):
    async def program(party: Party) -> Any:
        client = CDBSClient(
            party, key, sensitive=SENSITIVE, class_name=t.class_name, nominal_splits=nominal_splits
        )
        an = anatomize(t, SENSITIVE, l, key)
        _, original = open_eseq(an.it, key)
        await client.outsource(an, np.flatnonzero(np.isin(original, list(prune))))
        costs = ClientCosts()
        preds = [await client.inference(t.name, r, prune, costs) for r in rows_of(t)]
        await client.done()
        return preds, costs

    return program


def classify_every_row(
    t: Table, prune: set[int], nominal_splits: str = "multiway"
) -> tuple[Any, ...]:
    """Outsource ``t`` and classify each of its rows with cdtl: (predictions, client costs,
    parties, CDBS store, the CDBS's loaded table, client key)."""
    key = ClientKey.generate()
    store = CDBSStore(":memory:")
    program = outsource_program(t, key, prune, nominal_splits=nominal_splits)
    res, parties = run_pair(store, {"client": program}, ["client"])
    preds, costs = res["client"]
    return preds, costs, parties, store, store.load(t.name), key


@pytest.mark.parametrize("splits", ["multiway", "binary"])
def test_a_cdtl_subtree_is_the_learner_on_the_true_leaf_rows(splits: str) -> None:
    t = table(1)
    prune = set(range(0, t.n_rows, 5))
    preds, costs, parties, store, loaded, key = classify_every_row(t, prune, splits)
    kinds = {n.kind for n in nodes(loaded.bdt) if isinstance(n, Split)}
    assert kinds == {splits}  # the CDBS learned the BDT as the client asked
    identifying = t.select(["a", "b"])
    leaves = {find_bdt_leaf(loaded.bdt, r)[0] for r in rows_of(identifying)}
    assert costs.subtrees_learned == store.subtree_count(t.name) == len(leaves) > 0
    for leaf in leaves:
        rows = [
            i for i, r in enumerate(rows_of(identifying)) if find_bdt_leaf(loaded.bdt, r)[0] == leaf
        ]
        want = learner(nominal_splits=splits).fit(
            t.subset(rows), prune_rows=[j for j, i in enumerate(rows) if i in prune]
        )
        blob = store.subtree(t.name, leaf)
        assert blob is not None
        assert open_json(key, blob, subtree_aad(t.name, leaf)) == to_json(want.tree_)
    # every prediction is the prediction of the subtree of the instance's leaf
    for r, p in zip(rows_of(t), preds, strict=True):
        leaf, _ = find_bdt_leaf(loaded.bdt, r)
        blob = store.subtree(t.name, leaf)
        assert blob is not None
        assert p == predict_one(from_json(open_json(key, blob, subtree_aad(t.name, leaf))), r)
    labels = {e.label for e in parties[CDBS].ledger.entries}
    assert labels <= CDBS_LABELS
    assert {e.label for e in parties["client"].ledger.entries} <= {"cdtl/leaf-instances"}


@pytest.mark.parametrize("flip", [False, True])
def test_a_leaf_whose_subtree_is_one_leaf_is_answered_with_its_class_and_never_refined(
    flip: bool,
) -> None:
    """The CDBS answers a leaf itself when the subtree is sure to be a single leaf: the
    tuples grown on (not in the prune set) all have one class, or are too few to split.
    With ``flip``, a prune tuple of the leaf of ``a0`` (class c1 throughout) has class c0:
    the leaf has two classes, but the tuples grown on have one."""
    t = table(3, noise=0.0)
    prune = set(range(0, t.n_rows, 5))
    if flip:
        target = t.target.copy()
        target[min(i for i in prune if t.columns[0][i] == "a0")] = "c0"
        t = Table(t.name, t.attributes, t.kinds, t.columns, target, t.class_name, t.source)
    preds, costs, parties, store, loaded, _ = classify_every_row(t, prune)
    leaf_of = [find_bdt_leaf(loaded.bdt, r)[0] for r in rows_of(t)]
    rows = {leaf: [i for i, x in enumerate(leaf_of) if x == leaf] for leaf in set(leaf_of)}

    def single(ix: list[int]) -> bool:
        grow = [i for i in ix if i not in prune] or ix
        return len(set(t.target[grow].tolist())) == 1 or len(grow) < 4

    pure = {leaf for leaf, ix in rows.items() if single(ix)}
    assert pure and pure != set(rows)
    mixed = {leaf for leaf in pure if len(set(t.target[rows[leaf]].tolist())) > 1}
    assert bool(mixed) == flip
    for leaf in pure:  # the learner on the leaf's true tuples makes a single leaf indeed
        ix = rows[leaf]
        tree = learner().fit(t.subset(ix), prune_rows=[j for j, i in enumerate(ix) if i in prune])
        assert isinstance(tree.tree_, Leaf)
    # the client refined exactly the leaves of several classes, and received no other tuples
    assert set(store.subtree_leaves()) == set(rows) - pure
    assert costs.subtrees_learned == len(rows) - len(pure)
    got = {e.value["leaf"] for e in parties["client"].ledger.entries}
    assert got == set(rows) - pure
    # every prediction is Figure 3's: the learner on the true tuples of the instance's leaf
    for r, p, leaf in zip(rows_of(t), preds, leaf_of, strict=True):
        ix = rows[leaf]
        want = learner().fit(t.subset(ix), prune_rows=[j for j, i in enumerate(ix) if i in prune])
        assert p == predict_one(want.tree_, r)


@st.composite
def small_tables(draw: st.DrawFn) -> Table:
    """A small table of two identifying attributes, a sensitive one and a class, whose
    class follows the attributes with some noise (so some leaves are pure, some not)."""
    n = draw(st.integers(24, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a, b, s = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 3, n)
    noise = draw(st.sampled_from([0.0, 0.15, 0.4]))
    y = np.where(rng.random(n) < noise, rng.integers(0, 2, n), ((a == 0) | (s == 2)).astype(int))
    t = Table(
        name="h",
        attributes=("a", "b", SENSITIVE),
        kinds=("nominal",) * 3,
        columns=tuple(
            np.array([f"{k}{v}" for v in col], dtype=object)
            for k, col in (("a", a), ("b", b), ("s", s))
        ),
        target=np.array([f"c{v}" for v in y], dtype=object),
        class_name="y",
        source="test",
    )
    return t.subset(suppress_for_l(t, SENSITIVE, 2))


def run_protocol(t: Table, prune: set[int], name: str, key: ClientKey) -> dict[str, Any]:
    """Outsource ``t`` and classify each of its rows with cdtl under protocol ``name``."""
    protocol = PROTOCOLS[name]
    store = CDBSStore(":memory:")

    async def client_program(party: Party) -> Any:
        client = CDBSClient(
            party, key, sensitive=SENSITIVE, class_name=t.class_name, pipelined=protocol.pipelined
        )
        an = anatomize(t, SENSITIVE, 2, key)
        _, original = open_eseq(an.it, key)
        await client.outsource(an, np.flatnonzero(np.isin(original, list(prune))))
        costs = ClientCosts()
        preds = [await client.inference(t.name, r, prune, costs) for r in rows_of(t)]
        await client.done()
        return preds, costs

    async def cdbs(party: Party) -> Any:
        return await serve_client(party, store, "client", single_leaf=protocol.single_leaf)

    programs = {"client": client_program, CDBS: cdbs}
    roles = {"client": "client", CDBS: CDBS}
    res, parties = asyncio.run(run_in_memory(["client", CDBS], programs, roles=roles, timeout=30))
    preds, costs = res["client"]
    subtrees = {
        leaf: from_json(open_json(key, store.subtree(t.name, leaf), subtree_aad(t.name, leaf)))
        for leaf in store.subtree_leaves()
    }
    metrics = parties["client"].metrics
    return {
        "preds": preds, "costs": costs, "subtrees": subtrees, "loaded": store.load(t.name),
        "sent": metrics.messages_sent[CDBS], "received": metrics.messages_received[CDBS],
        "ledger": parties["client"].ledger,
    }  # fmt: skip


@settings(max_examples=12, deadline=None)
@given(t=small_tables(), every=st.integers(3, 6))
def test_the_protocol_as_drawn_and_its_shortcuts_predict_alike(t: Table, every: int) -> None:
    """Figures 2-3 as drawn, each shortcut alone and both give the same predictions and the
    same subtree wherever both refine; the shortcuts save what they say: single-leaf answers
    leave the pure leaves unrefined (no tuples sent, no subtree), pipelined updateBDT saves
    the round trip of every refinement."""
    prune = set(range(0, t.n_rows, every))
    key = ClientKey.generate()
    runs = {name: run_protocol(t, prune, name, key) for name in PROTOCOLS}
    drawn = runs["as-drawn"]
    loaded = drawn["loaded"]
    rows = rows_of(t)
    visited = {find_bdt_leaf(loaded.bdt, r)[0] for r in rows}
    pure = {leaf for leaf in visited if loaded.single_leaf_label(leaf) is not None}
    q = len(rows)
    for name, r in runs.items():
        assert r["preds"] == drawn["preds"], name
        protocol = PROTOCOLS[name]
        refined = visited - pure if protocol.single_leaf else visited
        # the same subtree wherever two protocols refine a leaf
        assert set(r["subtrees"]) == refined, name
        for leaf in refined:
            assert r["subtrees"][leaf] == drawn["subtrees"][leaf]
        costs = r["costs"]
        assert costs.subtrees_learned == len(refined)
        assert costs.requests == q + len(refined)  # a query each, an updateBDT per refinement
        got = {e.value["leaf"] for e in r["ledger"].entries if e.label == "cdtl/leaf-instances"}
        assert got == refined  # leafIns of the refined leaves only
        # round trips: one per query, and one per refinement unless updateBDT is pipelined
        waited = q + (0 if protocol.pipelined else len(refined))
        assert costs.round_trips == waited
        # the CDBS's replies: outsource, the round trips, done
        assert r["received"] == 2 + waited
        if protocol.pipelined:  # an upload rides with the next request, or goes alone
            assert 2 + q <= r["sent"] <= 2 + q + len(refined)
        else:
            assert r["sent"] == 2 + waited
    # as drawn, a pure leaf's subtree is the single leaf whose class the CDBS answers with
    for leaf in pure:
        tree = drawn["subtrees"][leaf]
        assert isinstance(tree, Leaf) and tree.label == loaded.single_leaf_label(leaf)


def test_two_clients_refining_the_same_leaf_leave_one_subtree() -> None:
    t = table(2)
    key = ClientKey.generate()
    store = CDBSStore(":memory:")
    ready: asyncio.Event | None = None

    async def first(party: Party) -> Any:
        nonlocal ready
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        an = anatomize(t, SENSITIVE, 2, key)
        await client.outsource(an, np.array([], dtype=np.int64))
        await party.send("client2", "ready", True)
        pred = await client.inference(t.name, rows_of(t)[0], set(), ClientCosts())
        await client.done()
        return pred

    async def second(party: Party) -> Any:
        await party.recv("client1", "ready", ANY)
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        pred = await client.inference(t.name, rows_of(t)[0], set(), ClientCosts())
        await client.done()
        return pred

    res, parties = run_pair(store, {"client1": first, "client2": second}, ["client1", "client2"])
    assert res["client1"] == res["client2"]
    assert store.subtree_count(t.name) == 1
    stored = [
        e.value["stored"] for e in parties[CDBS].ledger.entries if e.label == "cdtl/ciphertext"
    ]
    assert stored.count(True) == 1


def test_a_client_that_did_not_outsource_asks_for_the_table_schema_once() -> None:
    """leafIns carries only rows, coded into the table's schema: the client that outsourced
    has it; another client of the same owner asks for it once, checks it against the digest
    leafIns names, and predicts what Figure 3 predicts."""
    t = table(6)
    key = ClientKey.generate()
    store = CDBSStore(":memory:")
    rows = rows_of(t)

    def recording(client: CDBSClient) -> list[str]:
        ops: list[str] = []
        request = client.request

        async def recorded(op: str, **body: Any) -> dict[str, Any]:
            ops.append(op)
            return await request(op, **body)

        client.request = recorded  # type: ignore[method-assign]
        return ops

    async def first(party: Party) -> Any:
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        ops = recording(client)
        await client.outsource(anatomize(t, SENSITIVE, 2, key), np.array([], dtype=np.int64))
        await party.send("client2", "ready", True)
        await client.done()
        return ops

    async def second(party: Party) -> Any:
        await party.recv("client1", "ready", ANY)
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        ops = recording(client)
        costs = ClientCosts()
        preds = [await client.inference(t.name, r, set(), costs) for r in rows]
        with pytest.raises(ProtocolError, match=r"refers to '0+'"):
            await client.table_schema(t.name, "0" * 32)  # not the digest of the CDBS's schema
        await client.done()
        return preds, ops, costs.subtrees_learned

    res, _ = run_pair(store, {"client1": first, "client2": second}, ["client1", "client2"])
    preds, ops, learned = res["client2"]
    assert res["client1"] == ["outsource", "done"]
    assert learned >= 2  # several leafIns, one schema
    assert ops.count("table_schema") == 2  # once for leafIns, once for the wrong digest
    assert ops.count("find_bdt_leaf") == len(rows)
    loaded = store.load(t.name)
    leaf_of = [find_bdt_leaf(loaded.bdt, r)[0] for r in rows]
    for r, p, leaf in zip(rows, preds, leaf_of, strict=True):
        ix = [i for i, x in enumerate(leaf_of) if x == leaf]
        assert p == predict_one(learner().fit(t.subset(ix), prune_rows=[]).tree_, r)


def test_a_posted_upload_travels_with_the_next_request_or_alone_soon() -> None:
    """updateBDT is posted, not waited for: it travels with the client's next request (or
    alone after POST_DELAY_S), the CDBS sends no message for it and puts its answer in the
    next reply. A refused upload surfaces there, or at ``settle``."""
    t = table(4)
    key = ClientKey.generate()
    store = CDBSStore(":memory:")

    async def program(party: Party) -> Any:
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        an = anatomize(t, SENSITIVE, 2, key)
        await client.outsource(an, np.array([], dtype=np.int64))
        await client.post("update_bdt", name=t.name, leaf="x", subtree=b"sealed")
        return await client.request("get_blob", name=t.name, key="nothing-here")

    async def refused(party: Party) -> Any:
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        await client.post("update_bdt", name="no-such-table", leaf="x", subtree=b"sealed")
        with pytest.raises(ProtocolError, match=r"refused 'update_bdt'.*no table 'no-such-t"):
            await client.settle()
        await client.post("update_bdt", name="no-such-table", leaf="y", subtree=b"sealed")
        with pytest.raises(ProtocolError, match=r"refused 'update_bdt'"):
            await client.request("get_blob", name=t.name, key="cnl-tree")
        await client.post("update_bdt", name=t.name, leaf="z", subtree=b"sealed")
        await client.post("update_bdt", name=t.name, leaf="w", subtree=b"sealed")
        assert store.subtree_leaves() == ["x"]  # not sent yet
        await asyncio.sleep(POST_DELAY_S * 5)  # no request came: they went alone
        assert store.subtree_leaves() == ["w", "x", "z"]
        await client.settle()
        await client.settle()  # nothing pending: no round trip
        await client.done()
        return True

    with pytest.raises(MPCError, match="no 'nothing-here'"):  # as the client's or the CDBS's
        run_pair(store, {"client": program}, ["client"])
    assert store.subtree_leaves() == ["x"]  # it came with the failed request, before it
    _, parties = run_pair(store, {"client": refused}, ["client"])
    # 2 uploads went with a sync and get_blob, 2 alone; the CDBS answered only the 4 requests
    assert parties["client"].metrics.messages_sent[CDBS] == 6
    assert parties["client"].metrics.messages_received[CDBS] == 4


def test_the_cdbs_restarted_serves_the_same_answers(tmp_path: Path) -> None:
    t = table(3)
    key = ClientKey.generate()
    db = tmp_path / "cdbs.sqlite"
    store = CDBSStore(db)
    res, _ = run_pair(store, {"client": outsource_program(t, key, set())}, ["client"])
    first_preds, _ = res["client"]
    count = store.subtree_count()
    store.close()

    restarted = CDBSStore(db)  # a new process would open the same file

    async def predict_again(party: Party) -> Any:
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        costs = ClientCosts()
        preds = [await client.inference(t.name, r, set(), costs) for r in rows_of(t)]
        await client.done()
        return preds, costs

    res, _ = run_pair(restarted, {"client": predict_again}, ["client"])
    preds, costs = res["client"]
    assert preds == first_preds
    assert costs.subtrees_learned == 0  # every leaf was refined before the restart
    assert restarted.subtree_count() == count


def test_a_subtree_swapped_between_leaves_is_detected(tmp_path: Path) -> None:
    t = table(4)
    key = ClientKey.generate()
    store = CDBSStore(tmp_path / "cdbs.sqlite")
    run_pair(store, {"client": outsource_program(t, key, set())}, ["client"])
    loaded = store.load(t.name)
    ids = store.subtree_leaves()  # the refined leaves
    assert len(ids) >= 2
    victim, other = ids[0], ids[1]
    blob = store.subtree(t.name, other)
    assert blob is not None
    store._db.execute("UPDATE subtrees SET blob = ? WHERE leaf = ?", (blob, victim))
    store.close()
    store = CDBSStore(tmp_path / "cdbs.sqlite")  # the CDBS serving its altered database
    row = next(r for r in rows_of(t) if find_bdt_leaf(loaded.bdt, r)[0] == victim)

    async def predict(party: Party) -> Any:
        client = CDBSClient(party, key, sensitive=SENSITIVE, class_name=t.class_name)
        try:
            await client.inference(t.name, row, set(), ClientCosts())
        finally:
            await client.done()

    with pytest.raises(AuthenticationError) as info:
        run_pair(store, {"client": predict}, ["client"])
    assert f"leaf {victim!r} of table {t.name!r}" in str(info.value)


def test_suppression_makes_l_possible_with_the_fewest_tuples() -> None:
    t = table(5, n=90)
    s = np.asarray(t.column(SENSITIVE), dtype=str)
    s[:60] = "s0"  # s0 covers 2/3 of the rows
    t2 = Table(t.name, t.attributes, t.kinds, (t.columns[0], t.columns[1], s.astype(object)),
               t.target, t.class_name, t.source)  # fmt: skip
    keep = suppress_for_l(t2, SENSITIVE, 2)
    kept = s[keep]
    _, counts = np.unique(kept, return_counts=True)
    assert counts.max() * 2 <= len(kept)
    assert counts.max() * 2 > len(kept) - 2  # one tuple fewer suppressed would not do
    with pytest.raises(Exception, match="only 3 distinct"):
        suppress_for_l(t2, SENSITIVE, 4)


# ----------------------------------------------------------------------------- processes


@pytest.mark.datasets
@pytest.mark.processes
@pytest.mark.timeout(150)
@pytest.mark.parametrize("splits", ["multiway", "binary"])
def test_cdtl_system_across_processes(splits: str) -> None:
    datasets.needs("house-votes-84")
    code, doc = run_mpc_json(
        "run", "cdtl", "--dataset", "house-votes-84", "--sensitive", "physician-fee-freeze",
        "--class", "party", "--l", "2", "--cv", "3", "--nominal-splits", splits, deadline=140,
    )  # fmt: skip
    if code == 2 and "data directory" in str(doc):
        pytest.skip("house-votes-84 is not in the data directory")
    assert code == 0 and doc["ok"], doc
    r = doc["result"]
    assert set(r["methods"]) == {"cdtl", "cnl", "cdbsl"}
    for m in r["methods"].values():
        assert 0.5 <= m["accuracy"] <= 1.0
        # the client's CPU time is part of its wall-clock time over the same spans
        assert 0 < m["client_cpu_seconds"] <= m["client_seconds"] * 1.5
    assert 0 < r["ms"] < 1 and r["ets"] > 0 and r["ets_cpu"] > 0
    # the BDT's leaves partition the training tuples: no leaf sent is bigger than the largest
    for fold in r["per_fold"]:
        assert fold["cdtl"]["tuples_held"] <= fold["max_leaf"] <= fold["train"]
    assert r["cdbs"]["subtrees"] > 0
    cdbs_ledger = doc["parties"]["cdbs"]["ledger"]
    assert {e["label"] for e in cdbs_ledger} <= CDBS_LABELS
    # every fold's BDT was learned with the splits the client chose
    bdts = [from_json(e["value"]["tree"]) for e in cdbs_ledger if e["label"] == "cdtl/bdt"]
    assert len(bdts) == 3
    assert {n.kind for b in bdts for n in nodes(b) if isinstance(n, Split)} == {splits}


@pytest.mark.processes
@pytest.mark.timeout(90)
def test_mpc_run_cdtl_as_drawn_waits_for_every_update_bdt() -> None:
    """``--protocol as-drawn`` reaches both parties: the client waits for an updateBDT per
    subtree it learns, and the CDBS answers pure leaves with leafIns (so the client learns
    one subtree per leaf its queries reach)."""
    datasets.needs("house-votes-84")
    code, doc = run_mpc_json(
        "run", "cdtl", "--dataset", "house-votes-84", "--sensitive", "physician-fee-freeze",
        "--class", "party", "--cv", "2", "--method", "cdtl,cnl", "--protocol", "as-drawn",
        deadline=80,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc
    r = doc["result"]
    assert r["protocol"] == "as-drawn" and set(r["methods"]) == {"cdtl", "cnl"}
    for fold in r["per_fold"]:
        cdtl = fold["cdtl"]
        assert cdtl["round_trips"] == fold["test"] + cdtl["subtrees_learned"] > fold["test"]
    # every leaf a query reached was refined: the leaves answered with a class as drawn too
    # are only those without tuples, which no test row of these tables reaches
    assert r["cdbs"]["subtrees"] == r["methods"]["cdtl"]["subtrees_learned"]


@pytest.mark.processes
@pytest.mark.timeout(90)
def test_a_cdbs_killed_mid_request_ends_the_client_with_a_named_error() -> None:
    code, doc = run_mpc_json(
        "run", "cdtl", "--sensitive", "windy", "--cv", "2", "--method", "cdtl",
        "--kill", "cdbs", "--after", "3", "--timeout", "5", deadline=80,
    )  # fmt: skip
    assert code == 1 and not doc["ok"]
    err = doc["parties"]["client"]["error"]
    assert err["peer"] == "cdbs" and err["type"] in ("PeerLost", "PeerTimeout"), err
    assert err["step"].startswith("cdtl/")


@pytest.mark.processes
@pytest.mark.timeout(60)
def test_an_impossible_l_fails_before_any_party_starts() -> None:
    code, _out, err = run_mpc("run", "cdtl", "--sensitive", "windy", "--l", "3", deadline=50)
    assert code == 2
    assert "only 2 distinct" in err


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_concurrent_clients_lose_and_duplicate_no_subtree() -> None:
    # a table with leaves to refine (on weather, every BDT leaf's subtree is sure to be a
    # single leaf, which the CDBS answers itself)
    datasets.needs("house-votes-84")
    code, doc = run_mpc_json(
        "run", "cdbs-load", "--dataset", "house-votes-84", "--sensitive",
        "physician-fee-freeze", "--class", "party", "--clients", "3", "--predictions", "30",
        deadline=110,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc
    r = doc["result"]
    assert r["predictions"] == 90
    assert r["duplicated_subtrees"] == 0 and r["consistent_predictions"] is True
    # every leaf some client refined is stored exactly once
    assert 0 < r["subtrees_stored"] <= r["subtrees_learned_by_clients"]


def test_bdt_leaves_partition_the_rows_and_unknown_values_follow_the_heaviest_branch() -> None:
    heavy = Split("b", {"c0": 5.0, "c1": 2.0}, {"b0": Leaf({"c0": 4.0}, "c0"),
                  "b1": Leaf({"c1": 3.0}, "c1")}, weights={"b0": 0.4, "b1": 0.6})  # fmt: skip
    tree = Split("a", {"c0": 6.0, "c1": 4.0}, {"a0": Leaf({"c0": 3.0}, "c0"), "a1": heavy},
                 weights={"a0": 0.3, "a1": 0.7})  # fmt: skip
    assert find_bdt_leaf(tree, {"a": "a0", "b": "?"})[0] == "a=a0"
    for row in ({"a": "?", "b": "?"}, {"a": "unseen", "b": "b9"}, {"b": "b1"}):
        leaf, node = find_bdt_leaf(tree, row)
        assert leaf == "a=a1\x1fb=b1" and isinstance(node, Leaf)
    # on a learned BDT with unknown values every row reaches exactly one leaf
    t = table(3)
    cols = list(t.columns)
    cols[0] = np.where(np.arange(t.n_rows) % 7 == 0, "?", cols[0]).astype(object)
    t = Table(t.name, t.attributes, t.kinds, tuple(cols), t.target, t.class_name, t.source)
    bdt = learner().fit(t.select(["a", "b"])).tree_
    ids = leaf_of_rows(bdt, t)
    assert all(isinstance(find_bdt_leaf(bdt, r)[1], Leaf) for r in rows_of(t))
    assert sum(ids.count(x) for x in set(ids)) == t.n_rows


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip
OPS = ["outsource", "find_bdt_leaf", "update_bdt", "predict", "get_tables", "put_blob",
       "get_blob", "no-such-op"]  # fmt: skip
FIELDS = ["name", "it", "st", "prune", "values", "schema", "leaf", "subtree", "key", "blob"]
rows_of_junk = st.dictionaries(st.sampled_from(["a", "b", SENSITIVE, "y"]), junk, max_size=4)


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from(OPS), fields=st.dictionaries(st.sampled_from(FIELDS), junk | rows_of_junk)
)
def test_a_hostile_request_gets_an_error_and_never_crashes_the_cdbs(
    op: str, fields: dict[str, Any]
) -> None:
    """Requests with random fields (for the stored table "t" or another name): the CDBS
    answers with a map or raises ProtocolError / ConfigError (which serve_client sends back
    to the client as an error reply), never anything else."""
    store = _hostile_store()
    try:
        reply = _handle(_LedgerOnly(), store, op, {"name": "t", **fields})
    except (ProtocolError, ConfigError) as exc:
        assert str(exc)
    else:
        assert isinstance(reply, dict) and reply


class _LedgerOnly:
    """What _handle uses of a Party."""

    def __init__(self) -> None:
        self.ledger = Ledger()


@functools.cache
def _hostile_store() -> CDBSStore:
    """A CDBS store holding table "t" (built once)."""
    t = table(3)
    an = anatomize(t, SENSITIVE, 2, ClientKey.generate())
    store = CDBSStore(":memory:")
    prune = np.array([], dtype=np.int64)
    _handle(_LedgerOnly(), store, "outsource", {"it": an.it.to_wire(), "st": an.st.to_wire(),
                                               "prune": prune})  # fmt: skip
    return store


def test_the_prepared_leaf_replies_are_the_group_joins_and_survive_a_restart(
    tmp_path: Path,
) -> None:
    """The CDBS answers an unrefined leaf with the leafIns it prepared when it loaded the
    table: for every leaf, exactly the group join of the leaf's IT tuples with ST; a new
    store on the same database prepares the same replies."""
    from protocols.cdtl.joins import group_join
    from protocols.cdtl.tables import Candidates

    t = table(5)
    an = anatomize(t, SENSITIVE, 2, ClientKey.generate())
    db = tmp_path / "cdbs.sqlite"
    store = CDBSStore(db)
    prune = np.array([0, 3, 7], dtype=np.int64)
    _handle(_LedgerOnly(), store, "outsource", {"it": an.it.to_wire(), "st": an.st.to_wire(),
                                               "prune": prune})  # fmt: skip
    loaded = store.load(t.name)
    leaves = sorted(set(loaded.leaf_ids))
    assert len(leaves) >= 1 and set(loaded.answers) == set(leaves)
    for leaf in leaves:
        got = Candidates.from_wire(loaded.answers[leaf], loaded.table_schema)
        want = group_join(loaded.it.subset(np.flatnonzero(np.asarray(loaded.leaf_ids) == leaf)),
                          loaded.st)  # fmt: skip
        assert got.it.table == want.it.table
        assert got.it.gid.tolist() == want.it.gid.tolist()
        assert got.it.eseq.tobytes() == want.it.eseq.tobytes()
        assert got.row.tolist() == want.row.tolist() and got.seq.tolist() == want.seq.tolist()
        assert got.value.tolist() == want.value.tolist()
    store.close()
    again = CDBSStore(db)
    try:
        reloaded = again.load(t.name)
        for leaf in leaves:
            a = Candidates.from_wire(reloaded.answers[leaf], reloaded.table_schema)
            b = Candidates.from_wire(loaded.answers[leaf], loaded.table_schema)
            assert a.it.eseq.tobytes() == b.it.eseq.tobytes()
            assert a.seq.tolist() == b.seq.tolist() and a.value.tolist() == b.value.tolist()
    finally:
        again.close()


def test_a_query_names_the_order_of_its_values() -> None:
    """A query's values follow IT's identifying attributes, named by their digest: values in
    another order, or too few, are refused, not routed."""
    store = _hostile_store()
    loaded = store.load("t")
    assert loaded.attributes == ("a", "b")
    good = {"name": "t", "values": ["a0", "b1"], "schema": schema_digest(["a", "b"])}
    assert _handle(_LedgerOnly(), store, "find_bdt_leaf", good)["leaf"]
    assert _handle(_LedgerOnly(), store, "predict", good)["class"]
    for bad in (
        {**good, "schema": schema_digest(["b", "a"])},
        {**good, "values": ["a0"]},
        {**good, "values": ["a0", 1]},
    ):
        with pytest.raises(ProtocolError, match="values"):
            _handle(_LedgerOnly(), store, "find_bdt_leaf", bad)


def test_a_staged_subtree_is_served_until_stored_and_the_first_stored_wins(
    tmp_path: Path,
) -> None:
    store = _hostile_store.__wrapped__()  # a store of its own
    assert store.subtree("t", "leaf") is None
    store.stage("t", "leaf", b"first")
    store.stage("t", "leaf", b"second")  # the first staged is served
    assert store.subtree("t", "leaf") == b"first"
    assert store.put_subtree("t", "leaf", b"first") is True
    assert store.put_subtree("t", "leaf", b"second") is False
    assert store.subtree("t", "leaf") == b"first" and store.subtree_leaves().count("leaf") == 1
    store.stage("t", "leaf", b"late")  # a leaf already stored keeps its subtree
    assert store.subtree("t", "leaf") == b"first"
    assert store.put_subtree("t", "leaf", b"late") is False and not store._staged
    # a database reopened by a new process serves what was stored, nothing staged
    db = CDBSStore(tmp_path / "cdbs.sqlite")
    db.stage("t", "x", b"never stored")
    db.put_subtree("t", "y", b"stored")
    db.close()
    again = CDBSStore(tmp_path / "cdbs.sqlite")
    assert again.subtree("t", "x") is None and again.subtree("t", "y") == b"stored"


def test_cdtl_and_cnl_take_turns_to_run_first() -> None:
    from parties.programs.cdtl import method_order

    methods = ["cdtl", "cnl", "cdbsl"]
    orders = [method_order(methods, fold) for fold in range(10)]
    assert all(sorted(o) == sorted(methods) and o[-1] == "cdbsl" for o in orders)
    assert [o[0] for o in orders].count("cdtl") == [o[0] for o in orders].count("cnl") == 5
    assert method_order(["cdtl"], 1) == ["cdtl"]
    assert method_order(["cnl", "cdbsl"], 1) == ["cnl", "cdbsl"]


def _experiment_script() -> Any:
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "scripts" / "experiments" / "cdtl.py"
    spec = importlib.util.spec_from_file_location("cdtl_experiments", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_experiment_tables_state_runs_and_spread_and_quick_runs_write_to_scratch() -> None:
    exp = _experiment_script()
    quick = exp.parse_args(["--quick"])
    assert quick.out == exp.SCRATCH and "results" not in quick.out.parts
    assert quick.repeats == 1 and quick.link_list == ["loopback", "shaped"]
    assert exp.parse_args([]).out.parts[-2:] == ("results", "cdtl")

    def one(protocol: str, link: str, ets: float, round_trips: int) -> dict[str, Any]:
        return {
            "experiment": "2", "protocol": protocol, "link": link, "rows": 435,
            "nominal_splits": "binary", "test_rows": 100, "wall_s": 1.0,
            "accuracy": {"cdtl": 0.9, "cnl": 0.95}, "client_seconds": {"cdtl": 1.0, "cnl": 1.0},
            "round_trips": {"cdtl": round_trips, "cnl": 102}, "subtrees_learned": 5,
            "ets": ets, "ets_cpu": ets, "ms": 0.4, "ms_held": 0.3,
            "ets_per_fold": [ets], "ms_per_fold": [0.4],
        }  # fmt: skip

    runs = {
        ("2", "shaped", "as-drawn"): [one("as-drawn", "shaped", x, 105) for x in (1.1, 1.3, 1.2)],
        ("2", "shaped", "optimised"): [one("optimised", "shaped", x, 100) for x in (0.9, 0.7)],
    }
    cells = {k: exp.combine(v) for k, v in runs.items()}
    md = exp.markdown(cells, exp.EXPERIMENTS, ["shaped"], ["as-drawn", "optimised"], ["hdr"])
    # the median of each cell with its lowest and highest, and the runs per cell
    assert "| 2 | shaped | 2/3 | 1.200 (1.100-1.300) | 0.800 (0.700-0.900) |" in md
    assert "| 1.050 | 1.000 |" in md  # round trips per prediction, as drawn and optimised
