"""Running the systems from Python (parties.api): the processes of ``mpc run``, a typed frozen
result that agrees with the plain learner and with ``mpc run --json``, options read as the
command line reads them, and every error before any process starts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mpc.datasets import weather
from mpc.errors import ConfigError
from mpc.learners import ID3Classifier
from mpc.learners.tree import to_json
from parties import RunResult, run_system, system_options
from protocols.ppid3.ppid3 import check_tree_equal

pytestmark = pytest.mark.processes


def without_sites(node: dict) -> dict:
    """A JSON tree without its owners (a plain tree has none)."""
    out = {k: v for k, v in node.items() if k != "site"}
    if "children" in node:
        out["children"] = {k: without_sites(c) for k, c in node["children"].items()}
    return out


def sites_of(node: dict) -> set[int]:
    if "children" not in node:
        return set()
    return {node["site"]}.union(*(sites_of(c) for c in node["children"].values()))


def test_ppid3_from_python_gives_the_plain_tree_ledgers_and_a_picture(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is in the experiments extra")
    picture = tmp_path / "ppid3.svg"
    run = run_system(
        "ppid3", dataset="weather", sites=3, class_site=3, counts="fast", reveal="counts",
        timeout=30, plot=picture,
    )  # fmt: skip
    assert isinstance(run, RunResult) and run.ok, run.error
    assert run.sites == ("site1", "site2", "site3") and run.class_site == "site3"
    plain = to_json(ID3Classifier().fit(weather()).tree_)
    assert check_tree_equal(without_sites(to_json(run.tree)), without_sites(plain))
    assert {run.sites[s] for s in sites_of(to_json(run.tree))} == {"site1", "site2", "site3"}
    assert run.result["identical"] is True and run.accuracy == 1.0
    assert run.trust is not None and "third site" in run.trust
    assert set(run.parties) == {"site1", "site2", "site3"}
    for name, party in run.parties.items():
        assert party.ok and party.exit_code == 0 and party.role == "site"
        assert party.metrics["bytes_sent"] > 0 and party.ledger, name
    # only the class site learns the class distributions of the nodes
    assert run.parties["site3"].learned("ppid3/node-counts")
    assert not run.parties["site1"].learned("ppid3/node-counts")
    assert picture.read_text().lstrip().startswith("<?xml") and "site2" in picture.read_text()
    doc = run.to_json()
    assert doc["system"] == "ppid3" and doc["ok"] and set(doc["parties"]) == set(run.parties)
    summary = run.summary()
    assert summary.startswith("system: ppid3\nok:     True") and "identical: True" in summary
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.ok = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        run.parties["site1"] = run.parties["site2"]  # type: ignore[index]


def test_a_failed_run_is_a_result_naming_the_party(tmp_path: Path) -> None:
    run = run_system("secure-sum", parties=3, inputs=[3, -1, 4], timeout=5, kill=("site2", 0))
    assert not run.ok and run.result is None and run.tree is None
    assert not run.parties["site2"].ok and run.parties["site2"].exit_code != 0
    assert run.error is not None and "site2" in run.error
    assert "errors:" in run.summary()


def test_a_toy_system_and_its_negative_inputs() -> None:
    run = run_system("secure-sum", parties=3, inputs=[3, -1, 4], modulus=1000, timeout=30)
    assert run.ok and run.result == 6 and run.accuracy is None and run.tree is None
    assert run.trust == "semi-honest parties; the two ring neighbours of a party do not collude"
    assert all(p.learned("secure-sum/result") == [6] for p in run.parties.values())


def test_options_are_read_as_the_command_line_reads_them() -> None:
    args = system_options("ppid3", dataset="weather", class_site="site2", counts="fast")
    assert args.dataset == "weather" and args.class_site == 1 and args.counts == "fast"
    assert system_options("secure-sum", parties=2, inputs=[-3, 4]).inputs == (-3, 4)
    cdtl = system_options("cdtl", where=["a!=b", "c=d"], dataset="adult", sensitive="race")
    assert cdtl.where == ("a!=b", "c=d")
    with pytest.raises(ConfigError, match=r"ppid3 has no option 'depth'; .*'max_depth'"):
        system_options("ppid3", dataset="weather", depth=3)
    with pytest.raises(ConfigError, match=r"argument --counts: invalid choice: 'slow'"):
        system_options("ppid3", dataset="weather", counts="slow")
    with pytest.raises(ConfigError, match="one of the arguments --sets --random is required"):
        system_options("psi-ca")
    with pytest.raises(ConfigError, match="is a flag: give True or False"):
        system_options("ppid3", dataset="weather", all_rows="yes")
    with pytest.raises(ConfigError, match="unknown system 'pid3'"):
        run_system("pid3")


def test_options_take_the_command_line_s_names(tmp_path: Path) -> None:
    """``--class``, ``--id`` and ``--criterion`` are ``class_``, ``id`` and ``criterion`` (the
    names of the options' fields work too); ``quiet`` prints nothing, as ``mpc run --quiet``."""
    csv = tmp_path / "t.csv"
    csv.write_text("rid,a,label\n" + "".join(f"r{i},{i % 3},{'yn'[i % 2]}\n" for i in range(12)))
    args = system_options("ppid3", csv=str(csv), class_="label", id="rid", criterion="gini",
                          reveal="tree", counts="fast")  # fmt: skip
    assert (args.class_column, args.id_column, args.split_criterion) == ("label", "rid", "gini")
    assert system_options("ppid3", csv=str(csv), class_column="label").class_column == "label"
    with pytest.raises(ConfigError, match=r"'class_column' gives an option twice"):
        system_options("ppid3", csv=str(csv), class_="label", class_column="label")
    with pytest.raises(ConfigError, match=r"its options are \[.*'class_', .*'id', .*\]"):
        system_options("ppid3", dataset="weather", classes=2)
    run = run_system("ppid3", dataset="weather", sites=2, quiet=True, timeout=30)
    assert run.ok


def test_outputs_and_values_are_checked_before_any_process_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import parties.api

    def no_launch(*args: object, **kwargs: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(parties.api, "launch", no_launch)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=r"--model-out .*is a file"):
        run_system("ppid3", dataset="weather", model_out=blocker / "model")
    with pytest.raises(ConfigError, match=r"^plot .*is a file"):
        run_system("ppid3", dataset="weather", plot=blocker / "tree.svg")
    with pytest.raises(ConfigError, match="secure-sum makes no tree"):
        run_system("secure-sum", plot=tmp_path / "tree.svg")
    with pytest.raises(ConfigError, match="--class-site 7"):
        run_system("ppid3", dataset="weather", sites=3, class_site=7)
    with pytest.raises(ConfigError, match="no such party"):
        run_system("secure-sum", kill=("site9", 0))
