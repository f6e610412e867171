"""The named UCI datasets for people outside this repository: ``mpc datasets fetch NAME``
downloads a dataset's files from the UCI archive and ``mpc datasets import NAME FILE...``
takes copies one already has; both check every file's size and SHA-256 against
``schemas/sources.json`` (the sums of ``shared/datasets/README.md``) before anything is
written, and write the dataset's folder (its files and its ``schema.json``) into the data
directory.

The data directory is ``--data-dir``, else ``$MPC_DATA_DIR``, else the one next to the
repository when there is one, else ``$XDG_DATA_HOME/mpc-trees/datasets`` (by default
``~/.local/share/mpc-trees/datasets``; :func:`user_data_dir`), where ``fetch`` and
``import`` write and every command looks.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from mpc.datasets.table import DataError

__all__ = [
    "SCHEMAS",
    "SHIPPED",
    "SourceFile",
    "fetch_dataset",
    "import_dataset",
    "packaged_schema",
    "shipped_folder",
    "sources",
    "user_data_dir",
]

#: the package's copies of every named dataset's schema.json, and the sources of its files
SCHEMAS = Path(__file__).resolve().parent / "schemas"
#: the small UCI tables shipped with the package (data/uci/README.md: licence and citations)
SHIPPED = Path(__file__).resolve().parent / "data" / "uci"
#: the largest file a fetch accepts (adult.data is 4 MB)
MAX_BYTES = 64 * 2**20


@dataclass(frozen=True)
class SourceFile:
    """One file of a named dataset: its name in the dataset's folder, its size and SHA-256,
    and its path under the UCI archive's ``machine-learning-databases/``."""

    name: str
    size: int
    sha256: str
    uci: str


@cache
def _sources_doc() -> dict[str, object]:
    doc: dict[str, object] = json.loads((SCHEMAS / "sources.json").read_text(encoding="utf-8"))
    return doc


def base_url() -> str:
    """The UCI archive's ``machine-learning-databases/`` address."""
    return str(_sources_doc()["base_url"])


def sources(name: str) -> list[SourceFile]:
    """The files of the named dataset, or a one-line error naming those that can be fetched."""
    datasets = _sources_doc()["datasets"]
    assert isinstance(datasets, dict)
    if name not in datasets:
        raise DataError(
            f"no dataset {name!r} to fetch; these can be: {', '.join(sorted(datasets))} "
            "(weather is embedded in the package)"
        )
    return [SourceFile(f["file"], f["bytes"], f["sha256"], f["uci"]) for f in datasets[name]]


def packaged_schema(name: str) -> Path | None:
    """The package's ``schema.json`` of the named dataset, if it has one."""
    path = SCHEMAS / f"{name}.json"
    return path if path.is_file() else None


def shipped_folder(name: str) -> Path | None:
    """The package's own copy of the named dataset (car, house-votes-84, tic-tac-toe,
    kr-vs-kp), if it ships one: a folder of UCI files that reads with the package's schema."""
    folder = SHIPPED / name
    return folder if folder.is_dir() and packaged_schema(name) is not None else None


def user_data_dir() -> Path:
    """``$XDG_DATA_HOME/mpc-trees/datasets`` (``~/.local/share/mpc-trees/datasets``)."""
    home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(home) / "mpc-trees" / "datasets"


def _checked(source: SourceFile, data: bytes, origin: str) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != source.size or digest != source.sha256:
        raise DataError(
            f"{origin}: {len(data)} bytes with SHA-256 {digest[:16]}..., expected "
            f"{source.size} bytes with {source.sha256[:16]}... ({source.name}); nothing written"
        )
    return data


def _write(folder: Path, name: str, files: dict[str, bytes]) -> Path:
    """Write the checked files and the schema into ``folder/name``, each file atomically."""
    target = folder / name
    target.mkdir(parents=True, exist_ok=True)
    schema = packaged_schema(name)
    if schema is not None:
        files = {**files, "schema.json": schema.read_bytes()}
    for fname, data in files.items():
        tmp = target / f".{fname}.part"
        tmp.write_bytes(data)
        tmp.replace(target / fname)
    return target


def fetch_dataset(
    name: str,
    data_dir: Path,
    *,
    base: str | None = None,
    timeout: float = 60.0,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Download the named dataset's files from ``base`` (default: the UCI archive), check
    each against its size and SHA-256, and write them (and the schema) to ``data_dir/name``.
    Nothing is written unless every file checks. Returns the dataset's folder."""
    root = (base or base_url()).rstrip("/") + "/"
    got: dict[str, bytes] = {}
    for source in sources(name):
        url = root + source.uci
        if progress is not None:
            progress(f"{name}: {url}")
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                data = response.read(MAX_BYTES + 1)
        except (urllib.error.URLError, OSError, ValueError) as exc:  # ValueError: no URL
            reason = getattr(exc, "reason", exc)
            raise DataError(f"cannot download {url}: {reason}") from None
        got[source.name] = _checked(source, data, url)
    return _write(data_dir, name, got)


def import_dataset(name: str, data_dir: Path, files: Sequence[Path]) -> Path:
    """Take copies of the named dataset's files (under any names), each recognised by its
    size and SHA-256, and write them (and the schema) to ``data_dir/name``. Every data file
    of the dataset must be among them; a ``schema.json`` among them (a dataset folder's own,
    as in ``import NAME FOLDER/*``) is left out, the package's being written. Returns the
    dataset's folder."""
    expected = {s.sha256: s for s in sources(name)}
    got: dict[str, bytes] = {}
    for path in files:
        if Path(path).name == "schema.json":  # a dataset folder's own: the package writes its
            continue
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise DataError(f"cannot read it: {exc.strerror}", file=path) from None
        digest = hashlib.sha256(data).hexdigest()
        source = expected.get(digest)
        if source is None:
            names = ", ".join(s.name for s in expected.values())
            raise DataError(
                f"not a file of {name} ({names}): SHA-256 {digest[:16]}... matches none; "
                "nothing written",
                file=path,
            )
        got[source.name] = data
    # the data files are needed; a description (.names, .doc) is welcome
    needed = [s for s in expected.values() if not s.name.endswith((".names", ".doc"))]
    missing = [s.name for s in needed if s.name not in got]
    if missing:
        raise DataError(f"{name} also needs {', '.join(missing)}; nothing written")
    return _write(data_dir, name, got)
