#!/usr/bin/env python3
"""Reproduce Teng & Du's experiments (Section 5): Figure 2(b), Figures 3-4 and Table 1.

Every run is an 80/20 stratified split (a new split per repeat), the attributes divided at
random into Alice's and Bob's halves, the table's columns dealt into ``g`` randomization groups
and a fresh disguise of both parties' data. The trees are built by the protocol code of
:mod:`protocols.hybrid.hybrid_id3` with Alice, Bob and the commodity server as three parties in one
process over the in-memory transport (the same code that ``mpc run hybrid-id3`` runs as three
processes over CurveZMQ; hundreds of trees do not need the sockets).

* **fig2b** — randomization-only accuracy against θ for g = 1-4 groups;
* **fig-a** (the paper's Figures 3(a) and 4(a)) — hybrid (ω = 1 and 3) against
  randomization-only for 1 and 4 groups, against θ;
* **fig-b** (Figures 3(b) and 4(b)) — hybrid accuracy against ω, 4 groups, θ = 0.45;
* **table1** — for ω = 2, 3, 4 at θ = 0.45 with 4 groups: A, hybrid minus randomization-only
  accuracy, and C (Section 5.4), the share of the hybrid tree's gain computations done by SMC
  (:attr:`protocols.hybrid.hybrid_id3.HybridResult.smc_share`), with the hybrid's secure dot
  products over the SMC-only tree's as a second cost measure;
* **accuracy** — every tree's accuracy at θ = 0.45 with 4 groups.

``g`` is read as the paper reads it (``--grouping table``, the default: the whole table's
columns, the class among them, dealt into ``g`` groups, each party flipping one coin per record
for its part of a group) or per party (``--grouping party``: ``g`` groups of each party's own
columns); :mod:`parties.programs.hybrid` describes both.

Every number is over ``--repeats`` runs (10 by default) and is reported as mean ± sample
standard deviation and [min, max]; the figures' bars are ± 1 sd. Adult's trees are limited to
a depth (``DEFAULT_DEPTH``, or ``--max-depth``), which every Adult label states.

Seeds. A run's public seed (``1000 + repeat``) chooses its split, partition and groups, as
``mpc run hybrid-id3 --seed`` does. The randomized-response coins never come from it: one
``numpy.random.SeedSequence`` (``--coin-entropy``, fresh OS entropy by default, recorded in
``results.json`` so that a run can be repeated) is spawned into one child per party, and each
run's coin seed of a party is drawn from that party's own child only. A party's seed goes to
the worker process with the job, in memory (never through a file), and inside the run only that
party's program reads it: the separation the shipped path keeps, where a party's coin seed lives
only in its own private input file (``mpc run hybrid-id3 --coin-seeds``).

Writes, in this order, ``results.json`` (every run, so that nothing is lost if a later step
fails), ``table1.md``, ``accuracy.md``, ``points.md`` (every point of every figure) and one PNG
per figure and dataset. While it runs, finished runs go to ``runs.partial.jsonl``, which
``--resume`` continues from. ``--replot`` rewrites the tables and figures from ``results.json``.

    python scripts/experiments/hybrid_id3.py --quick          # a smoke run, to a temp folder
    nice -n 10 python scripts/experiments/hybrid_id3.py --workers 2   # the full run, hours
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


from mpc.datasets import Discretizer, load_dataset, resolve_data_dir  # noqa: E402
from mpc.learners.evaluation import accuracy, predict_table, train_test_split  # noqa: E402
from mpc.learners.tree import from_json  # noqa: E402
from mpc.runtime.local import run_in_memory  # noqa: E402
from mpc.runtime.party import Party  # noqa: E402
from parties.programs.hybrid import GROUPINGS, PARTY_GROUPS, TABLE_GROUPS, party_codes  # noqa: E402
from parties.systems.hybrid import make_setup, split_attributes  # noqa: E402
from protocols.hybrid.dot_session import DotSession, serve_helper  # noqa: E402
from protocols.hybrid.hybrid_id3 import (  # noqa: E402
    ALICE,
    BOB,
    DEALER,
    ESTIMATE_READINGS,
    MINERS,
    Estimator,
    exchange_disguised,
    hybrid_id3,
)

#: the paper's Table 1 (θ = 0.45, 4 groups): ω -> (A, C); of the Adult row only one cell
#: survived in our copy of the paper (28%, in the place of C at ω = 3)
PAPER_TABLE1 = {"mushroom": {2: (0.23, 0.10), 3: (0.26, 0.15), 4: (0.27, 0.20)}}

#: depth limits by dataset: plain ID3 on Adult (4 bins, native-country with 42 values) grows
#: 68,650 nodes (13,041 at depth 6, 4,131 at depth 4), and every node of every tree costs a
#: round of secure dot products over ~39,000 records; depth 3 keeps ten repeats of every point
#: within hours on two cores. Mushroom's and Tic-tac-toe's trees are grown in full, as in the
#: paper.
DEFAULT_DEPTH = {"adult": 3}

#: Table 1's and Figure 3(b)/4(b)'s setting
THETA_T1, GROUPS_T1 = 0.45, 4
RAND, SMC = "randomization-only/None", "smc-only/None"


def hybrid_tag(window: int) -> str:
    return f"hybrid/{window}"


#: the randomization-only baseline's readings (:data:`protocols.hybrid.hybrid_id3.ESTIMATE_READINGS`
#: x :data:`protocols.hybrid.hybrid_id3.MINERS`); the first is the default's, tagged :data:`RAND`
READINGS = [(e, m) for e in ESTIMATE_READINGS for m in MINERS]
#: the derived reading "one miner, the class on a random side": per run, Alice or Bob as the
#: miner by a public coin of the run's seed
RANDOM_MINER = "random"


def rand_tag(estimates: str, miner: str) -> str:
    """The tag of a randomization-only tree read as ``(estimates, miner)``."""
    if (estimates, miner) == READINGS[0]:
        return RAND
    return f"randomization-only:{estimates}:{miner}/None"


def random_miner(seed: int) -> str:
    """The miner of a run under the "class on a random side" reading: a public coin of the
    run's public seed (never of a party's coins)."""
    return (ALICE, BOB)[int(np.random.default_rng([int(seed), 37]).integers(2))]


def tree_name(tag: str) -> str:
    """``randomization-only``, ``hybrid ω = 3``, ``SMC-only`` for a run's tree tags."""
    mode, w = tag.split("/")
    if mode.startswith("randomization-only:"):
        _, e, m = mode.split(":")
        return f"randomization-only ({e} estimates, miner {m})"
    return {"hybrid": f"hybrid ω = {w}", "smc-only": "SMC-only"}.get(mode, mode)


def label(dataset: str, depth: int | None) -> str:
    """A dataset's name with its depth limit, as every table and figure shows it."""
    return dataset if depth is None else f"{dataset} (depth ≤ {depth})"


def load(name: str, data_dir: str | None) -> Any:
    table, extra = load_dataset(name, resolve_data_dir(data_dir))
    return table if extra is None else table.concat(extra)  # adult: pool, then split 80/20


def one_run(job: dict[str, Any]) -> dict[str, Any]:
    """One split, one disguise: the randomization-only tree and one hybrid tree per ω
    (and, when asked, the SMC-only tree), with test accuracy and SMC costs.

    ``job["seed"]`` is the public seed (split, partition, groups); ``job["coin_seeds"]``, when
    given, maps each party to its own coin seed, else each party's coins come from the OS."""
    table = load(job["dataset"], job["data_dir"])
    seed = int(job["seed"])
    tr, te = train_test_split(table.target, 0.2, seed=seed)
    train, test = table.subset(tr), table.subset(te)
    if "continuous" in train.kinds:
        disc = Discretizer.fit(train, job["bins"])
        train, test = disc.transform(train), disc.transform(test)
    alice, bob = split_attributes(list(train.attributes), seed)
    setup = make_setup(
        train, alice, bob, theta=job["theta"], groups=job["groups"], seed=seed,
        grouping=job.get("grouping", TABLE_GROUPS),
    )  # fmt: skip
    codes = {p: party_codes(setup, train, p) for p in (ALICE, BOB)}
    readings = [tuple(r) for r in job.get("readings", [READINGS[0]])]
    # (tag, mode, window, estimates, miner) of every tree
    modes: list[tuple[str, str, int | None, str, str]] = (
        [(rand_tag(e, m), "randomization-only", None, e, m) for e, m in readings]
        if job["rand"]
        else []
    )
    modes += [(f"hybrid/{w}", "hybrid", w, *READINGS[0]) for w in job["windows"]]
    if job["smc"]:
        modes.append(("smc-only/None", "smc-only", None, *READINGS[0]))
    smc_tags = [t for t, m, *_ in modes if m != "randomization-only"]
    max_depth = job["max_depth"]
    coin_seeds = job.get("coin_seeds") or {}

    async def program(party: Party) -> Any:
        if party.name == DEALER:
            return await serve_helper(party, smc_tags)
        # this party's coins from its own seed only (or the OS), never from the public seed
        own = coin_seeds.get(party.name)
        rng = None if own is None else np.random.default_rng(own)
        view = await exchange_disguised(party, setup, codes[party.name], rng=rng)
        est = Estimator(setup, party.name, codes[party.name], view)
        out = {}
        for tag, mode, w, estimates, miner in modes:
            dot = DotSession("dealer", tag) if mode != "randomization-only" else None
            res = await hybrid_id3(
                party, setup, est, codes[party.name], mode=mode, window=w, dot=dot,
                max_depth=max_depth, tag=tag, estimates=estimates, miner=miner,
            )  # fmt: skip
            if dot is not None:
                await dot.close(party)
            out[tag] = res
        return out

    started = time.perf_counter()
    results, _ = asyncio.run(
        run_in_memory(
            [ALICE, BOB, DEALER], program, roles={ALICE: ALICE, BOB: BOB, DEALER: DEALER},
            timeout=600,
        )
    )  # fmt: skip
    out = {
        **{k: v for k, v in job.items() if k not in ("data_dir", "coin_seeds")},
        "seconds": round(time.perf_counter() - started, 2),
    }
    for tag, res in results[ALICE].items():
        pred = predict_table(from_json(res.tree), test)
        out[tag] = {
            "accuracy": accuracy(test.target, pred),
            "dot_products": res.dot_products,
            "smc_gains": res.smc_gains,
            "gain_computations": res.gain_computations,
            "nodes": res.nodes,
        }
    return out


def job_key(job: dict[str, Any]) -> str:
    return f"{job['dataset']}/{job['seed']}/{job['groups']}/{job['theta']}"


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every run of the experiments, each with its parties' coin seeds: ``args.coins`` (a
    ``SeedSequence``) is spawned into one child per party, and run ``i``'s coin seed of a party
    comes from that party's child alone (its ``i``-th spawned child)."""
    jobs: list[dict[str, Any]] = []
    for ds in args.datasets:
        depth = args.max_depth if args.max_depth is not None else DEFAULT_DEPTH.get(ds)
        base = {"data_dir": args.data_dir, "bins": 4, "max_depth": depth}
        for r in range(args.repeats):
            seed = 1000 + r
            if args.table1_readings:  # Table 1's setting only, every reading of the baseline
                jobs.append(
                    {**base, "dataset": ds, "seed": seed, "theta": THETA_T1, "groups": GROUPS_T1,
                     "grouping": args.grouping, "windows": sorted(args.windows), "rand": True,
                     "smc": True, "readings": [list(x) for x in READINGS]}
                )  # fmt: skip
                continue
            for g in (1, 2, 3, 4):  # Figure 2(b), and 3(a)/4(a) for 1G and 4G
                for theta in args.thetas:
                    t1 = g == GROUPS_T1 and abs(theta - THETA_T1) < 1e-9
                    windows = [1, 3] if g in (1, 4) else []
                    if t1:
                        windows = sorted(set(windows) | set(args.windows))  # 3(b)/4(b), Table 1
                    jobs.append(
                        {**base, "dataset": ds, "seed": seed, "theta": theta, "groups": g,
                         "grouping": args.grouping, "windows": windows, "rand": True,
                         "smc": t1}
                    )  # fmt: skip
    party_roots = dict(zip((ALICE, BOB), args.coins.spawn(2), strict=True))
    per_run = {p: root.spawn(len(jobs)) for p, root in party_roots.items()}
    for i, job in enumerate(jobs):
        job["coin_seeds"] = {p: per_run[p][i].generate_state(4).tolist() for p in (ALICE, BOB)}
    return jobs


# ----------------------------------------------------------------------------- statistics


def spread(xs: Sequence[float]) -> dict[str, Any]:
    """Runs, mean, sample standard deviation (0 for one run), min and max."""
    return {
        "runs": len(xs),
        "mean": statistics.fmean(xs),
        "sd": statistics.stdev(xs) if len(xs) > 1 else 0.0,
        "min": min(xs),
        "max": max(xs),
    }


def fmt(s: dict[str, Any], spec: str = ".3f", pct: bool = False) -> str:
    """``mean ± sd [min, max]`` (in percent with ``pct``)."""
    k = 100.0 if pct else 1.0
    sd_spec = spec.lstrip("+")
    return (
        f"{format(s['mean'] * k, spec)} ± {format(s['sd'] * k, sd_spec)} "
        f"[{format(s['min'] * k, spec)}, {format(s['max'] * k, spec)}]"
    )


def depths(runs: Iterable[dict[str, Any]]) -> dict[str, int | None]:
    return {r["dataset"]: r["max_depth"] for r in runs}


def setting(runs: Sequence[dict[str, Any]]) -> str:
    """Table 1's setting, with the reading of g the runs used."""
    readings = {r.get("grouping", TABLE_GROUPS) for r in runs}
    where = {TABLE_GROUPS: "across the whole table", PARTY_GROUPS: "per party"}
    return f"θ = {THETA_T1}, g = {GROUPS_T1} groups " + " / ".join(
        where[x] for x in sorted(readings)
    )


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy per (dataset, groups, θ, tree) over the runs: runs, mean, sd, min, max."""
    acc: dict[tuple[Any, ...], list[float]] = {}
    for run in runs:
        for tag, v in run.items():
            if not isinstance(v, dict) or "accuracy" not in v:
                continue
            key = (run["dataset"], run["groups"], run["theta"], tag)
            acc.setdefault(key, []).append(v["accuracy"])
    points = [
        {"dataset": ds, "groups": g, "theta": theta, "tree": tag, **spread(xs)}
        for (ds, g, theta, tag), xs in sorted(acc.items())
    ]
    return {"points": points}


def t1_runs(runs: list[dict[str, Any]], ds: str) -> list[dict[str, Any]]:
    return [
        r for r in runs
        if r["dataset"] == ds and r["groups"] == GROUPS_T1 and abs(r["theta"] - THETA_T1) < 1e-9
    ]  # fmt: skip


def table1(runs: list[dict[str, Any]], windows: list[int]) -> dict[str, dict[int, Any]]:
    """Table 1 per dataset and ω: A (hybrid minus randomization-only accuracy), C (the share
    of the hybrid tree's gain computations done by SMC, Section 5.4), the hybrid's secure dot
    products over the SMC-only tree's, and the accuracies; each over the runs."""
    out: dict[str, dict[int, Any]] = {}
    for ds in sorted({r["dataset"] for r in runs}):
        rows = t1_runs(runs, ds)
        out[ds] = {}
        for w in windows:
            h = [r[hybrid_tag(w)] for r in rows]
            out[ds][w] = {
                "A": spread(
                    [x["accuracy"] - r[RAND]["accuracy"] for x, r in zip(h, rows, strict=True)]
                ),
                "C": spread([x["smc_gains"] / x["gain_computations"] for x in h]),
                "dot_products": spread(
                    [
                        x["dot_products"] / r[SMC]["dot_products"]
                        for x, r in zip(h, rows, strict=True)
                    ]
                ),
                # the other reading of "SMC computations": exact gains of the hybrid tree
                # over those of the SMC-only tree, a different tree
                "gains_vs_smc_only_tree": spread(
                    [x["smc_gains"] / r[SMC]["smc_gains"] for x, r in zip(h, rows, strict=True)]
                ),
                "runs": len(rows),
            }
    return out


def table1_readings(runs: list[dict[str, Any]], windows: list[int]) -> dict[str, Any]:
    """Table 1's A under every reading of the randomization-only baseline: per dataset and
    reading (``estimates/miner``, the derived ``random`` miner too), A at every ω and the
    baseline's accuracy, each over the runs."""
    out: dict[str, Any] = {}
    for ds in sorted({r["dataset"] for r in runs}):
        rows = [r for r in t1_runs(runs, ds) if all(rand_tag(*x) in r for x in READINGS)]
        if not rows:
            continue
        out[ds] = {}
        for e in ESTIMATE_READINGS:
            for m in (*MINERS, RANDOM_MINER):

                def base(r: dict[str, Any], e: str = e, m: str = m) -> float:
                    who = random_miner(r["seed"]) if m == RANDOM_MINER else m
                    return float(r[rand_tag(e, who)]["accuracy"])

                out[ds][f"{e}/{m}"] = {
                    "baseline": spread([base(r) for r in rows]),
                    "A": {
                        str(w): spread([r[hybrid_tag(w)]["accuracy"] - base(r) for r in rows])
                        for w in windows
                    },
                    "runs": len(rows),
                }
    return out


def table1_readings_markdown(t: dict[str, Any], windows: list[int]) -> str:
    lines = [
        f"Table 1's A (θ = {THETA_T1}, g = {GROUPS_T1} across the table) under every reading of "
        "the randomization-only baseline: mean ± sd [min, max] over the runs, each run a new "
        "80/20 split, partition, groups and disguise. Estimates: clipped (negative estimates "
        "set to 0 before gains and leaves), raw (kept everywhere), raw-gains (raw for the "
        "gains, clipped for the leaves), raw-leaves (clipped for the gains, raw for the "
        "leaves). Miner: both (the average of the two parties' estimates), bob (one "
        "miner, the class in clear), alice (one miner, the class disguised), random (one "
        "miner, Alice or Bob by a public coin of each run).",
        "",
        "| dataset | estimates | miner | runs | baseline accuracy | "
        + " | ".join(f"A at ω = {w}" for w in windows)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(windows),
    ]
    for ds, by in t.items():
        paper = PAPER_TABLE1.get(ds, {})
        for key, v in by.items():
            e, m = key.split("/")
            cells = " | ".join(fmt(v["A"][str(w)], "+.3f") for w in windows)
            lines.append(f"| {ds} | {e} | {m} | {v['runs']} | {fmt(v['baseline'])} | {cells} |")
        if paper:
            cells = " | ".join(f"{paper[w][0]:+.2f}" if w in paper else "—" for w in windows)
            lines.append(f"| {ds} | *the paper* | | | | {cells} |")
    return "\n".join(lines) + "\n"


def table1_markdown(
    t1: dict[str, dict[int, Any]],
    windows: list[int],
    depth: dict[str, int | None],
    where: str = f"θ = {THETA_T1}, g = {GROUPS_T1}",
) -> str:
    lines = [
        f"Table 1 ({where}): mean ± sd [min, max] over the runs; "
        "A = hybrid minus randomization-only accuracy; C = share of the hybrid tree's gain "
        "computations done by SMC (Section 5.4); dot products = the hybrid's secure dot "
        "products over the SMC-only tree's.",
        "",
        "| dataset | ω | runs | A | C, % | dot products, % | paper A | paper C, % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ds, by_w in t1.items():
        paper = PAPER_TABLE1.get(ds, {})
        for w in windows:
            v = by_w[w]
            a, c = paper.get(w, (None, None))
            lines.append(
                f"| {label(ds, depth.get(ds))} | {w} | {v['runs']} | {fmt(v['A'], '+.3f')} | "
                f"{fmt(v['C'], '.1f', pct=True)} | {fmt(v['dot_products'], '.1f', pct=True)} | "
                f"{'—' if a is None else f'{a:+.2f}'} | {'—' if c is None else f'{c * 100:.0f}'} |"
            )
    return "\n".join(lines) + "\n"


def accuracy_markdown(
    summary: dict[str, Any],
    windows: list[int],
    depth: dict[str, int | None],
    where: str = f"θ = {THETA_T1}, g = {GROUPS_T1}",
) -> str:
    """Every tree's test accuracy at Table 1's setting."""
    order = [RAND, *(hybrid_tag(w) for w in windows), SMC]
    lines = [
        f"Test accuracy at {where}: mean ± sd [min, max] over the runs.",
        "",
        "| dataset | tree | runs | accuracy |",
        "|---|---|---|---|",
    ]
    pts = summary["points"]
    for ds in sorted({p["dataset"] for p in pts}):
        for tag in order:
            hit = [
                p for p in pts
                if p["dataset"] == ds and p["groups"] == GROUPS_T1
                and abs(p["theta"] - THETA_T1) < 1e-9 and p["tree"] == tag
            ]  # fmt: skip
            if hit:
                name = tree_name(tag) + (" (= plain ID3)" if tag == SMC else "")
                lines.append(
                    f"| {label(ds, depth.get(ds))} | {name} | {hit[0]['runs']} | {fmt(hit[0])} |"
                )
    return "\n".join(lines) + "\n"


def points_markdown(summary: dict[str, Any], depth: dict[str, int | None]) -> str:
    """Every point of every figure."""
    lines = [
        "Test accuracy at every point of the figures: mean ± sd [min, max] over the runs.",
        "",
        "| dataset | g | θ | tree | runs | accuracy |",
        "|---|---|---|---|---|---|",
    ]
    for p in summary["points"]:
        lines.append(
            f"| {label(p['dataset'], depth.get(p['dataset']))} | {p['groups']} | {p['theta']} | "
            f"{tree_name(p['tree'])} | {p['runs']} | {fmt(p)} |"
        )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- figures


def check_matplotlib() -> None:
    """Stop before any run when the figures cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit(
            "hybrid_id3.py: matplotlib is missing, so the figures cannot be drawn; install it "
            "(pip install -e '.[experiments]') or pass --no-figures"
        ) from None


def figures(
    summary: dict[str, Any],
    out: Path,
    thetas: list[float],
    windows: list[int],
    depth: dict[str, int | None],
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = summary["points"]
    written = []

    def find(ds: str, g: int, theta: float, tag: str) -> dict[str, Any] | None:
        hit = [p for p in pts if p["dataset"] == ds and p["groups"] == g
               and abs(p["theta"] - theta) < 1e-9 and p["tree"] == tag]  # fmt: skip
        return hit[0] if hit else None

    def series(ds: str, g: int, tag: str) -> tuple[list[float], list[float], list[float]]:
        xs, ms, ss = [], [], []
        for t in thetas:
            p = find(ds, g, t, tag)
            if p is not None:
                xs.append(t)
                ms.append(p["mean"])
                ss.append(p["sd"])
        return xs, ms, ss

    def runs_of(ds: str) -> str:
        counts = sorted({p["runs"] for p in pts if p["dataset"] == ds})
        n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        return f"{n} runs per point, bars ± 1 sd"

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path.name)

    for ds in sorted({p["dataset"] for p in pts}):
        title = label(ds, depth.get(ds))
        fig, ax = plt.subplots(figsize=(5.2, 3.8))
        for g in (1, 2, 3, 4):
            xs, ms, ss = series(ds, g, RAND)
            ax.errorbar(xs, ms, yerr=ss, marker="o", capsize=3, label=f"{g}G")
        ax.set(xlabel=f"θ\n({runs_of(ds)})", ylabel="accuracy",
               title=f"{title}: randomization only (Fig. 2(b))")  # fmt: skip
        ax.legend()
        save(fig, f"fig2b_{ds}.png")

        fig, ax = plt.subplots(figsize=(5.2, 3.8))
        for g in (4, 1):
            for tag, name in ((hybrid_tag(1), "hybrid ω=1"), (hybrid_tag(3), "hybrid ω=3"),
                              (RAND, "randomization only")):  # fmt: skip
                xs, ms, ss = series(ds, g, tag)
                ax.errorbar(xs, ms, yerr=ss, marker="o", capsize=3, label=f"{g}G {name}")
        ax.set(xlabel=f"θ\n({runs_of(ds)})", ylabel="accuracy",
               title=f"{title}: hybrid vs randomization only")  # fmt: skip
        ax.legend(fontsize=7)
        save(fig, f"fig_a_{ds}.png")

        fig, ax = plt.subplots(figsize=(5.2, 3.8))
        ws, ms, ss = [], [], []
        for w in windows:
            p = find(ds, GROUPS_T1, THETA_T1, hybrid_tag(w))
            if p is not None:
                ws.append(w)
                ms.append(p["mean"])
                ss.append(p["sd"])
        ax.errorbar(ws, ms, yerr=ss, marker="o", capsize=3, label=f"hybrid, {GROUPS_T1}G")
        for tag, name, style in ((SMC, "SMC-only", "--"), (RAND, "randomization only", ":")):
            p = find(ds, GROUPS_T1, THETA_T1, tag)
            if p is not None and ws:
                ax.axhline(p["mean"], linestyle=style, color="grey", label=name)
        ax.set_xticks(ws)
        ax.set(xlabel=f"window size ω\n({runs_of(ds)})", ylabel="accuracy",
               title=f"{title}: accuracy vs ω, θ = {THETA_T1}")  # fmt: skip
        ax.legend(fontsize=8)
        save(fig, f"fig_b_{ds}.png")
    return written


# ----------------------------------------------------------------------------- main


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return []


def write_outputs(doc: dict[str, Any], out: Path, figures_too: bool) -> int:
    """The tables, then the figures, from a results document (``results.json`` is written
    before this, so a failure here loses no run). Returns the exit status."""
    a = doc["args"]
    runs = doc["runs"]
    windows = [w for w in (2, 3, 4) if w in a["windows"]]
    depth = depths(runs)
    if a.get("table1_readings"):
        readings = table1_readings(runs, windows)
        (out / "results.json").write_text(
            json.dumps({**doc, "table1_readings": readings}, indent=1, default=float)
        )
        md = table1_readings_markdown(readings, windows)
        (out / "table1-readings.md").write_text(md)
        print(md)
        return 0
    summary = summarize(runs)
    t1 = table1(runs, windows)
    doc = {**doc, "summary": summary, "table1": {ds: {str(w): v for w, v in by.items()}
                                                 for ds, by in t1.items()}}  # fmt: skip
    (out / "results.json").write_text(json.dumps(doc, indent=1, default=float))
    where = setting(runs)
    md = table1_markdown(t1, windows, depth, where)
    (out / "table1.md").write_text(md)
    (out / "accuracy.md").write_text(accuracy_markdown(summary, a["windows"], depth, where))
    (out / "points.md").write_text(points_markdown(summary, depth))
    print(md)
    if not figures_too:
        return 0
    try:
        written = figures(summary, out, a["thetas"], a["windows"], depth)
    except Exception as exc:  # the runs are saved: report, and let --replot retry
        print(f"[experiments] the figures failed ({exc!r}); the runs are in {out}/results.json, "
              "rerun with --replot", file=sys.stderr)  # fmt: skip
        return 1
    print(f"[experiments] wrote table1.md, accuracy.md, points.md, {', '.join(written)}")
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true",
        help="a smoke run (two datasets, two θ, 1 repeat) into a new temp folder",
    )  # fmt: skip
    p.add_argument("--datasets", default=None, help="comma-separated (adult,mushroom,tic-tac-toe)")
    p.add_argument("--repeats", type=int, default=None, help="runs per point (default 10)")
    p.add_argument("--data-dir", default=None, help="where the UCI datasets are")
    p.add_argument(
        "--out", default=None,
        help="results folder (default results/hybrid-id3; with --quick a new temp folder, and "
        "never a folder under results/)",
    )  # fmt: skip
    p.add_argument(
        "--max-depth", type=int, default=None,
        help="depth limit for every tree (default: adult 3, the others none)",
    )  # fmt: skip
    p.add_argument(
        "--grouping", choices=GROUPINGS, default=TABLE_GROUPS,
        help="how the number of groups g is read: table (the paper's g groups across the "
        "whole table) or party (g groups per party)",
    )  # fmt: skip
    p.add_argument("--workers", type=int, default=1, help="parallel runs (default 1)")
    p.add_argument(
        "--coin-entropy", type=int, default=None, metavar="N",
        help="entropy of the SeedSequence spawned into one child per party, from which each "
        "run's coin seed of that party is drawn (default: fresh from the OS; results.json "
        "records it). It never seeds a public choice: the runs' split, partition and groups "
        "come from the public seeds 1000, 1001, ...",
    )  # fmt: skip
    p.add_argument("--no-figures", action="store_true", help="the tables only (no matplotlib)")
    p.add_argument(
        "--resume", action="store_true",
        help="continue the run whose finished runs are in OUT/runs.partial.jsonl",
    )  # fmt: skip
    p.add_argument(
        "--replot", action="store_true",
        help="rewrite the tables and figures from OUT/results.json, running nothing",
    )  # fmt: skip
    p.add_argument(
        "--table1-readings", action="store_true",
        help="Table 1's setting only (θ = 0.45, g = 4, ω = 2, 3, 4; default Mushroom, 20 runs, "
        "results/hybrid-id3-readings), with the randomization-only baseline under every "
        "reading the paper leaves open (estimates clipped, raw, raw for the gains or for the "
        "leaves only; "
        "both parties averaged, Bob alone, Alice alone, or one at random): table1-readings.md",
    )  # fmt: skip
    args = p.parse_args(argv)
    results = (ROOT / "results").resolve()
    if args.table1_readings and not args.quick:
        args.out = args.out or str(ROOT / "results" / "hybrid-id3-readings")
        args.datasets = (args.datasets or "mushroom").split(",")
        args.repeats = args.repeats or 20
        args.thetas = [THETA_T1]
        args.windows = [2, 3, 4]
        args.no_figures = True
        if args.repeats < 1 or args.workers < 1:
            p.error("--repeats and --workers must be at least 1")
        return args
    if args.quick:
        if args.out is not None and Path(args.out).resolve().is_relative_to(results):
            p.error(f"--quick writes to a scratch folder, never under {results}")
        args.out = args.out or tempfile.mkdtemp(prefix="hybrid-id3-quick-")
        args.datasets = (args.datasets or "tic-tac-toe,mushroom").split(",")
        args.repeats = args.repeats or 1
        args.thetas = [0.3, 0.45] if not args.table1_readings else [THETA_T1]
        args.windows = [1, 2, 3] if not args.table1_readings else [2, 3]
        if args.table1_readings:
            args.no_figures = True
    else:
        args.out = args.out or str(ROOT / "results" / "hybrid-id3")
        args.datasets = (args.datasets or "adult,mushroom,tic-tac-toe").split(",")
        args.repeats = args.repeats or 10
        args.thetas = [0.2, 0.3, 0.35, 0.4, 0.45]
        args.windows = [1, 2, 3, 4, 5, 6]
    if args.repeats < 1 or args.workers < 1:
        p.error("--repeats and --workers must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    out = Path(args.out)
    if args.replot:
        return write_outputs(json.loads((out / "results.json").read_text()), out,
                             not args.no_figures)  # fmt: skip
    if not args.no_figures:
        check_matplotlib()
    out.mkdir(parents=True, exist_ok=True)
    partial = out / "runs.partial.jsonl"
    done: dict[str, dict[str, Any]] = {}
    if args.resume and partial.exists():
        lines = [json.loads(x) for x in partial.read_text().splitlines() if x.strip()]
        args.coin_entropy = lines[0]["coin_entropy"]  # the same coin seeds as before
        done = {job_key(r): r for r in lines[1:]}
    args.coins = np.random.SeedSequence(args.coin_entropy)
    args.coin_entropy = args.coins.entropy  # recorded: --coin-entropy repeats the coins
    jobs = [j for j in plan(args) if job_key(j) not in done]
    if not done:
        partial.write_text(json.dumps({"coin_entropy": args.coin_entropy}) + "\n")
    # the slowest jobs first, so the pool's tail is short
    jobs.sort(key=lambda j: (-len(j["windows"]) - 3 * j["smc"], j["dataset"] != "adult"))
    load_start = load_average()
    print(f"[experiments] {len(jobs)} runs ({len(done)} done before) on {args.workers} workers, "
          f"writing to {out}; load average {load_start}", flush=True)  # fmt: skip
    started = time.perf_counter()
    runs: list[dict[str, Any]] = list(done.values())
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(partial.open("a"))
        if args.workers == 1:  # in this process: no pool to start, and easier to debug
            finished: Iterable[dict[str, Any]] = map(one_run, jobs)
        else:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=args.workers))
            finished = pool.map(one_run, jobs)
        for i, run in enumerate(finished, 1):
            runs.append(run)
            log.write(json.dumps(run, default=float) + "\n")
            log.flush()
            if i % max(1, len(jobs) // 40) == 0 or i == len(jobs):
                print(f"[experiments] {i}/{len(jobs)} runs, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
    runs.sort(key=lambda r: (r["dataset"], r["seed"], r["groups"], r["theta"]))
    doc = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d"),
        "seconds": round(time.perf_counter() - started, 1),
        "load_average": {"start": load_start, "end": load_average()},
        "args": {k: v for k, v in vars(args).items() if k not in ("coins", "out")},
        "runs_per_point": args.repeats,
        "runs": runs,
    }
    (out / "results.json").write_text(json.dumps(doc, indent=1, default=float))
    partial.unlink()
    print(f"[experiments] {len(runs)} runs in {doc['seconds']} s; wrote {out}/results.json",
          flush=True)  # fmt: skip
    return write_outputs(doc, out, not args.no_figures)


if __name__ == "__main__":
    raise SystemExit(main())
