"""docs/hosts.md, run as printed: three organisations, each in a folder of its own standing
for its host, run the page's commands in the page's order.

A prompt names the host (``bank$ mpc keygen ...`` runs in ``bank/``). The one change from the
page: the three host names are 127.0.0.1 (so a party listens on 127.0.0.1 where the page's
listens on 0.0.0.0). What the page says is sent between organisations is copied between the
folders at the point the page says it (the public keys to the garage before it deploys; the
deployment file and the public keys to the others before they check). Every output line the
page shows must be the real output's line, with only these masked: log timestamps, key
fingerprints, the agreement code, the training time and the model id; and those must agree
across hosts (a key's fingerprint at its own host, in `mpc deploy` and in every `mpc check`;
one agreement code at all three). The data are UCI car's, cut into the three files the page
describes by :func:`write_files`."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

from mpc.datasets import load_csv
from mpc.learners.id3 import ID3Classifier

from ..conftest import ROOT
from ..pages import (
    COLUMNS,
    Shown,
    page_commands,
    run_page,
    write_joined_files,
    write_organisation_files,
)

pytestmark = [pytest.mark.processes, pytest.mark.pages, pytest.mark.timeout(300)]

PAGE = ROOT / "docs" / "hosts.md"
HOSTS = {"bank": "bank.example.org", "insurer": "insurer.example.org",
         "garage": "garage.example.org"}  # fmt: skip
#: a command shown on the page, with the host it runs on
PROMPT = re.compile(r"^ *(?P<host>bank|insurer|garage)\$ (?P<command>.*)$")


def _as_here(line: str) -> str:
    """A page line as it reads with the host names at 127.0.0.1."""
    for name in HOSTS.values():
        line = line.replace(name, "127.0.0.1")
    return line.replace("listens on 0.0.0.0", "listens on 127.0.0.1")


def _command_here(command: str) -> str:
    for name in HOSTS.values():
        command = command.replace(name, "127.0.0.1")
    return command


def _send(root: Path, command: Shown) -> None:
    """What the page says is sent between organisations before ``command`` runs."""
    if command.host == "garage" and command.command.startswith("mpc deploy"):
        for org in ("bank", "insurer"):  # the public keys, to the garage
            for key in (root / org / "keys").glob("*.public"):
                shutil.copy(key, root / "garage" / "keys")
    if command.host != "garage" and command.command.startswith("mpc check"):
        here = root / command.host  # the deployment file and the public keys, from the garage
        shutil.copy(root / "garage" / "deployment.toml", here)
        for key in (root / "garage" / "keys").glob("*.public"):
            if not (here / "keys" / key.name).exists():
                shutil.copy(key, here / "keys")


def test_the_hosts_page_runs_as_printed_and_predicts_as_plain_id3(tmp_path: Path) -> None:
    shown = page_commands(PAGE.read_text(encoding="utf-8"), PROMPT, "docs/hosts.md")
    assert {s.host for s in shown} == set(HOSTS)
    for org in HOSTS:
        (tmp_path / org).mkdir()
    write_organisation_files({org: tmp_path / org for org in HOSTS})
    printed = run_page(
        shown, lambda s: tmp_path / s.host, as_here=_as_here, command_here=_command_here,
        before=lambda s: _send(tmp_path, s),
    )  # fmt: skip

    # the fingerprints agree: a key's at its own host, in mpc deploy, in every mpc check
    fp = re.compile(r"^(site\d)\b.*?([0-9a-f]{4}(?: [0-9a-f]{4}){4})")
    own = {m[1]: m[2] for org in HOSTS for line in printed[org]
           if (m := fp.match(line)) and "(fingerprint" in line}  # fmt: skip
    assert sorted(own) == ["site1", "site2", "site3"], printed
    for org in HOSTS:
        for line in printed[org]:
            m = fp.match(line)
            if m:
                assert m[2] == own[m[1]], (org, line)
    codes = [" ".join(line.split()[1:6]) for org in HOSTS for line in printed[org]
             if line.startswith("agreement:")]  # fmt: skip
    assert len(codes) == 3 and len(set(codes)) == 1, codes

    # the garage's predictions are plain ID3's on the joined table (which only this test has)
    joined, new_joined = write_joined_files(tmp_path)
    parts = list(COLUMNS.values())
    plain = ID3Classifier().fit(
        load_csv(joined, "class", id_column="id"),
        attribute_order=[a for p in parts for a in p],
        sites={a: i for i, p in enumerate(parts) for a in p},
    )  # fmt: skip
    rows = load_csv(new_joined, "id")
    expected = dict(zip(rows.target.tolist(), map(str, plain.predict(rows)), strict=True))
    with (tmp_path / "garage" / "predictions.csv").open() as fh:
        got = {r["id"]: r["class"] for r in csv.DictReader(fh)}
    assert got == expected
    for org in ("bank", "insurer"):
        assert not (tmp_path / org / "predictions.csv").exists()
        assert not list((tmp_path / org / "keys").glob("site3.secret"))
