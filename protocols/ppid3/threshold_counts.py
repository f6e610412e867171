"""The counts of both sides of every threshold of a number with many candidates, in one pass
over the rows (``--reveal tree``, a dealing party or a third site): step 2 of
:mod:`protocols.ppid3.reveal_tree` for an attribute split at a threshold with more than
:data:`SHUFFLE_FROM` codes, instead of its one-hot columns (a matrix of codes by rows: at
every distinct value, rows squared).

The owner of the number knows its rows' order by value; the counts ``<= t_i`` at a node are
prefix sums of the node's class indicators (``Z``, shared) in that order. For each other
holder ``h`` of ``Z`` (the owner's own share it orders itself):

1. **order**: ``z_h`` in the owner's order of the codes (:func:`code_order`'s ``first``), by
   an owner-known permutation (:mod:`protocols.engine.shuffle`, helped by the party that
   deals the pair's products); both now hold shares of the sorted rows;
2. **prefix sums**, each party on its own shares (linear, no message);
3. **select**: the last position of each code, in code order (``second``), by a second
   owner-known permutation whose helper returns only those ``K + 1`` positions: shares of
   the counts ``<= t_i`` for every ``i``, whatever the ties.

The per-code counts (their differences) then take the place of the one-hot product's block,
so that everything after (the fold, the scores, the argmax) is unchanged. Where some code may
hold no row (the cut points of bins) each code ends at a row of zeros of its own (``K + 1``
more positions), so that the last positions are distinct; every distinct value of a column as
a candidate leaves no code empty (public: ``reveal/exact``).

What each party receives: :mod:`protocols.engine.shuffle`'s seeds, permutations and masked
matrices, all uniform; the lengths of the shuffles (the rows, plus the codes where codes may
be empty) are public. No count, no order and no code leaves its holder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import numpy as np

from mpc.runtime.party import Party
from protocols.engine.dealing import Dealing
from protocols.engine.shuffle import shuffle_holder, shuffle_owner
from protocols.ppid3.level_products import LevelNode

__all__ = ["SHUFFLE_FROM", "code_order", "prefix_counts", "shuffled", "threshold_counts"]

#: codes of a number (candidate thresholds + 1) beyond which its counts come by shuffles,
#: where there is a helper: below it the one-hot columns cost less
SHUFFLE_FROM = 64

#: (node key, owner, attribute) -> this site's share of the node's per-code counts (codes x p)
Counts = dict[tuple[int, str, int], np.ndarray]


def shuffled(
    sizes: Sequence[int], ordered: frozenset[int], helped: bool, limit: int = SHUFFLE_FROM
) -> frozenset[int]:
    """The attributes of a site (``sizes``: their codes; ``ordered``: those split at a
    threshold) counted by shuffles: numbers of more than ``limit`` codes
    (:data:`SHUFFLE_FROM` by default), where a dealing party or a third site helps
    (``helped``). Public: every site applies it to every site's public sizes."""
    if not helped:
        return frozenset()
    return frozenset(j for j in ordered if sizes[j] > limit)


def shuffle_length(n: int, codes: int, exact: bool) -> int:
    """The positions of a shuffle of a number's rows: the rows, plus a row of zeros per code
    where a code may hold none (not ``exact``)."""
    return n if exact else n + codes


def code_order(codes: np.ndarray, values: int, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """The owner's two permutations of the :func:`shuffle_length` positions: ``first`` sorts
    them by code (each code's zero row after its rows), ``second`` begins with the last
    position of each code in the sorted order, in code order. ``exact``: every code holds a
    row (checked)."""
    n = len(codes)
    counts = np.bincount(codes, minlength=values)
    if exact:
        if counts.size != values or np.any(counts == 0):
            raise ValueError("a number with every distinct value a candidate left a code empty")
        first = np.argsort(codes, kind="stable")
        ends = np.cumsum(counts) - 1
    else:
        keys = np.concatenate([codes, np.arange(values)])
        last = np.concatenate([np.zeros(n, np.int8), np.ones(values, np.int8)])
        first = np.lexsort((last, keys))
        where = np.empty_like(first)
        where[first] = np.arange(first.size)
        ends = where[n:]
    rest = np.ones(first.size, dtype=bool)
    rest[ends] = False
    second = np.concatenate([ends, np.flatnonzero(rest)])
    return first.astype(np.int64), second.astype(np.int64)


def prefix_counts(z: np.ndarray, first: np.ndarray, second: np.ndarray, values: int) -> np.ndarray:
    """The owner's own part, locally: ``z`` (``cols x rows``) padded to the shuffle's length,
    in ``first``'s order, prefix-summed, at ``second``'s first ``values`` positions."""
    padded = _pad(z, first.size)
    s = np.cumsum(padded[:, first], axis=1, dtype=z.dtype)
    return s[:, second[:values]]


def per_code(prefix: np.ndarray) -> np.ndarray:
    """Counts ``<= t_i`` (``cols x codes``) to counts per code (differences; in the ring)."""
    out = prefix.copy()
    out[:, 1:] -= prefix[:, :-1]
    return out


def _pad(z: np.ndarray, length: int) -> np.ndarray:
    if z.shape[1] == length:
        return z
    out = np.zeros((z.shape[0], length), dtype=z.dtype)
    out[:, : z.shape[1]] = z
    return out


async def threshold_counts(
    party: Party,
    nodes: list[LevelNode],
    inner: list[LevelNode],
    codes: np.ndarray,
    shares: dict[int, np.ndarray],
    wide: dict[str, dict[int, tuple[int, bool]]],
    has_candidates: Callable[[LevelNode, str, int], bool],
    dealing: Dealing,
    p: int,
    dtype: Any,
    t: str,
) -> Counts:
    """This site's shares of the per-code counts of every number of ``wide`` (site ->
    attribute -> (codes, exact)) at every node of ``inner`` where it has candidates: as the
    owner (``codes``: its columns; its own share of ``Z`` ordered locally) and as a holder of
    ``Z`` (``shares``: node -> ``p x rows``) for another site's. Returns ``{(node, owner,
    attribute): codes x p}``, in the ring of ``dtype``."""
    names = list(party.parties)
    me = party.name
    out: Counts = {}
    tasks: list[Coroutine[Any, Any, None]] = []

    def add(keys: list[int], s: str, j: int, counts: np.ndarray) -> None:
        counts = per_code(counts)
        for i, k in enumerate(keys):
            block = counts[i * p : (i + 1) * p].T
            out[(k, s, j)] = out[(k, s, j)] + block if (k, s, j) in out else block.copy()

    for s, attributes in wide.items():
        si = names.index(s)
        for j, (values, exact) in sorted(attributes.items()):
            keys = [node.key for node in inner
                    if node.left[si] > 0 and has_candidates(node, s, j)]  # fmt: skip
            if not keys:
                continue
            tag = f"{t}/sh{si}.{j}"
            if s == me:
                first, second = code_order(codes[:, j], values, exact)
                own = [k for k in keys if me in nodes[k].holders]
                if own:
                    z = np.concatenate([shares[k] for k in own], axis=0)
                    add(own, s, j, prefix_counts(z, first, second, values))
                holders = sorted({h for k in keys for h in nodes[k].holders if h != me},
                                 key=names.index)  # fmt: skip
                for h in holders:
                    held = [k for k in keys if h in nodes[k].holders]
                    tasks.append(_as_owner(party, dealing, h, held, first, second, values, p,
                                           dtype, s, j, f"{tag}.{names.index(h)}",
                                           add))  # fmt: skip
            else:
                held = [k for k in keys if me in nodes[k].holders]
                if held:
                    length = shuffle_length(len(codes), values, exact)
                    z = np.concatenate([shares[k] for k in held], axis=0)
                    tasks.append(_as_holder(party, dealing, s, held, _pad(z, length), values,
                                            s, j, f"{tag}.{names.index(me)}", add))  # fmt: skip
    await asyncio.gather(*tasks)
    return out


async def _as_owner(
    party: Party, dealing: Dealing, holder: str, keys: list[int], first: np.ndarray,
    second: np.ndarray, values: int, p: int, dtype: Any, s: str, j: int, tag: str,
    add: Callable[[list[int], str, int, np.ndarray], None],
) -> None:  # fmt: skip
    """The owner's side of steps 1-3 with one holder."""
    helper, cols, length = dealing.of(party.name, holder), len(keys) * p, first.size
    await dealing.ask({"kind": "shuffle", "peer": holder, "tag": f"{tag}/a",
                       "shape": [cols, length, length]})  # fmt: skip
    y = await shuffle_owner(party, holder, helper, first, cols, length, dtype, f"{tag}/a")
    y = np.cumsum(y, axis=1, dtype=y.dtype)
    await dealing.ask({"kind": "shuffle", "peer": holder, "tag": f"{tag}/b",
                       "shape": [cols, length, values]})  # fmt: skip
    mine = await shuffle_owner(party, holder, helper, second, cols, values, dtype, f"{tag}/b")
    mine += y[:, second[:values]]
    add(keys, s, j, mine)


async def _as_holder(
    party: Party, dealing: Dealing, owner: str, keys: list[int], z: np.ndarray, values: int,
    s: str, j: int, tag: str, add: Callable[[list[int], str, int, np.ndarray], None],
) -> None:  # fmt: skip
    """A holder's side of steps 1-3 (``z`` padded to the shuffle's length)."""
    helper = dealing.of(owner, party.name)
    y = await shuffle_holder(party, owner, helper, z, z.shape[1], f"{tag}/a")
    y = np.cumsum(y, axis=1, dtype=y.dtype)
    add(keys, s, j, await shuffle_holder(party, owner, helper, y, values, f"{tag}/b"))
