"""SoftSpokenOT's small-field VOLE (Roy, CRYPTO 2022): the correlation of OT extension made
from ``κ/k`` punctured sets of ``2^k`` seeds, so that the extension receiver sends ``κ/k``
bits per OT instead of IKNP's ``κ``, at the price of ``2^k`` seed expansions per ``k`` bits.

Roles, as in :mod:`protocols.ot.iknp`: the extension *receiver* (the VOLE prover, the
base-OT sender) holds every seed; the extension *sender* (the VOLE verifier, the base-OT
receiver) holds a uniform ``Δ`` of ``κ`` bits, read as ``B = κ/k`` elements ``Δ_i`` of
``F_{2^k}`` (``k`` bits each), and every seed of block ``i`` but the one of index ``Δ_i``.

**Puncturing** (:func:`punctured_seeds_prover`, :func:`punctured_seeds_verifier`; the GGM
tree with one base OT per level, Section 4 of the paper). For each block the prover's
``k`` base OTs give it pairs ``(m_0, m_1)`` of random seeds, the verifier ``m_c`` with
``c = 1 - Δ_{i,ℓ}`` for level ``ℓ``. Level 1's two nodes are ``m_0`` and ``m_1``; each
node of level ``ℓ`` is expanded by ``G`` into its two children (bit ``ℓ`` of the index 0
and 1), and the prover sends, for each level below the first, the xor of all the
children of each side masked by that level's pair: ``e_b = ⊕_p child(p, b) ⊕ m_b``. The
verifier, knowing every node of level ``ℓ`` but the one on ``Δ_i``'s path, learns the
sibling of that path at level ``ℓ + 1`` from ``e_c ⊕ m_c``; at the leaves it holds all
``2^k`` seeds but ``s_{Δ_i}``. It receives ``2 (k - 1)`` masked sums per block, each
uniform to it (one of each pair is masked by the base OT's pad it lacks, the other by a
seed whose sibling it cannot expand).

**Small-field VOLE** (Section 5, :func:`vole_prover`, :func:`vole_verifier`). Per batch of
``m`` OTs every seed is expanded to ``m`` bits ``r_x = G(s_x)``. The prover forms
``u_i = ⊕_x r_x`` and ``v_i = ⊕_x x · r_x`` (``k`` bit-planes: plane ``b`` is the xor of the
``r_x`` whose index has bit ``b``); the verifier, without ``r_{Δ_i}``, forms
``w_i = ⊕_{x ≠ Δ_i} (Δ_i ⊕ x) · r_x``, which is ``v_i ⊕ Δ_i u_i`` (the missing seed's
coefficient is zero). The prover sends ``c_i = u_i ⊕ r`` for its choice bits ``r`` (the
extension's only message, ``κ/k`` rows of ``m`` bits); the verifier's
``q_i = w_i ⊕ Δ_i c_i = v_i ⊕ Δ_i r``. Read as ``κ``-bit rows, ``q_j = t_j ⊕ r_j Δ`` with
``t = v``: IKNP's correlation exactly, with ``Δ`` uniform over ``{0,1}^κ``, so the
correlation-robust hash and everything built on it (:mod:`protocols.ot.iknp`) are unchanged.
``c_i`` is uniform to the verifier: ``u_i`` contains ``r_{Δ_i}``, the expansion of the one
seed it lacks. With ``k = 1`` this is IKNP (two seeds per base OT, ``κ`` rows).

Cost per OT: ``κ/k`` bits sent; ``2^k κ/k`` PRG bits expanded by the prover and
``(2^k - 1) κ/k`` by the verifier (``k = 2``: IKNP's expansion at the prover, half its
bytes; ``k = 4``: a quarter of the bytes for twice or four times the expansion). Setup:
``κ`` base OTs for any ``k``, then ``32 (k - 1) κ/k`` bytes from the prover.

What each party learns: nothing of the other's secrets (the verifier's ``Δ`` is hidden by
the base OTs' choices; the prover's choice bits by ``r_{Δ_i}``); semi-honest security, as
the paper's Section 5 for the repetition code.

References: L. Roy, *SoftSpokenOT: Quieter OT extension from small-field silent VOLE in the
Minicrypt model*, CRYPTO 2022; O. Goldreich, S. Goldwasser, S. Micali, *How to construct
random functions*, JACM 1986 (the tree); Y. Ishai, J. Kilian, K. Nissim, E. Petrank, CRYPTO
2003 (the extension it generalises).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from mpc.crypto.prg import BLOCK, KAPPA, Prg
from mpc.errors import ConfigError
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.ot.base_ot import base_ot_receiver, base_ot_sender
from protocols.ot.checks import check_array

PUNCTURE = uniform(
    "ot/puncture",
    "the extension receiver's xor of each level's seeds on each side, masked by a base OT's "
    "pad (the sender learns the side it chose, the sibling of its punctured path)",
)

__all__ = [
    "K_CHOICES",
    "PUNCTURE",
    "punctured_seeds_prover",
    "punctured_seeds_verifier",
    "vole_prover",
    "vole_verifier",
]

#: the widths of a small field this module makes VOLE in (``k`` divides ``κ``; 8 and more
#: would expand ``2^k`` seeds per ``k`` bits for little saving)
K_CHOICES = (1, 2, 4)
#: the counter block of a tree node's expansion into its children (a node's key expands
#: nothing else: the leaves are other keys)
_TREE_USE = 2**64 - 1


def check_k(k: int) -> int:
    if k not in K_CHOICES:
        raise ConfigError(f"the small field's width k must be one of {K_CHOICES}, got {k!r}")
    return k


def _children(nodes: np.ndarray) -> np.ndarray:
    """``G`` of every node (``(..., 16)``) into its two children: ``(..., 2, 16)``."""
    flat = nodes.reshape(-1, BLOCK)
    out = Prg(flat).rows(_TREE_USE, 2 * BLOCK)
    return out.reshape(*nodes.shape[:-1], 2, BLOCK)


def _level(nodes: np.ndarray) -> np.ndarray:
    """The next level of a tree level ``(B, 2^ℓ, 16)`` (index ``p``): ``(B, 2^{ℓ+1}, 16)``,
    child ``b`` of node ``p`` at index ``p + b 2^ℓ``."""
    kids = _children(nodes)  # (B, 2^ℓ, 2, 16)
    return np.concatenate([kids[:, :, 0], kids[:, :, 1]], axis=1)


async def punctured_seeds_prover(
    party: Party, peer: str, k: int, tag: str
) -> tuple[np.ndarray, bytes]:
    """The prover's side of puncturing (the base-OT sender): every block's ``2^k`` leaf
    seeds, ``(κ/k, 2^k, 16)``, leaf ``x`` at index ``x``, and the base-OT transcript's
    digest; ``peer`` calls :func:`punctured_seeds_verifier`."""
    check_k(k)
    m0, m1, digest = await base_ot_sender(party, peer, KAPPA, tag)
    b = KAPPA // k
    m0, m1 = m0.reshape(b, k, BLOCK), m1.reshape(b, k, BLOCK)
    nodes = np.stack([m0[:, 0], m1[:, 0]], axis=1)  # level 1: (B, 2, 16)
    sums = np.empty((b, max(k - 1, 0), 2, BLOCK), dtype=np.uint8)
    for level in range(1, k):
        nodes = _level(nodes)
        half = nodes.shape[1] // 2
        sums[:, level - 1, 0] = np.bitwise_xor.reduce(nodes[:, :half], axis=1) ^ m0[:, level]
        sums[:, level - 1, 1] = np.bitwise_xor.reduce(nodes[:, half:], axis=1) ^ m1[:, level]
    if k > 1:
        await party.send(peer, f"{tag}/puncture", sums)
    return nodes, digest


async def punctured_seeds_verifier(
    party: Party, peer: str, delta: np.ndarray, k: int, tag: str
) -> tuple[np.ndarray, bytes]:
    """The verifier's side (the base-OT receiver) with ``delta`` (``κ`` bits, block ``i``'s
    ``Δ_i`` in bits ``i k .. i k + k - 1``, least significant first): every leaf seed but
    ``s_{Δ_i}``, indexed by ``y = x ⊕ Δ_i`` (``(κ/k, 2^k - 1, 16)``, leaf ``y`` at ``y - 1``),
    and the digest."""
    check_k(k)
    b = KAPPA // k
    bits = np.asarray(delta, dtype=np.uint8).reshape(b, k)
    got, digest = await base_ot_receiver(party, peer, (1 - bits).reshape(-1), tag)
    got = got.reshape(b, k, BLOCK)
    sums = np.empty((b, 0, 2, BLOCK), dtype=np.uint8)
    if k > 1:
        step = f"{tag}/puncture"
        sums = check_array(await party.recv(peer, step, PUNCTURE), np.uint8,
                           (b, k - 1, 2, BLOCK), peer, "the punctured sums", step)  # fmt: skip
    rows = np.arange(b)
    nodes = np.zeros((b, 2, BLOCK), dtype=np.uint8)
    nodes[rows, 1 - bits[:, 0]] = got[:, 0]
    path = bits[:, 0].astype(np.int64)  # the index of the unknown node at this level
    for level in range(1, k):
        nodes = _level(nodes)  # the unknown node's children are garbage, fixed below
        width = nodes.shape[1]
        half = width // 2
        c = 1 - bits[:, level]  # the side whose sum this verifier can open
        missing = path + c.astype(np.int64) * half  # the path's sibling at this level
        on_path = path + bits[:, level].astype(np.int64) * half
        nodes[rows, missing] = 0
        nodes[rows, on_path] = 0
        side = np.where(c[:, None, None] == 1, nodes[:, half:], nodes[:, :half])
        nodes[rows, missing] = (
            np.bitwise_xor.reduce(side, axis=1) ^ sums[rows, level - 1, c] ^ got[:, level]
        )
        path = on_path
    x = np.arange(1, 2**k)[None, :] ^ bits_value(bits)[:, None]  # leaf x of each y
    return nodes[rows[:, None], x], digest


def bits_value(bits: np.ndarray) -> np.ndarray:
    """Each row of ``bits`` (least significant first) as an integer."""
    return (bits.astype(np.int64) << np.arange(bits.shape[1])).sum(axis=1)


@cache
def _planes(k: int, first: int) -> tuple[np.ndarray, ...]:
    """For each bit ``b`` of ``k``, the positions of the indices ``first .. 2^k - 1`` that have
    it (the leaves whose expansions bit-plane ``b`` xors)."""
    idx = np.arange(first, 2**k)
    return tuple(np.flatnonzero((idx >> b) & 1) for b in range(k))


def _xor_planes(r: np.ndarray, k: int, first: int) -> np.ndarray:
    """``(B, k, nb)``: plane ``b`` of block ``i`` the xor of ``r[i, j]`` over the indices
    ``j + first`` with bit ``b``."""
    r64 = r.view(np.uint64)
    out = np.empty((r.shape[0], k, r64.shape[2]), dtype=np.uint64)
    for b, sel in enumerate(_planes(k, first)):
        out[:, b] = np.bitwise_xor.reduce(r64[:, sel], axis=1)
    return out.view(np.uint8)


def vole_prover(prg: Prg, use: int, nb: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The prover's ``u`` (``(κ/k, nb)``) and ``v`` (``(κ, nb)``, row ``i k + b`` plane ``b``
    of block ``i``) of batch ``use``, from its leaves' ``prg`` (``nb`` a multiple of 8)."""
    r = prg.rows(use, nb).reshape(KAPPA // k, 2**k, nb)
    u = np.bitwise_xor.reduce(r.view(np.uint64), axis=1).view(np.uint8)
    return u, _xor_planes(r, k, 0).reshape(KAPPA, nb)


def vole_verifier(prg: Prg, use: int, nb: int, k: int) -> np.ndarray:
    """The verifier's ``w`` (``(κ/k, k, nb)``) of batch ``use``: ``v ⊕ Δ u``, from the
    ``prg`` of its leaves indexed by ``y = x ⊕ Δ_i`` (whose coefficient is ``y``)."""
    r = prg.rows(use, nb).reshape(KAPPA // k, 2**k - 1, nb)
    return _xor_planes(r, k, 1)
