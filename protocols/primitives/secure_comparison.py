"""Secure comparison and argmax on additive shares, with the correlated randomness dealt by a
third party: the building block that lets a learner pick the best split without opening a
count or a score.

Two parties ``p0`` and ``p1`` hold additive shares mod ``2^64`` of signed values (two's
complement, ``|x| < 2^62``); a helper, who sees no share, deals the randomness: the commodity
``dealer`` or, with ``k >= 3`` sites, a third site. Every message between ``p0`` and ``p1`` is
a value masked by randomness that the receiver does not know, so uniform; the helper
receives nothing.

**Less than zero** (:func:`less_than_zero`: shares of ``[x < 0]``), the masked-opening
comparison (Catrina and de Hoogh) with a logarithmic-depth bitwise less-than:

1. the helper deals ``r`` uniform mod ``2^64`` as additive shares, its bits as XOR shares,
   AND triples over ``Z_2`` and a *double bit* (a random bit as XOR and as additive shares);
2. ``p0`` and ``p1`` open ``c = x + r`` (uniform: ``r`` masks it);
3. ``x = c - r``, so ``MSB(x) = c_63 ⊕ r_63 ⊕ [c' < r']``, ``c'`` and ``r'`` the low 63 bits.
   With ``c`` public, the bits ``g_i = ¬c_i ∧ r_i`` (``r``'s bit is the larger) and
   ``e_i = ¬(c_i ⊕ r_i)`` (equal) are local, and ``[c' < r']`` is the reduction, most
   significant bits first, of the pairs ``(g, e)`` by ``(g, e) ∘ (g', e') = (g ⊕ (e ∧ g'),
   e ∧ e')``: six levels, one round each (Beaver's AND on XOR shares, both inputs masked);
4. the XOR-shared bit ``m = MSB(x)`` becomes additive with the double bit ``s``: open
   ``t = m ⊕ s``, then ``m = t + s - 2ts``.

Eight rounds for any number of values at once. **Products** (:func:`multiply`) are Beaver's,
one round. **Argmax** (:func:`argmax`) is a tournament over the candidates of each row, the
earlier candidate kept on a tie (the plain learners' rule: the first best in order wins):
``⌈log2 m⌉`` comparisons deep, each followed by one round of products that carries the
winner's key and index, so ``9 ⌈log2 m⌉`` rounds for all rows at once. Keys are integers, or
fractions ``n/d`` (``d > 0``) compared by the sign of ``n d' - n' d`` (one more round of
products per level); ``|n d'|`` must stay below ``2^62``. Only the winners' indices are
opened, to the parties that should learn them.

The helper draws every random value of a batch from two fresh seeds (OS randomness), one
per party; ``p0`` expands its seed, ``p1`` expands its own and receives the *corrections*
that complete the correlated values (``c = a ∧ b`` of a triple, the bits of ``r``, the
additive half of the double bit). One schedule (:class:`Material`) is run by all three, so
that they draw the same values in the same order.

What each party receives: ``p0`` and ``p1``, from the helper, a seed and corrections
(uniform); from each other, masked values (uniform) and, to a party that learns the winners,
the other's shares of them (uniform; with its own they open the winners, the outcome, which
its ledger records as ``compare/winners``). The helper receives nothing. A helper that colludes with
``p0`` or ``p1`` learns the other's values: the trust is the commodity server's.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.errors import ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import uniform

__all__ = [
    "BITS",
    "DEALT",
    "MASKED",
    "WINNERS",
    "Material",
    "argmax",
    "argmax_material",
    "deal",
    "less_than_zero",
    "ltz_material",
    "multiply",
    "multiply_material",
    "open_winners",
    "receive_material",
    "secure_argmax",
    "tournament",
]

#: the ring: additive shares mod 2^64; values are signed, |x| < 2^62
BITS = 64
U64 = np.uint64
DEALER_ROLE = 2

#: what a party receives
DEALT = uniform(
    "compare/dealt",
    "the helper's correlated randomness: a seed (p0), or a seed and corrections (p1)",
)
MASKED = uniform(
    "compare/masked", "the other party's values or bits plus a mask this party does not know"
)
WINNERS = uniform(
    "compare/winner-shares",
    "the other party's shares of the winners (to a party that learns them)",
    opens="compare/winners",
)


# ----------------------------------------------------------------------------- randomness


class Stream:
    """Uniform words and bits expanded from a 32-byte seed (AES-256-CTR), drawn in order."""

    def __init__(self, seed: bytes) -> None:
        if not isinstance(seed, bytes) or len(seed) != 32:
            raise ProtocolError("a seed of correlated randomness must be 32 bytes")
        self._enc = Cipher(algorithms.AES(seed), modes.CTR(bytes(16))).encryptor()

    def words(self, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        data = self._enc.update(bytes(8 * n))
        return np.frombuffer(data, dtype="<u8").astype(U64).reshape(shape)

    def bits(self, shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        data = np.frombuffer(self._enc.update(bytes((n + 7) // 8)), dtype=np.uint8)
        return np.unpackbits(data)[:n].reshape(shape)


class Material:
    """One batch's correlated randomness, as the helper (``role`` 2: the values, and the
    corrections it will send) or a party (``role`` 0 or 1: its shares) sees it. Every
    schedule (:func:`ltz_material`, ...) calls these methods in one order for all three."""

    def __init__(self, role: int, streams: tuple[Stream | None, Stream | None],
                 fixes: list[np.ndarray] | None = None) -> None:  # fmt: skip
        self.role = role
        self.streams = streams
        self.fixes = list(fixes or [])  # the helper appends; p1 consumes
        self._used = 0

    def _draw(self, who: int, kind: str, shape: tuple[int, ...]) -> np.ndarray:
        stream = self.streams[who]
        assert stream is not None
        return stream.words(shape) if kind == "w" else stream.bits(shape)

    def random(self, kind: str, shape: tuple[int, ...]) -> np.ndarray:
        """A uniform value whose two shares the parties draw themselves ("w": additive
        words, "b": XOR bits); the helper gets the value."""
        if self.role != DEALER_ROLE:
            return self._draw(self.role, kind, shape)
        a, b = self._draw(0, kind, shape), self._draw(1, kind, shape)
        return a + b if kind == "w" else a ^ b

    def given(
        self, kind: str, shape: tuple[int, ...], value: Callable[[], np.ndarray]
    ) -> np.ndarray:
        """A value the helper computes (``value()``, from the values it drew), shared: ``p0``
        draws its share, ``p1``'s comes as a correction."""
        if self.role == 0:
            return self._draw(0, kind, shape)
        if self.role == 1:
            if self._used >= len(self.fixes):
                raise ProtocolError("the helper sent fewer corrections than the batch needs")
            fix = self.fixes[self._used]
            self._used += 1
            if kind == "b":
                bits = np.unpackbits(np.asarray(fix, dtype=np.uint8))
                if bits.size < int(np.prod(shape)):
                    raise ProtocolError("a correction of bits is shorter than its batch")
                return bits[: int(np.prod(shape))].reshape(shape)
            if fix.size != int(np.prod(shape)):
                raise ProtocolError("a correction of words does not fit its batch")
            return np.asarray(fix, dtype=U64).reshape(shape)
        v = value()
        share0 = self._draw(0, kind, shape)
        self.fixes.append(v - share0 if kind == "w" else np.packbits(v ^ share0))
        return v

    def finished(self) -> None:
        """``p1`` used every correction it was sent."""
        if self.role == 1 and self._used != len(self.fixes):
            raise ProtocolError("the helper sent more corrections than the batch needs")


@dataclass
class LtzMaterial:
    r: np.ndarray  # (n,) words
    rbits: np.ndarray  # (n, 64) bits, least significant first
    triples: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per reduction level
    s_bit: np.ndarray  # (n,) bits
    s_word: np.ndarray  # (n,) words


def _reduction_widths() -> list[int]:
    """How many combinations each level of the reduction of 63 bit pairs makes."""
    widths, m = [], BITS - 1
    while m > 1:
        widths.append(m // 2)
        m = m // 2 + m % 2
    return widths


def _bits_of(words: np.ndarray) -> np.ndarray:
    return ((words[..., None] >> np.arange(BITS, dtype=U64)) & U64(1)).astype(np.uint8)


def ltz_material(m: Material, n: int) -> LtzMaterial:
    """The randomness of :func:`less_than_zero` on ``n`` values."""
    r = m.random("w", (n,))
    rbits = m.given("b", (n, BITS), lambda: _bits_of(r))
    triples = []
    for width in _reduction_widths():
        a = m.random("b", (n, 2 * width))
        b = m.random("b", (n, 2 * width))
        c = m.given("b", (n, 2 * width), lambda a=a, b=b: a & b)  # type: ignore[misc]
        triples.append((a, b, c))
    s_bit = m.random("b", (n,))
    s_word = m.given("w", (n,), lambda: s_bit.astype(U64))
    return LtzMaterial(r, rbits, triples, s_bit, s_word)


def multiply_material(m: Material, n: int) -> Triple:
    """A Beaver triple per product: ``a``, ``b`` and ``c = a b``."""
    a = m.random("w", (n,))
    b = m.random("w", (n,))
    c = m.given("w", (n,), lambda: a * b)
    return a, b, c


def tournament(count: int) -> list[int]:
    """How many pairs each round of a tournament over ``count`` candidates plays."""
    out = []
    while count > 1:
        out.append(count // 2)
        count = count // 2 + count % 2
    return out


#: a Beaver triple of a batch: ``a``, ``b`` and ``c = a b`` (words) or ``a ∧ b`` (bits)
Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class ArgmaxMaterial:
    levels: list[tuple[Triple | None, LtzMaterial, Triple]]


def argmax_material(m: Material, rows: int, candidates: int, fractions: bool) -> ArgmaxMaterial:
    """The randomness of :func:`argmax` over ``rows`` rows of ``candidates`` keys: per round,
    the cross products (fractions), the comparisons, the products that select."""
    levels = []
    for pairs in tournament(candidates):
        n = rows * pairs
        cross = multiply_material(m, 2 * n) if fractions else None
        ltz = ltz_material(m, n)
        select = multiply_material(m, (3 if fractions else 2) * n)
        levels.append((cross, ltz, select))
    return ArgmaxMaterial(levels)


# ------------------------------------------------------------------------------- dealing


async def deal(
    party: Party, p0: str, p1: str, tag: str, schedule: Callable[[Material], object]
) -> None:
    """The helper's part of a batch: draws two seeds, runs ``schedule`` as the helper and sends
    ``p0`` its seed, ``p1`` its seed and the corrections."""
    seeds = (secrets.token_bytes(32), secrets.token_bytes(32))
    m = Material(DEALER_ROLE, (Stream(seeds[0]), Stream(seeds[1])))
    schedule(m)
    await party.send(p0, f"{tag}/dealt", {"seed": seeds[0], "fix": []})
    await party.send(
        p1, f"{tag}/dealt", {"seed": seeds[1], "fix": [pack_array(f) for f in m.fixes]}
    )


async def receive_material(
    party: Party, helper: str, tag: str, role: int, schedule: Callable[[Material], object]
) -> object:
    """A party's part of a batch: its seed (and, ``p1``, the corrections) from ``helper``, and
    ``schedule`` run as that party."""
    body = await party.recv(helper, f"{tag}/dealt", DEALT)
    if not isinstance(body, dict) or not isinstance(body.get("fix"), list):
        raise ProtocolError(f"{party.name}: {helper} sent malformed randomness at {tag}")
    fixes = body["fix"]
    if role == 0 and fixes:
        raise ProtocolError(f"{party.name}: {helper} sent p0 corrections at {tag}")
    arrays = []
    for i, f in enumerate(fixes):
        dtype = np.uint8 if _packed_bytes(f) else U64
        arrays.append(unpack_array(f, dtype, (None,), helper, f"correction {i} at {tag}"))
    streams: list[Stream | None] = [None, None]
    streams[role] = Stream(body.get("seed"))  # type: ignore[arg-type]
    m = Material(role, (streams[0], streams[1]), arrays)
    out = schedule(m)
    m.finished()
    return out


def _packed_bytes(packed: object) -> bool:
    parts = packed.get("parts") if isinstance(packed, dict) else None
    return bool(parts) and getattr(parts[0], "dtype", None) == np.uint8  # type: ignore[index]


# --------------------------------------------------------------------------- the parties


async def _open(party: Party, other: str, tag: str, mine: np.ndarray) -> np.ndarray:
    """Send this party's masked share, receive the other's: the opened value (``+`` for
    words, ``⊕`` for bits)."""
    packed = np.packbits(mine) if mine.dtype == np.uint8 else mine
    await party.send(other, tag, pack_array(packed))
    theirs = unpack_array(
        await party.recv(other, tag, MASKED), packed.dtype.type, packed.shape, other, tag
    )
    if mine.dtype == np.uint8:
        return mine ^ np.unpackbits(theirs)[: mine.size].reshape(mine.shape)
    return mine + theirs


async def _and(
    party: Party, role: int, other: str, tag: str, x: np.ndarray, y: np.ndarray,
    triple: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:  # fmt: skip
    """XOR shares of ``x ∧ y`` (Beaver's AND, one round)."""
    a, b, c = triple
    opened = await _open(party, other, tag, np.concatenate([x ^ a, y ^ b], axis=1))
    d, e = opened[:, : x.shape[1]], opened[:, x.shape[1] :]
    z = c ^ (d & b) ^ (e & a)
    return z ^ (d & e) if role == 0 else z


async def less_than_zero(
    party: Party, x: np.ndarray, mat: LtzMaterial, *, role: int, other: str, tag: str
) -> np.ndarray:
    """Additive shares (uint64) of ``[x < 0]`` for each value of this party's shares ``x``
    (the module docstring's steps 2-4)."""
    n = x.shape[0]
    c = await _open(party, other, f"{tag}/c", np.asarray(x, dtype=U64) + mat.r)
    cbits = _bits_of(c)
    low_c, low_r = cbits[:, BITS - 2 :: -1], mat.rbits[:, BITS - 2 :: -1]  # high first
    g = (1 - low_c).astype(np.uint8) & low_r
    e = low_r ^ (low_c ^ np.uint8(1)) if role == 0 else low_r  # ¬(c ⊕ r): c is p0's to add
    for level, triple in enumerate(mat.triples):
        width = g.shape[1] // 2
        hi_g, hi_e = g[:, 0 : 2 * width : 2], e[:, 0 : 2 * width : 2]
        lo_g, lo_e = g[:, 1 : 2 * width : 2], e[:, 1 : 2 * width : 2]
        both = await _and(party, role, other, f"{tag}/and{level}",
                          np.concatenate([hi_e, hi_e], axis=1),
                          np.concatenate([lo_g, lo_e], axis=1), triple)  # fmt: skip
        new_g, new_e = hi_g ^ both[:, :width], both[:, width:]
        if g.shape[1] % 2:
            new_g = np.concatenate([new_g, g[:, -1:]], axis=1)
            new_e = np.concatenate([new_e, e[:, -1:]], axis=1)
        g, e = new_g, new_e
    top = mat.rbits[:, BITS - 1] ^ (cbits[:, BITS - 1] if role == 0 else np.uint8(0))
    msb = g[:, 0] ^ top
    t = (await _open(party, other, f"{tag}/b2a", msb ^ mat.s_bit)).astype(U64)
    own_t = t if role == 0 else np.zeros(n, dtype=U64)
    return own_t + mat.s_word - U64(2) * t * mat.s_word


async def multiply(
    party: Party, x: np.ndarray, y: np.ndarray, triple: tuple[np.ndarray, ...], *, role: int,
    other: str, tag: str,
) -> np.ndarray:  # fmt: skip
    """Additive shares of ``x y``, element by element (Beaver, one round)."""
    a, b, c = triple
    opened = await _open(party, other, tag, np.concatenate([x - a, y - b]))
    d, e = opened[: x.size], opened[x.size :]
    z = c + d * b + e * a
    return z + d * e if role == 0 else z


async def argmax(
    party: Party, keys: np.ndarray, mat: ArgmaxMaterial, *, role: int, other: str, tag: str,
    denominators: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """Additive shares of the index of the largest key of each row of ``keys`` (``rows x
    candidates``, this party's shares), the first on a tie; with ``denominators`` the keys
    are the fractions ``keys / denominators``. Nothing is opened: :func:`open_winners`."""
    rows, count = keys.shape
    key = np.asarray(keys, dtype=U64)
    den = None if denominators is None else np.asarray(denominators, dtype=U64)
    index = (
        np.tile(np.arange(count, dtype=U64), (rows, 1))
        if role == 0
        else np.zeros((rows, count), dtype=U64)
    )
    for level, (cross, ltz, select) in enumerate(mat.levels):
        pairs = key.shape[1] // 2
        left, right = slice(0, 2 * pairs, 2), slice(1, 2 * pairs, 2)
        kl, kr = key[:, left].reshape(-1), key[:, right].reshape(-1)
        il, ir = index[:, left].reshape(-1), index[:, right].reshape(-1)
        if den is not None:
            dl, dr = den[:, left].reshape(-1), den[:, right].reshape(-1)
            assert cross is not None
            prods = await multiply(
                party, np.concatenate([kl, kr]), np.concatenate([dr, dl]), cross, role=role,
                other=other, tag=f"{tag}/cross{level}",
            )  # fmt: skip
            diff = prods[: kl.size] - prods[kl.size :]  # kl dr - kr dl
        else:
            diff = kl - kr
        beta = await less_than_zero(party, diff, ltz, role=role, other=other,
                                    tag=f"{tag}/cmp{level}")  # fmt: skip
        # the right one wins only when the left is strictly smaller: ties keep the earlier
        deltas = [kr - kl, ir - il] + ([dr - dl] if den is not None else [])
        moved = await multiply(party, np.tile(beta, len(deltas)), np.concatenate(deltas),
                               select, role=role, other=other, tag=f"{tag}/sel{level}")  # fmt: skip
        parts = np.split(moved, len(deltas))
        new_key = (kl + parts[0]).reshape(rows, pairs)
        new_index = (il + parts[1]).reshape(rows, pairs)
        new_den = (dl + parts[2]).reshape(rows, pairs) if den is not None else None
        if key.shape[1] % 2:
            new_key = np.concatenate([new_key, key[:, -1:]], axis=1)
            new_index = np.concatenate([new_index, index[:, -1:]], axis=1)
            if den is not None and new_den is not None:
                new_den = np.concatenate([new_den, den[:, -1:]], axis=1)
        key, index, den = new_key, new_index, new_den
    return index[:, 0]


async def open_winners(
    party: Party, index: np.ndarray, *, other: str, tag: str, to: tuple[str, ...]
) -> np.ndarray | None:
    """Open the shared winners to the parties named in ``to`` (of ``p0`` and ``p1``): each
    sends its share to the other if the other is to learn them."""
    if other in to:
        await party.send(other, f"{tag}/winners", pack_array(index))
    if party.name not in to:
        return None
    theirs = unpack_array(
        await party.recv(other, f"{tag}/winners", WINNERS), U64, index.shape, other, "winners"
    )
    return (index + theirs).astype(np.int64)


async def secure_argmax(
    party: Party, keys: np.ndarray | None, *, shape: tuple[int, int], p0: str, p1: str,
    helper: str, tag: str, denominators: np.ndarray | None = None,
    fractions: bool = False, reveal_to: tuple[str, ...] | None = None,
) -> np.ndarray | None:  # fmt: skip
    """The whole argmax for any of the three parties: the helper deals, ``p0`` and ``p1``
    (holding additive shares ``keys``, and ``denominators`` when ``fractions``) find the
    winner of each of the ``shape[0]`` rows of ``shape[1]`` candidates and open it to
    ``reveal_to`` (default: both). Every party records the public shape in its ledger
    (``compare/shape``), the parties that learn the winners record them
    (``compare/winners``). Returns the winners (int64) to those, None to the others."""
    rows, count = shape
    schedule = lambda m: argmax_material(m, rows, count, fractions)  # noqa: E731
    party.ledger.record("compare/shape", [rows, count], step=tag)
    if party.name == helper:
        await deal(party, p0, p1, tag, schedule)
        return None
    if keys is None or keys.shape != shape or (fractions and denominators is None):
        raise ProtocolError(f"{party.name}: its shares of the keys do not have the shape {shape}")
    role, other = (0, p1) if party.name == p0 else (1, p0)
    material = await receive_material(party, helper, tag, role, schedule)
    assert isinstance(material, ArgmaxMaterial)
    index = await argmax(party, keys, material, role=role, other=other, tag=tag,
                         denominators=denominators if fractions else None)  # fmt: skip
    winners = await open_winners(party, index, other=other, tag=tag,
                                 to=reveal_to if reveal_to is not None else (p0, p1))  # fmt: skip
    if winners is not None:
        party.ledger.record("compare/winners", winners.tolist(), step=tag)
    return winners
