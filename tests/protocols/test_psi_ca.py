"""PSI-CA: count tensors equal plain intersection sizes, ledgers hold only sizes and the
receivers' counts, the wire carries only encrypted 32-byte rows, malformed bundles are refused,
and the ``psi-ca`` system runs across processes."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from mpc.crypto.curve25519 import X25519Key, hash_ids
from mpc.errors import ConfigError, MPCError, ProtocolError
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork
from mpc.runtime.view import public as _public
from parties.cli.main import build_parser
from parties.systems.psi_ca import random_sets, read_set_file
from parties.systems.registry import get_system
from protocols.primitives.psi_ca import (
    GroupInput,
    _check_bundle,
    count_tensor,
    os_permutation,
    set_intersection_cardinality,
)

from ..conftest import run_mpc, run_mpc_json

#: the receipt of this test's own messages
ANY = _public("test/message", "a message of this test")

#: elements are drawn from range(UNIVERSE), small enough for intersections to be common
UNIVERSE = 24
#: per party, per group: a list of pairwise disjoint sets of element ids
Sets = list[list[int]]


def names(k: int) -> list[str]:
    return [f"p{i + 1}" for i in range(k)]


def plain_counts(sets_by_party: list[Sets]) -> np.ndarray:
    shape = tuple(len(sets) for sets in sets_by_party)
    out = np.zeros(shape, dtype=np.int64)
    for idx in itertools.product(*(range(m) for m in shape)):
        chosen = [set(sets_by_party[p][j]) for p, j in enumerate(idx)]
        out[idx] = len(set.intersection(*chosen))
    return out


def run_groups(
    groups: list[list[Sets]],
    receivers: list[str],
    *,
    network: InMemoryNetwork | None = None,
) -> tuple[dict[str, Any], dict[str, Party]]:
    """``groups[g][i]`` is party i's sets of group g; run one batched invocation."""
    k = len(groups[0])
    ns = names(k)

    async def program(p: Party) -> Any:
        i = ns.index(p.name)
        inputs = [
            GroupInput(receivers[g], [hash_ids(s) for s in groups[g][i]], label=f"g{g}")
            for g in range(len(groups))
        ]
        return await set_intersection_cardinality(p, inputs)

    return asyncio.run(run_in_memory(ns, program, network=network))


@st.composite
def disjoint_sets(draw: st.DrawFn) -> Sets:
    """One party's sets of one group: 1-3 pairwise disjoint subsets of range(UNIVERSE)."""
    m = draw(st.integers(1, 3))
    owner = draw(st.lists(st.integers(-1, m - 1), min_size=UNIVERSE, max_size=UNIVERSE))
    return [[e for e, o in enumerate(owner) if o == j] for j in range(m)]


# --------------------------------------------------------------------------- correctness


@settings(max_examples=30, deadline=None)
@given(data=st.data(), k=st.integers(2, 5))
def test_count_tensors_equal_the_plain_intersection_sizes(data: st.DataObject, k: int) -> None:
    groups = [data.draw(st.lists(disjoint_sets(), min_size=k, max_size=k)) for _ in range(2)]
    receivers = data.draw(st.lists(st.sampled_from(names(k)), min_size=2, max_size=2, unique=True))
    results, parties = run_groups(groups, receivers)
    for name in names(k):
        for g, receiver in enumerate(receivers):
            got = results[name][g]
            if name != receiver:
                assert got is None, (name, g)
                continue
            np.testing.assert_array_equal(got, plain_counts(groups[g]))
        labels = parties[name].ledger.labels()
        assert labels.count("psi-ca/counts") == receivers.count(name)


def test_empty_sets_and_an_empty_intersection() -> None:
    groups = [[[[]], [[1, 2]]], [[[1], [2]], [[3, 4]]]]
    results, _ = run_groups(groups, ["p1", "p2"])
    assert results["p1"][0].tolist() == [[0]]
    assert results["p2"][1].tolist() == [[0], [0]]


# --------------------------------------------------------------------------- ledger


def test_ledgers_hold_only_set_sizes_and_the_receivers_counts() -> None:
    groups = [
        [[[0, 1, 2], [3, 4]], [[1, 2, 3, 9]], [[2, 3], [1], [7]]],
        [[[5, 6, 7]], [[5, 6]], [[6, 7, 8], [5]]],
    ]
    results, parties = run_groups(groups, ["p1", "p3"])
    sizes = {
        name: [[len(s) for s in groups[g][i]] for g in range(2)] for i, name in enumerate(names(3))
    }
    for name, party in parties.items():
        entries = party.ledger.to_list()
        expected = ["psi-ca/set-sizes"] + (["psi-ca/counts"] if name in ("p1", "p3") else [])
        assert [e["label"] for e in entries] == expected, name
        assert entries[0]["value"] == {"groups": 2, "sizes": sizes}
    assert "psi-ca/counts" not in parties["p2"].ledger.labels()
    (c1,) = [e["value"] for e in parties["p1"].ledger.to_list() if e["label"] == "psi-ca/counts"]
    (c3,) = [e["value"] for e in parties["p3"].ledger.to_list() if e["label"] == "psi-ca/counts"]
    # each receiver learns its own group's tensor (and, k = 3, the pairwise counts it implies)
    assert c1["group"] == "g0" and c1["counts"] == plain_counts(groups[0]).tolist()
    assert c3["group"] == "g1" and c3["counts"] == plain_counts(groups[1]).tolist()
    assert set(c1["sub-intersections"]) == {"p1&p2", "p1&p3", "p2&p3"}
    assert c3["sub-intersections"]["p1&p2"] == [[2]]
    assert results["p2"] == [None, None]


# --------------------------------------------------------------------------- transcript


def _leaves(obj: Any) -> Any:
    if isinstance(obj, list | tuple):
        for x in obj:
            yield from _leaves(x)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield key
            yield from _leaves(value)
    else:
        yield obj


def test_the_wire_carries_only_encrypted_rows() -> None:
    groups = [
        [[list(range(0, 12)), [20, 21]], [list(range(6, 18))], [list(range(3, 15)), [22]]],
        [[[1, 2, 3]], [[2, 3, 4]], [[3, 4, 5]]],
    ]
    plain = {bytes(row) for row in hash_ids(range(UNIVERSE))}
    seen: list[tuple[str, str, Any]] = []
    network = InMemoryNetwork()
    network.taps.append(lambda s, r, frames: seen.append((s, r, decode(frames))))
    run_groups(groups, ["p2", "p3"], network=network)
    protocol = [(s, r, env) for s, r, env in seen if env.kind == "msg"]
    assert {env.tag for _, _, env in protocol} == {"psi-ca/hop1", "psi-ca/hop2", "psi-ca/final"}
    rows = {"hop": 0, "final": 0}
    for sender, receiver, env in protocol:
        for x in _leaves(env.body):
            if x is None:  # a group that is not for this receiver
                continue
            assert isinstance(x, np.ndarray), (sender, receiver, env.tag, x)
            assert x.dtype == np.uint8 and x.ndim == 2 and x.shape[1] == 32, env.tag
            encrypted = {bytes(row) for row in x}
            assert not (encrypted & plain), (sender, receiver, env.tag)
            rows["final" if env.tag.endswith("/final") else "hop"] += len(x)
    sizes = [[sum(len(s) for s in sets) for sets in g] for g in groups]
    # every element travels k - 1 = 2 hops, then to the receiver unless the receiver itself
    # holds it at the end (p2 ends with p3's elements, p3 with p1's)
    assert rows["hop"] == 2 * sum(map(sum, sizes))
    assert rows["final"] == sum(sizes[0]) - sizes[0][2] + sum(sizes[1]) - sizes[1][0]


# --------------------------------------------------------------------------- shuffles


@given(st.integers(0, 3000))
def test_os_permutation_is_a_permutation(n: int) -> None:
    perm = os_permutation(n, "test/perm")
    assert perm.dtype == np.int64 and perm.shape == (n,)
    assert np.array_equal(np.sort(perm), np.arange(n))


def test_os_permutation_is_uniform() -> None:
    """24,000 permutations of 4 elements: each of the 24 orders about 1,000 times (chi-square
    with 23 degrees of freedom; a uniform shuffle has p < 1e-9 with probability 1e-9). The
    same check rejects a shuffle that never puts element 0 first. And on 50,000 elements the
    first half of the positions holds each sixteenth of the elements about equally often (a
    shuffle that moves little fails it)."""
    draws = Counter(tuple(os_permutation(4, "test/perm").tolist()) for _ in range(24_000))
    orders = list(itertools.permutations(range(4)))
    assert set(draws) <= set(orders)
    assert chisquare([draws[o] for o in orders]).pvalue > 1e-9
    biased = [0 if o[0] == 0 else 1_000 * 24 // 18 for o in orders]
    assert chisquare(biased).pvalue < 1e-9
    n = 50_000
    first_half = os_permutation(n, "test/perm")[: n // 2]
    assert chisquare(np.bincount(first_half * 16 // n, minlength=16)).pvalue > 1e-9
    assert chisquare(np.bincount(np.arange(n // 2) * 16 // n, minlength=16)).pvalue < 1e-9


def test_psi_ca_draws_no_numpy_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and shuffles come from the OS generator: with numpy's generators refused, PSI-CA
    still runs and counts right."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("PSI-CA drew from a numpy random generator")

    for name in ("default_rng", "permutation", "shuffle", "Generator", "RandomState"):
        monkeypatch.setattr(np.random, name, refuse)
    groups = [[[list(range(12)), [20, 21]], [list(range(6, 18))], [list(range(3, 15))]]]
    results, _ = run_groups(groups, ["p2"])
    np.testing.assert_array_equal(results["p2"][0], plain_counts(groups[0]))


def test_every_hop_shuffles_the_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """What p2 receives from p1 at the first hop is p1's set encrypted under p1's key, in an
    order unrelated to p1's: the same rows, not in the same order (a 200-element set keeps
    its order under a uniform shuffle with probability 1/200!)."""
    keys: list[X25519Key] = []
    generate = X25519Key.generate.__func__  # type: ignore[attr-defined]

    def recording(cls: type[X25519Key], label: str = "x25519/key") -> X25519Key:
        key = generate(cls, label)
        keys.append(key)
        return key

    monkeypatch.setattr(X25519Key, "generate", classmethod(recording))
    received: list[np.ndarray] = []
    network = InMemoryNetwork()

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if sender == "p1" and env.tag == "psi-ca/hop1":
            received.append(env.body[0][0])

    network.taps.append(tap)
    elements = list(range(200))
    run_groups([[[elements], [elements]]], ["p2"], network=network)
    (got,) = received
    rows = [bytes(r) for r in got]
    for key in keys:
        mine = [bytes(r) for r in key.encrypt_many(hash_ids(elements))]
        if set(mine) == set(rows):  # p1's key
            assert mine != rows
            break
    else:
        pytest.fail("no key encrypts p1's set to what p2 received")


# --------------------------------------------------------------------------- malformed input


@pytest.mark.parametrize(
    "bundle",
    [
        [[np.zeros((2, 32), dtype=np.int64)]],
        [[np.zeros((2, 31), dtype=np.uint8)]],
        [[np.zeros(32, dtype=np.uint8)]],
        [["not an array"]],
        [np.zeros((2, 32), dtype=np.uint8)],
        [],
    ],
)
def test_check_bundle_refuses_malformed_sets(bundle: Any) -> None:
    with pytest.raises(ProtocolError, match="p1 sent hop 1"):
        _check_bundle(bundle, 1, "p1", "hop 1")


def test_count_tensor_refuses_sets_of_one_party_that_overlap() -> None:
    a = hash_ids([1, 2, 3])
    with pytest.raises(ProtocolError, match="party #1's sets of one group are not disjoint"):
        count_tensor([[a[:2], a[1:]], [a]])


def test_a_tampering_party_is_refused_with_a_protocol_error() -> None:
    errors: dict[str, BaseException] = {}

    def recording(program: Any) -> Any:
        async def run(p: Party) -> Any:
            try:
                return await program(p)
            except BaseException as exc:
                errors[p.name] = exc
                raise

        return run

    async def honest(p: Party) -> Any:
        return await set_intersection_cardinality(p, [GroupInput("p3", [hash_ids([1, 2])])])

    async def tampering(p: Party) -> Any:
        await p.send("p2", "psi-ca/hop1", [[np.zeros((2, 32), dtype=np.int64)]])
        return await p.recv("p3", "psi-ca/final", ANY)  # ends when p2's abort arrives

    programs = {"p1": recording(tampering), "p2": recording(honest), "p3": recording(honest)}
    with pytest.raises(MPCError):
        asyncio.run(run_in_memory(names(3), programs, timeout=5))
    assert isinstance(errors["p2"], ProtocolError), errors
    assert "p1 sent hop 1 with a set that is not an (m, 32) uint8 array" in str(errors["p2"])


# --------------------------------------------------------------------------- the system


def test_set_files_keep_elements_as_written(tmp_path: Path) -> None:
    f = tmp_path / "s.txt"
    f.write_bytes("b\r\n\n  \n a\nümlaut\nb \nlast".encode())
    assert read_set_file(str(f)) == ["b", " a", "ümlaut", "b ", "last"]


def test_random_sets_plant_exactly_the_overlap() -> None:
    sets = random_sets(4, 200, 0.3, seed=7)
    assert [len(s) for s in sets] == [200] * 4
    assert all(len(set(s)) == 200 for s in sets)
    assert len(set(sets[0]).intersection(*sets[1:])) == 60
    assert len(set(sets[0]) & set(sets[1])) == 60  # private elements are private
    assert random_sets(4, 200, 0.3, seed=7) == sets


def _plan(*argv: str) -> Any:
    args = build_parser().parse_args(["run", "psi-ca", *argv])
    return get_system("psi-ca").plan_from(args)


def test_the_plan_validates_its_options(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("x\ny\n")
    b.write_text("y\nz\n")
    ab = f"{a},{b}"
    plan = _plan("--sets", ab)
    assert [p.name for p in plan.parties] == ["site1", "site2"]
    assert plan.parties[0].data == {"elements": ["x", "y"]} and plan.params == {"receiver": "site2"}
    assert plan.context["true_intersection"] == 1
    for argv, message in [
        (["--sets", str(a)], "--sets needs at least 2 comma-separated files"),
        (["--sets", f"{a},{tmp_path / 'missing'}"], "missing does not exist"),
        (["--sets", ab, "--receiver", "site3"], "--receiver site3: no such party"),
        (["--sets", ab, "--parties", "2"], "--parties goes with --random"),
        (["--random", "10", "--parties", "1"], "--parties must be at least 2, got 1"),
        (["--random", "0"], "--random must be at least 1 element, got 0"),
        (["--random", "10", "--overlap", "1.5"], "--overlap must be a fraction between 0 and 1"),
    ]:
        with pytest.raises(ConfigError, match=message):
            _plan(*argv)


def test_a_repeated_element_fails_before_anything_starts(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("a\nb\n")
    bad.write_text("a\nx\n\nx\n")
    code, out, err = run_mpc("run", "psi-ca", "--sets", f"{good},{bad}", deadline=30)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"mpc: error: --sets: {bad} line 4: element 'x' repeats line 2; list every element once"
    ]


@pytest.mark.processes
@pytest.mark.timeout(90)
def test_psi_ca_system_across_three_processes(tmp_path: Path) -> None:
    sets = [
        ["apple", "pear", "fig", "kiwi", "lime", "plum"],
        ["fig", "kiwi", "plum", "date", "pear"],
        ["plum", "pear", "kiwi", "yuzu", "date", "grape", "melon"],
    ]
    files = []
    for name, elements in zip("abc", sets, strict=True):
        path = tmp_path / name
        path.write_text("\n".join(elements) + "\n\n")
        files.append(str(path))
    code, doc = run_mpc_json("run", "psi-ca", "--sets", ",".join(files), deadline=60)
    assert code == 0 and doc["ok"], doc
    true = len(set(sets[0]) & set(sets[1]) & set(sets[2]))
    result = doc["result"]
    assert result["intersection"] == true == result["true_intersection"] == 3
    assert result["correct"] is True and result["receiver"] == "site3" and result["rounds"] == 3
    assert result["set_sizes"] == {"site1": 6, "site2": 5, "site3": 7}
    for name, party in doc["parties"].items():
        assert party["exit_code"] == 0
        labels = [e["label"] for e in party["ledger"]]
        expected = ["psi-ca/set-sizes"] + (["psi-ca/counts"] if name == "site3" else [])
        assert labels == expected, name
        # every party encrypts every set once: its own and the two it forwards
        assert party["metrics"]["crypto"] == {"x25519": 18}
        assert party["result"] == (true if name == "site3" else None)


@pytest.mark.processes
@pytest.mark.timeout(90)
def test_psi_ca_system_with_random_sets_and_another_receiver() -> None:
    code, doc = run_mpc_json(
        "run",
        "psi-ca",
        "--random",
        "400",
        "--parties",
        "2",
        "--overlap",
        "0.25",
        "--receiver",
        "site1",
        deadline=60,
    )
    assert code == 0 and doc["ok"], doc
    result = doc["result"]
    assert result["intersection"] == result["true_intersection"] == 100
    assert result["receiver"] == "site1" and result["elements"] == 800
    assert doc["parties"]["site1"]["result"] == 100 and doc["parties"]["site2"]["result"] is None
