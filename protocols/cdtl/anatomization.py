"""Anatomization: a table split into an identifying table IT and a sensitive table ST.

Mancuhan & Clifton, *Decision Tree Classification on Outsourced Data*, Definitions 2-6
(groups, l-diversity, anatomy with GID, SEQ and ESEQ, simple l-diverse distribution), and the
table operations of the collaborative learning: ``joinTables(leafIns, ST, GID)`` of
``FindBDTLeaf`` (Figure 2) and ``trueInstances`` of ``Inference`` (Figure 3).

Roles, inputs and outputs:

* **client** — holds the person specific table ``D`` and the :class:`~mpc.crypto.sealed.ClientKey`.
  :func:`anatomize` ``(D, A_s, l, key)`` gives ``IT`` and ``ST``, which it uploads to the CDBS.
  :func:`~protocols.cdtl.joins.join` ``(IT, ST, key)`` rebuilds ``D`` exactly (client
  naive learning, Section 3.1); :func:`~protocols.cdtl.joins.true_instances`
  ``(leafIns, key)`` keeps the true (tuple, sensitive value) pairs of a
  leaf (Figure 3).
* **CDBS** (cloud database server) — stores ``IT`` and ``ST``, learns the base decision tree on
  ``IT`` (its identifying attributes and the class) and answers
  :func:`~protocols.cdtl.joins.group_join`
  ``(leaf tuples, ST)`` with ``leafIns`` (Figure 2). These are network-free functions; the
  parties' processes call them.

What the CDBS learns from ``IT`` and ``ST``:

* every tuple's identifying attributes and class, in clear (the paper allows the CDBS all
  associations among identifying attributes);
* the group ``GID`` of every tuple, hence the group sizes, and the multiset of sensitive values
  of every group (hence the distribution of ``A_s`` over the whole table);
* the number of tuples ``n``, and that ESEQ has a fixed length
  (:data:`~protocols.cdtl.eseq.ESEQ_BYTES`);
* the table's name, never the path of the client's file (IT's ``source`` is its name).

It does not learn which tuple of a group holds which of the group's sensitive values: every
value occurs at most once per group, tuples are put into groups at random, the rows of ``IT``
are in a random order, ``ST`` is in the order of ``SEQ`` (a random permutation), and ``ESEQ``
is AES-GCM (semantically secure). So each tuple of a group is, to the CDBS, equally likely to
hold any of the group's values — the simple l-diverse distribution of Definitions 5 and 6.
``group_join`` is a join on the public ``GID`` and tells it nothing new.

Choices where the paper leaves room:

* The class is an identifying attribute (the paper predicts an attribute of ``I_T``; the
  class must not be the sensitive attribute). ``IT`` keeps it as the class of its
  :class:`~mpc.datasets.Table`, ready for the base decision tree.
* Groups are formed as in Xiao & Tao's Anatomy (the algorithm the paper's references build
  on), randomized instead of optimized: while ``l`` sensitive values have tuples left, take
  one random tuple of each of the ``l`` most frequent values (ties broken at random) as a
  group; each of the at most ``l - 1`` tuples left over joins a random group that does not
  hold its value yet. Every group thus has between ``l`` and ``2l - 1`` tuples with pairwise
  distinct sensitive values, and this always succeeds when no value covers more than ``n / l``
  of the tuples (Xiao & Tao, *Anatomy*, VLDB 2006); otherwise :func:`anatomize` raises
  :class:`~mpc.errors.ConfigError` before anything is built.
* ``ESEQ = E_k(salt, s)`` is a :func:`~mpc.crypto.sealed.seal` of ``salt || s || r``: a 16-byte
  random salt, the sequence number ``s`` and the tuple's original row ``r`` (so
  :func:`~protocols.cdtl.joins.join` restores the original row order), with associated data
  naming the table and the tuple's ``GID``: an ESEQ moved to another table or group fails
  authentication.
* ``GID`` are ``0 .. m-1`` and ``SEQ`` are ``0 .. n-1``, both assigned by random permutations.
* The sensitive attribute must be nominal (discretize a continuous one first, as the paper
  does for Autos); a missing value ``"?"`` counts as a value of its own.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mpc.crypto import randomness
from mpc.crypto.sealed import (
    ClientKey,
)
from mpc.datasets import CONTINUOUS, Table
from mpc.errors import ConfigError, ProtocolError
from protocols.cdtl.eseq import seal_eseq
from protocols.cdtl.tables import Anatomized, IdentifyingTable, SensitiveTable

__all__ = ["anatomize", "is_l_diverse", "max_l", "suppress_for_l"]


# --------------------------------------------------------------------------------------------
# Definitions 2-6: anatomize


def max_l(table: Table, sensitive: str) -> int:
    """The largest ``l`` for which ``table`` can be anatomized on ``sensitive``:
    ``floor(n / f)`` where ``f`` is the count of the most frequent sensitive value."""
    values = _sensitive_values(table, sensitive)
    if not len(values):
        return 0
    _, counts = np.unique(values, return_counts=True)
    return len(values) // int(counts.max())


def is_l_diverse(st: SensitiveTable, l: int) -> bool:  # noqa: E741
    """Definition 3: in every group ``G``, every sensitive value ``v`` has
    ``freq(v, G) / |G| <= 1 / l``."""
    if not st.n_rows:
        return True
    pairs = np.stack([st.gid, np.unique(st.values.astype(str), return_inverse=True)[1]], axis=1)
    (gids, sizes) = np.unique(st.gid, return_counts=True)
    uniq_pairs, freq = np.unique(pairs, axis=0, return_counts=True)
    size_of = dict(zip(gids.tolist(), sizes.tolist(), strict=True))
    return all(
        f * l <= size_of[g] for g, f in zip(uniq_pairs[:, 0].tolist(), freq.tolist(), strict=True)
    )


def anatomize(
    table: Table,
    sensitive: str,
    l: int,  # noqa: E741
    key: ClientKey,
    rng: np.random.Generator | None = None,
) -> Anatomized:
    """Split ``table`` into ``IT`` and ``ST`` (Definition 4) over ``l``-diverse groups
    (Definitions 2 and 3), with a simple ``l``-diverse distribution (Definitions 5 and 6).

    ``sensitive`` names the sensitive attribute ``A_s`` (nominal, not the class); every other
    attribute and the class go to ``IT``. Each group holds between ``l`` and ``2l - 1`` tuples
    with pairwise distinct sensitive values. ``rng`` is ``None`` for real use: every random
    choice (groups, GIDs, SEQs, the order of IT) then comes from the OS. A seeded numpy
    ``Generator`` makes those choices reproducible, for tests only: its stream is predictable.
    Salts and nonces always come from the OS.

    Raises :class:`~mpc.errors.ConfigError` when ``l`` is impossible (a sensitive value covers
    more than ``n / l`` of the tuples) or a parameter is wrong.
    """
    if not isinstance(key, ClientKey):
        raise ConfigError(f"key must be a ClientKey, got {type(key).__name__}")
    if isinstance(l, bool) or not isinstance(l, int | np.integer) or l < 2:
        raise ConfigError(f"l must be an integer of at least 2, got {l!r}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ConfigError(f"rng must be None or a numpy Generator, got {type(rng).__name__}")
    l = int(l)  # noqa: E741
    values = _sensitive_values(table, sensitive)
    identifying = [a for a in table.attributes if a != sensitive]
    if not identifying and not table.class_name:
        raise ConfigError(
            f"table {table.name!r} has nothing but the sensitive attribute {sensitive!r}; "
            "IT needs at least one identifying attribute or the class"
        )
    n = len(values)
    domain, codes = np.unique(values, return_inverse=True)
    _check_eligible(domain, np.bincount(codes, minlength=len(domain)), l, sensitive)

    rand = _Randomness(rng)
    groups = _make_groups(codes, len(domain), l, rand)
    gid_label = rand.permutation(len(groups))
    gid_of_row = np.empty(n, dtype=np.int64)
    for g, members in enumerate(groups):
        gid_of_row[members] = gid_label[g]
    seq_of_row = rand.permutation(n)

    it_order = rand.permutation(n)
    eseq = seal_eseq(key, table.name, gid_of_row, seq_of_row, it_order)
    # IT names its table, never where the client keeps it: the file's path stays at the client
    identifying_table = dataclasses.replace(
        table.select(identifying).subset(it_order), source=table.name
    )
    it = IdentifyingTable(identifying_table, gid_of_row[it_order], eseq)

    st_order = np.argsort(seq_of_row, kind="stable")
    st = SensitiveTable(
        name=table.name,
        attribute=sensitive,
        position=table.attributes.index(sensitive),
        seq=seq_of_row[st_order],
        gid=gid_of_row[st_order],
        values=values[st_order],
    )
    return Anatomized(it=it, st=st, l=l)


def suppress_for_l(
    table: Table,
    sensitive: str,
    l: int,  # noqa: E741
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The rows to keep so that ``table`` can be anatomized with ``l``: the fewest tuples of
    the over-frequent sensitive values are suppressed (chosen at random), until no value
    covers more than ``1 / l`` of the rest. Suppressing ``k`` tuples of the most frequent value
    ``f`` needs ``(f - k) l <= n - k``, so each removal gains ``l - 1``.

    Suppressed tuples are not outsourced (the usual remedy of anonymization when a table is not
    eligible). Raises :class:`~mpc.errors.ConfigError` when ``l`` exceeds the number of
    distinct sensitive values: then no suppression helps."""
    values = _sensitive_values(table, sensitive)
    domain, codes = np.unique(values, return_inverse=True)
    if l > len(domain):
        raise ConfigError(
            f"l = {l} is impossible: the sensitive column {sensitive!r} has only "
            f"{len(domain)} distinct values ({', '.join(map(repr, domain[:10].tolist()))}), "
            "and every group needs l different ones"
        )
    counts = np.bincount(codes, minlength=len(domain))
    drop = np.zeros(len(domain), dtype=np.int64)
    n = int(counts.sum())
    while True:
        left = counts - drop
        top = int(left.argmax())
        if int(left[top]) * l <= n - int(drop.sum()):
            break
        drop[top] += 1
    rand = _Randomness(rng)
    keep = np.ones(len(values), dtype=bool)
    for v in np.flatnonzero(drop):
        rows = np.flatnonzero(codes == v)
        keep[rows[rand.permutation(len(rows))[: int(drop[v])]]] = False
    return np.flatnonzero(keep)


def _sensitive_values(table: Table, sensitive: str) -> np.ndarray:
    if sensitive == table.class_name or sensitive not in table.attributes:
        what = (
            "is the class; the class cannot be the sensitive attribute"
            if sensitive == table.class_name
            else "is not an attribute"
        )
        raise ConfigError(
            f"sensitive attribute {sensitive!r} {what} of table {table.name!r}; "
            f"choose one of {list(table.attributes)}"
        )
    if table.kind(sensitive) == CONTINUOUS:
        raise ConfigError(
            f"sensitive attribute {sensitive!r} is continuous; anatomization needs a nominal "
            "one (discretize it first, e.g. with mpc.datasets.Discretizer)"
        )
    return np.array([str(v) for v in table.column(sensitive)], dtype=object)


def _check_eligible(domain: np.ndarray, counts: np.ndarray, l: int, attribute: str) -> None:  # noqa: E741
    """Xiao & Tao's eligibility condition: no value in more than ``n / l`` tuples."""
    n = int(counts.sum())
    if n == 0:
        raise ConfigError("cannot anatomize an empty table")
    top = int(counts.argmax())  # the first, i.e. smallest, of the most frequent values
    f = int(counts[top])
    if f * l <= n:
        return
    best = n // f
    hint = (
        f"the largest possible l is {best}"
        if best >= 2
        else "no l >= 2 is possible with this sensitive attribute"
    )
    raise ConfigError(
        f"l = {l} is impossible: {domain[top]!r} is {f / n:.1%} of the sensitive column "
        f"{attribute!r} ({f} of {n} rows; at most {1 / l:.1%} allowed, i.e. {n // l} rows); "
        f"{hint}"
    )


class _Randomness:
    """Uniform choices drawn from the OS (``rng is None``) or from a numpy Generator."""

    def __init__(self, rng: np.random.Generator | None) -> None:
        self._rng = rng

    def keys(self, n: int) -> np.ndarray:
        """``n`` independent uniform 64-bit integers."""
        if self._rng is None:
            return np.frombuffer(randomness.token_bytes(8 * n, "anatomy/keys"), dtype=np.uint64)
        return self._rng.integers(0, 2**64, size=n, dtype=np.uint64)

    def permutation(self, n: int) -> np.ndarray:
        """A uniform permutation of ``0 .. n-1`` (sorting random 64-bit keys; a tie, with
        probability below ``n^2 / 2^65``, is broken by index)."""
        return np.argsort(self.keys(n), kind="stable").astype(np.int64)

    def below(self, k: int) -> int:
        """A uniform integer in ``0 .. k-1``."""
        if self._rng is None:
            return randomness.randbelow(k, "anatomy/below")
        return int(self._rng.integers(k))


def _make_groups(codes: np.ndarray, k: int, l: int, rand: _Randomness) -> list[list[int]]:  # noqa: E741
    """Randomized Anatomy grouping (see the module docstring); rows of ``codes`` (sensitive
    value codes ``0 .. k-1``) into groups of ``l .. 2l-1`` rows with distinct codes."""
    buckets: list[list[int]] = []
    for c in range(k):
        rows = np.flatnonzero(codes == c)
        buckets.append(rows[rand.permutation(len(rows))].tolist())
    counts = np.array([len(b) for b in buckets], dtype=np.int64)
    groups: list[list[int]] = []
    while np.count_nonzero(counts) >= l:
        largest = np.lexsort((rand.keys(k), -counts))[:l]
        groups.append([buckets[c].pop() for c in largest.tolist()])
        counts[largest] -= 1
    if counts.max(initial=0) > 1:
        raise ProtocolError(
            "anatomization left a sensitive value with several unplaced tuples although the "
            "table passed the eligibility check; this is a bug"
        )
    group_codes = [{int(codes[r]) for r in g} for g in groups]
    for c in np.flatnonzero(counts).tolist():
        r = buckets[c].pop()
        fits = [g for g, held in enumerate(group_codes) if c not in held]
        if not fits:
            raise ProtocolError(
                "anatomization found no group for a left-over tuple although the table "
                "passed the eligibility check; this is a bug"
            )
        g = fits[rand.below(len(fits))]
        groups[g].append(r)
        group_codes[g].add(c)
    return groups
