"""What the docs say about repeating a run (README and Getting started, "What varies from run
to run"): with their seeds, Hybrid-ID3 (``--coin-seeds``) and cdtl (``--anatomy-seed``) give
the same trees and accuracies twice; without them, each party's coins come from its own OS
randomness, and the run says so."""

from __future__ import annotations

from typing import Any

import pytest

from ..conftest import run_mpc_json

pytestmark = [pytest.mark.processes, pytest.mark.timeout(300)]

HYBRID = ["run", "hybrid-id3", "--dataset", "house-votes-84", "--json"]
CDTL = ["run", "cdtl", "--dataset", "house-votes-84", "--sensitive", "physician-fee-freeze",
        "--class", "party", "--cv", "2", "--json"]  # fmt: skip


def result(*args: str) -> dict[str, Any]:
    code, out = run_mpc_json(*args, deadline=200)
    assert code == 0, out
    return out["result"]


def test_hybrid_id3_repeats_with_its_coin_seeds() -> None:
    runs = [result(*HYBRID, "--coin-seeds", "3,4") for _ in range(2)]
    keys = ("tree", "randomization_only_tree", "smc_only_tree", "accuracy",
            "randomization_only_accuracy", "nodes")  # fmt: skip
    first, second = ({k: r[k] for k in keys} for r in runs)
    assert first == second
    assert runs[0]["coins"] == {"alice": "seeded (private)", "bob": "seeded (private)"}
    unseeded = result(*HYBRID)
    assert unseeded["coins"] == {"alice": "os", "bob": "os"}
    assert unseeded["smc_only_tree"] == runs[0]["smc_only_tree"]  # the exact tree never moves


def test_cdtl_repeats_with_its_anatomy_seed() -> None:
    runs = [result(*CDTL, "--anatomy-seed", "5") for _ in range(2)]
    for method in ("cdtl", "cnl", "cdbsl"):
        if method in runs[0]["methods"]:
            first, second = (r["methods"][method] for r in runs)
            assert first["accuracy_per_fold"] == second["accuracy_per_fold"], method
    assert runs[0]["suppressed_per_fold"] == runs[1]["suppressed_per_fold"]
