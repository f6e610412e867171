"""OT extension: one setup of 128 base OTs (:mod:`protocols.ot.base_ot`) serves any number of
batches of OTs; the correlation is IKNP's, made by SoftSpokenOT's small-field VOLE.

**Extension** (Ishai, Kilian, Nissim & Petrank, CRYPTO 2003, with ``κ = 128``): the roles of
the base OTs swap: the extension *sender* holds a secret ``s ∈ {0,1}^κ``, the extension
*receiver* the seeds. For ``m`` OTs with choice bits ``r`` the receiver sends one message
and both end with ``κ x m`` bit matrices whose rows, transposed, satisfy ``q_j = t_j ⊕ r_j
s`` (sender ``q``, receiver ``t``). The sender's messages are ``x_j^0 = H(j, q_j)`` and
``x_j^1 = H(j, q_j ⊕ s)``; the receiver's is ``H(j, t_j) = x_j^{r_j}``. How the matrices are
made is :mod:`protocols.ot.softspoken` (Roy, CRYPTO 2022), ``k`` bits of ``s`` per small-field
element (:data:`K_BITS`, 2 by default): from ``2^k`` seeds per ``k`` bits, every one known to
the receiver and all but one to the sender, the receiver sends ``κ/k`` rows of ``m`` bits
(``k = 1`` is IKNP's ``u_i = G(k_i^0) ⊕ G(k_i^1) ⊕ r``, ``κ`` rows). ``G`` is AES-128-CTR
keyed by the seed, its initial counter block the batch number (one nonce per seed and use,
never repeated within a session); ``H`` is the tweakable correlation-robust hash
``π(π(x) ⊕ j) ⊕ π(x)`` of Guo, Katz, Wang & Yu (IEEE S&P 2020), xor-ed with the public tweak
(:class:`CorrelationRobustHash`), with ``π`` AES-128 under a key fixed for the session
(hashed from the base-OT transcript); the tweak ``j`` holds the batch and the OT index. A
wider pad (a vector OT) is the same hash under further tweaks, one per 16-byte block. One
setup serves any number of batches: :func:`extension_sender`, :func:`extension_receiver`.

* **random OT** (:func:`random_ots_send`, :func:`random_ots_receive`): the sender gets ``m``
  pairs of 16-byte messages, the receiver one of each pair by its random or chosen bits;
* **correlated OT over Z_{2^64}** (:func:`correlated_ots_send`, :func:`correlated_ots_receive`):
  the sender gives ``Δ_j`` and gets a uniform ``x_j``, the receiver gets
  ``y_j = x_j + r_j Δ_j`` (mod ``2^64``); the sender sends ``τ_j = x_j^1 - x_j^0 - Δ_j``.

Cost: per OT, ``κ/k`` bits from receiver to sender (64 with ``k = 2``); a correlated OT adds
8 bytes back. A product takes 64 correlated OTs: 1,024 bytes (512 + 512) plus a few bytes of
message framing; a Beaver triple two products. Setup: 32 bytes from the base-OT sender, then
32 bytes per base OT (4 KiB for 128) from the base-OT receiver, one round trip, then the
punctured seeds' sums (2 KiB with ``k = 2``) from the extension receiver; each batch of up to
:data:`CHUNK_OTS` OTs is one message each way, with at most :data:`WINDOW` batches in flight.

Security, ledger and randomness: :mod:`protocols.ot`.

References: Y. Ishai, J. Kilian, K. Nissim, E. Petrank, *Extending oblivious transfers
efficiently*, CRYPTO 2003; L. Roy, *SoftSpokenOT: Quieter OT extension from small-field silent
VOLE in the Minicrypt model*, CRYPTO 2022; C. Guo, J. Katz, X. Wang, Y. Yu, *Efficient and
secure multiparty computation from fixed-key block ciphers*, IEEE S&P 2020 (the tweakable
hash); G. Asharov, Y. Lindell, T. Schneider, M. Zohner, *More efficient oblivious transfer and
extensions for faster secure computation*, CCS 2013 (correlated OT).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.prg import BLOCK, KAPPA, CorrelationRobustHash, Prg, transpose_bits
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.party import Party
from mpc.runtime.view import Receipt, uniform
from protocols.ot.checks import check_array, check_count, choice_bits
from protocols.ot.softspoken import (
    check_k,
    punctured_seeds_prover,
    punctured_seeds_verifier,
    vole_prover,
    vole_verifier,
)

EXTENSION_U = uniform(
    "ot/extension-u", "the extension receiver's matrix u: its choices under PRG masks"
)
EXTENSION_REPLY = uniform(
    "ot/extension-reply",
    "the extension sender's answers: messages or corrections masked by hashes the receiver "
    "can compute for its choices only",
)

__all__ = [
    "CHUNK_OTS",
    "EXTENSION_REPLY",
    "EXTENSION_U",
    "K_BITS",
    "ExtensionReceiver",
    "ExtensionSender",
    "correlated_ots_receive",
    "correlated_ots_send",
    "extension_receiver",
    "extension_sender",
    "kept_rows_receive",
    "kept_rows_send",
    "random_bits_receive",
    "random_bits_send",
    "random_ots_receive",
    "random_ots_send",
]

#: OTs per batch: the receiver's matrix of one batch is ``κ/8 * CHUNK_OTS`` = 4 MiB, far below
#: the default frame limit (64 MiB), and the work per batch is a few tens of milliseconds.
CHUNK_OTS = 2**18
#: Hash blocks of the pads of one batch of vector OTs or one-hot products (16 MiB): wide pads
#: make batches of fewer OTs, never more memory.
PAD_BLOCKS = 2**20
#: The small field's width ``k`` of a session (:mod:`protocols.ot.softspoken`): the receiver
#: sends ``κ/k`` bits per OT; ``k = 1`` is IKNP's ``κ``.
K_BITS = 2
#: Batches the extension receiver sends before it waits for the first answer: the peer never
#: buffers more than this many matrices, and both parties compute at the same time.
WINDOW = 2


Role = Literal["A", "B"]


# --------------------------------------------------------------------------- base OT (math)


# --------------------------------------------------------------------------- base OT (network)


# --------------------------------------------------------------------------- PRG, hash, transpose


# --------------------------------------------------------------------------- extension sessions


class _Session:
    __slots__ = ("_hash", "_uses", "peer", "tag")

    def __init__(self, peer: str, tag: str, hash_key: bytes) -> None:
        self.peer, self.tag = peer, tag
        self._hash = CorrelationRobustHash(hash_key)
        self._uses = 0

    @property
    def hash(self) -> CorrelationRobustHash:
        """The session's hash ``H`` (its key is public: hashed from the base-OT transcript)."""
        return self._hash

    def reserve(self, batches: int) -> int:
        """The number of the first of ``batches`` new batch numbers of this session (each a
        fresh PRG nonce and hash tweak); both parties reserve in the same order."""
        return self._reserve(batches)

    def _reserve(self, batches: int) -> int:
        """The number of the first of ``batches`` new batches (each a fresh PRG nonce)."""
        first, self._uses = self._uses, self._uses + batches
        if self._uses >= 2**64:
            raise ConfigError("this OT-extension session has used all its batch numbers")
        return first

    def __repr__(self) -> str:
        return f"{type(self).__name__}(peer={self.peer!r}, tag={self.tag!r}, batches={self._uses})"


class ExtensionSender(_Session):
    """The extension sender's side of a session with ``peer``: its secret ``s`` (``Δ``, the
    negation of its base-OT choice bits) and every leaf seed but the punctured one of each
    block (:mod:`protocols.ot.softspoken`, ``k`` bits a block). Made by
    :func:`extension_sender`; never serialised; ``repr`` shows no secret."""

    __slots__ = ("_mask", "_prg", "_s_bits", "_s_words", "k")

    def __init__(
        self, peer: str, tag: str, hash_key: bytes, s: np.ndarray, leaves: np.ndarray, k: int
    ) -> None:
        super().__init__(peer, tag, hash_key)
        self.k = k
        self._s_bits = s.astype(bool)
        self._s_words = np.packbits(s, bitorder="little").view("<u8")
        self._mask = np.where(self._s_bits, 0xFF, 0).astype(np.uint8).reshape(KAPPA // k, k, 1)
        self._prg = Prg(leaves.reshape(-1, BLOCK))

    @property
    def message_rows(self) -> int:
        """The rows of the receiver's matrix of a batch (``κ/k``)."""
        return KAPPA // self.k

    def absorb(self, use: int, c: np.ndarray) -> np.ndarray:
        """The rows ``q`` (``(κ, nb)``) of batch ``use`` from the receiver's ``c``:
        ``q = t ⊕ r s``."""
        q = vole_verifier(self._prg, use, c.shape[1], self.k)
        q ^= c[:, None, :] & self._mask
        return q.reshape(KAPPA, c.shape[1])

    def aes_blocks(self, nb: int) -> int:
        return (2**self.k - 1) * self.message_rows * nb // BLOCK


class ExtensionReceiver(_Session):
    """The extension receiver's side of a session with ``peer``: every leaf seed of every
    block (:mod:`protocols.ot.softspoken`). Made by :func:`extension_receiver`; never
    serialised."""

    __slots__ = ("_prg", "k")

    def __init__(self, peer: str, tag: str, hash_key: bytes, leaves: np.ndarray, k: int) -> None:
        super().__init__(peer, tag, hash_key)
        self.k = k
        self._prg = Prg(leaves.reshape(-1, BLOCK))

    def expand(self, use: int, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows ``t`` (``(κ, nb)``) of batch ``use`` and the message ``c = u ⊕ r``
        (``(κ/k, nb)``) for the packed choice bits ``packed`` (``nb`` bytes)."""
        u, t = vole_prover(self._prg, use, len(packed), self.k)
        u ^= packed
        return t, u

    def aes_blocks(self, nb: int) -> int:
        return 2**self.k * (KAPPA // self.k) * nb // BLOCK


async def extension_sender(
    party: Party, peer: str, *, tag: str = "ot", k: int | None = None
) -> ExtensionSender:
    """Set up OT extension as its *sender* (the base-OT receiver, with a uniform secret
    ``s``): 128 base OTs with ``peer``, which calls :func:`extension_receiver` with the same
    ``k`` (:data:`K_BITS` by default), then the punctured seeds. One round trip and a
    message."""
    k = check_k(K_BITS if k is None else k)
    s = np.unpackbits(np.frombuffer(randomness.token_bytes(BLOCK, f"{tag}/s"), np.uint8),
                      bitorder="little")  # fmt: skip
    leaves, digest = await punctured_seeds_verifier(party, peer, s, k, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "receiver", "ots": KAPPA, "k": k},
                        step=tag)  # fmt: skip
    return ExtensionSender(peer, tag, digest, s, leaves, k)


async def extension_receiver(
    party: Party, peer: str, *, tag: str = "ot", k: int | None = None
) -> ExtensionReceiver:
    """Set up OT extension as its *receiver* (the base-OT sender): 128 base OTs with ``peer``,
    which calls :func:`extension_sender` with the same ``k``, and the punctured seeds' sums.
    One round trip and a message."""
    k = check_k(K_BITS if k is None else k)
    leaves, digest = await punctured_seeds_prover(party, peer, k, tag)
    party.ledger.record("ot/base", {"peer": peer, "role": "sender", "ots": KAPPA, "k": k},
                        step=tag)  # fmt: skip
    return ExtensionReceiver(peer, tag, digest, leaves, k)


# --------------------------------------------------------------------------- IKNP batches


def record_ots(party: Party, label: str, session: _Session, role: str, **sizes: int) -> None:
    """Put on record what this party learned: the sizes, which the messages show anyway."""
    party.ledger.record(label, {"peer": session.peer, "role": role, **sizes}, step=session.tag)


def _padded(m: int) -> int:
    """``m`` rounded up to whole AES blocks of bits (the matrices' rows are PRG blocks)."""
    return -(-m // KAPPA) * KAPPA


def split_batches(m: int, size: int) -> list[int]:
    return [min(size, m - start) for start in range(0, m, size)]


async def extend_as_sender(
    party: Party,
    session: ExtensionSender,
    sizes: Sequence[int],
    answer: Callable[[int, Any, np.ndarray], Any],
    *,
    blocks: int = 1,
    ones_only: bool = False,
    raw: bool = False,
) -> None:
    """Batches of ``sizes`` OTs as the extension sender: receive ``u``, form the rows ``q_j``
    and send ``answer(batch, H(j, q_j), H(j, q_j ⊕ s))`` back (None: an acknowledgement),
    each hash ``blocks`` blocks long; with ``ones_only`` the first hash is not computed
    (None); with ``raw`` nothing is hashed: ``answer(batch, None, q_j ⊕ s)`` gets the rows
    themselves (``(m, 16)`` uint8)."""
    first = session._reserve(len(sizes))
    peer = session.peer
    for c, m in enumerate(sizes):
        use = first + c
        step = f"{session.tag}/{use}/u"
        got = await party.recv(peer, step, EXTENSION_U)
        nb = _padded(m) // 8
        u = check_array(got, np.uint8, (session.message_rows, nb), peer, "a matrix u", step)
        rows = transpose_bits(session.absorb(use, u))[:m]
        x0 = None if ones_only or raw else session._hash(rows, use, blocks)
        rows.view("<u8")[...] ^= session._s_words  # q_j ⊕ s
        x1 = rows if raw else session._hash(rows, use, blocks)
        await party.send(peer, f"{session.tag}/{use}/reply", answer(c, x0, x1))
        party.metrics.count("ot_extended", m)
        hashes = 0 if raw else 1 if ones_only else 2
        party.metrics.count("aes_blocks", session.aes_blocks(nb) + hashes * m * (1 + blocks))


async def extend_as_receiver(
    party: Party,
    session: ExtensionReceiver,
    sizes: Sequence[int],
    choices: Callable[[int], np.ndarray],
    settle: Callable[[int, np.ndarray, np.ndarray, Any, str], None],
    *,
    blocks: int = 1,
    raw: bool = False,
    reply: Receipt = EXTENSION_REPLY,
) -> None:
    """Batches of ``sizes`` OTs as the extension receiver with ``choices(batch)``: send ``u``,
    hash the rows ``t_j`` (``blocks`` blocks each) and call ``settle(batch, bits, H(j, t_j),
    the sender's answer, its tag)``; with ``raw``, ``settle`` gets the rows ``t_j``
    themselves. ``reply`` is the receipt of the sender's answers (a caller whose answers
    open something to this side declares what)."""
    first = session._reserve(len(sizes))
    peer = session.peer
    pending: deque[tuple[int, int, np.ndarray, np.ndarray]] = deque()

    async def settle_oldest() -> None:
        c, use, bits, h = pending.popleft()
        step = f"{session.tag}/{use}/reply"
        settle(c, bits, h, await party.recv(peer, step, reply), step)

    for c, m in enumerate(sizes):
        use = first + c
        bits = choices(c)
        nb = _padded(m) // 8
        packed = np.zeros(nb, dtype=np.uint8)
        packed[: -(-m // 8)] = np.packbits(bits, bitorder="little")
        t, u = session.expand(use, packed)
        await party.send(peer, f"{session.tag}/{use}/u", u)
        rows = transpose_bits(t)[:m]
        pending.append((c, use, bits, rows if raw else session._hash(rows, use, blocks)))
        party.metrics.count("ot_extended", m)
        party.metrics.count("aes_blocks", session.aes_blocks(nb) + (0 if raw else m * (1 + blocks)))
        if len(pending) >= WINDOW:
            await settle_oldest()
    while pending:
        await settle_oldest()


def _words(rows: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each 16-byte row as a little-endian uint64."""
    return np.ascontiguousarray(rows).view("<u8")[:, 0].astype(np.uint64)


def _check_ack(reply: Any, peer: str, step: str) -> None:
    if reply is not None:
        raise ProtocolError(f"OT: {peer} sent, at {step}, an answer where none was expected")


async def random_ots_send(
    party: Party, session: ExtensionSender, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random OTs as the sender: ``(x0, x1)``, two ``(m, 16)`` uint8 arrays of uniform
    messages; the receiver (:func:`random_ots_receive`) gets one of each pair."""
    m = check_count(m, "the number of OTs m")
    x0 = np.empty((m, BLOCK), dtype=np.uint8)
    x1 = np.empty_like(x0)
    sizes = split_batches(m, CHUNK_OTS)

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> None:
        start = c * CHUNK_OTS
        x0[start : start + sizes[c]] = h0
        x1[start : start + sizes[c]] = h1

    await extend_as_sender(party, session, sizes, answer)
    record_ots(party, "ot/random", session, "sender", ots=m)
    return x0, x1


async def random_ots_receive(
    party: Party, session: ExtensionReceiver, m: int, *, choices: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random OTs as the receiver: ``(bits, x)`` with ``x[j] = x_{bits[j]}[j]`` of the
    sender's pairs, ``bits`` uniform from the OS generator unless ``choices`` gives them."""
    m = check_count(m, "the number of OTs m")
    if choices is None:
        bits = randomness.bits(m, "ot/random-choices")
    else:
        bits = choice_bits(choices, "choices")
        if len(bits) != m:
            raise ConfigError(f"choices has {len(bits)} bits, but m = {m}")
    x = np.empty((m, BLOCK), dtype=np.uint8)
    sizes = split_batches(m, CHUNK_OTS)

    def settle(c: int, _bits_c: np.ndarray, h: np.ndarray, reply: Any, step: str) -> None:
        _check_ack(reply, session.peer, step)
        x[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]] = h

    await extend_as_receiver(
        party, session, sizes, lambda c: bits[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]], settle
    )
    record_ots(party, "ot/random", session, "receiver", ots=m)
    return bits, x


async def random_bits_send(
    party: Party, session: ExtensionSender, m: int, width: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`random_ots_send` of messages of ``width`` bits (at most 8): the low bits of
    the first byte of each hash, kept batch by batch (``(m,)`` uint8 each), so that a run
    of many OTs never holds their whole 16-byte messages."""
    m = check_count(m, "the number of OTs m")
    mask = np.uint8((1 << width) - 1)
    x0, x1 = np.empty(m, dtype=np.uint8), np.empty(m, dtype=np.uint8)
    sizes = split_batches(m, CHUNK_OTS)

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> None:
        part = slice(c * CHUNK_OTS, c * CHUNK_OTS + sizes[c])
        x0[part], x1[part] = h0[:, 0] & mask, h1[:, 0] & mask

    await extend_as_sender(party, session, sizes, answer)
    record_ots(party, "ot/random", session, "sender", ots=m)
    return x0, x1


async def random_bits_receive(
    party: Party, session: ExtensionReceiver, m: int, width: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """The receiver's side of :func:`random_bits_send`: ``(choices, x)``, its uniform choice
    bits (OS generator) and the ``width`` low bits of the message it chose."""
    m = check_count(m, "the number of OTs m")
    mask = np.uint8((1 << width) - 1)
    bits = randomness.bits(m, "ot/random-choices")
    x = np.empty(m, dtype=np.uint8)
    sizes = split_batches(m, CHUNK_OTS)

    def settle(c: int, _bits_c: np.ndarray, h: np.ndarray, reply: Any, step: str) -> None:
        _check_ack(reply, session.peer, step)
        x[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]] = h[:, 0] & mask

    await extend_as_receiver(
        party, session, sizes, lambda c: bits[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]], settle
    )
    record_ots(party, "ot/random", session, "receiver", ots=m)
    return bits.astype(np.uint8), x


async def kept_rows_send(party: Party, session: ExtensionSender, m: int) -> np.ndarray:
    """``m`` OTs whose rows this side keeps, as the extension sender: the ``(m, 2)`` uint64
    prefixes (:meth:`CorrelationRobustHash.prefix`) of the rows ``q_j ⊕ s``, so that
    ``H((j + b 2^32, use), q_j ⊕ s)`` can be formed later for any batch number ``use`` the
    session reserves: the message ``x_j^1`` of OT ``j``, as wide as wanted, as often as
    wanted. The receiver (:func:`kept_rows_receive`) can form it where it chose 1. The
    sender answers each batch with an acknowledgement only."""
    m = check_count(m, "the number of OTs m")
    out = np.empty((m, 2), dtype=np.uint64)
    sizes = split_batches(m, CHUNK_OTS)

    def answer(c: int, _h0: Any, rows: np.ndarray) -> None:
        start = c * CHUNK_OTS
        out[start : start + sizes[c]] = session.hash.prefix(rows, start)

    await extend_as_sender(party, session, sizes, answer, raw=True)
    record_ots(party, "ot/kept", session, "sender", ots=m)
    return out


async def kept_rows_receive(party: Party, session: ExtensionReceiver, choices: Any) -> np.ndarray:
    """The receiver's side of :func:`kept_rows_send` with ``choices`` (bits): the prefixes of
    its rows ``t_j`` (``= q_j ⊕ s`` where it chose 1, so that it forms the same ``x_j^1``;
    where it chose 0 it holds ``q_j`` and ``x_j^1`` stays hidden from it)."""
    bits = choice_bits(choices, "choices")
    m = len(bits)
    out = np.empty((m, 2), dtype=np.uint64)
    sizes = split_batches(m, CHUNK_OTS)

    def settle(c: int, _bits_c: np.ndarray, rows: np.ndarray, reply: Any, step: str) -> None:
        _check_ack(reply, session.peer, step)
        start = c * CHUNK_OTS
        out[start : start + sizes[c]] = session.hash.prefix(rows, start)

    await extend_as_receiver(
        party, session, sizes, lambda c: bits[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]], settle,
        raw=True,
    )  # fmt: skip
    record_ots(party, "ot/kept", session, "receiver", ots=m)
    return out


def cot_answer(delta: np.ndarray, h0: np.ndarray, h1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sender's output ``x = x^0`` and message ``τ = x^1 - x^0 - Δ`` (mod ``2^64``)."""
    x = _words(h0)
    return x, _words(h1) - x - delta


def cot_settle(bits: np.ndarray, h: np.ndarray, tau: Any, peer: str, step: str) -> np.ndarray:
    """The receiver's ``y = H(t_j) - r_j τ_j`` (``= x_j + r_j Δ_j``)."""
    tau = check_array(tau, np.uint64, (len(bits),), peer, "the corrections τ", step)
    return _words(h) - tau * bits.astype(np.uint64)


def ring_vector(values: Any, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype != np.uint64:
        raise ConfigError(
            f"{what} must be a 1-d uint64 array (elements of Z_2^64), got "
            f"{arr.dtype} of shape {arr.shape}"
        )
    return arr


async def correlated_ots_send(
    party: Party, session: ExtensionSender, delta: np.ndarray
) -> np.ndarray:
    """Correlated OTs over ``Z_{2^64}`` as the sender with correlations ``delta`` (a 1-d uint64
    array, one ``Δ_j`` per OT; ``np.full(m, Δ)`` for one correlation): the uniform ``x``
    (uint64) such that the receiver gets ``x + bits * delta``."""
    delta = ring_vector(delta, "delta")
    m = len(delta)
    out = np.empty(m, dtype=np.uint64)
    sizes = split_batches(m, CHUNK_OTS)

    def answer(c: int, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
        part = slice(c * CHUNK_OTS, c * CHUNK_OTS + sizes[c])
        out[part], tau = cot_answer(delta[part], h0, h1)
        return tau

    await extend_as_sender(party, session, sizes, answer)
    record_ots(party, "ot/correlated", session, "sender", ots=m)
    return out


async def correlated_ots_receive(
    party: Party, session: ExtensionReceiver, choices: Any
) -> np.ndarray:
    """Correlated OTs over ``Z_{2^64}`` as the receiver with ``choices`` (bits): ``y = x +
    choices * delta`` (uint64, mod ``2^64``) for the sender's ``x`` and ``delta``."""
    bits = choice_bits(choices, "choices")
    m = len(bits)
    out = np.empty(m, dtype=np.uint64)
    sizes = split_batches(m, CHUNK_OTS)

    def settle(c: int, bits_c: np.ndarray, h: np.ndarray, tau: Any, step: str) -> None:
        part = slice(c * CHUNK_OTS, c * CHUNK_OTS + sizes[c])
        out[part] = cot_settle(bits_c, h, tau, session.peer, step)

    await extend_as_receiver(
        party, session, sizes, lambda c: bits[c * CHUNK_OTS : c * CHUNK_OTS + sizes[c]], settle
    )
    record_ots(party, "ot/correlated", session, "receiver", ots=m)
    return out


# --------------------------------------------------------------------------- Gilboa, Beaver


# --------------------------------------------------------------------------- vectors, rings
