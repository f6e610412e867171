"""What Alice and Bob settle around Hybrid-ID3's tree when each brings its own file: the run's
mode, the public setup of Teng & Du's Section 3.1, and the identity of a saved model.

Teng & Du assume that Alice and Bob know each other's attribute names and domains (the binary
code of randomized response and the estimates of step 4a need them) and that both end with
the tree. When each party reads its own CSV, the deployment file holds only the public names
(each party's ``columns``, the class column, the groups, the parameters); the domains are in
the files. These steps open them, and nothing else:

1. **mode** (:func:`agree_mode`): Alice and Bob each tell every peer (the dealer too) whether
   this run trains or classifies with a saved model; all three check that they agree.
2. **setup** (:func:`agree_setup`): each party sends the other the domains of its own columns
   (the values seen in its training rows, sorted; for a binned continuous column its bin
   labels, e.g. ``<=37.5``; Bob's include the class labels) and a digest of the public
   parameters as its deployment file gives them. Both build the same
   :class:`~protocols.hybrid.hybrid_id3.HybridSetup`. A differing digest stops both: their
   deployment files disagree.
3. **model parts** (:func:`bind_parts`, after training): Alice draws a fresh model id and sends
   it to Bob; each sends the other a commitment to its part's body
   (:func:`mpc.learners.model_file.commit_part`: hiding, so the other cannot test guesses of
   the body against it, and binding). Each part records the model id and both commitments (and
   its own opening), so a part from another training run, or one edited, with its commitment
   recomputed or not, is refused.
4. **model check** (:func:`check_parts`, before classifying): each sends the other its part's
   model id and recorded commitments; they must be equal.

What each party learns (ledger): ``hybrid/domains`` — the other's domains, as Teng & Du's
setting has it (the estimates of every candidate need them; the tree then shows those of its
split attributes, every value of which gets a child); for a continuous column the domain is its
bin labels, hence the other party's cut points (quantiles of its training rows);
``hybrid/model`` — the model id and the two commitments (uniform values that say nothing about
the data, and against which no guess can be tested without the opening). The dealer learns the
mode only. No record id and no row of either file is
sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from mpc.errors import ConfigError, ProtocolError
from mpc.learners.model_file import ModelError, PartCommitment, commit_part, new_model_id
from mpc.runtime.expect import ANY, hex_text, list_of, mapping, record, text
from mpc.runtime.party import Party
from mpc.runtime.view import declared, public, uniform
from protocols.hybrid.hybrid_id3 import ALICE, BOB, HybridSetup

#: what a party receives
MODE = public("hybrid/mode", "whether alice and bob train or classify")
SETUP = declared(
    "hybrid/setup",
    "the other party's domains (Teng & Du's setting) and a digest of its public parameters",
    expect=record({"domains": mapping(text(), list_of(ANY)), "public": ANY}),
)
MODEL = uniform(
    "hybrid/model",
    "the model id and the other party's commitment to its part (a hash with a secret opening)",
    tokens=True,
)
MODEL_CHECK = public(
    "hybrid/model-check",
    "the model id and commitments the other party's saved part records: the same as the "
    "receiver's own part holds, to compare before classifying",
)

__all__ = [
    "CLASSIFY",
    "MODE",
    "MODEL",
    "MODEL_CHECK",
    "MODES",
    "SETUP",
    "TRAIN",
    "agree_mode",
    "agree_setup",
    "bind_parts",
    "check_parts",
    "public_digest",
]

TRAIN, CLASSIFY = "train", "classify"
MODES = (TRAIN, CLASSIFY)
#: the parties that choose the mode (the dealer follows)
_DECIDERS = (ALICE, BOB)


def public_digest(params: Mapping[str, Any]) -> str:
    """SHA-256 of the public parameters in canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


async def agree_mode(party: Party, mode: str | None, *, tag: str = "hybrid/mode") -> str:
    """Step 1: Alice and Bob pass their ``mode`` (:data:`TRAIN` or :data:`CLASSIFY`), the
    dealer ``None``. Returns the agreed mode; raises :class:`ConfigError` at every party when
    Alice and Bob differ."""
    me = party.name
    if me in _DECIDERS and mode not in MODES:
        raise ConfigError(f"{me}: the mode must be one of {MODES}, got {mode!r}")
    modes = {me: mode} if me in _DECIDERS else {}
    with party.phase(tag):
        if me in _DECIDERS:
            await party.broadcast(tag, mode)
        for sender in _DECIDERS:
            if sender == me:
                continue
            got = await party.recv(sender, tag, MODE)
            if got not in MODES:
                raise ProtocolError(f"{sender} sent a malformed mode at {tag}")
            modes[sender] = got
        if modes[ALICE] != modes[BOB]:
            what = {TRAIN: "trains", CLASSIFY: "classifies with a saved model (--model)"}
            raise ConfigError(
                f"alice {what[str(modes[ALICE])]} but bob {what[str(modes[BOB])]}; start both "
                "with --model (or a `model` entry) to classify, or neither to train"
            )
    return str(modes[ALICE])


async def agree_setup(
    party: Party,
    *,
    attributes: Sequence[tuple[str, str]],
    class_name: str,
    groups: Mapping[str, Sequence[Sequence[str]]],
    theta: float,
    code: str,
    domains: Mapping[str, Sequence[str]],
    public: Mapping[str, Any],
    tag: str = "hybrid/setup",
) -> HybridSetup:
    """Step 2 at Alice or Bob: send the domains of this party's own columns (``domains``,
    Bob's with the class) and the digest of ``public`` (every public parameter as this party's
    deployment file gives it); receive the other's; return the common setup."""
    me = party.name
    other = BOB if me == ALICE else ALICE
    mine = public_digest(public)
    with party.phase(tag):
        own = {a: list(v) for a, v in domains.items()}
        await party.send(other, tag, {"domains": own, "public": mine})
        got = await party.recv(other, tag, SETUP)
        if got["public"] != mine:
            raise ConfigError(
                f"{me} and {other} read different public parameters (columns, class, groups, "
                "theta, code, window, method, depth or bins); give both the same deployment file"
            )
        theirs = got["domains"]
        expected = [a for a, o in attributes if o == other] + ([class_name] if other == BOB else [])
        if (
            not isinstance(theirs, dict)
            or sorted(theirs) != sorted(expected)
            or not all(
                isinstance(v, list)
                and v
                and all(isinstance(x, str) for x in v)
                and len(set(v)) == len(v)
                for v in theirs.values()
            )
        ):
            raise ProtocolError(
                f"{other} sent domains that are not one non-empty list of distinct values for "
                f"each of its columns {expected}"
            )
        party.ledger.record("hybrid/domains", {"from": other, "domains": theirs}, step=tag)
    both = {**own, **theirs}
    return HybridSetup(
        attributes=tuple((str(a), str(o)) for a, o in attributes),
        class_name=class_name,
        domains=both,
        groups={p: [list(g) for g in gs] for p, gs in groups.items()},
        theta=theta,
        code=code,
    )


async def bind_parts(
    party: Party, body: Mapping[str, Any], *, tag: str = "hybrid/model"
) -> tuple[str, dict[str, str], PartCommitment]:
    """Step 3 at Alice or Bob, once the tree is built: returns the model id (drawn by Alice),
    the commitments to both parts' bodies, ``{"alice": ..., "bob": ...}``, and this party's
    own commitment with its opening, for :class:`mpc.learners.model_file.SavedModel`."""
    me = party.name
    other = BOB if me == ALICE else ALICE
    made = commit_part(body)
    mine = made.commitment
    with party.phase(tag):
        if me == ALICE:
            model_id = new_model_id()
            await party.send(other, tag, {"model_id": model_id, "commitment": mine})
            got = await party.recv(other, tag, MODEL, expect=record({"commitment": hex_text()}))
        else:
            form = record({"commitment": hex_text(), "model_id": hex_text()})
            got = await party.recv(other, tag, MODEL, expect=form)
            model_id = str(got["model_id"])
            await party.send(other, tag, {"commitment": mine})
        parts = {me: mine, other: str(got["commitment"])}
        parts = dict(sorted(parts.items()))
        party.ledger.record("hybrid/model", {"model_id": model_id, "parts": parts}, step=tag)
    return model_id, parts, made


async def check_parts(
    party: Party, model_id: str, parts: Mapping[str, str], *, tag: str = "hybrid-classify/model"
) -> None:
    """Step 4 at Alice or Bob: this party's saved part has ``model_id`` and ``parts``; the
    other's must have the same. Raises :class:`mpc.learners.model_file.ModelError` at both
    otherwise."""
    me = party.name
    other = BOB if me == ALICE else ALICE
    with party.phase(tag):
        await party.send(other, tag, {"model_id": model_id, "parts": dict(parts)})
        got = await party.recv(other, tag, MODEL_CHECK)
        if (
            not isinstance(got, dict)
            or not isinstance(got.get("model_id"), str)
            or not isinstance(got.get("parts"), dict)
        ):
            raise ProtocolError(f"{other} sent a malformed model check at {tag}")
        party.ledger.record("hybrid/model", {"model_id": got["model_id"]}, step=tag)
        if got["model_id"] != model_id or got["parts"] != dict(parts):
            raise ModelError(
                f"the model parts of alice and bob come from different training runs (or one "
                f"was edited): {me}'s part has model id {model_id[:12]}…, {other}'s "
                f"{str(got['model_id'])[:12]}…; give each party its part of the same run"
            )
