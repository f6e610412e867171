"""A permutation only one party knows, applied to another party's shares with a helper's
help: the *owner* knows a permutation ``π`` of ``L`` positions, the *holder* holds a matrix
``z`` (``cols x L``, the ring of counts); afterwards the two hold additive shares of
``z[:, π[:keep]]``, the first ``keep`` positions of ``z`` in the owner's order, and nobody has
seen ``π``. Three parties, semi-honest, the helper colluding with neither (the trust of a
dealing party); no cryptography beyond the masks' generator, two messages of ``z``'s size.

The owner splits its permutation in two, ``π = σ1[σ2]`` (``z[:, π] = z[:, σ1][:, σ2]``):

* ``σ1`` uniform, from a fresh seed the owner sends the **holder** (with a second seed, of a
  mask ``r``); ``σ2 = σ1⁻¹[π]``, uniform because ``σ1`` is, goes to the **helper** with a
  third seed, of a mask ``r'`` (the helper uses its first ``keep`` positions);
* the holder sends the helper ``z[:, σ1] - r``; the helper sends the holder
  ``(z[:, σ1] - r)[:, σ2] - r'``, which is the holder's share;
* the owner's share is ``r[:, σ2] + r'``: it sends nothing once the seeds are out.

What each party receives: the holder, two seeds (uniform) and a matrix masked by ``r'``,
which it never sees (uniform); the helper, a uniform permutation (it uses the first ``keep``),
a seed, and a matrix masked by ``r`` (uniform); the owner, nothing. A fresh split and fresh
masks every time: nothing repeats from run to run, and each party's view is the same whatever
``π`` and ``z`` are. A holder and helper who pooled their views would learn ``π`` (the trust
above).

:mod:`protocols.ppid3.threshold_counts` uses it to count the sides of every threshold of a
number in one pass over the rows (no one-hot matrix of rows by values).

References: the owner-known permutation by a split between two parties is the resharing
step of three-party shuffles (Laur, Willemson & Zhang, ISC 2011, "Round-efficient oblivious
database manipulation"; Mohassel & Sadeghian, EUROCRYPT 2013, for the two-party
switching-network form); this module's masks and messages are its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpc.crypto import randomness
from mpc.errors import ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.expect import raw, record
from mpc.runtime.party import Party
from mpc.runtime.view import uniform
from protocols.engine.ring import RING64, Ring

__all__ = [
    "SHUFFLE_IN",
    "SHUFFLE_OUT",
    "SHUFFLE_SEEDS",
    "SHUFFLE_SPLIT",
    "random_permutation",
    "shuffle_helper",
    "shuffle_holder",
    "shuffle_owner",
]

SHUFFLE_SEEDS = uniform(
    "shuffle/seeds", "the owner's fresh seeds of the first half of its split and of a mask"
)
SHUFFLE_SPLIT = uniform(
    "shuffle/split",
    "the second half of the owner's split of its permutation (a uniform permutation, the "
    "first half unseen here) and the seed of a mask",
    permutations=True,
)
SHUFFLE_IN = uniform("shuffle/in", "the holder's matrix in a uniform order, less a mask")
SHUFFLE_OUT = uniform(
    "shuffle/out", "the holder's matrix in the owner's order, less a mask the holder never sees"
)

_SEEDS = record({"order": raw(32), "mask": raw(32)})


def random_permutation(seed: bytes, n: int) -> np.ndarray:
    """A uniform permutation of ``0 .. n-1`` from a 32-byte seed: the order of ``n`` uniform
    64-bit words (ties, probability below ``n^2 / 2^65``, broken by position)."""
    return np.argsort(RING64.random(seed, n), kind="stable").astype(np.int64)


def _split(perm: np.ndarray) -> tuple[bytes, np.ndarray]:
    """A fresh uniform ``σ1`` (as its seed) and ``σ2 = σ1⁻¹[perm]``."""
    seed = randomness.seed("shuffle/order")
    first = random_permutation(seed, len(perm))
    inverse = np.empty_like(first)
    inverse[first] = np.arange(len(first))
    return seed, inverse[perm]


async def shuffle_owner(
    party: Party, holder: str, helper: str, perm: np.ndarray, cols: int, keep: int, dtype: Any,
    tag: str,
) -> np.ndarray:  # fmt: skip
    """The owner's share (``cols x keep``) of ``z[:, perm[:keep]]``, ``z`` the holder's: it
    draws the split and three seeds and sends them; it receives nothing."""
    ring, n = Ring.of(dtype), len(perm)
    first, second = _split(np.asarray(perm, dtype=np.int64))
    mask, out_mask = randomness.seed(f"{tag}/mask"), randomness.seed(f"{tag}/out")
    await party.send(holder, f"{tag}/seeds", {"order": first, "mask": mask})
    await party.send(helper, f"{tag}/split",
                     {"order": pack_array(second.astype(np.uint32)), "mask": out_mask})  # fmt: skip
    r = ring.random(mask, (cols, n))
    share = r[:, second[:keep]]
    share += ring.random(out_mask, (cols, keep))
    party.metrics.count("shuffled", cols * n)
    return share


async def shuffle_holder(
    party: Party, owner: str, helper: str, z: np.ndarray, keep: int, tag: str
) -> np.ndarray:
    """The holder's share (``cols x keep``) of ``z[:, perm[:keep]]``, the owner's ``perm``:
    ``z`` in a uniform order less a mask to the helper, its share back."""
    ring = Ring.of(z.dtype)
    cols, n = z.shape
    got = await party.recv(owner, f"{tag}/seeds", SHUFFLE_SEEDS, expect=_SEEDS)
    w = z[:, random_permutation(got["order"], n)]
    w -= ring.random(got["mask"], (cols, n))
    await party.send(helper, f"{tag}/in", pack_array(w))
    return unpack_array(await party.recv(helper, f"{tag}/out", SHUFFLE_OUT), z.dtype,
                        (cols, keep), helper, "shuffled shares")  # fmt: skip


async def shuffle_helper(
    party: Party, owner: str, holder: str, cols: int, n: int, keep: int, dtype: Any, tag: str
) -> None:
    """The helper's part: the owner's second half of the split (checked: a permutation of
    ``n``), the holder's masked matrix in its first ``keep`` positions, less a fresh mask,
    back."""
    got = await party.recv(owner, f"{tag}/split", SHUFFLE_SPLIT)
    if not isinstance(got, dict) or not isinstance(got.get("mask"), bytes):
        raise ProtocolError(f"{owner} sent a malformed shuffle split")
    order = unpack_array(got.get("order"), np.uint32, (n,), owner, "shuffle order")
    order = order.astype(np.int64)
    if order.max() >= n or np.bincount(order, minlength=n).max() != 1:
        raise ProtocolError(f"{owner}'s shuffle order is not a permutation of {n}")
    order = order[:keep]
    w = unpack_array(await party.recv(holder, f"{tag}/in", SHUFFLE_IN), dtype, (cols, n),
                     holder, "masked shares")  # fmt: skip
    out = w[:, order]
    out -= Ring.of(dtype).random(got["mask"], (cols, keep))
    await party.send(holder, f"{tag}/out", pack_array(out))
    party.metrics.count("shuffled", cols * n)
