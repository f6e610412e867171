"""``--counts fast --helper sites``: PPID3's level driver with no party but the sites, each
product's correlated randomness dealt by a third site (``protocols.engine.dealing``).

The tree equals plain ID3 (hypothesis, in memory; house-votes-84 and car across processes);
a helping site's ledger holds only what ``protocols.ppid3.levels``' docstring lists, and
exactly the requests it received; the sites together see the very requests the dealer sees
with ``--helper dealer``; the class order a helping site deals for another owner is not its
own; the holders' zero-sharing hides each holder's part; a killed helping site ends every
party, each naming it.
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import Partition, Table, partition, weather
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.codec import decode
from mpc.runtime.transport import InMemoryNetwork
from parties.cli.main import build_parser
from parties.systems.ppid3 import Ppid3
from parties.systems.ppid3_summary import TRUST
from parties.systems.registry import get_system
from protocols.engine.dealing import (
    WITHHELD_FIELDS,
    request_record,
    requesters_of,
    run_beside,
    third_site,
)
from protocols.ppid3.level_products import zero_share

from .. import datasets
from ..conftest import processes_mentioning, run_mpc_json
from ..harness import Parties, plan_deployment
from .test_class_order import _bfs_to_dfs
from .test_ppid3 import _opened, tables
from .test_ppid3_levels import _assert_plain, run_levels

#: what a site may put on record with --helper sites (the class site also node counts and gains)
SITE_LABELS = {
    "ppid3/structure",
    "fast-counts/attribute-counts",
    "classify/instances",
    "fast-counts/helped",
    "fast-counts/done",
}
CLASS_LABELS = {"ppid3/node-counts", "ppid3/best-gains"}
#: request fields, by kind: all public shapes, or randomness named under "withheld"
FIELDS = {
    "outer": {"site", "kind", "peer", "shape", "parents"},
    "xdot": {"site", "kind", "peer", "shape", "blocks", "p", "context"},
    "perm": {"site", "kind", "peer", "shape"},
}


def _tap_requests(network: InMemoryNetwork, received: list[tuple[str, str, Any]]) -> None:
    """Every request for correlated randomness on the wire: (requester, dealing party, body)."""

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if env.tag.startswith("levels/req/"):
            received.append((sender, receiver, env.body))

    network.taps.append(tap)


def _assert_site_ledgers(out: dict[str, Any], part: Partition) -> None:
    for name, party in out["parties"].items():
        labels = set(party.ledger.labels())
        allowed = SITE_LABELS | (CLASS_LABELS if name == out["class_site"] else set())
        assert labels <= allowed, (name, labels - allowed)
        site = out["names"].index(name)
        for e in party.ledger.to_list():
            if e["label"] == "fast-counts/attribute-counts":
                assert set(e["value"]) <= set(part.sites[site])  # own attributes only


# ----------------------------------------------------------------------------- equality


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables().filter(lambda case: case[1].k >= 3), st.sampled_from([None, 1, 2]))
def test_helper_sites_equal_plain_id3_and_the_dealer_on_random_tables(
    case: tuple[Table, Partition], max_depth: int | None
) -> None:
    table, part = case
    out = run_levels(table, part, max_depth=max_depth, helper="sites")
    assert "dealer" not in out["parties"]
    _assert_plain(out, table)
    _assert_site_ledgers(out, part)
    dealt = run_levels(table, part, max_depth=max_depth, helper="dealer")
    for label in ("ppid3/node-counts", "ppid3/best-gains", "ppid3/structure"):
        assert _opened(out, label) == _opened(dealt, label), label


@pytest.mark.parametrize("k", [3, 4, 5])
def test_helper_sites_with_more_sites_and_a_middle_class_site(k: int) -> None:
    t, _ = datasets.table("car")
    part = partition(t.attributes, k, "round-robin", class_site=1)
    out = run_levels(t, part, max_depth=4, helper="sites")
    _assert_plain(out, t)
    _assert_site_ledgers(out, part)
    # with more than three sites, the pairs spread over the helpers: no site deals them all
    helped = Counter(n for n, p in out["parties"].items() for label in p.ledger.labels()
                     if label == "fast-counts/helped")  # fmt: skip
    assert len(helped) >= 3, helped


# ----------------------------------------------------------------------------- the ledger


def test_a_helping_site_records_exactly_the_requests_it_received() -> None:
    """Each helping site's ``fast-counts/helped`` entries are the requests addressed to it,
    field for field (randomness named under ``withheld``, never copied), and hold nothing
    but names and public numbers: rows, classes, fan-outs, domain sizes. It is never a party
    of a product it deals, never deals the class site's permuted openings as the class site,
    and the three sites together see exactly the requests the dealer sees with
    ``--helper dealer``."""
    t = weather()
    part = partition(t.attributes, 3, class_site=2)
    received: list[tuple[str, str, Any]] = []
    network = InMemoryNetwork()
    _tap_requests(network, received)
    out = run_levels(t, part, helper="sites", network=network)
    _assert_plain(out, t)
    _assert_site_ledgers(out, part)
    names, class_site = out["names"], out["class_site"]
    domains = {a: len(set(c)) for a, c in zip(t.attributes, t.columns, strict=True)}
    helped_all = []
    for helper in names:
        ledger = out["parties"][helper].ledger.to_list()
        helped = [(e["step"], e["value"]) for e in ledger if e["label"] == "fast-counts/helped"]
        done = [e["value"] for e in ledger if e["label"] == "fast-counts/done"]
        mine = [(s, b) for s, r, b in received if r == helper]
        want = [(b["tag"], request_record(s, b)) for s, b in mine if b != "done"]
        assert sorted(map(repr, helped)) == sorted(map(repr, want)), helper
        assert sorted(d["site"] for d in done) == sorted(s for s, b in mine if b == "done")
        assert sorted(d["site"] for d in done) == requesters_of(helper, names)
        for step, v in helped:
            assert helper not in (v["site"], v["peer"]), (helper, v)
            assert third_site(v["site"], v["peer"], names) == helper
            assert set(v) - {"withheld"} <= FIELDS[v["kind"]], v
            assert set(v.get("withheld", [])) <= set(WITHHELD_FIELDS)
            if v["kind"] != "perm":  # the number of rows, public after record alignment
                assert v["shape"][0 if v["kind"] == "outer" else 1] == t.n_rows
            for x in v["shape"] + v.get("parents", []):
                assert isinstance(x, int) and not isinstance(x, bool) and x >= 0, (step, v)
            if v["kind"] == "xdot":  # the owner's domain sizes (public in PPID3) and classes
                owner = names.index(v["site"])
                assert v["blocks"] == [domains[a] for a in part.sites[owner]]
                assert v["p"] == 2
            if v["kind"] == "perm":  # asked by the class site; dealt by neither party
                assert v["site"] == class_site and v["withheld"] == ["perms"]
                assert helper != class_site
        helped_all += helped
    assert {v["kind"] for _, v in helped_all} == {"outer", "xdot", "perm"}
    # the same requests as the dealer receives with --helper dealer
    dealt = run_levels(t, part, helper="dealer")
    requests = [(e["step"], e["value"]) for e in dealt["parties"]["dealer"].ledger.to_list()
                if e["label"] == "fast-counts/request"]  # fmt: skip
    assert sorted(map(repr, helped_all)) == sorted(map(repr, requests))


# ----------------------------------------------------------------------------- class order


#: three classes, each a distinct number of rows, so a column's class shows in its sum
CLASS_ROWS = {"c0": 30, "c1": 50, "c2": 70}


def _order_table(seed: int = 3) -> tuple[Table, Partition]:
    """site1 and site2 each hold three random 4-valued attributes, site3 (the class site)
    one; to depth 3 both have attributes left at every interior node."""
    rng = np.random.default_rng(seed)
    n = sum(CLASS_ROWS.values())
    y = np.array([c for c, k in CLASS_ROWS.items() for _ in range(k)], dtype=object)
    y = y[rng.permutation(n)]
    attrs = [f"a{j}" for j in range(7)]
    cols = [np.array([f"{a}-{v}" for v in rng.integers(0, 4, n)], dtype=object) for a in attrs]
    table = Table("order", attrs, ["nominal"] * 7, cols, y, "label", "test")
    return table, Partition(sites=(tuple(attrs[:3]), tuple(attrs[3:6]), (attrs[6],)),
                            class_site=2)  # fmt: skip


def test_a_helping_site_never_deals_its_own_class_order() -> None:
    """The class site draws the class order per node *and per owner*. site2 deals the
    permuted openings of site1's counts (the third site of site1 and the class site), so it
    knows site1's order at every node; its own counts there come in an order drawn apart.
    With one order per node, the order site2 dealt would undo its own at every node; here
    they agree at a node with probability 1/6 only (and the test needs at least 10 nodes
    whose class counts tell the order: a false failure below 6^-10)."""
    table, part = _order_table()
    received: list[tuple[str, str, Any]] = []
    network = InMemoryNetwork()
    _tap_requests(network, received)
    out = run_levels(table, part, max_depth=3, helper="sites", network=network)
    _assert_plain(out, table)
    classes = sorted(CLASS_ROWS)
    cls = out["parties"]["site3"].ledger.to_list()
    truth = {e["value"]["node"]: [e["value"]["counts"][c] for c in classes]
             for e in cls if e["label"] == "ppid3/node-counts"}  # fmt: skip
    site2 = out["parties"]["site2"].ledger.to_list()
    numbers = _bfs_to_dfs(next(e["value"] for e in site2 if e["label"] == "ppid3/structure"))
    # site2's own order at each node, from its opened counts: column i holds class own[i]
    own: dict[str, list[tuple[int, tuple[int, ...] | None]]] = {}
    for e in site2:
        if e["label"] == "fast-counts/attribute-counts":
            level, node = e["step"].split("/")[1], int(e["step"].rsplit("/n", 1)[1])
            counts = truth[numbers[node]]
            sums = [int(x) for x in np.asarray(next(iter(e["value"].values()))).sum(axis=0)]
            order = tuple(counts.index(x) for x in sums) if len(set(counts)) == 3 else None
            own.setdefault(level, []).append((node, order))
    # the orders of site1's counts that the class site asked site2 to deal, level by level
    dealt = {b["tag"].split("/")[1]: b["perms"] for s, r, b in received
             if r == "site2" and isinstance(b, dict) and b["kind"] == "perm"}  # fmt: skip
    assert all(s == "site3" for s, r, b in received if r == "site2" and b != "done"
               and b["kind"] == "perm")  # fmt: skip
    pairs = []
    for level, nodes in own.items():
        assert len(dealt[level]) == len(nodes), level  # both owners at every interior node
        for (_, order), perm in zip(nodes, dealt[level], strict=True):
            if order is not None:
                pairs.append((order, tuple(perm)))
    assert len(pairs) >= 10, len(pairs)
    assert any(mine != theirs for mine, theirs in pairs), "site2 dealt its own class order"


def test_every_holder_blinds_its_part_for_an_owner_with_two_other_holders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where a node has two or more holders besides the owner of the counts, each of them
    adds its part of one zero-sharing (same label, the same set of holders) to the share it
    transfers, so the owner opens only their sum; the sum is zero, so the counts, and the
    tree, are exact."""
    import protocols.ppid3.level_products as levels

    calls: list[tuple[str, tuple[str, ...], str]] = []
    real = levels.zero_share

    def spy(me: str, others: Any, keys: Any, label: str, *args: Any, **kw: Any) -> Any:
        calls.append((me, tuple(others), label))
        return real(me, others, keys, label, *args, **kw)

    monkeypatch.setattr(levels, "zero_share", spy)
    table, part = _order_table()
    out = run_levels(table, part, max_depth=3, helper="sites")
    _assert_plain(out, table)
    by_label: dict[str, set[frozenset[str]]] = {}
    for me, others, label in calls:
        by_label.setdefault(label, set()).add(frozenset((me, *others)))
    assert len(by_label) > 10, len(by_label)
    for label, groups in by_label.items():
        assert len(groups) == 1, (label, groups)  # every holder names the same group
        (group,) = groups
        assert len(group) >= 2
        holders = [me for me, _, lab in calls if lab == label]
        assert sorted(holders) == sorted(group), (label, holders)  # each holder adds its part


# ----------------------------------------------------------------------------- pure parts


def test_third_site_is_neither_party_and_spreads_the_pairs() -> None:
    for k in range(3, 8):
        sites = [f"s{i}" for i in range(k)]
        load: Counter[str] = Counter()
        for i, a in enumerate(sites):
            for b in sites[i + 1 :]:
                h = third_site(a, b, sites)
                assert h in sites and h not in (a, b)
                assert third_site(b, a, sites) == h  # the same rule from both sides
                load[h] += 1
        # every site deals, the pairs evenly: loads differ by one at most
        assert set(load) == set(sites) and max(load.values()) - min(load.values()) <= 1, load
        for me in sites:
            assert set(requesters_of(me, sites)) == {
                a for a in sites for b in sites if a != b and me not in (a, b)
                and third_site(a, b, sites) == me
            }  # fmt: skip
    with pytest.raises(ConfigError, match="at least 3 sites"):
        third_site("s0", "s1", ["s0", "s1"])
    with pytest.raises(ConfigError):
        third_site("s0", "s0", ["s0", "s1", "s2"])


@given(st.integers(2, 5), st.integers(1, 50), st.sampled_from([np.uint16, np.uint32]))
def test_the_holders_zero_sharing_sums_to_zero(k: int, size: int, dtype: Any) -> None:
    import secrets

    names = [f"h{i}" for i in range(k)]
    keys = {frozenset((a, b)): secrets.token_bytes(32) for a in names for b in names if a != b}
    parts = [
        zero_share(me, [o for o in names if o != me],
                   {o: keys[frozenset((me, o))] for o in names if o != me},
                   "L1/z0/n4", (size, 3), dtype, order=names)
        for me in names
    ]  # fmt: skip
    assert not np.any(np.sum(np.stack(parts), axis=0, dtype=dtype))
    assert all(p.dtype == dtype for p in parts)
    if size >= 20:  # each part alone is masked: not zero
        assert all(np.any(p) for p in parts)


def test_run_beside_ends_the_site_when_its_dealing_fails() -> None:
    """A malformed request makes the helping task fail: the site's own program, waiting on
    something else, is cancelled and the error is raised at once, not at a deadline."""
    waited: list[str] = []

    async def main() -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            waited.append("cancelled")
            raise
        return "never"

    async def service() -> int:
        await asyncio.sleep(0.01)
        raise ProtocolError("site1 sent site2 a request without kind or tag")

    async def both() -> Any:
        return await asyncio.wait_for(run_beside(main(), service()), 5)

    with pytest.raises(ProtocolError, match="without kind"):
        asyncio.run(both())
    assert waited == ["cancelled"]

    async def fine() -> int:
        return 7

    async def ok() -> str:
        return "tree"

    assert asyncio.run(run_beside(ok(), fine())) == ("tree", 7)


# ----------------------------------------------------------------------------- the options


def _plan(*args: str) -> Any:
    ns = build_parser().parse_args(["run", "ppid3", *args])
    return get_system("ppid3").plan_from(ns)


def test_fast_counts_pick_the_helper_by_the_number_of_sites() -> None:
    plan = _plan("--counts", "fast", "--sites", "3")
    assert plan.params["helper"] == "sites"
    assert [p.name for p in plan.parties] == ["site1", "site2", "site3"]
    plan = _plan("--counts", "fast", "--sites", "2")  # dealer-free with two sites too
    assert plan.params["helper"] == "ot"
    assert [p.name for p in plan.parties] == ["site1", "site2"]
    plan = _plan("--counts", "fast", "--sites", "2", "--helper", "dealer")
    assert [p.name for p in plan.parties] == ["site1", "site2", "dealer"]
    plan = _plan("--counts", "fast", "--sites", "3", "--helper", "dealer")
    assert plan.params["helper"] == "dealer" and plan.parties[-1].role == "dealer"
    plan = _plan("--sites", "3", "--helper", "dealer", "--counts", "psi")  # psi needs none
    assert "helper" not in plan.params and len(plan.parties) == 3
    with pytest.raises(ConfigError, match=r"--helper sites needs at least 3 sites.*--helper ot"):
        _plan("--counts", "fast", "--sites", "2", "--helper", "sites")


def test_the_default_run_opens_only_the_tree_and_the_paper_s_is_one_flag_away() -> None:
    """No flag: counts on shares, only the tree opened, the helper needing no outside party;
    ``--counts psi`` alone is the paper's PPID3 (its counts opened); ``--reveal tree`` with
    ``--counts psi`` is a contradiction, refused."""
    for k, helper in ((2, "ot"), (3, "sites")):
        params = _plan("--sites", str(k)).params
        assert (params["counts"], params["reveal"], params["helper"]) == ("fast", "tree", helper)
        assert params["criterion"] == "gini"
    params = _plan("--sites", "3", "--counts", "psi").params
    assert (params["counts"], params["reveal"]) == ("psi", "counts") and "helper" not in params
    params = _plan("--sites", "3", "--reveal", "counts").params
    assert (params["counts"], params["reveal"]) == ("fast", "counts")
    with pytest.raises(ConfigError, match="--reveal tree computes every count on shares"):
        _plan("--sites", "3", "--counts", "psi", "--reveal", "tree")
    deploy = ["deploy", "ppid3", "--partition", "a;b", "--class", "c", "--out", "unused"]
    params = get_system("ppid3").plan_from(build_parser().parse_args(deploy), deploy=True).params
    assert (params["counts"], params["reveal"]) == ("fast", "tree")


# ----------------------------------------------------------------------------- processes


@pytest.mark.datasets
@pytest.mark.processes
@pytest.mark.timeout(400)
@pytest.mark.parametrize("dataset", ["house-votes-84", "car"])
def test_mpc_run_with_helper_sites_equals_plain_id3(dataset: str) -> None:
    """On house-votes-84 --helper sites is named; on car it is the default with 3 sites, and
    the report's trust line names it."""
    datasets.needs(dataset)
    named = ["--helper", "sites"] if dataset == "house-votes-84" else []
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", dataset, "--counts", "fast", "--reveal", "counts",
        *named, "--sites", "3", "--timeout", "60", deadline=380,
    )  # fmt: skip
    assert code == 0 and doc["ok"], {n: p["error"] for n, p in doc["parties"].items()}
    r = doc["result"]
    assert r["identical"] is True and r["helper"] == "sites"
    assert r["trust"] == TRUST["sites"]
    (trust,) = [line for line in Ppid3().summary(r) if line.startswith("trust:")]
    assert trust.endswith(f"{TRUST['sites']} (--helper sites)")
    assert r["accuracy"]["train"] == r["plain_accuracy"]["train"]
    assert set(doc["parties"]) == {"site1", "site2", "site3"}
    assert r["cost"]["dealt_by_sites"] > 0
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
        assert "fast-counts/helped" in labels  # with three sites, every site deals
        assert p["result"]["cost"]["dealt"] > 0


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_each_site_started_by_hand_from_the_deployment_file(tmp_path: Path) -> None:
    """The per-party form (``python -m parties site --config ...``) with ``helper = "sites"``
    in the deployment file's protocol params and no dealer party in it."""
    config, roles = plan_deployment(
        tmp_path, "ppid3", "--sites", "3", "--counts", "fast", timeout=30
    )
    assert roles == {"site1": "site", "site2": "site", "site3": "site"}
    assert 'helper = "sites"' in config.read_text()
    with Parties(config, roles) as run:
        for name in roles:
            run.start(name)
        codes = run.wait(list(roles), deadline=90)
        assert codes == dict.fromkeys(roles, 0), {n: run.log(n) for n in roles}
        for name in roles:
            report = run.report(name)
            assert report["ok"] and "fast-counts/helped" in {e["label"] for e in report["ledger"]}


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_a_killed_helping_site_ends_every_party_naming_it(tmp_path: Path) -> None:
    """site1 deals the products between site2 and site3 (and its own with them are dealt by
    them); killed after 60 of the ~190 messages it sends on car, mid-training, it leaves both
    others waiting on it, as a partner or as their dealer: each ends within the deadline,
    with an error naming site1."""
    datasets.needs("car")
    keep = tmp_path / "run"
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "car", "--counts", "fast", "--reveal", "counts",
        "--helper", "sites", "--sites", "3", "--kill", "site1", "--after", "60", "--timeout", "5",
        "--keep", str(keep), deadline=100,
    )  # fmt: skip
    assert code == 1 and doc["ok"] is False
    parties = doc["parties"]
    assert set(parties) == {"site1", "site2", "site3"}
    assert parties["site1"]["exit_code"] == -signal.SIGKILL
    for name in ("site2", "site3"):
        p = parties[name]
        assert p["exit_code"] == 1, p
        err = p["error"]
        assert err["type"] in ("PeerLost", "PeerAborted"), err
        assert err["peer"] == "site1" and "site1" in err["message"], err
        assert err["step"].startswith(("ppid3/", "levels/req/")), err
        # training had begun: at the root, site2's counts with site3's share were dealt by
        # site1 (the third site of site2 and site3), so site1 died a helping site
        assert "fast-counts/attribute-counts" in {e["label"] for e in p["ledger"]}, p
    assert processes_mentioning(str(keep)) == []
