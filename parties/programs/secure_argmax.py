"""The party program of ``secure-argmax``: two parties hold additive shares of a ``rows x
candidates`` table of keys (their private input files) and find the first largest key of
each row with :func:`protocols.primitives.secure_comparison.secure_argmax`; the winners are
opened to the first. The triples come from the helper the deployment names
(:func:`parties_of`): the ``dealer``, a third site, or oblivious transfer between the two."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.errors import ConfigError
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import load_party_data
from parties.own_party import OwnParty
from parties.params import AtLeast, Params, option
from protocols.engine.preprocessing import PREPROCESSING, preprocessing_of
from protocols.primitives.secure_comparison import secure_argmax

__all__ = ["TAG", "ArgmaxParams", "check", "parties_of", "run"]

TAG = "compare"
#: the tag prefix of the pair's requests for triples (the dealing party serves them)
REQUESTS = "compare/req"


@dataclass(frozen=True)
class ArgmaxParams(Params):
    """The public parameters of a run (deployment file): the table's shape, and whether the
    keys are fractions (numerators and denominators)."""

    rows: int = option(100, key="rows", check=AtLeast(1))
    candidates: int = option(10, key="candidates", check=AtLeast(1))
    fractions: bool = option(False, key="fractions")
    helper: str = option("dealer", key="helper", choices=PREPROCESSING)


def parties_of(helper: str) -> tuple[str, str, str | None]:
    """The two parties that hold the shares and the one that deals (None: none deals)."""
    if helper == "sites":
        return "site1", "site2", "site3"
    return "p0", "p1", "dealer" if helper == "dealer" else None


def _input(
    p: ArgmaxParams, me: OwnParty, p0: str, p1: str
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """This party's shares of the keys (and of the denominators), if it holds any."""
    if me.name not in (p0, p1):
        return None, None
    shape = (p.rows, p.candidates)
    data = load_party_data(me)
    keys = _shares(data, "keys", shape, me)
    return keys, _shares(data, "denominators", shape, me) if p.fractions else None


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """This party's shares, read before it waits for anyone."""
    p = ArgmaxParams.from_deployment(cfg.params, str(cfg.path))
    p0, p1, _ = parties_of(p.helper)
    _input(p, me, p0, p1)


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    p = ArgmaxParams.from_deployment(cfg.params, str(cfg.path))
    shape = (p.rows, p.candidates)
    p0, p1, _ = parties_of(p.helper)
    how = preprocessing_of(p.helper)
    keys, denominators = _input(p, me, p0, p1)
    await party.barrier(f"{TAG}/ready")  # every input loaded: the timed phase starts together
    with party.phase(TAG):
        if how.outside is not None and party.name == how.outside:
            dealt = await how.serve(party, [p0, p1], dtype=np.uint64, requests=REQUESTS)
            return {"dealt": dealt}
        winners = await how.beside(
            party,
            lambda dealing: secure_argmax(
                party, keys, shape=shape, dealing=dealing, pair=(p0, p1), tag=TAG,
                denominators=denominators, fractions=p.fractions, reveal_to=(p0,),
            ),
            requests=REQUESTS,
        )  # fmt: skip
    return None if winners is None else {"winners": winners.tolist()}


def _shares(data: dict[str, Any], key: str, shape: tuple[int, int], me: OwnParty) -> np.ndarray:
    try:
        out = np.array(data[key], dtype=np.uint64)
    except (KeyError, TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"party {me.name!r}: data file {me.data} needs `{key}`, its shares (integers in "
            "[0, 2^64)) of the table"
        ) from None
    if out.shape != shape:
        raise ConfigError(f"party {me.name!r}: `{key}` has shape {out.shape}, expected {shape}")
    return out
