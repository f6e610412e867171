"""A party's own arrays set aside on its own disk between uses, so that its memory holds one
range of its rows at a time however many rows it has.

A site whose table is split into ranges of rows (:class:`protocols.ppid3.level_products.
RowRange`) works on one range after another: what it keeps of a range between two uses and
cannot make again (its shares of each node's rows, the masked columns a partner sent it)
waits in a :class:`Spill`, a folder only this process can read (mode ``0700``, made by
:func:`tempfile.mkdtemp` under ``$TMPDIR`` or the system's temporary folder), and is read
back when the range is next worked on. Each array is one ``.npy`` file written and read
without pickle (numeric dtypes only); the folder is removed when the run ends, whether it
ended well or not (:meth:`Spill.close`).

What is on the disk is the party's own: its additive shares and the masked columns it
received, each uniform on its own, as in its memory. Nothing in a spill is sent to anyone.
Network-free.

References: none.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from mpc.errors import ConfigError, ProtocolError

__all__ = ["Spill"]


class Spill:
    """A private folder of named arrays: :meth:`put`, :meth:`get`, :meth:`drop`; bytes
    written and read are counted (:attr:`written`, :attr:`read`)."""

    def __init__(self, under: str | Path | None = None) -> None:
        try:
            self.folder = Path(tempfile.mkdtemp(prefix="mpc-rows-", dir=under))
        except OSError as e:
            raise ConfigError(f"no folder for a site's rows in ranges under {under}: {e}") from e
        self._names: dict[str, Path] = {}
        self._files = 0
        self.written = 0
        self.read = 0

    def __repr__(self) -> str:
        return f"Spill({str(self.folder)!r}, {len(self._names)} arrays)"

    def __contains__(self, name: str) -> bool:
        return name in self._names

    def put(self, name: str, array: np.ndarray) -> None:
        """Write ``array`` under ``name`` (replacing what was there)."""
        if array.dtype.kind not in "buif":
            raise ProtocolError(f"a spilled array holds numbers, not {array.dtype}")
        path = self._names.get(name)
        if path is None:
            path = self.folder / f"{self._files}.npy"
            self._files += 1
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            np.save(f, array, allow_pickle=False)
        self._names[name] = path
        self.written += array.nbytes

    def get(self, name: str) -> np.ndarray:
        """The array written under ``name``."""
        path = self._names.get(name)
        if path is None:
            raise ProtocolError(f"nothing was set aside as {name!r}")
        out = np.load(path, allow_pickle=False)
        self.read += out.nbytes
        return out

    def drop(self, name: str) -> None:
        """Forget ``name`` and remove its file (nothing if there is none)."""
        path = self._names.pop(name, None)
        if path is not None:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the folder and everything in it."""
        self._names.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
