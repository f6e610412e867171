"""The party program of ``psi-ca``: the cardinality of the intersection of one set per party
(:func:`protocols.primitives.psi_ca.set_intersection_cardinality`), learned by the receiver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto.curve25519 import ELEMENT_BYTES, hash_to_curve
from mpc.errors import ConfigError
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import load_party_data
from parties.own_party import OwnParty
from parties.params import Params, option
from protocols.primitives.psi_ca import GroupInput, set_intersection_cardinality

__all__ = ["PHASES", "PsiParams", "check", "elements_of", "run"]

#: seconds of the party phases that make up one PSI-CA run (hashing, then the protocol)
PHASES = ("psi-ca/hash", "psi-ca")


@dataclass(frozen=True)
class PsiParams(Params):
    """The parameter of a PSI-CA run (deployment file: ``receiver``)."""

    receiver: str | None = option(
        None,
        flag="--receiver",
        metavar="NAME",
        key="receiver",
        help="the party that learns the intersection size (default: the last party)",
    )


def elements_of(data: dict[str, Any], me: OwnParty) -> list[str]:
    """The party's set from its data file (``elements``, distinct strings)."""
    elements = data.get("elements")
    if not isinstance(elements, list) or not all(isinstance(e, str) for e in elements):
        raise ConfigError(f"party {me.name!r}: data file {me.data} needs `elements`, a string list")
    if len(set(elements)) != len(elements):
        raise ConfigError(f"party {me.name!r}: data file {me.data} repeats an element")
    return elements


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """This party's set, read before it waits for anyone."""
    elements_of(load_party_data(me), me)


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    params = PsiParams.from_deployment(cfg.params, str(cfg.path))
    elements = elements_of(load_party_data(me), me)
    receiver = params.receiver or cfg.names[-1]
    if receiver not in cfg.names:
        raise ConfigError(f"protocol.params.receiver: {receiver!r} is not a party of {cfg.names}")
    with party.phase(PHASES[0]):
        hashed = np.frombuffer(
            b"".join(hash_to_curve(e.encode()) for e in elements), dtype=np.uint8
        ).reshape(-1, ELEMENT_BYTES)
    (counts,) = await set_intersection_cardinality(
        party, [GroupInput(receiver, [hashed], label="sets")], tag=PHASES[1]
    )
    return None if counts is None else int(counts.sum())
