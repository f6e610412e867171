"""A PPID3 site's table as the level driver reads it (:class:`protocols.ppid3.distribution_counts.
SiteView`): continuous columns binned on the site's own training rows, or kept as numbers to
split at a threshold; and the columns' description its saved model part keeps."""

from __future__ import annotations

from typing import Any

from mpc.datasets import Discretizer
from protocols.ppid3.distribution_counts import SiteView, table_view

__all__ = ["MULTIWAY_BINS", "bin_columns", "columns_doc", "training_view"]

#: the bins of a continuous column split into a branch per bin, when the run names none
MULTIWAY_BINS = 4


def training_view(
    name: str, table: Any, is_class: bool, splits: str | None, bins: int | None
) -> tuple[Any, SiteView, dict[str, list[float]]]:
    """This site's training table (binned unless ``splits`` is ``"threshold"``), its view and
    its columns' cut points: with threshold splits the numbers stay numbers and the
    candidates are the plain learner's (every distinct value, or ``bins`` bins' cut points);
    else each continuous column gets ``bins`` (default :data:`MULTIWAY_BINS`) bins."""
    if splits == "threshold":
        view = table_view(name, table, list(range(table.n_rows)), with_class=is_class,
                          thresholds=True, bins=bins)  # fmt: skip
        return table, view, {}
    table, edges = bin_columns(table, bins or MULTIWAY_BINS, None)
    return table, table_view(name, table, list(range(table.n_rows)), with_class=is_class,
                             thresholds=False), edges  # fmt: skip


def bin_columns(
    table: Any, bins: int | None, edges: dict[str, list[float]] | None
) -> tuple[Any, dict[str, list[float]]]:
    """This site's continuous columns binned: on its own training rows (``bins``) or with the
    cut points its saved model holds (``edges``); returns the nominal table and the edges."""
    if "continuous" not in table.kinds:
        return table, {}
    if edges is None:
        assert bins is not None
        disc = Discretizer.fit(table, bins)
    else:  # a column without cut points is a number split at thresholds: it stays one
        disc = Discretizer(bins or 2, {a: tuple(e) for a, e in edges.items()}, partial=True)
    return disc.transform(table), {a: list(e) for a, e in disc.edges.items()}


def columns_doc(table: Any, edges: dict[str, list[float]]) -> list[dict[str, Any]]:
    return [
        {"name": a, "kind": k, **({"bins": edges[a]} if a in edges else {})}
        for a, k in zip(table.attributes, table.kinds, strict=True)
    ]
