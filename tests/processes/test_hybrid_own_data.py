"""Hybrid-ID3 with each organisation's own file: per-party CSVs in their own row orders train
the trees of the joined table, saved model parts classify new records held vertically (the
predictions are those of the saved tree applied in plain to the joined rows), and a part of
another run, an edited model file or record ids that differ by one stop every party within the
deadline with one line, no record id in any ledger.

The pieces first (row-wise dot products, the terminal vectors, the classification protocol on
the in-memory transport), then the processes: one training run (``mpc run hybrid-id3 --csv``),
shared by the tests that follow it, then classification runs.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.datasets import Discretizer, Table, load_party_csv
from mpc.errors import ConfigError
from mpc.learners.evaluation import predict_table
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import to_json
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from parties.cli.main import build_parser
from parties.own_party import load_deployment, own_party
from parties.programs.hybrid import run as hybrid_run
from parties.programs.hybrid_model import load_part, strip_classes
from parties.systems.hybrid import HybridOptions, hybrid_plan, split_attributes
from parties.vertical_csv import kind_entries, party_csv
from protocols.hybrid import classify as hybrid_classify
from protocols.hybrid.classify import (
    classify_records,
    consistent_terminals,
    serve_classify_dealer,
    terminal_classes,
)
from protocols.hybrid.hybrid_id3 import ALICE, BOB, DEALER
from protocols.ppid3.ppid3 import check_tree_equal
from protocols.primitives.dot_product import row_dot_products

from ..conftest import processes_mentioning, run_mpc_json
from ..harness import Parties, plan_deployment

COLUMNS = ("colour", "size", "grade", "weight", "shape")
CLASS, ID = "label", "customer"


def _rows(rng: np.random.Generator, n: int, *, new: bool = False) -> list[list[str]]:
    """``n`` records: an id, two nominal columns, a numeric nominal one (grade), two
    continuous ones and, unless ``new``, the class; a new file also has a colour never seen in
    training and a missing size, which the tree answers with a node's majority."""
    colour = rng.choice(["red", "green", "blue"], n).astype(object)
    size = np.round(rng.normal(10, 3, n), 1)
    grade = rng.integers(1, 4, n)
    weight = np.round(rng.uniform(40, 90, n), 2)
    shape = rng.choice(["round", "square"], n)
    if new:
        colour[0], colour[1] = "purple", "purple"
    yes = ((colour == "red") & (size > 9)) | ((grade == 3) & (weight > 60))
    yes ^= rng.random(n) < 0.08
    out = []
    for i in range(n):
        record = [
            f"c-{rng.integers(16**8):08x}", str(colour[i]), repr(float(size[i])), str(grade[i]),
            repr(float(weight[i])), str(shape[i]),
        ]  # fmt: skip
        if new and i == 2:
            record[2] = "?"
        out.append(record if new else [*record, "yes" if yes[i] else "no"])
    return out


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _read(path: Path, *, labelled: bool) -> tuple[Table, list[str]]:
    own = load_party_csv(
        path, id_column=ID, class_column=CLASS if labelled else None, nominal=["grade"],
        continuous=["size", "weight"],
    )  # fmt: skip
    return own.table, [str(i) for i in own.ids]


# ----------------------------------------------------------------------------- the pieces


@pytest.mark.parametrize("method", ["dealer", "paillier"])
@pytest.mark.parametrize("reveal_to", [ALICE, BOB])
def test_row_dot_products_equal_the_plain_row_products(method: str, reveal_to: str) -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2**64, (6, 9), dtype=np.uint64)
    b = rng.integers(0, 2**64, (6, 9), dtype=np.uint64)
    want = (a * b).sum(axis=1, dtype=np.uint64)
    names = [ALICE, BOB] + ([DEALER] if method == "dealer" else [])

    async def program(party: Party) -> Any:
        if party.name == DEALER:
            return await row_dot_products(party, shape=(6, 9))
        mine = a if party.name == ALICE else b
        return await row_dot_products(
            party, mine, method=method, reveal_to=reveal_to, key_bits=1024
        )

    res, parties = asyncio.run(run_in_memory(names, program, timeout=30))
    other = BOB if reveal_to == ALICE else ALICE
    assert (res[reveal_to] == want).all()
    assert not (res[other] == want).all()  # a uniform share, not the product
    assert {e.label for e in parties[other].ledger.entries} == {"dot-product/row-shape"}
    if method == "dealer":
        assert [e.value for e in parties[DEALER].ledger.entries] == [[6, 9]]


def _random_table(rng: np.random.Generator, n: int) -> Table:
    cols = [
        np.array([f"v{x}" for x in rng.integers(0, int(rng.integers(2, 4)), n)], dtype=object)
        for _ in range(5)
    ]
    y = np.array(
        [f"c{(int(a[1:]) + int(b[1:]) + int(r < 0.2)) % 3}" for a, b, r in
         zip(cols[0], cols[3], rng.random(n), strict=True)],
        dtype=object,
    )  # fmt: skip
    return Table("t", tuple(f"a{j}" for j in range(5)), ("nominal",) * 5, tuple(cols), y, "y", "")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), max_depth=st.sampled_from([None, 1, 2]))
def test_the_terminal_vectors_meet_exactly_where_predict_one_ends(
    seed: int, max_depth: int | None
) -> None:
    """For every record, Alice's and Bob's vectors are both 1 at one terminal, whose class is
    the one :func:`mpc.learners.tree.predict_one` gives (values unseen in training included)."""
    rng = np.random.default_rng(seed)
    table = _random_table(rng, 60)
    alice, bob = split_attributes(list(table.attributes), seed)
    owners = {a: ALICE for a in alice} | {a: BOB for a in bob}
    tree = to_json(ID3Classifier(max_depth=max_depth).fit(table).tree_)
    new = _random_table(rng, 30)
    cols = [c.copy() for c in new.columns]
    cols[int(rng.integers(0, 5))][:5] = "unseen"
    new = dataclasses.replace(new, columns=tuple(cols))
    values = {a: np.asarray(new.column(a), dtype=object) for a in new.attributes}
    va = consistent_terminals(strip_classes(tree), owners, ALICE, {a: values[a] for a in alice})
    vb = consistent_terminals(tree, owners, BOB, {a: values[a] for a in bob})
    both = va & vb
    assert (both.sum(axis=1) == 1).all()
    classes = sorted(set(table.target))
    ends = terminal_classes(tree, classes)[both.argmax(axis=1)]
    want = predict_table(ID3Classifier(max_depth=max_depth).fit(table).tree_, new)
    assert [classes[i] for i in ends] == list(want)


@pytest.mark.parametrize("deliver_to", [ALICE, BOB])
def test_classification_reveals_the_classes_to_the_deliverer_only(
    deliver_to: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hybrid_classify, "BATCH_ENTRIES", 2000)  # several batches of rows
    rng = np.random.default_rng(9)
    table = _random_table(rng, 80)
    alice, bob = split_attributes(list(table.attributes), 9)
    owners = {a: ALICE for a in alice} | {a: BOB for a in bob}
    fitted = ID3Classifier().fit(table)
    tree = to_json(fitted.tree_)
    classes = sorted(set(table.target))
    new = _random_table(rng, 500)
    values = {a: np.asarray(new.column(a), dtype=object) for a in new.attributes}
    va = consistent_terminals(strip_classes(tree), owners, ALICE, {a: values[a] for a in alice})
    vb = consistent_terminals(tree, owners, BOB, {a: values[a] for a in bob}).astype(np.uint64)
    vb = vb * (terminal_classes(tree, classes) + 1).astype(np.uint64)

    async def program(party: Party) -> Any:
        if party.name == DEALER:
            return await serve_classify_dealer(party)
        mine = va if party.name == ALICE else vb
        return await classify_records(party, mine, classes=classes, deliver_to=deliver_to)

    res, parties = asyncio.run(run_in_memory([ALICE, BOB, DEALER], program, timeout=30))
    other = BOB if deliver_to == ALICE else ALICE
    assert res[deliver_to] == list(fitted.predict(new))
    terminals = va.shape[1]
    assert res[other] is None and res[DEALER] == -(-500 // (2000 // terminals)) > 1
    labels = {n: [e.label for e in p.ledger.entries] for n, p in parties.items()}
    assert labels[deliver_to] == ["hybrid-classify/predictions"]
    assert labels[other] == [] and set(labels[DEALER]) == {"dot-product/row-shape"}


def test_a_party_file_reads_back_as_the_table_it_was_cut_from(tmp_path: Path) -> None:
    rows = _rows(np.random.default_rng(1), 30)
    joined, ids = _read(_write(tmp_path / "t.csv", [ID, *COLUMNS, CLASS], rows), labelled=True)
    order = np.random.default_rng(2).permutation(joined.n_rows)
    text = party_csv(ids, joined, ["grade", "size"], id_column="id", with_class=True, order=order)
    (tmp_path / "p.csv").write_text(text)
    kinds = kind_entries(joined, ["grade", "size"])
    back = load_party_csv(tmp_path / "p.csv", id_column="id", class_column=CLASS, **kinds)
    assert list(back.ids) == [ids[i] for i in order]
    assert back.table.kinds == ("nominal", "continuous")  # grade stays nominal
    assert list(back.table.column("grade")) == list(joined.column("grade")[order])
    np.testing.assert_array_equal(back.table.column("size"), joined.column("size")[order])
    assert list(back.table.target) == list(joined.target[order])


def test_the_launcher_checks_its_csv_options_before_any_party_starts(tmp_path: Path) -> None:
    rows = _rows(np.random.default_rng(3), 20)
    train = _write(tmp_path / "t.csv", [ID, *COLUMNS, CLASS], rows)

    def plan(*args: str) -> Any:
        return hybrid_plan(
            HybridOptions.from_namespace(build_parser().parse_args(["run", "hybrid-id3", *args]))
        )

    with pytest.raises(ConfigError, match="--csv needs --class"):
        plan("--csv", str(train))
    with pytest.raises(ConfigError, match="--id goes with --csv"):
        plan("--dataset", "weather", "--id", ID)
    with pytest.raises(ConfigError, match="'nope'"):
        plan("--csv", str(train), "--class", "nope")
    with pytest.raises(ConfigError, match="--test-split"):
        plan("--csv", str(train), "--class", CLASS, "--test-split", "1")
    ok = plan("--csv", str(train), "--class", CLASS, "--id", ID, "--nominal", "grade")
    specs = {s.name: s for s in ok.parties}
    assert specs[DEALER].csv is None and specs[DEALER].data is None
    assert specs[ALICE].entries["id"] == ID and ID not in specs[ALICE].columns
    kinds = {a: k for s in (specs[ALICE], specs[BOB]) for k in ("nominal", "continuous")
             for a in s.entries[k]}  # fmt: skip
    assert kinds == {"colour": "nominal", "shape": "nominal", "grade": "nominal",
                     "size": "continuous", "weight": "continuous"}  # fmt: skip
    assert ok.params["class"] == CLASS and "seed" not in ok.params
    public = json.dumps([ok.params, [s.entries for s in ok.parties]])
    assert not [r[0] for r in rows if r[0] in public]  # no record id in the deployment


# ----------------------------------------------------------------------------- processes


@dataclasses.dataclass
class Trained:
    train: Path
    new: Path
    run: Path  # the kept training deployment
    model: Path
    result: dict[str, Any]
    reports: dict[str, Any]
    ids: list[str]  # every record id of both files


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """One training run on per-party files: ``mpc run hybrid-id3 --csv train.csv --class label
    --id customer --nominal grade --window 9 --test-split 0 --model-out model``."""
    folder = tmp_path_factory.mktemp("hybrid-own")
    rng = np.random.default_rng(0)
    train_rows, new_rows = _rows(rng, 150), _rows(rng, 40, new=True)
    train = _write(folder / "train.csv", [ID, *COLUMNS, CLASS], train_rows)
    new = _write(folder / "new.csv", [ID, *COLUMNS], new_rows)
    run, model = folder / "run", folder / "model"
    code, doc = run_mpc_json(
        "run", "hybrid-id3", "--csv", str(train), "--class", CLASS, "--id", ID, "--nominal",
        "grade", "--window", "9", "--test-split", "0", "--theta", "0.8", "--groups", "2",
        "--model-out", str(model), "--keep", str(run), "--timeout", "20", deadline=60,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc["parties"]
    ids = [r[0] for r in train_rows + new_rows]
    return Trained(train, new, run, model, doc["result"], doc["parties"], ids)


def _plain(t: Trained) -> tuple[ID3Classifier, Discretizer, list[str], list[str]]:
    """Plain ID3 on the joined training table (binned per column, Alice's attributes first)."""
    table, _ = _read(t.train, labelled=True)
    discretizer = Discretizer.fit(table, 4)
    alice, bob = split_attributes(list(table.attributes), 0)
    sites = {a: 0 for a in alice} | {a: 1 for a in bob}
    plain = ID3Classifier().fit(
        discretizer.transform(table), attribute_order=alice + bob, sites=sites
    )
    return plain, discretizer, alice, bob


def _no_ids(reports: dict[str, Any], ids: list[str]) -> None:
    for name, report in reports.items():
        text = json.dumps([report.get("ledger"), report.get("error"), report.get("result")])
        leaked = [i for i in ids if i in text]
        assert leaked == [], (name, leaked[:3])


@pytest.mark.processes
@pytest.mark.timeout(60)
def test_per_party_files_in_their_own_order_train_the_trees_of_the_joined_table(
    trained: Trained,
) -> None:
    t = trained
    plain, _, alice, bob = _plain(t)
    assert (t.result["alice"], t.result["bob"]) == (alice, bob)
    files = {
        p: load_party_csv(
            t.run / "data" / f"{p}.csv", id_column=ID, class_column=CLASS if p == BOB else None
        )
        for p in (ALICE, BOB)
    }
    joined_ids = [r[0] for r in csv.reader(t.train.open())][1:]
    orders = {p: list(f.ids) for p, f in files.items()}
    assert sorted(orders[ALICE]) == sorted(orders[BOB]) == sorted(joined_ids)
    assert orders[ALICE] != orders[BOB] and joined_ids not in orders.values()
    assert files[ALICE].table.attributes == tuple(alice)  # no class, no other column
    assert files[BOB].table.attributes == tuple(bob)
    deployment = (t.run / "deployment.toml").read_text()
    assert not [i for i in joined_ids if i in deployment]  # names and parameters only
    want = to_json(plain.tree_)
    assert check_tree_equal(t.result["tree"], want)  # ω = all: the hybrid tree is ID3's
    assert t.result["smc_only_identical_to_plain"] is True
    assert t.result["hybrid_identical_to_plain"] is True
    _no_ids(t.reports, t.ids)
    # the saved parts: one model id, the tests at both, the classes at Bob only
    parts = {p: load_part(t.model / f"{p}.model.json", p) for p in (ALICE, BOB)}
    assert parts[ALICE].model_id == parts[BOB].model_id == t.result["model"]["model_id"]
    assert parts[ALICE].parts == parts[BOB].parts
    assert parts[BOB].tree == t.result["tree"]
    assert parts[ALICE].tree == strip_classes(t.result["tree"])
    assert '"class"' not in json.dumps(parts[ALICE].tree)
    for part in parts.values():  # each part keeps the cut points of its own columns only
        own_continuous = [a for a in part.own_attributes if a in ("size", "weight")]
        assert part.discretizer is not None or not own_continuous
        assert sorted(part.discretizer.edges if part.discretizer else []) == own_continuous


@pytest.mark.processes
@pytest.mark.timeout(60)
@pytest.mark.parametrize("deliver_to", [BOB, ALICE])
def test_saved_parts_classify_new_records_as_the_saved_tree_does_in_plain(
    trained: Trained, tmp_path: Path, deliver_to: str
) -> None:
    t = trained
    predictions = tmp_path / "predictions.csv"
    code, doc = run_mpc_json(
        "run", "hybrid-id3-classify", "--csv", str(t.new), "--id", ID, "--model", str(t.model),
        "--predictions-out", str(predictions), "--deliver-to", deliver_to, "--timeout", "20",
        deadline=50,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc["parties"]
    assert doc["result"]["identical_to_plain"] is True
    plain, discretizer, _, _ = _plain(t)
    new, ids = _read(t.new, labelled=False)
    want = dict(zip(ids, plain.predict(discretizer.transform(new)), strict=True))
    with predictions.open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == [ID, "class"]
    assert [r[0] for r in rows[1:]] == ids  # the receiver's file keeps the new file's order
    assert dict((r[0], r[1]) for r in rows[1:]) == want  # ω = all: plain ID3's predictions
    assert predictions.stat().st_mode & 0o777 == 0o600
    other = ALICE if deliver_to == BOB else BOB
    assert "hybrid-classify/predictions" in {
        e["label"] for e in doc["parties"][deliver_to]["ledger"]
    }
    assert "hybrid-classify/predictions" not in {
        e["label"] for e in doc["parties"][other]["ledger"]
    }
    assert {e["label"] for e in doc["parties"][DEALER]["ledger"]} == {"dot-product/row-shape"}
    _no_ids(doc["parties"], t.ids)


def _other_run(t: Trained, folder: Path) -> Path:
    """Alice's and Bob's parts of a second training run over the same files (the same party
    programs, on the in-memory transport)."""
    cfg = load_deployment(t.run / "deployment.toml")

    def program(name: str) -> Any:
        me = own_party(cfg, name)
        if name != DEALER:
            me = dataclasses.replace(me, model_out=folder / f"{name}.model.json")
        return lambda party: hybrid_run(party, cfg, me)

    asyncio.run(
        run_in_memory(
            cfg.names, {n: program(n) for n in cfg.names}, roles={n: n for n in cfg.names},
            timeout=30,
        )
    )  # fmt: skip
    return folder


def _edited(t: Trained, folder: Path) -> Path:
    """Bob's part with one leaf's class changed by hand (the file's digest left as it was)."""
    text = (t.model / "bob.model.json").read_text()
    doc = json.loads(text)
    flip = {"yes": "no", "no": "yes"}

    def first_leaf(node: dict[str, Any]) -> dict[str, Any]:
        return node if "children" not in node else first_leaf(next(iter(node["children"].values())))

    leaf = first_leaf(doc["body"]["tree"])
    leaf["class"] = flip[leaf["class"]]
    path = folder / "bob.model.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def _one_record_fewer(source: Path, target: Path) -> Path:
    lines = source.read_text().splitlines(keepends=True)
    target.write_text("".join(lines[:1] + lines[2:]))
    return target


@pytest.mark.processes
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("case", "refusers"),
    [
        ("part-of-another-run", {ALICE: "ModelError", BOB: "ModelError"}),
        ("edited-model-file", {BOB: "InputError"}),
        ("ids-differ-by-one", {ALICE: "RecordMismatch", BOB: "RecordMismatch"}),
        ("training-ids-differ-by-one", {ALICE: "RecordMismatch", BOB: "RecordMismatch"}),
        ("only-alice-has-a-model", {ALICE: "ConfigError", BOB: "ConfigError"}),
    ],
)
def test_a_refused_input_stops_every_party_with_one_line(
    trained: Trained, tmp_path: Path, case: str, refusers: dict[str, str]
) -> None:
    t = trained
    extra: dict[str, list[str]] = {ALICE: [], BOB: [], DEALER: []}
    if case.startswith(("training", "only")):  # the training deployment, as kept
        config = t.run / "deployment.toml"
        roles = {n: n for n in (ALICE, BOB, DEALER)}
        extra[ALICE] = ["--model-out", str(tmp_path / "a.json")]
        extra[BOB] = ["--model-out", str(tmp_path / "b.json")]
        if case == "training-ids-differ-by-one":
            short = _one_record_fewer(t.run / "data" / "alice.csv", tmp_path / "alice.csv")
            extra[ALICE] += ["--data", str(short)]
        else:
            extra[ALICE] = ["--model", str(t.model / "alice.model.json")]
    else:
        config, roles = plan_deployment(
            tmp_path / "run", "hybrid-id3-classify", "--csv", str(t.new), "--id", ID,
            "--model", str(t.model), "--predictions-out", str(tmp_path / "p.csv"), timeout=10,
        )  # fmt: skip
        if case == "part-of-another-run":
            other = _other_run(t, tmp_path / "other")
            extra[ALICE] = ["--model", str(other / "alice.model.json")]
        elif case == "edited-model-file":
            extra[BOB] = ["--model", str(_edited(t, tmp_path))]
        else:
            data = config.parent / "data"
            extra[ALICE] = [
                "--data",
                str(_one_record_fewer(data / "alice.csv", tmp_path / "a.csv")),
            ]
    names = list(roles)
    with Parties(config, roles) as run:
        for name in names:
            run.start(name, *extra[name])
        codes = run.wait(names, deadline=40)
        reports = {n: run.report(n) for n in names}
    assert all(c != 0 for c in codes.values()), codes
    assert not [f.name for f in tmp_path.iterdir() if f.name in ("p.csv", "a.json", "b.json")]
    for name, report in reports.items():
        err = report["error"]
        assert err is not None and "\n" not in err["message"], (name, err)
        if name in refusers:
            assert err["type"] == refusers[name] or (
                err["type"] == "PeerAborted" and refusers[name] in err["message"]
            ), (name, err)
        else:
            assert err["type"] in ("PeerAborted", *refusers.values()), (name, err)
    if case.endswith("ids-differ-by-one"):
        message = reports[BOB]["error"]["message"]
        held = len(t.ids) - 40 if case.startswith("training") else 40
        assert f"{held - 1} record ids are held by every site" in message, message
    _no_ids(reports, t.ids)
    assert processes_mentioning(str(config)) == []
