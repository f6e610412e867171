"""The class order in PPID3 (Vaidya & Clifton, Section 1): a site other than the class site
must not be able to follow one class from node to node. The class site puts its per-class
items in a fresh random order at every node, for every count backend; this module watches
what the other site sees and checks that the order changes between nodes, that the counts
stay exact, and that the dealer of the secret-sharing backends records everything it receives.

Every check that the order varies is a test that can fail: with the order fixed (the classes
sorted, as a naive implementation submits them) every node shows the same order. Under a
fresh uniform permutation per node the bound on a false failure is stated where it is made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from mpc.datasets import Partition, Table
from mpc.runtime.codec import decode
from mpc.runtime.transport import InMemoryNetwork
from protocols.engine.dealing import WITHHELD_FIELDS, request_record

from .test_ppid3 import _assert_equal_to_plain, run_ppid3
from .test_ppid3_levels import run_levels

#: the class site's classes, each with a distinct number of rows (so the class of a column can
#: be told from a node's class distribution, and the class of a set from its size)
CLASS_ROWS = {"c0": 30, "c1": 50, "c2": 70}
CLASSES = sorted(CLASS_ROWS)
#: nodes on which an order must be observed before the check is made (see the bounds below)
MIN_NODES = 30


def _table(seed: int = 11) -> tuple[Table, Partition]:
    """site1 holds five random 4-valued attributes; site2, the class site, the class and one
    constant attribute, which site1 wins every tie against: site2 never constrains a path, so
    its per-class sets have the sizes of :data:`CLASS_ROWS` at every node."""
    rng = np.random.default_rng(seed)
    n = sum(CLASS_ROWS.values())
    y = np.array([c for c in CLASSES for _ in range(CLASS_ROWS[c])], dtype=object)
    y = y[rng.permutation(n)]
    attrs = (*(f"a{j}" for j in range(5)), "k")
    random_columns = [np.array([f"a{j}-{v}" for v in rng.integers(0, 4, n)], dtype=object)
                      for j in range(5)]  # fmt: skip
    cols = (*random_columns, np.array(["k-0"] * n, dtype=object))
    table = Table("class-order", attrs, ("nominal",) * 6, cols, y, "label", "test")
    return table, Partition(sites=(tuple(attrs[:5]), ("k",)), class_site=1)


def _node_counts(out: dict[str, Any]) -> dict[int, list[int]]:
    """The class site's class distribution of every node (number -> counts, classes sorted)."""
    cls = out["parties"][out["class_site"]]
    return {e["value"]["node"]: [e["value"]["counts"][c] for c in CLASSES]
            for e in cls.ledger.to_list() if e["label"] == "ppid3/node-counts"}  # fmt: skip


def _bfs_to_dfs(structure: list[dict[str, Any]]) -> dict[int, int]:
    """The level driver's node keys (breadth first, children in order) -> the depth-first
    node numbers of the public structure."""
    records = iter(structure)
    children: dict[int, list[int]] = {}

    def walk() -> int:
        rec = next(records)
        number = int(rec["node"])
        children[number] = [] if rec["leaf"] else [walk() for _ in range(rec["children"])]
        return number

    queue = [walk()]
    for number in queue:
        queue.extend(children[number])
    return {key: number for key, number in enumerate(queue)}


def _owner_matrices(out: dict[str, Any], backend: str) -> Iterator[tuple[int, np.ndarray]]:
    """Every count matrix site1 (the owner, not the class site) opened: (node, values x p)."""
    site1 = out["parties"]["site1"].ledger.to_list()
    if backend == "psi":
        for e in site1:
            if e["label"] == "psi-ca/counts" and str(e["value"]["group"]).startswith("site1#"):
                yield int(e["step"].split("/")[1][1:]), np.asarray(e["value"]["counts"])
        return
    numbers: dict[int, int] | None = None
    if backend == "levels":
        structure = next(e["value"] for e in site1 if e["label"] == "ppid3/structure")
        numbers = _bfs_to_dfs(structure)
    for e in site1:
        if e["label"] != "fast-counts/attribute-counts":
            continue
        node = int(e["step"].rsplit("/n", 1)[1].split("/")[0])
        for matrix in e["value"].values():
            yield (numbers[node] if numbers else node), np.asarray(matrix)


def _orders_seen(out: dict[str, Any], backend: str) -> list[tuple[int, ...]]:
    """For every node whose class counts are pairwise distinct, the class order of site1's
    matrices there: position ``i`` holds the class whose count is the ``i``-th column sum.
    Checks on the way that the column sums are the node's class distribution (exact)."""
    truth = _node_counts(out)
    orders: dict[int, tuple[int, ...]] = {}
    for node, matrix in _owner_matrices(out, backend):
        sums = [int(x) for x in matrix.sum(axis=0)]
        assert sorted(sums) == sorted(truth[node]), (backend, node, sums, truth[node])
        if len(set(truth[node])) == len(CLASSES):
            order = tuple(truth[node].index(x) for x in sums)
            assert orders.setdefault(node, order) == order  # one order per node and call
    return list(orders.values())


def _assert_order_varies(orders: list[tuple[int, ...]], what: str) -> None:
    """The class order is not the same at every node, and class ``c0`` is not always at
    the same position. Under a fresh uniform permutation of 3 classes per node, N nodes all
    show one order with probability ``6^(1-N)`` and ``c0`` keeps its position with
    probability ``3^(1-N)``; with ``N >= MIN_NODES = 30`` both are below ``1e-13``. With a
    fixed order, both checks fail."""
    assert len(orders) >= MIN_NODES, (what, len(orders))
    assert len(set(orders)) > 1, f"{what}: the classes came in the same order at every node"
    positions = {order.index(0) for order in orders}
    assert len(positions) > 1, f"{what}: class c0 was at position {positions} at every node"


def test_psi_class_sets_come_in_a_fresh_order_at_every_node() -> None:
    """``--counts psi``: the class site's per-class sets, whose sizes site1 sees on the wire,
    and site1's count matrices are in a fresh class order per node."""
    table, part = _table()
    sizes: list[tuple[int, ...]] = []
    network = InMemoryNetwork()

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        # with two sites, site1 receives site2's own sets at the first hop
        if receiver == "site1" and env.tag.endswith("/dc/hop1"):
            sizes.append(tuple(len(s) for s in env.body[0]))

    network.taps.append(tap)
    out = run_ppid3(table, part, max_depth=4, network=network)
    _assert_equal_to_plain(out, table)
    rows = [CLASS_ROWS[c] for c in CLASSES]
    assert all(sorted(s) == sorted(rows) for s in sizes)  # site2 never constrains a path
    _assert_order_varies([tuple(rows.index(x) for x in s) for s in sizes], "set sizes")
    _assert_order_varies(_orders_seen(out, "psi"), "psi counts")


def test_levels_owner_gets_a_fresh_class_order_at_every_node() -> None:
    """``--counts fast`` as ``mpc run`` runs it: the level driver."""
    table, part = _table()
    out = run_levels(table, part, max_depth=4)
    _assert_equal_to_plain(out, table)
    _assert_order_varies(_orders_seen(out, "levels"), "levels")


# ----------------------------------------------------------------------------- the dealer


def _leaves(obj: Any) -> Iterator[Any]:
    if isinstance(obj, list | tuple):
        for x in obj:
            yield from _leaves(x)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _leaves(v)
    else:
        yield obj


def _assert_dealer_ledger_is_what_it_received(
    received: list[tuple[str, Any]], out: dict[str, Any], n_rows: int
) -> None:
    """Every request the dealer received is on its ledger, field for field, in the order it
    was served (the randomness fields named under ``withheld``); every ``done`` too; the
    ledger holds nothing else. No request carries an array or a string other than the
    public names, so no row and no count of a site reaches the dealer."""
    dealer = out["parties"]["dealer"].ledger.to_list()
    requests = [(e["step"], e["value"]) for e in dealer if e["label"] == "fast-counts/request"]
    done = [e["value"] for e in dealer if e["label"] == "fast-counts/done"]
    assert len(requests) + len(done) == len(dealer)
    want = []
    for site, body in received:
        if body == "done":
            continue
        want.append((body["tag"], request_record(site, body)))
        for key, value in body.items():
            if key in WITHHELD_FIELDS:
                continue
            for x in _leaves(value):
                assert isinstance(x, int | str) and not isinstance(x, bool), (key, x)
                if isinstance(x, str):
                    assert key in ("kind", "peer", "tag"), (key, x)
                else:
                    assert 0 <= x <= n_rows, (key, x)  # a shape, index or size, not a row
    assert sorted(map(repr, requests)) == sorted(map(repr, want))
    # the ledger names what it withholds, and holds the fields a site's request carries
    kinds = {v["kind"] for _, v in requests}
    assert {"perm", "xdot"} <= kinds, kinds
    assert all(v["withheld"] == ["perms"] for _, v in requests if v["kind"] == "perm")
    assert all(isinstance(v["site"], str) and isinstance(v["peer"], str) for _, v in requests)
    assert sorted(d["site"] for d in done) == sorted(s for s, b in received if b == "done")


def _tap_dealer(network: InMemoryNetwork, received: list[tuple[str, Any]]) -> None:
    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        if receiver == "dealer":
            env = decode(frames)
            if env.tag.startswith(("fast/req/", "levels/req/")):
                received.append((sender, env.body))

    network.taps.append(tap)


def test_the_level_dealer_records_everything_it_receives() -> None:
    """Shapes, fan-outs (``parents``), domain sizes (``blocks``), the number of classes, the
    pair of sites of every product, and the permutations' and seeds' arrival."""
    table, part = _table()
    received: list[tuple[str, Any]] = []
    network = InMemoryNetwork()
    _tap_dealer(network, received)
    out = run_levels(table, part, max_depth=3, network=network)
    _assert_equal_to_plain(out, table)
    _assert_dealer_ledger_is_what_it_received(received, out, table.n_rows)
    kinds = {b["kind"] for _, b in received if isinstance(b, dict)}
    assert kinds == {"outer", "xdot", "perm"}
    outer = next(b for _, b in received if isinstance(b, dict) and b["kind"] == "outer")
    ledger = [e["value"] for e in out["parties"]["dealer"].ledger.to_list()
              if e["label"] == "fast-counts/request" and e["value"]["kind"] == "outer"]  # fmt: skip
    assert any(v["parents"] == outer["parents"] for v in ledger)  # the fan-outs
