"""docs/own-data.md, run as printed: every ``$`` command of its console blocks, in the page's
order, in one folder standing for the page's ``/tmp/walk`` (tests/pages.py says how a page
runs and how its output is compared). The organisations' files and the joined tables the
page's check reads are UCI car's, cut as the page says (:mod:`tests.pages`); the deployment
file's excerpt the page shows must be the file ``mpc deploy`` wrote."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..conftest import ROOT
from ..pages import (
    page_commands,
    run_page,
    write_joined_files,
)

pytestmark = [pytest.mark.processes, pytest.mark.pages, pytest.mark.timeout(300)]

PAGE = ROOT / "docs" / "own-data.md"
PROMPT = re.compile(r"^ *\$ (?P<command>.*)$")
#: the folder the page's commands ran in
WALK = "/tmp/walk"


def toml_excerpt(text: str) -> list[str]:
    """The lines of the page's ``toml`` block, without its comments."""
    block = re.search(r"^```toml\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/own-data.md shows no deployment file"
    return [line for line in block.group(1).splitlines() if not line.startswith("#")]


def test_the_own_data_page_runs_as_printed(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    shown = page_commands(text, PROMPT, "docs/own-data.md")
    assert len(shown) >= 15 and shown[0].command.startswith("mpc keygen")
    write_joined_files(tmp_path)  # the organisations' files are the page's own command's
    run_page(shown, lambda s: tmp_path, as_here=lambda line: line.replace(WALK, str(tmp_path)))

    # the excerpt of the deployment file is the file's own lines, in order
    written = (tmp_path / "deployment.toml").read_text().splitlines()
    at = 0
    for line in toml_excerpt(text):
        assert line in written[at:], f"docs/own-data.md: {line!r} is not in deployment.toml"
        at = written.index(line, at) + 1
    # the page's check compared the predictions with plain ID3's; both files are there
    assert (tmp_path / "predictions.csv").stat().st_size > 0
    assert (tmp_path / "plain-predictions.csv").stat().st_size > 0
