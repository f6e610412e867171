"""The ``ppid3`` system: PPID3 (Vaidya & Clifton, Algorithms 2-8) with one process per site.

Each site process reads its own CSV file (a record id column, its attributes, the class at the
class site; ``--data``/``--id`` or its deployment entry), aligns its records with the other
sites (:mod:`protocols.primitives.record_alignment`), bins its own continuous columns
(equal-frequency bins on its own training rows), trains the distributed tree with the other sites,
classifies held-out test instances with Algorithm 8 and, with ``--model-out``, saves its part of the
tree (:mod:`mpc.learners.model_file`); started with ``--model`` it classifies new records
instead (also ``mpc run ppid3-classify``). For a local run the launcher loads a table, partitions
its columns over ``k`` sites and writes each site such a file, in its own row order; ``mpc deploy``
writes only public things unless asked to split a demo table (``--split-demo``).
``--counts psi`` trains depth first with set-intersection counts
(:mod:`protocols.ppid3.ppid3`); ``--counts fast`` trains a level per exchange on additive shares
(:mod:`protocols.ppid3.levels`), the correlated randomness of each product between two sites
dealt by a third site (``--helper sites``, the default with three or more sites: no party but
the sites), made by the two sites of each product by oblivious transfer (``--helper ot``, the
default with two sites: no party but the sites either) or dealt by a dealer process
(``--helper dealer``, a commodity server that colludes with no site, on request). The
deployment file carries the choice as the protocol parameter ``helper``; with ``sites`` or
``ot`` it has no dealer party.

The training accuracy needs no exchange: the class site holds every leaf's class counts, and
a training record is classified correctly exactly when its class is its leaf's label. (Running
Algorithm 8 on the training records would hand the class site every other site's branch of
every training record, which Theorem 1 does not allow.)

For auditing, the launcher — which in a test deployment holds every site's report — assembles
the whole tree from every site's own nodes and compares it with plain ID3 on the joined data.
No party can build that view: a site knows only its own nodes and the public structure.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import logging
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.config import DeploymentConfig, PartyConfig
from mpc.runtime.party import Party
from mpc.runtime.view import declared, public, uniform
from protocols.ppid3.helpers import HELPERS, default_helper, helper_of
from protocols.ppid3.level_dealing import DEALER

log = logging.getLogger("mpc.ppid3")

__all__ = [
    "ID_COLUMN",
    "TRUST",
    "classify_args",
    "classify_plan",
    "classify_result",
    "classify_summary",
    "ppid3_args",
    "ppid3_plan",
    "ppid3_result",
    "ppid3_run",
    "ppid3_summary",
    "site_files",
]

#: the record id column of the demo files that `mpc run` and `mpc deploy --split-demo` write
ID_COLUMN = "id"

#: what a party receives in the system's own steps
ROWS = declared("ppid3/rows", "the number of aligned records (the dealer: its shapes)")
MODE = public("ppid3/mode", "whether the sites train or classify with saved parts")
MODEL_ID = uniform("ppid3/model-id", "the fresh random id of the trained model", tokens=True)
PART_COMMITMENT = uniform(
    "ppid3/part-commitment",
    "another site's commitment to its model part (a hash with a secret opening: hiding)",
    tokens=True,
)
MODEL_CHECK = uniform(
    "ppid3/model-check",
    "another site's model id and recorded commitments, to compare before classifying",
    tokens=True,
)
PREDICTIONS = declared(
    "ppid3/predictions",
    "the predicted class of every new record (the party it is delivered to)",
    records="rows",
)


def ppid3_args(p: argparse.ArgumentParser) -> None:
    from parties.options import NumberList

    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--dataset",
        metavar="NAME",
        default=None,
        help="a dataset by name (see `mpc datasets`; default: the embedded weather table)",
    )
    src.add_argument("--csv", metavar="FILE", help="any CSV file with a header row")
    src.add_argument(
        "--synthetic",
        type=NumberList(_synthetic_spec),
        metavar="ROWS,ATTRS,SEED",
        help="a generated table: ROWS rows of ATTRS nominal attributes of 2 to 8 values each, "
        "labelled by a planted random tree of depth 4 (2 classes, 5%% of the labels flipped); "
        "SEED seeds that generator only (the table is public test data, no party's secret)",
    )
    p.add_argument("--class", dest="class_column", metavar="COLUMN", help="class column of --csv")
    p.add_argument("--data-dir", metavar="DIR", help="where the UCI datasets are")
    p.add_argument(
        "--sites",
        type=int,
        default=None,
        metavar="K",
        help="number of sites, named site1..siteK (default 2; with an explicit --partition, "
        "its number of groups, which --sites must then match if given)",
    )
    p.add_argument(
        "--partition",
        default="contiguous",
        metavar="SCHEME",
        help="contiguous (default), round-robin, random:SEED (a seeded shuffle of the columns "
        "over the sites: a public choice), or an explicit 'a,b;c;d' (one group of columns per "
        "site, in site order, ';' between sites: it sets the number of sites)",
    )
    p.add_argument(
        "--class-site",
        type=class_site_option,
        default=-1,
        metavar="N|siteN",
        help="the site holding the class: its number 1..K or its name site1..siteK (as the "
        "sites are named), or -1 for the last (default; -2 the one before it, ...)",
    )
    test = p.add_mutually_exclusive_group()
    test.add_argument(
        "--test-split", type=float, metavar="F", help="hold out a stratified fraction F for test"
    )
    test.add_argument("--test", metavar="FILE", help="a test CSV with the same columns")
    test.add_argument(
        "--all-rows",
        action="store_true",
        help="train on every row of the dataset, its own test file included (adult: all "
        "48,842 rows); no test accuracy",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the public choice of the test split (default 0); never of any party's "
        "secret randomness (keys and masks always come from each party's OS randomness)",
    )
    p.add_argument(
        "--bins", type=int, default=4, help="equal-frequency bins for continuous columns (4)"
    )
    p.add_argument("--max-depth", type=int, default=None, help="stop growing at this depth")
    p.add_argument(
        "--min-samples-split",
        type=_count_or_fraction,
        default=None,
        metavar="N|F",
        help="do not split nodes with fewer rows: a count (e.g. 20) or a fraction of the "
        "training rows (e.g. 0.05); plain ID3 gets the same count",
    )
    _kind_arguments(p)
    p.add_argument(
        "--model-out",
        metavar="DIR",
        default=None,
        help="save the trained tree: each site writes its own part to DIR/SITE.model.json "
        "(private; a site's part holds only its own nodes, the class site's the leaves)",
    )
    p.add_argument(
        "--split-demo",
        action="store_true",
        help="with mpc deploy: split the demo table (--dataset/--csv) into one CSV file per "
        "site (id column, its columns, rows in its own order) beside the deployment; without "
        "it, mpc deploy reads no data and needs --partition 'a,b;c;d' and --class",
    )
    p.add_argument(
        "--counts",
        choices=("psi", "fast"),
        default="psi",
        help="psi: every count by set-intersection cardinality, one node at a time (the "
        "paper's way, default); fast: additive secret sharing, a whole tree level per "
        "exchange, with correlated randomness from --helper",
    )
    p.add_argument(
        "--helper",
        choices=tuple(HELPERS),
        default=None,
        help="with --counts fast, who deals the correlated randomness of each product between "
        "two sites: sites (a third site, never one of the two; no outside party; needs 3 or "
        "more sites, no two of them colluding; the default with 3 or more sites) or dealer (a "
        "commodity server, a 'dealer' process that must collude with no site) or ot (no one: "
        "the two sites of each product compute it by oblivious transfer; any number of sites "
        ">= 2, no outside party; the default with 2 sites). --counts psi needs "
        "no helper and ignores it",
    )


def _kind_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--nominal",
        metavar="COL,...",
        default=None,
        help="numeric columns to read as categories (coded grades, 0/1 flags), never binned",
    )
    p.add_argument(
        "--continuous",
        metavar="COL,...",
        default=None,
        help="columns to read as numbers and bin; other numeric columns are continuous too "
        "unless --nominal names them",
    )
    p.add_argument(
        "--delimiter", metavar="C", default=None, help="the CSV's field delimiter (default ',')"
    )


def class_site_option(text: str) -> int:
    """``--class-site``: a site number counted from 1 (``3``) or a site name (``site3``), as
    the sites are named site1..siteK, or a negative number counted from the end (``-1``: the
    last site). Returns the 0-based site index (negative: from the end), checked against the
    number of sites by :func:`class_site_index`."""
    value = text.strip()
    named = value.lower().startswith("site")
    number = value[4:] if named else value
    try:
        n = int(number)
    except ValueError:
        n = 0
    if n == 0 or (named and n < 0):
        raise argparse.ArgumentTypeError(
            f"expected a site number 1..K, a site name site1..siteK or -1 (the last site), "
            f"got {text!r}" + ("; sites are counted from 1" if number.strip() == "0" else "")
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


def _explicit_partition(scheme: str) -> bool:
    """Whether ``--partition`` lists the columns of every site (``'a,b;c;d'``) rather than
    naming a scheme (:func:`mpc.datasets.partition` reads it the same way)."""
    return scheme not in ("contiguous", "round-robin") and not scheme.startswith("random:")


def site_count(args: argparse.Namespace) -> int:
    """The number of sites: the groups of an explicit ``--partition 'a,b;c;d'`` (``--sites``,
    if given, must agree), else ``--sites`` (default 2)."""
    sites = getattr(args, "sites", None)
    if _explicit_partition(args.partition):
        k = args.partition.count(";") + 1
        if sites is not None and sites != k:
            raise ConfigError(
                f"--sites {sites} disagrees with --partition {args.partition!r}, which gives "
                f"{k} site{'s' if k != 1 else ''} (groups separated by ';'); drop --sites or "
                "make them agree"
            )
        if k < 2:
            raise ConfigError(
                f"--partition {args.partition!r} gives 1 site; list the columns of at least 2 "
                "sites, separated by ';'"
            )
        return k
    k = 2 if sites is None else sites
    if k < 2:
        raise ConfigError(f"--sites must be at least 2, got {k}")
    return k


def _helper(args: argparse.Namespace, k: int) -> str | None:
    """Who deals for ``--counts fast`` with ``k`` sites (None for ``--counts psi``)."""
    if args.counts != "fast":
        return None
    helper = str(getattr(args, "helper", None) or default_helper(k))
    helper_of(helper).check(k)
    return helper


def _count_or_fraction(text: str) -> int | float:
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


#: the planted tree and the domains of ``--synthetic`` (the scaling benchmark's table)
SYNTHETIC: dict[str, Any] = {"n_values": (2, 8), "depth": 4, "noise": 0.05, "n_classes": 2}


def _synthetic_spec(text: str) -> tuple[int, int, int]:
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


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from mpc.datasets import load_csv, load_dataset, resolve_data_dir, synthetic

    if getattr(args, "synthetic", None) is not None:
        rows, attrs, seed = args.synthetic
        return synthetic(rows, n_attributes=attrs, seed=seed, **SYNTHETIC), None

    if args.csv is not None:
        if not args.class_column:
            raise ConfigError("--csv needs --class COLUMN naming the class column")
        return load_csv(args.csv, args.class_column, **_kind_options(args)), None
    if args.class_column:
        raise ConfigError("--class goes with --csv; a named dataset knows its class column")
    for flag in ("nominal", "continuous", "delimiter"):
        if getattr(args, flag, None) is not None:
            raise ConfigError(f"--{flag} goes with --csv; a named dataset has its schema")
    return load_dataset(args.dataset or "weather", resolve_data_dir(args.data_dir))


def _csv_text(
    ids: Sequence[str], table: Any, *, id_column: str, with_class: bool, order: np.ndarray
) -> str:
    """One site's CSV file: the id column, its attributes (continuous values as numbers, a
    missing one as ``?``) and, if ``with_class``, the class; rows in ``order``."""
    from mpc.datasets import CONTINUOUS, MISSING

    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow([id_column, *table.attributes, *([table.class_name] if with_class else [])])
    cols = []
    for kind, col in zip(table.kinds, table.columns, strict=True):
        if kind == CONTINUOUS:
            cols.append([MISSING if math.isnan(x) else repr(float(x)) for x in col])
        else:
            cols.append([str(v) for v in col])
    if with_class:
        cols.append([str(v) for v in table.target])
    for r in order:
        out.writerow([ids[r], *(c[r] for c in cols)])
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
            _csv_text(
                ids,
                table.select(list(attrs)),
                id_column=id_column,
                with_class=i == part.class_site,
                order=order,
            )
        )
    return texts


def ppid3_plan(args: argparse.Namespace) -> Any:
    from mpc.datasets import Discretizer, kinds_warning, partition
    from mpc.learners.evaluation import train_test_split
    from mpc.learners.id3 import ID3Classifier
    from parties.plan import Plan

    k = site_count(args)
    class_site = class_site_index(args.class_site, k)
    if args.bins < 2:
        raise ConfigError(f"--bins must be at least 2, got {args.bins}")
    if args.max_depth is not None and args.max_depth < 1:
        raise ConfigError(f"--max-depth must be at least 1, got {args.max_depth}")
    if getattr(args, "command", "run") == "deploy" and not getattr(args, "split_demo", False):
        return _public_plan(args)
    train, test = _load(args)
    if args.all_rows and test is not None:
        train, test = train.concat(test), None
    if args.test_split is not None:
        tr_idx, te_idx = train_test_split(train.target, args.test_split, seed=args.seed)
        train, test = train.subset(tr_idx), train.subset(te_idx)
    elif args.test is not None:
        from mpc.datasets import DataError, load_csv

        test = load_csv(args.test, train.class_name, **_kind_options(args))
        if test.attributes != train.attributes:
            raise DataError(
                f"the test file's columns {list(test.attributes)} are not the training "
                f"columns {list(train.attributes)} (same names, same order)",
                file=args.test,
                line=1,
            )
    warning = kinds_warning(train)
    if warning and not getattr(args, "quiet", False):
        print(f"[mpc] {warning}", file=sys.stderr)
    discretizer = Discretizer.fit(train, args.bins) if "continuous" in train.kinds else None
    binned = discretizer.transform(train) if discretizer else train
    if k > len(train.attributes):
        raise ConfigError(f"--sites {k}: {train.name} has only {len(train.attributes)} attributes")
    if isinstance(args.min_samples_split, float):  # a fraction of the training rows
        args.min_samples_split = max(1, math.ceil(args.min_samples_split * train.n_rows))
    part = partition(train.attributes, k, args.partition, class_site=class_site)
    names = [f"site{i + 1}" for i in range(part.k)]
    texts = site_files(train, part, seed=args.seed)
    test_texts = site_files(test, part, seed=args.seed + 1, prefix="t") if test else None
    model_dir = getattr(args, "model_out", None)
    specs = []
    for i, name in enumerate(names):
        entries: dict[str, Any] = {"id": ID_COLUMN, **_kind_entries(train, part.sites[i])}
        if model_dir is not None:
            entries["model_out"] = str(Path(model_dir).resolve() / f"{name}.model.json")
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
    if model_dir is not None:
        from mpc.runtime.files import private_dir

        private_dir(model_dir)
    outside = _outside(args, part.k)
    if outside is not None:
        specs.append(PartySpec(outside, outside))
    started = time.perf_counter()
    site_of = {a: i for i, s in enumerate(part.sites) for a in s}
    plain = ID3Classifier(max_depth=args.max_depth, min_samples_split=args.min_samples_split)
    plain.fit(binned, attribute_order=list(part.attributes), sites=site_of)
    plain_s = time.perf_counter() - started
    params = _params(args, names, part, train.class_name)
    context = {
        "dataset": train.name,
        "train": binned,
        "test": discretizer.transform(test) if discretizer and test else test,
        "partition": part,
        "names": names,
        "plain": plain,
        "plain_s": plain_s,
        "discretizer": discretizer.to_dict() if discretizer else None,
        "kinds": dict(zip(train.attributes, train.kinds, strict=True)),
    }
    return Plan(specs, params, context)


def _outside(args: argparse.Namespace, k: int) -> str | None:
    """The outside party the run's helper adds (the dealer), if any."""
    helper = _helper(args, k)
    return None if helper is None else HELPERS[helper].outside


def _params(args: argparse.Namespace, names: list[str], part: Any, class_name: str) -> dict:
    params = {
        "class_site": names[part.class_site],
        "class": class_name,
        "attribute_counts": [len(s) for s in part.sites],
        "max_depth": args.max_depth or 0,
        "min_samples_split": args.min_samples_split or 0,
        "counts": args.counts,
        "sites": names,
        "bins": args.bins,
    }
    helper = _helper(args, part.k)
    if helper is not None:
        params["helper"] = helper
    return params


def _kind_options(args: argparse.Namespace) -> dict[str, Any]:
    nominal = _columns_option(getattr(args, "nominal", None))
    continuous = _columns_option(getattr(args, "continuous", None))
    return {
        "nominal": nominal,
        "continuous": continuous,
        "delimiter": getattr(args, "delimiter", None) or ",",
    }


def _columns_option(text: str | None) -> list[str] | None:
    return None if text is None else [c.strip() for c in text.split(",") if c.strip()]


def _kind_entries(table: Any, attrs: Sequence[str]) -> dict[str, Any]:
    """A site's column kinds for its deployment entry: its numeric columns read as categories
    stay so in its own file (``nominal``), the rest are inferred as they were here."""
    from mpc.datasets import CONTINUOUS

    kinds = dict(zip(table.attributes, table.kinds, strict=True))
    return {
        "nominal": [a for a in attrs if kinds[a] != CONTINUOUS],
        "continuous": [a for a in attrs if kinds[a] == CONTINUOUS],
    }


def _public_plan(args: argparse.Namespace) -> Any:
    """``mpc deploy ppid3`` without a demo table: only public things, from the options."""
    from mpc.datasets import partition
    from parties.plan import Plan

    for flag in ("dataset", "csv", "test", "test_split"):
        if getattr(args, flag, None) is not None:
            raise ConfigError(
                f"mpc deploy reads no data: --{flag.replace('_', '-')} goes with `mpc run`, or "
                "with --split-demo to split a demo table into one file per party"
            )
    if not args.class_column or ";" not in args.partition:
        raise ConfigError(
            "mpc deploy ppid3 writes only public things: give the sites' attributes with "
            "--partition 'a,b;c;d' (sites in order, ';' between sites) and the class column "
            "with --class COLUMN; or --split-demo DATASET to split a demo table"
        )
    attrs = [a.strip() for s in args.partition.split(";") for a in s.split(",") if a.strip()]
    k = site_count(args)
    part = partition(attrs, k, args.partition, class_site=class_site_index(args.class_site, k))
    names = [f"site{i + 1}" for i in range(part.k)]
    specs = [
        PartySpec(n, "site", columns=tuple(part.sites[i]), entries={"id": ID_COLUMN})
        for i, n in enumerate(names)
    ]
    outside = _outside(args, part.k)
    if outside is not None:
        specs.append(PartySpec(outside, outside))
    return Plan(specs, _params(args, names, part, args.class_column), {"public_only": True})


# --------------------------------------------------------------------------- one site


def _bin_columns(
    name: str, table: Any, bins: int | None, edges: dict[str, list[float]] | None
) -> tuple[Any, dict[str, list[float]]]:
    """This site's continuous columns binned: on its own training rows (``bins``) or with the
    cut points its saved model holds (``edges``); returns the nominal table and the edges."""
    from mpc.datasets import Discretizer

    if "continuous" not in table.kinds:
        return table, {}
    if edges is None:
        assert bins is not None
        disc = Discretizer.fit(table, bins)
    else:
        disc = Discretizer(bins or 2, {a: tuple(e) for a, e in edges.items()})
    return disc.transform(table), {a: list(e) for a, e in disc.edges.items()}


def _columns_doc(table: Any, edges: dict[str, list[float]]) -> list[dict[str, Any]]:
    return [
        {"name": a, "kind": k, **({"bins": edges[a]} if a in edges else {})}
        for a, k in zip(table.attributes, table.kinds, strict=True)
    ]


async def _align(site: Party, own: Any, tag: str) -> Any:
    """Record alignment among the sites; returns this site's table in the common order."""
    from protocols.primitives.record_alignment import align_records

    alignment = await align_records(site, [str(i) for i in own.ids], tag=tag)
    return own.table.subset(alignment.order), own.ids[alignment.order]


def _as_view(name: str, table: Any) -> Any:
    from protocols.ppid3.distribution_counts import SiteView

    target = [str(v) for v in table.target] if table.class_name else None
    return SiteView.encode(
        name, list(table.attributes), [[str(v) for v in c] for c in table.columns],
        list(range(table.n_rows)), target,
    )  # fmt: skip


def _deployed_helper(
    cfg: DeploymentConfig, parties: Sequence[str], sites: Sequence[str]
) -> str | None:
    """The deployment's ``helper`` for ``counts = "fast"`` (None otherwise), checked against
    its parties. A file without one (written before the option existed) means the dealer."""
    if cfg.params.get("counts") != "fast":
        return None
    helper = cfg.params.get("helper", "dealer")
    if helper not in HELPERS:
        raise ConfigError(
            f"{cfg.path}: protocol params 'helper': expected one of {list(HELPERS)}, got {helper!r}"
        )
    outside = HELPERS[helper].outside
    if outside is not None and outside not in parties:
        raise ConfigError(f'{cfg.path}: helper = "{helper}" but no party is named {outside!r}')
    if outside is None and DEALER in parties:
        raise ConfigError(
            f'{cfg.path}: helper = "{helper}" (no dealer: the sites make the randomness) but '
            f'the deployment has a {DEALER!r} party; remove it, or set helper = "dealer"'
        )
    if len(sites) < HELPERS[helper].min_sites:
        raise ConfigError(f"{cfg.path}: helper = \"{helper}\" needs at least "
                          f"{HELPERS[helper].min_sites} sites, got {len(sites)}; "
                          "set helper = \"dealer\"")  # fmt: skip
    return str(helper)


async def ppid3_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from protocols.ppid3.fast_counts import Sites
    from protocols.ppid3.levels import ring_dtype

    sites = [str(n) for n in cfg.params.get("sites") or party.parties]
    class_site = str(cfg.params["class_site"])
    helper = _deployed_helper(cfg, party.parties, sites)
    if me.role == DEALER:
        started = time.perf_counter()
        rows = await party.recv(class_site, "ppid3/rows", ROWS)
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise ProtocolError(f"{class_site} sent a malformed row count at ppid3/rows")
        if rows == 0:  # the sites classify with saved models: nothing to deal
            return {"dealt": 0, "seconds": 0.0}
        dealt = await HELPERS[helper or "dealer"].serve(party, sites, dtype=ring_dtype(rows))
        return {"dealt": dealt, "seconds": round(time.perf_counter() - started, 3)}
    site = Sites(party, sites).as_party()
    mode = "classify" if me.model is not None or cfg.protocol == "ppid3-classify" else "train"
    await site.broadcast("ppid3/mode", mode)
    for peer in site.peers:
        theirs = await site.recv(peer, "ppid3/mode", MODE)
        if theirs != mode:
            raise ConfigError(
                f"{party.name} was started to {mode}, {peer} to {theirs}; start every site "
                "with --model FILE to classify, or every site without it to train"
            )
    dealer_present = DEALER in party.parties
    if mode == "classify":
        if dealer_present and party.name == class_site:
            await party.send(DEALER, "ppid3/rows", 0)
        return await _classify_run(site, cfg, me, class_site)
    return await _train_run(party, site, cfg, me, class_site, helper)


async def _train_run(
    party: Party,
    site: Party,
    cfg: DeploymentConfig,
    me: PartyConfig,
    class_site: str,
    helper: str | None,
) -> dict[str, Any]:
    """Train (``helper``: who deals for ``--counts fast``; None for set intersections)."""
    from parties.own_data import read_own_table
    from protocols.ppid3.classify_instance import classify_instances, tree_depth
    from protocols.ppid3.distribution_counts import PSICountOracle
    from protocols.ppid3.levels import ppid3_levels
    from protocols.ppid3.ppid3 import ppid3

    is_class = party.name == class_site
    class_column = str(cfg.params.get("class", "")) or None
    if is_class and class_column is None:
        raise ConfigError("the deployment's ppid3 params need 'class' (the class column)")
    counts = [int(c) for c in cfg.params["attribute_counts"]]
    max_depth = int(cfg.params.get("max_depth", 0)) or None
    mss = int(cfg.params.get("min_samples_split", 0)) or None
    bins = int(cfg.params.get("bins", 4))
    own, warning = read_own_table(me, class_column=class_column if is_class else None)
    if warning:
        log.warning("%s: %s", party.name, warning)
    table, _ = await _align(site, own, "record-alignment")
    table, edges = _bin_columns(party.name, table, bins, None)
    fast = helper is not None
    outside = None if helper is None else HELPERS[helper].outside
    if outside is not None and is_class:
        await party.send(outside, "ppid3/rows", table.n_rows)
    view = _as_view(party.name, table)
    attrs = list(view.attributes)
    started = time.perf_counter()
    shown = [started]

    def progress(msg: str) -> None:
        # relayed to the launching terminal by the launcher (PROGRESS lines of the log),
        # at most every two seconds
        if time.perf_counter() - shown[0] < 2.0:
            return
        shown[0] = time.perf_counter()
        log.info(
            "PROGRESS %s, %.1f s, %.1f MB sent",
            msg, time.perf_counter() - started, party.metrics.to_dict()["bytes_sent"] / 1e6,
        )  # fmt: skip

    shown_progress = progress if is_class else None
    if fast:  # every node of a level per exchange, on additive shares
        tree, fast_cost = await ppid3_levels(
            site, view, class_site=class_site, attribute_counts=counts,
            helper=helper or "dealer", max_depth=max_depth, min_samples_split=mss,
            progress=shown_progress,
        )  # fmt: skip
    else:  # the paper's depth-first Algorithm 7 with set-intersection counts
        oracle = PSICountOracle()
        tree = await ppid3(
            site, view, oracle, class_site=class_site, attribute_counts=counts,
            max_depth=max_depth, min_samples_split=mss, progress=shown_progress,
        )  # fmt: skip
    train_s = time.perf_counter() - started
    depth = tree_depth(tree.structure)
    out: dict[str, Any] = {
        "tree": tree.to_dict(),
        "train_s": round(train_s, 3),
        "columns": _columns_doc(own.table, edges),
        "rows": table.n_rows,
    }
    if is_class:  # from the leaves' class counts: no record is classified again
        out["train_accuracy"] = leaf_accuracy(tree, table.n_rows)
    if me.test is not None:
        test_own, _ = read_own_table(
            dataclasses.replace(me, data=me.test), class_column=class_column if is_class else None
        )
        ttable, tids_text = await _align(site, test_own, "record-alignment/test")
        ttable, _ = _bin_columns(party.name, ttable, None, edges)
        tcols: dict[str, Sequence[str]] = {
            a: [str(v) for v in c] for a, c in zip(attrs, ttable.columns, strict=True)
        }
        ttids = list(range(ttable.n_rows))
        pred = await classify_instances(
            site, tree, tcols, ttids, class_site=class_site, depth=depth, tag="classify/test"
        )
        if pred is not None:
            out["test_accuracy"] = _accuracy(pred, ttids, [str(v) for v in ttable.target])
            out["test_predictions"] = dict(sorted((str(tids_text[t]), pred[t]) for t in ttids))
    body = {
        "sites": list(site.parties),
        "class_site": class_site,
        "class": class_column if is_class else None,
        "id_column": me.id_column,
        "attributes": attrs,
        "columns": _columns_doc(own.table, edges),
        "tree": tree.to_dict(),
        "depth": depth,
    }
    model_id, parts, opening = await _bind_parts(site, body)
    if me.model_out is not None:
        from mpc.learners.model_file import SavedModel, write_model

        write_model(me.model_out, SavedModel("ppid3", party.name, model_id, body, parts, opening))
        out["model"] = {"file": str(me.model_out), "model_id": model_id}
    log.info(
        "%s: trained on %d aligned records in %.2f s: %d nodes, depth %d, %d of them mine%s%s",
        party.name, table.n_rows, train_s, len(tree.structure), depth,
        len(tree.interior) + len(tree.leaves),
        f"; training accuracy {out['train_accuracy']:.4f}" if "train_accuracy" in out else "",
        f"; model part saved to {me.model_out}" if me.model_out is not None else "",
    )  # fmt: skip
    if fast:
        out["cost"] = {
            "intersections": 0,
            "psi_invocations": 0,
            "outer_batches": fast_cost["outer_batches"],
            "dot_batches": fast_cost["dot_batches"],
            "levels": fast_cost["levels"],
        }
        if "dealt" in fast_cost:  # the products this site dealt for pairs of other sites
            out["cost"]["dealt"] = fast_cost["dealt"]
    else:
        out["cost"] = {"intersections": oracle.intersections,
                       "psi_invocations": oracle.invocations}  # fmt: skip
    return out


async def _bind_parts(site: Party, body: dict[str, Any]) -> tuple[str, dict[str, str], str]:
    """One model id for the run (drawn by the first site) and every site's commitment to its
    part (:func:`mpc.learners.model_file.commit_part`): what binds the parts of one tree
    together. Returns the id, the commitments and this site's opening (kept in its own file,
    never sent). A commitment is hiding: no site can test a guess of another's part against
    it, as it could against a bare hash of a body whose only unpredictable parts (node ids)
    it knows."""
    from mpc.learners.model_file import commit_part, new_model_id

    first = site.parties[0]
    if site.name == first:
        model_id = new_model_id()
        await site.broadcast("ppid3/model-id", model_id)
    else:
        model_id = await site.recv(first, "ppid3/model-id", MODEL_ID)
        if not isinstance(model_id, str) or len(model_id) != 32:
            raise ProtocolError(f"{first} sent a malformed model id")
    made = commit_part(body)
    await site.broadcast("ppid3/part-commitment", made.commitment)
    parts = {site.name: made.commitment}
    for peer in site.peers:
        got = await site.recv(peer, "ppid3/part-commitment", PART_COMMITMENT)
        if not isinstance(got, str) or len(got) != 64:
            raise ProtocolError(f"{peer} sent a malformed part commitment")
        parts[peer] = got
    return model_id, dict(sorted(parts.items())), made.opening


async def _classify_run(
    site: Party, cfg: DeploymentConfig, me: PartyConfig, class_site: str
) -> dict[str, Any]:
    """Algorithm 8 on new, unlabelled records with this site's saved model part."""
    from mpc.datasets import CONTINUOUS
    from mpc.errors import InputError
    from mpc.learners.model_file import ModelError, read_model
    from parties.own_data import read_own_table, write_predictions
    from protocols.ppid3.classify_instance import classify_instances
    from protocols.ppid3.ppid3 import DistributedTree

    if me.model is None:
        raise ConfigError(f"{site.name}: classifying needs this site's model part (--model FILE)")
    try:
        model = read_model(me.model, "ppid3")
        if model.party != site.name:
            raise ModelError(
                f"model file {me.model} is {model.party!r}'s part, not {site.name!r}'s"
            )
    except ModelError as exc:
        raise InputError(f"{site.name}: {exc}", public=f"{site.name}: its model file is "
                         "not a valid part of a saved tree") from None  # fmt: skip
    body = model.body
    if list(body["sites"]) != list(site.parties) or body["class_site"] != class_site:
        raise ConfigError(
            f"{site.name}: the model was trained by sites {body['sites']} with class site "
            f"{body['class_site']}; this deployment has {list(site.parties)}, {class_site}"
        )
    await site.broadcast("ppid3/model", [model.model_id, model.parts])
    for peer in site.peers:
        got = await site.recv(peer, "ppid3/model", MODEL_CHECK)
        if got != [model.model_id, model.parts]:
            raise ConfigError(
                f"{site.name}: {peer}'s model part is from another training run (or was "
                "changed since); every site must use its part of the same saved tree"
            )
    columns_doc = body["columns"]
    cont = [c["name"] for c in columns_doc if c["kind"] == CONTINUOUS]
    me = dataclasses.replace(
        me, nominal=tuple(c["name"] for c in columns_doc if c["kind"] != CONTINUOUS),
        continuous=tuple(cont),
        id_column=me.id_column or body.get("id_column"),
        columns=tuple(body["attributes"]),
    )  # fmt: skip
    own, _ = read_own_table(me, class_column=None)
    table, ids = await _align(site, own, "record-alignment")
    edges = {c["name"]: c["bins"] for c in columns_doc if "bins" in c}
    table, _ = _bin_columns(site.name, table, None, edges)
    tree = DistributedTree.from_dict(body["tree"])
    cols: dict[str, Sequence[str]] = {
        a: [str(v) for v in c] for a, c in zip(table.attributes, table.columns, strict=True)
    }
    tids = list(range(table.n_rows))
    started = time.perf_counter()
    pred = await classify_instances(
        site, tree, cols, tids, class_site=class_site, depth=int(body["depth"]), tag="classify"
    )
    deliver_to = str(cfg.params.get("deliver_to") or class_site)
    if deliver_to not in site.parties:
        raise ConfigError(f"deliver_to {deliver_to!r} is not one of the sites {site.parties}")
    if site.name == class_site and deliver_to != class_site:
        assert pred is not None
        await site.send(deliver_to, "ppid3/predictions", [pred[t] for t in tids])
    log.info(
        "%s: classified %d records with model %s (Algorithm 8)",
        site.name, len(tids), model.model_id[:12],
    )  # fmt: skip
    out: dict[str, Any] = {"classified": len(tids), "model_id": model.model_id,
                           "classify_s": round(time.perf_counter() - started, 3)}  # fmt: skip
    if site.name == deliver_to:
        labels = (
            [pred[t] for t in tids] if pred is not None
            else await site.recv(class_site, "ppid3/predictions", PREDICTIONS)
        )  # fmt: skip
        if not isinstance(labels, list) or len(labels) != len(tids):
            raise ProtocolError(f"{class_site} sent malformed predictions")
        site.ledger.record("ppid3/predictions", len(labels), step="ppid3/predictions")
        path = me.predictions or Path("predictions.csv")
        by_id = {str(i): str(c) for i, c in zip(ids, labels, strict=True)}
        file_order = [str(i) for i in own.ids]
        write_predictions(path, file_order, [by_id[i] for i in file_order],
                          id_column=me.id_column)  # fmt: skip
        out["predictions_file"] = str(path)
        log.info("%s: %d predictions written to %s", site.name, len(labels), path)
        out["predictions"] = [[i, by_id[i]] for i in file_order]
    return out


def leaf_accuracy(tree: Any, n_rows: int) -> float:
    """The training accuracy of a tree from its leaves' class counts (the class site's
    part): every training record reaches a leaf, and it is classified correctly exactly when
    its class is the leaf's label."""
    if n_rows == 0:
        return float("nan")
    right = sum(int(leaf["counts"].get(leaf["class"], 0)) for leaf in tree.leaves.values())
    return right / n_rows


def _accuracy(pred: dict[int, str], ids: list[int], target: list[str]) -> float:
    if not ids:
        return float("nan")
    return sum(pred[int(i)] == y for i, y in zip(ids, target, strict=True)) / len(ids)


def ppid3_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
    from mpc.learners.evaluation import accuracy
    from mpc.learners.tree import to_json
    from protocols.ppid3.ppid3 import assemble, check_tree_equal

    ctx = plan.context
    names: list[str] = ctx["names"]
    results = {n: reports[n].get("result") or {} for n in names}
    missing = [n for n in names if "tree" not in results[n]]
    if missing:
        raise ProtocolError(f"no tree in the reports of {missing}")
    view = assemble({n: results[n]["tree"] for n in names}, {n: i for i, n in enumerate(names)})
    plain = ctx["plain"]
    plain_json = to_json(plain.tree_)
    cls = results[str(plan.params["class_site"])]
    part = ctx["partition"]
    train, test = ctx["train"], ctx["test"]
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
    structure = results[names[0]]["tree"]["structure"]
    q = len(structure)
    c = len(plain.classes_)
    r = len(train.attributes)
    p = float(np.mean([len(d) for d in plain.domains_]))
    metrics = {n: reports[n].get("metrics") or {} for n in names}
    fast = plan.params.get("counts") == "fast"
    helper = str(plan.params.get("helper", "dealer")) if fast else None
    cost = {
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
    from mpc.learners.tree import depth as tree_depth_of
    from mpc.learners.tree import from_json, node_count

    assembled = from_json(view)
    return {
        "dataset": ctx["dataset"],
        "counts": plan.params.get("counts", "psi"),
        "helper": helper,
        "trust": TRUST[helper or "none"],
        "rows": {"train": train.n_rows, "test": test.n_rows if test is not None else 0},
        "partition": {**part.to_dict(), "site_names": names},
        "discretizer": ctx["discretizer"],
        "columns": {n: results[n].get("columns", []) for n in names},
        "models": {n: results[n]["model"] for n in names if "model" in results[n]},
        "identical": check_tree_equal(view, plain_json),
        "nodes": node_count(assembled),
        "depth": tree_depth_of(assembled),
        "accuracy": acc,
        "plain_accuracy": plain_acc,
        "plain_fit_s": round(ctx["plain_s"], 4),
        "cost": cost,
        "tree": view,
        "plain_tree": plain_json,
    }


#: the assumption a run makes, by who dealt the correlated randomness (``none``: --counts psi)
TRUST = {"none": "semi-honest sites", **{name: h.trust for name, h in HELPERS.items()}}


def ppid3_summary(result: dict[str, Any]) -> list[str]:
    part = result["partition"]
    lines = [
        f"dataset:   {result['dataset']} ({result['rows']['train']} training rows"
        + (f", {result['rows']['test']} test rows)" if result["rows"]["test"] else ")"),
        "partition: "
        + "; ".join(
            f"{n}{' (class)' if i == part['class_site'] else ''}: {', '.join(s)}"
            for i, (n, s) in enumerate(zip(part["site_names"], part["sites"], strict=True))
        ),
        *_columns_lines(result),
        f"tree:      {result['nodes']} nodes, depth {result['depth']} "
        "(assembled from every site's own nodes for this audit; no site holds it)",
        f"identical: {result['identical']}  (PPID3 tree == plain ID3 on the joined data)",
        "accuracy:  "
        + ", ".join(
            f"{k} {v:.4f} (plain {result['plain_accuracy'][k]:.4f})"
            for k, v in result["accuracy"].items()
            if isinstance(v, float)
        ),
        _cost_line(result),
        f"trust:     {result.get('trust', 'semi-honest sites')}"
        + (f" (--helper {result['helper']})" if result.get("helper") else ""),
        "",
    ]
    lines += render_distributed(result["tree"], part["site_names"], part["class_site"])
    return lines


def _columns_lines(result: dict[str, Any]) -> list[str]:
    """Each site's columns as it read them: kind, and the cut points of a binned one."""
    lines = []
    for name, cols in result.get("columns", {}).items():
        described = [
            f"{c['name']} ({c['kind']}"
            + (f", bins at {', '.join(_short_number(x) for x in c['bins'])})" if c.get("bins")
               else ")")
            for c in cols
        ]  # fmt: skip
        lines.append(f"columns:   {name}: " + "; ".join(described))
    models = result.get("models") or {}
    if models:
        first = next(iter(models.values()))
        lines.append(
            f"models:    {', '.join(m['file'] for m in models.values())} "
            f"(model id {first['model_id'][:12]}...)"
        )
    return lines


def _short_number(x: float) -> str:
    return np.format_float_positional(float(x), precision=6, trim="-")


def _cost_line(result: dict[str, Any]) -> str:
    cost = result["cost"]
    if result.get("counts") == "fast":
        dealt = f" ({HELPERS[str(result['helper'])].describe(cost)})"
        return (
            f"cost:      counts by secret sharing, level by level: {cost['levels']} levels, "
            f"{cost['outer_batches']} outer-product and {cost['dot_batches']} dot-product "
            f"batches over {result['nodes']} nodes{dealt}, no set intersection"
        )
    return (
        f"cost:      {cost['set_intersections']} set intersections "
        f"(paper's estimate c*q*(1+p*r) = {cost['paper_estimate_c_q_1_plus_p_r']}) "
        f"in {cost['psi_invocations']} batched PSI-CA invocations"
    )


def render_distributed(tree: dict[str, Any], names: list[str], class_site: int) -> list[str]:
    """The tree in the style of the paper's Figure 2: every node with the site that holds it
    (interior nodes at the attribute's site, leaves at the class site)."""
    out: list[str] = []

    def visit(node: dict[str, Any], prefix: str, head: str) -> None:
        if "children" not in node:
            counts = ", ".join(f"{c} {n}" for c, n in node["counts"].items())
            out.append(f"{prefix}{head}[{names[class_site]}] class {node['class']} ({counts})")
            return
        out.append(f"{prefix}{head}[{names[node['site']]}] {node['attribute']}")
        for value, child in node["children"].items():
            visit(child, prefix + "    ", f"= {value}: ")

    visit(tree, "", "")
    return out


# --------------------------------------------------------------------------- ppid3-classify


def classify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        required=True,
        metavar="DIR",
        help="the folder of saved model parts (SITE.model.json) written by "
        "`mpc run ppid3 --model-out DIR`",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--csv",
        metavar="FILE",
        help="new records, one table with every site's columns (no class needed): split into "
        "one file per site as the model's parts list them (a local demo)",
    )
    src.add_argument(
        "--data",
        metavar="FILE1,FILE2,...",
        help="one file per site, in site order, each with the id column and that site's "
        "columns only: what organisations hold (each site's process reads its own)",
    )
    p.add_argument(
        "--id",
        dest="id_column",
        default=None,
        metavar="COLUMN",
        help="the record id column (default with --csv: rows are numbered; with --data: the "
        "id column the model was trained with)",
    )
    p.add_argument("--delimiter", metavar="C", default=None, help="the CSVs' delimiter (',')")
    p.add_argument(
        "--deliver-to",
        default=None,
        metavar="SITE",
        help="the site that receives the predictions (default: the class site)",
    )
    p.add_argument(
        "--predictions-out",
        default="predictions.csv",
        metavar="FILE",
        help="where the receiving site writes id,class (default: predictions.csv)",
    )


def _model_parts(folder: Path) -> dict[str, Any]:
    from mpc.learners.model_file import read_model

    files = sorted(folder.glob("*.model.json")) if folder.is_dir() else []
    if not files:
        raise ConfigError(f"--model {folder}: no SITE.model.json files there")
    parts = {}
    for f in files:
        m = read_model(f, "ppid3")
        parts[str(m.party)] = m
    sites = list(next(iter(parts.values())).body["sites"])
    if sorted(parts) != sorted(sites):
        raise ConfigError(f"--model {folder}: parts of {sorted(parts)}, the model has {sites}")
    return {s: parts[s] for s in sites}


def classify_plan(args: argparse.Namespace) -> Any:
    from mpc.datasets import CONTINUOUS, load_party_csv
    from parties.plan import Plan

    parts = _model_parts(Path(args.model))
    sites = list(parts)
    first = parts[sites[0]].body
    class_site = str(first["class_site"])
    deliver_to = args.deliver_to or class_site
    if deliver_to not in sites:
        raise ConfigError(f"--deliver-to {deliver_to}: not one of the sites {sites}")
    out = Path(args.predictions_out).resolve()
    specs: list[PartySpec] = []
    context: dict[str, Any] = {"model": args.model}
    delimiter = args.delimiter or ","
    if args.csv is not None:
        kinds = {c["name"]: c["kind"] for m in parts.values() for c in m.body["columns"]}
        joined = load_party_csv(
            args.csv, id_column=args.id_column, class_column=None,
            nominal=[a for a, k in kinds.items() if k != CONTINUOUS],
            continuous=[a for a, k in kinds.items() if k == CONTINUOUS],
            delimiter=delimiter,
            columns=None,
        )  # fmt: skip
        missing = [a for a in kinds if a not in joined.table.attributes]
        if missing:
            raise ConfigError(f"--csv {args.csv}: no column for the model's attributes {missing}")
        ids = [str(i) for i in joined.ids]
        id_column = args.id_column or ID_COLUMN
        for i, name in enumerate(sites):
            attrs = parts[name].body["attributes"]
            order = np.random.default_rng([0, i]).permutation(len(ids))
            text = _csv_text(
                ids, joined.table.select(attrs), id_column=id_column, with_class=False,
                order=order,
            )  # fmt: skip
            entries = _classify_entries(parts[name], id_column, name == deliver_to, out)
            specs.append(PartySpec(name, "site", columns=tuple(attrs), csv=text, entries=entries))
        context["joined"] = joined
    else:
        files = [f.strip() for f in args.data.split(",")]
        if len(files) != len(sites):
            raise ConfigError(f"--data needs one file per site ({len(sites)}), got {len(files)}")
        for name, f in zip(sites, files, strict=True):
            id_column = args.id_column or parts[name].body.get("id_column") or ID_COLUMN
            entries = {
                "data": str(Path(f).resolve()),
                **_classify_entries(parts[name], id_column, name == deliver_to, out),
            }
            if delimiter != ",":
                entries["delimiter"] = delimiter
            specs.append(
                PartySpec(
                    name, "site", columns=tuple(parts[name].body["attributes"]), entries=entries
                )
            )
    params = {"class_site": class_site, "sites": sites, "deliver_to": deliver_to}
    context["parts"] = {n: m.body for n, m in parts.items()}
    return Plan(specs, params, context)


def _classify_entries(model: Any, id_column: str, receives: bool, out: Path) -> dict[str, Any]:
    assert model.path is not None
    entries: dict[str, Any] = {"id": id_column, "model": str(Path(model.path).resolve())}
    if receives:
        entries["predictions"] = str(out)
    return entries


def classify_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
    from mpc.learners.tree import from_json, predict_one
    from protocols.ppid3.ppid3 import assemble

    ctx = plan.context
    sites = list(plan.params["sites"])
    results = {n: reports[n].get("result") or {} for n in sites}
    receiver = str(plan.params["deliver_to"])
    got = results[receiver]
    if "predictions" not in got:
        raise ProtocolError(f"{receiver} reported no predictions")
    out: dict[str, Any] = {
        "model": ctx["model"],
        "model_id": got.get("model_id"),
        "records": got.get("classified"),
        "receiver": receiver,
        "predictions_file": got.get("predictions_file"),
        "classify_s": max(float(r.get("classify_s") or 0) for r in results.values()),
        "predictions": got["predictions"],
    }
    joined = ctx.get("joined")
    if joined is not None:  # the audit: the assembled tree, in plain, on the joined rows
        from mpc.datasets import Discretizer

        trees = {n: ctx["parts"][n]["tree"] for n in sites}
        tree = from_json(assemble(trees, {n: i for i, n in enumerate(sites)}))
        edges = {c["name"]: tuple(c["bins"]) for b in ctx["parts"].values()
                 for c in b["columns"] if "bins" in c}  # fmt: skip
        table = Discretizer(2, edges).transform(joined.table) if edges else joined.table
        names = table.attributes
        rows = [dict(zip(names, r, strict=True)) for r in zip(*table.columns, strict=True)]
        plain = {str(i): predict_one(tree, row) for i, row in zip(joined.ids, rows, strict=True)}
        out["equal_to_plain_tree"] = all(plain[i] == c for i, c in got["predictions"])
    return out


def classify_summary(result: dict[str, Any]) -> list[str]:
    from collections import Counter

    counts = Counter(c for _, c in result["predictions"])
    lines = [
        f"model:       {result['model']} (model id {str(result['model_id'])[:12]}...)",
        f"records:     {result['records']} classified by Algorithm 8 in "
        f"{result['classify_s']:.3f} s",
        f"predictions: {result['predictions_file']} (written by {result['receiver']}; "
        + ", ".join(f"{c} {n}" for c, n in sorted(counts.items()))
        + ")",
    ]
    if "equal_to_plain_tree" in result:
        lines.append(
            f"identical:   {result['equal_to_plain_tree']}  (== the saved tree, assembled for "
            "this audit, applied in plain to the joined records)"
        )
    return lines
