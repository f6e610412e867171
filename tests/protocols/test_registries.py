"""A new kind of preprocessing and a new dot-product method each take one class and one
registry entry: here each is a class of this module, put into its registry for the test (the
registry entry: :data:`~protocols.engine.preprocessing.PREPROCESSING`,
:data:`~protocols.primitives.dot_product.METHODS`), and the protocols, launchers and command
lines that take their choices from the registry run with it unchanged.

* a kind of preprocessing (``--helper``): :class:`LastSiteHelper` deals each product between
  two sites at the *last* other site rather than
  :func:`~protocols.engine.dealing.third_site`'s; PPID3's level driver grows plain ID3's tree
  with it, and each site deals exactly the products the new rule gives it;
* a dot-product method: :class:`SeededServer` is a commodity server that deals Alice's and
  Bob's masks as 32-byte seeds; the products equal the plain ones, Hybrid-ID3 grows the same
  trees with it as with the commodity server, and ``mpc run dot-product`` offers it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from mpc.datasets import partition
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from parties.cli.main import build_parser
from parties.systems.registry import get_system
from protocols.engine.preprocessing import PREPROCESSING, SitesPreprocessing
from protocols.engine.ring import RING64
from protocols.primitives.dot_product import METHODS, dot_products
from protocols.primitives.dot_product_base import ALICE, DotProductMethod, RandomWords, row_sums

from .test_hybrid_id3 import random_table, run_trees
from .test_ppid3_levels import _assert_plain, run_levels

# ------------------------------------------------------------------------- a new helper kind


def last_other_site(a: str, b: str, sites: Sequence[str]) -> str:
    """The last site that is neither ``a`` nor ``b``."""
    return [s for s in sites if s not in (a, b)][-1]


class LastSiteHelper(SitesPreprocessing):
    """The products between two sites dealt by the last other site."""

    name = "last-site"
    help = "the last site that is neither of the two deals each product"
    trust = "semi-honest sites, no two colluding; each product dealt by the last other site"
    rule = staticmethod(last_other_site)


def test_a_new_helper_in_the_registry_grows_plain_id3_s_tree_by_its_own_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(PREPROCESSING, "last-site", LastSiteHelper())
    table = random_table(np.random.default_rng(3), n=60, t=6, classes=2)
    part = partition(table.attributes, 4, "round-robin", class_site=1)
    result = run_levels(table, part, helper="last-site")
    _assert_plain(result, table)
    sites = result["names"]
    dealt_by: dict[str, set[tuple[str, str]]] = {}
    for me in sites:
        dealt_by[me] = {(e.value["site"], e.value["peer"])
                        for e in result["parties"][me].ledger.entries
                        if e.label == "fast-counts/helped"}  # fmt: skip
        assert all(last_other_site(a, b, sites) == me for a, b in dealt_by[me]), (me, dealt_by)
    # the rule's dealers, not third_site's: the last site deals every pair of the other three
    assert {a for a, _ in dealt_by[sites[-1]]} == set(sites[:-1])
    # the launcher offers it, and it adds no outside party
    args = build_parser().parse_args(["run", "ppid3", "--sites", "4", "--counts", "fast",
                                      "--helper", "last-site"])  # fmt: skip
    assert args.helper == "last-site"


# ------------------------------------------------------------------------- a new dot-product method

SEEDED = uniform("dot-product/seeded", "the helper's masks, as seeds and one array")


class SeededServer(DotProductMethod):
    """A commodity server that sends Alice's masks ``Ra, ra`` and Bob's ``Rb`` as seeds."""

    name = "seeded"
    help = "a commodity server that deals its masks as seeds"
    trust = "semi-honest alice and bob; the server colludes with neither"
    helper = "dealer"

    async def deal(
        self, party: Party, shape: tuple[int, int, int], alice: str, bob: str, tag: str,
        words: RandomWords, rows: bool,
    ) -> None:  # fmt: skip
        m, n, ell = shape
        sa, sr, sb = (secrets.token_bytes(32) for _ in range(3))
        Ra, ra = RING64.random(sa, (m, n)), RING64.random(sr, (m, ell))
        Rb = RING64.random(sb, (m, n) if rows else (n, ell))
        rb = (row_sums(Ra, Rb) if rows else Ra @ Rb) - ra
        await party.send(alice, f"{tag}/seeded", {"Ra": sa, "ra": sr, "ell": ell})
        await party.send(bob, f"{tag}/seeded", {"Rb": sb, "rb": pack_array(rb)})

    async def compute(
        self, party: Party, M: np.ndarray, *, role: str, other: str, helper: str,
        reveal_to: str | None, tag: str, key_bits: int, words: RandomWords, rows: bool,
    ) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
        got = await party.recv(helper, f"{tag}/seeded", SEEDED)
        if role == ALICE:
            m, n = M.shape
            ell = int(got["ell"])
            Ra, ra = RING64.random(got["Ra"], (m, n)), RING64.random(got["ra"], (m, ell))
            await party.send(other, f"{tag}/m", pack_array(M + Ra))
            b_hat = unpack_array(await party.recv(other, f"{tag}/m", SEEDED), np.uint64,
                                 (m, n) if rows else (n, ell), other, "B+Rb")  # fmt: skip
            share = ra - (row_sums(Ra, b_hat) if rows else Ra @ b_hat)
        else:
            Rb = RING64.random(got["Rb"], M.shape)
            rb = unpack_array(got["rb"], np.uint64, (None, None), helper, "rb")
            m, ell = rb.shape
            n = M.shape[1] if rows else M.shape[0]
            await party.send(other, f"{tag}/m", pack_array(M + Rb))
            a_hat = unpack_array(await party.recv(other, f"{tag}/m", SEEDED), np.uint64, (m, n),
                                 other, "A+Ra")  # fmt: skip
            share = (row_sums(a_hat, M) if rows else a_hat @ M) + rb
        other_role = "bob" if role == ALICE else "alice"
        if reveal_to in (other_role, "both"):
            await party.send(other, f"{tag}/s", pack_array(share))
        if reveal_to in (role, "both"):
            theirs = unpack_array(await party.recv(other, f"{tag}/s", SEEDED), np.uint64,
                                  share.shape, other, "share")  # fmt: skip
            share = share + theirs
        return share, (m, n, ell)


def test_a_new_dot_product_method_in_the_registry_serves_every_protocol_that_takes_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(METHODS, "seeded", SeededServer())
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**64, size=(3, 7), dtype=np.uint64)
    b = rng.integers(0, 2**64, size=(7, 2), dtype=np.uint64)
    inputs: dict[str, Any] = {"alice": a, "bob": b, "dealer": None}
    results, _ = asyncio.run(run_in_memory(
        ["alice", "bob", "dealer"],
        lambda p: dot_products(p, inputs[p.name], method="seeded", shape=(3, 7, 2),
                               reveal_to="both"),
    ))  # fmt: skip
    np.testing.assert_array_equal(results["alice"], a @ b)
    np.testing.assert_array_equal(results["bob"], a @ b)
    # Hybrid-ID3 grows the same trees with it as with the commodity server
    table = random_table(np.random.default_rng(2), n=60, t=4, classes=2)
    trees = {m: run_trees(table, theta=0.8, groups=1, window=2, method=m, modes=("hybrid",))[1]
             for m in ("dealer", "seeded")}  # fmt: skip
    assert trees["seeded"]["alice"]["hybrid"].tree == trees["dealer"]["alice"]["hybrid"].tree
    # the launcher offers it and adds the helper it needs
    args = build_parser().parse_args(["run", "dot-product", "--method", "seeded", "--n", "5"])
    plan = get_system("dot-product").plan_from(args)
    assert [p.name for p in plan.parties] == ["alice", "bob", "dealer"]
