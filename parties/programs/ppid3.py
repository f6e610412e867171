"""The party program of ``ppid3`` and ``ppid3-classify``: one PPID3 site (Vaidya & Clifton,
Algorithms 2-8), or the dealer of ``--helper dealer``.

Each site process reads its own CSV file (a record id column, its attributes, the class at the
class site; ``--data``/``--id`` or its deployment entry), aligns its records with the other
sites (:mod:`protocols.primitives.record_alignment`), bins its own continuous columns
(equal-frequency bins on its own training rows), trains the distributed tree with the other
sites, classifies held-out test instances with Algorithm 8 and, with ``--model-out``, saves its
part of the tree (:mod:`mpc.learners.model_file`); started with ``--model`` it classifies new
records instead. ``counts = "psi"`` trains depth first with set-intersection counts
(:mod:`protocols.ppid3.ppid3`); ``counts = "fast"`` trains a level per exchange on additive
shares (:mod:`protocols.ppid3.levels`), the correlated randomness made as the deployment's
``helper`` says (:data:`protocols.engine.preprocessing.PREPROCESSING`).

The training accuracy needs no exchange: the class site holds every leaf's class counts, and
a training record is classified correctly exactly when its class is its leaf's label. (Running
Algorithm 8 on the training records would hand the class site every other site's branch of
every training record, which Theorem 1 does not allow.)
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc.datasets import CONTINUOUS, csv_header
from mpc.errors import ConfigError, InputError, ProtocolError
from mpc.learners.criteria import CRITERIA
from mpc.learners.id3 import SPLITS
from mpc.learners.model_file import (
    ModelError,
    SavedModel,
    commit_part,
    new_model_id,
    read_model,
    write_model,
)
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.expect import integer, text
from mpc.runtime.party import Party
from mpc.runtime.view import declared, public, uniform
from parties.own_data import read_own_table, write_predictions
from parties.own_party import OwnParty
from parties.params import AtLeast, Params, option
from parties.programs.ppid3_outcome import (
    evaluation,
    evaluation_log,
    unseen_values,
    unseen_warning,
    write_scored_predictions,
)
from parties.programs.ppid3_table import bin_columns, columns_doc, training_view
from protocols.engine.dealing import DEALER, Sites
from protocols.engine.preprocessing import PREPROCESSING, classify_preprocessing, preprocessing_of
from protocols.engine.ring import Ring
from protocols.ppid3.classify_instance import classify_instances, tree_depth
from protocols.ppid3.distribution_counts import PSICountOracle
from protocols.ppid3.levels import REVEALS, ppid3_levels
from protocols.ppid3.oblivious_classify import classify_obliviously
from protocols.ppid3.ppid3 import DistributedTree, ppid3
from protocols.primitives.record_alignment import align_records

__all__ = [
    "COUNTS",
    "ID_COLUMN",
    "Ppid3Params",
    "check",
    "leaf_accuracy",
    "run",
]

log = logging.getLogger("mpc.ppid3")

#: the record id column of the demo files that `mpc run` and `mpc deploy --split-demo` write
ID_COLUMN = "id"
#: how the counts are computed: set-intersection cardinality, or additive shares
COUNTS = ("psi", "fast")
#: which records a run uses: every site must hold the same, or the ones every site holds
RECORDS = ("same", "common")

#: what a party receives in the system's own steps
ROWS = declared("ppid3/rows", "the number of aligned records (the dealer: its shapes)")
MODE = public("ppid3/mode", "whether the sites train or classify with saved parts")
PHASE = public(
    "ppid3/phase",
    "the class site's next phase for the outside party: 'classify' (serve the pair's "
    "requests again) or 'done'",
)
#: the tag prefix of the requests of classification without a path (the outside party serves
#: them under it, :meth:`protocols.engine.preprocessing.Preprocessing.beside`)
CLASSIFY_REQUESTS = "classify/req"
MODEL_ID = uniform("ppid3/model-id", "the fresh random id of the trained model", tokens=True)
PART_COMMITMENT = uniform(
    "ppid3/part-commitment",
    "another site's commitment to its model part (a hash with a secret opening: hiding)",
    tokens=True,
)
MODEL_CHECK = public(
    "ppid3/model-check",
    "another site's model id and recorded commitments: the same as the receiver's own part "
    "holds, to compare before classifying",
)
PREDICTIONS = declared(
    "ppid3/predictions",
    "the predicted class of every new record (the party it is delivered to)",
    records="rows",
)
SCORES = declared(
    "ppid3/scores",
    "with scores asked for: the class counts of the node that classified each new record "
    "(the party the predictions are delivered to)",
    records="rows",
)


@dataclass(frozen=True)
class Ppid3Params(Params):
    """PPID3's public parameters, as the deployment file's ``[protocol.params]`` holds them.
    ``max_depth`` and ``min_samples_split`` are absent for no limit (as in the plain
    learners, a depth of 0 would be a single leaf: the file never says 0)."""

    class_site: str = option("", key="class_site")
    sites: tuple[str, ...] = option((), key="sites")
    class_name: str = option("", key="class")
    attribute_counts: tuple[int, ...] = option((), key="attribute_counts")
    max_depth: int | None = option(None, key="max_depth", check=AtLeast(1))
    min_samples_split: int | None = option(None, key="min_samples_split", check=AtLeast(1))
    counts: str = option("psi", key="counts", choices=COUNTS)
    #: continuous columns: equal-frequency bins of a branch each (absent: 4); with
    #: ``splits = "threshold"`` the bins' cut points are the candidate thresholds (absent:
    #: every distinct value)
    bins: int | None = option(None, key="bins", check=AtLeast(2))
    #: absent: a branch per value (or bin)
    splits: str | None = option(None, key="splits", choices=SPLITS)
    helper: str | None = option(None, key="helper", choices=PREPROCESSING)
    deliver_to: str | None = option(None, key="deliver_to")
    reveal: str = option("counts", key="reveal", choices=REVEALS)
    criterion: str | None = option(None, key="criterion", choices=CRITERIA)
    records: str = option("same", key="records", choices=RECORDS)
    #: rows of a range (``reveal = "tree"`` with a dealing party): one range in memory at a
    #: time (absent: ranges of the default size where they are taken, a smaller table whole)
    row_block: int | None = option(None, key="row_block", check=AtLeast(1))
    #: numbers of more codes than this are counted by shuffles (``reveal = "tree"`` with a
    #: dealing party; absent: the default, :data:`protocols.ppid3.threshold_counts.SHUFFLE_FROM`)
    shuffle_from: int | None = option(None, key="shuffle_from", check=AtLeast(0))
    #: classification: the receiver gets each record's class counts beside its class (absent:
    #: no scores)
    scores: bool | None = option(None, key="scores")

    def check(self) -> None:
        if self.counts not in COUNTS:
            raise ConfigError(f"protocol params 'counts' must be one of {list(COUNTS)}")
        if self.reveal not in REVEALS:
            raise ConfigError(f"protocol params 'reveal' must be one of {list(REVEALS)}")
        if self.reveal == "tree" and self.counts != "fast":
            raise ConfigError('protocol params: reveal = "tree" needs counts = "fast"')
        if self.splits == "threshold" and self.counts != "fast":
            raise ConfigError(
                'protocol params: splits = "threshold" needs counts = "fast" (the depth-first '
                "set-intersection counts split a node into a branch per value)"
            )
        shared = self.criterion is None or CRITERIA[self.criterion].on_shares
        if self.reveal == "tree" and not shared:
            raise ConfigError(
                f'protocol params: reveal = "tree" computes an exact criterion on shares, '
                f"not {self.criterion!r}"
            )
        if self.helper is not None and self.helper not in PREPROCESSING:
            raise ConfigError(
                f"protocol params 'helper': expected one of {list(PREPROCESSING)}, "
                f"got {self.helper!r}"
            )
        if self.row_block is not None and (self.reveal != "tree" or self.helper == "ot"):
            raise ConfigError(
                'protocol params: row_block needs reveal = "tree" and a dealing party (helper '
                '"dealer" or "sites"): the paper\'s counts and the products by oblivious '
                "transfer take a site's rows whole"
            )
        if self.shuffle_from is not None and (self.reveal != "tree" or self.helper == "ot"):
            raise ConfigError(
                'protocol params: shuffle_from needs reveal = "tree" and a dealing party '
                '(helper "dealer" or "sites"): a shuffle has a helper'
            )
        if not all(isinstance(c, int) and c >= 0 for c in self.attribute_counts):
            raise ConfigError("protocol params 'attribute_counts' must be counts")

    @property
    def fast(self) -> bool:
        return self.counts == "fast"

    def helper_in(self, cfg: DeploymentConfig, parties: Sequence[str]) -> str | None:
        """The helper of ``counts = "fast"`` (None otherwise), checked against the deployment's
        parties. A file without one (written before the option existed) means the dealer."""
        if not self.fast:
            return None
        helper = self.helper or "dealer"
        how = PREPROCESSING[helper]
        if how.outside is not None and how.outside not in parties:
            raise ConfigError(
                f'{cfg.path}: helper = "{helper}" but no party is named {how.outside!r}'
            )
        if how.outside is None and DEALER in parties:
            raise ConfigError(
                f'{cfg.path}: helper = "{helper}" (no dealer: the sites make the randomness) '
                f'but the deployment has a {DEALER!r} party; remove it, or set helper = "dealer"'
            )
        sites = self.sites or tuple(p for p in parties if p != DEALER)
        if len(sites) < how.min_sites:
            raise ConfigError(
                f'{cfg.path}: helper = "{helper}" needs at least {how.min_sites} '
                f'sites, got {len(sites)}; set helper = "dealer"'
            )
        return helper


# --------------------------------------------------------------------------- a site's table


async def _align(site: Party, own: Any, tag: str, records: str) -> Any:
    """Record alignment among the sites (``records = "common"``: on the records every site
    holds); returns this site's table in the common order, its ids, and how many of its
    records it holds and uses."""
    alignment = await align_records(site, [str(i) for i in own.ids], tag=tag,
                                    common=records == "common")  # fmt: skip
    if alignment.n != alignment.held:
        log.info("%s: %d of its %d records are held by every site; the run uses those",
                 site.name, alignment.n, alignment.held)  # fmt: skip
    used = {"held": alignment.held, "used": alignment.n}
    return own.table.subset(alignment.order), own.ids[alignment.order], used


# --------------------------------------------------------------------------- the program


def _mode(cfg: DeploymentConfig, me: OwnParty) -> str:
    """What this site was started to do: ``classify`` with a saved part, else ``train``."""
    return "classify" if me.model is not None or cfg.protocol == "ppid3-classify" else "train"


def _training_input(params: Ppid3Params, me: OwnParty) -> tuple[Any, str | None]:
    """This site's training file (the class column at the class site) and its warning."""
    is_class = me.name == params.class_site
    class_column = params.class_name or None
    if is_class and class_column is None:
        raise ConfigError("the deployment's ppid3 params need 'class' (the class column)")
    return read_own_table(me, class_column=class_column if is_class else None)


def _test_input(params: Ppid3Params, me: OwnParty) -> Any:
    """This site's held-out records (``me.test``), read as its training file is."""
    is_class = me.name == params.class_site
    test = dataclasses.replace(me, data=me.test)
    return read_own_table(test, class_column=params.class_name or None if is_class else None)[0]


def _classify_input(params: Ppid3Params, cfg: DeploymentConfig, me: OwnParty) -> Any:
    """This site's saved part and its file of new records, read with the part's columns; at
    the class site, a file that also holds the class column is read with it (the true
    classes, to evaluate the predictions against, never sent)."""
    sites = list(params.sites) or list(cfg.names)
    model = _read_part(me, sites, params.class_site)
    reader = _classify_reader(me, model.body)
    labelled = model.body.get("class")
    header = csv_header(me.data, me.delimiter) if me.data is not None else None
    if me.name != params.class_site or labelled not in (header or []):
        labelled = None
    own, _ = read_own_table(reader, class_column=labelled)
    pair = list(sites)[:2]
    shared = model.body.get("tree", {}).get("count_shares")
    if params.scores and model.body.get("reveal") == "tree" and me.name in pair and not shared:
        raise ConfigError(
            f"{me.name}: its model part holds no shares of the nodes' class counts (saved "
            "before scores could be asked of a tree learnt with --reveal tree); train again, "
            "or classify without scores",
            public=f"{me.name}: its model part cannot give scores",
        )
    return model, reader, own


def check(cfg: DeploymentConfig, me: OwnParty) -> None:
    """This site's own input, read and checked before it waits for anyone (the run finds it
    read): its file (the columns the deployment gives it, its ids), its held-out records, or
    its saved model part and the new records it classifies with it."""
    params = Ppid3Params.from_deployment(cfg.params, str(cfg.path))
    if me.role == DEALER:
        return
    if _mode(cfg, me) == "classify":
        _classify_input(params, cfg, me)
        return
    _training_input(params, me)
    if me.test is not None:
        _test_input(params, me)


async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
    """One site (or the dealer) of ``ppid3`` / ``ppid3-classify``."""
    params = Ppid3Params.from_deployment(cfg.params, str(cfg.path))
    sites = list(params.sites) or list(party.parties)
    class_site = params.class_site
    helper = params.helper_in(cfg, party.parties)
    if me.role == DEALER:
        return await _serve_outside(party, sites, class_site, helper)
    site = Sites(party, sites).as_party()
    mode = _mode(cfg, me)
    await site.broadcast("ppid3/mode", mode)
    for peer in site.peers:
        theirs = await site.recv(peer, "ppid3/mode", MODE)
        if theirs != mode:
            raise ConfigError(
                f"{party.name} was started to {mode}, {peer} to {theirs}; start every site "
                "with --model FILE to classify, or every site without it to train"
            )
    if mode == "classify":
        if DEALER in party.parties and party.name == class_site:
            await party.send(DEALER, "ppid3/rows", 0)
        out = await _classify_run(site, params, cfg, me, class_site, party.parties)
    else:
        out = await _train_run(party, site, params, me, class_site, helper)
    if DEALER in party.parties and party.name == class_site:
        await party.send(DEALER, "ppid3/phase", "done")
    return out


async def _serve_outside(
    party: Party, sites: list[str], class_site: str, helper: str | None
) -> dict[str, Any]:
    """The outside party of a helper (the dealer): the number of rows from the class site,
    then its service of the training until the sites are done (none when they classify with
    saved parts: 0 rows), then of each classification without a path the class site
    announces (``ppid3/phase``), until it says ``done``."""
    started = time.perf_counter()
    how = PREPROCESSING[helper or "dealer"]
    rows = await party.recv(class_site, "ppid3/rows", ROWS, expect=integer(lo=0))
    dealt = 0
    if rows > 0:
        dealt = await how.serve(party, sites, dtype=Ring.for_rows(rows).dtype)
    phases = text(["classify", "done"])
    while await party.recv(class_site, "ppid3/phase", PHASE, expect=phases) == "classify":
        dealt += await how.serve(party, sites, dtype=np.uint64, requests=CLASSIFY_REQUESTS)
    return {"dealt": dealt, "seconds": round(time.perf_counter() - started, 3)}


def _progress(party: Party, started: float) -> Any:
    """Progress lines for the launching terminal (PROGRESS lines of the log, relayed by the
    launcher), at most every two seconds."""
    shown = [started]

    def progress(msg: str) -> None:
        if time.perf_counter() - shown[0] < 2.0:
            return
        shown[0] = time.perf_counter()
        log.info(
            "PROGRESS %s, %.1f s, %.1f MB sent",
            msg,
            time.perf_counter() - started,
            party.metrics.to_dict()["bytes_sent"] / 1e6,
        )

    return progress


async def _train_run(
    party: Party,
    site: Party,
    params: Ppid3Params,
    me: OwnParty,
    class_site: str,
    helper: str | None,
) -> dict[str, Any]:
    """Train (``helper``: who makes the randomness of ``counts = "fast"``; None for set
    intersections); then classify the held-out records and save this site's part."""
    is_class = party.name == class_site
    class_column = params.class_name or None
    own, warning = _training_input(params, me)
    if warning:
        log.warning("%s: %s", party.name, warning)
    table, _, used = await _align(site, own, "record-alignment", params.records)
    table, view, edges = training_view(party.name, table, is_class, params.splits, params.bins)
    outside = None if helper is None else PREPROCESSING[helper].outside
    if outside is not None and is_class:
        await party.send(outside, "ppid3/rows", table.n_rows)
    started = time.perf_counter()
    progress = _progress(party, started) if is_class else None
    counts = list(params.attribute_counts)
    oracle = None
    if helper is not None:  # every node of a level per exchange, on additive shares
        tree, cost = await ppid3_levels(
            site,
            view,
            class_site=class_site,
            attribute_counts=counts,
            preprocessing=PREPROCESSING[helper],
            max_depth=params.max_depth,
            min_samples_split=params.min_samples_split,
            progress=progress,
            reveal=REVEALS[params.reveal],
            criterion=CRITERIA[params.criterion] if params.criterion else None,
            row_block=params.row_block or "auto",
            shuffle_from=params.shuffle_from,
        )
    else:  # the paper's depth-first Algorithm 7 with set-intersection counts
        oracle = PSICountOracle()
        tree = await ppid3(
            site,
            view,
            oracle,
            class_site=class_site,
            attribute_counts=counts,
            max_depth=params.max_depth,
            min_samples_split=params.min_samples_split,
            progress=progress,
            criterion=CRITERIA[params.criterion] if params.criterion else None,
        )
        cost = {}
    train_s = time.perf_counter() - started
    report = {k: v for k, v in tree.to_dict().items()
              if k not in ("label_shares", "count_shares")}  # stay private  # fmt: skip
    out: dict[str, Any] = {
        "tree": report,
        "train_s": round(train_s, 3),
        "columns": columns_doc(own.table, edges),
        "rows": table.n_rows,
        "records": used,
    }
    if is_class and params.reveal != "tree":  # from the leaves' class counts
        out["train_accuracy"] = leaf_accuracy(tree, table.n_rows)
    if me.test is not None:
        test_own = _test_input(params, me)
        out.update(await _classify_test(site, test_own, tree, edges, class_site, params.reveal,
                                        helper, params.records))  # fmt: skip
    await _save_part(site, me, tree, edges, own, class_site, class_column, out, params.reveal,
                     helper)  # fmt: skip
    log.info(
        "%s: trained on %d aligned records in %.2f s: %d nodes, depth %d, %d of them mine%s%s",
        party.name,
        table.n_rows,
        train_s,
        len(tree.structure),
        tree_depth(tree.structure),
        len(tree.interior) + len(tree.leaves),
        f"; training accuracy {out['train_accuracy']:.4f}" if "train_accuracy" in out else "",
        f"; model part saved to {me.model_out}" if me.model_out is not None else "",
    )
    out["cost"] = _cost(cost, oracle)
    return out


def _cost(fast_cost: dict[str, int], oracle: PSICountOracle | None) -> dict[str, int]:
    """This site's cost counters: set intersections, or the level driver's batches."""
    if oracle is not None:
        return {"intersections": oracle.intersections, "psi_invocations": oracle.invocations}
    out = {
        "intersections": 0,
        "psi_invocations": 0,
        "outer_batches": fast_cost["outer_batches"],
        "dot_batches": fast_cost["dot_batches"],
        "levels": fast_cost["levels"],
    }
    for key in ("dealt", "ranges", "spilled_bytes"):  # products dealt for others; rows in ranges
        if key in fast_cost:
            out[key] = fast_cost[key]
    return out


async def _classify_test(
    site: Party,
    test_own: Any,
    tree: DistributedTree,
    edges: dict[str, list[float]],
    class_site: str,
    reveal: str = "counts",
    helper: str | None = None,
    records: str = "same",
) -> dict[str, Any]:
    """Algorithm 8 on the held-out records (``test_own``, read from ``me.test``), or with
    ``reveal = "tree"`` classification without a path with the training's ``helper``: the
    class site's test accuracy and predictions."""
    ttable, tids_text, _ = await _align(site, test_own, "record-alignment/test", records)
    ttable, _ = bin_columns(ttable, None, edges)
    tcols: dict[str, Sequence[str]] = {
        a: [str(v) for v in c] for a, c in zip(ttable.attributes, ttable.columns, strict=True)
    }
    ttids = list(range(ttable.n_rows))
    if reveal == "tree":  # no path opened: the leaf is chosen on shares
        assert helper is not None  # reveal = "tree" goes with counts = "fast"
        got = await _oblivious(site, tree, tcols, len(ttids), class_site, class_site, helper,
                               "classify/test")  # fmt: skip
        pred = None if got is None else dict(enumerate(got))
    else:
        pred = await classify_instances(
            site,
            tree,
            tcols,
            ttids,
            class_site=class_site,
            depth=tree_depth(tree.structure),
            tag="classify/test",
        )
    if pred is None:
        return {}
    return {
        "test_accuracy": _accuracy(pred, ttids, [str(v) for v in ttable.target]),
        "test_predictions": dict(sorted((str(tids_text[t]), pred[t]) for t in ttids)),
    }


async def _oblivious(
    site: Party, tree: DistributedTree, cols: dict[str, Sequence[str]], n: int,
    class_site: str, deliver_to: str, helper: str, tag: str,
    scores_out: list[dict[str, int]] | None = None,
) -> list[str] | None:  # fmt: skip
    """Classification without a path (:func:`classify_obliviously`), the pair's triples made
    as ``helper`` makes them; the outside party (the dealer) is told to serve them."""
    how = preprocessing_of(helper)
    if how.outside is not None and site.name == class_site:
        await site.send(how.outside, "ppid3/phase", "classify")
    log.info("%s: classifying %d records without a path, randomness from %s (%s)", site.name, n,
             helper, how.trust)  # fmt: skip
    return await how.beside(
        site,
        lambda dealing: classify_obliviously(site, tree, cols, n, class_site=class_site,
                                             deliver_to=deliver_to, dealing=dealing, tag=tag,
                                             scores_out=scores_out),
        requests=CLASSIFY_REQUESTS,
    )  # fmt: skip


async def _save_part(
    site: Party,
    me: OwnParty,
    tree: DistributedTree,
    edges: dict[str, list[float]],
    own: Any,
    class_site: str,
    class_column: str | None,
    out: dict[str, Any],
    reveal: str = "counts",
    helper: str | None = None,
) -> None:
    """Bind the parts of the tree (:func:`_bind_parts`) and, with ``me.model_out``, write this
    site's part."""
    body = {
        "sites": list(site.parties),
        "class_site": class_site,
        "class": class_column if site.name == class_site else None,
        "id_column": me.id_column,
        "attributes": list(own.table.attributes),
        "columns": columns_doc(own.table, edges),
        "tree": tree.to_dict(),
        "depth": tree_depth(tree.structure),
        "reveal": reveal,
        **({"helper": helper} if helper is not None else {}),
    }
    model_id, parts, opening = await _bind_parts(site, body)
    if me.model_out is not None:
        write_model(me.model_out, SavedModel("ppid3", site.name, model_id, body, parts, opening))
        out["model"] = {"file": str(me.model_out), "model_id": model_id}


async def _bind_parts(site: Party, body: dict[str, Any]) -> tuple[str, dict[str, str], str]:
    """One model id for the run (drawn by the first site) and every site's commitment to its
    part (:func:`mpc.learners.model_file.commit_part`): what binds the parts of one tree
    together. Returns the id, the commitments and this site's opening (kept in its own file,
    never sent). A commitment is hiding: no site can test a guess of another's part against
    it, as it could against a bare hash of a body whose only unpredictable parts (node ids)
    it knows."""
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


# --------------------------------------------------------------------------- classify


def _read_part(me: OwnParty, sites: Sequence[str], class_site: str) -> SavedModel:
    """This site's saved part, checked: its own, of a tree trained by these sites."""
    if me.model is None:
        raise ConfigError(f"{me.name}: classifying needs this site's model part (--model FILE)")
    path = me.model
    try:
        model = me.inputs.get(("model", path), lambda: read_model(path, "ppid3"))
        if model.party != me.name:
            raise ModelError(
                f"model file {me.model} is the part of {model.party}, not of {me.name}; give "
                f"{me.name} its own part"
            )
    except ModelError as exc:
        raise InputError(
            f"{me.name}: {exc}",
            public=f"{me.name}: its model file is not a valid part of a saved tree",
        ) from None
    body = model.body
    if list(body["sites"]) != list(sites) or body["class_site"] != class_site:
        raise ConfigError(
            f"{me.name}: the model was trained by sites {body['sites']} with class site "
            f"{body['class_site']}; this deployment has {list(sites)}, {class_site}"
        )
    return model


def _classify_reader(me: OwnParty, body: dict[str, Any]) -> OwnParty:
    """How a site reads its new records: with the columns and kinds of its saved part."""
    columns_doc = body["columns"]
    return dataclasses.replace(
        me,
        nominal=tuple(c["name"] for c in columns_doc if c["kind"] != CONTINUOUS),
        continuous=tuple(c["name"] for c in columns_doc if c["kind"] == CONTINUOUS),
        id_column=me.id_column or body.get("id_column"),
        columns=tuple(body["attributes"]),
    )


async def _classify_run(
    site: Party,
    params: Ppid3Params,
    cfg: DeploymentConfig,
    me: OwnParty,
    class_site: str,
    deployment: Sequence[str],
) -> dict[str, Any]:
    """Algorithm 8 on new, unlabelled records with this site's saved model part, or, for a
    tree learnt with ``--reveal tree``, classification without a path (the helper chosen for
    it, else the training's; ``deployment``: every party's name)."""
    model, me, own = _classify_input(params, cfg, me)
    body = model.body
    await site.broadcast("ppid3/model", [model.model_id, model.parts])
    for peer in site.peers:
        got = await site.recv(peer, "ppid3/model", MODEL_CHECK)
        if got != [model.model_id, model.parts]:
            message = (
                f"{site.name}: {peer}'s model part is from another training run (or was "
                "changed since); every site must use its part of the same saved tree"
            )
            raise ConfigError(message, public=message)
    columns_doc = body["columns"]
    table, ids, used = await _align(site, own, "record-alignment", params.records)
    edges = {c["name"]: c["bins"] for c in columns_doc if "bins" in c}
    table, _ = bin_columns(table, None, edges)
    tree = DistributedTree.from_dict(body["tree"])
    cols: dict[str, Sequence[str]] = {
        a: [str(v) for v in c] for a, c in zip(table.attributes, table.columns, strict=True)
    }
    tids = list(range(table.n_rows))
    unseen = unseen_values(tree, cols)
    warning = unseen_warning(site.name, unseen, len(tids))
    if warning:
        log.warning("%s", warning)
    started = time.perf_counter()
    deliver_to = params.deliver_to or class_site
    scores: dict[int, dict[str, float]] | None = {} if params.scores else None
    if deliver_to not in site.parties:
        raise ConfigError(f"deliver_to {deliver_to!r} is not one of the sites {site.parties}")
    oblivious = body.get("reveal") == "tree"
    if oblivious:  # no path opened: the leaf is chosen on shares, the class opened to one
        helper = classify_preprocessing(params.helper, body.get("helper"), len(site.parties))
        outside = PREPROCESSING[helper].outside
        if outside is not None and outside not in deployment:
            raise ConfigError(
                f"{site.name}: classifying with --helper {helper} needs the {outside!r} party, "
                f"which the deployment does not have; add it, or choose another helper"
            )
        opened: list[dict[str, int]] | None = [] if params.scores else None
        got = await _oblivious(site, tree, cols, len(tids), class_site, deliver_to, helper,
                               "classify", opened)  # fmt: skip
        pred = None if got is None else dict(enumerate(got))
        if got is not None and opened is not None:
            scores = {t: {c: float(k) for c, k in d.items()} for t, d in enumerate(opened)}
    else:
        pred = await classify_instances(
            site, tree, cols, tids, class_site=class_site, depth=int(body["depth"]),
            tag="classify", counts_out=scores,
        )  # fmt: skip
    if not oblivious and site.name == class_site and deliver_to != class_site:
        assert pred is not None
        await site.send(deliver_to, "ppid3/predictions", [pred[t] for t in tids])
        if scores is not None:
            await site.send(deliver_to, "ppid3/scores", [scores[t] for t in tids])
    log.info(
        "%s: classified %d records with model %s (%s)",
        site.name,
        len(tids),
        model.model_id[:12],
        "no path opened" if oblivious else "Algorithm 8",
    )
    out: dict[str, Any] = {
        "classified": len(tids),
        "records": used,
        "model_id": model.model_id,
        "classify_s": round(time.perf_counter() - started, 3),
        **({"unseen": unseen, "unseen_warning": warning} if unseen else {}),
    }
    if site.name == deliver_to:
        out.update(await _receive(site, me, own, ids, class_site, pred, scores))
    elif site.name == class_site and own.table.class_name:
        log.warning("%s: its file holds the class, but the predictions go to %s: nothing to "
                    "evaluate here", site.name, deliver_to)  # fmt: skip
    return out


async def _receive(
    site: Party, me: OwnParty, own: Any, ids: Any, class_site: str,
    pred: dict[int, str] | None, scores: dict[int, dict[str, float]] | None,
) -> dict[str, Any]:  # fmt: skip
    """The receiving site's predictions (and scores): made here, or sent by the class site;
    written (:func:`_deliver`); at the class site, evaluated against the classes its file
    holds, if it holds them."""
    n = len(ids)
    if pred is not None:
        labels: Any = [pred[t] for t in range(n)]
        got = None if scores is None else [scores[t] for t in range(n)]
    else:
        labels = await site.recv(class_site, "ppid3/predictions", PREDICTIONS)
        got = None if scores is None else await site.recv(class_site, "ppid3/scores", SCORES)
    if not isinstance(labels, list) or len(labels) != n:
        raise ProtocolError(f"{class_site} sent malformed predictions")
    if got is not None and (not isinstance(got, list) or len(got) != n):
        raise ProtocolError(f"{class_site} sent malformed scores")
    out = _deliver(site, me, own, ids, labels, got)
    if site.name == class_site and own.table.class_name:
        truth = {str(i): str(c) for i, c in zip(own.ids, own.table.target, strict=True)}
        out["evaluation"] = ev = evaluation([truth[str(i)] for i in ids], labels)
        for line in evaluation_log(ev):
            log.info("%s: %s", site.name, line)
    return out


def _deliver(
    site: Party, me: OwnParty, own: Any, ids: Any, labels: list[Any], scores: list[Any] | None
) -> dict[str, Any]:
    """The receiving site's predictions (and scores): on its ledger, in its file (in its
    file's order)."""
    site.ledger.record("ppid3/predictions", len(labels), step="ppid3/predictions")
    path = me.predictions or Path("predictions.csv")
    by_id = {str(i): str(c) for i, c in zip(ids, labels, strict=True)}
    file_order = [str(i) for i in own.ids if str(i) in by_id]  # (on the records every site holds)
    in_order = [by_id[i] for i in file_order]
    out: dict[str, Any] = {"predictions_file": str(path)}
    if scores is None:
        write_predictions(path, file_order, in_order, id_column=me.id_column)
    else:
        site.ledger.record("ppid3/scores", len(scores), step="ppid3/predictions")
        score_of = {str(i): dict(c) for i, c in zip(ids, scores, strict=True)}
        classes = sorted({c for d in scores for c in d} | set(in_order))
        write_scored_predictions(path, file_order, in_order, [score_of[i] for i in file_order],
                                 classes, id_column=me.id_column)  # fmt: skip
        out["scores"] = [[i, score_of[i]] for i in file_order]
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
