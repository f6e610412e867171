"""Saved model parts are bound by commitments that hide them (:mod:`mpc.learners.model_file`):
another site cannot test guesses of a part against what it holds, and a part edited, with
its commitment recomputed or not, is refused by the others."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from mpc.learners.model_file import (
    ModelError,
    SavedModel,
    commit_part,
    opens_commitment,
    read_model,
    write_model,
)
from parties.api import run_system

pytestmark = pytest.mark.processes


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _train(folder: Path) -> dict[str, SavedModel]:
    run = run_system(
        "ppid3", dataset="weather", partition="outlook,temperature;humidity,windy",
        model_out=str(folder), timeout=30,
    )  # fmt: skip
    assert run.ok, run.error
    return {p.stem.split(".")[0]: read_model(p, "ppid3") for p in folder.glob("*.model.json")}


def test_the_class_site_cannot_test_guesses_of_another_site_s_part(tmp_path: Path) -> None:
    """The review's attack: site2 (the class site) knows everything of site1's part but its
    split (which attribute, which value leads to which child): the public parameters, the
    structure, the ids of the children (its own nodes). It tries every attribute of site1 and
    every assignment of its values to the children, and checks each guess against what its
    own file holds for site1's part. Against a bare hash of the body (the version 1 format)
    exactly one guess matches, site1's true split; against a commitment none does."""
    parts = _train(tmp_path / "model")
    site1, site2 = parts["site1"], parts["site2"]
    held = site2.parts["site1"]  # what the class site holds of site1's part
    tree = site1.body["tree"]
    (root_id, root), *_ = tree["interior"].items()
    children = list(root["children"].values())
    domains = {"outlook": ["overcast", "rainy", "sunny"], "temperature": ["cool", "hot", "mild"]}
    guesses = []
    for attribute, values in domains.items():
        for order in itertools.permutations(children):
            guess = json.loads(json.dumps(site1.body))
            guess["tree"]["interior"][root_id] = {
                **root, "attribute": attribute, "children": dict(zip(values, order, strict=True)),
            }  # fmt: skip
            guesses.append(guess)
    assert site1.body in guesses  # the attacker's guesses include the truth
    confirmed = [g for g in guesses if hashlib.sha256(_canonical(g)).hexdigest() == held]
    assert confirmed == [], "a guess of site1's split is confirmed by what site2 holds"
    # and what it holds is no function of the body: the same body commits to new values
    assert commit_part(site1.body).commitment != commit_part(site1.body).commitment
    assert site1.opening is not None and opens_commitment(site1.body, site1.opening, held)


def _edited(model: SavedModel, body: dict[str, Any], *, recommit: bool) -> SavedModel:
    """``model`` with ``body``; with ``recommit`` a fresh commitment to it replaces its own
    in its ``parts`` (what an editor who knows the format would do)."""
    if not recommit:
        return SavedModel(model.system, model.party, model.model_id, body, model.parts,
                          model.opening)  # fmt: skip
    made = commit_part(body)
    parts = {**model.parts, str(model.party): made.commitment}
    return SavedModel(model.system, model.party, model.model_id, body, parts, made.opening)


def test_an_edited_part_is_refused_by_its_reader_or_by_the_other_sites(tmp_path: Path) -> None:
    """Flip every leaf's class in the class site's part. Saved as it is, the part no longer
    opens its commitment (the reader refuses it); with its commitment recomputed, it is the
    other sites that refuse it, since they hold the original commitment."""
    parts = _train(tmp_path / "model")
    part = parts["site2"]
    body = json.loads(json.dumps(part.body))
    for leaf in body["tree"]["leaves"].values():
        leaf["class"] = "yes" if leaf["class"] == "no" else "no"
    with pytest.raises(ModelError, match="does not open"):
        write_model(tmp_path / "x.json", _edited(part, body, recommit=False))
    write_model(tmp_path / "model" / "site2.model.json", _edited(part, body, recommit=True))
    new = tmp_path / "new.csv"
    new.write_text("outlook,temperature,humidity,windy\nsunny,hot,high,FALSE\n")
    run = run_system(
        "ppid3-classify", csv=str(new), model=str(tmp_path / "model"),
        predictions_out=str(tmp_path / "p.csv"), timeout=30,
    )  # fmt: skip
    assert not run.ok
    errors = " ".join(str((r.error or {}).get("message", "")) for r in run.parties.values())
    assert "another training run (or was changed since)" in errors


def test_a_single_part_model_is_checked_for_what_the_docs_say_and_no_more(
    tmp_path: Path,
) -> None:
    """A model of one part (``mpc train --model-out``) has no other party to hold its
    commitment: its checks catch a damaged file or an edit that did not recompute them, and
    not an edit by someone who can write the file and recomputes them. The docs and the
    module say exactly that (they used to promise that an edited file is refused)."""
    from mpc.learners import model_file

    from ..conftest import ROOT, run_mpc

    path = tmp_path / "plain.json"
    code, _, err = run_mpc("train", "--dataset", "weather", "--model-out", str(path))
    assert code == 0, err
    new = tmp_path / "new.csv"
    new.write_text("outlook,temperature,humidity,windy\nsunny,hot,high,FALSE\n")
    doc = json.loads(path.read_text())

    def flipped(node: dict[str, Any]) -> None:
        if "children" in node:
            for child in node["children"].values():
                flipped(child)
        elif "class" in node:
            node["class"] = "yes" if node["class"] == "no" else "no"

    flipped(doc["body"]["tree"] if "tree" in doc["body"] else doc["body"])
    path.write_text(json.dumps(doc))  # edited, nothing recomputed: refused
    code, _, err = run_mpc("predict", "--model", str(path), "--csv", str(new), "--out",
                           str(tmp_path / "p.csv"))  # fmt: skip
    assert code == 2 and "changed after training" in err, err
    model = SavedModel(doc["system"], doc["party"], doc["model_id"], doc["body"])
    write_model(path, model)  # edited, commitment and checksum recomputed: accepted
    code, _, err = run_mpc("predict", "--model", str(path), "--csv", str(new), "--out",
                           str(tmp_path / "p.csv"))  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "p.csv").read_text().splitlines()[1].endswith(",yes")  # was "no"
    security = " ".join((ROOT / "docs" / "security.md").read_text().split())
    assert "It is not a signature: whoever can write the file can recompute both" in security
    assert "It is not a signature" in " ".join((model_file.__doc__ or "").split())
