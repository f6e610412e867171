"""Every system the launcher can run, by name: the one list of them (``mpc run``, ``mpc
deploy``, :func:`parties.api.run_system`). Each system's party program is in
:mod:`parties.programs.registry`."""

from __future__ import annotations

from mpc.errors import ConfigError
from parties.systems.base import System
from parties.systems.cdbs_load import CdbsLoad
from parties.systems.cdtl import Cdtl
from parties.systems.cdtl_sessions import CdtlClassify, CdtlOutsource
from parties.systems.dot_product import DotProduct
from parties.systems.hybrid import Hybrid
from parties.systems.hybrid_classify import HybridClassify
from parties.systems.is_r_empty import IsREmpty
from parties.systems.ppid3 import Ppid3
from parties.systems.ppid3_classify import Ppid3Classify
from parties.systems.psi import Psi
from parties.systems.psi_ca import PsiCa
from parties.systems.secure_argmax import SecureArgmax
from parties.systems.secure_sum import SecureSum

__all__ = ["SYSTEMS", "get_system"]

#: every system, by name, in the order ``mpc run --help`` lists them
SYSTEMS: dict[str, System] = {
    s.name: s
    for s in (
        SecureSum(),
        IsREmpty(),
        PsiCa(),
        Psi(),
        Ppid3(),
        Ppid3Classify(),
        DotProduct(),
        SecureArgmax(),
        Hybrid(),
        HybridClassify(),
        Cdtl(),
        CdtlOutsource(),
        CdtlClassify(),
        CdbsLoad(),
    )
}


def get_system(name: str) -> System:
    """The system ``name``, or a one-line error naming the systems."""
    try:
        return SYSTEMS[name]
    except KeyError:
        raise ConfigError(f"unknown system {name!r}; known systems: {sorted(SYSTEMS)}") from None
