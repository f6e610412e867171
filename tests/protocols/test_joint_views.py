"""The joint-view test of ``--reveal tree``: a party's view judged as a whole, with its own
randomness.

A message that is uniform on its own may not be uniform beside what its receiver holds: a
Beaver product's output share is a fixed function of the multiplied values once the triple is
known, so the party that dealt the triple and receives the share learns the values. So each
party P in turn runs with its randomness fixed (:func:`mpc.crypto.randomness.fixed`: its
seeds, keys, the triples it deals), everyone else's fresh:

* the same table twice: nothing P receives under a uniform receipt may repeat from one run
  to the other (a value that repeats is a function of the data and of P's randomness);
* two tables with the same tree but different counts: P's public and declared messages and
  its ledger are the same, and its uniform payloads neither repeat nor differ in
  distribution between the two (:func:`tests.views.joint_failures`).

In memory, every party a task with its own randomness; the process tests of
``tests/protocols/test_views.py`` do the same across processes.
"""

from __future__ import annotations

from typing import Any

import pytest

from mpc.datasets import partition, weather
from protocols.ppid3.levels import DEALER

from ..views import canonical_view, differences, joint_failures, uniformity_failures
from .test_reveal_tree import _same_tree_twin, run_classify, run_reveal

#: the seed of the party whose randomness is fixed
SEED = bytes(range(32))


def _parties(helper: str, k: int) -> list[str]:
    names = [f"site{i + 1}" for i in range(k)]
    return [*names, DEALER] if helper == "dealer" else names


def _reports(out: dict[str, Any]) -> dict[str, Any]:
    return {name: party.report() for name, party in out["parties"].items()}


@pytest.mark.parametrize(("helper", "k"), [("sites", 3), ("dealer", 3), ("ot", 2), ("ot", 3)])
def test_no_party_receives_in_training_what_repeats_when_its_own_randomness_is_fixed(
    helper: str, k: int
) -> None:
    """Weather, ``--reveal tree``, the class site last: every party, its randomness fixed,
    receives nothing uniform that repeats between two runs of one table."""
    t = weather()
    part = partition(t.attributes, k, class_site=k - 1)
    failures = {}
    for name in _parties(helper, k):
        runs = [
            _reports(run_reveal(t, part, helper=helper, record=True, fixed={name: SEED}))[name]
            for _ in range(2)
        ]
        bad = joint_failures(*runs)
        if bad:
            failures[name] = bad
    assert failures == {}


@pytest.mark.parametrize("helper", ["sites", "dealer", "ot"])
def test_two_tables_with_the_same_tree_look_the_same_to_each_party_beside_its_own_randomness(
    helper: str,
) -> None:
    """Different counts, the same tree: with a party's randomness fixed, its public and
    declared messages and its ledger are the same for both tables, and its uniform payloads
    neither repeat nor differ in distribution."""
    first, second, part = _same_tree_twin(5)
    failures = {}
    for name in _parties(helper, part.k):
        a, b = (
            run_reveal(tab, part, helper=helper, max_depth=2, record=True, fixed={name: SEED})
            for tab in (first, second)
        )
        ra, rb = _reports(a)[name], _reports(b)[name]
        bad = differences(canonical_view(ra), canonical_view(rb)) + joint_failures(ra, rb)
        bad += uniformity_failures(ra) + uniformity_failures(rb)
        if bad:
            failures[name] = bad
    assert failures == {}


@pytest.mark.parametrize(
    ("helper", "k", "scores"),
    [("sites", 3, False), ("ot", 3, False), ("dealer", 3, False), ("ot", 2, False),
     ("sites", 3, True), ("ot", 2, True)],
)  # fmt: skip
def test_classifying_reveals_no_path_to_any_party_beside_its_own_randomness(
    helper: str, k: int, scores: bool
) -> None:
    """Classification without a path, delivered to the class site (the last site, which
    with three sites is also the third site): with a party's randomness fixed, what it
    receives while classifying repeats in nothing between two runs, and two different records
    with the same prediction look the same to it; with ``scores``, two records with the same
    prediction and the same class counts of their terminal (declared to the receiver), from
    two different leaves' worth of values (overcast, any temperature)."""
    t = weather()
    part = partition(t.attributes, k, class_site=k - 1)
    deliver = f"site{k}"
    got = run_classify(t, part, t, helper=helper, scores=scores)
    plain = got["plain"]
    same = got["scores"] if scores else [None] * t.n_rows
    first = next(i for i, v in enumerate(plain) if v == "yes")
    second = next(i for i, v in enumerate(plain) if v == "yes" and same[i] == same[first]
                  and [c[i] for c in t.columns] != [c[first] for c in t.columns])  # fmt: skip
    failures = {}
    for name in _parties(helper, k):
        same = [
            _reports(run_classify(t, part, t, helper=helper, record=True, deliver_to=deliver,
                                  fixed={name: SEED}, scores=scores))[name]
            for _ in range(2)
        ]  # fmt: skip
        bad = joint_failures(*same)
        records = [
            _reports(run_classify(t, part, t.subset([i]), helper=helper, record=True,
                                  deliver_to=deliver, fixed={name: SEED}, scores=scores))[name]
            for i in (first, second)
        ]  # fmt: skip
        bad += differences(canonical_view(records[0]), canonical_view(records[1]))
        bad += joint_failures(*records)
        if bad:
            failures[name] = bad
    assert failures == {}


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("helper", ["sites", "dealer", "ot"])
def test_many_twins_look_the_same_to_each_party_beside_its_own_randomness(helper: str) -> None:
    """The twin test over many pairs of tables with the same tree and different counts (20
    per helper), each party in turn with its randomness fixed."""
    import numpy as np

    failures = {}
    seeds = [s for s in range(200) if _twin_or_none(s) is not None][:20]
    assert len(seeds) == 20
    for seed in seeds:
        first, second, part = _same_tree_twin(seed)
        fixed = bytes(np.random.default_rng(seed).integers(0, 256, 32, dtype=np.uint8))
        for name in _parties(helper, part.k):
            a, b = (
                run_reveal(tab, part, helper=helper, max_depth=2, record=True,
                           fixed={name: fixed})
                for tab in (first, second)
            )  # fmt: skip
            ra, rb = _reports(a)[name], _reports(b)[name]
            bad = differences(canonical_view(ra), canonical_view(rb)) + joint_failures(ra, rb)
            if bad:
                failures[(seed, name)] = bad
    assert failures == {}


def _twin_or_none(seed: int) -> Any:
    try:
        return _same_tree_twin(seed)
    except AssertionError:
        return None
