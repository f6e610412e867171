"""The party program of ``psi``: the private set intersection of one set per party, as
``--records common`` aligns record ids (:func:`protocols.primitives.record_alignment.align_records`
on the records every site holds). Each party learns which of its own elements every party
holds, and the sizes the alignment declares; its report (its own private file, sent to no
party) says how many, and their SHA-256 digest, by which the launcher of ``mpc run psi``
checks the run. The digest of guessable elements shows them to whoever can read the report
and guess: it is the party's own output, kept where its other output is, never a message."""

from __future__ import annotations

import hashlib
from typing import Any

from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import load_party_data
from parties.own_party import OwnParty
from parties.programs.psi_ca import elements_of
from protocols.primitives.record_alignment import align_records

__all__ = ["PHASE", "check", "common_digest", "run"]

#: the phase of the run (record alignment's own sub-phases inside)
PHASE = "record-alignment"


def common_digest(elements: list[str]) -> str:
    """SHA-256 of the sorted common elements, one per line: the launcher's check."""
    return hashlib.sha256("\n".join(sorted(elements)).encode()).hexdigest()


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """This party's set, read before it waits for anyone."""
    elements_of(load_party_data(me), me)


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    elements = elements_of(load_party_data(me), me)
    alignment = await align_records(party, elements, tag=PHASE, common=True)
    common = [elements[i] for i in alignment.order]
    return {"held": len(elements), "common": len(common), "digest": common_digest(common)}
