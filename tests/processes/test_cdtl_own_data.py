"""cdtl on the client's own files: ``mpc run cdtl --csv`` trains as ``--dataset`` does on the
same table; a client outsources its CSV in one session and, with its model file, classifies a
new CSV in a later one against a CDBS restarted on its database (killed mid-session too), with
the predictions of the same cdtl run in one process; a wrong model file or a missing column
ends a session with one line, a non-zero exit code and within the deadline."""

from __future__ import annotations

import asyncio
import csv
import json
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpc.crypto.sealed import ClientKey
from mpc.datasets import Discretizer, load_party_csv
from mpc.deployment.launcher import PartySpec, free_ports, write_deployment
from mpc.errors import InputError
from mpc.learners.evaluation import rows_of, train_test_split
from mpc.learners.model_file import ModelError, SavedModel, write_model
from mpc.runtime.keys import write_keypair
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from parties.cli.main import build_parser
from parties.own_party import OwnParty
from parties.programs.cdtl_sessions import (
    DB_FILE,
    MODEL_FILE,
    MODEL_SYSTEM,
    ClientModel,
    load_client_model,
    model_path,
    rows_to_classify,
)
from parties.systems.registry import get_system
from protocols.cdtl.anatomization import anatomize
from protocols.cdtl.cdbs import serve_client
from protocols.cdtl.cdtl import CDBS, CLIENT
from protocols.cdtl.client import CDBSClient, ClientCosts
from protocols.cdtl.joins import open_eseq
from protocols.cdtl.store import CDBSStore

from .. import datasets
from ..conftest import processes_mentioning, run_mpc, run_mpc_json
from ..harness import Parties, plan_deployment

#: every receive's deadline in the multi-process runs here (a dead party ends a run in it)
TIMEOUT = 10.0


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(header)
        out.writerows(rows)
    return path


def _synthetic(path: Path, n: int, seed: int, *, labelled: bool) -> Path:
    """A CSV whose class depends on identifying attributes and on the sensitive ``s`` (so
    that cdtl's subtrees split on it); unlabelled rows get an id column ``rid`` first, and a
    value never seen in training (``a9``) and a missing one (``?``) among them."""
    rng = np.random.default_rng(seed)
    a, b, c, s = (rng.integers(0, k, n) for k in (4, 3, 2, 3))
    y = ((a == 0) & (s != 1)) | ((a == 2) & (s == 2)) | ((b == 1) & (s == 0))
    y = np.where(rng.random(n) < 0.1, rng.integers(0, 2, n), y.astype(int))
    rows = [[f"a{a[i]}", f"b{b[i]}", f"c{c[i]}", f"s{s[i]}"] for i in range(n)]
    if labelled:
        labels = [[*r, f"y{y[i]}"] for i, r in enumerate(rows)]
        return _write_csv(path, ["a", "b", "c", "s", "y"], labels)
    rows[0][0], rows[1][1] = "a9", "?"
    with_ids = [[f"r{i:03d}", *r] for i, r in enumerate(rows)]
    return _write_csv(path, ["rid", "a", "b", "c", "s"], with_ids)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cdtl-files")
    train = _synthetic(d / "train.csv", 240, seed=1, labelled=True)
    new = _synthetic(d / "new.csv", 30, seed=2, labelled=False)
    with new.open() as fh:
        rows = list(csv.reader(fh))
    header = [h for h in rows[0] if h != "b"]
    body = [[v for h, v in zip(rows[0], r, strict=True) if h != "b"] for r in rows[1:]]
    no_b = _write_csv(d / "no-b.csv", header, body)
    return {"train": train, "new": new, "no_b": no_b}


@pytest.fixture(scope="module")
def outsourced(files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One outsourcing by ``mpc run cdtl-outsource`` (the local form): its model folder and
    the CDBS's database folder."""
    d = tmp_path_factory.mktemp("cdtl-outsourced")
    code, doc = run_mpc_json(
        "run", "cdtl-outsource", "--csv", str(files["train"]), "--class", "y", "--sensitive",
        "s", "--model-out", str(d / "model"), "--cdbs-db", str(d / "db"), "--quiet",
        deadline=60,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc
    return {"model": d / "model", "db": d / "db"}


def _predictions(path: Path) -> dict[str, str]:
    with path.open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["rid", "class"]
    return {r[0]: r[1] for r in rows[1:]}


def in_memory_reference(train: Path, new: Path) -> dict[str, str]:
    """The predictions of the same cdtl run in one process (the in-memory transport and an
    in-memory CDBS store, as tests/protocols/test_cdtl.py runs it): the training file
    outsourced with the shared prune set of seed 0 (no tuple needs suppressing for l = 2),
    each new row classified by Figure 3's Inference."""
    table = load_party_csv(train, id_column=None, class_column="y").table
    rows = load_party_csv(new, id_column="rid", nominal=["a", "b", "c", "s"])
    _, prune_rows = train_test_split(table.target, 0.2, seed=0)
    prune = set(prune_rows.tolist())
    key = ClientKey.generate()
    store = CDBSStore(":memory:")

    async def client(party: Party) -> list[str]:
        c = CDBSClient(party, key, sensitive="s", class_name="y")
        an = anatomize(table, "s", 2, key)
        _, original = open_eseq(an.it, key)
        await c.outsource(an, np.flatnonzero(np.isin(original, list(prune))))
        costs = ClientCosts()
        out = [await c.inference(table.name, r, prune, costs) for r in rows_of(rows.table)]
        await c.done()
        return out

    async def cdbs(party: Party) -> Any:
        return await serve_client(party, store, CLIENT)

    programs = {CLIENT: client, CDBS: cdbs}
    results, _ = asyncio.run(run_in_memory([CLIENT, CDBS], programs, roles={CDBS: CDBS}))
    return dict(zip(rows.ids.tolist(), results[CLIENT], strict=True))


# ----------------------------------------------------------------------------- the model


def _model(**changes: Any) -> ClientModel:
    fields: dict[str, Any] = {
        "key": ClientKey.generate(), "table": "cdtl-client/0f", "schema": "ab" * 16,
        "sensitive": "s", "class_name": "y", "attributes": ("age", "g", "s"),
        "kinds": ("continuous", "nominal", "nominal"),
        "discretizer": Discretizer(bins=4, edges={"age": (30.0, 50.0)}),
        "nominal_splits": "multiway", "l": 2, "prune": (0, 3), "training": {"rows": 9},
    }  # fmt: skip
    return ClientModel(**{**fields, **changes})


def test_the_client_model_round_trips_and_a_malformed_one_is_refused(tmp_path: Path) -> None:
    model = _model()
    path = tmp_path / "m.json"
    write_model(path, SavedModel(MODEL_SYSTEM, "client", "0f", model.body()))
    loaded, saved = load_client_model(path)
    assert loaded == model and saved.model_id == "0f"
    assert model.key.key_bytes().hex() not in repr(model)
    # --bin-attributes sensitive: a continuous non-sensitive attribute kept continuous, a
    # continuous sensitive one binned (a partial discretizer)
    for good in (
        _model(discretizer=None),
        _model(
            kinds=("continuous", "nominal", "continuous"),
            discretizer=Discretizer(bins=2, edges={"s": (0.5,)}, partial=True),
        ),
    ):
        write_model(path, SavedModel(MODEL_SYSTEM, "client", "0f", good.body()))
        assert load_client_model(path)[0] == good
    for bad in (
        {"sensitive": "y"},  # the class, not an attribute
        {"attributes": ("age", "g", "x")},  # the sensitive attribute is not among them
        # a continuous sensitive attribute without cut points
        {"kinds": ("continuous", "nominal", "continuous"), "discretizer": None},
        # a discretizer of every continuous attribute that misses one
        {"kinds": ("continuous", "continuous", "nominal")},
        # cut points of a nominal attribute
        {"discretizer": Discretizer(bins=4, edges={"g": (1.0,)}, partial=True)},
        {"nominal_splits": "ternary"},
        {"l": 1},
    ):
        body = _model(**bad).body()
        write_model(path, SavedModel(MODEL_SYSTEM, "client", "0f", body))
        with pytest.raises(ModelError, match="not a cdtl client model"):
            load_client_model(path)
    write_model(path, SavedModel("c45", None, "0f", model.body()))
    with pytest.raises(ModelError, match="holds a 'c45' model"):
        load_client_model(path)
    assert model_path(tmp_path) == tmp_path / MODEL_FILE
    assert model_path(tmp_path / "mine.json") == tmp_path / "mine.json"


def test_a_file_to_classify_is_read_with_the_models_kinds_and_cut_points(tmp_path: Path) -> None:
    """Columns in any order, others ignored, the class optional; the continuous column is
    binned with the stored cut points (never new ones); a missing column is named."""
    path = _write_csv(tmp_path / "new.csv", ["note", "s", "rid", "age", "g"],
                      [["x", "s1", "r1", "29", "1"], ["y", "s0", "r2", "80", "0"]])  # fmt: skip
    me = OwnParty(CLIENT, CLIENT, "tcp://127.0.0.1:1", "", None, data=path, id_column="rid")
    own, table = rows_to_classify(me, _model())
    assert own.ids.tolist() == ["r1", "r2"] and not own.table.class_name
    assert table.attributes == ("age", "g", "s") and set(table.kinds) == {"nominal"}
    assert table.column("age").tolist() == ["<=30", ">50"]
    assert table.column("g").tolist() == ["1", "0"]  # read as the model read it: a category
    # without cut points of age (--bin-attributes sensitive), age is read as a number
    _, kept = rows_to_classify(me, _model(discretizer=None))
    assert kept.kinds == ("continuous", "nominal", "nominal")
    assert kept.column("age").tolist() == [29.0, 80.0]
    with pytest.raises(InputError, match=r"the model reads the column 'gg', not in the file"):
        rows_to_classify(me, _model(attributes=("age", "gg", "s")))


# ----------------------------------------------------------------------------- (a) --csv


@pytest.mark.processes
@pytest.mark.datasets
@pytest.mark.timeout(90)
def test_the_csv_path_trains_as_the_dataset_path_on_the_same_table(tmp_path: Path) -> None:
    """car written to a CSV file: the client reads it itself and makes the same folds, prune
    sets, BDTs and trees as from the launcher's table (car has no missing value and
    ``safety`` is 3-diverse as it is, so nothing random changes a tree)."""
    table, _ = datasets.table("car")
    rows = [[*r, y] for r, y in zip(zip(*table.columns, strict=True), table.target, strict=True)]
    path = _write_csv(tmp_path / "car.csv", [*table.attributes, "label"], rows)
    common = ["--sensitive", "safety", "--where", "buying=low", "--cv", "2", "--quiet"]
    runs = {}
    keep = tmp_path / "run"
    own = ["--csv", str(path), "--class", "label", "--keep", str(keep)]
    for source in (["--dataset", "car"], own):
        code, doc = run_mpc_json("run", "cdtl", *source, *common, deadline=80)
        assert code == 0 and doc["ok"], doc
        runs[source[0]] = doc["result"]
    # the launcher gave the client its file, not a table it read for it
    assert not (keep / "data" / "client.json").exists()
    assert (keep / "data" / "client.csv").read_text() == path.read_text()
    dataset, own = runs["--dataset"], runs["--csv"]
    assert own["rows"] == dataset["rows"] == 432
    assert len(own["per_fold"]) == len(dataset["per_fold"]) == 2
    for mine, theirs in zip(own["per_fold"], dataset["per_fold"], strict=True):
        for field in ("train", "test", "suppressed", "bdt_leaves", "max_leaf"):
            assert mine[field] == theirs[field], field
        for method in ("cdtl", "cnl", "cdbsl"):
            for field in ("accuracy", "memory_tuples", "tuples_held", "subtrees_learned"):
                assert mine[method][field] == theirs[method][field], (method, field)
    assert own["cdbs"]["subtrees"] == dataset["cdbs"]["subtrees"]


@pytest.mark.processes
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--class", "y", "--sensitive", "salary"], "--sensitive 'salary': not a column of"),
        (["--class", "income", "--sensitive", "s"], "column 'income': the class column is not"),
        (["--class", "y", "--sensitive", "y"], "--sensitive 'y' is the class column"),
        (["--sensitive", "s"], "needs --class COL"),
    ],
)
def test_a_csv_that_does_not_fit_fails_with_one_line_naming_the_columns(
    files: dict[str, Path], args: list[str], named: str
) -> None:
    code, out, err = run_mpc("run", "cdtl", "--csv", str(files["train"]), *args, deadline=50)
    assert code == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and err.startswith("mpc: error: ") and named in err, err
    if "not a column" in named or "class column is not" in named:
        assert "['a', 'b', 'c', 's'" in err  # the file's columns, named


# ------------------------------------------------------------------- (b) come back later


def _deployment(directory: Path, system: str, *args: str, keys: Path, ports: list[int]) -> Path:
    """The deployment of ``mpc run SYSTEM ARGS`` for parties started by hand: the CDBS's and
    the client's keys from ``keys`` (the same in every session), fixed ports, and no private
    file in it (each party is given its own files on its command line)."""
    system_ = get_system(system)
    plan = system_.plan_from(build_parser().parse_args(["run", system, *args]))
    endpoints = [(f"tcp://127.0.0.1:{port}", "") for port in ports]
    return write_deployment(
        directory, system, plan.params, [PartySpec(p.name, p.role) for p in plan.parties],
        timeout=TIMEOUT, insecure=False, endpoints=endpoints, keys=str(keys),
    )  # fmt: skip


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_a_client_comes_back_to_a_restarted_cdbs_and_classifies_a_new_file(
    tmp_path: Path, files: dict[str, Path]
) -> None:
    """Session 1 outsources the training CSV; its CDBS process ends. Session 2 is a new
    client process with the model file and an unlabelled CSV, against a new CDBS process on
    the same database folder and key, which is killed mid-session and started again. The
    predictions are those of the same cdtl run in one process; a third session (the local
    form, ``mpc run cdtl-classify``) is served every refined leaf from the database and
    predicts the same."""
    keys, db, model = tmp_path / "keys", tmp_path / "db", tmp_path / "model"
    for name in (CLIENT, CDBS):
        write_keypair(keys, name)
    secret = {name: ["--secret-key", str(keys / f"{name}.secret")] for name in (CLIENT, CDBS)}
    ports = free_ports(2)
    roles = {CLIENT: CLIENT, CDBS: CDBS}
    outsource = _deployment(
        tmp_path / "outsource", "cdtl-outsource", "--csv", str(files["train"]), "--class", "y",
        "--sensitive", "s", "--model-out", str(model), "--cdbs-db", str(db), keys=keys,
        ports=ports,
    )  # fmt: skip
    with Parties(outsource, roles) as run:
        run.start(CDBS, *secret[CDBS])
        run.start(CLIENT, *secret[CLIENT], "--data", str(files["train"]), "--model-out",
                  str(model / MODEL_FILE))  # fmt: skip
        codes = run.wait([CLIENT, CDBS], deadline=40)
        assert codes == {CLIENT: 0, CDBS: 0}, {n: run.log(n) for n in codes}
        outsourced = run.report(CLIENT)["result"]
    assert outsourced["suppressed"] == 0 and outsourced["outsourced"] == 240
    # the model file holds the key, and nothing else does
    key = json.loads((model / MODEL_FILE).read_text())["body"]["key"]
    assert (model / MODEL_FILE).stat().st_mode & 0o777 == 0o600
    for label in (CLIENT, CDBS):
        assert key not in run.log(label) and key not in run.report_path(label).read_text()
    assert bytes.fromhex(key) not in (db / DB_FILE).read_bytes()
    assert (db / DB_FILE).is_file()

    predictions = tmp_path / "predictions.csv"
    classify = _deployment(
        tmp_path / "classify", "cdtl-classify", "--csv", str(files["new"]), "--model",
        str(model), "--cdbs-db", str(db), keys=keys, ports=ports,
    )  # fmt: skip
    with Parties(classify, roles) as run:
        # the first CDBS process dies after the schema check and three answers
        run.start(CDBS, *secret[CDBS], "--kill-after", "4")
        own = ["--data", str(files["new"]), "--id", "rid", "--model", str(model / MODEL_FILE)]
        run.start(CLIENT, *secret[CLIENT], *own, "--predictions-out", str(predictions))
        assert run.wait([CDBS], deadline=40) == {CDBS: -signal.SIGKILL}, run.log(CDBS)
        run.start(CDBS, *secret[CDBS], label="cdbs-2")
        codes = run.wait([CLIENT, "cdbs-2"], deadline=40)
        assert codes == {CLIENT: 0, "cdbs-2": 0}, {n: run.log(n) for n in codes}
        assert "cdbs was restarted; carrying on with the new process" in run.log(CLIENT)
        classified = run.report(CLIENT)["result"]
    assert processes_mentioning(str(tmp_path)) == []
    assert classified["rows"] == 30 and classified["subtrees_learned"] > 0
    got = _predictions(predictions)
    assert got == in_memory_reference(files["train"], files["new"])

    # a third session: the local form, on the same database folder
    again = tmp_path / "again.csv"
    code, doc = run_mpc_json(
        "run", "cdtl-classify", "--csv", str(files["new"]), "--id", "rid", "--model",
        str(model), "--cdbs-db", str(db), "--predictions-out", str(again), deadline=60,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc
    assert doc["result"]["subtrees_learned"] == 0  # every leaf it reached was refined before
    assert _predictions(again) == got


# ---------------------------------------------------------------- (c) what goes wrong


def _edited(model: Path, directory: Path) -> Path:
    """A copy of the model file with its ``l`` changed by hand (the digest left as it was)."""
    doc = json.loads((model / MODEL_FILE).read_text())
    doc["body"]["l"] = 3
    path = directory / "edited.model.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.processes
@pytest.mark.timeout(60)
def test_mpc_run_refuses_an_edited_model_or_a_missing_column_before_starting(
    tmp_path: Path, files: dict[str, Path], outsourced: dict[str, Path]
) -> None:
    edited = _edited(outsourced["model"], tmp_path)
    for csv_file, model, named in (
        (files["new"], edited, "was changed after training"),
        (files["no_b"], outsourced["model"], "the model reads the column 'b', not in the file"),
    ):
        code, out, err = run_mpc(
            "run", "cdtl-classify", "--csv", str(csv_file), "--id", "rid", "--model",
            str(model), "--cdbs-db", str(outsourced["db"]), deadline=50,
        )  # fmt: skip
        assert code == 2 and out == "", (out, err)
        assert err.count("\n") == 1 and err.startswith("mpc: error: ") and named in err, err


@pytest.mark.processes
@pytest.mark.timeout(90)
@pytest.mark.parametrize("fault", ["edited model", "missing column"])
def test_a_classifying_client_with_a_wrong_input_ends_both_parties_at_once(
    tmp_path: Path, files: dict[str, Path], outsourced: dict[str, Path], fault: str
) -> None:
    """The client process finds the fault once the run has started: it exits 2 with one
    line naming the fault; the CDBS is told only what is wrong, never the file's content,
    and exits 1; both well within the deadline."""
    config, roles = plan_deployment(
        tmp_path / "run", "cdtl-classify", "--csv", str(files["new"]), "--id", "rid",
        "--model", str(outsourced["model"]), "--cdbs-db", str(outsourced["db"]),
        timeout=TIMEOUT,
    )  # fmt: skip
    edited = _edited(outsourced["model"], tmp_path)
    wrong = ["--model", str(edited)] if fault == "edited model" else ["--data", str(files["no_b"])]
    with Parties(config, roles) as run:
        run.start(CDBS)
        run.start(CLIENT, *wrong)
        codes = run.wait([CLIENT, CDBS], deadline=TIMEOUT)
        assert codes == {CLIENT: 2, CDBS: 1}, {n: run.log(n) for n in codes}
        client, cdbs = run.report(CLIENT)["error"], run.report(CDBS)["error"]
    assert client["type"] == "InputError" and "\n" not in client["message"]
    if fault == "edited model":
        assert f"model file {edited} was changed after training" in client["message"]
        public = "its model file cannot be used"
    else:
        assert "the model reads the column 'b', not in the file" in client["message"]
        public = "its data file lacks a column the model reads"
    assert cdbs["type"] == "PeerAborted" and public in cdbs["message"], cdbs
    assert str(tmp_path) not in cdbs["message"] and "'b'" not in cdbs["message"]
