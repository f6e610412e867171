"""PPID3 level by level on shares (``protocols.ppid3.levels``): the tree equals plain ID3 and
the depth-first set-intersection PPID3, with the same opened counts; each ledger holds only
Theorem 1's values; the oblivious transfer hides used attributes; the ring products are
exact."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import Partition, Table, partition, weather
from mpc.errors import ConfigError
from mpc.learners.criteria import CRITERIA
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import to_json
from mpc.runtime.local import run_in_memory
from mpc.runtime.transport import InMemoryNetwork
from protocols.engine.dealing import Sites
from protocols.engine.preprocessing import PREPROCESSING
from protocols.engine.ring import Ring
from protocols.ppid3.classify_instance import classify_instances, tree_depth
from protocols.ppid3.levels import (
    DEALER,
    ppid3_levels,
    serve_level_dealer,
)
from protocols.ppid3.ppid3 import assemble, check_tree_equal

from .. import datasets
from .test_ppid3 import _opened, _views, run_ppid3, tables


def run_levels(
    table: Table,
    part: Partition,
    *,
    max_depth: int | None = None,
    mss: int | None = None,
    network: InMemoryNetwork | None = None,
    helper: str = "dealer",
    criterion: str = "entropy",
) -> dict[str, Any]:
    """PPID3 by levels + classification of the training rows, in memory, with a dealer (or,
    with ``helper="sites"``, the sites dealing for each other and no dealer); the plain tree
    with the same criterion beside it."""
    views = _views(table, part)
    names = [v.name for v in views]
    class_site = names[part.class_site]
    parties = [*names, DEALER] if helper == "dealer" else names

    async def program(p: Any) -> Any:
        if p.name == DEALER:
            return await serve_level_dealer(p, names, dtype=Ring.for_rows(table.n_rows).dtype)
        view = views[names.index(p.name)]
        site = Sites(p, names).as_party()
        tree, _ = await ppid3_levels(
            site,
            view,
            class_site=class_site,
            attribute_counts=[len(s) for s in part.sites],
            preprocessing=PREPROCESSING[helper],
            criterion=CRITERIA[criterion],
            max_depth=max_depth,
            min_samples_split=mss,
        )
        cols = {
            a: [view.domains[j][c] for c in view.codes[:, j]] for j, a in enumerate(view.attributes)
        }
        pred = await classify_instances(
            site, tree, cols, view.tids.tolist(), class_site=class_site,
            depth=tree_depth(tree.structure),
        )  # fmt: skip
        return tree, pred

    results, by_name = asyncio.run(run_in_memory(parties, program, timeout=60, network=network))
    results.pop(DEALER, None)
    view = assemble(
        {n: r[0].to_dict() for n, r in results.items()}, {n: i for i, n in enumerate(names)}
    )
    site_of = {a: i for i, s in enumerate(part.sites) for a in s}
    plain = ID3Classifier(max_depth=max_depth, min_samples_split=mss, criterion=criterion).fit(
        table, attribute_order=list(part.attributes), sites=site_of
    )
    return {"view": view, "plain": plain, "predictions": results[class_site][1],
            "parties": by_name, "names": names, "class_site": class_site}  # fmt: skip


def _assert_plain(out: dict[str, Any], table: Table) -> None:
    plain_json = to_json(out["plain"].tree_)
    assert check_tree_equal(out["view"], plain_json), (out["view"], plain_json)
    expected = [str(v) for v in out["plain"].predict(table)]
    assert [out["predictions"][i] for i in range(table.n_rows)] == expected


def _assert_ledgers(out: dict[str, Any], part: Partition) -> None:
    for name, party in out["parties"].items():
        labels = set(party.ledger.labels())
        if name == DEALER:
            assert labels <= {"fast-counts/request", "fast-counts/done"}, labels
            continue
        allowed = {"ppid3/structure", "fast-counts/attribute-counts", "classify/instances"}
        if name == out["class_site"]:
            allowed |= {"ppid3/node-counts", "ppid3/best-gains"}
        assert labels <= allowed, labels - allowed
        site = out["names"].index(name)
        for e in party.ledger.to_list():
            if e["label"] == "fast-counts/attribute-counts":
                assert set(e["value"]) <= set(part.sites[site])  # own attributes only


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([None, 1, 2]))
def test_levels_equal_plain_id3_and_psi_ppid3_on_random_tables(
    case: tuple[Table, Partition], max_depth: int | None
) -> None:
    table, part = case
    out = run_levels(table, part, max_depth=max_depth)
    _assert_plain(out, table)
    _assert_ledgers(out, part)
    psi = run_ppid3(table, part, max_depth=max_depth)
    for label in ("ppid3/node-counts", "ppid3/best-gains", "ppid3/structure"):
        assert _opened(out, label) == _opened(psi, label), label


def test_levels_on_weather_with_a_middle_class_site_and_min_samples_split() -> None:
    t = weather()
    part = partition(t.attributes, 3, class_site=1)
    _assert_plain(run_levels(t, part), t)
    _assert_plain(run_levels(t, part, mss=6), t)


@pytest.mark.parametrize(("name", "max_depth"), [("house-votes-84", None), ("car", None)])
def test_levels_on_uci_tables_equal_plain_id3(name: str, max_depth: int | None) -> None:
    t, _ = datasets.table(name)
    part = partition(t.attributes, 3, "random:7")
    out = run_levels(t, part, max_depth=max_depth)
    _assert_plain(out, t)
    _assert_ledgers(out, part)


def test_owner_never_receives_counts_of_attributes_used_on_the_path() -> None:
    """A site that splits twice on one path gets a zero block, not the counts, for the
    attribute it used: the only counts it opens are of remaining attributes, and their sum
    over values never equals a node distribution it is not entitled to (checked via the
    ledger: every recorded attribute is still a candidate at that node)."""
    t = weather()
    part = Partition(sites=(("outlook", "humidity", "windy"), ("temperature",)), class_site=1)
    out = run_levels(t, part)
    _assert_plain(out, t)
    site1 = out["parties"]["site1"]
    recorded = [e["value"] for e in site1.ledger.to_list()
                if e["label"] == "fast-counts/attribute-counts"]  # fmt: skip
    # the root offers all three attributes; below the outlook split only two remain
    assert set(recorded[0]) == {"outlook", "humidity", "windy"}
    assert all("outlook" not in r for r in recorded[1:])
    assert len(recorded) > 1


@given(st.integers(1, 300), st.integers(1, 5), st.integers(1, 6), st.sampled_from([16, 32]),
       st.integers(0, 2**31))  # fmt: skip
def test_ring_matmul_is_exact(n: int, m: int, c: int, bits: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    dtype = np.uint16 if bits == 16 else np.uint32
    a = rng.integers(0, 2**bits, (m, n), dtype=np.uint64)
    b = rng.integers(0, 2**bits, (n, c), dtype=np.uint64)
    want = ((a @ b) & np.uint64(2**bits - 1)).astype(dtype)  # uint64 wraps mod 2^64
    assert np.array_equal(Ring.of(dtype).matmul(a.astype(dtype), b.astype(dtype)), want)


@given(st.integers(1, 300), st.integers(1, 5), st.integers(1, 6), st.sampled_from([16, 32]),
       st.integers(0, 2**31))  # fmt: skip
def test_binary_ring_matmul_is_exact(n: int, m: int, c: int, bits: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    dtype = np.uint16 if bits == 16 else np.uint32
    a = rng.integers(0, 2, (m, n), dtype=np.uint64)
    b = rng.integers(0, 2**bits, (n, c), dtype=np.uint64)
    want = ((a @ b) & np.uint64(2**bits - 1)).astype(dtype)
    got = Ring.of(dtype).matmul(a.astype(dtype), b.astype(dtype), binary=True)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("binary", [False, True])
def test_ring_matmul_is_exact_across_row_blocks(binary: bool) -> None:
    """More rows than one block of the 32-bit product, the right operand transposed (as the
    level driver passes it), values at the top of the ring."""
    from protocols.engine.ring import ROW_BLOCK

    rng = np.random.default_rng(7)
    n, m, c = 2 * ROW_BLOCK + 123, 3, 5
    a = rng.integers(0, 2 if binary else 2**32, (m, n), dtype=np.uint64)
    a[:, :10] = 1 if binary else 2**32 - 1
    z = rng.integers(0, 2**32, (c, n), dtype=np.uint64)
    z[:, :10] = 2**32 - 1
    want = ((a @ z.T) & np.uint64(2**32 - 1)).astype(np.uint32)
    got = Ring.of(np.uint32).matmul(a.astype(np.uint32), z.astype(np.uint32).T, binary=binary)
    assert np.array_equal(got, want)


def test_ring_is_chosen_by_rows_up_to_2_32() -> None:
    assert Ring.for_rows(48_842).dtype == np.uint16
    assert Ring.for_rows(70_000).dtype == np.uint32
    assert Ring.for_rows(2**22).dtype == np.uint32
    assert Ring.for_rows(2**32 - 1).dtype == np.uint32
    with pytest.raises(ConfigError, match="2\\^32"):
        Ring.for_rows(2**32)


@pytest.mark.parametrize("bits", [16, 32])
@pytest.mark.parametrize("binary", [False, True])
def test_ring_products_stay_exact_past_2_21_rows(bits: int, binary: bool) -> None:
    """Past the 2^21 terms where one float64 product of 16-bit limbs stops being exact: an
    inner dimension of 2^21 + 2^15 + 3 rows, every value the ring's largest (or 1 in a
    one-hot matrix), the sums then far past 2^53; the product equals the integer one mod
    the ring."""
    n, dtype = 2**21 + 2**15 + 3, np.dtype(f"uint{bits}")
    top = 2**bits - 1
    a = np.full((2, n), 1 if binary else top, dtype=np.uint64)
    a[1, ::7] = 0
    b = np.full((n, 3), top, dtype=np.uint64)
    b[::5, 1] = 1
    want = ((a @ b) & np.uint64(top)).astype(dtype)
    got = Ring.of(dtype).matmul(a.astype(dtype), b.astype(dtype), binary=binary and bits == 32)
    assert np.array_equal(got, want)


def _random_table(n: int, seed: int) -> Table:
    rng = np.random.default_rng(seed)
    cols = [np.array([f"v{x}" for x in rng.integers(0, d, n)], dtype=object) for d in (2, 3, 4, 3)]
    y = np.array([f"c{x}" for x in (rng.random(n) < 0.3).astype(int)], dtype=object)
    attrs = [f"a{j}" for j in range(4)]
    return Table("random", attrs, ["nominal"] * 4, cols, y, "class", "generated")


def _chi2_top_bits(words: np.ndarray, bits: int = 4) -> float:
    counts = np.bincount((words.astype(np.uint16) >> (16 - bits)).astype(np.int64),
                         minlength=2**bits)  # fmt: skip
    expected = len(words) / 2**bits
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("helper", ["dealer", "sites", "ot"])
def test_every_array_a_site_receives_from_a_site_is_uniform(helper: str) -> None:
    """Masked one-hot columns, masked shares, ``X^T + Ra`` and both oblivious-transfer
    messages: the top four bits of every array (>= 2,000 words) a site receives from another
    site are uniform (chi-square, 16 bins; 61.1 is the 0.999999 quantile of chi-square(15)),
    the oblivious transfers' messages likewise (top two bits, pooled), and the
    choice bits are fair coins. With ``helper="sites"`` this includes the randomness a
    helping site deals (``rb``, ``Kπ - L``, the OT precomputation and its choice bits). The
    same statistic rejects an unmasked one-hot column. With ``helper="ot"``: the one-hot
    OTs' corrections, the vector OTs' corrections and every extension matrix (its bytes'
    top four bits), besides the transfers and choice bits above."""
    table = _random_table(3000, 5)
    part = partition(table.attributes, 3, "round-robin", class_site=1)
    views = _views(table, part)
    names = [v.name for v in views]
    arrays: list[tuple[str, str, np.ndarray]] = []

    async def program(p: Any) -> Any:
        if p.name == DEALER:
            return await serve_level_dealer(p, names, dtype=Ring.for_rows(table.n_rows).dtype)
        orig_recv = p.recv

        async def spy(peer: str, tag: str, receipt: Any, **kw: Any) -> Any:
            body = await orig_recv(peer, tag, receipt, **kw)
            if peer != DEALER and isinstance(body, dict) and isinstance(body.get("parts"), list):
                arrays.append((p.name, tag, np.concatenate(body["parts"])))
            elif peer != DEALER and isinstance(body, np.ndarray):  # OT messages (helper ot)
                arrays.append((p.name, tag, body.reshape(-1)))
            elif peer != DEALER and isinstance(body, dict):  # randomness a helping site dealt
                for key, value in body.items():
                    if isinstance(value, dict) and isinstance(value.get("parts"), list):
                        arrays.append((p.name, f"{tag}/{key}", np.concatenate(value["parts"])))
            return body

        p.recv = spy
        site = Sites(p, names).as_party()
        tree, _ = await ppid3_levels(
            site, views[names.index(p.name)], class_site=names[1],
            attribute_counts=[len(s) for s in part.sites], max_depth=4,
            preprocessing=PREPROCESSING[helper],
        )  # fmt: skip
        return tree

    everyone = [*names, DEALER] if helper == "dealer" else names
    asyncio.run(run_in_memory(everyone, program, timeout=60))
    # the oblivious transfers' (small) arrays, pooled
    ot = np.concatenate([a for _, t, a in arrays if t.endswith("/ot")])
    words = [(who, tag, a) for who, tag, a in arrays if a.dtype == np.uint16 and a.size >= 2000]
    kinds = {tag.rsplit("/", 1)[-1] for _, tag, _ in words}
    if helper == "ot":  # outer products' vector OTs, dot products' one-hot corrections
        assert "reply" in kinds and any(k.startswith("c") for k in kinds), kinds
        matrices = [a for _, tag, a in arrays if tag.endswith("/u") and a.size >= 2000]
        assert matrices
        for a in matrices:
            assert _chi2_top_bits(a.astype(np.uint16) << 8) < 61.1
    else:
        assert {"masked", "Ahat"} <= kinds, kinds  # outer products, dot products
    if helper == "sites":  # the dealt randomness, from a helping site
        dealt = {tag.rsplit("/", 1)[-1] for _, tag, _ in arrays if "/dealer/" in tag}
        assert {"r", "Rc", "c", "d"} <= dealt, dealt
    for who, tag, a in words:
        assert _chi2_top_bits(a) < 61.1, (who, tag)
    # the OT messages: top two bits, chi-square(3) 0.999999 quantile 30.7
    assert ot.size >= 500 and _chi2_top_bits(ot, 2) < 30.7
    bits = np.concatenate([a for _, _, a in arrays if a.dtype == np.bool_])
    assert bits.size > 100 and abs(bits.mean() - 0.5) < 5 * 0.5 / np.sqrt(bits.size)
    onehot = (views[0].codes[:, 0] == 0).astype(np.uint16)
    assert _chi2_top_bits(onehot) > 61.1
