"""Missing values are read alike everywhere: a blank cell, ``?`` and the markers ``--missing``
names are one missing value, in the launcher, in the plain learners and in each party's own
program; a numeric column with blanks stays numeric. Then each learner does what its page
says: the ID3 family treats a missing value as one more value (a ``?`` branch), C4.5 spreads
the row over the branches with fractional weights, as J48 does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpc.datasets import load_csv
from mpc.learners.c45 import C45Classifier
from mpc.learners.id3 import ID3Classifier
from mpc.learners.tree import to_json
from parties.own_party import OwnParty
from protocols.ppid3.ppid3 import assemble, check_tree_equal

from ..conftest import run_mpc, run_mpc_json
from .test_own_data import SITES, config, run_sites, split_files

pytestmark = pytest.mark.timeout(180)

ROWS = 60


def columns(seed: int) -> tuple[dict[str, list[str]], list[str]]:
    """Three nominal attributes and one numeric; ``a0`` decides the class and is often
    missing (blank, ``?`` or ``NA``), so the tree has a branch for it."""
    rng = np.random.default_rng(seed)
    a0 = [str(x) for x in rng.choice(["red", "blue", "", "?", "NA"], ROWS)]
    target = ["yes" if v in ("red", "", "?", "NA") else "no" for v in a0]
    cols = {
        "a0": a0,
        "a1": [str(x) for x in rng.choice(["s", "m", "l", ""], ROWS)],
        "a2": [str(x) for x in rng.choice(["x", "y"], ROWS)],
        "n": ["" if rng.random() < 0.2 else str(int(x)) for x in rng.integers(0, 90, ROWS)],
    }
    return cols, target


def as_question_marks(cols: dict[str, list[str]]) -> dict[str, list[str]]:
    return {a: ["?" if v in ("", "NA") else v for v in vs] for a, vs in cols.items()}


def write_joined(path: Path, cols: dict[str, list[str]], target: list[str]) -> Path:
    header = ",".join([*cols, "class"])
    rows = [",".join([*(cols[a][r] for a in cols), target[r]]) for r in range(ROWS)]
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def branches(tree: dict[str, Any]) -> set[tuple[str, str]]:
    """Every (attribute, value) edge of a tree in its JSON form."""
    out: set[tuple[str, str]] = set()
    for value, child in tree.get("children", {}).items():
        out.add((tree["attribute"], value))
        out |= branches(child)
    return out


def test_blank_question_mark_and_na_are_one_missing_value_to_the_plain_learners(
    tmp_path: Path,
) -> None:
    cols, target = columns(1)
    blanks = write_joined(tmp_path / "blanks.csv", cols, target)
    marks = write_joined(tmp_path / "marks.csv", as_question_marks(cols), target)
    t = load_csv(blanks, "class", missing=["NA"])
    assert t.kinds == ("nominal", "nominal", "nominal", "continuous")
    assert t.kinds == load_csv(marks, "class").kinds
    np.testing.assert_array_equal(t.column("n"), load_csv(marks, "class").column("n"))
    for a in ("a0", "a1", "a2"):
        assert t.column(a).tolist() == load_csv(marks, "class").column(a).tolist()
    # ID3: a missing value is one more value, with a branch of its own
    id3 = to_json(ID3Classifier().fit(t).tree_)
    assert ("a0", "?") in branches(id3)
    # C4.5: no '?' branch; the rows with a missing a0 are spread over a0's branches
    c45 = C45Classifier().fit(t)
    assert all(v != "?" for _, v in branches(to_json(c45.tree_)))


def test_mpc_train_reads_blanks_as_missing_and_keeps_a_numeric_column_numeric(
    tmp_path: Path,
) -> None:
    cols, target = columns(2)
    blanks = write_joined(tmp_path / "blanks.csv", cols, target)
    marks = write_joined(tmp_path / "marks.csv", as_question_marks(cols), target)
    trees = {}
    for name, path in (("blanks", blanks), ("marks", marks)):
        for learner in ("id3", "c45"):
            out = tmp_path / f"{name}-{learner}.json"
            extra = ("--missing", "NA") if name == "blanks" else ()
            code, summary = run_mpc_json(
                "train", "--learner", learner, "--csv", str(path), "--class", "class",
                "--tree-out", str(out), *extra,
            )  # fmt: skip
            assert code == 0, summary
            kinds = {c["name"]: c["kind"] for c in summary["columns"]}
            assert kinds["n"] == "continuous", summary["columns"]
            trees[name, learner] = json.loads(out.read_text())
    assert trees["blanks", "id3"] == trees["marks", "id3"]
    assert trees["blanks", "c45"] == trees["marks", "c45"]
    assert ("a0", "?") in branches(trees["blanks", "id3"])
    # without --missing NA, "NA" is a value of its own: another tree
    code, _, err = run_mpc(
        "train", "--csv", str(blanks), "--class", "class", "--tree-out",
        str(tmp_path / "na.json"),
    )  # fmt: skip
    assert code == 0, err
    assert ("a0", "NA") in branches(json.loads((tmp_path / "na.json").read_text()))


def test_mpc_run_ppid3_with_blank_cells_equals_plain_id3(tmp_path: Path) -> None:
    cols, target = columns(3)
    blanks = write_joined(tmp_path / "blanks.csv", cols, target)
    code, out = run_mpc_json(
        "run", "ppid3", "--csv", str(blanks), "--class", "class", "--missing", "NA",
        "--sites", "3", "--json", deadline=150,
    )  # fmt: skip
    assert code == 0, out
    result = out["result"]
    assert result["identical"] is True
    assert ("a0", "?") in branches(result["tree"])
    assert not any(v in ("", "NA") for _, v in branches(result["tree"]))


def test_each_party_program_reads_blank_and_its_own_markers_as_missing(tmp_path: Path) -> None:
    """The party programs read their own files with the same rule: one site marks missing
    values with blanks, one with ``?``, one with ``NA`` (its ``missing`` entry); the private
    tree equals plain ID3 on the table with every missing value as ``?``."""
    cols, target = columns(4)
    parts = [["a0"], ["a1"], ["a2"]]
    own = {
        "a0": ["" if v in ("?", "NA") else v for v in cols["a0"]],
        "a1": ["?" if v == "" else v for v in cols["a1"]],
        "a2": ["NA" if i % 7 == 0 else v for i, v in enumerate(cols["a2"])],
    }
    files = split_files(tmp_path, own, target, parts, seed=4)
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
            missing=("NA",) if i == 2 else (),
        )
        for i, (n, f) in enumerate(zip(SITES, files, strict=True))
    }
    trained = run_sites(config(parts), me)
    view = assemble(
        {n: trained["results"][n]["tree"] for n in SITES}, {n: i for i, n in enumerate(SITES)}
    )
    joined = write_joined(tmp_path / "joined.csv", {a: own[a] for a in ("a0", "a1", "a2")}, target)
    table = load_csv(joined, "class", missing=["NA"])
    plain = ID3Classifier().fit(
        table, attribute_order=["a0", "a1", "a2"], sites={"a0": 0, "a1": 1, "a2": 2}
    )
    assert check_tree_equal(view, to_json(plain.tree_))
    assert ("a0", "?") in branches(to_json(plain.tree_))
