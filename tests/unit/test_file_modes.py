"""Private files are written for their owner only: mode 0600 in folders of mode 0700.

Every command that writes a party's private input, a report or ledger, a learned tree, a
released table, a CDBS database or a key is run as a user would run it (a process with the
usual umask 022), and every file and folder it wrote is checked. Public material (the
deployment file, ``NAME.public``) may stay 0644; nothing else may be readable by others.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT

pytestmark = [pytest.mark.timeout(120)]

#: files that may be world-readable: they hold nothing secret
PUBLIC = ("deployment.toml", "*.public")


def mpc(*args: str, deadline: float = 90.0) -> subprocess.CompletedProcess[str]:
    """``python -m mpc ARGS`` with the common umask 022 and a deadline."""
    return subprocess.run(
        [sys.executable, "-m", "mpc", *args],
        capture_output=True, text=True, timeout=deadline, cwd=ROOT, umask=0o022,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def modes(top: Path) -> dict[str, str]:
    """``relative path -> octal mode`` of ``top`` and everything below it."""
    found = {".": oct(top.stat().st_mode & 0o777)}
    for path in sorted(top.rglob("*")):
        found[str(path.relative_to(top))] = oct(path.lstat().st_mode & 0o777)
    return found


def exposed(top: Path) -> dict[str, str]:
    """What under ``top`` others could read: a folder not 0700, a private file not 0600."""
    bad = {}
    for rel, mode in modes(top).items():
        path = top / rel
        if path.is_dir():
            if mode != oct(0o700):
                bad[rel] = mode
        elif not any(path.match(p) for p in PUBLIC) and mode != oct(0o600):
            bad[rel] = mode
    return bad


def test_a_kept_run_writes_keys_inputs_logs_and_reports_for_its_owner_only(
    tmp_path: Path,
) -> None:
    keep, report = tmp_path / "run", tmp_path / "out" / "sub" / "run.json"
    proc = mpc("run", "secure-sum", "--parties", "3", "--keep", str(keep), "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    assert {"keys/site1.secret", "data/site1.json", "logs/site1.log", "reports/site1.json"} <= set(
        modes(keep)
    )
    assert exposed(keep) == {}, modes(keep)
    assert exposed(tmp_path / "out") == {}, modes(tmp_path / "out")
    assert json.loads(report.read_text())["ok"] is True


def test_a_kept_run_tightens_an_existing_empty_folder(tmp_path: Path) -> None:
    keep = tmp_path / "run"
    keep.mkdir(mode=0o755)
    os.chmod(keep, 0o755)
    proc = mpc("run", "is-r-empty", "--flags", "0,1", "--keep", str(keep))
    assert proc.returncode == 0, proc.stderr
    assert exposed(keep) == {}, modes(keep)


def test_the_cdbs_load_key_and_the_cdbs_database_are_private(tmp_path: Path) -> None:
    """cdbs-load gives each client the data owner's AES key in its private input file; the
    CDBS keeps the anatomized tables and sealed subtrees in its SQLite database."""
    keep = tmp_path / "run"
    proc = mpc("run", "cdbs-load", "--dataset", "weather", "--sensitive", "windy",
               "--clients", "2", "--predictions", "2", "--keep", str(keep))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "key" in json.loads((keep / "data" / "client1.json").read_text())
    assert (keep / "cdbs.sqlite").exists()
    assert exposed(keep) == {}, modes(keep)


def test_mpc_deploy_writes_private_inputs_for_their_owners_only(tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    proc = mpc(
        "deploy", "ppid3", "--split-demo", "--dataset", "weather", "--sites", "3", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    assert {"deployment.toml", "data/site1.csv"} <= set(modes(out))
    assert exposed(out) == {}, modes(out)


def test_mpc_deploy_private_gives_each_party_a_folder_of_its_own(tmp_path: Path) -> None:
    """``--private DIR``: each party's input in DIR/NAME/, the deployment file alone in --out
    (public: it may stay readable, so that it can be shared as it is)."""
    out, private = tmp_path / "public" / "ppid3", tmp_path / "private"
    proc = mpc("deploy", "ppid3", "--split-demo", "--dataset", "weather", "--sites", "2",
               "--out", str(out), "--private", str(private))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["deployment.toml"]
    assert sorted(str(p.relative_to(private)) for p in private.rglob("*.csv")) == [
        "site1/ppid3.csv",
        "site2/ppid3.csv",
    ]
    assert f'data = "{private}/site1/ppid3.csv"' in (out / "deployment.toml").read_text()
    assert exposed(private) == {}, modes(private)


def test_keygen_makes_a_private_folder_and_a_folder_per_secret(tmp_path: Path) -> None:
    proc = mpc("keygen", "--out", str(tmp_path / "keys"), "alice", "bob")
    assert proc.returncode == 0, proc.stderr
    assert exposed(tmp_path / "keys") == {}, modes(tmp_path / "keys")
    proc = mpc("keygen", "--out", str(tmp_path / "public"), "--secrets", str(tmp_path / "s"),
               "alice", "monitor")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "public").iterdir()) == [
        "alice.public",
        "monitor.public",
    ]
    assert sorted(str(p.relative_to(tmp_path / "s")) for p in (tmp_path / "s").rglob("*")) == [
        "alice",
        "alice/alice.secret",
        "monitor",
        "monitor/monitor.secret",
    ]
    assert exposed(tmp_path / "s") == {}, modes(tmp_path / "s")


def test_a_party_report_is_private(tmp_path: Path) -> None:
    """``python -m parties --report`` (here a party that fails its configuration: the report
    is written all the same)."""
    report = tmp_path / "reports" / "site1.json"
    proc = subprocess.run(
        [sys.executable, "-m", "parties", "site", "--config", str(tmp_path / "none.toml"),
         "--name", "site1", "--report", str(report)],
        capture_output=True, text=True, timeout=60, cwd=ROOT, umask=0o022,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert json.loads(report.read_text())["ok"] is False
    assert exposed(tmp_path / "reports") == {}, modes(tmp_path / "reports")


def test_a_learned_tree_and_a_release_are_private(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    proc = mpc("train", "--learner", "id3", "--dataset", "weather",
               "--tree-out", str(out / "tree.json"), "--dot", str(out / "tree.dot"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    proc = mpc("sanitize", "--dataset", "weather", "--confidential", "2", "--threshold", "0.5",
               "--out", str(out / "release" / "weather.csv"), "--quiet")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert {"tree.json", "tree.dot", "release/weather.csv"} <= set(modes(out))
    assert exposed(out) == {}, modes(out)


# ---------------------------------------------------------------- the helpers themselves


def test_write_private_is_atomic_exact_and_never_follows_a_link(tmp_path: Path) -> None:
    from mpc.runtime.files import write_private

    old = os.umask(0o777)  # a umask can only take bits away: the modes are set explicitly
    try:
        path = write_private(tmp_path / "a" / "b" / "x.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = tmp_path / "a" / "link.json"
    link.symlink_to(victim)
    write_private(link, b"new")
    assert victim.read_text() == "keep me"  # the link was replaced, not written through
    assert not link.is_symlink() and link.read_bytes() == b"new"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b", "link.json"]  # no temp


def test_open_private_refuses_a_link_and_tightens_an_existing_file(tmp_path: Path) -> None:
    from mpc.errors import ConfigError
    from mpc.runtime.files import open_private

    (tmp_path / "victim").write_text("keep me")
    (tmp_path / "link").symlink_to(tmp_path / "victim")
    with pytest.raises(ConfigError, match="symbolic link"):
        open_private(tmp_path / "link", "w")
    loose = tmp_path / "loose.log"
    loose.write_text("old\n")
    os.chmod(loose, 0o644)
    with open_private(loose, "a") as fh:
        fh.write("new\n")
    assert loose.read_text() == "old\nnew\n" and stat.S_IMODE(loose.stat().st_mode) == 0o600


def test_private_dir_leaves_an_existing_folder_unless_told(tmp_path: Path) -> None:
    from mpc.runtime.files import private_dir

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    private_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755  # e.g. the current directory
    private_dir(shared, tighten=True)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o700
