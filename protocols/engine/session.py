"""A session over additive shares: two parties, ``p0`` and ``p1``, computing on their shares
with correlated randomness from the run's preprocessing, and opening only through one door.

::

    s = Session(party, dealing)              # every party makes one; only p0 and p1 compute
    await s.start("t/open-key")              # p0 and p1 agree the key of their openings
    best = await s.batch("t/best", choose, counts)   # counted, then run with its triples
    await s.open(best, len(best), to=sites, tag="t/splits", receipt=SPLITS)

``choose`` is an ``async`` function of the session and its arguments that calls the
session's circuits (:meth:`mul`, :meth:`and_`, :meth:`ltz`, :meth:`sign`, :meth:`select`,
:meth:`lift`, :meth:`argmax`, :meth:`sum_bits`, :meth:`prefix_or`, :meth:`bit_to_ring`: those of
:mod:`protocols.engine.circuits`): :meth:`batch` first runs it on a *counting*
session (:class:`CountingSession`: no message, every triple it asks for counted per ring), so
a batch's triples are budgeted by a dry run of the very code that uses them; then it asks the
preprocessing for that many (``dealing.triples``: a dealer's, a third site's or made by
oblivious transfer), one pool per ring, and runs it for real, checking that the batch used
them all. The dry run needs only the public shapes; its cost is the local arithmetic of the
circuit once more, without a message.

Every value leaves ``p0`` and ``p1`` through :meth:`open`, re-randomised for a receiver
outside the two (:mod:`protocols.engine.opening`).

What each party receives: see :mod:`protocols.engine.triples` (the triples),
:mod:`protocols.engine.circuits` (masked values, ``compare/masked``) and
:mod:`protocols.engine.opening` (the openings).

References: D. Beaver, *Efficient multiparty protocols using circuit randomization*, CRYPTO
1991 (the triples a batch consumes); the design of a runtime whose circuits are ordinary
functions and whose outputs pass one door follows MPyC (B. Schoenmakers, ``mpyc/runtime.py``).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import Receipt, uniform
from protocols.engine import circuits
from protocols.engine.opening import Pair, open_shares
from protocols.engine.ring import RING64, Ring
from protocols.engine.triples import Needs, Own, Paired, Pool, Pools, Select, Triple

__all__ = ["MASKED", "CountingSession", "Session", "TripleSource"]

#: what p0 and p1 receive from each other in a circuit
MASKED = uniform(
    "compare/masked", "the other party's values or bits plus a mask this party does not know"
)


class TripleSource(Protocol):
    """Where a session's triples come from: the run's preprocessing (its per-run dealing,
    :mod:`protocols.engine.preprocessing`)."""

    async def triples(self, s: Session, tag: str, needs: Needs, ring: Ring) -> Pool: ...


class Session:
    """``p0`` and ``p1`` of ``party``'s deployment (by default its first two parties)
    computing in ``ring`` (the default ring of the circuits) with triples from ``dealing``.
    Every party makes one; :attr:`active` only at ``p0`` and ``p1``."""

    def __init__(
        self, party: Party, dealing: TripleSource, ring: Ring = RING64, *,
        pair: tuple[str, str] | None = None,
    ) -> None:  # fmt: skip
        names = list(party.parties)
        p0, p1 = pair or (names[0], names[1])
        self.party, self.dealing, self.ring = party, dealing, ring
        #: the pair's door for what it opens (:mod:`protocols.engine.opening`)
        self.pair = Pair(party, p0, p1)
        self.p0, self.p1 = p0, p1
        self.active = party.name in (p0, p1)
        self.role = 0 if party.name == p0 else 1
        self.other = p1 if self.role == 0 else p0
        #: an OT session of the pair, if the preprocessing makes triples by OT (its own),
        #: and one the other way (``p1`` sending, for the selection triples)
        self.ot: Any = None
        self.ot_back: Any = None
        #: held while the OT session makes triples (one ring's at a time)
        self.ot_lock = asyncio.Lock()
        self._pools: Pools | None = None
        self._prefix = ""

    # ------------------------------------------------------------------------- the pair

    async def start(self, tag: str) -> None:
        """``p0`` and ``p1`` agree the key of their openings' re-randomisation."""
        await self.pair.agree(tag)

    async def open(
        self, values: np.ndarray | None, n: int, *, to: Sequence[str], tag: str,
        receipt: Receipt, ring: Ring | None = None,
    ) -> list[int] | None:  # fmt: skip
        """Open ``n`` shared values to the parties ``to``
        (:func:`protocols.engine.opening.open_shares`): the only way a value leaves the
        pair."""
        return await open_shares(self.pair, values, n, to=to, tag=tag, receipt=receipt,
                                 ring=ring or self.ring)  # fmt: skip

    # ------------------------------------------------------------------------- batches

    async def batch(
        self, tag: str, body: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any
    ) -> Any:
        """Run ``body(session, *args, **kwargs)`` with its triples: counted by a dry run of
        ``body`` itself (:class:`CountingSession`), asked for once per ring under ``tag``,
        then used; the batch must use them all. The circuits' messages go under ``tag`` too.
        Only ``p0`` and ``p1`` call it, one batch at a time."""
        if self._pools is not None:
            raise RuntimeError(f"batch {tag!r} inside batch {self._prefix!r}")
        counting = CountingSession(self)
        await body(counting, *args, **kwargs)
        self._pools = await self.pools(tag, counting.needs)
        self._prefix = tag
        try:
            out = await body(self, *args, **kwargs)
            self._pools.finished()
        finally:
            self._pools, self._prefix = None, ""
        return out

    async def pools(self, tag: str, needs: dict[int, Needs]) -> Pools:
        """The triples of ``needs`` (ring bits -> how many), one pool per ring, every ring's
        asked for at once."""
        made = Pools()
        order = sorted(needs)
        got = await asyncio.gather(*(
            self.dealing.triples(self, f"{tag}/k{bits}", needs[bits], Ring(bits)) for bits in order
        ))  # fmt: skip
        made.by_bits.update(zip(order, got, strict=True))
        return made

    # ------------------------------------------------------------------------- the circuits' needs

    def word_triple(self, n: int, ring: Ring) -> Triple:
        return self._pool(ring).word_triple(n)

    def and_triple(self, shape: tuple[int, ...], ring: Ring) -> Triple:
        return self._pool(ring).and_triple((shape[0], int(np.prod(shape[1:]))))

    def select_triple(self, n: int, ring: Ring) -> Select:
        return self._pool(ring).select_triple(n)

    def own_triple(self, shape: tuple[int, ...], ring: Ring) -> Own:
        return self._pool(ring).own_triple((shape[0], int(np.prod(shape[1:]))))

    def pair_triple(self, shape: tuple[int, ...], ring: Ring) -> Paired:
        return self._pool(ring).pair_triple((shape[0], int(np.prod(shape[1:]))))

    def _pool(self, ring: Ring) -> Pool:
        if self._pools is None:
            raise RuntimeError("a circuit outside a batch: run it through Session.batch")
        return self._pools.of(ring)

    async def row_wise(self, circuit: Any, x: np.ndarray, *args: Any) -> np.ndarray | None:
        """None: a real session runs every circuit (a counting one may not, below)."""
        return None

    async def exchange(self, tag: str, mine: np.ndarray, ring: Ring | None) -> np.ndarray:
        """Send this party's masked values, receive the other's: the opened values (``+``
        in ``ring``, or ``⊕`` for bits, ``uint8``, with ``ring`` None)."""
        party, other = self.party, self.other
        tag = f"{self._prefix}/{tag}" if self._prefix else tag
        if ring is None:
            packed = np.packbits(mine)
            await party.send(other, tag, pack_array(packed))
            theirs = unpack_array(
                await party.recv(other, tag, MASKED), np.uint8, packed.shape, other, tag
            )
            return mine ^ np.unpackbits(theirs)[: mine.size].reshape(mine.shape)
        await party.send(other, tag, ring.pack(mine))
        theirs = ring.unpack(await party.recv(other, tag, MASKED), mine.shape, other, tag)
        return ring.reduce(mine + theirs)

    # ------------------------------------------------------------------------- operations

    def const(self, value: int, shape: int | tuple[int, ...], ring: Ring | None = None) -> Any:
        """Shares of a public constant: ``p0`` holds it, ``p1`` zero."""
        return (ring or self.ring).constant(value if self.role == 0 else 0, shape)

    async def mul(self, x: Any, y: Any, tag: str, ring: Ring | None = None) -> Any:
        shape = np.shape(x)
        out = await circuits.multiply(self, np.reshape(x, -1), np.reshape(y, -1), tag,
                                      ring or self.ring)  # fmt: skip
        return out.reshape(shape)

    async def and_(self, x: np.ndarray, y: np.ndarray, tag: str, ring: Ring = RING64) -> Any:
        return await circuits.and_(self, x, y, tag, ring)

    async def ltz(self, x: Any, tag: str, ring: Ring | None = None) -> Any:
        return await circuits.less_than_zero(self, x, tag, ring or self.ring)

    async def sign(self, x: Any, tag: str, ring: Ring | None = None) -> Any:
        """XOR shares (``uint8``) of ``[x < 0]``, not yet additive (:meth:`select` takes
        them as they are)."""
        return await circuits.sign_bit(self, x, tag, ring or self.ring)

    async def select(self, bit: Any, x: Any, tag: str, ring: Ring | None = None) -> Any:
        """Shares of ``b x`` for each row of ``x`` (``n x k``) and its XOR-shared bit ``b``,
        by selection triples (:func:`protocols.engine.circuits.select`)."""
        product, _ = await circuits.select(self, bit, x, tag, ring or self.ring)
        return product

    async def lift(self, x: Any, width: int, tag: str, ring: Ring | None = None) -> Any:
        return await circuits.lift(self, x, width, tag, ring or self.ring)

    async def argmax(self, keys: Any, tag: str, **kwargs: Any) -> Any:
        kwargs.setdefault("ring", self.ring)
        return await circuits.argmax(self, keys, tag, **kwargs)

    async def sum_bits(self, bits: np.ndarray, tag: str, ring: Ring) -> tuple[Any, Any]:
        return await circuits.sum_bits(self, bits, tag, ring)

    async def prefix_or(self, bits: np.ndarray, tag: str, ring: Ring) -> Any:
        return await circuits.prefix_or(self, bits, tag, ring)

    async def bit_to_ring(self, bits: np.ndarray, tag: str, ring: Ring) -> Any:
        return await circuits.bit_to_ring(self, bits, tag, ring)


class CountingSession(Session):
    """A dry run of a batch (:meth:`Session.batch`): the same circuits, no message, every
    triple asked for counted per ring (:attr:`needs`); what it hands out is zeros.

    A circuit that works row by row (:func:`~protocols.engine.circuits.multiply`,
    :func:`~protocols.engine.circuits.less_than_zero`, :func:`~protocols.engine.circuits.lift`:
    each row's triples are the same whatever the others) runs once on one row, its needs
    multiplied by the number of rows (:meth:`row_wise`), and each such count is kept for the
    run: the dry run of a wide ring's comparisons costs one row's arithmetic, not all of it."""

    #: the needs of one row of a row-wise circuit, by the circuit, its ring and public options
    _per_row: ClassVar[dict[tuple[Any, ...], tuple[dict[int, tuple[int, ...]], Any]]] = {}

    def __init__(self, real: Session) -> None:
        self.__dict__.update(real.__dict__)
        self._counted: defaultdict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
        self._one_row = False

    async def row_wise(self, circuit: Any, x: np.ndarray, *args: Any) -> np.ndarray | None:
        if self._one_row:
            return None
        rings = tuple(a.bits for a in args if isinstance(a, Ring))
        public = tuple(a for a in args if isinstance(a, int))
        key = (circuit, rings, public, x.dtype.str, x.shape[1:], self.role)
        if key not in self._per_row:
            one = CountingSession(self)
            one._one_row = True
            row = [a[:1] if isinstance(a, np.ndarray) else a for a in args]
            out = await circuit(one, x[:1], *row)
            self._per_row[key] = ({b: tuple(n) for b, n in one._counted.items()}, out)
        counted, out = self._per_row[key]
        rows = len(x)
        for bits, per_row in counted.items():
            for i, n in enumerate(per_row):
                self._counted[bits][i] += n * rows
        return np.repeat(out, rows, axis=0) if rows else out[:0]

    @property
    def needs(self) -> dict[int, Needs]:
        return {bits: Needs(*n) for bits, n in self._counted.items()}

    def word_triple(self, n: int, ring: Ring) -> Triple:
        self._counted[ring.bits][1] += n
        return ring.zeros(n), ring.zeros(n), ring.zeros(n)

    def and_triple(self, shape: tuple[int, ...], ring: Ring) -> Triple:
        self._counted[ring.bits][0] += int(np.prod(shape))
        z = np.zeros(shape, dtype=np.uint8)
        return z, z, z

    def select_triple(self, n: int, ring: Ring) -> Select:
        self._counted[ring.bits][2] += n
        return np.zeros(n, dtype=np.uint8), ring.zeros(n), ring.zeros(n), ring.zeros(n)

    def own_triple(self, shape: tuple[int, ...], ring: Ring) -> Own:
        self._counted[ring.bits][3] += int(np.prod(shape))
        z = np.zeros(shape, dtype=np.uint8)
        return z, z

    def pair_triple(self, shape: tuple[int, ...], ring: Ring) -> Paired:
        self._counted[ring.bits][4] += int(np.prod(shape))
        z = np.zeros(shape, dtype=np.uint8)
        return z, z, z, z, z

    async def exchange(self, tag: str, mine: np.ndarray, ring: Ring | None) -> np.ndarray:
        return mine

    async def batch(
        self, tag: str, body: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any
    ) -> Any:
        return await body(self, *args, **kwargs)

    async def open(self, *args: Any, **kwargs: Any) -> list[int] | None:
        raise RuntimeError("a batch opens nothing: open its results after it")
