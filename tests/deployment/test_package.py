"""The package as a stranger installs it: the sdist and the wheel built from the clone carry the
licence, the project's metadata and the shipped tables with their licence, the sdist builds
the same wheel, and the README's first command runs from the installed wheel in a fresh
environment, outside the source tree."""

from __future__ import annotations

import email
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from ..conftest import ROOT
from ..processes.test_datasets_fetch import serve_archive

pytestmark = [pytest.mark.processes, pytest.mark.timeout(300)]


#: what a build leaves in a checkout (setuptools builds in the source tree): never copied
BUILD_LEFTOVERS = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", ".git")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clone's files without what builds leave in it: setuptools builds in the source
    tree (``build/``, ``*.egg-info``), so two workers building the clone itself at once, or
    one build stopped halfway, would break the next."""
    out = tmp_path_factory.mktemp("source") / "mpc-trees"
    shutil.copytree(ROOT, out, ignore=BUILD_LEFTOVERS)
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    """The wheel ``pip wheel`` builds from the clone (no dependency fetched)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(out), str(source)],
        check=True, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    (found,) = out.glob("mpc_trees-*.whl")
    return found


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    """The sdist ``python -m build --sdist`` makes from the clone."""
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(source)],
        check=True, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    (found,) = out.glob("mpc_trees-*.tar.gz")
    return found


#: what a stranger's copy must hold besides the code: the licences and the shipped tables
SHIPPED_FILES = (
    "mpc/datasets/data/uci/README.md",
    "mpc/datasets/data/uci/car/car.data",
    "mpc/datasets/data/uci/kr-vs-kp/kr-vs-kp.data",
    "mpc/datasets/schemas/sources.json",
)


def test_the_sdist_holds_the_licence_and_the_tables_and_builds_the_same_wheel(
    sdist: Path, wheel: Path, tmp_path: Path
) -> None:
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "pyproject.toml", *SHIPPED_FILES} <= names, sorted(names)
    # every page the README links to is in it, so the links resolve in the unpacked copy
    links = re.findall(r"\]\(([^)#:]+?)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert links and not [link for link in links if link not in names]
    out = tmp_path / "from-sdist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(sdist)],
        check=True, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    (rebuilt,) = out.glob("mpc_trees-*.whl")
    with zipfile.ZipFile(rebuilt) as a, zipfile.ZipFile(wheel) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())


def test_the_wheel_carries_the_licence_and_the_project_s_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        licences = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert licences, names
        assert "MIT License" in zf.read(licences[0]).decode()
        assert set(SHIPPED_FILES) <= set(names)
        assert "CC BY 4.0" in zf.read("mpc/datasets/data/uci/README.md").decode()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(zf.read(metadata))
    assert meta["License-Expression"] == "MIT"
    assert meta["Author"] or meta["Author-email"], meta.keys()
    # the description an index page shows links to nothing it cannot show
    description = meta.get_payload()
    assert "mpc run ppid3 --dataset weather --sites 2" in description
    assert not re.findall(r"\]\((?!https?://)[^)]*\)", description), description
    classifiers = meta.get_all("Classifier") or []
    assert "Topic :: Security :: Cryptography" in classifiers, classifiers
    assert any(c.startswith("Programming Language :: Python :: 3") for c in classifiers)


def test_the_readme_s_first_command_runs_from_the_installed_wheel(
    wheel: Path, tmp_path: Path
) -> None:
    """A fresh environment (this one's packages for the dependencies, none of the clone's
    code) with the wheel installed: ``mpc run ppid3 --dataset weather --sites 2`` from a
    folder outside the clone trains the tree and finds it identical to plain ID3; then
    ``mpc datasets fetch car`` and ``mpc run ppid3 --dataset car --sites 3`` work too."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # the dependencies: this environment's installed packages, on the path after the new
    # environment's own (a path in a .pth file: the .pth files there, among them this
    # environment's link to the clone, are not run)
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    Path(own, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, timeout=120)  # fmt: skip
    outside = ("PYTHONPATH", "MPC_DATA_DIR", "MPC_NO_DATA_DIR")  # a stranger's machine
    env = {k: v for k, v in os.environ.items() if k not in outside}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(
        [str(python), "-c", "import mpc, parties, protocols; print(mpc.__file__, "
         "parties.__file__, protocols.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert all(Path(w).is_relative_to(venv) for w in where), where
    run = subprocess.run(
        ["mpc", "run", "ppid3", "--dataset", "weather", "--sites", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "identical: True" in run.stdout, run.stdout

    # a dataset fetched (from a loopback server laid out as the UCI archive) into the user's
    # own data directory, where the next command finds it
    env["HOME"] = str(tmp_path / "home")
    env.pop("XDG_DATA_HOME", None)
    root = serve_archive(tmp_path / "archive", ["car"])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        fetched = subprocess.run(
            ["mpc", "datasets", "fetch", "car", "--from", url],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert fetched.returncode == 0, fetched.stderr
    fetched_car = tmp_path / "home" / ".local" / "share" / "mpc-trees" / "datasets" / "car"
    assert fetched_car.is_dir()
    listing = subprocess.run(
        ["mpc", "datasets"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )  # fmt: skip
    (car,) = [line for line in listing.stdout.splitlines() if line.startswith("car ")]
    assert str(fetched_car / "car.data") in car, listing.stdout  # the fetched copy, first
    run = subprocess.run(
        ["mpc", "run", "ppid3", "--dataset", "car", "--sites", "3", "--max-depth", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "identical: True" in run.stdout, run.stdout
