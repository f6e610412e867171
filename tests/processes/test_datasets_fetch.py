"""Datasets for people outside this repository: ``mpc datasets fetch`` against a loopback HTTP
server laid out as the UCI archive (never the internet), ``mpc datasets import`` of copies,
every file checked by its SHA-256, and a UCI file read with the package's own schema."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpc.datasets import load_dataset
from mpc.datasets.fetch import shipped_folder, sources

from ..conftest import run_mpc

pytestmark = pytest.mark.processes


def uci_copy(name: str) -> Path:
    """The folder of a table the package ships: byte for byte the UCI archive's files (the
    sizes and SHA-256 sums that fetch checks), so they can stand in for the archive's."""
    folder = shipped_folder(name)
    assert folder is not None, f"the package ships no copy of {name}"
    return folder


def serve_archive(root: Path, names: list[str]) -> Path:
    """``root`` laid out as the archive's machine-learning-databases/ for ``names`` (tables
    the package ships)."""
    for name in names:
        for s in sources(name):
            (root / s.uci).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(uci_copy(name) / s.name, root / s.uci)
    return root


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTP server over a copy of car's and tic-tac-toe's files: (its address, the
    folder it serves)."""
    root = serve_archive(tmp_path / "archive", ["car", "tic-tac-toe"])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", root
    finally:
        server.shutdown()
        server.server_close()


def test_fetch_checks_every_file_and_the_dataset_then_trains(
    archive: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = archive
    data = tmp_path / "data"
    code, out, err = run_mpc("datasets", "fetch", "car", "--from", url, "--data-dir", str(data))
    assert code == 0, err
    for s in sources("car"):
        assert hashlib.sha256((data / "car" / s.name).read_bytes()).hexdigest() == s.sha256
    assert (data / "car" / "schema.json").is_file()
    code, out, err = run_mpc("datasets", "--data-dir", str(data), "--json")
    assert code == 0, err
    assert "car" in [d["name"] for d in json.loads(out)["datasets"]]
    code, out, err = run_mpc("run", "ppid3", "--dataset", "car", "--sites", "3", "--data-dir",
                             str(data), "--max-depth", "2", deadline=120)  # fmt: skip
    assert code == 0 and "identical: True" in out, err


def test_a_file_that_does_not_match_its_sum_is_refused_and_nothing_is_written(
    archive: tuple[str, Path], tmp_path: Path
) -> None:
    url, root = archive
    (bad,) = [s for s in sources("tic-tac-toe") if s.name == "tic-tac-toe.data"]
    served = root / bad.uci
    served.write_bytes(served.read_bytes().replace(b"positive", b"negative", 1))
    data = tmp_path / "data"
    code, _, err = run_mpc("datasets", "fetch", "tic-tac-toe", "--from", url, "--data-dir",
                           str(data))  # fmt: skip
    assert code == 2, err
    assert "SHA-256" in err and "nothing written" in err, err
    assert not (data / "tic-tac-toe").exists()


def test_import_takes_copies_under_any_name_and_a_lone_file_reads_with_the_package_schema(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "downloads" / "my-car-file.csv"
    copy.parent.mkdir()
    shutil.copy(uci_copy("car") / "car.data", copy)
    data = tmp_path / "data"
    code, _, err = run_mpc("datasets", "import", "car", str(copy), "--data-dir", str(data))
    assert code == 0, err
    assert (data / "car" / "car.data").read_bytes() == copy.read_bytes()
    # a UCI file alone in its folder, no schema.json: the package's schema reads it
    alone = tmp_path / "alone"
    (alone / "car").mkdir(parents=True)
    shutil.copy(uci_copy("car") / "car.data", alone / "car" / "car.data")
    table, _ = load_dataset("car", alone)
    assert table.n_rows == 1728 and table.class_name
    code, _, err = run_mpc("datasets", "import", "car", str(uci_copy("car") / "car.names"),
                           "--data-dir", str(tmp_path / "other"))  # fmt: skip
    assert code == 2 and "car also needs car.data" in err, err
    # a dataset folder as it lies, its own schema.json with it (import car FOLDER/*)
    folder = tmp_path / "folder" / "car"
    folder.mkdir(parents=True)
    for f in ("car.data", "car.names"):
        shutil.copy(uci_copy("car") / f, folder / f)
    (folder / "schema.json").write_text('{"an": "older schema"}')
    code, _, err = run_mpc("datasets", "import", "car", *map(str, sorted(folder.iterdir())),
                           "--data-dir", str(tmp_path / "third"))  # fmt: skip
    assert code == 0, err
    assert json.loads((tmp_path / "third" / "car" / "schema.json").read_text())["rows"]


def test_an_address_that_is_no_url_is_one_line_naming_it(tmp_path: Path) -> None:
    code, _, err = run_mpc("datasets", "fetch", "car", "--from", "not-a-url", "--data-dir",
                           str(tmp_path / "data"))  # fmt: skip
    assert code == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("mpc: error: cannot download not-a-url/"), err
