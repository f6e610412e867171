"""Saved models: one versioned JSON file per party, bound to its training run by digests.

A trained model is kept as one file per party that holds a part of it (a PPID3 site keeps
only its own interior nodes; the class site keeps the leaves; a plain learner keeps the whole
tree in one file)::

    {
      "format": "mpc-model",        # what this file is
      "version": 1,                 # of this layout; a newer file is refused with a clear error
      "system": "ppid3",            # which learner wrote it
      "party": "site2",             # whose part (null for a plain model)
      "model_id": "9f2c...",        # one value per training run, the same in every part
      "parts": {"site1": "ab..", "site2": "cd..", ...},   # digest of every part of the run
      "body": {...},                # the part itself (the learner's own layout)
      "digest": "..."               # SHA-256 of everything above
    }

Two checks protect a model, both made before it classifies anything:

* :func:`read_model` recomputes ``digest``: a file edited by hand (a node's attribute, a
  leaf's class) no longer matches and is refused, naming the file.
* ``parts`` is the same in every part of one run and holds the digest of every part's
  ``body``: the parties compare ``model_id`` and ``parts`` before classifying (each sends its
  own), so a part taken from another training run, or one edited and re-digested, is refused
  by the others. The digests are of bodies that contain random node ids, so they reveal
  nothing of the nodes.

A model file is private (mode 0600, :mod:`mpc.runtime.files`): a site's part names its attributes
and the values it splits on.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpc.errors import ConfigError
from mpc.runtime.files import write_private

__all__ = [
    "FORMAT",
    "VERSION",
    "ModelError",
    "SavedModel",
    "body_digest",
    "new_model_id",
    "read_model",
    "write_model",
]

FORMAT = "mpc-model"
VERSION = 1


class ModelError(ConfigError):
    """A model file is missing, malformed, edited, from another run or of another learner."""


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def body_digest(body: Any) -> str:
    """SHA-256 (hex) of a part's body in canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(_canonical(body)).hexdigest()


def new_model_id() -> str:
    """A fresh random model id (128 bits from the OS)."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class SavedModel:
    """One model file, read and checked."""

    system: str
    party: str | None
    model_id: str
    body: dict[str, Any]
    parts: dict[str, str] = field(default_factory=dict)
    path: Path | None = None

    @property
    def digest(self) -> str:
        """The digest of this part's body, as ``parts`` records it."""
        return body_digest(self.body)


def _document(model: SavedModel) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "system": model.system,
        "party": model.party,
        "model_id": model.model_id,
        "parts": dict(sorted(model.parts.items())),
        "body": model.body,
    }
    doc["digest"] = hashlib.sha256(_canonical(doc)).hexdigest()
    return doc


def write_model(path: str | Path, model: SavedModel) -> Path:
    """Write ``model`` to ``path`` (private: 0600, atomic). A model of one part may leave
    ``parts`` empty: it then records its own digest."""
    if not model.parts:
        model = SavedModel(
            model.system, model.party, model.model_id, model.body,
            {model.party or "model": model.digest},
        )  # fmt: skip
    elif model.parts.get(model.party or "model") != model.digest:
        raise ModelError(f"the part of {model.party!r} is not the one its run recorded")
    return write_private(path, json.dumps(_document(model), indent=1, ensure_ascii=False) + "\n")


def read_model(path: str | Path, system: str | tuple[str, ...]) -> SavedModel:
    """Read and check a model file written by :func:`write_model` for ``system`` (one name or
    several); raises :class:`ModelError` naming the file and what is wrong."""
    path = Path(path)
    systems = (system,) if isinstance(system, str) else tuple(system)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"model file {path} does not exist") from None
    except IsADirectoryError:
        raise ModelError(f"model file {path} is a directory") from None
    except OSError as exc:
        raise ModelError(f"model file {path}: cannot read it: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"model file {path} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelError(f'{path} is not a model file (no "format": "{FORMAT}")')
    version = doc.get("version")
    if version != VERSION:
        raise ModelError(
            f"model file {path} has version {version!r}; this program reads version {VERSION}"
        )
    if doc.get("system") not in systems:
        raise ModelError(
            f"model file {path} holds a {doc.get('system')!r} model, not "
            + " or ".join(repr(s) for s in systems)
        )
    stored = doc.pop("digest", None)
    if stored != hashlib.sha256(_canonical(doc)).hexdigest():
        raise ModelError(
            f"model file {path} was changed after training (its digest does not match its "
            "content); use the file as training wrote it"
        )
    body, parts, party = doc.get("body"), doc.get("parts"), doc.get("party")
    model_id = doc.get("model_id")
    if (
        not isinstance(body, dict)
        or not isinstance(parts, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in parts.items())
        or not isinstance(model_id, str)
        or not (party is None or isinstance(party, str))
    ):
        raise ModelError(f"model file {path}: malformed fields")
    model = SavedModel(str(doc["system"]), party, model_id, body, parts, path)
    if parts.get(party or "model") != model.digest:
        raise ModelError(f"model file {path}: its body is not the part its run recorded")
    return model
