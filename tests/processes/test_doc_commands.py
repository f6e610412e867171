"""The commands the documentation shows, run: their exit codes and their key output lines.

Every ``$ mpc ...`` and ``$ python -m parties ...`` line of a console block in README.md or
docs/ is one of:

* in :data:`RUNS`: the test runs it (in a fresh folder, with the files it needs) and checks
  its exit code (0, or what the page's ``$ echo $?`` shows) and its *key lines*: for each
  pattern, the lines of the page's output that match it must be the lines of the real output
  that match it. A page whose output has gone stale fails here, as does a command whose
  output changed;
* in :data:`ELSEWHERE`: a walk-through or a long run that another test performs (named), or a
  command that needs what a test cannot have (a second host, an hour).

A command shown in the docs that is in neither fails :func:`test_every_shown_command_is_known`,
so a new example is run, or said where it is run, from the day it is written.

A block whose commands need datasets the package does not ship says so in its title, which
the site shows above it: ```` ```console title="needs mpc datasets fetch mushroom" ````. Its
commands run where a data directory holds those datasets, and skip, saying so, where none
does (a clone with nothing beside it).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from .. import datasets

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

#: a fenced block: its info string and its body
BLOCK = re.compile(r"^ *```([^\n]*)\n(.*?)^ *```", re.M | re.S)
#: the title of a block whose commands need fetched datasets: the datasets it names
NEEDS = re.compile(r'\btitle="needs mpc datasets fetch ([a-z0-9-]+(?: [a-z0-9-]+)*)"')
#: a command as the docs show it
PROMPT = re.compile(r"^ *\$ (.*)$")
#: commands of the project (the others, ``ls``, ``head``, ``diff``, are the shell's)
OURS = re.compile(r"^(?:mpc|python -m mpc|python -m parties)\b")


@dataclass(frozen=True)
class Shown:
    """One command of a page and the output the page shows under it."""

    page: str
    line: int
    command: str
    output: tuple[str, ...]
    exit_code: int | None  # what a following ``$ echo $?`` shows
    needs: tuple[str, ...] = ()  # the datasets its block's title says to fetch first


#: pages that a test of their own runs whole, as printed (every command, every output line)
WHOLE_PAGES = {
    "docs/own-data.md": "tests/deployment/test_own_data_page.py",
    "docs/hosts.md": "tests/deployment/test_hosts_page.py",
    "docs/hospital.md": "tests/deployment/test_hospital_page.py",
}


def _commands(path: Path, root: Path = ROOT) -> list[Shown]:
    text = path.read_text(encoding="utf-8")
    found: list[Shown] = []
    whole = path.relative_to(root).as_posix() in WHOLE_PAGES
    for block in BLOCK.finditer(text):
        if whole and block.group(1).strip() == "console":
            continue  # run, as printed, by the page's own test
        start = text.count("\n", 0, block.start(2)) + 1
        lines = block.group(2).splitlines()
        needs = NEEDS.search(block.group(1))
        fetched = tuple(needs.group(1).split()) if needs else ()
        i = 0
        while i < len(lines):
            m = PROMPT.match(lines[i])
            if not m:
                i += 1
                continue
            line_no, command = start + i, m.group(1)
            while command.endswith("\\") and i + 1 < len(lines):  # a continued command
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            output = []
            while i < len(lines) and not PROMPT.match(lines[i]):
                output.append(lines[i])
                i += 1
            code = None
            if i + 1 < len(lines) and lines[i].strip() == "$ echo $?":
                code = int(lines[i + 1].strip())
            if OURS.match(command):
                rel = path.relative_to(root).as_posix()
                found.append(Shown(rel, line_no, command.strip(), tuple(output), code, fetched))
    return found


@cache
def shown_commands() -> tuple[Shown, ...]:
    """Every command shown on a page, but the console blocks of :data:`WHOLE_PAGES`."""
    return tuple(s for page in PAGES for s in _commands(page))


# ------------------------------------------------------------------------ what runs where


@dataclass(frozen=True)
class Run:
    """How to run a shown command: the patterns of its key lines, files to make first."""

    keys: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    setup: tuple[str, ...] = ()  # mpc commands to run first, in the same folder
    timeout: float = 120.0
    exit_code: int | None = None  # when the page shows no ``$ echo $?`` after a failure


#: the party table's first columns and what each party learned, but not its byte counts
PARTY_ROW = r"^site\d+ +site +\d+ "

#: a CSV whose third line has a field too few
BAD_CSV = {"bad.csv": "a,b,label\n1,x,yes\n2,y\n3,z,no\n"}

RUNS: dict[str, Run] = {
    # each dataset's rows, attributes and class (its source is wherever it was fetched to)
    "mpc datasets": Run((r"^name ", r"^(adult|car|weather|nursery) +(\d+) +(\d+) +(\S+)")),
    "mpc train --learner c45 --dataset house-votes-84 --cv 10": Run(
        (r"^dataset:", r"^evaluation:", r"^accuracy:", r"^(democrat|republican) +\d")
    ),
    "mpc train --csv broken.csv --class label": Run(
        (r"^mpc: error:",), files={"broken.csv": BAD_CSV["bad.csv"]}, exit_code=2
    ),
    "mpc train --csv bad.csv --class label": Run((r"^mpc: error:",), files=BAD_CSV, exit_code=2),
    "mpc run ppid3 --csv train.csv --class label --test test.csv": Run(
        (r"^mpc: error:",),
        files={"train.csv": "a,b,label\n1,x,yes\n2,y,no\n", "test.csv": "a,zz,label\n1,x,yes\n"},
        exit_code=2,
    ),
    "mpc run ppid3 --csv grades.csv --class label": Run(
        (r"^\[mpc\] warning:", r"^columns: +site2:"),
        files={
            "grades.csv": "grade,other,label\n"
            + "".join(
                f"{g},{o},{lab}\n"
                for g, o, lab in [
                    (1, "a", "x"),
                    (2, "b", "y"),
                    (3, "a", "x"),
                    (4, "b", "y"),
                    (5, "a", "x"),
                    (1, "b", "y"),
                    (2, "a", "x"),
                    (3, "b", "y"),
                    (4, "a", "x"),
                    (5, "b", "y"),
                ]
            )
        },
    ),
    "mpc run cdtl --dataset house-votes-84 --sensitive physician-fee-freeze --class party "
    "--l 2 --cv 10 --method all": Run(
        # cnl learns on the client's own rows, less the tuples suppressed for 2-diversity,
        # which the client draws at random (its third digit moves: 0.9610 to 0.9633 seen);
        # cdtl and cdbsl on a randomly anatomized table
        (r"^dataset:", r"^(cnl) +0\.9\d+ ", r"^(ms +=) "),
        timeout=300,
    ),
    # the continuous attributes kept, and a continuous sensitive attribute binned per fold
    "mpc run cdtl --dataset australian --sensitive A9 --class A15 --nominal-splits binary "
    "--cv 10": Run((r"^dataset:", r"^kept:"), timeout=300),
    "mpc run cdtl --dataset australian --sensitive A2 --class A15 --nominal-splits binary "
    "--cv 10": Run((r"^dataset:", r"^kept:", r"^binned:"), timeout=300),
    "mpc sanitize --dataset house-votes-84 --confidential 20 --seed 1 --threshold 0.25 "
    "--out release.csv": Run((r"^E: ", r"^\d+ modifications"), timeout=300),
    "mpc run is-r-empty --flags 0,0,0": Run(
        # a 2048-bit group element travels in 255 bytes when its top byte is 0: the byte
        # columns vary from run to run
        (r"^system:", r"^ok:", r"^result:", r"^(site\d+ +site +0) .* (\S+ +\S+)$")
    ),
    "mpc run secure-sum --parties 4 --kill site3 --timeout 5": Run(
        (
            r"^system:",
            r"^ok:",
            r"^site3: ProcessDied",
        ),
        timeout=120,
    ),
    "mpc deploy ppid3 --partition 'outlook,temperature;humidity;windy' --class play "
    "--out deploy --monitor": Run((r"^wrote ", r"^keys: ", r"^site\d +at ")),
    "mpc run psi-ca --sets a.txt,b.txt,c.txt": Run(
        (r"^sets:", r"^count:", r"^true:", r"^correct:"),
        files={
            "a.txt": "ann\nbob\ncid\ndan\n",
            "b.txt": "ann\nbob\neve\n",
            "c.txt": "ann\nbob\nfay\ngus\n",
        },
    ),
    "mpc run psi --sets a.txt,b.txt,c.txt": Run(
        (r"^sets:", r"^common:", r"^true:", r"^correct:"),
        files={
            "a.txt": "ann\nbob\ncid\ndan\n",
            "b.txt": "ann\nbob\neve\ncid\n",
            "c.txt": "ann\nbob\nfay\ngus\ncid\n",
        },
    ),
    "mpc run secure-argmax --rows 1000 --candidates 40 --fractions": Run(
        (r"^table:", r"^correct:", r"^rounds:")
    ),
    (
        "mpc run ppid3 --dataset car --sites 3 --reveal tree --helper sites --min-samples-split 87"
    ): Run(
        (
            r"^dataset:",
            r"^partition:",
            r"^tree:",
            r"^identical:",
            r"^accuracy:",
            r"^cost:",
            r"^trust:",
        )
    ),
    (
        "mpc run ppid3 --dataset car --sites 3 --reveal tree --criterion entropy-fixed "
        "--max-depth 2"
    ): Run((r"^dataset:", r"^tree:", r"^identical:", r"^accuracy:", r"^cost:", r"^trust:")),
    "mpc run ppid3 --dataset tic-tac-toe --sites 3 --reveal tree --criterion gini-impurity": Run(
        (r"^dataset:", r"^tree:", r"^identical:")
    ),
    "mpc run ppid3 --dataset house-votes-84 --sites 3 --partition random:7 --test-split 0.3": Run(
        (r"^dataset:", r"^mode:", r"^tree:", r"^identical:", r"^accuracy:")
    ),
    (
        "mpc run ppid3 --dataset house-votes-84 --sites 3 --partition random:7 --test-split 0.3 "
        "--counts psi"
    ): Run((r"^dataset:", r"^mode:", r"^tree:", r"^identical:", r"^accuracy:"), timeout=300),
    "mpc run hybrid-id3 --dataset mushroom --theta 0.45 --groups 4 --window 3": Run(
        (r"^dataset:", r"^SMC-only tree == plain ID3:"), timeout=300
    ),
}

#: shown commands that this test does not run, and where they are run (or why not)
ELSEWHERE: dict[str, str] = {
    "mpc run ppid3 --dataset adult --all-rows --splits threshold --sites 3 --max-depth 6": (
        "tests/protocols/test_ppid3_thresholds.py checks the refusal it shows on a table of its "
        "own (Adult is not bundled)"
    ),
    "mpc datasets fetch car": (
        "tests/processes/test_datasets_fetch.py and tests/deployment/test_package.py run it "
        "against a loopback server laid out as the UCI archive (never the internet)"
    ),
    "mpc run ppid3 --dataset car --sites 3": (
        "tests/deployment/test_package.py runs it (to depth 2) after the fetch, from the "
        "installed wheel"
    ),
    "mpc run hybrid-id3 --csv train.csv --id rid --class class --test-split 0 --model-out "
    "hmodel": "tests/processes/test_hybrid_own_data.py::"
    "test_saved_parts_classify_new_records_as_the_saved_tree_does_in_plain",
    "mpc run hybrid-id3-classify --csv new.csv --id rid --model hmodel --predictions-out "
    "hpredictions.csv": "tests/processes/test_hybrid_own_data.py::"
    "test_saved_parts_classify_new_records_as_the_saved_tree_does_in_plain",
    "mpc run cdtl --dataset house-votes-84 --sensitive physician-fee-freeze --class party "
    "--cv 2 --method cdtl,cnl --protocol as-drawn": "tests/protocols/test_cdtl.py::"
    "test_mpc_run_cdtl_as_drawn_waits_for_every_update_bdt",
    "mpc run cdtl-outsource --csv train.csv --id rid --class class --sensitive safety "
    "--model-out model --cdbs-db cdbs-db": "tests/processes/test_cdtl_own_data.py::"
    "test_a_client_comes_back_to_a_restarted_cdbs_and_classifies_a_new_file",
    "mpc run cdtl-classify --csv new.csv --id rid --model model --cdbs-db cdbs-db "
    "--predictions-out predictions.csv": "tests/processes/test_cdtl_own_data.py::"
    "test_a_client_comes_back_to_a_restarted_cdbs_and_classifies_a_new_file",
    "mpc run cdbs-load --clients 4 --predictions 100": (
        "tests/protocols/test_cdtl.py::test_concurrent_clients_lose_and_duplicate_no_subtree"
    ),
    "mpc ping --config local/deployment.toml --name site1": (
        "tests/processes/test_processes.py::test_ping_is_answered_by_a_running_party_and_refused_"
        "without_the_monitor_key (a party started by hand, then pinged)"
    ),
    "python -m parties site --config local/deployment.toml --name site1 --secret-key "
    "local/keys/site1.secret --report site1.json &": (
        "tests/processes/test_processes.py::test_ping_is_answered_by_a_running_party_and_refused_"
        "without_the_monitor_key"
    ),
    "python -m parties site --config bad.toml --name site1 > report.json": (
        "tests/processes/test_hostile_input.py::test_a_party_started_on_a_bad_deployment_file_says_why_"
        "in_one_line"
    ),
}


def _run_spec(command: str) -> Run | None:
    return RUNS.get(" ".join(command.split()))


def test_every_shown_command_is_known() -> None:
    unknown = [
        f"{s.page}:{s.line}: {s.command}"
        for s in shown_commands()
        if _run_spec(s.command) is None and " ".join(s.command.split()) not in ELSEWHERE
    ]
    assert unknown == [], "add these to RUNS or ELSEWHERE in tests/processes/test_doc_commands.py"


def test_the_registry_names_only_shown_commands() -> None:
    shown = {" ".join(s.command.split()) for s in shown_commands()}
    stale = sorted(set(RUNS) - shown) + sorted(set(ELSEWHERE) - shown)
    assert stale == []


def _key_lines(lines: list[str] | tuple[str, ...], pattern: str) -> list[str]:
    """The lines that match ``pattern`` (whitespace collapsed), or, when the pattern has
    groups, only what its groups matched: ``r"^(cnl) +0\\.9\\d+ "`` checks that cnl's accuracy
    is above 0.9 and leaves its exact digits and its timings alone."""
    found = []
    for line in lines:
        m = re.search(pattern, line.strip())
        if m:
            found.append(" | ".join(m.groups()) if m.groups() else " ".join(line.split()))
    return found


def _argv(command: str) -> list[str]:
    words = shlex.split(command)
    if words[0] == "mpc":
        return [sys.executable, "-m", "mpc", *words[1:]]
    return [sys.executable, *words[1:]]  # python -m mpc / python -m parties


def _shown_once() -> list[Shown]:
    """Each command of :data:`RUNS` once (the README repeats some of the pages' examples; the
    test of the page with the longer output checks both)."""
    best: dict[str, Shown] = {}
    for s in shown_commands():
        key = " ".join(s.command.split())
        if key in RUNS and (key not in best or len(s.output) > len(best[key].output)):
            best[key] = s
    return sorted(best.values(), key=lambda s: (s.page, s.line))


@pytest.mark.datasets
@pytest.mark.processes
@pytest.mark.timeout(400)
@pytest.mark.parametrize("shown", _shown_once(), ids=lambda s: f"{s.page}:{s.line}")
def test_a_shown_command_runs_as_shown(shown: Shown, tmp_path: Path) -> None:
    spec = _run_spec(shown.command)
    assert spec is not None
    datasets.needs(*shown.needs)
    for name, text in spec.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in spec.setup:
        subprocess.run(_argv(command), cwd=tmp_path, env=env, check=True, timeout=spec.timeout)
    proc = subprocess.run(
        _argv(shown.command), cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=spec.timeout,
    )  # fmt: skip
    out = (proc.stdout + proc.stderr).splitlines()
    expected_code = spec.exit_code if spec.exit_code is not None else shown.exit_code or 0
    assert proc.returncode == expected_code, "\n".join(out[-30:])
    for pattern in spec.keys:
        on_page = _key_lines(shown.output, pattern)
        assert on_page, f"{shown.page}:{shown.line} shows no line matching {pattern!r}"
        assert _key_lines(out, pattern) == on_page, f"{pattern!r} in:\n" + "\n".join(out)


# ------------------------------------------------------------------------ the parser itself


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "```console\n$ mpc run x --a 1 \\\n    --b 2\nok: True\n$ echo $?\n0\n```\n",
            [("mpc run x --a 1 --b 2", ("ok: True",), 0)],
        ),
        ("```console\n$ ls -l\nfoo\n$ mpc datasets\nname rows\n```\n",
         [("mpc datasets", ("name rows",), None)]),
        ("prose `mpc run x` is not a shown command\n", []),
        ('```console title="needs mpc datasets fetch adult nursery"\n$ mpc datasets\nx\n```\n',
         [("mpc datasets", ("x",), None, ("adult", "nursery"))]),
    ],
    ids=["continued, exit code", "the shell's commands are skipped", "prose", "needs"],
)  # fmt: skip
def test_shown_commands_are_read_as_a_reader_reads_them(
    tmp_path: Path, text: str, expected: list[tuple[Any, ...]]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    got = [(s.command, s.output, s.exit_code, *([s.needs] if s.needs else []))
           for s in _commands(page, tmp_path)]  # fmt: skip
    assert got == expected


def test_a_block_that_needs_datasets_names_only_fetchable_ones_and_reads_them() -> None:
    """Every dataset a block's title says to fetch can be fetched, is not one the package
    ships, and the block's commands read it; a command of a block without such a title reads
    only what the package has (which the run without any data directory proves)."""
    from mpc.datasets.fetch import shipped_folder, sources

    marked = [s for s in shown_commands() if s.needs]
    assert marked, "no page marks a block that needs fetched datasets"
    for s in marked:
        for name in s.needs:
            assert sources(name) and shipped_folder(name) is None, (s.page, s.line, name)
        named = re.findall(r"--dataset (\S+)", s.command)
        assert set(named) <= set(s.needs), (s.page, s.line, s.command)
