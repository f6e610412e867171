"""Saved models: one versioned JSON file per party, the parts of one training run bound
together by commitments.

A trained model is kept as one file per party that holds a part of it (a PPID3 site keeps
only its own interior nodes; the class site keeps the leaves; a plain learner keeps the whole
tree in one file)::

    {
      "format": "mpc-model",        # what this file is
      "version": 2,                 # of this layout; another version is refused, clearly
      "system": "ppid3",            # which learner wrote it
      "party": "site2",             # whose part (null for a plain model)
      "model_id": "9f2c...",        # one value per training run, the same in every part
      "parts": {"site1": "ab..", "site2": "cd..", ...},   # a commitment to every part
      "opening": "e4...",           # this part's opening of its own commitment (secret)
      "body": {...},                # the part itself (the learner's own layout)
      "checksum": "..."             # SHA-256 of everything above
    }

**Commitments, not digests.** A part's commitment is ``SHA-256(domain || opening || body)``
with a fresh 256-bit ``opening`` from the OS that never leaves the part's file
(:func:`commit_part`): *hiding* — another party holding the commitment cannot test a guess of
the body against it (a bare hash of a body, whose only unpredictable parts are node ids that
other sites know, can be: a site could recover another's splits by trying them); *binding* —
no other body opens it (SHA-256's collision resistance).

What the checks detect, and against whom:

* a **part of a multi-party model** (PPID3, Hybrid-ID3): :func:`read_model` checks that the
  body opens this part's own commitment, and before classifying the parties compare
  ``model_id`` and ``parts`` (each sends its own). A part edited by hand, from another
  training run, or edited with its commitment recomputed, is refused: its commitment no
  longer matches the one every other party holds. This holds against anyone who cannot also
  change every other party's file.
* a **single-part model** (``mpc train --model-out``, the cdtl client's model): the body must
  open its own commitment and ``checksum`` must match, which detects a damaged file and an
  edit that did not recompute them. It is not a signature: whoever can write the file can
  recompute both. Keep model files where only their owner can write (they are written with
  mode 0600, :mod:`mpc.runtime.files`).

A model file is private: a site's part names its attributes and the values it splits on, and
its opening would let whoever holds the commitment check guesses of the body.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpc.crypto import randomness
from mpc.errors import ConfigError
from mpc.learners.tree import room_for_deep_trees
from mpc.runtime.files import write_private

__all__ = [
    "FORMAT",
    "VERSION",
    "ModelError",
    "PartCommitment",
    "SavedModel",
    "commit_part",
    "new_model_id",
    "opens_commitment",
    "read_model",
    "write_model",
]

FORMAT = "mpc-model"
VERSION = 2
#: bytes of a commitment's opening (from the OS)
OPENING_BYTES = 32
_COMMIT_DOMAIN = b"mpc-trees/model-part/v2\0"


class ModelError(ConfigError):
    """A model file is missing, malformed, edited, from another run or of another learner."""


def _canonical(value: Any) -> bytes:
    with room_for_deep_trees():  # a tree nests one level per split
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode()


@dataclass(frozen=True)
class PartCommitment:
    """A commitment to a part's body (sent to the other parties) and its opening (kept in
    the part's own file, never sent)."""

    commitment: str
    opening: str

    def __repr__(self) -> str:  # the opening is this party's secret
        return f"PartCommitment(commitment={self.commitment[:12]}…, opening=<hidden>)"


def _commitment(body: Any, opening: bytes) -> str:
    return hashlib.sha256(_COMMIT_DOMAIN + opening + _canonical(body)).hexdigest()


def commit_part(body: Any) -> PartCommitment:
    """A fresh hiding, binding commitment to ``body`` (canonical JSON: sorted keys, no
    spaces): ``SHA-256(domain || opening || body)`` with a 256-bit opening from the OS."""
    opening = randomness.token_bytes(OPENING_BYTES, "model/commitment")
    return PartCommitment(_commitment(body, opening), opening.hex())


def opens_commitment(body: Any, opening: str, commitment: str) -> bool:
    """Whether ``opening`` opens ``commitment`` to ``body``."""
    try:
        raw = bytes.fromhex(opening)
    except (TypeError, ValueError):
        return False
    if len(raw) != OPENING_BYTES:
        return False
    return hmac.compare_digest(_commitment(body, raw), commitment)


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
    #: this part's opening of ``parts[party]`` (hex); a single-part model may leave it to
    #: :func:`write_model`
    opening: str | None = None
    path: Path | None = None

    def __repr__(self) -> str:  # the body and the opening are this party's secrets
        return (
            f"SavedModel(system={self.system!r}, party={self.party!r}, "
            f"model_id={self.model_id[:12]!r}, parts={sorted(self.parts)})"
        )

    def opens(self) -> bool:
        """Whether this part's opening opens its own commitment to its body."""
        own = self.parts.get(self.party or "model")
        return (
            own is not None
            and self.opening is not None
            and opens_commitment(self.body, self.opening, own)
        )


def _document(model: SavedModel) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "system": model.system,
        "party": model.party,
        "model_id": model.model_id,
        "parts": dict(sorted(model.parts.items())),
        "opening": model.opening,
        "body": model.body,
    }
    doc["checksum"] = hashlib.sha256(_canonical(doc)).hexdigest()
    return doc


def write_model(path: str | Path, model: SavedModel) -> Path:
    """Write ``model`` to ``path`` (private: 0600, atomic). A model of one part may leave
    ``parts`` empty: it then commits to its own body."""
    if not model.parts:
        made = commit_part(model.body)
        model = dataclasses.replace(
            model, parts={model.party or "model": made.commitment}, opening=made.opening
        )
    elif not model.opens():
        raise ModelError(f"the part of {model.party!r} does not open the commitment its run "
                         "recorded")  # fmt: skip
    return write_private(path, json.dumps(_document(model), indent=1, ensure_ascii=False) + "\n")


def read_model(path: str | Path, system: str | tuple[str, ...]) -> SavedModel:
    """Read and check a model file written by :func:`write_model` for ``system`` (one name or
    several); raises :class:`ModelError` naming the file and what is wrong."""
    path = Path(path)
    systems = (system,) if isinstance(system, str) else tuple(system)
    try:
        with room_for_deep_trees():  # a tree nests one level per split
            doc = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise ModelError(f"model file {path} nests deeper than any tree it could hold") from None
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
        older = (
            "; it was written by an older release, whose part digests other parties could "
            "test guesses against: train again to get version 2"
            if version == 1
            else ""
        )
        raise ModelError(
            f"model file {path} has version {version!r}; this program reads version {VERSION}"
            + older
        )
    if doc.get("system") not in systems:
        raise ModelError(
            f"model file {path} holds a {doc.get('system')!r} model, not "
            + " or ".join(repr(s) for s in systems)
        )
    stored = doc.pop("checksum", None)
    if stored != hashlib.sha256(_canonical(doc)).hexdigest():
        raise ModelError(
            f"model file {path} was changed after training (its checksum does not match its "
            "content); use the file as training wrote it"
        )
    body, parts, party = doc.get("body"), doc.get("parts"), doc.get("party")
    model_id, opening = doc.get("model_id"), doc.get("opening")
    if (
        not isinstance(body, dict)
        or not isinstance(parts, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in parts.items())
        or not isinstance(model_id, str)
        or not isinstance(opening, str)
        or not (party is None or isinstance(party, str))
    ):
        raise ModelError(f"model file {path}: malformed fields")
    model = SavedModel(str(doc["system"]), party, model_id, body, parts, opening, path)
    if not model.opens():
        raise ModelError(
            f"model file {path}: its body does not open the commitment its run recorded (it "
            "was changed after training); use the file as training wrote it"
        )
    return model
