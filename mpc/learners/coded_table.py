"""A table as C4.5 (:mod:`mpc.learners.c45`) reads it: nominal columns as int codes into their
sorted domains (``-1`` for ``"?"``), continuous columns as float64 (NaN unknown), the class as
an index into its sorted values (:class:`CodedTable`), made from a
:class:`~mpc.datasets.Table` or from codes, and recoded into other domains."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from mpc.errors import ConfigError
from mpc.learners.tree import MISSING

if TYPE_CHECKING:
    from mpc.datasets import Table

__all__ = ["CodedTable", "class_codes"]


def _texts(values: np.ndarray) -> list[str]:
    """``str`` of every value (the values themselves when they are all ``str`` already)."""
    text = values.tolist()
    if set(map(type, text)) <= {str}:
        return text
    return [str(v) for v in text]


class CodedTable:
    """A table as the learner reads it: every nominal column as int codes into its domain
    (the distinct values of the column but :data:`~mpc.learners.tree.MISSING`, sorted; ``-1`` for
    MISSING), every continuous column as float64 (NaN unknown), the class as an index into
    ``classes`` (its distinct values, sorted).

    :meth:`from_table` makes it from a :class:`~mpc.datasets.Table`; :meth:`from_codes` from
    columns that are codes already (e.g. a table received as codes), without making their
    values str by str. Both give the same table for the same rows, so the same tree."""

    __slots__ = ("attributes", "classes", "data", "domains", "kinds", "y")

    def __init__(
        self,
        attributes: Sequence[str],
        kinds: Sequence[str],
        domains: Sequence[list[str]],
        data: Sequence[np.ndarray],
        classes: list[str],
        y: np.ndarray,
    ) -> None:
        if not len(attributes) == len(kinds) == len(domains) == len(data):
            raise ConfigError("CodedTable: one kind, domain and column per attribute")
        if any(len(col) != len(y) for col in data):
            raise ConfigError("CodedTable: every column needs one value per row")
        self.attributes, self.kinds = list(attributes), list(kinds)
        self.domains, self.data = list(domains), list(data)
        self.classes, self.y = classes, y

    @property
    def n_rows(self) -> int:
        return len(self.y)

    @classmethod
    def from_table(
        cls,
        table: Table,
        *,
        values: Mapping[str, Sequence[str]] | None = None,
        classes: Sequence[str] | None = None,
    ) -> CodedTable:
        """The table coded. ``values[a]`` declares the values of nominal attribute ``a``
        (e.g. all values of the whole dataset, as an ARFF header does) and ``classes`` the
        classes; by default they are the values that occur. A declared value that occurs
        in no row still gets a branch (an empty leaf) in a multiway split, as in J48."""
        declared = dict(values or {})
        unknown = sorted(set(declared) - set(table.attributes))
        if unknown:
            raise ConfigError(
                f"CodedTable.from_table: values declared for {unknown}, which are not "
                f"attributes of table {table.name!r} ({list(table.attributes)})"
            )
        class_list, y = class_codes(table.target, classes, table.class_name)
        domains: list[list[str]] = []
        data: list[np.ndarray] = []
        for a, kind, col in zip(table.attributes, table.kinds, table.columns, strict=True):
            if kind == "continuous":
                domains.append([])
                data.append(np.asarray(col, dtype=np.float64))
            else:
                text = _texts(col)
                seen = set(text) - {MISSING}
                domain = sorted(seen | {str(v) for v in declared.get(a, ())} - {MISSING})
                if a in declared:
                    stray = sorted(seen - {str(v) for v in declared[a]})
                    if stray:
                        raise ConfigError(
                            f"CodedTable.from_table: attribute {a!r} has values {stray[:5]} "
                            "that are not among its declared values; declare every value"
                        )
                index = {v: i for i, v in enumerate(domain)}  # code-point order, as np.unique
                index[MISSING] = -1
                codes = np.fromiter(map(index.__getitem__, text), dtype=np.int64, count=len(text))
                domains.append(domain)
                data.append(codes)
        return cls(table.attributes, table.kinds, domains, data, class_list, y)

    @classmethod
    def from_codes(
        cls,
        attributes: Sequence[str],
        kinds: Sequence[str],
        columns: Sequence[tuple[Sequence[str], np.ndarray] | np.ndarray],
        target: tuple[Sequence[str], np.ndarray],
    ) -> CodedTable:
        """Column ``j`` is ``(values, codes)`` for a nominal attribute (row ``i`` has the value
        ``values[codes[i]]``; ``codes`` within range) or a float64 array for a continuous
        one; ``target`` is ``(values, codes)`` too."""
        domains: list[Sequence[str]] = []
        codes: list[np.ndarray] = []
        continuous: list[np.ndarray] = []
        for kind, col in zip(kinds, columns, strict=True):
            if kind == "continuous":
                assert isinstance(col, np.ndarray)
                continuous.append(col)
            else:
                assert isinstance(col, tuple)
                domains.append(col[0])
                codes.append(np.asarray(col[1], dtype=np.int64))
        matrix = np.stack([*codes, np.asarray(target[1], dtype=np.int64)], axis=1)
        return cls.from_code_matrix(attributes, kinds, [*domains, target[0]], matrix, continuous)

    @classmethod
    def from_code_matrix(
        cls,
        attributes: Sequence[str],
        kinds: Sequence[str],
        domains: Sequence[Sequence[str]],
        codes: np.ndarray,
        continuous: Sequence[np.ndarray],
    ) -> CodedTable:
        """:meth:`from_codes` with the codes of the nominal attributes, then of the class, as
        the columns of one int matrix (``domains`` one per column; a table's columns as
        they arrive on the wire), the continuous attributes in ``continuous``, in order."""
        n_nominal = codes.shape[1] - 1
        *recoded, (classes, y) = _recode_all(domains, codes, n_nominal)
        out_domains: list[list[str]] = []
        data: list[np.ndarray] = []
        coded, floats = iter(recoded), iter(continuous)
        for kind in kinds:
            if kind == "continuous":
                out_domains.append([])
                data.append(np.asarray(next(floats), dtype=np.float64))
            else:
                domain, column = next(coded)
                out_domains.append(domain)
                data.append(column)
        return cls(attributes, kinds, out_domains, data, classes, y)


def class_codes(
    target: np.ndarray, declared: Sequence[str] | None = None, name: str = "class"
) -> tuple[list[str], np.ndarray]:
    """The classes (the distinct values of ``target`` as str, with the ``declared`` ones,
    sorted) and each row's index among them."""
    text = _texts(target)
    classes = sorted(set(text) | {str(c) for c in declared or ()})
    if declared is not None and len(classes) > len(set(map(str, declared))):
        stray = sorted(set(text) - set(map(str, declared)))
        raise ConfigError(
            f"{name}: classes {stray[:5]} occur but are not among the declared classes; "
            "declare every class"
        )
    index = {c: i for i, c in enumerate(classes)}
    return classes, np.fromiter(map(index.__getitem__, text), dtype=np.int64, count=len(text))


def _recode(values: Sequence[str], codes: np.ndarray, *, missing: bool) -> tuple[list, np.ndarray]:
    """``(domain, codes)`` as :meth:`CodedTable.from_table` makes them for the column whose
    row ``i`` is ``values[codes[i]]``: the domain of the values that occur (but MISSING, if
    ``missing``), sorted, and each row's index in it (MISSING: -1)."""
    occur: list[int] = (
        np.flatnonzero(np.bincount(codes, minlength=len(values))).tolist() if len(codes) else []
    )
    domain = sorted({str(values[k]) for k in occur} - ({MISSING} if missing else set()))
    index = {v: i for i, v in enumerate(domain)}
    lookup = np.fromiter((index.get(str(v), -1) for v in values), dtype=np.int64, count=len(values))
    return domain, lookup[codes] if len(codes) else np.zeros(0, dtype=np.int64)


class _RecodePlan(NamedTuple):
    """What :func:`_recode_all` needs of some domains, whatever the rows: their values one
    after the other, where each domain starts and ends among them, the domain of each, and
    which are MISSING in a column recoded with ``missing=True``."""

    values: np.ndarray  # object
    starts: np.ndarray
    lasts: np.ndarray
    column_of: np.ndarray
    missing: np.ndarray  # bool


@lru_cache(maxsize=64)
def _recode_plan(domains: tuple[tuple[str, ...], ...], n_missing: int) -> _RecodePlan | None:
    """The plan of ``domains`` if every one is non-empty, str and strictly increasing (as a
    table's columns arrive on the wire), else None. Cached: a client recodes the leaves of
    one table, all with that table's domains."""
    values = [v for domain in domains for v in domain]
    sizes = [len(domain) for domain in domains]
    if not all(sizes) or not set(map(type, values)) <= {str}:
        return None
    starts = [0, *accumulate(sizes[:-1])]
    # strictly increasing within each domain: only a domain's first value may be not greater
    # than the one before it
    firsts = set(starts)
    increasing = enumerate(map(str.__lt__, values, values[1:]))
    if not all(i + 1 in firsts for i, lt in increasing if not lt):
        return None
    n_attribute_values = starts[n_missing] if n_missing < len(domains) else len(values)
    return _RecodePlan(
        values=np.array(values, dtype=object),
        starts=np.asarray(starts, dtype=np.int64),
        lasts=np.asarray(starts, dtype=np.int64) + np.asarray(sizes, dtype=np.int64) - 1,
        column_of=np.repeat(np.arange(len(domains)), sizes),
        missing=np.array([i < n_attribute_values and v == MISSING for i, v in enumerate(values)]),
    )


def _recode_all(
    domains: Sequence[Sequence[str]], codes: np.ndarray, n_missing: int
) -> list[tuple[list[str], np.ndarray]]:
    """:func:`_recode` of every column of ``codes`` (into ``domains``), the first
    ``n_missing`` with ``missing=True``.

    When every domain is str in strictly increasing order (:func:`_recode_plan`), all
    columns are recoded together with a few numpy operations: a value's new code is the
    number of values before it in its domain that occur (and are not MISSING). Otherwise
    column by column."""
    plan = _recode_plan(tuple(map(tuple, domains)), n_missing) if len(codes) else None
    if plan is None:
        return [
            _recode(domain, codes[:, j], missing=j < n_missing) for j, domain in enumerate(domains)
        ]
    flat = codes + plan.starts
    keep = np.zeros(len(plan.values), dtype=bool)
    keep[flat.ravel()] = True
    keep &= ~plan.missing
    kept_through = np.cumsum(keep)  # kept values up to each value, over all columns
    before = kept_through - keep
    lookup = np.where(keep, before - before[plan.starts][plan.column_of], -1)
    recoded = np.ascontiguousarray(lookup[flat].T)
    kept = plan.values[keep].tolist()
    ends = kept_through[plan.lasts].tolist()
    return [
        (kept[a:b], recoded[j]) for j, (a, b) in enumerate(zip([0, *ends[:-1]], ends, strict=True))
    ]
