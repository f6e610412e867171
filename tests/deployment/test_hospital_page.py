"""docs/hospital.md, run as printed: three organisations of a hospital network, each with its
own file (its own id column name, patients of its own, blank cells, numbers, a free-text
column the model leaves out), train on the patients all three hold and classify new ones,
every command in the page's order in one folder (tests/pages.py says how a page runs and how
its output is compared; :func:`tests.pages.write_hospital_files` makes the files). The page's
last command checks the private predictions against plain ID3's on the joined records; here
the tree itself is checked too: the one the parts make is plain ID3's on the inner join."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpc.datasets import load_csv
from mpc.learners.id3 import ID3Classifier
from mpc.learners.model_file import read_model
from mpc.learners.tree import to_json
from protocols.ppid3.ppid3 import assemble, check_tree_equal

from ..conftest import ROOT
from ..pages import HOSPITAL_COMMON, page_commands, run_page, write_hospital_files

pytestmark = [pytest.mark.processes, pytest.mark.pages, pytest.mark.timeout(400)]

PAGE = ROOT / "docs" / "hospital.md"
PROMPT = re.compile(r"^ *\$ (?P<command>.*)$")


def test_the_hospital_page_runs_as_printed(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    shown = page_commands(text, PROMPT, "docs/hospital.md")
    assert len(shown) >= 12 and shown[0].command.startswith("head")
    write_hospital_files(tmp_path)
    printed = run_page(shown, lambda s: tmp_path, timeout=300)
    log = "\n".join(printed[""])
    for org, held in (("site1", 1060), ("site2", 1060), ("site3", 1080)):
        assert f"{org}: {HOSPITAL_COMMON} of its {held} records are held by every site" in log
    # the parts make plain ID3's tree (Gini, depth 3) on the records all three hold
    parts = {s: read_model(tmp_path / f, "ppid3").body["tree"]
             for s, f in (("site1", "lab.model.json"), ("site2", "clinic.model.json"),
                          ("site3", "registry.model.json"))}  # fmt: skip
    tree = assemble(parts, {"site1": 0, "site2": 1, "site3": 2})
    joined = load_csv(tmp_path / "joined.csv", "Readmitted 30d", id_column="id",
                      nominal=["Prior Admissions"])  # fmt: skip
    plain = ID3Classifier(criterion="gini", max_depth=3, min_samples_split=40).fit(
        joined, attribute_order=list(joined.attributes),
        sites={a: i // 2 for i, a in enumerate(joined.attributes)},
    )  # fmt: skip
    assert check_tree_equal(tree, to_json(plain.tree_), counts=False)
