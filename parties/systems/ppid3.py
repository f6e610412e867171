"""``mpc run ppid3`` and ``mpc deploy ppid3``: PPID3 (Vaidya & Clifton, Algorithms 2-8) with one
process per site (:mod:`parties.programs.ppid3`).

For a local run the launcher loads a table, partitions its columns over ``k`` sites and writes
each site its own CSV file, in its own row order; ``mpc deploy`` writes only public things
unless asked to split a demo table (``--split-demo``). ``--counts psi`` trains depth first
with set-intersection counts; ``--counts fast`` a level per exchange on additive shares, the
correlated randomness made as ``--helper`` says
(:data:`protocols.engine.preprocessing.PREPROCESSING`; the default needs no party but the
sites). The deployment file carries the choice as the protocol parameter ``helper``; a kind
with an outside party (the dealer) adds it.

For auditing, the launcher — which in a test deployment holds every site's report — assembles
the whole tree from every site's own nodes and compares it with plain ID3 on the joined data.
No party can build that view: a site knows only its own nodes and the public structure.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import (
    CONTINUOUS,
    MISSING,
    DataError,
    Discretizer,
    kinds_warning,
    load_csv,
    partition,
    synthetic,
)
from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.learners.criteria import CRITERIA
from mpc.learners.evaluation import accuracy, train_test_split
from mpc.learners.id3 import SPLITS, ID3Classifier
from mpc.learners.tree import depth, from_json, node_count, to_json
from mpc.runtime.files import private_dir
from parties.options import ColumnKinds, DataSource, joined_table
from parties.params import AtLeast, NumberList, option
from parties.programs.ppid3 import COUNTS, ID_COLUMN, RECORDS, Ppid3Params
from parties.programs.ppid3_table import MULTIWAY_BINS
from parties.systems.base import SEMI_HONEST, Audit, Plan, System, number
from parties.systems.ppid3_summary import (
    below_majority,
    columns_lines,
    cost_line,
    mode_line,
    render_distributed,
    run_trust,
)
from parties.vertical_csv import fresh_id_column
from protocols.engine.preprocessing import PREPROCESSING, default_preprocessing, preprocessing_of
from protocols.ppid3.levels import REVEALS
from protocols.ppid3.ppid3 import assemble, check_tree_equal

__all__ = [
    "Ppid3",
    "Ppid3Options",
    "class_site_index",
    "class_site_option",
    "site_files",
]

#: the planted tree and the domains of ``--synthetic`` (the scaling benchmark's table)
SYNTHETIC: dict[str, Any] = {"n_values": (2, 8), "depth": 4, "noise": 0.05, "n_classes": 2}


def class_site_option(text: str) -> int:
    """``--class-site``: a site number counted from 1 (``3``) or a site name (``site3``), as
    the sites are named site1..siteK, or a negative number counted from the end (``-1``: the
    last site). Returns the 0-based site index (negative: from the end), checked against the
    number of sites by :func:`class_site_index`."""
    value = text.strip()
    named = value.lower().startswith("site")
    digits = value[4:] if named else value
    try:
        n = int(digits)
    except ValueError:
        n = 0
    if n == 0 or (named and n < 0):
        raise argparse.ArgumentTypeError(
            f"expected a site number 1..K, a site name site1..siteK or -1 (the last site), "
            f"got {text!r}" + ("; sites are counted from 1" if digits.strip() == "0" else "")
        )
    return n - 1 if n > 0 else n


def class_site_index(index: int, k: int) -> int:
    """The 0-based index of ``--class-site`` (:func:`class_site_option`) among ``k`` sites; a
    site that does not exist is a one-line error naming the sites."""
    if not -k <= index < k:
        shown = str(index + 1) if index >= 0 else str(index)
        raise ConfigError(
            f"--class-site {shown}: there are {k} sites, site1..site{k}; give 1..{k}, a site "
            "name or -1 for the last"
        )
    return index


def count_or_fraction(text: str) -> int | float:
    """``--min-samples-split``: an int >= 1, or a fraction in (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a fraction, got {text!r}") from None
    if value.is_integer() and value >= 1 and "." not in text:
        return int(value)
    if 0 < value < 1:
        return value
    raise argparse.ArgumentTypeError(f"expected a count >= 1 or a fraction in (0, 1), got {text}")


def synthetic_spec(text: str) -> tuple[int, int, int]:
    """``--synthetic ROWS,ATTRS,SEED``: three integers (``1e6`` style allowed for ROWS)."""
    parts = text.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        rows, attrs, seed = int(float(parts[0])), int(parts[1]), int(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected ROWS,ATTRS,SEED (three integers, e.g. 100000,20,1), got {text!r}"
        ) from None
    if rows < 1 or attrs < int(SYNTHETIC["depth"]):
        raise argparse.ArgumentTypeError(
            f"need ROWS >= 1 and ATTRS >= {SYNTHETIC['depth']} (the planted tree's depth), "
            f"got {text!r}"
        )
    return rows, attrs, seed


def _helper_help() -> str:
    lines = "; ".join(f"{h.name}: {h.help}" for h in PREPROCESSING.values())
    return (
        "with --counts fast, who makes the correlated randomness of each product between two "
        f"sites: {lines}. Default: the first that needs no outside party (sites with 3 or "
        "more sites, ot with 2). --counts psi needs no helper and ignores it"
    )


@dataclass(frozen=True)
class Ppid3Options(DataSource, ColumnKinds):
    """The options of ``mpc run ppid3`` and ``mpc deploy ppid3``."""

    synthetic: tuple[int, int, int] | None = option(
        None,
        flag="--synthetic",
        parse=NumberList(synthetic_spec),
        metavar="ROWS,ATTRS,SEED",
        group="source",
        help="a generated table: ROWS rows of ATTRS nominal attributes of 2 to 8 values each, "
        "labelled by a planted random tree of depth 4 (2 classes, 5%% of the labels flipped); "
        "SEED seeds that generator only (the table is public test data, no party's secret)",
    )
    sites: int | None = option(
        None,
        flag="--sites",
        metavar="K",
        help="number of sites, named site1..siteK (default 2; with an explicit --partition, "
        "its number of groups, which --sites must then match if given)",
    )
    partition: str = option(
        "contiguous",
        flag="--partition",
        metavar="SCHEME",
        help="contiguous (default), round-robin, random:SEED (a seeded shuffle of the columns "
        "over the sites: a public choice), or an explicit 'a,b;c;d' (one group of columns per "
        "site, in site order, ';' between sites: it sets the number of sites)",
    )
    class_site: int = option(
        -1,
        flag="--class-site",
        parse=class_site_option,
        metavar="N|siteN",
        help="the site holding the class: its number 1..K or its name site1..siteK (as the "
        "sites are named), or -1 for the last (default; -2 the one before it, ...)",
    )
    test_split: float | None = option(
        None,
        flag="--test-split",
        metavar="F",
        group="test",
        help="hold out a stratified fraction F for test",
    )
    test: str | None = option(
        None, flag="--test", metavar="FILE", group="test", help="a test CSV with the same columns"
    )
    all_rows: bool = option(
        False,
        flag="--all-rows",
        flag_only=True,
        group="test",
        help="train on every row of the dataset, its own test file included (adult: all "
        "48,842 rows); no test accuracy",
    )
    seed: int = option(
        0,
        flag="--seed",
        help="seed of the public choice of the test split (default 0); never of any party's "
        "secret randomness (keys and masks always come from each party's OS randomness)",
    )
    bins: int | None = option(
        None,
        flag="--bins",
        parse=int,
        check=AtLeast(2),
        help="equal-frequency bins for continuous columns: a branch per bin (default 4); with "
        "--splits threshold, the candidate thresholds are the bins' cut points instead of "
        "every distinct value",
    )
    splits: str = option(
        "multiway",
        flag="--splits",
        choices=SPLITS,
        help="how continuous columns split: multiway, a branch per bin of --bins (default); "
        "threshold, in two at a threshold (<= t, > t) as CART and C4.5 do, split again further "
        "down, the candidates every distinct value of the owner's column (exact) or its "
        "--bins cut points; a missing number goes to <= t. Needs --counts fast",
    )
    max_depth: int | None = option(
        None, flag="--max-depth", check=AtLeast(1), help="stop growing at this depth"
    )
    min_samples_split: int | float | None = option(
        None,
        flag="--min-samples-split",
        parse=count_or_fraction,
        metavar="N|F",
        help="do not split nodes with fewer rows: a count (e.g. 20) or a fraction of the "
        "training rows (e.g. 0.05); plain ID3 gets the same count",
    )
    shuffle_from: int | None = option(
        None,
        flag="--shuffle-from",
        parse=int,
        check=AtLeast(0),
        metavar="CODES",
        help="with --reveal tree and a dealing party (--helper dealer or sites) and --splits "
        "threshold: a number of more than CODES codes (candidate thresholds + 1) is counted by "
        "two owner-known shuffles of the shares, in one pass over the rows, instead of one-hot "
        "columns of codes x rows (default 64; 0: every number)",
    )
    row_block: int | None = option(
        None,
        flag="--row-block",
        parse=int,
        check=AtLeast(1),
        metavar="ROWS",
        help="with --reveal tree and a dealing party (--helper dealer or sites): each site's "
        "rows pass through a level in ranges of ROWS, one range in memory at a time, the others "
        "in a folder of its own under $TMPDIR (default 262144; a table of no more rows is one "
        "range). --reveal counts and --helper ot take the rows whole",
    )
    model_out: str | None = option(
        None,
        flag="--model-out",
        metavar="DIR",
        output="folder",
        help="save the trained tree: each site writes its own part to DIR/SITE.model.json "
        "(private; a site's part holds only its own nodes, the class site's the leaves)",
    )
    split_demo: bool = option(
        False,
        flag="--split-demo",
        flag_only=True,
        help="with mpc deploy: split the demo table (--dataset/--csv) into one CSV file per "
        "site (id column, its columns, rows in its own order) beside the deployment; without "
        "it, mpc deploy reads no data and needs --partition 'a,b;c;d' and --class",
    )
    counts: str | None = option(
        None,
        flag="--counts",
        choices=COUNTS,
        help="fast: additive secret sharing, a whole tree level per exchange, with correlated "
        "randomness from --helper (default); psi: every count by set-intersection "
        "cardinality, one node at a time, the owners opening their counts (the paper's "
        "PPID3; implies --reveal counts)",
    )
    helper: str | None = option(None, flag="--helper", choices=PREPROCESSING, help=_helper_help())
    records: str = option(
        "same",
        flag="--records",
        choices=RECORDS,
        help="same: every site must hold the same record ids, and a run whose sites do not "
        "stops, telling only how many ids every site holds (default); common: train (and "
        "classify) on the records every site holds, found by a private set intersection: each "
        "site learns which of its records those are and the last site, at each step of the "
        "chain of sites, how many records the sites before it hold in common; no site's other "
        "records leave it",
    )
    reveal: str | None = option(
        None,
        flag="--reveal",
        choices=REVEALS,
        help="tree: only the tree is opened (which nodes are leaves, their labels, each "
        "split's attribute), every count, score and stopping test computed on shares, split "
        "by --criterion (so is the plain ID3 it is compared with); the default, but with "
        "--counts psi; counts: the paper's PPID3, whose owners open their count matrices and "
        "whose class site learns every node's class distribution and best gains (Theorem 1), "
        "counts made as --counts says",
    )
    split_criterion: str | None = option(
        None,
        flag="--criterion",
        choices=CRITERIA,
        help="the split criterion (mpc train's): entropy (the paper's information gain, "
        "floating point; the default of --reveal counts), gini (MPyC's, exact fractions; the "
        "default of --reveal tree), gini-impurity (CART's and scikit-learn's, exact "
        "fractions) or entropy-fixed (information gain with a fixed-point n log n, exact "
        "integers; fewer than 2^24 rows). --reveal tree computes the exact ones on shares; the "
        "paper's owners score their counts with any",
    )

    def site_count(self) -> int:
        """The number of sites: the groups of an explicit ``--partition 'a,b;c;d'``
        (``--sites``, if given, must agree), else ``--sites`` (default 2)."""
        if _explicit(self.partition):
            k = self.partition.count(";") + 1
            if self.sites is not None and self.sites != k:
                raise ConfigError(
                    f"--sites {self.sites} disagrees with --partition {self.partition!r}, which "
                    f"gives {k} site{'s' if k != 1 else ''} (groups separated by ';'); drop "
                    "--sites or make them agree"
                )
            if k < 2:
                raise ConfigError(
                    f"--partition {self.partition!r} gives 1 site; list the columns of at "
                    "least 2 sites, separated by ';'"
                )
            return k
        k = 2 if self.sites is None else self.sites
        if k < 2:
            raise ConfigError(f"--sites must be at least 2, got {k}")
        return k

    @property
    def criterion(self) -> str:
        """The split criterion: ``--criterion``, by default the paper's information gain, or
        with ``--reveal tree`` Gini; ``--reveal tree`` computes only an exact one on shares."""
        if self.reveal_mode != "tree":
            return self.split_criterion or "entropy"
        name = self.split_criterion or "gini"
        if not CRITERIA[name].on_shares:
            shared = [c.name for c in CRITERIA.values() if c.on_shares]
            raise ConfigError(
                f"--criterion {name} is computed in floating point, which shares cannot do "
                f"exactly; --reveal tree splits by one of {shared}"
            )
        return name

    @property
    def reveal_mode(self) -> str:
        """What training opens: ``--reveal``, by default only the tree, but the counts with
        ``--counts psi`` (the paper's PPID3, whose set intersections open every count)."""
        if self.reveal is not None:
            return self.reveal
        return "counts" if self.counts == "psi" else "tree"

    @property
    def counts_mode(self) -> str:
        """How the counts are made: ``--counts``, by default on shares (``fast``)."""
        if self.counts == "psi" and self.reveal == "tree":
            raise ConfigError(
                "--reveal tree computes every count on shares, which --counts psi does not: "
                "drop --counts psi (or ask for the paper's PPID3 with --reveal counts)"
            )
        if self.counts == "psi" and self.splits == "threshold":
            raise ConfigError(
                "--splits threshold needs --counts fast: the depth-first set-intersection "
                "counts split a node into a branch per value (use --splits multiway, or drop "
                "--counts psi)"
            )
        return self.counts or "fast"

    def helper_for(self, k: int) -> str | None:
        """Who makes the randomness of ``--counts fast`` with ``k`` sites (None for psi)."""
        helper = None
        if self.counts_mode == "fast":
            helper = self.helper or default_preprocessing(k)
            preprocessing_of(helper).check(k)
        if self.row_block is not None and (self.reveal_mode != "tree" or helper == "ot"):
            raise ConfigError(
                "--row-block needs --reveal tree and a dealing party (--helper dealer or "
                f"sites), not --reveal {self.reveal_mode} with --helper {helper or 'none'}: "
                "the paper's counts and the products by oblivious transfer take a site's rows "
                "whole"
            )
        if self.shuffle_from is not None and (self.reveal_mode != "tree" or helper == "ot"):
            raise ConfigError(
                "--shuffle-from needs --reveal tree and a dealing party (--helper dealer or "
                f"sites), not --reveal {self.reveal_mode} with --helper {helper or 'none'}: a "
                "shuffle has a helper"
            )
        return helper


def _explicit(scheme: str) -> bool:
    """Whether ``--partition`` lists the columns of every site (``'a,b;c;d'``) rather than
    naming a scheme (:func:`mpc.datasets.partition` reads it the same way)."""
    return scheme not in ("contiguous", "round-robin") and not scheme.startswith("random:")


# --------------------------------------------------------------------------- the demo files


def csv_text(
    ids: Sequence[str], table: Any, *, id_column: str, with_class: bool, order: np.ndarray
) -> str:
    """One site's CSV file: the id column, its attributes (continuous values as numbers, a
    missing one as ``?``) and, if ``with_class``, the class; rows in ``order``."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow([id_column, *table.attributes, *([table.class_name] if with_class else [])])
    cols = [np.asarray(ids, dtype=object)[order]]
    for kind, col in zip(table.kinds, table.columns, strict=True):
        if kind == CONTINUOUS:
            col = [MISSING if math.isnan(x) else repr(float(x)) for x in col]
        cols.append(np.asarray(col, dtype=object)[order])
    if with_class:
        cols.append(np.asarray(table.target, dtype=object)[order])
    out.writerows(zip(*(c.tolist() for c in cols), strict=True))  # a row at a time, in C
    return buf.getvalue()


def site_files(
    table: Any, part: Any, *, seed: int, id_column: str = ID_COLUMN, prefix: str = ""
) -> list[str]:
    """The demo split: each site's own CSV text (id column, its columns, the class on the class
    site), every site's rows in its own seeded order. A demo of what organisations hold; the
    order is a public choice of the demo, never secret."""
    ids = [f"{prefix}{i}" for i in range(table.n_rows)]
    texts = []
    for i, attrs in enumerate(part.sites):
        order = np.random.default_rng([seed, i]).permutation(table.n_rows)
        texts.append(
            csv_text(
                ids,
                table.select(list(attrs)),
                id_column=id_column,
                with_class=i == part.class_site,
                order=order,
            )
        )
    return texts


def _kind_entries(table: Any, attrs: Sequence[str]) -> dict[str, Any]:
    """A site's column kinds for its deployment entry: its numeric columns read as categories
    stay so in its own file (``nominal``), the rest are inferred as they were here."""
    kinds = dict(zip(table.attributes, table.kinds, strict=True))
    return {
        "nominal": [a for a in attrs if kinds[a] != CONTINUOUS],
        "continuous": [a for a in attrs if kinds[a] == CONTINUOUS],
    }


# --------------------------------------------------------------------------- the system


class Ppid3(System):
    name = "ppid3"
    help = (
        "PPID3 (Vaidya & Clifton, Algorithm 7): a decision tree over vertically partitioned "
        "data, one process per site; counts by set-intersection cardinality (--counts psi) or "
        "by secret sharing, the randomness dealt by a third site or a dealer (--counts fast)"
    )
    options = Ppid3Options
    has_tree = True

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        o: Ppid3Options = options
        k = o.site_count()
        class_site = class_site_index(o.class_site, k)
        if deploy and not o.split_demo:
            return self._public_plan(o, k, class_site)
        train, test = self._tables(o)
        if k > len(train.attributes):
            raise ConfigError(
                f"--sites {k}: {train.name} has only {len(train.attributes)} attributes"
            )
        part = partition(train.attributes, k, o.partition, class_site=class_site)
        if len(part.attributes) < len(train.attributes):  # columns no site uses: left out
            train = train.select(part.attributes)
            test = test.select(part.attributes) if test is not None else None
        warning = kinds_warning(train) if o.splits == "multiway" else None
        discretizer = (
            Discretizer.fit(train, o.bins or MULTIWAY_BINS)
            if "continuous" in train.kinds and o.splits == "multiway"
            else None
        )
        binned = discretizer.transform(train) if discretizer else train
        mss = o.min_samples_split
        if isinstance(mss, float):  # a fraction of the training rows
            mss = max(1, math.ceil(mss * train.n_rows))
        names = [f"site{i + 1}" for i in range(part.k)]
        specs = self._site_specs(o, train, test, part, names)
        started = time.perf_counter()
        site_of = {a: i for i, s in enumerate(part.sites) for a in s}
        plain = ID3Classifier(max_depth=o.max_depth, min_samples_split=mss,
                              criterion=o.criterion, splits=o.splits,
                              bins=o.bins if o.splits == "threshold" else None)  # fmt: skip
        plain.fit(binned, attribute_order=list(part.attributes), sites=site_of)
        context = {
            "dataset": train.name,
            "train": binned,
            "test": discretizer.transform(test) if discretizer and test else test,
            "partition": part,
            "names": names,
            "plain": plain,
            "plain_s": time.perf_counter() - started,
            "discretizer": discretizer.to_dict() if discretizer else None,
            "kinds": dict(zip(train.attributes, train.kinds, strict=True)),
        }
        params = self._params(o, names, part, train.class_name, mss)
        return Plan(specs, params, context, notes=(warning,) if warning else ())

    @staticmethod
    def _tables(o: Ppid3Options) -> tuple[Any, Any]:
        """The training table and the test table (or None), as the options choose them."""
        if o.synthetic is not None:
            rows, attrs, seed = o.synthetic
            train, test = synthetic(rows, n_attributes=attrs, seed=seed, **SYNTHETIC), None
        else:
            train, test = joined_table(o, o)
        if o.all_rows and test is not None:
            train, test = train.concat(test), None
        if o.test_split is not None:
            tr_idx, te_idx = train_test_split(train.target, o.test_split, seed=o.seed)
            train, test = train.subset(tr_idx), train.subset(te_idx)
        elif o.test is not None:
            test = load_csv(o.test, train.class_name, id_column=o.id_column, **o.kind_options())
            if test.attributes != train.attributes:
                raise DataError(
                    f"the test file's columns {list(test.attributes)} are not the training "
                    f"columns {list(train.attributes)} (same names, same order)",
                    file=o.test,
                    line=1,
                )
        return train, test

    @staticmethod
    def _site_specs(
        o: Ppid3Options, train: Any, test: Any, part: Any, names: list[str]
    ) -> list[PartySpec]:
        # the files' record id column: "id", unless the table has a column of that name
        idc = fresh_id_column([*train.attributes, train.class_name], ID_COLUMN)
        texts = site_files(train, part, seed=o.seed, id_column=idc)
        test_texts = (
            site_files(test, part, seed=o.seed + 1, id_column=idc, prefix="t") if test else None
        )
        specs = []
        for i, name in enumerate(names):
            entries: dict[str, Any] = {"id": idc, **_kind_entries(train, part.sites[i])}
            if o.model_out is not None:
                entries["model_out"] = str(Path(o.model_out).resolve() / f"{name}.model.json")
            specs.append(
                PartySpec(
                    name,
                    "site",
                    columns=tuple(part.sites[i]),
                    csv=texts[i],
                    entries=entries,
                    files={"test": test_texts[i]} if test_texts else {},
                )
            )
        if o.model_out is not None:
            private_dir(o.model_out)
        outside = _outside(o, part.k)
        if outside is not None:
            specs.append(PartySpec(outside, outside))
        return specs

    @staticmethod
    def _params(
        o: Ppid3Options, names: list[str], part: Any, class_name: str, mss: int | None
    ) -> dict[str, Any]:
        return Ppid3Params(
            class_site=names[part.class_site],
            sites=tuple(names),
            class_name=class_name,
            attribute_counts=tuple(len(s) for s in part.sites),
            max_depth=o.max_depth,
            min_samples_split=mss,
            counts=o.counts_mode,
            bins=o.bins if o.splits == "threshold" else o.bins or MULTIWAY_BINS,
            splits=o.splits if o.splits != "multiway" else None,
            helper=o.helper_for(part.k),
            reveal=o.reveal_mode,
            criterion=o.criterion if o.split_criterion or o.reveal_mode == "tree" else None,
            records=o.records,
            row_block=o.row_block,
            shuffle_from=o.shuffle_from,
        ).to_deployment()

    def _public_plan(self, o: Ppid3Options, k: int, class_site: int) -> Plan:
        """``mpc deploy ppid3`` without a demo table: only public things, from the options."""
        for flag in ("dataset", "csv", "test", "test_split"):
            if getattr(o, flag, None) is not None:
                raise ConfigError(
                    f"mpc deploy reads no data: --{flag.replace('_', '-')} goes with `mpc run`, "
                    "or with --split-demo to split a demo table into one file per party"
                )
        if not o.class_column or ";" not in o.partition:
            raise ConfigError(
                "mpc deploy ppid3 writes only public things: give the sites' attributes with "
                "--partition 'a,b;c;d' (sites in order, ';' between sites) and the class column "
                "with --class COLUMN; or --split-demo DATASET to split a demo table"
            )
        attrs = [a.strip() for s in o.partition.split(";") for a in s.split(",") if a.strip()]
        part = partition(attrs, k, o.partition, class_site=class_site)
        names = [f"site{i + 1}" for i in range(part.k)]
        specs = [
            PartySpec(n, "site", columns=tuple(part.sites[i]), entries={"id": ID_COLUMN})
            for i, n in enumerate(names)
        ]
        outside = _outside(o, part.k)
        if outside is not None:
            specs.append(PartySpec(outside, outside))
        mss = o.min_samples_split if isinstance(o.min_samples_split, int) else None
        return Plan(specs, self._params(o, names, part, o.class_column, mss), {"public_only": True})

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
        ctx = plan.context
        names: list[str] = ctx["names"]
        results = {n: reports[n].get("result") or {} for n in names}
        missing = [n for n in names if "tree" not in results[n]]
        if missing:
            raise ProtocolError(f"no tree in the reports of {missing}")
        view = assemble({n: results[n]["tree"] for n in names}, {n: i for i, n in enumerate(names)})
        plain = ctx["plain"]
        plain_json = to_json(plain.tree_)
        part = ctx["partition"]
        fast = plan.params.get("counts") == "fast"
        helper = str(plan.params.get("helper", "dealer")) if fast else None
        acc, plain_acc = _accuracies(results[str(plan.params["class_site"])], ctx)
        assembled = from_json(view)
        return {
            "dataset": ctx["dataset"],
            "counts": plan.params.get("counts", "psi"),
            "helper": helper,
            "trust": run_trust(
                helper, str(plan.params.get("reveal", "counts")), names, ctx["test"] is not None
            ),
            "rows": {
                "train": ctx["train"].n_rows,
                "test": ctx["test"].n_rows if ctx["test"] is not None else 0,
            },
            "partition": {**part.to_dict(), "site_names": names},
            "discretizer": ctx["discretizer"],
            "columns": {n: results[n].get("columns", []) for n in names},
            "records": {n: results[n]["records"] for n in names if "records" in results[n]},
            "models": {n: results[n]["model"] for n in names if "model" in results[n]},
            "reveal": plan.params.get("reveal", "counts"),
            "criterion": plan.params.get("criterion") or "entropy",
            "identical": check_tree_equal(
                view, plain_json, counts=plan.params.get("reveal", "counts") != "tree"
            ),
            "nodes": node_count(assembled),
            "depth": depth(assembled),
            "accuracy": acc,
            "plain_accuracy": plain_acc,
            "majority": _majority(ctx["test"]),
            "plain_fit_s": round(ctx["plain_s"], 4),
            "cost": _cost(reports, results, names, plan),
            "tree": view,
            "plain_tree": plain_json,
        }

    def summary(self, result: Any) -> list[str]:
        part = result["partition"]
        lines = [
            f"dataset:   {result['dataset']} ({result['rows']['train']} training rows"
            + (f", {result['rows']['test']} test rows)" if result["rows"]["test"] else ")"),
            "partition: "
            + "; ".join(
                f"{n}{' (class)' if i == part['class_site'] else ''}: {', '.join(s)}"
                for i, (n, s) in enumerate(zip(part["site_names"], part["sites"], strict=True))
            ),
            *columns_lines(result),
            mode_line(result),
            f"tree:      {result['nodes']} nodes, depth {result['depth']} "
            "(assembled from every site's own nodes for this audit; no site holds it)",
            f"identical: {result['identical']}  (PPID3 tree == plain ID3 on the joined data)",
            "accuracy:  "
            + (
                ", ".join(
                    f"{k} {v:.4f} (plain {result['plain_accuracy'][k]:.4f})"
                    for k, v in result["accuracy"].items()
                    if isinstance(v, float)
                )
                or "not computed: --reveal tree opens no count, and the training rows' "
                "accuracy is one"
            ),
            *below_majority(result),
            cost_line(result),
            f"trust:     {result.get('trust', 'semi-honest sites')}"
            + (f" (--helper {result['helper']})" if result.get("helper") else ""),
            "",
        ]
        lines += render_distributed(result["tree"], part["site_names"], part["class_site"])
        return lines

    def audit(self, result: Any) -> Audit:
        part = result["partition"]
        names = tuple(part["site_names"])
        acc = result.get("accuracy") or {}
        return Audit(
            trust=str(result.get("trust") or SEMI_HONEST),
            tree=result["tree"],
            sites=names,
            class_site=names[int(part["class_site"])],
            accuracy=number(acc.get("test", acc.get("train"))),
        )


def _outside(o: Ppid3Options, k: int) -> str | None:
    """The outside party the run's helper adds (the dealer), if any."""
    helper = o.helper_for(k)
    return None if helper is None else PREPROCESSING[helper].outside


def _majority(test: Any) -> dict[str, Any] | None:
    """The held-out records' most common class and its share: the accuracy of a tree that
    learnt nothing."""
    if test is None or not test.n_rows:
        return None
    values, counts = np.unique(np.asarray(test.target, dtype=str), return_counts=True)
    best = int(np.argmax(counts))
    return {"class": str(values[best]), "share": round(float(counts[best] / test.n_rows), 4)}


def _accuracies(cls: dict[str, Any], ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The private tree's accuracies (the class site's report) and plain ID3's."""
    plain, train, test = ctx["plain"], ctx["train"], ctx["test"]
    acc: dict[str, Any] = {"train": cls.get("train_accuracy")}
    plain_acc: dict[str, Any] = {"train": accuracy(train.target, plain.predict(train))}
    if test is not None:
        acc["test"] = cls.get("test_accuracy")
        plain_pred = plain.predict(test)
        plain_acc["test"] = accuracy(test.target, plain_pred)
        got = cls.get("test_predictions") or {}
        acc["test_predictions_equal_plain"] = list(map(str, plain_pred)) == [
            got.get(f"t{i}") for i in range(test.n_rows)
        ]
    return acc, plain_acc


def _cost(
    reports: dict[str, dict[str, Any]], results: dict[str, Any], names: list[str], plan: Plan
) -> dict[str, Any]:
    """The run's cost: every site's counters and the paper's estimate ``c q (1 + p r)``."""
    structure = results[names[0]]["tree"]["structure"]
    plain, train = plan.context["plain"], plan.context["train"]
    q, c, r = len(structure), len(plain.classes_), len(train.attributes)
    p = float(np.mean([len(d) for d in plain.domains_]))
    metrics = {n: reports[n].get("metrics") or {} for n in names}
    return {
        "counts": plan.params.get("counts", "psi"),
        "set_intersections": sum(int(results[n]["cost"]["intersections"]) for n in names),
        "outer_batches": sum(int(results[n]["cost"].get("outer_batches", 0)) for n in names),
        "levels": int(results[names[0]]["cost"].get("levels", 0)),
        "dot_batches": sum(int(results[n]["cost"].get("dot_batches", 0)) for n in names),
        "psi_invocations": int(results[names[0]]["cost"]["psi_invocations"]),
        "dealt_by_sites": sum(int(results[n]["cost"].get("dealt", 0)) for n in names),
        "paper_estimate_c_q_1_plus_p_r": round(c * q * (1 + p * r)),
        "paper_estimate_terms": {"c": c, "q": q, "p": round(p, 3), "r": r},
        "per_site": {
            n: {
                "x25519": (metrics[n].get("crypto") or {}).get("x25519", 0),
                "modexp": (metrics[n].get("crypto") or {}).get("modexp", 0),
                "bytes_sent": metrics[n].get("bytes_sent", 0),
                "bytes_received": metrics[n].get("bytes_received", 0),
                "messages_sent": metrics[n].get("messages_sent", 0),
                "rounds": metrics[n].get("rounds", 0),
                "train_s": results[n].get("train_s"),
            }
            for n in names
        },
    }
