"""Parties refuse a deployment that drifted: every party compares, in its handshake, a digest
of what all must read alike (:func:`mpc.runtime.config.agreement`: the release, the system
and its parameters, the parties and their columns, their public keys, the deadlines), and a
difference at one party stops every party with one line naming the party that differs and
what differs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpc import __version__
from mpc.runtime.config import agreement
from mpc.runtime.keys import fingerprint, load_public_key
from parties.own_party import load_deployment

from ..conftest import run_mpc
from ..harness import Parties, plan_deployment

pytestmark = pytest.mark.processes


def _drifted(config: Path, pattern: str, replacement: str) -> Path:
    """A copy of ``config`` beside it with one change (paths stay relative to the folder)."""
    text = config.read_text()
    changed, n = re.subn(pattern, replacement, text, count=1, flags=re.M)
    assert n == 1, f"no {pattern!r} in the deployment file"
    other = config.with_name("drifted.toml")
    other.write_text(changed)
    return other


def test_a_parameter_changed_at_one_site_stops_every_site_naming_it(tmp_path: Path) -> None:
    """site3 runs with max_depth = 2, the others with no limit: no site trains; each says who
    differs, and that the system's parameters do."""
    config, roles = plan_deployment(tmp_path, "ppid3", "--sites", "3", timeout=10)
    drifted = _drifted(config, r"^(\[protocol\.params\])$", r"\1\nmax_depth = 2")
    with Parties(config, roles) as run:
        run.start("site1")
        run.start("site2")
        run.start("site3", "--config", str(drifted))
        codes = run.wait(["site1", "site2", "site3"], deadline=40)
    assert all(code != 0 for code in codes.values()), codes
    # site3 names whichever of the others it heard from first
    for name, blamed in (("site1", ["site3"]), ("site2", ["site3"]), ("site3", ["site1", "site2"])):
        message = run.report(name)["error"]["message"]
        said = [f"{b} runs a different deployment: the system and its parameters differ"
                for b in blamed]  # fmt: skip
        assert any(s in message for s in said), (name, message)
        assert "trained on" not in run.log(name)


def test_what_the_agreement_covers_and_what_it_leaves_to_each_host(tmp_path: Path) -> None:
    """The digest changes with a parameter, a party's columns or a public key; not with a
    party's own paths, bind address or the endpoint it reaches a peer at."""
    config, _ = plan_deployment(tmp_path, "ppid3", "--sites", "2", timeout=10)
    base = agreement(load_deployment(config), "1.0")

    def of(pattern: str, replacement: str) -> dict[str, str]:
        return agreement(load_deployment(_drifted(config, pattern, replacement)), "1.0")

    assert of(r"^(\[protocol\.params\])$", r"\1\nmax_depth = 3")["protocol"] != base["protocol"]
    assert of(r'^columns = \["outlook"', 'columns = ["temperature"')["parties"] != base["parties"]
    assert of(r"^timeout = .*$", "timeout = 11.0")["deployment"] != base["deployment"]
    same = of(r'^data = "(.*)"$', r'data = "\1.elsewhere"')
    assert same == base
    same = of(r'^endpoint = "tcp://127\.0\.0\.1:(\d+)"$', r'endpoint = "tcp://localhost:\1"')
    assert same == base
    assert agreement(load_deployment(config), "1.1")["release"] != base["release"]
    key = next((tmp_path / "keys").glob("site1.public"))
    key.write_text(next((tmp_path / "keys").glob("site2.public")).read_text())
    assert agreement(load_deployment(config), "1.0")["keys"] != base["keys"]


# ------------------------------------------------------------------ mpc check, before a run


def _check_folder(tmp_path: Path) -> Path:
    """A three-site deployment with each site's own key pair, as `mpc check` reads it."""
    for site in ("site1", "site2", "site3"):
        code, _, err = run_mpc("keygen", "--out", str(tmp_path / "keys"), site)
        assert code == 0, err
    code, _, err = run_mpc(
        "deploy", "ppid3", "--partition", "a,b;c;d", "--class", "y", "--out", str(tmp_path)
    )
    assert code == 0, err
    (tmp_path / "site3.csv").write_text("id,d,y\nr1,x,yes\nr2,z,no\n")
    return tmp_path / "deployment.toml"


def test_mpc_check_prints_one_agreement_code_that_moves_with_what_the_parties_compare(
    tmp_path: Path,
) -> None:
    """The code is the same for the same deployment and changes with a parameter or a key,
    not with an endpoint (each host's business); the fingerprints are the keys'."""
    config = _check_folder(tmp_path)

    def code_of(path: Path) -> str:
        rc, out, err = run_mpc("check", "--config", str(path))
        assert rc == 0, err
        return next(line.split()[1:6] for line in out.splitlines() if line.startswith("agreement:"))

    same = code_of(config)
    assert code_of(config) == same
    assert code_of(_drifted(config, r"^endpoint = \"tcp://site1:", 'endpoint = "tcp://h1:')) == same
    assert code_of(_drifted(config, r"^(\[protocol\.params\])$", r"\1\nmax_depth = 3")) != same
    assert (
        code_of(_drifted(config, r'^public_key = "keys/site2', 'public_key = "keys/site3')) != same
    )
    _, out, _ = run_mpc("check", "--config", str(config))
    for site in ("site1", "site2", "site3"):
        fp = fingerprint(load_public_key(tmp_path / "keys" / f"{site}.public"))
        assert any(line.startswith(site) and fp in line for line in out.splitlines()), out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--secret-key", "keys/site2.secret", "--data", "site3.csv"],
         "keys/site2.secret is not the secret half of site3's public key"),
        (["--secret-key", "keys/site3.secret", "--data", "short.csv"], "'y'"),
        (["--secret-key", "keys/site3.secret", "--data", "missing.csv"], "missing.csv"),
    ],
    ids=["another party's key", "no class column", "no file"],
)  # fmt: skip
def test_mpc_check_refuses_a_wrong_key_or_file_in_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    config = _check_folder(tmp_path)
    (tmp_path / "short.csv").write_text("id,d\nr1,x\n")
    args = [a if not a.endswith((".secret", ".csv")) else str(tmp_path / a) for a in args]
    rc, out, err = run_mpc("check", "--config", str(config), "--name", "site3", *args)
    assert rc == 2, (out, err)
    assert "\nok\n" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpc: error:") and message in lines[0], err


def test_mpc_check_passes_the_own_key_and_file_and_mpc_version_names_the_release(
    tmp_path: Path,
) -> None:
    config = _check_folder(tmp_path)
    rc, out, err = run_mpc("check", "--config", str(config), "--name", "site3", "--secret-key",
                           str(tmp_path / "keys" / "site3.secret"), "--data",
                           str(tmp_path / "site3.csv"))  # fmt: skip
    assert rc == 0, err
    assert out.splitlines()[-2:] == [
        f"site3: {tmp_path / 'site3.csv'}: 2 records, id column 'id', columns d, the class 'y'",
        "ok",
    ]
    rc, out, _ = run_mpc("--version")
    assert (rc, out.strip()) == (0, f"mpc-trees {__version__}")


def test_mpc_check_reads_the_file_with_every_option_its_party_takes(tmp_path: Path) -> None:
    """A hospital's export: its id column is 'Patient ID', it has a free-text column the model
    leaves out, 'NA' for missing and a coded column to read as categories. Without the
    options the party would run with, the check fails on the id column; with them (as the
    party's command line gives them) it reads the file as the party will."""
    config = _check_folder(tmp_path)
    (tmp_path / "site3.csv").write_text(
        "Patient ID,d,notes,y\nP-1,1,seen twice,yes\nP-2,NA,no notes,no\nP-3,2,x,no\n"
    )
    key = str(tmp_path / "keys" / "site3.secret")
    base = ["check", "--config", str(config), "--name", "site3", "--secret-key", key,
            "--data", str(tmp_path / "site3.csv")]  # fmt: skip
    rc, out, err = run_mpc(*base)
    assert rc == 2 and "'id'" in err, (out, err)
    rc, out, err = run_mpc(*base, "--id", "Patient ID", "--ignore", "notes", "--missing", "NA",
                           "--nominal", "d")  # fmt: skip
    assert rc == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("site3: ") and "records" in ln]
    assert line.endswith("3 records, id column 'Patient ID', columns d, the class 'y'"), line
    assert out.splitlines()[-1] == "ok"
