"""A documentation page run as printed: its ``console`` blocks' commands in the page's order,
each checked against the output the page shows under it.

A command is a prompt line (``$ `` or ``HOST$ ``, continued by a trailing ``\\``); the lines
under it, up to the next prompt, are its output. A command ending in ``&`` starts in the
background; the background commands of one ``##`` section run together and are waited for
before the next command outside them (or the next section). ``mpc ...`` and
``python -m parties ...`` run from this clone (``sys.executable -m``); any other command (the
page's ``head``, ``stat``, ``diff``) runs in ``bash``.

Every output line the page shows must be the real output's line, after :data:`MASKS` (log
timestamps, key fingerprints, timings, model ids and the other values that change from run
to run) and whitespace are evened out on both. A line ``...`` on the page stands for lines
left out: the shown lines around it must each appear as a run of consecutive lines, in order.
A command shown without output is run and must succeed, its output unchecked.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpc.datasets import load_dataset, write_party_files

from .conftest import ROOT

BLOCK = re.compile(r"^```console\n(.*?)^```", re.M | re.S)

#: what varies from run to run, masked in the page's lines and the real ones alike
MASKS = [
    (re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "), ""),
    (re.compile(r"\b[0-9a-f]{4}( [0-9a-f]{4}){4}\b"), "FINGERPRINT"),
    (re.compile(r"\b\d+\.\d+ s\b"), "T s"),
    (re.compile(r"\b\d+\.\d+ ms\b"), "T ms"),
    (re.compile(r"\bmodel( id)? [0-9a-f]{12}\b"), r"model\1 MODEL"),
    (re.compile(r"\bmodel id [0-9a-f]{32}\b"), "model id MODEL"),
    (re.compile(r"^wall: +\S+"), "wall: T"),
]

#: car's columns, and each organisation's (the garage's file also has the class)
CAR = ["buying", "maint", "doors", "persons", "lug_boot", "safety"]
COLUMNS = {"bank": ["buying", "maint"], "insurer": ["doors", "persons"],
           "garage": ["lug_boot", "safety"]}  # fmt: skip


@dataclass
class Shown:
    host: str  # "" for a plain ``$`` prompt
    command: str
    output: list[str]
    section: int  # the page's ``##`` section: background commands of one run together


def page_commands(text: str, prompt: re.Pattern[str], page: str) -> list[Shown]:
    """The page's commands in order, each with the output lines shown under it; ``prompt``
    matches a command line, its group ``host`` (if any) naming where it runs and ``command``
    the command."""
    found: list[Shown] = []
    for block in BLOCK.finditer(text):
        section = len(re.findall(r"^## ", text[: block.start()], re.M))
        lines = block.group(1).splitlines()
        i = 0
        while i < len(lines):
            m = prompt.match(lines[i])
            assert m, f"{page}: a console line outside a command: {lines[i]!r}"
            host, command = m.groupdict().get("host") or "", m.group("command")
            while command.endswith("\\"):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            output = []
            while i < len(lines) and not prompt.match(lines[i]):
                output.append(lines[i])
                i += 1
            found.append(Shown(host, command, output, section))
    return found


def masked(line: str) -> str:
    for pattern, repl in MASKS:
        line = pattern.sub(repl, line)
    return " ".join(line.split())


def check_output(shown: Shown, out: list[str], as_here: Callable[[str], str]) -> None:
    """The page's output lines of ``shown`` (read through ``as_here``) against the real ones,
    as the module docstring says."""
    if not shown.output:
        return
    page = [masked(as_here(line)) for line in shown.output]
    real = [masked(line) for line in out if line.strip()]
    runs: list[list[str]] = [[]]
    for line in page:
        if line == "...":
            runs.append([])
        else:
            runs[-1].append(line)
    gapped = len(runs) > 1
    at = 0
    ok = True
    for k, run in enumerate(runs):
        if not run:
            continue
        if not gapped:
            ok = real == run
            break
        starts = [i for i in range(at, len(real) - len(run) + 1) if real[i : i + len(run)] == run]
        if not starts or (k == 0 and starts[0] != 0):
            ok = False
            break
        at = starts[0] + len(run)
    if ok and gapped and runs[-1]:
        ok = at == len(real)
    assert ok, (
        f"{shown.host}$ {shown.command}\npage:\n" + "\n".join(shown.output)
        + "\nreal:\n" + "\n".join(out)
    )  # fmt: skip


def argv(command: str) -> list[str]:
    """How a page's command runs from this clone."""
    words = shlex.split(command.removesuffix("&").strip()) if "<(" not in command else []
    if words[:1] == ["mpc"]:
        return [sys.executable, "-m", "mpc", *words[1:]]
    if words[:3] == ["python", "-m", "parties"]:
        return [sys.executable, *words[1:]]
    return ["bash", "-c", command.removesuffix("&").strip()]


def run_page(
    shown: list[Shown],
    cwd: Callable[[Shown], Path],
    *,
    as_here: Callable[[str], str] = lambda line: line,
    command_here: Callable[[str], str] = lambda command: command,
    before: Callable[[Shown], None] = lambda s: None,
    timeout: float = 120,
) -> dict[str, list[str]]:
    """Run ``shown`` in order, each in ``cwd(command)`` (``command_here`` rewrites a command
    for this machine; ``before`` does what the page says happens before a command) and check
    each one's output; returns every host's printed lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    background: list[tuple[Shown, subprocess.Popen[str]]] = []
    printed: dict[str, list[str]] = {}

    def wait_background() -> None:
        deadline = time.monotonic() + timeout
        for s, proc in background:
            try:
                out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for _, p in background:
                    p.kill()
                raise
            assert proc.returncode == 0, f"{s.host}$ {s.command}\n{out}"
            check_output(s, out.splitlines(), as_here)
            printed.setdefault(s.host, []).extend(out.splitlines())
        background.clear()

    try:
        for s in shown:
            if background and background[0][0].section != s.section:
                wait_background()
            before(s)
            command = command_here(s.command)
            if command.endswith("&"):
                proc = subprocess.Popen(
                    argv(command), cwd=cwd(s), env=env, text=True,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                )  # fmt: skip
                background.append((s, proc))
                continue
            wait_background()
            done = subprocess.run(
                argv(command), cwd=cwd(s), env=env, text=True, capture_output=True,
                timeout=timeout,
            )  # fmt: skip
            out = (done.stdout + done.stderr).splitlines()
            assert done.returncode == 0, f"{s.host}$ {s.command}\n" + "\n".join(out)
            check_output(s, out, as_here)
            printed.setdefault(s.host, []).extend(out)
        wait_background()
    finally:
        for _, proc in background:
            if proc.poll() is None:
                proc.kill()
    return printed


#: how the walk-through pages cut car: 728 new records, the shuffle of seed 3 (the own-data
#: page's `mpc datasets split` command says the same)
NEW_RECORDS, SEED = 728, 3


def write_organisation_files(folders: dict[str, Path]) -> None:
    """Each organisation's two files, ``ORG.csv`` (training records; the garage's with the
    class) and ``ORG-new.csv`` (the new records), into its folder, as ``mpc datasets split
    car`` cuts them from the package's car."""
    car, _ = load_dataset("car", None)
    with tempfile.TemporaryDirectory() as cut:
        for f in write_party_files(car, COLUMNS, Path(cut), new=NEW_RECORDS, seed=SEED):
            org = f.path.name.removesuffix(".csv").removesuffix("-new")
            shutil.move(f.path, folders[org] / f.path.name)


def write_joined_files(folder: Path) -> tuple[Path, Path]:
    """The joined tables that no organisation holds, for the plain learner's check, cut as the
    organisations' files are: ``joined.csv`` (id, car's columns, class) and
    ``new-joined.csv`` (id, car's columns)."""
    car, _ = load_dataset("car", None)
    write_party_files(car, {"joined": CAR}, folder, new=NEW_RECORDS, seed=SEED)
    joined, new_joined = folder / "joined.csv", folder / "new-joined.csv"
    (folder / "joined-new.csv").replace(new_joined)
    return joined, new_joined


#: the hospital page's three organisations: its file, its id column, its columns (the
#: registry's with the class), and how many records of its own besides the common ones
HOSPITAL = {
    "lab": ("lab", "patient_id", ["HbA1c", "Creatinine"], 60),
    "clinic": ("clinic", "PatientID", ["Age", "Prior Admissions", "Clinical Notes"], 60),
    "registry": ("registry", "Patient ID", ["Ward", "Discharge", "Readmitted 30d"], 80),
}
#: the patients every organisation holds: to train on, and new ones
HOSPITAL_COMMON, HOSPITAL_NEW = 1000, 200


def _patients(rng: Any, n: int, start: int) -> dict[str, list[str]]:
    """``n`` made-up patients (ids from ``start``): lab values, age, prior admissions, a
    free-text note, ward, discharge and whether they were readmitted within 30 days, drawn
    so that the tree has something to find (age over 75, HbA1c over 7 and three or more prior
    admissions raise the risk);
    about 5% of the lab and age cells blank."""
    import numpy as np

    age = rng.integers(18, 95, n)
    hba1c = np.round(rng.normal(6.2, 1.1, n), 1)
    creatinine = np.round(rng.lognormal(0.0, 0.35, n), 2)
    prior = rng.poisson(1.0, n)
    ward = rng.choice(["cardiology", "general", "oncology", "surgery"], n)
    discharge = rng.choice(["home", "care home", "transfer"], n, p=[0.7, 0.2, 0.1])
    risk = 0.04 + 0.55 * (age > 75) + 0.3 * (hba1c > 7.0) + 0.1 * (prior >= 3)
    readmitted = np.where(rng.random(n) < risk, "Yes", "No")
    words = ["stable", "reviewed", "pain", "follow-up", "diet", "wound", "fall", "insulin",
             "referred", "improving", "family", "mobility"]  # fmt: skip
    notes = [" ".join(rng.choice(words, 3)) + f" (visit {rng.integers(1, 400)})" for _ in range(n)]

    def blank(values: Any) -> list[str]:
        return ["" if rng.random() < 0.05 else str(v) for v in values]

    return {
        "id": [f"P{start + i:05d}" for i in range(n)],
        "HbA1c": blank(hba1c), "Creatinine": blank(creatinine), "Age": blank(age),
        "Prior Admissions": [str(v) for v in prior], "Clinical Notes": notes,
        "Ward": [str(v) for v in ward], "Discharge": [str(v) for v in discharge],
        "Readmitted 30d": [str(v) for v in readmitted],
    }  # fmt: skip


def write_hospital_files(folder: Path) -> None:
    """The hospital page's files, from a fixed seed: each organisation's ``NAME.csv`` (its id
    column, its columns, the common patients and some of its own, in its own order) and
    ``NAME-new.csv`` (new patients, the registry's with their outcome, likewise partly
    overlapping); and, for the page's check, the joined tables no organisation holds
    (``joined.csv``, ``new-joined.csv``: the common patients only, an ``id`` column)."""
    import csv as csv_module

    import numpy as np

    rng = np.random.default_rng(2026)
    for suffix, common in (("", HOSPITAL_COMMON), ("-new", HOSPITAL_NEW)):
        base = 0 if not suffix else 50_000
        shared = _patients(rng, common, base)
        order = [c for _, (_, _, cols, _) in HOSPITAL.items() for c in cols]
        joined = [c for c in order if c != "Clinical Notes"]
        with (folder / f"joined{suffix}.csv").open("w", newline="") as fh:
            out = csv_module.writer(fh)
            out.writerow(["id", *joined])
            out.writerows(zip(*(shared[c] for c in ["id", *joined]), strict=True))
        for k, (org, (name, id_column, cols, own)) in enumerate(HOSPITAL.items()):
            extra = _patients(rng, own if not suffix else own // 4, base + 10_000 * (k + 1))
            ids = shared["id"] + extra["id"]
            rows = [[*(shared[c][i] for c in cols)] for i in range(common)]
            rows += [[*(extra[c][i] for c in cols)] for i in range(len(extra["id"]))]
            perm = np.random.default_rng([2026, k, len(suffix)]).permutation(len(ids))
            with (folder / f"{name}{suffix}.csv").open("w", newline="") as fh:
                out = csv_module.writer(fh)
                out.writerow([id_column, *cols])
                out.writerows([ids[i], *rows[i]] for i in perm)
            assert org == name
    (folder / "joined-new.csv").replace(folder / "new-joined.csv")
