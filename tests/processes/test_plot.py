"""Pictures of trees (mpc.learners.plot, ``--plot``): a valid SVG or PNG, the owners in the
legend, big trees cut to their top levels, and the checks before any work: matplotlib missing,
a suffix it cannot write, a path that cannot be written."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is in the experiments extra")

from mpc.datasets import synthetic, weather
from mpc.errors import ConfigError
from mpc.learners import ID3Classifier
from mpc.learners.plot import install_hint, plot_tree, require_matplotlib
from mpc.learners.tree import node_count, to_json
from parties.cli import main

from ..conftest import ROOT, run_mpc

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def svg_text(path: Path) -> str:
    """Every text of an SVG (its legend and labels; matplotlib keeps text as text here)."""
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    return " ".join(t.strip() for t in root.itertext() if t.strip())


def sited_tree() -> dict:
    """Weather's ID3 tree with its interior nodes owned by three sites."""
    tree = ID3Classifier().fit(weather(), sites={"outlook": 0, "humidity": 1, "windy": 2}).tree_
    return to_json(tree)


def test_an_svg_with_every_owner_in_the_legend_and_the_class_counts(tmp_path: Path) -> None:
    path = tmp_path / "tree.svg"
    info = plot_tree(sited_tree(), path, sites=["north", "south", "east"], class_site="east")
    assert info.owners == ("north", "south", "east") and info.left_out == 0
    text = svg_text(path)
    for owner in ("north", "south", "east", "outlook", "humidity", "windy", "yes: 4", "no: 3"):
        assert owner in text, owner
    assert "leaf: class (class counts), at east" in text


def test_a_png_of_a_plain_tree(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folders" / "tree.png"  # missing folders are made
    info = plot_tree(ID3Classifier().fit(weather()).tree_, path, title="weather")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5000
    assert info.owners == ("one table (plain learner)",) and info.drawn == 8
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_big_tree_is_drawn_to_its_top_levels_and_says_what_it_left_out(tmp_path: Path) -> None:
    tree = ID3Classifier().fit(synthetic(600, n_attributes=6, depth=5, noise=0.2, seed=4)).tree_
    total = node_count(tree)
    assert total > 50
    info = plot_tree(tree, tmp_path / "big.svg", max_nodes=50)
    assert info.drawn <= 50 and info.left_out == total - info.drawn > 0
    text = svg_text(tmp_path / "big.svg")
    assert f"{info.drawn} of {total} nodes drawn" in text
    assert f"{info.left_out} nodes left out" in text and "nodes below" in text


def test_a_missing_matplotlib_is_one_line_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(ConfigError, match=r"needs matplotlib.*pip install"):
        require_matplotlib()
    picture = tmp_path / "tree.svg"
    tree_out = tmp_path / "tree.json"
    code = main(["train", "--dataset", "weather", "--tree-out", str(tree_out),
                 "--plot", str(picture)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err == (
        "mpc: error: --plot needs matplotlib, which is not installed: "
        f"python -m pip install -e '{ROOT}[experiments]'\n"
    )
    assert not tree_out.exists() and not picture.exists()  # nothing was done


def test_the_install_hint_installs_from_the_clone_or_else_matplotlib_itself(
    tmp_path: Path,
) -> None:
    """From a source checkout the hint installs the checkout's own extra; from an installed
    wheel (no checkout around it) matplotlib itself, never a package of this project from an
    index, where it is not."""
    assert install_hint() == install_hint(ROOT) == f"python -m pip install -e '{ROOT}[experiments]'"
    assert install_hint(tmp_path) == "python -m pip install 'matplotlib>=3.8'"


@pytest.mark.parametrize("command", [
    ["train", "--dataset", "weather"],
    ["run", "ppid3", "--dataset", "weather"],
])  # fmt: skip
def test_a_path_that_cannot_be_written_fails_before_the_run(
    tmp_path: Path, command: list[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, out, err = run_mpc(*command, "--plot", str(blocker / "tree.svg"), deadline=60)
    assert code == 2 and out == "", err
    assert err.startswith(f"mpc: error: --plot {blocker / 'tree.svg'}: {blocker} is a file")
    assert "started" not in err and err.count("\n") == 1
    code, out, err = run_mpc(*command, "--plot", str(tmp_path / "tree.pdf"), deadline=60)
    assert code == 2 and "expected a file ending in .svg or .png, got .pdf" in err


def test_mpc_train_plot_writes_the_picture_it_names(tmp_path: Path) -> None:
    picture = tmp_path / "pictures" / "weather.svg"
    code, out, err = run_mpc("train", "--dataset", "weather", "--plot", str(picture))
    assert code == 0, err
    assert f"picture:    {picture} (8 nodes drawn)" in out
    assert "outlook" in svg_text(picture)
