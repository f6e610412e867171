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
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mpc.datasets import load_csv
from mpc.learners.id3 import ID3Classifier

from ..conftest import ROOT

pytestmark = [pytest.mark.processes, pytest.mark.timeout(300)]

PAGE = ROOT / "docs" / "hosts.md"
DATA = Path(os.environ.get("MPC_DATA_DIR") or ROOT.parent / "shared" / "datasets")
HOSTS = {"bank": "bank.example.org", "insurer": "insurer.example.org",
         "garage": "garage.example.org"}  # fmt: skip
#: each organisation's columns of car (the garage's file also has the class)
COLUMNS = {"bank": ["buying", "maint"], "insurer": ["doors", "persons"],
           "garage": ["lug_boot", "safety"]}  # fmt: skip
CAR = ["buying", "maint", "doors", "persons", "lug_boot", "safety"]
#: a command shown on the page, with the host it runs on
PROMPT = re.compile(r"^ *(bank|insurer|garage)\$ (.*)$")
BLOCK = re.compile(r"^```console\n(.*?)^```", re.M | re.S)

#: what varies from run to run, masked in the page's lines and the real ones alike
MASKS = [
    (re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "), ""),
    (re.compile(r"\b[0-9a-f]{4}( [0-9a-f]{4}){4}\b"), "FINGERPRINT"),
    (re.compile(r"in \d+\.\d+ s\b"), "in T s"),
    (re.compile(r"with model [0-9a-f]{12}\b"), "with model MODEL"),
]


@dataclass
class Shown:
    host: str
    command: str
    output: list[str]
    section: int  # the page's ``##`` section: background commands of one run together


def page_commands(text: str) -> list[Shown]:
    """The page's host commands in order, each with the output lines shown under it."""
    found: list[Shown] = []
    for block in BLOCK.finditer(text):
        section = len(re.findall(r"^## ", text[: block.start()], re.M))
        lines = block.group(1).splitlines()
        i = 0
        while i < len(lines):
            m = PROMPT.match(lines[i])
            assert m, f"docs/hosts.md: a console line outside a command: {lines[i]!r}"
            host, command = m.groups()
            while command.endswith("\\"):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            output = []
            while i < len(lines) and not PROMPT.match(lines[i]):
                output.append(lines[i])
                i += 1
            found.append(Shown(host, command, output, section))
    return found


def _masked(line: str) -> str:
    for pattern, repl in MASKS:
        line = pattern.sub(repl, line)
    return " ".join(line.split())


def _as_here(line: str) -> str:
    """A page line as it reads with the host names at 127.0.0.1."""
    for name in HOSTS.values():
        line = line.replace(name, "127.0.0.1")
    return line.replace("listens on 0.0.0.0", "listens on 127.0.0.1")


def write_files(root: Path) -> dict[str, tuple[list[list[str]], list[list[str]]]]:
    """The three organisations' files: 1,000 cars to train on and 728 new ones, in a shuffle
    of car's rows fixed by seed 3; each file in an order of its own organisation's."""
    rows = [line.split(",") for line in (DATA / "car" / "car.data").read_text().split() if line]
    rows = [rows[i] for i in np.random.default_rng(3).permutation(len(rows))]
    train, new = rows[:1000], rows[1000:]
    for k, (org, cols) in enumerate(COLUMNS.items()):
        idx = [CAR.index(c) for c in cols]
        for name, part, prefix in ((org, train, "r"), (f"{org}-new", new, "n")):
            with_class = org == "garage" and part is train
            order = np.random.default_rng([7, k, len(part)]).permutation(len(part))
            with (root / org / f"{name}.csv").open("w", newline="") as fh:
                out = csv.writer(fh, lineterminator="\n")
                out.writerow(["id", *cols, *(["class"] if with_class else [])])
                for i in order:
                    r = part[i]
                    out.writerow([f"{prefix}{i}", *(r[j] for j in idx),
                                  *([r[6]] if with_class else [])])  # fmt: skip
    return {"car": (train, new)}


def _argv(command: str) -> list[str]:
    for name in HOSTS.values():
        command = command.replace(name, "127.0.0.1")
    words = shlex.split(command.removesuffix("&").strip())
    if words[0] == "mpc":
        return [sys.executable, "-m", "mpc", *words[1:]]
    assert words[:3] == ["python", "-m", "parties"], words
    return [sys.executable, *words[1:]]


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


def _check(shown: Shown, out: list[str]) -> None:
    if not shown.output:
        return
    page = [_masked(_as_here(line)) for line in shown.output]
    real = [_masked(line) for line in out if line.strip()]
    assert real == page, f"{shown.host}$ {shown.command}\npage:\n" + "\n".join(
        shown.output
    ) + "\nreal:\n" + "\n".join(out)  # fmt: skip


def test_the_hosts_page_runs_as_printed_and_predicts_as_plain_id3(tmp_path: Path) -> None:
    if not (DATA / "car" / "car.data").exists():
        pytest.skip(f"UCI car is not at {DATA}")
    shown = page_commands(PAGE.read_text(encoding="utf-8"))
    assert {s.host for s in shown} == set(HOSTS)
    for org in HOSTS:
        (tmp_path / org).mkdir()
    train, new = write_files(tmp_path)["car"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    background: list[tuple[Shown, subprocess.Popen[str]]] = []
    printed: dict[str, list[str]] = {org: [] for org in HOSTS}

    def wait_background() -> None:
        deadline = time.monotonic() + 120
        for s, proc in background:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert proc.returncode == 0, f"{s.host}$ {s.command}\n{out}"
            _check(s, out.splitlines())
        background.clear()

    for s in shown:
        if background and background[0][0].section != s.section:
            wait_background()
        _send(tmp_path, s)
        argv = _argv(s.command)
        if s.command.endswith("&"):
            proc = subprocess.Popen(
                argv, cwd=tmp_path / s.host, env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            )  # fmt: skip
            background.append((s, proc))
            continue
        wait_background()
        done = subprocess.run(
            argv, cwd=tmp_path / s.host, env=env, text=True, capture_output=True, timeout=120
        )
        out = (done.stdout + done.stderr).splitlines()
        assert done.returncode == 0, f"{s.host}$ {s.command}\n" + "\n".join(out)
        _check(s, out)
        printed[s.host] += out
    wait_background()

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
    joined = tmp_path / "joined.csv"
    with joined.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([[*CAR, "class"], *train])
    parts = list(COLUMNS.values())
    plain = ID3Classifier().fit(
        load_csv(joined, "class"), attribute_order=[a for p in parts for a in p],
        sites={a: i for i, p in enumerate(parts) for a in p},
    )  # fmt: skip
    new_joined = tmp_path / "new-joined.csv"
    with new_joined.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(
            [["id", *CAR], *([f"n{i}", *r[:6]] for i, r in enumerate(new))]
        )
    predicted = plain.predict(load_csv(new_joined, "id"))
    expected = {f"n{i}": str(c) for i, c in enumerate(predicted)}
    with (tmp_path / "garage" / "predictions.csv").open() as fh:
        got = {r["id"]: r["class"] for r in csv.DictReader(fh)}
    assert got == expected
    for org in ("bank", "insurer"):
        assert not (tmp_path / org / "predictions.csv").exists()
        assert not list((tmp_path / org / "keys").glob("site3.secret"))
