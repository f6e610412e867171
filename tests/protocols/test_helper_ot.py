"""``--counts fast --helper ot``: PPID3's level driver with no third party, each product's
correlated randomness made by its two sites by oblivious transfer (``protocols.engine.ot_dealing``).

The tree equals plain ID3 (hypothesis over random tables with two and three sites, in memory;
car with two sites across processes); each site's ledger holds only what
``protocols.engine.ot_dealing``'s docstring lists, the requests it sees hold only public fields, and
the class site's permutations never leave it; the vector OTs and ring products add up.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import Partition, Table, partition, weather
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.transport import InMemoryNetwork
from parties.cli.main import build_parser
from parties.systems.ppid3 import Ppid3
from parties.systems.ppid3_summary import TRUST
from parties.systems.registry import get_system
from protocols.engine.ot_dealing import PUBLIC_FIELDS, leader_of
from protocols.ot import iknp, vector_ot

from .. import datasets
from ..conftest import run_mpc_json
from .test_ppid3 import _opened, tables
from .test_ppid3_levels import _assert_plain, run_levels

#: what a site may put on record with --helper ot (the class site also node counts and gains)
SITE_LABELS = {
    "ppid3/structure",
    "fast-counts/attribute-counts",
    "classify/instances",
    "levels/ot-request",
    "ot/base",
    "ot/vector",
    "ot/kept",
    "ot/one-hot-setup",
    "ot/one-hot-use",
}
CLASS_LABELS = {"ppid3/node-counts", "ppid3/best-gains"}


def _assert_ot_ledgers(out: dict[str, Any], part: Partition) -> None:
    for name, party in out["parties"].items():
        labels = set(party.ledger.labels())
        allowed = SITE_LABELS | (CLASS_LABELS if name == out["class_site"] else set())
        assert labels <= allowed, (name, labels - allowed)
        site = out["names"].index(name)
        for e in party.ledger.to_list():
            if e["label"] == "fast-counts/attribute-counts":
                assert set(e["value"]) <= set(part.sites[site])  # own attributes only
            if e["label"] == "levels/ot-request":  # a partner's request: public fields only
                assert set(e["value"]) <= {*PUBLIC_FIELDS, "site"} - {"tag"}, e
                assert e["value"]["site"] != name


# ----------------------------------------------------------------------------- equality


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables().filter(lambda case: case[1].k <= 3), st.sampled_from([None, 1, 2]))
def test_helper_ot_equals_plain_id3_and_the_dealer_on_random_tables(
    case: tuple[Table, Partition], max_depth: int | None
) -> None:
    table, part = case
    out = run_levels(table, part, max_depth=max_depth, helper="ot")
    assert "dealer" not in out["parties"]
    _assert_plain(out, table)
    _assert_ot_ledgers(out, part)
    dealt = run_levels(table, part, max_depth=max_depth, helper="dealer")
    for label in ("ppid3/node-counts", "ppid3/best-gains", "ppid3/structure"):
        assert _opened(out, label) == _opened(dealt, label), label


@pytest.mark.parametrize("k", [2, 3, 4])
def test_helper_ot_on_weather_with_any_number_of_sites(k: int) -> None:
    t = weather()
    part = partition(t.attributes, k, "round-robin", class_site=k // 2)
    out = run_levels(t, part, helper="ot")
    _assert_plain(out, t)
    _assert_ot_ledgers(out, part)


@pytest.mark.parametrize(("name", "k"), [("house-votes-84", 3), ("car", 2)])
def test_helper_ot_on_uci_tables_equals_plain_id3(name: str, k: int) -> None:
    t, _ = datasets.table(name)
    part = partition(t.attributes, k, "random:7")
    out = run_levels(t, part, helper="ot")
    _assert_plain(out, t)
    _assert_ot_ledgers(out, part)


def test_the_class_order_never_leaves_the_class_site() -> None:
    """The class site's permutations stay with it: no message carries them, and the only
    requests on the wire hold public fields."""
    t, _ = datasets.table("car")
    part = partition(t.attributes, 3, "round-robin", class_site=0)
    network = InMemoryNetwork()
    seen: list[tuple[str, str, Any]] = []

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if env.tag.startswith(("levels/ot/req/", "levels/ot/order/")):
            seen.append((sender, receiver, env.body))

    network.taps.append(tap)
    out = run_levels(t, part, max_depth=3, network=network, helper="ot")
    _assert_plain(out, t)
    kinds = {body["kind"] for _, _, body in seen if isinstance(body, dict)}
    assert kinds == {"xdot", "perm"}  # the products themselves need no request
    for sender, receiver, body in seen:
        if body == "done":
            continue
        assert set(body) <= {*PUBLIC_FIELDS, "site"}, body
        assert body["site"] in (sender, receiver)
        if body["kind"] == "perm":
            assert body["site"] == out["class_site"]
    # requests go to the leader; orders come from it
    names = out["names"]
    for sender, receiver, body in seen:
        if body != "done" and body["site"] == sender != leader_of(sender, receiver, names):
            assert receiver == leader_of(sender, receiver, names)


# ----------------------------------------------------------------------------- primitives


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize(("n", "width", "group"), [(1, 1, 1), (40, 3, 4), (9, 17, 3)])
def test_ring_products_add_up_to_the_grouped_products(
    dtype: Any, n: int, width: int, group: int
) -> None:
    rng = np.random.default_rng(n * width + group)
    info = np.iinfo(dtype)
    x = rng.integers(0, info.max, n * group, dtype=dtype, endpoint=True)
    ys = rng.integers(0, info.max, (n * group, width), dtype=dtype, endpoint=True)

    async def alice(p: Any) -> np.ndarray:
        s = await iknp.extension_sender(p, "bob")
        return await vector_ot.ring_products_send(p, s, ys, group=group)

    async def bob(p: Any) -> np.ndarray:
        r = await iknp.extension_receiver(p, "alice")
        return await vector_ot.ring_products_receive(p, r, x, width, group=group)

    res, parties = asyncio.run(
        run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}, timeout=20)
    )
    expected = (x[:, None] * ys).reshape(n, group, width).sum(axis=1, dtype=dtype)
    assert np.array_equal(res["alice"] + res["bob"], expected)
    assert set(parties["bob"].ledger.labels()) == {"ot/base", "ot/vector", "ot/ring-products"}


def test_vector_ots_give_the_chosen_pad() -> None:
    delta = np.arange(30, dtype=np.uint16).reshape(6, 5) * np.uint16(977)
    bits = np.array([0, 1, 1, 0, 1, 0], dtype=np.uint8)

    async def alice(p: Any) -> np.ndarray:
        s = await iknp.extension_sender(p, "bob")
        return await vector_ot.vector_ots_send(p, s, delta)

    async def bob(p: Any) -> np.ndarray:
        r = await iknp.extension_receiver(p, "alice")
        return await vector_ot.vector_ots_receive(p, r, bits, 5, np.uint16)

    res, _ = asyncio.run(run_in_memory(["alice", "bob"], {"alice": alice, "bob": bob}, timeout=20))
    assert np.array_equal(res["bob"], res["alice"] + bits[:, None].astype(np.uint16) * delta)
    assert len(np.unique(res["alice"])) > 20  # pads, not zeros


# ----------------------------------------------------------------------------- options


def _plan(*args: str) -> Any:
    ns = build_parser().parse_args(["run", "ppid3", *args])
    return get_system("ppid3").plan_from(ns)


@pytest.mark.parametrize("k", [2, 3])
def test_helper_ot_has_no_dealer_party(k: int) -> None:
    plan = _plan("--counts", "fast", "--sites", str(k), "--helper", "ot")
    assert plan.params["helper"] == "ot"
    assert [p.name for p in plan.parties] == [f"site{i + 1}" for i in range(k)]


# ----------------------------------------------------------------------------- processes


@pytest.mark.datasets
@pytest.mark.processes
@pytest.mark.timeout(300)
def test_mpc_run_with_helper_ot_on_two_sites_equals_plain_id3() -> None:
    """With two sites and no --helper, fast counts take ot, and the report says so."""
    datasets.needs("car")
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "car", "--counts", "fast", "--reveal", "counts",
        "--sites", "2", "--timeout", "60", deadline=280,
    )  # fmt: skip
    assert code == 0 and doc["ok"], {n: p["error"] for n, p in doc["parties"].items()}
    r = doc["result"]
    assert r["identical"] is True and r["helper"] == "ot"
    assert r["trust"] == TRUST["ot"]
    (trust,) = [line for line in Ppid3().summary(r) if line.startswith("trust:")]
    assert trust.endswith(f"{TRUST['ot']} (--helper ot)")
    assert r["accuracy"]["train"] == r["plain_accuracy"]["train"]
    assert set(doc["parties"]) == {"site1", "site2"}
    for name, p in doc["parties"].items():
        labels = {e["label"] for e in p["ledger"]}
        allowed = SITE_LABELS | {
            "record-alignment/sizes",
            "record-alignment/common",
            "record-alignment/order",
            "psi-ca/set-sizes",
            "psi-ca/counts",
        }
        if name == r["partition"]["site_names"][r["partition"]["class_site"]]:
            allowed |= CLASS_LABELS
        assert labels <= allowed, (name, labels - allowed)
        assert {"ot/base", "ot/vector", "levels/ot-request"} <= labels
