"""The party program of ``dot-product``: secure dot products of Alice's and Bob's vectors
(:func:`protocols.primitives.dot_product.dot_products`) by any method of
:data:`~protocols.primitives.dot_product.METHODS`, the product revealed to Alice; a method's
helper (the commodity server) deals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto.paillier import PAILLIER_KEY_BITS
from mpc.errors import ConfigError
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.party import Party
from parties.own_data import load_party_data
from parties.own_party import OwnParty
from parties.params import AtLeast, Params, option
from protocols.primitives.dot_product import METHODS, dot_products

__all__ = ["TAG", "DotParams", "check", "run"]

TAG = "dot-product"


@dataclass(frozen=True)
class DotParams(Params):
    """The public parameters of a run (deployment file): the method and the shape
    ``(m, n, l)`` of Alice's ``m x n`` and Bob's ``n x l`` matrices."""

    method: str = option("dealer", key="method", choices=METHODS)
    m: int = option(1, key="m", check=AtLeast(1))
    n: int = option(1000, key="n", check=AtLeast(1))
    l: int = option(1, key="l", check=AtLeast(1))  # noqa: E741 - the paper's name
    key_bits: int = option(PAILLIER_KEY_BITS, key="key_bits", check=AtLeast(2))

    def check(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"protocol params 'method' must be one of {list(METHODS)}")


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    p = DotParams.from_deployment(cfg.params, str(cfg.path))
    options: dict[str, Any] = {
        "method": p.method,
        "shape": (p.m, p.n, p.l),
        "reveal_to": "alice",
        "tag": TAG,
        "key_bits": p.key_bits,
    }
    vectors = _input(p, me)
    await party.barrier(f"{TAG}/ready")  # every input loaded: the timed phase starts together
    if vectors is None:
        await dot_products(party, None, **options)
        return None
    out = await dot_products(party, vectors if me.role == "alice" else vectors.T, **options)
    if me.role == "alice" and out is not None:
        return {"product": out.tolist()}
    return None  # Bob holds a share of zero: he learns nothing


def _input(p: DotParams, me: OwnParty) -> np.ndarray | None:
    """Alice's or Bob's vectors (the dealer holds none)."""
    if me.role not in ("alice", "bob"):
        return None
    want = (p.m, p.n) if me.role == "alice" else (p.l, p.n)
    return _vectors(load_party_data(me), want, me)


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """This party's vectors, read before it waits for anyone."""
    _input(DotParams.from_deployment(cfg.params, str(cfg.path)), me)


def _vectors(data: dict[str, Any], shape: tuple[int, int], me: OwnParty) -> np.ndarray:
    try:
        vectors = np.array(data["vectors"], dtype=np.uint64)
    except (KeyError, TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"party {me.name!r}: data file {me.data} needs `vectors`, a list of lists of "
            "integers in [0, 2^64)"
        ) from None
    if vectors.shape != shape:
        raise ConfigError(
            f"party {me.name!r}: data file {me.data} holds vectors of shape {vectors.shape}, "
            f"the deployment says {shape}"
        )
    return vectors
