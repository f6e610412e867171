"""The ``mpc`` command as an experienced user expects it to behave: output paths checked before
any work, a clean stop on SIGINT/SIGTERM, a quiet end on a closed pipe, 1-based sites, negative
number lists, errors that name the file, plain-text help, aligned tables and progress with
what is known of the total."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpc.datasets import DataError, load_csv, load_party_csv
from mpc.errors import ConfigError
from parties.cli.main import build_parser
from parties.cli.parser import keep_negative_values, plain_text, walk
from parties.main import report_text
from parties.systems.registry import SYSTEMS

from ..conftest import ROOT, processes_mentioning, run_mpc, run_mpc_json

# ------------------------------------------------------------------ 1. output paths


def _not_a_folder(tmp_path: Path) -> Path:
    """A regular file, to be named as a folder of an output path (refused even for root)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder\n")
    return blocker


#: (command line before the output option, the option, what it names)
OUTPUT_CASES = [
    (("train", "--dataset", "weather"), "--tree-out", "tree.json"),
    (("train", "--dataset", "weather"), "--dot", "tree.dot"),
    (("train", "--dataset", "weather"), "--model-out", "model.json"),
    (("train", "--dataset", "weather", "--cv", "3"), "--predictions-out", "p.csv"),
    (
        ("sanitize", "--dataset", "weather", "--confidential", "2", "--threshold", "0.3"),
        "--out",
        "release.csv",
    ),
    (("predict", "--model", "m.json", "--csv", "new.csv"), "--out", "p.csv"),
    (("keygen", "site1", "site2"), "--out", "keys"),
    (("keygen", "site1", "--out", "public"), "--secrets", "secrets"),
    (("run", "secure-sum"), "--report", "report.json"),
    (("run", "secure-sum"), "--keep", "deployment"),
    (("run", "ppid3"), "--model-out", "models"),
    (("run", "ppid3-classify", "--model", "models", "--csv", "new.csv"), "--predictions-out", "p"),
    (("deploy", "secure-sum"), "--out", "deployment"),
]


@pytest.mark.parametrize(
    ("before", "option", "name"), OUTPUT_CASES, ids=[f"{c[0][0]}{c[1]}" for c in OUTPUT_CASES]
)
def test_an_unwritable_output_path_is_one_line_and_exit_2_before_any_work(
    tmp_path: Path, before: tuple[str, ...], option: str, name: str
) -> None:
    bad = _not_a_folder(tmp_path) / name
    code, out, err = run_mpc(*before, option, str(bad), deadline=60)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"mpc: error: {option} {bad}: "), err
    assert "is a file, not a folder" in err, err
    assert out == ""  # nothing ran: no summary, no party, no training


def test_a_folder_where_a_file_goes_and_a_file_where_a_folder_goes(tmp_path: Path) -> None:
    code, _, err = run_mpc("train", "--dataset", "weather", "--tree-out", str(tmp_path))
    assert code == 2 and err == f"mpc: error: --tree-out {tmp_path}: is a folder; give a file " \
        "name to write\n"  # fmt: skip
    blocker = _not_a_folder(tmp_path)
    code, _, err = run_mpc("run", "secure-sum", "--keep", str(blocker))
    assert code == 2 and err.startswith(f"mpc: error: --keep {blocker}: exists and is not a")
    assert "started" not in err


@pytest.mark.parametrize(
    ("command", "option", "path"),
    [
        (["train", "--dataset", "car"], "--tree-out", "/sys/tree.json"),
        (["run", "ppid3", "--dataset", "car", "--sites", "3"], "--model-out", "/proc/models"),
        (["run", "secure-sum"], "--report", "/sys/kernel/report.json"),
    ],
)
def test_an_output_under_proc_or_sys_is_refused_before_any_work(
    command: list[str], option: str, path: str
) -> None:
    """/proc and /sys are folders that even root may not create files in, whatever their
    modes say: the check before any work tries, instead of trusting the modes."""
    if not Path(path).parent.is_dir():
        pytest.skip(f"{Path(path).parent} is not mounted here")
    code, out, err = run_mpc(*command, option, path, deadline=60)
    assert code == 2 and out == "", (out, err)
    assert err.startswith(f"mpc: error: {option} {path}: cannot write in "), err
    assert err.count("\n") == 1, err  # one line, and nothing ran before it


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a folder of mode 0500")
def test_a_folder_without_write_permission_is_refused_before_the_run(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        code, out, err = run_mpc("run", "secure-sum", "--report", str(locked / "r.json"))
    finally:
        locked.chmod(0o700)
    assert code == 2 and out == "", err
    assert err == f"mpc: error: --report {locked / 'r.json'}: cannot write in {locked} " \
        "(permission denied); give a writable path\n"  # fmt: skip


def test_missing_parent_folders_are_created_for_every_output(tmp_path: Path) -> None:
    """The one rule for parent folders: missing ones are created (here three levels deep)."""
    tree, dot = tmp_path / "a" / "b" / "tree.json", tmp_path / "c" / "d" / "e" / "tree.dot"
    code, _, err = run_mpc("train", "--dataset", "weather", "--tree-out", str(tree),
                             "--dot", str(dot))  # fmt: skip
    assert code == 0, err
    assert json.loads(tree.read_text())["attribute"] == "outlook"
    assert dot.read_text().startswith("digraph")


def test_every_output_option_states_the_rule_in_its_help() -> None:
    from mpc.runtime.files import OUTPUT_RULE
    from parties.cli.parser import OUTPUT_OPTIONS
    from parties.main import build_parser as party_parser

    seen = set()
    parsers = [build_parser()]
    while parsers:
        p = parsers.pop()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
            elif set(action.option_strings) & OUTPUT_OPTIONS:
                seen.add(action.option_strings[0])
                assert OUTPUT_RULE in (action.help or ""), (p.prog, action.option_strings)
    assert seen == OUTPUT_OPTIONS
    for action in party_parser()._actions:
        if set(action.option_strings) & {"--report", "--model-out", "--predictions-out"}:
            assert OUTPUT_RULE in (action.help or ""), action.option_strings


def test_a_party_refuses_an_unwritable_report_before_it_reads_its_config(tmp_path: Path) -> None:
    bad = _not_a_folder(tmp_path) / "report.json"
    code, out, err = run_mpc("party", "site", "--config", str(tmp_path / "none.toml"),
                             "--name", "site1", "--report", str(bad))  # fmt: skip
    assert code == 2 and out == "", err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert f"--report {bad}: " in err


def test_check_output_names_the_option_and_allows_missing_folders(tmp_path: Path) -> None:
    from mpc.runtime.files import check_output

    check_output(tmp_path / "new" / "deeper" / "file.json", option="--report")
    check_output(tmp_path / "new" / "folder", kind="folder", option="--keep")
    check_output(tmp_path, kind="either")
    blocker = _not_a_folder(tmp_path)
    check_output(blocker, kind="either")
    with pytest.raises(ConfigError, match=r"^--out .*blocker/x: .*blocker is a file, not a"):
        check_output(blocker / "x", option="--out")
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        check_output(blocker, kind="folder")
    with pytest.raises(ValueError, match="kind"):
        check_output(blocker, kind="dir")


# ------------------------------------------------------------------ 2. SIGINT / SIGTERM


def _stderr_lines_until(proc: subprocess.Popen[bytes], pattern: str, deadline_s: float) -> str:
    """What ``proc`` wrote to stderr up to a whole line matching ``pattern``."""
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + deadline_s
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while not re.search(pattern.encode(), seen) or not seen.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern!r} on stderr within {deadline_s} s: {seen.decode()}"
            if sel.select(timeout=left):
                chunk = os.read(proc.stderr.fileno(), 65536)
                assert chunk, f"stderr closed before {pattern!r}: {seen.decode()}"
                seen += chunk
    return seen.decode()


def _long_ppid3_run() -> list[str]:
    """A PPID3 run that takes several seconds: a generated table of 20,000 rows with
    set-intersection counts."""
    return ["run", "ppid3", "--synthetic", "20000,12,1", "--counts", "psi"]


@pytest.mark.processes
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_mpc_run_stops_every_party_and_removes_the_secret_keys(
    signum: signal.Signals, code: int
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpc", *_long_ppid3_run()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    folder: Path | None = None
    try:
        err = _stderr_lines_until(proc, r"\[mpc\] started \d+ parties .* in /\S+", 90)
        folder = Path(re.findall(r"\[mpc\] started \d+ parties .* in (/\S+)", err)[0])
        deadline = time.monotonic() + 30
        while not processes_mentioning(str(folder)):  # a party has started
            assert time.monotonic() < deadline, "no party process started"
            time.sleep(0.05)
        assert any((folder / "keys").glob("*.secret"))
        proc.send_signal(signum)
        _, rest = proc.communicate(timeout=60)
        err += rest.decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"mpc: stopped by {signum.name}: "), err
    assert folder is not None and not folder.exists()
    deadline = time.monotonic() + 10
    while processes_mentioning(str(folder)):  # killed and reaped by the launcher already
        assert time.monotonic() < deadline, processes_mentioning(str(folder))
        time.sleep(0.05)


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_ctrl_c_pressed_again_and_again_still_ends_with_one_line_and_130() -> None:
    """SIGINT after SIGINT while the launcher kills its parties and removes its folder: the
    cleanup is not cut short, and the command does not end by the signal (exit -2) or with a
    KeyboardInterrupt. The parties are frozen first, so the run cannot end on its own."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpc", "run", "secure-sum", "--parties", "3", "--timeout", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        err = _stderr_lines_until(proc, r"\[mpc\] started 3 parties .* in /\S+", 60)
        folder = Path(re.findall(r"\[mpc\] started 3 parties .* in (/\S+)", err)[0])
        deadline = time.monotonic() + 30
        while len(pids) < 3:
            assert time.monotonic() < deadline, "the parties did not start"
            pids = [int(p.split(":", 1)[0]) for p in processes_mentioning(str(folder))]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
            time.sleep(0.002)
        _, rest = proc.communicate(timeout=30)
        err += rest.decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("mpc: stopped by SIGINT"), err
    assert not folder.exists()
    assert processes_mentioning(str(folder)) == []


@pytest.mark.processes
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("command", "prog"),
    [(("mpc", "party"), "mpc"), (("parties",), "python -m parties")],
    ids=["mpc-party", "python-m-parties"],
)
def test_ctrl_c_stops_a_party_with_one_line(
    tmp_path: Path, command: tuple[str, ...], prog: str
) -> None:
    """A party waiting for its peers, stopped by Ctrl-C: its peers are told, one line, 130
    (the signal goes through the party's event loop, never into the middle of a task)."""
    code, _, err = run_mpc("deploy", "secure-sum", "--out", str(tmp_path / "d"), "--insecure",
                           *(f"--host=site{i}=127.0.0.1" for i in (1, 2, 3)))  # fmt: skip
    assert code == 0, err
    proc = subprocess.Popen(
        [sys.executable, "-m", *command, "site", "--config",
         str(tmp_path / "d" / "deployment.toml"), "--name", "site1", "--insecure"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    try:
        err = _stderr_lines_until(proc, "plaintext", 60)  # the party is up, waiting for peers
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
        err += rest.decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == f"{prog}: stopped by SIGINT"


# ------------------------------------------------------------------ 3. a closed stdout


@pytest.mark.parametrize(
    "args", [("datasets",), ("train", "--dataset", "weather")], ids=["datasets", "train"]
)
def test_a_closed_stdout_ends_quietly_with_exit_141(args: tuple[str, ...]) -> None:
    """``mpc ... | head``: the reader went away; no BrokenPipeError, no message, 141."""
    read, write = os.pipe()
    os.close(read)  # every write to stdout fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mpc", *args], stdout=write, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, cwd=ROOT, timeout=60, text=True,
        )  # fmt: skip
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert "BrokenPipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "Exception ignored" not in proc.stderr


# ------------------------------------------------------------------ 4. --class-site


def _plan(*argv: str) -> object:
    """The plan of ``mpc ARGV`` (no party started), its argv read as ``mpc`` reads it."""
    from parties.systems.registry import get_system

    parser = build_parser()
    lists = {flag for p in walk(parser) for flag in p.number_lists}
    args = parser.parse_args(keep_negative_values(list(argv), lists))
    return get_system(args.system).plan_from(args)


@pytest.mark.parametrize("given", ["3", "site3", "-1"])
def test_class_site_counts_from_1_like_the_site_names(given: str) -> None:
    plan = _plan("run", "ppid3", "--sites", "3", "--class-site", given)
    assert plan.params["class_site"] == "site3"  # type: ignore[attr-defined]
    assert plan.context["partition"].class_site == 2  # type: ignore[attr-defined]


def test_class_site_one_is_the_first_site() -> None:
    plan = _plan("run", "ppid3", "--sites", "3", "--class-site", "1")
    assert plan.params["class_site"] == "site1"  # type: ignore[attr-defined]


def test_a_class_site_that_does_not_exist_is_a_one_line_error() -> None:
    code, out, err = run_mpc("run", "ppid3", "--sites", "3", "--class-site", "4")
    assert code == 2 and out == ""
    assert err == "mpc: error: --class-site 4: there are 3 sites, site1..site3; give 1..3, a " \
        "site name or -1 for the last\n"  # fmt: skip
    code, _, err = run_mpc("run", "ppid3", "--class-site", "0")
    assert code == 2 and "sites are counted from 1" in err
    code, _, err = run_mpc("run", "ppid3", "--class-site", "site0")
    assert code == 2 and "site1..siteK" in err


def test_deploy_takes_the_class_site_by_name(tmp_path: Path) -> None:
    code, _, err = run_mpc(
        "deploy", "ppid3", "--partition", "outlook,temperature;humidity;windy", "--class",
        "play", "--class-site", "site2", "--out", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    assert 'class_site = "site2"' in (tmp_path / "deployment.toml").read_text()


# ------------------------------------------------------------------ 5. --partition sets k


def test_an_explicit_partition_sets_the_number_of_sites() -> None:
    plan = _plan("run", "ppid3", "--partition", "outlook,temperature;humidity;windy")
    assert plan.params["sites"] == ["site1", "site2", "site3"]  # type: ignore[attr-defined]
    assert plan.params["class_site"] == "site3"  # type: ignore[attr-defined]
    plan = _plan(
        "run", "ppid3", "--sites", "3", "--partition", "outlook;humidity,temperature;windy"
    )
    assert plan.params["attribute_counts"] == [1, 2, 1]  # type: ignore[attr-defined]


def test_sites_that_disagree_with_the_partition_is_a_one_line_error() -> None:
    code, out, err = run_mpc(
        "run", "ppid3", "--sites", "2", "--partition", "outlook,temperature;humidity;windy"
    )
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mpc: error: --sites 2 disagrees with "
                                                   "--partition"), err  # fmt: skip
    assert "gives 3 sites" in err


# ------------------------------------------------------------------ 6. negative numbers


def test_negative_inputs_need_no_equals_sign(tmp_path: Path) -> None:
    code, _, err = run_mpc("deploy", "secure-sum", "--inputs", "-3,4,5", "--out", str(tmp_path))
    assert code == 0, err
    values = [json.loads((tmp_path / "data" / f"site{i}.json").read_text())["value"]
              for i in (1, 2, 3)]  # fmt: skip
    assert values == [-3, 4, 5]


@pytest.mark.processes
def test_a_secure_sum_of_negative_inputs() -> None:
    code, doc = run_mpc_json("run", "secure-sum", "--inputs", "-3,-4,10")
    assert code == 0, doc
    assert doc["result"] == 3


def test_every_number_list_option_takes_a_leading_minus() -> None:
    parser = build_parser()
    options = {flag for p in walk(parser) for flag in p.number_lists}
    assert {"--inputs", "--flags", "--coin-seeds", "--synthetic"} <= options
    argv = ["run", "is-r-empty", "--flags", "-1,0", "--", "--inputs", "-2"]
    assert keep_negative_values(argv, options) == [
        "run", "is-r-empty", "--flags=-1,0", "--", "--inputs", "-2",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match="every flag must be 0 or 1, got"):
        _plan("run", "is-r-empty", "--flags", "-1,0")
    code, _, err = run_mpc("run", "secure-sum", "--inputs", "-3,x")
    assert code == 2 and "expected comma-separated integers (e.g. -3,4,5), got '-3,x'" in err
    code, _, err = run_mpc("run", "ppid3", "--synthetic", "-5,20,1")
    assert code == 2 and "need ROWS >= 1" in err
    code, _, err = run_mpc("run", "hybrid-id3", "--coin-seeds", "-1,2")
    assert code == 2 and "--coin-seeds: expected two non-negative integers" in err


# ------------------------------------------------------------------ 7. a header-only CSV


def test_a_header_only_csv_is_an_error_naming_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "only-a-header.csv"
    empty.write_text("outlook,windy,play\n\n")
    code, out, err = run_mpc("train", "--csv", str(empty), "--class", "play")
    assert code == 2 and out == ""
    assert err == f"mpc: error: {empty}:1: the file has a header row but no data rows; add " \
        "one row per record below it\n"  # fmt: skip
    with pytest.raises(DataError, match=re.escape(f"{empty}:1: the file has a header row but no")):
        load_csv(empty, "play")
    with pytest.raises(DataError, match=re.escape(str(empty))):
        load_party_csv(empty, id_column=None, class_column="play")


# ------------------------------------------------------------------ 8. plain-text help


def test_help_is_plain_text_everywhere() -> None:
    markup = re.compile(r"``|:(mod|func|class|meth|data|attr|exc):`")
    parsers = [build_parser()]
    while parsers:
        p = parsers.pop()
        p.format_help()  # every --help renders: a stray % in a help text breaks it
        for text in (p.description, p.epilog, *(a.help for a in p._actions)):
            assert not markup.search(text or ""), (p.prog, text)
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
    for command in ("train", "sanitize"):
        code, out, _ = run_mpc(command, "--help")
        assert code == 0 and not markup.search(out), out
        assert "mpc train evaluates a plain learner" in out or "mpc.learners.adaptive_mod" in out


def test_plain_text_drops_rest_roles_and_double_backticks() -> None:
    from parties.cli.main import plain_text

    assert plain_text(":mod:`mpc.runtime.files` and :func:`~mpc.runtime.files.check_output`") == (
        "mpc.runtime.files and check_output"
    )
    assert plain_text("``mpc train`` (:class:`NumberList <parties.systems.NumberList>`)::") == (
        "mpc train (NumberList):"
    )
    assert plain_text("a `single` quote and a literal block::\n\n    code") == (
        "a `single` quote and a literal block:\n\n    code"
    )


def test_party_and_ping_help_name_the_mpc_commands() -> None:
    code, out, _ = run_mpc("party", "--help")
    assert code == 0 and out.startswith("usage: mpc party "), out
    code, out, _ = run_mpc("ping", "--help")
    assert code == 0 and out.startswith("usage: mpc ping "), out
    code, _, err = run_mpc("party")
    assert code == 2 and err.startswith("usage: mpc party ") and "python -m" not in err


# ------------------------------------------------------------------ 9. the confusion matrix


def test_the_confusion_matrix_columns_are_aligned(tmp_path: Path) -> None:
    rows = ["x,label", *(f"{'u' if i % 2 else 'v'},{'a' if i % 2 else 'b'}" for i in range(240))]
    data = tmp_path / "big-counts.csv"
    data.write_text("\n".join(rows) + "\n")
    code, out, err = run_mpc("train", "--csv", str(data), "--class", "label", "--cv", "3")
    assert code == 0, err
    lines = out.splitlines()
    start = lines.index("confusion (rows: true class, columns: predicted):") + 1
    table = lines[start : start + 3]
    assert [line.split() for line in table] == [["a", "b"], ["a", "120", "0"], ["b", "0", "120"]]
    assert len({len(line) for line in table}) == 1, table  # right edges line up
    ends = [[m.end() for m in re.finditer(r"\S+", line)] for line in table]
    assert ends[0] == ends[1][1:] == ends[2][1:], table


def test_format_confusion_fits_the_widest_label_or_count() -> None:
    from mpc.learners.evaluation import format_confusion

    assert format_confusion(["e", "p"], [[4208, 0], [0, 3916]]) == [
        "         e     p",
        "   e  4208     0",
        "   p     0  3916",
    ]
    assert format_confusion(["no", "yes"], [[3, 2], [2, 7]]) == [
        "      no  yes",
        " no    3    2",
        "yes    2    7",
    ]


# ------------------------------------------------------------------ 10. progress


def test_cross_validation_progress_gives_done_of_total_and_time_left() -> None:
    code, _, err = run_mpc("train", "--dataset", "weather", "--cv", "3")
    assert code == 0, err
    folds = [line for line in err.splitlines() if line.startswith("fold ")]
    assert len(folds) == 3, err
    assert re.fullmatch(r"fold 1/3: accuracy \d\.\d{4}; [\d.]+ s elapsed, about [\d.]+ s left",
                        folds[0]), folds  # fmt: skip
    assert re.fullmatch(r"fold 3/3: accuracy \d\.\d{4}; [\d.]+ s elapsed", folds[2]), folds


def test_tree_progress_says_what_is_known_without_a_total() -> None:
    from mpc.runtime.monitor import describe_progress, done_of, duration

    assert describe_progress("node 125 (depth 4), 12.3 s, 1.2 MB sent") == (
        "125 nodes so far, depth 4, 12 s elapsed, 1.2 MB sent"
    )
    assert describe_progress("level 3: 40 nodes, 12 interior, 75.0 s, 3.4 MB sent") == (
        "level 3: 40 nodes (12 interior), 1 min 15 s elapsed, 3.4 MB sent"
    )
    assert describe_progress("aligning records") == "aligning records"
    assert done_of(3, 10, 1.2) == "3/10, 1.2 s elapsed, about 2.8 s left"
    assert done_of(0, 10, 0.0) == "0/10, 0.0 s elapsed"
    assert duration(7300) == "2 h 01 min"


def test_progress_is_one_updating_line_on_a_terminal_and_plain_lines_elsewhere() -> None:
    from mpc.runtime.monitor import ProgressLine
    from parties.cli.main import _RunProgress

    plain = io.StringIO()
    shown = _RunProgress(plain, "[mpc] ", live=False)
    shown.note("started 2 parties")
    shown.update("site2: node 25 (depth 3), 2.1 s, 0.3 MB sent")
    shown.update("site2: node 50 (depth 4), 4.2 s, 0.6 MB sent")
    shown.close()
    assert plain.getvalue().splitlines() == [
        "[mpc] started 2 parties",
        "[mpc] site2: 25 nodes so far, depth 3, 2.1 s elapsed, 0.3 MB sent",
        "[mpc] site2: 50 nodes so far, depth 4, 4.2 s elapsed, 0.6 MB sent",
    ]
    assert "\r" not in plain.getvalue()
    terminal = io.StringIO()
    line = ProgressLine(terminal, live=True)
    line.update("fold 1/3")
    line.update("fold 2/3")
    assert terminal.getvalue() == "\rfold 1/3\x1b[K\rfold 2/3\x1b[K"  # one line, rewritten
    line.note("done")
    assert terminal.getvalue().endswith("\r\x1b[Kdone\n")  # the status line cleared first
    assert not ProgressLine(io.StringIO()).live  # not a terminal: plain lines


def test_a_report_is_json_with_one_line_per_top_level_key() -> None:
    report = {"name": "site1", "ok": True, "ledger": [{"label": "x", "value": [1, 2.5]}],
              "metrics": {"bytes_sent": 10}, "note": "tab\there"}  # fmt: skip
    text = report_text(report)
    assert json.loads(text) == report
    assert len(text.splitlines()) == len(report) + 2
    assert json.loads(report_text({})) == {}


# ------------------------------------------------------------------ what a wrong command line gets


def test_a_bare_mpc_run_lists_the_systems() -> None:
    for command in ("run", "deploy"):
        code, _, err = run_mpc(command)
        assert code == 2, err
        for name, system in SYSTEMS.items():
            line = next((x for x in err.splitlines() if x.split()[:1] == [name]), None)
            assert line is not None and plain_text(system.help).split()[0] in line, (name, err)


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["run", "ppid3", "--bogus", "1"], "usage: mpc run ppid3 "),
        (["train", "--dataset", "weather", "--bogus"], "usage: mpc train "),
        (["deploy", "ppid3", "--out", "never-written", "--bogus"], "usage: mpc deploy ppid3 "),
    ],
)
def test_a_mistyped_option_gets_the_usage_of_its_own_command(argv: list[str], usage: str) -> None:
    code, _, err = run_mpc(*argv)
    assert code == 2 and err.startswith(usage), err
    assert "unrecognized arguments: --bogus" in err, err


def test_a_party_stopped_by_ctrl_c_is_named_as_interrupted_by_its_peers(tmp_path: Path) -> None:
    """site2, stopped by Ctrl-C while it waits with site1 for site3: site1's error says that
    site2 was interrupted, not an empty CancelledError."""
    code, _, err = run_mpc("deploy", "secure-sum", "--out", str(tmp_path / "d"), "--insecure",
                           *(f"--host=site{i}=127.0.0.1" for i in (1, 2, 3)))  # fmt: skip
    assert code == 0, err

    def start(name: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "parties", "site", "--config",
             str(tmp_path / "d" / "deployment.toml"), "--name", name, "--insecure",
             "--report", str(tmp_path / f"{name}.json")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT,
            start_new_session=True,
        )  # fmt: skip

    site1, site2 = start("site1"), start("site2")
    try:
        _stderr_lines_until(site1, "plaintext", 60)
        _stderr_lines_until(site2, "plaintext", 60)  # both up, waiting for site3
        site2.send_signal(signal.SIGINT)
        site2.communicate(timeout=60)
        site1.communicate(timeout=90)
    finally:
        for proc in (site1, site2):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    assert site2.returncode == 130
    message = json.loads((tmp_path / "site1.json").read_text())["error"]["message"]
    assert "site2 stopped the run" in message and "site2 was interrupted by SIGINT" in message, (
        message
    )


def test_every_name_a_class_goes_by_is_in_the_help() -> None:
    """``--class party`` (house-votes-84's 'Class Name', as the papers name it) is listed by
    ``mpc run cdtl --help``, as every such alias."""
    from parties.programs.cdtl_tables import CLASS_ALIASES

    code, out, _ = run_mpc("run", "cdtl", "--help")
    flat = " ".join(out.split())
    assert code == 0
    for name, aliases in CLASS_ALIASES.items():
        for alias, column in aliases.items():
            assert f"{alias} for {name}'s {column!r}" in flat, flat
