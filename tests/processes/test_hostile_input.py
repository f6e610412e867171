"""Malformed input files get one-line errors from the real commands, before anything starts.

Each case writes a broken file, runs the command a user would run in a subprocess and checks:
exit code 2, exactly one line on stderr, naming the file and the problem, no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from mpc.deployment.launcher import PartySpec, write_deployment

from ..conftest import ROOT

pytestmark = pytest.mark.timeout(120)

#: commands run at once (each is mostly start-up: imports)
PARALLEL = 4


class Result(NamedTuple):
    code: int
    out: str
    err: str


GOOD_CSV = "a,b,label\nx,u,p\ny,v,q\nx,v,p\ny,u,q\n"
GARBAGE = bytes(range(255, -1, -1)) * 4  # NUL bytes and invalid UTF-8

#: name -> (file content, what the error must say)
BAD_CSVS: dict[str, tuple[bytes, str]] = {
    "ragged rows": (b"a,b,label\nx,u,p\ny,v\n", ":3: column 'label' (field 3): not on this line"),
    "extra field": (b"a,b,label\nx,u,p,zz\n", ":2: field 4: one field too many"),
    "empty file": (b"", ":1: column 'label': the file is empty"),
    "only blank lines": (b"\n \n\n", "the file is empty"),
    "binary garbage": (GARBAGE, "not UTF-8 text"),
    "latin-1 text": ("a,b,label\ncafé,u,p\n".encode("latin-1"), "not UTF-8 text"),
    "utf-16 text": ("a,b,label\nx,u,p\n".encode("utf-16"), "not UTF-8 text"),
    "no class column": (b"a,b,c\nx,u,p\n", "the class column is not in the header"),
    "a column named twice": (b"a,a,label\nx,u,p\n", "column 'a' (field 2): the header names"),
    "empty column name": (b"a,,label\nx,u,p\n", "field 2: empty column name"),
    "unclosed quote": (b'a,b,label\nx,"u,p\n', ":2: column 'label' (field 3): not on this"),
}


def _run_all(commands: dict[str, list[str]], deadline: float = 90.0) -> dict[str, Result]:
    """Run the commands (``python -m ARGS``) at once, a few at a time; return each one's
    (exit code, stdout, stderr). Every process is waited for or killed before returning."""
    results: dict[str, Result] = {}
    pending = list(commands.items())
    running: dict[str, subprocess.Popen[str]] = {}
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        while pending or running:
            while pending and len(running) < PARALLEL:
                name, args = pending.pop(0)
                running[name] = subprocess.Popen(
                    [sys.executable, "-m", *args], cwd=ROOT, env=env, text=True,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                )  # fmt: skip
            name, proc = next(iter(running.items()))
            out, err = proc.communicate(timeout=deadline)
            results[name] = Result(proc.returncode, out, err)
            del running[name]
    finally:
        for proc in running.values():
            proc.kill()
            proc.communicate()
    return results


def _check_all(results: dict[str, Result], expected: dict[str, tuple[Path, str]]) -> None:
    """Every command exited with 2 and printed one line on stderr naming its file and
    problem; report every case that did not."""
    wrong = []
    for name, (path, needle) in expected.items():
        r = results[name]
        lines = r.err.strip().splitlines()
        if r.code != 2 or len(lines) != 1 or str(path) not in lines[0] or needle not in lines[0]:
            wrong.append(
                f"{name}: exit {r.code}, expected {needle!r} in one line; stderr:\n{r.err}"
            )
    assert not wrong, "\n".join(wrong)


def test_mpc_train_names_the_file_and_the_problem(tmp_path: Path) -> None:
    commands, expected = {}, {}
    for i, (name, (content, needle)) in enumerate(BAD_CSVS.items()):
        bad = tmp_path / f"bad{i}.csv"
        bad.write_bytes(content)
        commands[name] = ["mpc", "train", "--csv", str(bad), "--class", "label"]
        expected[name] = (bad, needle)
    _check_all(_run_all(commands), expected)


def test_mpc_sanitize_names_the_data_file_or_the_mask_and_the_problem(tmp_path: Path) -> None:
    data = tmp_path / "good.csv"
    data.write_text(GOOD_CSV)
    release = tmp_path / "release.csv"
    common = ["--threshold", "0.3", "--out", str(release), "--class", "label"]
    commands, expected = {}, {}
    for name in ("ragged rows", "binary garbage", "no class column"):
        content, needle = BAD_CSVS[name]
        bad = tmp_path / f"{name.replace(' ', '-')}.csv"
        bad.write_bytes(content)
        commands[name] = ["mpc", "sanitize", "--csv", str(bad), "--confidential", "2", *common]
        expected[name] = (bad, needle)
    masks = {
        "mask of binary garbage": (GARBAGE, "the mask is not UTF-8 text"),
        "mask with an unknown column": (b"0,zz\n", ":1: no attribute 'zz'"),
        "mask line with one field": (b"0\n", ":1: expected 'row,attribute', got 1 fields"),
        "mask row out of range": (b"99,a\n", ":1: row must be 0..3"),
    }
    for name, (content, needle) in masks.items():
        mask = tmp_path / f"{name.replace(' ', '-')}.csv"
        mask.write_bytes(content)
        commands[name] = ["mpc", "sanitize", "--csv", str(data), "--mask", str(mask), *common]
        expected[name] = (mask, needle)
    _check_all(_run_all(commands), expected)
    assert not release.exists()


def test_mpc_run_ppid3_refuses_bad_files_before_any_party_starts(tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text(GOOD_CSV)
    cases = {
        "empty training file": ("--csv", BAD_CSVS["empty file"][0], "the file is empty"),
        "latin-1 training file": ("--csv", BAD_CSVS["latin-1 text"][0], "not UTF-8 text"),
        "unknown test columns": (
            "--test",
            b"a,zz,label\nx,u,p\n",
            "the test file's columns ['a', 'zz'] are not",
        ),
        "ragged test file": ("--test", b"a,b,label\nx,u\n", ":2: column 'label' (field 3)"),
    }
    commands, expected = {}, {}
    for i, (name, (which, content, needle)) in enumerate(cases.items()):
        bad = tmp_path / f"bad{i}.csv"
        bad.write_bytes(content)
        args = ["mpc", "run", "ppid3", "--class", "label", "--keep", str(tmp_path / f"run{i}")]
        args += (
            ["--csv", str(bad)] if which == "--csv" else ["--csv", str(good), "--test", str(bad)]
        )
        commands[name] = args
        expected[name] = (bad, needle)
    _check_all(_run_all(commands), expected)
    # no deployment was written, so no party was started
    assert not any(tmp_path.glob("run*"))


# ----------------------------------------------------------------------------- config files


def _good_config(tmp_path: Path) -> str:
    specs = [PartySpec(f"site{i}", "site", {"value": i}) for i in (1, 2)]
    return write_deployment(
        tmp_path, "secure-sum", {"modulus": "97"}, specs, timeout=5, insecure=False
    ).read_text()


#: name -> (edit of the good file: old, new; or the whole file as bytes) and the message
BAD_CONFIGS: dict[str, tuple[tuple[str, str] | bytes, str]] = {
    "toml syntax error": (("[protocol]", "[protocol"), "not valid TOML: Expected ']'"),
    "binary garbage": (GARBAGE, "not valid TOML: not UTF-8 text"),
    "empty file": (b"", "[protocol]: expected a table"),
    "timeout is a string": (("timeout = 5.0", 'timeout = "soon"'), "deployment.timeout: expected"),
    "insecure is a number": (("insecure = false", "insecure = 0"), "deployment.insecure: expected"),
    "protocol name missing": (('name = "secure-sum"', ""), "protocol.name: expected"),
    "no parties": (("[[party]]", "[[partyx]]"), "unknown top-level tables ['partyx']"),
    "misspelt field": (("endpoint =", "endpointx ="), "unknown fields ['endpointx']"),
    "port out of range": (("tcp://127.0.0.1:", "tcp://127.0.0.1:9"), "1 <= PORT <= 65535"),
    "columns not a list": (
        ('name = "site1"', 'name = "site1"\ncolumns = "a"'),
        "columns: expected",
    ),
    "party name not a string": (('name = "site2"', "name = 2"), ".name: expected a party name"),
}


def test_a_party_started_on_a_bad_deployment_file_says_why_in_one_line(tmp_path: Path) -> None:
    good = _good_config(tmp_path)
    commands, expected = {}, {}
    for i, (name, (edit, needle)) in enumerate(BAD_CONFIGS.items()):
        bad = tmp_path / f"bad{i}.toml"
        if isinstance(edit, bytes):
            bad.write_bytes(edit)
        else:
            old, new = edit
            assert old in good, old
            bad.write_text(good.replace(old, new, 1))
        commands[name] = ["parties", "site", "--config", str(bad), "--name", "site1"]
        expected[name] = (bad, needle)
    results = _run_all(commands)
    _check_all(results, expected)
    # the JSON report on stdout says so too
    assert all(json.loads(r.out)["ok"] is False for r in results.values())


@pytest.mark.parametrize("copies", [100_000, pytest.param(1_000_000, marks=pytest.mark.slow)])
def test_hostile_record_ids_get_one_line_each_from_mpc_check(tmp_path: Path, copies: int) -> None:
    """A site's file whose ids repeat, are empty, or are one id ``copies`` times (a million
    in the slow run): `mpc check` (reading it as the site's party will) exits 2 with one line
    naming the file, the line and the problem, before any party waits on another."""
    for name in ("site1", "site2"):
        subprocess.run([sys.executable, "-m", "mpc", "keygen", "--out", str(tmp_path / "keys"),
                        name], check=True, capture_output=True, cwd=ROOT)  # fmt: skip
    subprocess.run([sys.executable, "-m", "mpc", "deploy", "ppid3", "--partition", "a;b",
                    "--class", "y", "--records", "common", "--out", str(tmp_path)],
                   check=True, capture_output=True, cwd=ROOT)  # fmt: skip
    files = {
        "repeated id": ("id,a\nr1,x\nr2,y\nr1,x\n", ":4: column 'id' (field 1): record id 'r1' "
                        "repeats line 2"),
        "empty id": ("id,a\nr1,x\n,y\n", ":3: column 'id' (field 1): empty record id"),
        "one id again and again": ("id,a\n" + "same,x\n" * copies,
                                   ":3: column 'id' (field 1): record id 'same' repeats line 2"),
    }  # fmt: skip
    commands, expected = {}, {}
    for i, (name, (content, needle)) in enumerate(files.items()):
        bad = tmp_path / f"ids{i}.csv"
        bad.write_text(content)
        key = str(tmp_path / "keys" / "site1.secret")
        commands[name] = ["mpc", "check", "--config", str(tmp_path / "deployment.toml"),
                          "--name", "site1", "--secret-key", key, "--data", str(bad)]  # fmt: skip
        expected[name] = (bad, needle)
    _check_all(_run_all(commands), expected)
