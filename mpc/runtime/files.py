"""Private files: what one party holds is written for its owner's eyes only.

A party's private input, its report and ledger, a learned tree, a released table, a CDBS
database and every secret key are private: each is created with mode 0600 and each folder
made for them with mode 0700, whatever the umask. Public material (a deployment file, a
``NAME.public`` key) keeps the usual modes.

::

    from mpc.runtime.files import private_dir, write_private

    private_dir(out / "data", tighten=True)                  # 0700, even if it existed
    write_private(out / "data" / "site1.json", json.dumps(doc))   # 0600, atomic

:func:`write_private` writes a temporary file next to the target and renames it into place, so
a reader never sees half a file and a symbolic link at the target is replaced, never written
through. :func:`open_private` is the streaming form (a CSV writer, a log a child process
writes to): it opens the path itself, refusing a symbolic link. A path that cannot be written
that way raises :class:`~mpc.errors.ConfigError` naming it.

Output paths follow one rule: missing parent folders are created (mode 0700) when the file is
written. :func:`check_output` applies that rule ahead of time, so that a command refuses a path
it could not write before it does any work (``mpc`` checks every output option that way).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path
from typing import IO, Any, Literal, overload

from mpc.errors import ConfigError

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "OUTPUT_RULE",
    "check_output",
    "open_private",
    "private_dir",
    "write_private",
]

#: a private file: read and written by its owner only
FILE_MODE = 0o600
#: a folder of private files: listed and entered by its owner only
DIR_MODE = 0o700

#: the rule for the folders of an output path, as the option help states it
OUTPUT_RULE = "missing parent folders are created"

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def private_dir(path: str | Path, *, tighten: bool = False) -> Path:
    """Make folder ``path`` and its missing parents with mode 0700; return it.

    A folder that already exists keeps its mode, unless ``tighten``: then ``path`` itself (not
    its parents) is set to 0700 too. Use ``tighten`` only for a folder the program owns
    entirely (a deployment's ``data`` or ``keys``), never for one the user merely named as a
    place to write into (the current directory, a home folder).
    """
    path = Path(path)
    missing = []
    for p in (path, *path.parents):
        if p.is_dir():
            break
        missing.append(p)
    for p in reversed(missing):
        try:
            os.mkdir(p, DIR_MODE)
        except FileExistsError:
            if not p.is_dir():
                raise ConfigError(f"{p} exists and is not a folder") from None
            continue
        except OSError as exc:
            raise ConfigError(f"cannot make folder {p}: {exc.strerror}") from None
        os.chmod(p, DIR_MODE)  # exactly 0700: mkdir's mode is filtered by the umask
    if tighten and path.stat().st_mode & 0o777 != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


@overload
def open_private(path: str | Path, mode: Literal["w", "a"] = "w", **kwargs: Any) -> IO[str]: ...
@overload
def open_private(path: str | Path, mode: Literal["wb", "ab"], **kwargs: Any) -> IO[bytes]: ...
def open_private(path: str | Path, mode: str = "w", **kwargs: Any) -> IO[Any]:
    """Open ``path`` for writing as a private file (mode 0600) and return the file object.

    ``mode`` is ``"w"``/``"wb"`` (truncate) or ``"a"``/``"ab"`` (append); ``kwargs`` go to
    :func:`open` (``encoding``, ``newline``). A missing file is created with mode 0600, an
    existing one is set to 0600; a symbolic link at ``path`` is refused. Missing parent
    folders are made with mode 0700.
    """
    if mode not in ("w", "wb", "a", "ab"):
        raise ValueError(f"mode must be 'w', 'wb', 'a' or 'ab', got {mode!r}")
    path = Path(path)
    private_dir(path.parent)
    flags = _WRITE_FLAGS | (os.O_APPEND if mode.startswith("a") else os.O_TRUNC)
    fd = _open(path, flags)
    try:
        os.fchmod(fd, FILE_MODE)
        return open(fd, mode, **kwargs)  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


def write_private(path: str | Path, data: str | bytes, *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` as a private file (mode 0600), atomically; return the path.

    The text or bytes go to a fresh temporary file in the same folder, which then replaces
    ``path`` in one rename: readers see the old file or the whole new one, and a symbolic link
    at ``path`` is replaced rather than followed. Missing parent folders are made with mode
    0700.
    """
    path = Path(path)
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = _open(tmp, _WRITE_FLAGS | os.O_EXCL)
    try:
        os.fchmod(fd, FILE_MODE)
        with open(fd, "wb", closefd=False) as fh:
            fh.write(data.encode(encoding) if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
    return path


def _open(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(
                f"refusing to write {path}: it is a symbolic link; remove it or give another path"
            ) from None
        if exc.errno in (errno.EISDIR, errno.EACCES, errno.EPERM, errno.ENOENT, errno.EROFS):
            raise ConfigError(f"cannot write {path}: {exc.strerror}") from None
        raise


def check_output(path: str | Path, *, kind: str = "file", option: str | None = None) -> None:
    """Raise :class:`~mpc.errors.ConfigError` unless ``path`` can be written as ``kind``:
    ``"file"``, ``"folder"`` or ``"either"`` (a file or a folder). Nothing is left behind.

    Missing parent folders are fine (:data:`OUTPUT_RULE`: they are created when the output is
    written); the nearest folder that exists must be one this process can write in. An
    existing folder where a file is to be written (or a file where a folder is) is refused.
    The message is one line naming ``option`` (``"--report"``) and the path. Whether a file
    can be made is tried (an empty file, removed at once), not read from the modes alone."""
    if kind not in ("file", "folder", "either"):
        raise ValueError(f"kind must be 'file', 'folder' or 'either', got {kind!r}")
    shown = f"{option} {path}" if option else str(path)
    target = Path(os.path.abspath(path))
    if target.is_dir():
        if kind == "file":
            raise ConfigError(f"{shown}: is a folder; give a file name to write")
        _check_writable_folder(target, shown)
        return
    if os.path.lexists(target) and kind == "folder":
        raise ConfigError(f"{shown}: exists and is not a folder; give a folder to write into")
    for folder in target.parents:
        if folder.is_dir():
            _check_writable_folder(folder, shown)
            return
        if os.path.lexists(folder):
            raise ConfigError(
                f"{shown}: {folder} is a file, not a folder; give a path whose folders exist "
                "or can be created"
            )


def _check_writable_folder(folder: Path, shown: str) -> None:
    """Refuse ``folder`` unless a file can be made in it: the modes first, then a try (an
    empty file of a random name, removed at once), since some folders refuse files whatever
    their modes say (/proc and /sys, even to root)."""
    why = None
    if not os.access(folder, os.W_OK | os.X_OK):
        why = "permission denied"
    else:
        probe = folder / f".mpc-write-check-{secrets.token_hex(6)}"
        try:
            os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except OSError as exc:
            why = os.strerror(exc.errno or 0).lower() if exc.errno else str(exc)
        else:
            with contextlib.suppress(OSError):
                probe.unlink()
            return
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        why = "it is on a read-only file system"
    raise ConfigError(f"{shown}: cannot write in {folder} ({why}); give a writable path")
