"""``mpc run ppid3 --reveal tree`` across processes over TCP: the tree equals plain ID3 with
Gini (MPyC's tree sizes at its stopping rule), every site's ledger holds the tree's
decisions and record alignment only, and no count or gain is on any ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import ROOT, run_mpc, run_mpc_json

WEATHER = ROOT / "mpc" / "datasets" / "data" / "weather.csv"

pytestmark = pytest.mark.processes

#: the ledger labels of a site in this mode (record alignment's, the tree's decisions, and a
#: helping site's requests)
ALLOWED = {
    "ppid3/structure", "reveal/stops", "reveal/labels", "reveal/splits", "fast-counts/helped",
    "fast-counts/done", "record-alignment/sizes", "record-alignment/common",
    "record-alignment/order", "psi-ca/set-sizes", "psi-ca/counts",
}  # fmt: skip


@pytest.mark.parametrize(
    ("dataset", "nodes"), [("car", 25), ("house-votes-84", 25), ("tic-tac-toe", 64)]
)
def test_reveal_tree_equals_plain_gini_with_mpycs_stopping_rule(dataset: str, nodes: int) -> None:
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", dataset, "--sites", "3", "--reveal", "tree", "--helper",
        "sites", "--min-samples-split", "0.05", deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    result = doc["result"]
    assert result["identical"] is True and result["reveal"] == "tree"
    assert result["nodes"] == nodes  # MPyC's np_id3gini -e 0.05 grows the same tree
    for name, report in doc["parties"].items():
        labels = {e["label"] for e in report["ledger"]}
        assert labels <= ALLOWED, (name, labels - ALLOWED)
        assert {"reveal/stops", "reveal/splits", "reveal/labels"} <= labels


@pytest.mark.datasets
def test_reveal_tree_by_information_gain_on_shares() -> None:
    """``--criterion entropy-fixed``: the plain learner's fixed-point information gain, the
    same tree, the same ledger; the paper's mode splits by it as well."""
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "car", "--sites", "3", "--reveal", "tree", "--criterion",
        "entropy-fixed", "--max-depth", "3", deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    result = doc["result"]
    assert result["identical"] is True and result["criterion"] == "entropy-fixed"
    assert result["nodes"] == 26  # (Gini's tree of depth 3 has 25)
    for name, report in doc["parties"].items():
        labels = {e["label"] for e in report["ledger"]}
        assert labels <= ALLOWED, (name, labels - ALLOWED)
    # the paper's mode splits by it too (its owners score their opened counts with it)
    code, doc = run_mpc_json("run", "ppid3", "--dataset", "weather", "--criterion",
                             "entropy-fixed", deadline=60)  # fmt: skip
    assert code == 0 and doc["result"]["identical"] is True, doc
    assert doc["result"]["criterion"] == "entropy-fixed"


@pytest.mark.datasets
@pytest.mark.parametrize("mode", [["--reveal", "tree"], ["--counts", "fast"]])
def test_gini_impurity_across_processes(mode: list[str]) -> None:
    """``--criterion gini-impurity`` (CART's and scikit-learn's weighted Gini impurity): the
    full tic-tac-toe tree of the plain learner with it, 355 nodes where MPyC's Gini grows
    367, revealing only the tree and in the paper's mode."""
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "tic-tac-toe", "--sites", "3", *mode, "--criterion",
        "gini-impurity", deadline=180,
    )  # fmt: skip
    assert code == 0, doc
    result = doc["result"]
    assert result["identical"] is True and result["criterion"] == "gini-impurity"
    assert result["nodes"] == 355


def test_reveal_tree_with_a_dealer_or_no_third_party_and_two_sites() -> None:
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "weather", "--sites", "2", "--reveal", "tree", "--helper",
        "dealer", deadline=60,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["result"]["identical"] is True
    dealer = {e["label"] for e in doc["parties"]["dealer"]["ledger"]}
    assert dealer <= {"fast-counts/request", "fast-counts/done"}
    # two sites and no third party: every product and triple by oblivious transfer
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "car", "--sites", "2", "--reveal", "tree", "--helper",
        "ot", "--min-samples-split", "87", deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["result"]["identical"] is True and doc["result"]["nodes"] == 25
    assert sorted(doc["parties"]) == ["site1", "site2"]


def test_reveal_tree_classifies_held_out_and_new_records_without_opening_a_path(
    tmp_path: Path,
) -> None:
    """Held-out records and new records with saved parts are classified as plain Gini ID3
    does; only the party the predictions go to has them on its ledger, and no site's ledger
    holds a record's node or path (Algorithm 8's ``classify/instances``)."""
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "car", "--sites", "3", "--reveal", "tree", "--helper",
        "sites", "--test-split", "0.3", deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["result"]["accuracy"]["test_predictions_equal_plain"] is True
    for name, report in doc["parties"].items():
        labels = {e["label"] for e in report["ledger"]}
        assert "classify/instances" not in labels
        assert ("classify/predictions" in labels) == (name == "site3"), name
    models = tmp_path / "models"
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "weather", "--sites", "3", "--reveal", "tree",
        "--model-out", str(models), deadline=60,
    )  # fmt: skip
    assert code == 0, doc
    assert sorted(p.name for p in models.iterdir()) == [f"site{i}.model.json" for i in (1, 2, 3)]
    code, doc = run_mpc_json(
        "run", "ppid3-classify", "--model", str(models), "--csv", str(WEATHER),
        "--predictions-out", str(tmp_path / "predictions.csv"), "--deliver-to", "site1",
        deadline=60,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["result"]["equal_to_plain_tree"] is True
    for name, report in doc["parties"].items():
        labels = {e["label"] for e in report["ledger"]}
        assert "classify/instances" not in labels
        assert ("classify/predictions" in labels) == (name == "site1"), name


@pytest.mark.parametrize(("helper", "sites"), [("dealer", 3), ("ot", 3), ("sites", 3), ("ot", 2)])
def test_classification_without_a_path_takes_its_triples_from_the_training_s_helper(
    helper: str, sites: int, tmp_path: Path
) -> None:
    """Held-out records and saved parts are classified with the training's helper: with
    ``ot`` no third party deals, whatever the number of sites (the third site receives no
    triples and no request); with ``dealer`` the dealer serves the classification too; the
    trust lines say so; ``ppid3-classify --helper`` may choose another."""
    models = tmp_path / "models"
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "car", "--sites", str(sites), "--reveal", "tree",
        "--helper", helper, "--max-depth", "2", "--test-split", "0.3", "--model-out",
        str(models), deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    result = doc["result"]
    assert result["accuracy"]["test_predictions_equal_plain"] is True
    assert f"test records classified without a path, randomness from {helper}" in result["trust"]

    def received(report: dict, prefix: str) -> set[str]:
        return {r["receipt"] for r in report["received"] if r["tag"].startswith(prefix)}

    third = doc["parties"].get("site3")
    if helper == "ot" and third is not None:  # nobody deals p0's and p1's triples
        assert not received(third, "classify/") & {"fast-counts/request", "compare/dealt"}
        for name in ("site1", "site2"):
            got = received(doc["parties"][name], "classify/test")
            assert "compare/dealt" not in got and any(r.startswith("ot/") for r in got), got
    if helper == "dealer":
        assert "fast-counts/request" in received(doc["parties"]["dealer"], "classify/")
    code, doc = run_mpc_json(
        "run", "ppid3-classify", "--model", str(models), "--csv", str(_car_records(tmp_path)),
        "--predictions-out", str(tmp_path / "predictions.csv"), deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["result"]["equal_to_plain_tree"] is True and doc["result"]["helper"] == helper
    assert ("dealer" in doc["parties"]) == (helper == "dealer")
    other = "ot" if helper != "ot" else ("sites" if sites >= 3 else "dealer")
    code, doc = run_mpc_json(
        "run", "ppid3-classify", "--model", str(models), "--csv", str(_car_records(tmp_path)),
        "--helper", other, "--predictions-out", str(tmp_path / "predictions.csv"),
        deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["result"]["equal_to_plain_tree"] is True
    assert f"--helper {other}" in doc["result"]["trust"]


def _car_records(folder: Path) -> Path:
    """Twenty of car's records as a table with a header and no class."""
    path = folder / "new.csv"
    if not path.exists():
        header = "buying,maint,doors,persons,lug_boot,safety"
        data = ROOT / "mpc" / "datasets" / "data" / "uci" / "car" / "car.data"
        rows = [",".join(line.split(",")[:6]) for line in data.read_text().split()[::86]]
        path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("helper", ["sites", "dealer"])
def test_rows_in_ranges_across_processes_leave_the_tree_and_no_folder(
    helper: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--row-block``: every site's 1,728 rows of car in ranges of 300 (one in memory at a
    time, the others in a folder of the site's own under ``$TMPDIR``), the plain tree, the
    folders gone at the end."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    code, doc = run_mpc_json(
        "run", "ppid3", "--dataset", "car", "--sites", "3", "--reveal", "tree", "--helper",
        helper, "--row-block", "300", "--max-depth", "3", deadline=120,
    )  # fmt: skip
    assert code == 0, doc
    assert doc["result"]["identical"] is True
    for name in ("site1", "site2", "site3"):
        cost = doc["parties"][name]["result"]["cost"]
        assert cost["ranges"] == 6, (name, cost)
    # the class site holds every node's shares: they wait on its disk between uses
    assert doc["parties"]["site3"]["result"]["cost"]["spilled_bytes"] > 0
    assert not list(tmp_path.glob("**/mpc-rows-*"))


@pytest.mark.parametrize(
    "mode", [["--helper", "ot"], ["--reveal", "counts", "--helper", "dealer"], ["--counts", "psi"]]
)
def test_rows_in_ranges_are_refused_at_launch_where_rows_are_taken_whole(mode: list[str]) -> None:
    code, _, err = run_mpc(
        "run", "ppid3", "--dataset", "weather", "--sites", "2", "--row-block", "5", *mode,
        deadline=30,
    )  # fmt: skip
    assert code != 0
    assert "--row-block needs --reveal tree and a dealing party" in err, err
    assert "started" not in err and "Traceback" not in err
