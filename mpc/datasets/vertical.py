"""Vertical partitioning: the attributes of a table over ``k`` sites (:func:`partition`),
each site's columns keyed by the common transaction ids (:func:`split_vertically`), and the
inverse (:func:`join_sites`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from mpc.datasets.table import DataError, Table

# --------------------------------------------------------------------------------------------
# Vertical partitioning


@dataclass(frozen=True)
class Partition:
    """Which attributes each of the ``k`` sites holds (site ``i`` is party ``site{i+1}``), and
    which site holds the class. Every attribute belongs to exactly one site."""

    sites: tuple[tuple[str, ...], ...]
    class_site: int

    def __post_init__(self) -> None:
        sites = tuple(tuple(str(a) for a in s) for s in self.sites)
        if not sites or any(not s for s in sites):
            raise DataError(f"every site needs at least one attribute, got {sites}")
        flat = [a for s in sites for a in s]
        dupes = sorted({a for a in flat if flat.count(a) > 1})
        if dupes:
            raise DataError(f"attributes {dupes} are given to more than one site")
        k = len(sites)
        if not -k <= self.class_site < k:
            raise DataError(
                f"class_site must be in [-{k}, {k - 1}] for {k} sites, got {self.class_site}"
            )
        object.__setattr__(self, "sites", sites)
        object.__setattr__(self, "class_site", self.class_site % k)

    @property
    def k(self) -> int:
        """The number of sites."""
        return len(self.sites)

    @property
    def attributes(self) -> tuple[str, ...]:
        """All attributes, site by site."""
        return tuple(a for s in self.sites for a in s)

    def site_of(self, attribute: str) -> int:
        """The index of the site that holds ``attribute``."""
        for i, s in enumerate(self.sites):
            if attribute in s:
                return i
        raise DataError(f"no site holds attribute {attribute!r}; sites: {self.describe()}")

    def to_dict(self) -> dict[str, Any]:
        """For run reports: ``{"k", "sites": [[attribute, ...], ...], "class_site"}``."""
        return {"k": self.k, "sites": [list(s) for s in self.sites], "class_site": self.class_site}

    def describe(self, class_name: str | None = None) -> str:
        """One line per site, e.g. ``site1: outlook, temperature`` and
        ``site2: humidity, windy (class play)``."""
        lines = []
        for i, s in enumerate(self.sites):
            line = f"site{i + 1}: {', '.join(s)}"
            if i == self.class_site:
                line += f" (class {class_name})" if class_name else " (class)"
            lines.append(line)
        return "\n".join(lines)


def _contiguous(names: Sequence[str], k: int) -> list[list[str]]:
    size, extra = divmod(len(names), k)
    sites, start = [], 0
    for i in range(k):
        end = start + size + (1 if i < extra else 0)
        sites.append(list(names[start:end]))
        start = end
    return sites


def partition(
    attributes: Sequence[str], k: int, scheme: str = "contiguous", *, class_site: int = -1
) -> Partition:
    """Assign ``attributes`` (the class excluded) to ``k`` sites.

    ``scheme`` is ``"contiguous"`` (k consecutive blocks of nearly equal size, the earlier
    sites getting the extra attributes), ``"round-robin"`` (attribute ``j`` to site
    ``j mod k``), ``"random:SEED"`` (a seeded shuffle, then contiguous blocks of the shuffled
    order) or an explicit assignment ``"a,b;c;d,e"`` (sites separated by ``;``, attributes by
    ``,``; it must have ``k`` sites and use an attribute at most once: an attribute it
    leaves out is in no site, and the model does not use it). ``class_site`` is the index of
    the site holding the class; ``-1`` is the last site.
    """
    names = [str(a) for a in attributes]
    dupes = sorted({a for a in names if names.count(a) > 1})
    if dupes:
        raise DataError(f"partition: attributes {dupes} are listed more than once")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 2 <= k <= len(names):
        raise DataError(
            f"partition: k must be an integer between 2 and the number of attributes "
            f"({len(names)}), got {k!r}"
        )
    k = int(k)
    if scheme == "contiguous":
        sites = _contiguous(names, k)
    elif scheme == "round-robin":
        sites = [names[i::k] for i in range(k)]
    elif scheme.startswith("random:"):
        seed_text = scheme.removeprefix("random:")
        try:
            seed = int(seed_text)
        except ValueError:
            raise DataError(
                f"partition: scheme {scheme!r} needs an integer seed, e.g. 'random:7'"
            ) from None
        order = np.random.default_rng(seed).permutation(len(names))
        sites = _contiguous([names[i] for i in order], k)
    elif ";" in scheme or "," in scheme or scheme in names:
        sites = [[a.strip() for a in s.split(",")] for s in scheme.split(";")]
        if len(sites) != k:
            raise DataError(
                f"partition: {scheme!r} gives {len(sites)} sites, but k is {k}; "
                "separate the k sites with ';'"
            )
        given = [a for s in sites for a in s]
        unknown = sorted(set(given) - set(names))
        if "" in given or unknown:
            raise DataError(
                f"partition: {scheme!r} names unknown or empty attributes {unknown or ['']}; "
                f"the attributes are {names}"
            )
        twice = sorted({a for a in given if given.count(a) > 1})
        if twice:
            raise DataError(
                f"partition: {scheme!r} gives attributes {twice} to more than one site (or "
                "twice to one); each attribute is held by one site"
            )
    else:
        raise DataError(
            f"partition: unknown scheme {scheme!r}; expected 'contiguous', 'round-robin', "
            "'random:SEED' or an explicit 'a,b;c;d,e'"
        )
    if isinstance(class_site, bool) or not -k <= class_site < k:
        raise DataError(f"partition: class_site must be in [-{k}, {k - 1}], got {class_site!r}")
    return Partition(sites=tuple(tuple(s) for s in sites), class_site=int(class_site))


@dataclass(frozen=True)
class SiteData:
    """What one site holds: its columns of the common rows, keyed by transaction ids.

    ``site`` is the index into :attr:`Partition.sites` (party ``site{site+1}``); ``table`` has
    only this site's attributes and, on the class site only, the class."""

    site: int
    tids: np.ndarray
    table: Table

    def __post_init__(self) -> None:
        tids = np.asarray(self.tids, dtype=np.int64)
        if tids.shape != (self.table.n_rows,):
            raise DataError(
                f"site {self.site}: {len(tids)} transaction ids for {self.table.n_rows} rows"
            )
        object.__setattr__(self, "tids", tids)


def split_vertically(table: Table, part: Partition) -> list[SiteData]:
    """Each site's share of ``table``: its attributes (in the partition's order), the common
    transaction ids ``0 .. n-1``, and the class on the class site only."""
    unknown = [a for a in part.attributes if a not in table.attributes]
    left_out = [a for a in table.attributes if a not in part.attributes]
    if unknown or left_out:
        raise DataError(
            f"the partition does not match table {table.name!r}: attributes not in the table "
            f"{unknown}, attributes of the table on no site {left_out}"
        )
    tids = np.arange(table.n_rows, dtype=np.int64)
    out = []
    for i, attrs in enumerate(part.sites):
        t = table.select(attrs)
        if i != part.class_site:
            t = replace(t, target=np.empty(0, dtype=object), class_name="")
        out.append(SiteData(site=i, tids=tids.copy(), table=t))
    return out


def join_sites(parts: Sequence[SiteData], attribute_order: Sequence[str] | None = None) -> Table:
    """The inverse of :func:`split_vertically`: join the sites' columns on their transaction
    ids (rows in increasing id order). Attributes come site by site unless
    ``attribute_order`` (a permutation of all of them) is given."""
    if not parts:
        raise DataError("join_sites: no sites to join")
    holders = [p for p in parts if p.table.class_name]
    if len(holders) != 1:
        raise DataError(
            f"join_sites: exactly one site must hold the class, got sites "
            f"{[p.site for p in holders]}"
        )
    ref = np.sort(parts[0].tids)
    if len(np.unique(ref)) != len(ref):
        raise DataError(f"join_sites: site {parts[0].site} repeats transaction ids")
    attributes: list[str] = []
    kinds: list[str] = []
    columns: list[np.ndarray] = []
    target = np.empty(0, dtype=object)
    for p in parts:
        order = np.argsort(p.tids, kind="stable")
        if not np.array_equal(p.tids[order], ref):
            diff = np.setxor1d(p.tids, parts[0].tids)[:5].tolist()
            raise DataError(
                f"join_sites: the transaction ids of site {p.site} do not match those of site "
                f"{parts[0].site} ({len(p.tids)} vs {len(ref)} ids, e.g. {diff} unmatched "
                "or repeated); every site must hold the same rows"
            )
        for a, kind, col in zip(p.table.attributes, p.table.kinds, p.table.columns, strict=True):
            if a in attributes:
                raise DataError(f"join_sites: attribute {a!r} is held by more than one site")
            attributes.append(a)
            kinds.append(kind)
            columns.append(col[order])
        if p.table.class_name:
            target = p.table.target[order]
    holder = holders[0].table
    joined = Table(
        name=holder.name,
        attributes=tuple(attributes),
        kinds=tuple(kinds),
        columns=tuple(columns),
        target=target,
        class_name=holder.class_name,
        source=holder.source,
    )
    if attribute_order is None:
        return joined
    order_names = [str(a) for a in attribute_order]
    if sorted(order_names) != sorted(attributes):
        raise DataError(
            f"join_sites: attribute_order {order_names} is not a permutation of the sites' "
            f"attributes {attributes}"
        )
    return joined.select(order_names)
