"""Who makes the correlated randomness of PPID3's level driver (:mod:`protocols.ppid3.levels`):
the one registry of helpers, :data:`HELPERS`.

* ``sites`` — a third site deals each product between two (:mod:`protocols.ppid3.level_dealing`);
* ``dealer`` — a commodity server, an outside ``dealer`` process (the same module);
* ``ot`` — no one: each pair of sites by oblivious transfer (:mod:`protocols.ppid3.level_ot`).

Each is a :class:`~protocols.ppid3.level_dealing.Helper`: its name, its ``--help`` line, the
trust a run with it rests on, the sites it needs and the outside party it adds. Every
command line, deployment check, launcher and site program takes its choices from here, so a
new helper is a module with a :class:`~protocols.ppid3.level_dealing.Helper` and one entry
below.
"""

from __future__ import annotations

from mpc.errors import ConfigError
from protocols.ppid3.level_dealing import DEALER_HELPER, SITES_HELPER, Helper
from protocols.ppid3.level_ot import OT_HELPER

__all__ = [
    "HELPERS",
    "Helper",
    "classify_helper",
    "classify_trust",
    "default_helper",
    "helper_of",
]

#: the helpers by name, in the order ``--help`` lists them
HELPERS: dict[str, Helper] = {h.name: h for h in (SITES_HELPER, DEALER_HELPER, OT_HELPER)}


def helper_of(name: str) -> Helper:
    """The helper named ``name``, or a one-line error naming every helper."""
    try:
        return HELPERS[name]
    except KeyError:
        raise ConfigError(f"helper must be one of {list(HELPERS)}, got {name!r}") from None


def default_helper(k: int) -> str:
    """The helper of a run of ``k`` sites that names none: never an outside party; the first
    of :data:`HELPERS` that can serve ``k`` sites (a third site with three or more, oblivious
    transfer with two)."""
    for helper in HELPERS.values():
        if helper.outside is None and helper.min_sites <= k:
            return helper.name
    raise ConfigError(f"no helper serves {k} sites without an outside party")


def classify_helper(chosen: str | None, trained: str | None, k: int) -> str:
    """The helper of a classification without a path by ``k`` sites: the one ``chosen`` for
    it, else the one the tree was ``trained`` with (its model parts say), else the default
    (:func:`default_helper`); checked against ``k``."""
    name = chosen or trained or default_helper(k)
    helper = helper_of(name)
    helper.check(k)
    return name


def classify_trust(helper: str | None) -> str:
    """What classification rests on: Algorithm 8 (``helper`` None: each site learns which
    records reach its nodes), or, without a path, the pair's triples made by ``helper``."""
    if helper is None:
        return "semi-honest sites (Algorithm 8: each site learns which records reach its nodes)"
    return (
        f"{helper_of(helper).trust}; p0 and p1 do not collude "
        f"(classification without a path, --helper {helper})"
    )
