"""Faults across real processes over TCP with CurveZMQ: a party killed mid-protocol, a party
paused past the deadline, the CDBS process restarted on its database while its clients run.

Each survivor must end by itself within the deadline, with an error that names the party at
fault and the protocol step. Other fault tests live beside their systems: a killed site
(``test_processes.py``, ``test_ppid3.py``), a CDBS killed mid-request (``test_cdtl.py``).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mpc.crypto.sealed import ClientKey, open_json
from mpc.learners.evaluation import rows_of
from mpc.learners.tree import from_json, predict_one
from parties.programs.cdtl_tables import table_of_doc
from protocols.cdtl.cdtl import subtree_aad
from protocols.cdtl.find_leaf import find_bdt_leaf
from protocols.cdtl.store import CDBSStore

from .. import datasets
from ..conftest import processes_mentioning, run_mpc_json
from ..harness import Parties, plan_deployment

#: a table whose BDT leaves need refining (every leaf of weather's is answered by the CDBS)
HOUSE_VOTES = ("--dataset", "house-votes-84", "--sensitive", "physician-fee-freeze",
               "--class", "party")  # fmt: skip

pytestmark = [pytest.mark.processes, pytest.mark.timeout(90)]

HYBRID = ["--dataset", "weather", "--theta", "0.8", "--window", "2", "--seed", "1"]


def _named_error(report: dict[str, Any], peer: str, step_prefix: str) -> dict[str, Any]:
    """The report's error, checked to name ``peer`` and a step starting with ``step_prefix``."""
    err = report["error"]
    assert err is not None, report
    assert err["peer"] == peer and peer in err["message"], err
    assert err["step"].startswith(step_prefix), err
    return dict(err)


@pytest.mark.parametrize(
    ("system", "args", "step"),
    [
        ("hybrid-id3", HYBRID, "hybrid/"),
        ("ppid3", ["--sites", "3", "--counts", "fast", "--helper", "dealer"], "ppid3/"),
    ],
    ids=["hybrid-id3", "ppid3-fast-counts"],
)
def test_the_dealer_killed_mid_run_ends_every_other_party(
    tmp_path: Path, system: str, args: list[str], step: str
) -> None:
    keep = tmp_path / "run"
    code, doc = run_mpc_json(
        "run", system, *args, "--kill", "dealer", "--after", "10", "--timeout", "5",
        "--keep", str(keep), deadline=80,
    )  # fmt: skip
    assert code == 1 and doc["ok"] is False
    parties = doc["parties"]
    assert parties["dealer"]["exit_code"] == -9
    others = [n for n in parties if n != "dealer"]
    assert len(others) >= 2
    # exactly the dealer's first 10 messages left it, so none of the others can have finished
    from_dealer = [parties[n]["metrics"]["per_peer"]["dealer"]["messages_received"] for n in others]
    assert sum(from_dealer) <= 10, from_dealer
    for name in others:
        assert parties[name]["exit_code"] == 1, parties[name]
        err = _named_error(parties[name], "dealer", step)
        assert err["type"] in ("PeerLost", "PeerAborted"), err
    assert processes_mentioning(str(keep)) == []


def test_a_client_killed_mid_run_ends_the_cdbs(tmp_path: Path) -> None:
    keep = tmp_path / "run"
    code, doc = run_mpc_json(
        "run", "cdtl", "--sensitive", "windy", "--cv", "2", "--method", "cdtl",
        "--kill", "client", "--after", "4", "--timeout", "5", "--keep", str(keep), deadline=80,
    )  # fmt: skip
    assert code == 1 and doc["ok"] is False
    assert doc["parties"]["client"]["exit_code"] == -9
    cdbs = doc["parties"]["cdbs"]
    assert cdbs["exit_code"] == 1
    err = _named_error(cdbs, "client", "cdtl/req")
    assert err["type"] == "PeerLost", err
    assert processes_mentioning(str(keep)) == []


@pytest.mark.parametrize(
    ("system", "args", "paused"),
    [("ppid3", ["--sites", "3"], "site2"), ("hybrid-id3", HYBRID, "dealer")],
    ids=["ppid3-site", "hybrid-id3-dealer"],
)
def test_a_party_paused_past_the_deadline_is_named_by_every_other(
    tmp_path: Path, system: str, args: list[str], paused: str
) -> None:
    """One party SIGSTOPs itself after its fifth protocol message, long before its part is
    done: the others end with PeerTimeout naming it (or an abort that relays such a
    timeout) within the deadline; resumed after they left, the paused party ends too."""
    config, roles = plan_deployment(tmp_path, system, *args, timeout=3)
    others = [n for n in roles if n != paused]
    with Parties(config, roles) as run:
        for name in roles:
            run.start(name, *(["--stop-after", "5"] if name == paused else []))
        run.wait_for_log(paused, "fault injection: stopping", deadline=30)
        codes = run.wait(others, deadline=30)
        assert codes == dict.fromkeys(others, 1), {n: run.log(n) for n in others}
        errors = {n: _named_error(run.report(n), paused, "") for n in others}
        timeouts = [n for n, e in errors.items() if e["type"] == "PeerTimeout"]
        assert timeouts, errors  # at least one noticed the silence itself ...
        for name, err in errors.items():  # ... and told the others
            assert err["type"] == "PeerTimeout" or (
                err["type"] == "PeerAborted" and "PeerTimeout" in err["message"]
            ), (name, err)
            assert err["step"] not in ("", "startup handshake"), err
        run.signal(paused, signal.SIGCONT)
        assert run.wait([paused], deadline=30) == {paused: 1}
        late = run.report(paused)["error"]
        assert late["type"] in ("PeerAborted", "PeerLost", "PeerTimeout"), late
        assert late["peer"] in others or late["peer"] == paused, late
    assert processes_mentioning(str(config)) == []


@pytest.mark.parametrize(
    ("system", "args", "busy"),
    [("ppid3", ["--sites", "3"], "site2"), ("hybrid-id3", HYBRID, "dealer")],
    ids=["ppid3-site", "hybrid-id3-dealer"],
)
def test_a_party_computing_past_the_deadline_is_waited_for_and_the_run_ends_well(
    tmp_path: Path, system: str, args: list[str], busy: str
) -> None:
    """One party computes on its event loop for 6 s (three deadlines of 2 s, three probe
    timeouts) after its fifth protocol message, never yielding, as numpy on a large table
    does: its runtime answers the probes of the parties that wait for it meanwhile, saying it
    computes, so they wait on, and every party ends well. (A party stopped instead, answering
    nothing, is named by every other within the deadline:
    test_a_party_paused_past_the_deadline_is_named_by_every_other.)"""
    config, roles = plan_deployment(tmp_path, system, *args, timeout=2)
    with Parties(config, roles) as run:
        for name in roles:
            extra = ["--compute-after", "5", "--compute-for", "6"] if name == busy else []
            run.start(name, *extra)
        codes = run.wait(list(roles), deadline=60)
        logs = {n: run.log(n) for n in roles}
        assert codes == dict.fromkeys(roles, 0), logs
        assert "fault injection: computing for 6 s" in logs[busy], logs[busy]
        waited = [n for n in roles if n != busy and f"{busy} is computing" in logs[n]]
        assert waited, logs  # the deadline passed for some party, which waited on
    assert processes_mentioning(str(config)) == []


def _stored_subtrees(db: Path) -> dict[tuple[str, str], bytes]:
    """(table, leaf) -> sealed subtree, as the CDBS's database holds them."""
    with contextlib.closing(sqlite3.connect(db)) as con:
        return {
            (n, leaf): bytes(b)
            for n, leaf, b in con.execute("SELECT name, leaf, blob FROM subtrees")
        }


def _answers_from_the_store(
    db: Path, key: ClientKey, name: str, rows: list[dict[str, Any]]
) -> list[str]:
    """The class the stored BDT and the stored subtree of each row's leaf give the row."""
    with contextlib.closing(sqlite3.connect(db)) as con:
        (bdt_json,) = con.execute("SELECT bdt FROM outsourced WHERE name = ?", (name,)).fetchone()
    bdt, subtrees = from_json(json.loads(bdt_json)), _stored_subtrees(db)
    answers = []
    with contextlib.closing(CDBSStore(db)) as store:
        loaded = store.load(name)
        for row in rows:
            leaf, node = find_bdt_leaf(bdt, row)
            blob = subtrees.get((name, leaf))
            if blob is None:  # nothing refined: the BDT's label, or a one-leaf subtree's class
                label = loaded.final_label(leaf, node)
                assert label is not None, f"leaf {leaf!r} needed a subtree but has none"
                answers.append(label)
            else:
                subtree = from_json(open_json(key, blob, subtree_aad(name, leaf)))
                answers.append(str(predict_one(subtree, row)))
    return answers


def test_the_cdbs_process_restarted_on_its_database_serves_the_clients_on(
    tmp_path: Path,
) -> None:
    """Three clients predict concurrently; the CDBS process is killed between two requests
    and a new process started on the same SQLite file. The clients carry on in the same
    processes: every answer is the stored trees' answer, every subtree stored before the
    restart is served as it was (not learned again), and no leaf gets a second subtree."""
    datasets.needs("house-votes-84")
    db = tmp_path / "cdbs.sqlite"
    config, roles = plan_deployment(
        tmp_path / "run", "cdbs-load", *HOUSE_VOTES, "--clients", "3", "--predictions", "1",
        "--db", str(db), timeout=15,
    )  # fmt: skip
    clients = [n for n in roles if n != "cdbs"]
    # every client asks about every row twice over, all in the same order. The CDBS dies right
    # after its answer to the outsourcing and n answers more (about a third of each client's
    # first pass), so the second pass, served by the new process, reaches every leaf refined
    # before the restart, whatever BDT the random grouping gave
    data = json.loads((config.parent / "data" / f"{clients[0]}.json").read_text())
    rows = rows_of(table_of_doc(data["table"]))
    for client in clients:
        path = config.parent / "data" / f"{client}.json"
        mine = json.loads(path.read_text())
        mine["queries"] = [*range(len(rows)), *range(len(rows))]
        path.write_text(json.dumps(mine))
    with Parties(config, roles) as run:
        run.start("cdbs", "--kill-after", str(1 + len(rows)))
        for name in clients:
            run.start(name)
        assert run.wait(["cdbs"], deadline=60) == {"cdbs": -signal.SIGKILL}
        before = _stored_subtrees(db)
        assert before, "the first CDBS process stored no subtree"
        run.start("cdbs", label="cdbs-2")
        codes = run.wait([*clients, "cdbs-2"], deadline=60)
        assert codes == dict.fromkeys([*clients, "cdbs-2"], 0), {n: run.log(n) for n in codes}
        reports = {n: run.report(n) for n in [*clients, "cdbs-2"]}
    assert processes_mentioning(str(config)) == []
    for name in clients:
        assert "cdbs was restarted; carrying on with the new process" in run.log(name)
    # every answer is what the stored BDT and subtrees say
    key = ClientKey.from_bytes(bytes.fromhex(data["key"]))
    name = data["table"]["name"]
    expected = _answers_from_the_store(db, key, name, rows)
    for client in clients:
        result = reports[client]["result"]
        assert len(result["predictions"]) == 2 * len(rows)
        for q, pred in zip(result["queries"], result["predictions"], strict=True):
            assert pred == expected[int(q)], (client, q)
    # subtrees stored before the restart are kept byte for byte and served from the store
    after = _stored_subtrees(db)
    assert all(after[k] == blob for k, blob in before.items())
    ledger = reports["cdbs-2"]["ledger"]
    served = {(e["value"]["name"], e["value"]["leaf"]) for e in ledger
              if e["label"] == "cdtl/visited-leaf" and e["value"]["refined"]}  # fmt: skip
    assert set(before) <= served, "a subtree stored before the restart was not served after it"
    uploads = [e["value"] for e in ledger if e["label"] == "cdtl/ciphertext"]
    stored = [(u["name"], u["leaf"]) for u in uploads if u["stored"]]
    assert not set(stored) & set(before)  # a leaf refined before the restart got nothing new
    assert len(stored) == len(set(stored)) == len(after) - len(before)


def _flip_a_byte(db: Path) -> None:
    """Change the last byte (inside the GCM tag) of every stored subtree."""
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        for (name, leaf), blob in _stored_subtrees(db).items():
            bad = blob[:-1] + bytes([blob[-1] ^ 0x01])
            con.execute(
                "UPDATE subtrees SET blob = ? WHERE name = ? AND leaf = ?", (bad, name, leaf)
            )


def _move_subtrees(db: Path) -> None:
    """Give every leaf that has a subtree the subtree sealed for the next such leaf."""
    stored = sorted(_stored_subtrees(db).items())
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        for ((name, leaf), _), (_, other) in zip(stored, stored[1:] + stored[:1], strict=True):
            con.execute(
                "UPDATE subtrees SET blob = ? WHERE name = ? AND leaf = ?", (other, name, leaf)
            )


@pytest.mark.parametrize("tamper", [_flip_a_byte, _move_subtrees], ids=["flipped", "moved"])
def test_a_cdbs_serving_a_tampered_subtree_is_caught_by_the_client(
    tmp_path: Path, tamper: Any
) -> None:
    """The CDBS process is killed between requests, its database altered (a byte of every
    sealed subtree flipped, or subtrees moved to other leaves) and a new process serves the
    client on: the client refuses the first altered subtree with an AuthenticationError
    naming the leaf and the table, and its abort ends the CDBS, which names the client."""
    datasets.needs("house-votes-84")
    db = tmp_path / "cdbs.sqlite"
    config, roles = plan_deployment(
        tmp_path / "run", "cdbs-load", *HOUSE_VOTES, "--clients", "1", "--predictions", "1",
        "--db", str(db), timeout=15,
    )  # fmt: skip
    # the client asks about every row twice over. The CDBS dies right after its answer to the
    # outsourcing and the n answers of the first pass, when every leaf that needs refining has
    # its subtree stored; the second pass, served by the new process, reaches them all again,
    # whatever BDT the random grouping gave
    path = config.parent / "data" / "client1.json"
    data = json.loads(path.read_text())
    name = data["table"]["name"]
    rows = rows_of(table_of_doc(data["table"]))
    data["queries"] = [*range(len(rows)), *range(len(rows))]
    path.write_text(json.dumps(data))
    with Parties(config, roles) as run:
        run.start("cdbs", "--kill-after", str(1 + len(rows)))
        run.start("client1")
        assert run.wait(["cdbs"], deadline=60) == {"cdbs": -signal.SIGKILL}
        with contextlib.closing(sqlite3.connect(db)) as con:
            (bdt_json,) = con.execute("SELECT bdt FROM outsourced").fetchone()
        bdt = from_json(json.loads(bdt_json))
        leaves = sorted({(name, find_bdt_leaf(bdt, r)[0]) for r in rows})
        assert len(_stored_subtrees(db)) >= 2  # so that moving changes every subtree
        tamper(db)
        run.start("cdbs", label="cdbs-2")
        codes = run.wait(["client1", "cdbs-2"], deadline=60)
        assert codes == {"client1": 1, "cdbs-2": 1}, {n: run.log(n) for n in codes}
        client, cdbs = run.report("client1")["error"], run.report("cdbs-2")["error"]
    assert processes_mentioning(str(config)) == []
    assert client["type"] == "AuthenticationError", client
    assert any(f"leaf {leaf!r} of table {name!r}" in client["message"] for _, leaf in leaves), (
        client
    )
    assert "failed authentication" in client["message"]
    assert cdbs["type"] == "PeerAborted" and cdbs["peer"] == "client1", cdbs
    assert cdbs["step"] == "cdbs-load/predict", cdbs
    assert "AuthenticationError" in cdbs["message"]
