"""The record-swap view test: what a party receives must not change when records it cannot
tell apart swap the rest of their data.

Take a joined table and a party P. Two records whose data P sees identically (P's own columns,
and the class when P holds it) are indistinguishable to P; swapping the rest of their data
(every other site's columns of the two records) leaves the joined table the same multiset of
rows, so every aggregate P may learn by design (counts, gains, the tree) is unchanged. So is,
then, every message P receives that is public or declared leakage, the skeleton of every
uniform one (shapes, lengths, public fields), and P's ledger; and its uniform payloads must
pass a chi-square test. A message that carried a per-record value of another party, under
whatever receipt, would differ between the two runs (or fail the chi-square test).

The parties run as processes with ``MPC_VIEW=1``, which puts each party's whole view in its
report (:class:`mpc.runtime.view.ViewRecorder`). Values that are fresh randomness of a party
and public by design (node ids, model ids) are compared up to a consistent renaming.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import importlib.util
import json
import os
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mpc.crypto.randomness import FIXED_ENV, party_seed
from mpc.runtime.view import (
    repeated_payloads,
    repetition_p_value,
    two_sample_p_value,
    uniformity_p_value,
)

from .conftest import ROOT

#: a uniform payload fails its chi-square test below this p-value (the tests run a few hundred
#: receipts: a false alarm is a one-in-a-thousand event per suite run at most)
P_MIN = 1e-6

#: fresh random tokens (node ids, model ids) that may appear in public messages
_TOKEN = re.compile(r"^[0-9a-f]{16}$|^[0-9a-f]{32}$|^[0-9a-f]{64}$")


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_table(path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> Path:
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)
    return path


def swap_pair(
    header: Sequence[str], rows: list[list[str]], visible: Sequence[str]
) -> tuple[list[list[str]], list[list[str]], int, int]:
    """A base table and its swapped twin for a party that sees the columns ``visible``: two
    records ``a, b`` equal on ``visible`` exchange every other column, the pair that differs
    in the most of them. Where the table has no such pair, the base table is made to have
    one (row ``b`` takes row ``a``'s visible values; the result is still a valid table).
    Returns (base, swapped, a, b)."""
    cols = [header.index(c) for c in visible]
    rest = [i for i in range(len(header)) if i not in cols]
    base = [list(r) for r in rows]

    def key(r: Sequence[str], idx: Sequence[int]) -> tuple[str, ...]:
        return tuple(r[i] for i in idx)

    def apart(a: int, b: int) -> int:  # in how many of the other columns two rows differ
        return sum(base[a][i] != base[b][i] for i in rest)

    pairs = [(a, b) for a in range(len(base)) for b in range(a + 1, len(base))]
    alike = [(a, b) for a, b in pairs if key(base[a], cols) == key(base[b], cols)]
    # the pair that differs the most outside what the party sees: its data matters most
    pair = max(alike, key=lambda ab: apart(*ab), default=None)
    if pair is None or apart(*pair) == 0:
        pair = max(pairs, key=lambda ab: apart(*ab))
        a, b = pair
        for i in cols:
            base[b][i] = base[a][i]
    a, b = pair
    swapped = [list(r) for r in base]
    for i in rest:
        swapped[a][i], swapped[b][i] = base[b][i], base[a][i]
    return base, swapped, a, b


def canonical_view(report: Mapping[str, Any]) -> dict[str, Any]:
    """A party's view as compared across runs: its messages by (sender, tag) in the order
    received, and its ledger sorted, fresh tokens renamed in order of first appearance."""
    view = report.get("view")
    if view is None:
        raise AssertionError(f"{report.get('name')}: the report holds no view (MPC_VIEW=1?)")
    by_key: dict[str, list[Any]] = defaultdict(list)
    for m in view["messages"]:
        if m.get("unordered"):  # timing orders these: compared as a multiset, tags aside
            by_key[f"{m['from']} * [{m['receipt']}, {m['kind']}]"].append(m["body"])
        else:
            by_key[f"{m['from']} {m['tag']} [{m['receipt']}, {m['kind']}]"].append(m["body"])
    names: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, str) and _TOKEN.match(value):
            return names.setdefault(value, f"<token {len(names) + 1}>")
        if isinstance(value, dict):
            return {rename(k): rename(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rename(v) for v in value]
        return value

    messages = {k: rename(by_key[k]) for k in sorted(by_key)}
    for k in messages:
        if " * [" in k:
            messages[k] = sorted(messages[k], key=lambda b: json.dumps(b, sort_keys=True))
    ledger = sorted(
        json.dumps(
            [e["label"], rename(e.get("canonical", e["value"]))], sort_keys=True, default=str
        )
        for e in report.get("ledger", [])
    )
    return {"messages": messages, "ledger": ledger}


def differences(a: Mapping[str, Any], b: Mapping[str, Any], *, limit: int = 5) -> list[str]:
    """How two canonical views differ (empty when they are the same), a line each."""
    out: list[str] = []
    ma, mb = a["messages"], b["messages"]
    for key in sorted(set(ma) | set(mb)):
        if ma.get(key) != mb.get(key):
            out.append(f"message {key}: {_short(ma.get(key))} != {_short(mb.get(key))}")
    la, lb = a["ledger"], b["ledger"]
    if la != lb:
        only_a = sorted(set(la) - set(lb))
        only_b = sorted(set(lb) - set(la))
        out.append(
            f"ledger: only in the first {_short(only_a)}; only in the second {_short(only_b)}"
        )
    return out[:limit]


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def uniformity_failures(report: Mapping[str, Any], *, p_min: float = P_MIN) -> list[str]:
    """Every receipt whose uniform payload fails its chi-square test."""
    view = report.get("view") or {}
    out = []
    for receipt, stats in (view.get("uniform") or {}).items():
        p = uniformity_p_value(stats)
        if p < p_min:
            out.append(f"{receipt}: p = {p:.2e} ({stats})")
    return out


#: a uniform payload that agrees between two runs more often than chance, with this p-value or
#: less, repeats: it is a function of the data and of the receiver's own randomness
P_REPEAT = 1e-9


def joint_failures(
    first: Mapping[str, Any], second: Mapping[str, Any], *, p_min: float = P_MIN
) -> list[str]:
    """The joint-view test of one party (its randomness fixed in both runs, everyone
    else's fresh; the runs on one table, or on two with the same declared output): every
    receipt whose uniform payload agrees between the runs more often than independent
    uniform draws would (:func:`mpc.runtime.view.repeated_payloads`), or whose payload
    statistics differ between them (a two-sample chi-square test)."""
    va, vb = first.get("view") or {}, second.get("view") or {}

    def learnt(report: Mapping[str, Any]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for e in report.get("ledger", []):
            out[e["label"]].append(json.dumps(e.get("canonical", e["value"]), default=str))
        return out

    la, lb = learnt(first), learnt(second)
    opened = frozenset(k for k in la if la[k] == lb.get(k))
    out = []
    for receipt, (n, agree, chance) in sorted(repeated_payloads(va, vb, opened=opened).items()):
        if receipt in ALIGNED_RECEIPTS:
            continue
        p = repetition_p_value(agree, chance)
        if p < P_REPEAT:
            out.append(f"{receipt}: {agree} of {n} elements repeat ({chance:.2g} by chance)")
    ua, ub = va.get("uniform") or {}, vb.get("uniform") or {}
    for receipt in sorted(set(ua) & set(ub)):
        p = two_sample_p_value(ua[receipt], ub[receipt])
        if p < p_min:
            out.append(f"{receipt}: the two runs' payloads differ in distribution (p = {p:.2e})")
    return out


def undeclared(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The report's received lines of messages no receive declared."""
    return [r for r in report.get("received", []) if r["kind"] == "undeclared"]


@functools.cache
def _leakage_script() -> Any:
    """scripts/leakage_table.py, as a module."""
    path = ROOT / "scripts" / "leakage_table.py"
    spec = importlib.util.spec_from_file_location("leakage_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["leakage_table"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@functools.cache
def _documented() -> dict[str, Any]:
    script = _leakage_script()
    return {
        "page": script.documented(script.PAGE.read_text(encoding="utf-8")),
        "receipts": script.receipts(),
    }


def assert_documented(variant: str, run: Any) -> None:
    """Every message every party of ``run`` received is listed for ``variant`` on the
    page docs/leakage.md (scripts/leakage_table.py), under the kind the page states and with
    the words of the receipt as the code declares it."""
    script = _leakage_script()
    doc = _documented()
    page = doc["page"].get(variant)
    assert page is not None, f"docs/leakage.md has no section {variant!r}"
    for name, report in run.reports.items():
        label = script.party_label(variant, name, run)
        listed = page.get(label, {})
        for line in report.get("received", []):
            receipt = line["receipt"]
            if receipt.startswith("runtime/"):
                continue
            assert receipt in listed, (
                f"{variant}: {name} ({label}) received {receipt!r}, which docs/leakage.md does "
                "not list for it: run scripts/leakage_table.py"
            )
            kind, what = listed[receipt]
            assert kind == line["kind"], (
                f"{variant}: {receipt} is {line['kind']}, the page says {kind}"
            )
            code = doc["receipts"].get(receipt)
            assert code is not None, f"{receipt} is not a receipt declared at module level"
            expected = code.what + (f" (opens `{code.opens}`)" if code.opens else "")
            assert what == expected, f"docs/leakage.md describes {receipt} otherwise than the code"


#: the master seed of the joint-view runs: every party's randomness fixed in a base run, each
#: party's own seed from it (:func:`mpc.crypto.randomness.party_seed`)
MASTER = bytes(range(32))


#: the draws every party makes as in the base run, whoever's randomness is fixed: the key
#: shares of record alignment, whose common order every site learns (a data-dependent value
#: that another order moved would not repeat, and the test would not see it)
ALIGNED = ("order-key/",)
#: what those draws send: the same in both runs by construction
ALIGNED_RECEIPTS = frozenset({"record-alignment/key-share"})


@contextlib.contextmanager
def randomness_fixed(parties: Mapping[str, bytes] | None = None) -> Iterator[None]:
    """Runs started inside fix the randomness of ``parties`` (name -> seed), the others
    drawing theirs fresh but for the common record order (:data:`ALIGNED`), or of every party
    (by default: each its own seed from :data:`MASTER`) (:data:`FIXED_ENV`)."""
    table: dict[str, Any] = {"*": MASTER.hex()}
    if parties is not None:
        table.update({n: v.hex() for n, v in parties.items()}, **{"*labels": list(ALIGNED)})
    old = os.environ.get(FIXED_ENV)
    os.environ[FIXED_ENV] = json.dumps(table)
    try:
        yield
    finally:
        if old is None:
            del os.environ[FIXED_ENV]
        else:
            os.environ[FIXED_ENV] = old


def own_seed(party: str) -> dict[str, bytes]:
    """``party``'s seed in the base runs of :func:`randomness_fixed`, alone."""
    return {party: party_seed(MASTER, party)}


def cached(run: Callable[[Path], Any]) -> Callable[[Path], Any]:
    """``run`` that runs a table once under the same fixed randomness: the base tables of
    several parties are often the same table, whose run then serves them all."""
    done: dict[tuple[bytes, str | None], Any] = {}

    def once(table: Path) -> Any:
        key = (table.read_bytes(), os.environ.get(FIXED_ENV))
        if key not in done:
            done[key] = run(table)
        return done[key]

    return once


def check_swap(
    run: Callable[[Path], Any],
    party: str,
    base: Path,
    swapped: Path,
    *,
    expect_same: Callable[[Any, Any], bool] | None = None,
    variant: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``run(table)`` on the base and the swapped table, ``party``'s randomness the same
    in both (every party's fixed in the base run, ``party``'s alone in the swapped one);
    assert that ``party``'s views are the same, its uniform payloads uniform and, beside its
    own randomness, neither repeated nor different in distribution between the two runs
    (:func:`joint_failures`), and (``variant``) that every party's receipts are those
    docs/leakage.md lists. Returns both reports of ``party``."""
    with randomness_fixed():
        first = run(base)
    with randomness_fixed(own_seed(party)):
        second = run(swapped)
    for r in (first, second):
        assert r.ok, f"the run failed: {r.error}"
    if variant is not None:
        assert_documented(variant, first)
    if expect_same is not None:
        assert expect_same(first, second), "the two runs' public results differ"
    ra, rb = first.reports[party], second.reports[party]
    for rep in (ra, rb):
        assert not undeclared(rep), f"{party} received undeclared messages: {undeclared(rep)}"
        bad = uniformity_failures(rep)
        assert not bad, f"{party}: uniform payloads that are not uniform: {bad}"
    diff = differences(canonical_view(ra), canonical_view(rb))
    assert not diff, f"{party}'s view changed when records it cannot tell apart swapped:\n" + (
        "\n".join(diff)
    )
    joint = joint_failures(ra, rb)
    assert not joint, f"{party}'s view beside its own randomness depends on the data:\n" + (
        "\n".join(joint)
    )
    return ra, rb
