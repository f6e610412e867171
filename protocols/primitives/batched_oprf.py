"""The batched oblivious PRF of Kolesnikov, Kumaresan, Rosulek & Trieu (CCS 2016, their
"BaRK-OPRF"), semi-honest, between two parties: the *receiver* holds ``n`` distinct
16-byte elements and learns a pseudorandom tag of each; the *sender* learns nothing and gets a
key with which it can compute the tag of any element, its own included. Two equal tags mean
equal elements (the tags are 128 bits; a false match among ``10^6 x 3 10^6`` comparisons has
probability below ``2^-86``).

Roles and steps (``w = 512`` code bits, ``m ≈ 1.27 n`` bins):

1. **base OTs**, roles swapped as in IKNP (:mod:`protocols.ot.iknp`): ``w`` Chou-Orlandi OTs
   (:mod:`protocols.ot.base_ot`), the receiver as their sender with seeds ``k_i^0, k_i^1``,
   the sender as their receiver with a uniform secret ``s ∈ {0,1}^w`` as its choices;
2. **hashing**: the receiver draws a 16-byte seed, which it sends, and places its elements by
   cuckoo hashing into ``m`` bins (:mod:`mpc.crypto.cuckoo`), one per bin; bin ``j`` holds
   ``r_j`` (an element, or a random row where empty);
3. **extension**: with the pseudorandom code ``C`` (AES-128 under a key hashed from the seed,
   four blocks: a 512-bit word per element), the receiver sends ``u_i = G(k_i^0) ⊕ G(k_i^1) ⊕
   c_i`` for each bit ``i`` of the code, ``c_i`` column ``i`` of the matrix whose row ``j`` is
   ``C(r_j)``; the sender forms ``q_i = G(k_i^{s_i}) ⊕ s_i u_i``, so that row ``j`` satisfies
   ``q_j = t_j ⊕ (C(r_j) ∧ s)`` with ``t_j`` row ``j`` of the receiver's ``G(k_i^0)``;
4. **tags**: the receiver's tag of the element in bin ``j``, placed there by hash function
   ``h``, is ``F(j, h, t_j)``; the sender's tags of any element ``x`` are ``F(h_i(x), i, q_{h_i(x)}
   ⊕ (C(x) ∧ s))`` for its three candidate bins (:meth:`OprfKey.tags`), one of which equals the
   receiver's tag when the receiver holds ``x``. ``F`` is SHA-256 of the bin, the hash
   function's index and the row, cut to 16 bytes.

What each learns (semi-honest; each element the sender tags and the receiver's row of each
bin it tags it in at least ``κ = 128`` code bits apart, which two random 512-bit words are
except with probability ``2^-102``: ``2^-80`` over the ``3 10^6`` pairs of a million
elements): the sender receives the base-OT points and ``u``, each ``u_i`` masked by
``G(k_i^{1-s_i})``, which it lacks (uniform, whatever the elements), and the seed (fresh
randomness); the receiver receives the base-OT key and nothing else. The sizes ``n`` and
``m`` are public. Tags the sender computes for an element the receiver lacks are uniform to
the receiver: they hide the ``≥ κ`` bits of ``s`` where ``C(x)`` and ``C(r_j)`` differ.

Cost: ``w`` base OTs; ``m w`` bits from receiver to sender (81 MB for a million elements);
two ``m x w`` bit transposes; one SHA-256 per tag.

References: V. Kolesnikov, R. Kumaresan, M. Rosulek, N. Trieu, *Efficient batched oblivious
PRF with applications to private set intersection*, CCS 2016; Y. Ishai, J. Kilian, K. Nissim,
E. Petrank, *Extending oblivious transfers efficiently*, CRYPTO 2003.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.crypto import randomness
from mpc.crypto.cuckoo import HASHES, CuckooFailure, bins_for, candidate_bins, cuckoo_table
from mpc.crypto.prg import Prg, transpose_bits
from mpc.runtime.expect import raw
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.ot.base_ot import base_ot_receiver, base_ot_sender
from protocols.ot.checks import check_array

__all__ = [
    "CODE_BITS",
    "ELEMENT_BYTES",
    "TAG_BYTES",
    "OprfKey",
    "oprf_receive",
    "oprf_send",
]

#: bits of the pseudorandom code: the number of base OTs and the width of a row
CODE_BITS = 512
_CODE_BYTES = CODE_BITS // 8
#: bytes of an element (a keyed hash of a record id)
ELEMENT_BYTES = 16
#: bytes of a tag
TAG_BYTES = 16
#: bins per message of the matrix ``u`` (4 MiB)
BATCH_BINS = 2**16
#: elements per pass of the sender's tags (bounds its memory)
_TAG_CHUNK = 2**18
_SEED_BYTES = 16
_CODE_DOMAIN = b"mpc/oprf/code/v1"

SEED = uniform("oprf/seed", "the receiver's fresh seed of the hash functions and the code")
U_MATRIX = uniform(
    "oprf/u", "the receiver's code matrix under PRG masks the sender lacks half the keys of"
)


def codewords(elements: np.ndarray, seed: bytes) -> np.ndarray:
    """``C(x)`` for every 16-byte row: ``(n, 64)`` uint8, AES-128 of ``x ⊕ i`` (``i`` in the
    last byte, ``i = 0..3``) under a key hashed from ``seed``."""
    rows = np.ascontiguousarray(elements, dtype=np.uint8).reshape(-1, ELEMENT_BYTES)
    blocks = np.repeat(rows, _CODE_BYTES // 16, axis=0)
    blocks[:, -1] ^= np.tile(np.arange(_CODE_BYTES // 16, dtype=np.uint8), len(rows))
    key = hashlib.sha256(_CODE_DOMAIN + seed).digest()[:16]
    out = bytearray(blocks.nbytes + 15)
    n = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update_into(blocks.data, out)
    return np.frombuffer(out, dtype=np.uint8, count=n).reshape(-1, _CODE_BYTES)


def tag_hash(bins: np.ndarray, hash_index: np.ndarray | int, rows: np.ndarray) -> np.ndarray:
    """``F(j, h, row)``: SHA-256 of the bin (4 bytes, little-endian), the hash function's
    index (1 byte) and the 64-byte row, cut to :data:`TAG_BYTES`; ``(n, 16)`` uint8."""
    n = len(rows)
    buf = np.empty((n, 5 + _CODE_BYTES), dtype=np.uint8)
    buf[:, :4] = np.asarray(bins, dtype="<u4").view(np.uint8).reshape(n, 4)
    buf[:, 4] = hash_index
    buf[:, 5:] = rows
    data = memoryview(buf.tobytes())
    width = buf.shape[1]
    sha = hashlib.sha256
    out = b"".join(
        [sha(data[o : o + width]).digest()[:TAG_BYTES] for o in range(0, n * width, width)]
    )
    return np.frombuffer(out, dtype=np.uint8).reshape(n, TAG_BYTES)


def _batches(m: int) -> Iterator[tuple[int, int, int]]:
    """``(batch, first bin, bins)`` over ``m`` bins (each a multiple of 512)."""
    for c, start in enumerate(range(0, m, BATCH_BINS)):
        yield c, start, min(BATCH_BINS, m - start)


class OprfKey:
    """The sender's key of one OPRF session with ``peer``: the secret ``s``, the rows ``q_j``
    and the public seed; :meth:`tags` computes the tags of any elements. Never serialised;
    ``repr`` shows no secret."""

    __slots__ = ("_q", "_s", "bins", "peer", "seed")

    def __init__(self, peer: str, seed: bytes, s: np.ndarray, q: np.ndarray) -> None:
        self.peer, self.seed, self.bins = peer, seed, len(q)
        self._s, self._q = s, q

    def __repr__(self) -> str:
        return f"OprfKey(peer={self.peer!r}, bins={self.bins})"

    def tags(self, elements: np.ndarray) -> np.ndarray:
        """The sender's tags of ``elements`` (``(n, 16)`` uint8) in each of their three
        candidate bins: ``(n, 3, 16)`` uint8; one of them equals the receiver's tag of an
        element it holds."""
        rows = np.ascontiguousarray(elements, dtype=np.uint8).reshape(-1, ELEMENT_BYTES)
        out = np.empty((len(rows), HASHES, TAG_BYTES), dtype=np.uint8)
        for start in range(0, len(rows), _TAG_CHUNK):
            part = rows[start : start + _TAG_CHUNK]
            bins = candidate_bins(part, self.seed, self.bins)
            masked = codewords(part, self.seed) & self._s
            for i in range(HASHES):
                q = self._q[bins[:, i]] ^ masked
                out[start : start + len(part), i] = tag_hash(bins[:, i], i, q)
        return out


async def oprf_send(party: Party, peer: str, n_receiver: int, *, tag: str) -> OprfKey:
    """The sender's side with ``peer`` (which holds ``n_receiver`` elements and calls
    :func:`oprf_receive`): base OTs with a fresh secret ``s``, then the receiver's matrix;
    returns the key. The sender learns nothing of the receiver's elements."""
    s_bytes = randomness.token_bytes(_CODE_BYTES, f"{tag}/s")
    s_bits = np.unpackbits(np.frombuffer(s_bytes, np.uint8), bitorder="little")
    seeds, _ = await base_ot_receiver(party, peer, s_bits, f"{tag}/base")
    seed = await party.recv(peer, f"{tag}/seed", SEED, expect=raw(_SEED_BYTES))
    m = bins_for(n_receiver)
    prg, chosen = Prg(seeds), s_bits.astype(bool)
    q = np.empty((m, _CODE_BYTES), dtype=np.uint8)
    for c, start, size in _batches(m):
        step = f"{tag}/u{c}"
        got = await party.recv(peer, step, U_MATRIX)
        u = check_array(got, np.uint8, (CODE_BITS, size // 8), peer, "a matrix u", step)
        cols = prg.rows(c, size // 8)
        cols[chosen] ^= u[chosen]
        q[start : start + size] = transpose_bits(cols)
    party.metrics.count("aes_blocks", CODE_BITS * m // 128)
    party.ledger.record("oprf", {"peer": peer, "role": "sender", "elements": n_receiver},
                        step=tag)  # fmt: skip
    return OprfKey(peer, seed, np.frombuffer(s_bytes, np.uint8).copy(), q)


async def oprf_receive(party: Party, peer: str, elements: np.ndarray, *, tag: str) -> np.ndarray:
    """The receiver's side with ``peer`` (which calls :func:`oprf_send`): the tag of each of
    ``elements`` (``(n, 16)`` uint8, distinct), ``(n, 16)`` uint8 in their order. The
    receiver learns these tags and nothing else."""
    rows = np.ascontiguousarray(elements, dtype=np.uint8).reshape(-1, ELEMENT_BYTES)
    n, m = len(rows), bins_for(len(rows))
    k0, k1, _ = await base_ot_sender(party, peer, CODE_BITS, f"{tag}/base")
    for _attempt in range(8):  # a failure has probability ~2^-40: a new seed, at most a few
        seed = randomness.token_bytes(_SEED_BYTES, f"{tag}/seed")
        bins = candidate_bins(rows, seed, m)
        try:
            table, slot = cuckoo_table(bins, m)
            break
        except CuckooFailure:
            continue
    else:
        raise CuckooFailure(f"{party.name}: {n} elements could not be placed in {m} bins")
    await party.send(peer, f"{tag}/seed", seed)
    held = table >= 0
    code = np.frombuffer(randomness.token_bytes(m * _CODE_BYTES, f"{tag}/empty"), np.uint8)
    code = code.reshape(m, _CODE_BYTES).copy()
    code[held] = codewords(rows[table[held]], seed)
    prg0, prg1 = Prg(k0), Prg(k1)
    t = np.empty((m, _CODE_BYTES), dtype=np.uint8)
    for c, start, size in _batches(m):
        cols = prg0.rows(c, size // 8)
        u = prg1.rows(c, size // 8)
        u ^= cols
        u ^= transpose_bits(code[start : start + size])
        await party.send(peer, f"{tag}/u{c}", u)
        t[start : start + size] = transpose_bits(cols)
    where = bins[np.arange(n), slot]
    party.metrics.count("aes_blocks", 2 * CODE_BITS * m // 128)
    party.metrics.count("sha256", n)
    party.ledger.record("oprf", {"peer": peer, "role": "receiver", "elements": n}, step=tag)
    return tag_hash(where, slot, t[where])
