"""Every site brings only its own file: PPID3 from per-site CSVs in their own row order, saved
model parts, classification of new records later, and the errors that stop every party.

The hypothesis test runs the real party program (:func:`parties.programs.ppid3.run`) for
every site in one process over the in-memory network, each reading only its own CSV; the
process tests run ``mpc run`` and the party processes over TCP."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.datasets import NOMINAL, Table
from mpc.deployment.launcher import PartySpec, launch, write_deployment
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import to_json
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.local import run_in_memory
from parties.own_party import OwnParty
from parties.programs.ppid3 import run as ppid3_run
from protocols.ppid3.ppid3 import assemble, check_tree_equal

from .. import datasets
from ..conftest import ROOT, run_mpc
from ..harness import Parties

pytestmark = pytest.mark.timeout(180)

SITES = ["site1", "site2", "site3"]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(header)
        out.writerows(rows)
    return path


def split_files(
    folder: Path,
    columns: dict[str, list[str]],
    target: list[str] | None,
    parts: list[list[str]],
    *,
    seed: int,
    prefix: str = "",
    ids: list[str] | None = None,
) -> list[Path]:
    """One CSV per site (id column, its columns, the class on the last), rows shuffled."""
    n = len(next(iter(columns.values())))
    ids = ids or [f"{prefix}{i}" for i in range(n)]
    paths = []
    for s, attrs in enumerate(parts):
        order = np.random.default_rng([seed, s]).permutation(n)
        with_class = target is not None and s == len(parts) - 1
        header = ["id", *attrs, *(["class"] if with_class else [])]
        rows = [
            [ids[r], *(columns[a][r] for a in attrs), *([target[r]] if with_class else [])]  # type: ignore[index]
            for r in order
        ]
        paths.append(write_csv(folder / f"{prefix}site{s + 1}.csv", header, rows))
    return paths


def config(parts: list[list[str]], counts: str = "psi") -> DeploymentConfig:
    params = {
        "class_site": SITES[-1],
        "class": "class",
        "attribute_counts": [len(p) for p in parts],
        "sites": SITES,
        "counts": counts,
        "bins": 4,
    }
    parties = tuple(
        OwnParty(n, "site", "tcp://127.0.0.1:1", "tcp://127.0.0.1:1", None) for n in SITES
    )
    return DeploymentConfig(Path("memory.toml"), parties, "ppid3", params, insecure=True)


def run_sites(cfg: DeploymentConfig, me: dict[str, OwnParty]) -> dict[str, Any]:
    async def program(party: Any) -> Any:
        return await ppid3_run(party, cfg, me[party.name])

    results, parties = asyncio.run(run_in_memory(SITES, program, timeout=20))
    return {"results": results, "ledgers": {n: p.ledger.to_list() for n, p in parties.items()}}


tables = st.integers(2, 5).flatmap(
    lambda n_attr: st.tuples(
        st.just(n_attr),
        st.integers(6, 30),
        st.integers(0, 2**32 - 1),
    )
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tables)
def test_private_tree_from_shuffled_own_files_equals_plain_id3_and_saved_parts_predict_alike(
    tmp_path_factory: pytest.TempPathFactory, spec: tuple[int, int, int]
) -> None:
    n_attr, n_rows, seed = spec
    n_attr = max(n_attr, 3)
    folder = tmp_path_factory.mktemp("own")
    rng = np.random.default_rng(seed)
    attrs = [f"a{j}" for j in range(n_attr)]
    columns = {a: [f"v{x}" for x in rng.integers(0, 3, n_rows)] for a in attrs}
    target = [f"c{x}" for x in rng.integers(0, 2, n_rows)]
    parts = [attrs[0::3], attrs[1::3], attrs[2::3]]
    files = split_files(folder, columns, target, parts, seed=seed, prefix="R#")
    me = {
        n: OwnParty(
            n,
            "site",
            "tcp://127.0.0.1:1",
            "tcp://127.0.0.1:1",
            None,
            data=f,
            columns=tuple(parts[i]),
            id_column="id",
            model_out=folder / f"{n}.model.json",
        )
        for i, (n, f) in enumerate(zip(SITES, files, strict=True))
    }
    trained = run_sites(config(parts), me)
    view = assemble(
        {n: trained["results"][n]["tree"] for n in SITES}, {n: i for i, n in enumerate(SITES)}
    )
    table = Table(
        "t", tuple(attrs), (NOMINAL,) * n_attr,
        tuple(np.array(columns[a], dtype=object) for a in attrs),
        np.array(target, dtype=object), "class", "memory",
    )  # fmt: skip
    order = [a for p in parts for a in p]
    plain = ID3Classifier().fit(
        table, attribute_order=order, sites={a: i for i, p in enumerate(parts) for a in p}
    )
    assert check_tree_equal(view, to_json(plain.tree_))

    # new records, unlabelled, each site's file in its own order, classified with the parts
    n_new = 25
    new_cols = {a: [f"v{x}" for x in rng.integers(0, 4, n_new)] for a in attrs}  # v3: unseen
    new_files = split_files(folder, new_cols, None, parts, seed=seed + 1, prefix="new")
    use = {
        n: OwnParty(
            n,
            "site",
            "tcp://127.0.0.1:1",
            "tcp://127.0.0.1:1",
            None,
            data=f,
            id_column="id",
            model=folder / f"{n}.model.json",
            predictions=folder / "predictions.csv",
        )
        for n, f in zip(SITES, new_files, strict=True)
    }
    classified = run_sites(config(parts), use)
    got = dict(classified["results"][SITES[-1]]["predictions"])
    new_table = Table(
        "n", tuple(attrs), (NOMINAL,) * n_attr,
        tuple(np.array(new_cols[a], dtype=object) for a in attrs),
        np.empty(0, dtype=object), "", "memory",
    )  # fmt: skip
    expected = plain.predict(new_table)
    assert [got[f"new{i}"] for i in range(n_new)] == list(map(str, expected))
    with (folder / "predictions.csv").open() as fh:
        assert {r["id"]: r["class"] for r in csv.DictReader(fh)} == got
    # no ledger of either run holds a record id
    for run in (trained, classified):
        text = json.dumps(run["ledgers"])
        assert '"new' not in text and '"R#' not in text


# ------------------------------------------------------------------ over TCP, end to end


def test_mpc_run_trains_saves_and_classifies_a_thousand_new_records(tmp_path: Path) -> None:
    """The acceptance path, with both count backends: three processes with their own files,
    model parts, then 1,000 unlabelled records classified as plain ID3 does (the
    set-intersection counts to depth 3, which keeps the run under half a minute; the fast
    counts grow the whole tree)."""
    car = datasets.folder("car") / "car.data"  # the package's copy
    rows = [line.split(",") for line in car.read_text().split() if line]
    header = ["buying", "maint", "doors", "persons", "lug_boot", "safety", "class"]
    train = write_csv(tmp_path / "train.csv", header, [r for r in rows[1000:]])
    new = write_csv(
        tmp_path / "new.csv",
        ["rid", *header[:-1]],
        [[f"n{i}", *r[:6]] for i, r in enumerate(rows[:1000])],
    )
    from mpc.datasets import load_csv

    table = load_csv(train, "class")
    for counts in ("psi", "fast"):
        models = tmp_path / f"models-{counts}"
        depth = 3 if counts == "psi" else None
        code, out, err = run_mpc(
            "run", "ppid3", "--csv", str(train), "--class", "class", "--sites", "3",
            "--counts", counts, "--reveal", "counts", "--model-out", str(models), "--json",
            *(["--max-depth", str(depth)] if depth else []), deadline=150,
        )  # fmt: skip
        assert code == 0, err
        doc = json.loads(out)
        assert doc["result"]["identical"] is True
        assert sorted(p.name for p in models.iterdir()) == [f"{s}.model.json" for s in SITES]
        predictions = tmp_path / f"pred-{counts}.csv"
        part = doc["result"]["partition"]
        if counts == "psi":  # one joined file, split by the launcher (a local demo)
            source = ["--csv", str(new), "--id", "rid"]
        else:  # one file per site, each with its own columns in its own row order
            columns = {h: [r[j] for r in rows[:1000]] for j, h in enumerate(header[:-1])}
            ids = [f"n{i}" for i in range(1000)]
            files = split_files(tmp_path, columns, None, part["sites"], seed=5, ids=ids)
            source = ["--data", ",".join(map(str, files)), "--id", "id"]
        code, out, err = run_mpc(
            "run", "ppid3-classify", "--model", str(models), *source,
            "--predictions-out", str(predictions), "--json", deadline=120,
        )  # fmt: skip
        assert code == 0, err
        if counts == "psi":
            assert json.loads(out)["result"]["equal_to_plain_tree"] is True
        order = [a for s in part["sites"] for a in s]
        plain = ID3Classifier(max_depth=depth).fit(
            table, attribute_order=order,
            sites={a: i for i, s in enumerate(part["sites"]) for a in s},
        )  # fmt: skip
        expected = plain.predict(load_csv(new, "rid"))
        with predictions.open() as fh:
            got = {r.get("rid", r.get("id")): r["class"] for r in csv.DictReader(fh)}
        assert len(got) == 1000
        assert [got[f"n{i}"] for i in range(1000)] == list(map(str, expected))
        assert oct(predictions.stat().st_mode & 0o777) == "0o600"


# ------------------------------------------------------------------ what stops every party


def _specs(texts: list[str], parts: list[list[str]], **entries: Any) -> list[PartySpec]:
    return [
        PartySpec(n, "site", columns=tuple(parts[i]), csv=texts[i], entries={"id": "id", **entries})
        for i, n in enumerate(SITES)
    ]


def _texts(n: int, parts: list[list[str]], *, drop: dict[int, int] | None = None) -> list[str]:
    rng = np.random.default_rng(7)
    cols = {a: [f"v{x}" for x in rng.integers(0, 3, n)] for p in parts for a in p}
    target = [f"c{x}" for x in rng.integers(0, 2, n)]
    texts = []
    for s, attrs in enumerate(parts):
        with_class = s == len(parts) - 1
        lines = [",".join(["id", *attrs, *(["class"] if with_class else [])])]
        for r in range(n):
            if drop and drop.get(s) == r:
                continue
            lines.append(
                ",".join(
                    [f"id{r}", *(cols[a][r] for a in attrs), *([target[r]] if with_class else [])]
                )
            )
        texts.append("\n".join(lines) + "\n")
    return texts


PARTS = [["a", "b"], ["c"], ["d"]]
PARAMS = {
    "class_site": "site3",
    "class": "class",
    "attribute_counts": [2, 1, 1],
    "sites": SITES,
    "counts": "psi",
    "bins": 4,
}


def _stopped(res: Any, culprit: str | None, phrase: str, own: str | None = None) -> None:
    """Every party failed, non-zero exit, the phrase in every peer's error (``own`` in the
    culprit's, which may quote its own file), no traceback anywhere."""
    assert not res.ok
    for name, report in res.reports.items():
        assert report["exit_code"] not in (0, None), name
        expected = own if name == culprit and own is not None else phrase
        assert expected in report["error"]["message"], (name, report["error"])
        assert "Traceback" not in res.logs[name], name
    if culprit is not None:
        assert res.reports[culprit]["exit_code"] == 2


def test_id_sets_that_differ_by_one_stop_every_site_with_counts_only(tmp_path: Path) -> None:
    texts = _texts(20, PARTS, drop={1: 13})
    res = launch("ppid3", PARAMS, _specs(texts, PARTS), timeout=30)
    _stopped(res, None, "19 record ids are held by every site")
    for name, report in res.reports.items():
        assert "site1 1" in report["error"]["message"]
        assert "id13" not in json.dumps(report), name  # which id differs is never told


@pytest.mark.parametrize(
    ("edit", "phrase", "own"),
    [
        (lambda t: t.replace("id4,", "id3,", 1), "repeats a record id", "record id 'id3' repeats"),
        (lambda t: t.replace("id,", "key,", 1), "has no id column 'id'", "site1.csv:1"),
        (
            lambda t: t.replace(",b", ",bb", 1),
            "has no column 'b', which the deployment file lists for it",
            "the columns are ['id', 'a', 'bb']",
        ),
    ],
    ids=["duplicated id", "missing id column", "columns disagree"],
)
def test_a_wrong_own_file_stops_every_party_naming_the_problem(
    tmp_path: Path, edit: Any, phrase: str, own: str
) -> None:
    texts = _texts(12, PARTS)
    texts[0] = edit(texts[0])
    res = launch("ppid3", PARAMS, _specs(texts, PARTS), timeout=30)
    _stopped(res, "site1", phrase, own)
    # the peers hear what is wrong, never a value of site1's file
    for name in ("site2", "site3"):
        assert "id3" not in res.reports[name]["error"]["message"]


def _missing(text: str) -> str:
    return ""  # the file is removed once the deployment is written


@pytest.mark.processes
@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("edit", "phrase", "own"),
    [
        (_missing, "its data file cannot be read", "site1.csv: no such file"),
        (lambda t: t + "id12,v0\n", "its data file cannot be read", ":14: column 'b' (field 3)"),
        (lambda t: t.replace("id4,", "id3,", 1), "repeats a record id", "record id 'id3' repeats"),
        (
            lambda t: t.replace(",b", ",bb", 1),
            "has no column 'b', which the deployment file lists for it",
            "the columns are ['id', 'a', 'bb']",
        ),
    ],
    ids=["missing file", "ragged file", "duplicated id", "columns disagree"],
)  # fmt: skip
def test_a_party_with_a_wrong_own_file_says_so_at_once_and_its_peers_hear_why(
    tmp_path: Path, edit: Any, phrase: str, own: str
) -> None:
    """site1 is started alone with a wrong file: it says its own error at once, without
    waiting for anyone (its deadline is 30 s), and stays only to tell its peers; started
    after, each of them ends at once, hearing that site1 stopped and what is wrong, never a
    value of its file."""
    texts = _texts(12, PARTS)
    texts[0] = edit(texts[0]) or texts[0]
    config = write_deployment(tmp_path, "ppid3", PARAMS, _specs(texts, PARTS), timeout=30,
                              insecure=False)  # fmt: skip
    if edit is _missing:
        (tmp_path / "data" / "site1.csv").unlink()
    with Parties(config, dict.fromkeys(SITES, "site")) as run:
        run.start("site1")
        run.wait_for_log("site1", own, deadline=15)
        assert run.procs["site1"].poll() is None  # up, only to tell its peers
        run.start("site2")
        run.start("site3")
        codes = run.wait(SITES, deadline=20)  # less than one deadline: nobody waited for it
        reports = {n: run.report(n) for n in SITES}
    assert codes == {"site1": 2, "site2": 1, "site3": 1}, {n: run.log(n) for n in SITES}
    assert own in reports["site1"]["error"]["message"]
    for name in ("site2", "site3"):
        err = reports[name]["error"]
        assert err["type"] == "PeerAborted" and err["peer"] == "site1", err
        assert err["step"] == "input check", err
        assert "site1 stopped the run at step 'input check'" in err["message"], err
        assert phrase in err["message"], err
        assert "id3" not in err["message"] and "bb" not in err["message"], err


@pytest.mark.processes
@pytest.mark.timeout(90)
def test_a_site_with_a_wrong_model_part_says_so_at_once_and_its_peers_hear_why(
    tmp_path: Path,
) -> None:
    """Classifying, site1 is started alone with another site's model part: it says so at
    once and its peers, started after, end at once hearing that its model file is wrong."""
    texts = _texts(30, PARTS)
    models = {n: tmp_path / f"{n}.model.json" for n in SITES}
    specs = [PartySpec(n, "site", columns=tuple(PARTS[i]), csv=texts[i],
                       entries={"id": "id", "model_out": str(models[n])})
             for i, n in enumerate(SITES)]  # fmt: skip
    assert launch("ppid3", PARAMS, specs, timeout=30).ok
    new = [t.replace(",class", "").replace(",c0\n", "\n").replace(",c1\n", "\n") for t in texts]
    given = {**models, "site1": models["site2"]}
    specs = [PartySpec(n, "site", csv=new[i], entries={"id": "id", "model": str(given[n])})
             for i, n in enumerate(SITES)]  # fmt: skip
    config = write_deployment(tmp_path / "classify", "ppid3-classify",
                              {"class_site": "site3", "sites": SITES}, specs, timeout=30,
                              insecure=False)  # fmt: skip
    with Parties(config, dict.fromkeys(SITES, "site")) as run:
        run.start("site1")
        run.wait_for_log("site1", "is the part of site2, not of site1", deadline=15)
        run.start("site2")
        run.start("site3")
        codes = run.wait(SITES, deadline=20)
        reports = {n: run.report(n) for n in SITES}
    assert codes == {"site1": 2, "site2": 1, "site3": 1}, {n: run.log(n) for n in SITES}
    for name in ("site2", "site3"):
        err = reports[name]["error"]
        assert "site1 stopped the run at step 'input check'" in err["message"], err
        assert "its model file is not a valid part of a saved tree" in err["message"], err


def test_model_parts_from_another_run_or_edited_are_refused(tmp_path: Path) -> None:
    texts = _texts(30, PARTS)
    runs = []
    for k in range(2):
        folder = tmp_path / f"run{k}"
        specs = [
            PartySpec(n, "site", columns=tuple(PARTS[i]), csv=texts[i],
                      entries={"id": "id", "model_out": str(folder / f"{n}.model.json")})
            for i, n in enumerate(SITES)
        ]  # fmt: skip
        assert launch("ppid3", PARAMS, specs, timeout=30).ok
        runs.append(folder)
    new = [t.replace(",class", "").replace(",c0\n", "\n").replace(",c1\n", "\n") for t in texts]
    assert "c0" not in new[2]

    def classify(models: dict[str, Path]) -> Any:
        specs = [
            PartySpec(
                n,
                "site",
                csv=new[i],
                entries={
                    "id": "id",
                    "model": str(models[n]),
                    "predictions": str(tmp_path / "predictions.csv"),
                },
            )
            for i, n in enumerate(SITES)
        ]
        return launch("ppid3-classify", {"class_site": "site3", "sites": SITES}, specs, timeout=30)

    same = {n: runs[0] / f"{n}.model.json" for n in SITES}
    assert classify(same).ok
    mixed = {**same, "site2": runs[1] / "site2.model.json"}
    _stopped(classify(mixed), None, "from another training run")
    doc = json.loads(same["site3"].read_text())
    leaf = next(iter(doc["body"]["tree"]["leaves"].values()))
    leaf["class"] = "c1" if leaf["class"] == "c0" else "c0"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    res = classify({**same, "site3": edited})
    _stopped(res, "site3", "its model file is not a valid part", "changed after training")


# ------------------------------------------------------------------ column kinds


def test_integer_coded_column_declared_nominal_trains_like_its_string_version(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(3)
    n = 60
    grade = rng.integers(1, 6, n)
    other = rng.choice(["x", "y"], n)
    label = np.where((grade >= 4) ^ (other == "x"), "good", "bad")
    rows = [[str(g), o, lab] for g, o, lab in zip(grade, other, label, strict=True)]
    coded = write_csv(tmp_path / "coded.csv", ["grade", "other", "label"], rows)
    named = write_csv(
        tmp_path / "named.csv", ["grade", "other", "label"], [[f"G{r[0]}", *r[1:]] for r in rows]
    )
    common = ("--class", "label", "--sites", "2", "--json")
    code, out, err = run_mpc("run", "ppid3", "--csv", str(coded), "--nominal", "grade", *common)
    assert code == 0, err
    assert "warning" not in err
    as_nominal = json.loads(out)["result"]
    code, out, _ = run_mpc("run", "ppid3", "--csv", str(named), *common)
    as_strings = json.loads(out)["result"]
    renamed = json.loads(json.dumps(as_strings["tree"]).replace('"G', '"'))
    assert check_tree_equal(as_nominal["tree"], renamed)
    assert as_nominal["columns"]["site1"][0] == {"name": "grade", "kind": "nominal"}
    code, out, err = run_mpc("run", "ppid3", "--csv", str(coded), *common)
    assert code == 0
    assert "--nominal grade" in err  # binned as continuous, with the one-line warning
    assert json.loads(out)["result"]["columns"]["site1"][0]["kind"] == "continuous"


# ------------------------------------------------------------------ no file but its own


def test_a_site_process_opens_no_other_sites_file(tmp_path: Path) -> None:
    from mpc.deployment.launcher import write_deployment

    texts = _texts(12, PARTS)
    config_path = write_deployment(
        tmp_path / "dep", "ppid3", PARAMS, _specs(texts, PARTS), timeout=20, insecure=False
    )
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import io, os, sys\n"
        "_log = os.environ.get('MPC_OPEN_LOG')\n"
        "_seen = set()\n"
        "def _hook(event, args):\n"
        "    if event == 'open' and isinstance(args[0], str) and args[0] not in _seen:\n"
        "        _seen.add(args[0])\n"
        "        with io.open(_log, 'a') as fh:\n"
        "            fh.write(os.path.abspath(args[0]) + '\\n')\n"
        "if _log:\n"
        "    sys.addaudithook(_hook)\n"
    )
    procs = {}
    for n in SITES:
        env = {
            **os.environ,
            "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}",
            "MPC_OPEN_LOG": str(tmp_path / f"{n}.opened"),
        }
        procs[n] = subprocess.Popen(
            [sys.executable, "-m", "parties", "site", "--config", str(config_path), "--name", n,
             "--report", str(tmp_path / f"{n}.json")],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
        )  # fmt: skip
    try:
        for n, p in procs.items():
            assert p.wait(timeout=60) == 0, n
    finally:
        for p in procs.values():
            p.kill()
    data = (tmp_path / "dep" / "data").resolve()
    for n in SITES:
        opened = set((tmp_path / f"{n}.opened").read_text().split())
        assert str(data / f"{n}.csv") in opened
        others = {str(data / f"{m}.csv") for m in SITES if m != n}
        assert not opened & others, n
        secrets = {
            str((tmp_path / "dep" / "keys" / f"{m}.secret").resolve()) for m in SITES if m != n
        }
        assert not opened & secrets, n


# ------------------------------------------------------------------ record ids in a joined file


def _with_ids(folder: Path, id_name: str, n: int = 60) -> Path:
    """A joined CSV whose first column is a record id (``r0``, ``r1``, ...) and whose class
    is a function of the two attributes ``a`` and ``b``."""
    rng = np.random.default_rng(11)
    a, b = rng.choice(["x", "y", "z"], n), rng.choice(["p", "q"], n)
    y = np.where((a == "x") ^ (b == "p"), "yes", "no")
    rows = [[f"r{i}", a[i], b[i], y[i]] for i in range(n)]
    return write_csv(folder / f"{id_name}.csv", [id_name, "a", "b", "y"], rows)


@pytest.mark.parametrize("id_name", ["id", "rid"])
def test_a_record_id_column_given_with_id_is_never_an_attribute(
    tmp_path: Path, id_name: str
) -> None:
    """``--id`` keeps the record ids out of the tree (a column named ``id`` too, which the
    demo split's own id column once collided with), in mpc run and in mpc train."""
    path = _with_ids(tmp_path, id_name)
    code, out, err = run_mpc("run", "ppid3", "--csv", str(path), "--class", "y", "--id",
                             id_name, "--sites", "2", "--json")  # fmt: skip
    assert code == 0, err
    result = json.loads(out)["result"]
    columns = [c["name"] for cols in result["columns"].values() for c in cols]
    assert sorted(columns) == ["a", "b"] and result["identical"] is True, result
    code, out, err = run_mpc("train", "--csv", str(path), "--class", "y", "--id", id_name,
                             "--model-out", str(tmp_path / f"{id_name}.json"))  # fmt: skip
    assert code == 0, err
    saved = json.loads((tmp_path / f"{id_name}.json").read_text())
    assert id_name not in json.dumps(saved["body"]["attributes"]), saved["body"]["attributes"]


def test_a_column_with_a_different_value_in_every_row_is_refused_naming_id_and_nominal(
    tmp_path: Path,
) -> None:
    """Without ``--id``, a nominal column that tells every row apart is refused with one line
    that names both ways out, the user's own file and its line; ``--nominal`` keeps it."""
    path = _with_ids(tmp_path, "rid")
    for command in (["run", "ppid3", "--sites", "2"], ["train"]):
        code, _, err = run_mpc(*command, "--csv", str(path), "--class", "y")
        assert code == 2, err
        lines = [line for line in err.splitlines() if "rid" in line]
        assert len(lines) == 1, err
        assert f"{path}:1" in lines[0] and "--id rid" in lines[0] and "--nominal rid" in lines[0]
    code, out, err = run_mpc("run", "ppid3", "--csv", str(path), "--class", "y", "--sites", "2",
                             "--nominal", "rid", "--json")  # fmt: skip
    assert code == 0, err
    columns = [c["name"] for cols in json.loads(out)["result"]["columns"].values() for c in cols]
    assert "rid" in columns


# ------------------------------------------------------------- records that only partly overlap


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_partly_overlapping_own_files_train_on_exactly_the_common_records(
    tmp_path_factory: pytest.TempPathFactory, k: int, seed: int
) -> None:
    """``records = "common"``: each of 2-5 sites holds its own file, some of its records held
    by no other site; the tree is plain ID3's on the inner join, and each site says how many
    of its records it used."""
    folder = tmp_path_factory.mktemp("overlap")
    rng = np.random.default_rng(seed)
    n = 40
    attrs = [f"a{j}" for j in range(k + 1)]
    columns = {a: [f"v{x}" for x in rng.integers(0, 3, n)] for a in attrs}
    target = [f"c{x}" for x in rng.integers(0, 2, n)]
    parts = [[a] for a in attrs[:k]]
    parts[-1].append(attrs[k])
    names = [f"site{i + 1}" for i in range(k)]
    kept = [np.flatnonzero(rng.random(n) < 0.85) for _ in range(k)]
    common = sorted(set.intersection(*(set(x.tolist()) for x in kept)))
    me = {}
    for s, attrs_s in enumerate(parts):
        with_class = s == k - 1
        header = ["id", *attrs_s, *(["class"] if with_class else [])]
        rows = [[f"r{r}", *(columns[a][r] for a in attrs_s), *([target[r]] if with_class else [])]
                for r in rng.permutation(kept[s])]  # fmt: skip
        path = write_csv(folder / f"{names[s]}.csv", header, rows)
        me[names[s]] = OwnParty(
            names[s], "site", "tcp://127.0.0.1:1", "tcp://127.0.0.1:1", None, data=path,
            columns=tuple(attrs_s), id_column="id",
        )  # fmt: skip
    params = {
        "class_site": names[-1], "class": "class", "sites": names, "counts": "psi",
        "attribute_counts": [len(p) for p in parts], "bins": 4, "records": "common",
    }  # fmt: skip
    parties_ = tuple(OwnParty(x, "site", "tcp://127.0.0.1:1", "tcp://127.0.0.1:1", None)
                     for x in names)  # fmt: skip
    cfg = DeploymentConfig(Path("memory.toml"), parties_, "ppid3", params, insecure=True)

    async def program(party: Any) -> Any:
        return await ppid3_run(party, cfg, me[party.name])

    if not common:
        with pytest.raises(Exception, match="no record id is held by every site"):
            asyncio.run(run_in_memory(names, program, timeout=30))
        return
    results, _ = asyncio.run(run_in_memory(names, program, timeout=30))
    for s, name in enumerate(names):
        assert results[name]["records"] == {"held": len(kept[s]), "used": len(common)}
    view = assemble({x: results[x]["tree"] for x in names}, {x: i for i, x in enumerate(names)})
    table = Table(
        "t", tuple(attrs), (NOMINAL,) * len(attrs),
        tuple(np.array([columns[a][r] for r in common], dtype=object) for a in attrs),
        np.array([target[r] for r in common], dtype=object), "class", "memory",
    )  # fmt: skip
    plain = ID3Classifier().fit(
        table, attribute_order=[a for p in parts for a in p],
        sites={a: i for i, p in enumerate(parts) for a in p},
    )  # fmt: skip
    assert check_tree_equal(view, to_json(plain.tree_))


def test_partly_overlapping_files_over_tcp_train_on_the_common_records(tmp_path: Path) -> None:
    """Across processes: three sites, each missing records the others hold; with ``records =
    "common"`` the run trains on the 17 every site holds, and each site's report says so."""
    texts = _texts(20, PARTS, drop={0: 2, 1: 13, 2: 5})
    res = launch("ppid3", {**PARAMS, "records": "common"}, _specs(texts, PARTS), timeout=60)
    assert res.ok, {n: r.get("error") for n, r in res.reports.items()}
    for name in SITES:
        result = res.reports[name]["result"]
        assert result["records"] == {"held": 19, "used": 17}, name
        assert result["rows"] == 17
        ledger = {e["label"] for e in res.reports[name]["ledger"]}
        assert "record-alignment/intersection" in ledger


def test_a_file_may_hold_columns_the_model_does_not_use(tmp_path: Path) -> None:
    """site1's file has a free-text column the deployment does not list, site2's one it is
    told to ignore: both are left out, each said in its own log, and the tree is the one the
    files without them grow."""
    texts = _texts(30, PARTS)
    plain = launch("ppid3", PARAMS, _specs(texts, PARTS), timeout=60)
    assert plain.ok
    lines = texts[0].splitlines()
    texts[0] = "\n".join([lines[0] + ",notes", *(f"{x},free text {i}" for i, x in
                                                 enumerate(lines[1:]))]) + "\n"  # fmt: skip
    lines = texts[1].splitlines()
    texts[1] = "\n".join([lines[0] + ",second key", *(f"{x},k{i}" for i, x in
                                                      enumerate(lines[1:]))]) + "\n"  # fmt: skip
    specs = _specs(texts, PARTS)
    specs[1] = PartySpec("site2", "site", csv=texts[1],
                         entries={"id": "id", "ignore": ["second key"]})  # fmt: skip
    res = launch("ppid3", PARAMS, specs, timeout=60)
    assert res.ok, {n: r.get("error") for n, r in res.reports.items()}
    for name in SITES:  # the same tree (its node ids are fresh tokens, its structure public)
        got, want = (r.reports[name]["result"]["tree"] for r in (res, plain))
        assert got["structure"] == want["structure"], name
    assert "columns ['notes'] are left out" in res.logs["site1"]
    assert "columns ['second key'] are left out" in res.logs["site2"]
