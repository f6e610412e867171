"""The Python examples of the documentation run: every file of ``docs/examples/`` is included
in a page (``--8<--``), runs to exit code 0 in a fresh interpreter, and prints the lines the
page shows (the parts that do not change from run to run)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..conftest import ROOT

EXAMPLES = ROOT / "docs" / "examples"

#: lines each example must print (whole lines, or a start of line ending in "...")
EXPECTED: dict[str, list[str]] = {
    "estimators.py": [
        "C45Classifier(pruning='none')",
        "|   humidity <= 75: yes (2/0)",
        "predict: ['yes', 'no']",
        "predict_proba: [[0.0, 1.0], [1.0, 0.0]]",
        "score on the training rows: 1.0",
        "the same: True",
        "pipeline accuracy (5 folds): ...",
    ],
    "run_system.py": [
        "ok: True   accuracy: 1.0   wall: ...",
        "trust: semi-honest sites, no two colluding; each product's randomness dealt by a "
        "third site",
        "sites: ('site1', 'site2', 'site3'), the class at site3",
        "outlook = overcast: yes (4/0)",
        "site3 (the class site) learned 8 class distributions",
        "picture: 8 nodes, owners site1, site2, site3",
        "secure-sum: 6 (mod 1000), trust: semi-honest parties; the two ring neighbours of a "
        "party do not collude",
        "error: --class-site 7: there are 3 sites, site1..site3; give 1..3, a site name or -1 "
        "for the last",
    ],
    "masked_sum.py": [
        "in memory:    {'alice': 49, 'bob': 49, 'carol': 49}",
        "as processes: ok=True {'alice': 49, 'bob': 49, 'carol': 49}",
        "  alice: learned 49, sent ...",
    ],
}


def test_every_example_is_on_a_page_and_checked_here() -> None:
    files = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert files == sorted(EXPECTED), "every example needs its expected lines here"
    pages = " ".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    included = set(re.findall(r'--8<--\s+"docs/examples/([^"]+)"', pages))
    assert included == set(files), f"examples not included in any page: {set(files) - included}"


def shown(line: str, output: list[str]) -> bool:
    if line.endswith("..."):
        return any(o.startswith(line[:-3]) for o in output)
    return line in output


@pytest.mark.processes
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_example_runs_and_prints_what_the_page_shows(name: str) -> None:
    if name == "estimators.py":
        pytest.importorskip("sklearn", reason="scikit-learn is in the test extra")
        pytest.importorskip("pandas", reason="pandas is in the test extra")
    if name == "run_system.py":
        pytest.importorskip("matplotlib", reason="matplotlib is in the experiments extra")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout.splitlines()
    missing = [line for line in EXPECTED[name] if not shown(line, output)]
    assert not missing, f"{name} did not print {missing}; it printed:\n{proc.stdout}"
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    for line in EXPECTED[name]:
        assert shown(line, page.splitlines()), f"the page does not show {line!r}"
    # the output the page shows under the example is the real one, whole, but for what
    # varies from run to run (the time, the bytes)
    shown_block = page_output(page, name)
    assert [masked(line) for line in shown_block] == [masked(line) for line in output], (
        f"the page's output of {name} is not its real output:\n{proc.stdout}"
    )


#: what varies from run to run in an example's output, masked on the page and in the real one
VARIES = [
    (re.compile(r"wall: [\d.]+ s"), "wall: T s"),
    (re.compile(r"sent \d+ bytes"), "sent N bytes"),
]


def masked(line: str) -> str:
    for pattern, repl in VARIES:
        line = pattern.sub(repl, line)
    return line


def page_output(page: str, name: str) -> list[str]:
    """The lines of the first ``text`` block after the page includes ``name``."""
    at = page.index(f'--8<-- "docs/examples/{name}"')
    block = re.search(r"^```text\n(.*?)^```", page[at:], re.M | re.S)
    assert block, f"python-api.md shows no output of {name}"
    return block.group(1).splitlines()
