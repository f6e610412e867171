"""Where the correlated randomness of a product between two parties comes from: the one
registry, :data:`PREPROCESSING`, of the three ways and the trust each rests on.

* ``sites`` — a third site deals each product between two (:mod:`protocols.engine.dealing`);
* ``dealer`` — a commodity server, an outside ``dealer`` process (the same module);
* ``ot`` — no one: each pair of parties by oblivious transfer
  (:mod:`protocols.engine.ot_dealing`).

Each is a :class:`Preprocessing`: its name, its ``--help`` line, the trust a run with it rests
on and who must not collude with whom, the sites it needs and the outside party it adds; its
:meth:`~Preprocessing.run` grows a tree with it (PPID3's level driver), its
:meth:`~Preprocessing.beside` runs a computation of ``p0`` and ``p1`` alone on it
(classification without a path, the secure argmax), and its :meth:`~Preprocessing.serve` is the
outside party's program. Every command line, deployment check, launcher and program takes its
choices from here, so a new kind is a class and one entry below. The ``--helper`` option
names one.

References: the three kinds' own modules: :mod:`protocols.engine.dealing` (a dealer, a third
site) and :mod:`protocols.engine.ot_dealing` (oblivious transfer).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import SeedStream
from mpc.errors import ConfigError
from mpc.runtime.party import Party
from protocols.engine.dealing import (
    DEALER,
    REQUESTS,
    Dealing,
    Rule,
    outside,
    run_beside,
    serve_level_dealer,
    serve_level_helper,
    third_site,
)
from protocols.engine.ot_dealing import OTDealing, ot_dealing
from protocols.engine.ring import Ring
from protocols.engine.session import Session
from protocols.engine.triples import Needs, Pool, extras_dealt, selects_dealt

__all__ = [
    "PREPROCESSING",
    "DealerPreprocessing",
    "LocalPreprocessing",
    "LocalTriples",
    "OTPreprocessing",
    "Preprocessing",
    "SitesPreprocessing",
    "classify_preprocessing",
    "classify_trust",
    "default_preprocessing",
    "preprocessing_of",
]

T = TypeVar("T")


class Preprocessing:
    """Who makes the correlated randomness of the products between two parties: one entry of
    :data:`PREPROCESSING`. ``name`` is its name on command lines and in deployment files,
    ``help`` a line for ``--help``, ``trust`` the assumption a run with it rests on,
    ``collusion`` who must not collude with whom and what a collusion would give
    (docs/leakage.md prints it), ``min_sites`` the sites it needs, ``outside`` the role of an
    outside party it adds (the dealer), or None.

    :meth:`run` is a site's part of a tree's growing: it makes the site's per-run
    :class:`~protocols.engine.dealing.Dealing` and grows the tree with it (``grow``),
    running beside it whatever the kind does for the other sites; :meth:`beside` is the same
    for a computation of ``p0`` and ``p1`` alone (their triples only); :meth:`serve` is the
    outside party's whole program."""

    name: str = ""
    help: str = ""
    trust: str = ""
    collusion: str = ""
    min_sites: int = 2
    outside: str | None = None

    def check(self, k: int) -> None:
        """Refuse a run of ``k`` sites this helper cannot serve."""
        if k < self.min_sites:
            raise ConfigError(
                f"--helper {self.name} needs at least {self.min_sites} sites, got {k}"
            )

    async def run(
        self,
        party: Party,
        view: Any,
        *,
        dtype: Any,
        tag: str,
        grow: Callable[[Dealing], Coroutine[Any, Any, tuple[Any, dict[str, int]]]],
    ) -> tuple[Any, dict[str, int]]:
        """Grow the tree at this site with this helper's dealing; returns the site's part of
        the tree and its cost counters."""
        raise NotImplementedError

    async def beside(
        self, party: Party, program: Callable[[Dealing], Awaitable[T]], *, requests: str
    ) -> T:
        """Run ``program(dealing)`` at this site with this helper making the triples of
        ``p0``'s and ``p1``'s products (:class:`protocols.engine.session.Session`: nothing
        is set up for products between other sites), and whatever this helper does for the
        other sites beside it; ``requests`` is the tag prefix of the dealing's requests (the
        outside party serves the same, :meth:`serve`)."""
        raise NotImplementedError

    async def serve(
        self, party: Party, sites: Sequence[str], *, dtype: Any, requests: str = REQUESTS
    ) -> int:
        """The outside party's program (a helper with an ``outside`` party only)."""
        raise ConfigError(f"--helper {self.name} has no outside party")

    def describe(self, cost: dict[str, Any]) -> str:
        """Where a run's randomness came from, for its summary (``cost``: the run's costs)."""
        return f"randomness from {self.name}"


class DealerPreprocessing(Preprocessing):
    """The commodity server: a ``dealer`` process deals every product."""

    name = "dealer"
    help = "a commodity server, a 'dealer' process that must collude with no site"
    trust = "semi-honest sites; the dealer (commodity server) colludes with no site"
    collusion = (
        "the dealer colludes with no site: with either site of a product it unmasks the "
        "other's input (an owner's one-hot columns from X^T + Ra, the class site's shares of Z "
        "from Z + Rb; with the holder of a shuffle, the owner's order of a number); the sites "
        "do not collude with each other (the paper's assumption: the holders of a node's "
        "shares together learn which records reach it, and their classes)"
    )
    outside = DEALER

    async def run(
        self, party: Party, view: Any, *, dtype: Any, tag: str,
        grow: Callable[[Dealing], Coroutine[Any, Any, tuple[Any, dict[str, int]]]],
    ) -> tuple[Any, dict[str, int]]:  # fmt: skip
        return await grow(Dealing(party, outside(DEALER)))

    async def beside(
        self, party: Party, program: Callable[[Dealing], Awaitable[T]], *, requests: str
    ) -> T:
        dealing = Dealing(party, outside(DEALER), requests=requests)
        out = await program(dealing)
        await dealing.close()
        return out

    async def serve(
        self, party: Party, sites: Sequence[str], *, dtype: Any, requests: str = REQUESTS
    ) -> int:
        return await serve_level_dealer(party, sites, dtype=dtype, requests=requests)

    def describe(self, cost: dict[str, Any]) -> str:
        return "randomness from the dealer"


class SitesPreprocessing(Preprocessing):
    """A third site deals each product between two (:func:`third_site`), beside its own
    program: no outside party."""

    name = "sites"
    help = (
        "a third site deals each product between two, never one of the two; no outside party; "
        "needs 3 or more sites, no two of them colluding"
    )
    trust = "semi-honest sites, no two colluding; each product's randomness dealt by a third site"
    collusion = (
        "no two sites collude: the site that deals a product and either site of the product "
        "together unmask the other's input (a site with the helper of its dot product with an "
        "owner recovers the owner's one-hot columns from X^T + Ra and the seed of Ra the owner "
        "sent the helper; with the helper of an outer product, the class site's shares Z + "
        "Rb, hence every record's class; with the holder of a shuffle, the owner's order of a "
        "number); the holders of a node's shares together learn which records reach it, and "
        "their classes"
    )
    min_sites = 3
    #: the site that deals a product between two
    rule: Rule = staticmethod(third_site)

    def check(self, k: int) -> None:
        if k < self.min_sites:
            raise ConfigError(
                f"--helper sites needs at least 3 sites (a third site deals every product "
                f"between two), got {k}; with 2 sites use --helper ot (or --helper dealer)"
            )

    async def run(
        self, party: Party, view: Any, *, dtype: Any, tag: str,
        grow: Callable[[Dealing], Coroutine[Any, Any, tuple[Any, dict[str, int]]]],
    ) -> tuple[Any, dict[str, int]]:  # fmt: skip
        dealing = Dealing(party, self.rule)  # checks k >= 3
        service = serve_level_helper(party, list(party.parties), dtype=dtype, rule=self.rule)
        (tree, cost), dealt_for_others = await run_beside(grow(dealing), service)
        cost["dealt"] = dealt_for_others
        return tree, cost

    async def beside(
        self, party: Party, program: Callable[[Dealing], Awaitable[T]], *, requests: str
    ) -> T:
        dealing = Dealing(party, self.rule, requests=requests)

        async def main() -> T:
            out = await program(dealing)
            await dealing.close()
            return out

        service = serve_level_helper(party, list(party.parties), dtype=np.uint64, rule=self.rule,
                                     requests=requests)  # fmt: skip
        out, _ = await run_beside(main(), service)
        return out

    def describe(self, cost: dict[str, Any]) -> str:
        return f"randomness dealt by the sites: {cost['dealt_by_sites']} requests"


class OTPreprocessing(Preprocessing):
    """No one deals: the two sites of each product compute it, or make its randomness, by
    oblivious transfer over sessions set up once per run (:func:`ot_dealing`)."""

    name = "ot"
    help = (
        "no one: the two sites of each product compute it by oblivious transfer; any number "
        "of sites >= 2, no outside party"
    )
    trust = (
        "semi-honest sites; correlated randomness by oblivious transfer between each pair, "
        "no third party"
    )
    collusion = (
        "the sites do not collude (the paper's assumption): no third party knows any "
        "randomness, but the holders of a node's shares together learn which records reach "
        "it, and their classes"
    )

    async def run(
        self, party: Party, view: Any, *, dtype: Any, tag: str,
        grow: Callable[[Dealing], Coroutine[Any, Any, tuple[Any, dict[str, int]]]],
    ) -> tuple[Any, dict[str, int]]:  # fmt: skip
        sizes = [len(d) for d in view.domains]
        ot = await ot_dealing(party, view.codes, sizes, dtype=dtype, tag=f"{tag}/ot")
        (tree, cost), made = await run_beside(grow(ot), ot.serve())
        cost["ot_requests"] = made
        return tree, cost

    async def beside(
        self, party: Party, program: Callable[[Dealing], Awaitable[T]], *, requests: str
    ) -> T:
        """No one deals: ``p0`` and ``p1`` make their triples over an OT session of their own
        (:meth:`protocols.engine.session.Session.batch`), which nothing sets up in advance."""
        return await program(OTDealing(party, {}, {}, {}, dtype=np.uint64))

    def describe(self, cost: dict[str, Any]) -> str:
        return "randomness by oblivious transfer between each pair of sites"


#: the kinds by name, in the order ``--help`` lists them
PREPROCESSING: dict[str, Preprocessing] = {
    h.name: h for h in (SitesPreprocessing(), DealerPreprocessing(), OTPreprocessing())
}


def preprocessing_of(name: str) -> Preprocessing:
    """The helper named ``name``, or a one-line error naming every helper."""
    try:
        return PREPROCESSING[name]
    except KeyError:
        raise ConfigError(f"helper must be one of {list(PREPROCESSING)}, got {name!r}") from None


def default_preprocessing(k: int) -> str:
    """The helper of a run of ``k`` sites that names none: never an outside party; the first
    of :data:`PREPROCESSING` that can serve ``k`` sites (a third site with three or more, oblivious
    transfer with two)."""
    for helper in PREPROCESSING.values():
        if helper.outside is None and helper.min_sites <= k:
            return helper.name
    raise ConfigError(f"no helper serves {k} sites without an outside party")


def classify_preprocessing(chosen: str | None, trained: str | None, k: int) -> str:
    """The helper of a classification without a path by ``k`` sites: the one ``chosen`` for
    it, else the one the tree was ``trained`` with (its model parts say), else the default
    (:func:`default_preprocessing`); checked against ``k``."""
    name = chosen or trained or default_preprocessing(k)
    helper = preprocessing_of(name)
    helper.check(k)
    return name


def classify_trust(helper: str | None) -> str:
    """What classification rests on: Algorithm 8 (``helper`` None: each site learns which
    records reach its nodes), or, without a path, the pair's triples made by ``helper``."""
    if helper is None:
        return "semi-honest sites (Algorithm 8: each site learns which records reach its nodes)"
    return (
        f"{preprocessing_of(helper).trust}; p0 and p1 do not collude "
        f"(classification without a path, --helper {helper})"
    )


class LocalTriples:
    """The triples of pairs of parties that run in one process (:mod:`mpc.runtime.local`),
    made here and handed to both: the dealing of :class:`LocalPreprocessing`. Whoever holds
    this object knows every triple; for unit tests of circuits, never for a deployment."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[Pool, Pool]] = {}

    async def triples(self, s: Session, tag: str, needs: Needs, ring: Ring) -> Pool:
        if tag not in self._made:
            self._made[tag] = local_pools(needs, ring)
        return self._made[tag][s.role]


def local_pools(needs: Needs, ring: Ring) -> tuple[Pool, Pool]:
    """``p0``'s and ``p1``'s pools of ``needs`` triples over ``ring``, made in one place (the
    dealer's arithmetic of :func:`protocols.engine.triples.deal_triples`)."""
    s0, s1 = (SeedStream(randomness.seed("local/triples")) for _ in range(2))
    n, w = needs.bits, needs.words
    a0, b0, c0, a1, b1 = (s0.bits(n), s0.bits(n), s0.bits(n), s1.bits(n), s1.bits(n))
    wa0, wb0, wc0, wa1, wb1 = (ring.random(s, w) for s in (s0, s0, s0, s1, s1))
    c1 = ((a0 ^ a1) & (b0 ^ b1)) ^ c0
    wc1 = ring.reduce((wa0 + wa1) * (wb0 + wb1) - wc0)
    select0, select1 = selects_dealt(s0, s1, needs.selects, ring)
    extra0, extra1 = extras_dealt(s0, s1, needs)
    return (Pool((a0, b0, c0), (wa0, wb0, wc0), select0, *extra0),
            Pool((a1, b1, c1), (wa1, wb1, wc1), select1, *extra1))  # fmt: skip


class LocalPreprocessing(Preprocessing):
    """Triples made in the process for both parties of a pair (:class:`LocalTriples`): for
    unit tests of the circuits and of the pair's computations, with every party in one
    process. Not in :data:`PREPROCESSING`: no deployment may choose it."""

    name = "local"
    help = "triples made in this process for both parties (unit tests only)"
    trust = "none: one process holds every triple (a unit test)"
    collusion = "every party is one process"

    def __init__(self) -> None:
        self.triples = LocalTriples()

    async def beside(
        self, party: Party, program: Callable[[Any], Awaitable[T]], *, requests: str
    ) -> T:
        return await program(self.triples)
