#!/usr/bin/env python3
"""Write docs/leakage.md: what every party of every system receives, receipt by receipt.

Every ``recv`` of the code names a receipt (:mod:`mpc.runtime.view`): what the message is,
public, uniform (masked, encrypted, a share, fresh randomness) or declared leakage. This
script runs every system in a small configuration (its parties as processes over CurveZMQ, as
``mpc run`` does), reads from each party's report what it received under which receipt, and
what its ledger says it learned, and writes the page. ``tests/protocols/test_views.py``
checks, for every run of its record-swap tests, that each party received nothing the page
does not list, under the kind it states, with the words of the receipt as the code declares
them: the page, the ledgers and the wire cannot drift apart.

    python scripts/leakage_table.py            # writes docs/leakage.md (about a minute)
    python scripts/leakage_table.py --check    # exit 1 if the page is not what it would write
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpc.runtime.view import Receipt  # noqa: E402
from parties.api import RunResult, run_system  # noqa: E402
from protocols.engine.preprocessing import PREPROCESSING  # noqa: E402

PAGE = ROOT / "docs" / "leakage.md"
WEATHER = ROOT / "mpc" / "datasets" / "data" / "weather.csv"


@dataclass(frozen=True)
class Variant:
    """One configuration of a system: its title on the page and its ``run_system`` options;
    ``prepare(folder)`` runs first and returns more options (a model to classify with)."""

    title: str
    system: str
    options: dict[str, Any]
    prepare: Callable[[Path], dict[str, Any]] | None = field(default=None, compare=False)


def _ppid3_model(folder: Path, **options: Any) -> dict[str, Any]:
    run = run_system(
        "ppid3", csv=str(WEATHER), class_column="play",
        partition=options.pop("partition", "outlook,temperature;humidity,windy"),
        model_out=str(folder / "model"), **options,
    )  # fmt: skip
    if not run.ok:
        raise SystemExit(f"training for ppid3-classify failed: {run.error}")
    new = folder / "new.csv"
    new.write_text(
        "outlook,temperature,humidity,windy\nsunny,hot,high,FALSE\nrainy,mild,high,TRUE\n"
    )
    return {"csv": str(new), "model": str(folder / "model"),
            "predictions_out": str(folder / "predictions.csv")}  # fmt: skip


def _hybrid_model(folder: Path) -> dict[str, Any]:
    run = run_system(
        "hybrid-id3", csv=str(WEATHER), class_column="play", test_split=0,
        model_out=str(folder / "model"),
    )  # fmt: skip
    if not run.ok:
        raise SystemExit(f"training for hybrid-id3-classify failed: {run.error}")
    new = folder / "new.csv"
    new.write_text(
        "outlook,temperature,humidity,windy\nsunny,hot,high,FALSE\nrainy,mild,high,TRUE\n"
    )
    return {"csv": str(new), "model": str(folder / "model"),
            "predictions_out": str(folder / "predictions.csv")}  # fmt: skip


def _cdtl_outsourced(folder: Path) -> dict[str, Any]:
    run = run_system(
        "cdtl-outsource", csv=str(WEATHER), class_column="play", sensitive="temperature",
        model_out=str(folder / "model"), cdbs_db=str(folder / "db"),
    )  # fmt: skip
    if not run.ok:
        raise SystemExit(f"cdtl-outsource failed: {run.error}")
    new = folder / "new.csv"
    new.write_text(
        "outlook,temperature,humidity,windy\nsunny,hot,high,FALSE\nrainy,mild,high,TRUE\n"
    )
    return {"csv": str(new), "model": str(folder / "model"), "cdbs_db": str(folder / "db"),
            "predictions_out": str(folder / "predictions.csv")}  # fmt: skip


def _numbers(folder: Path) -> dict[str, Any]:
    """The weather table with numbers for temperature and humidity (the classic numeric
    version's values), for the variants that split numbers at a threshold."""
    temperature = [85, 80, 83, 70, 68, 65, 64, 72, 69, 75, 75, 72, 81, 71]
    humidity = [85, 90, 86, 96, 80, 70, 65, 95, 70, 80, 70, 90, 75, 91]
    lines = WEATHER.read_text().splitlines()
    rows = [line.split(",") for line in lines[1:]]
    table = folder / "weather-numeric.csv"
    table.write_text("\n".join([lines[0]] + [
        ",".join([r[0], str(t), str(h), r[3], r[4]])
        for r, t, h in zip(rows, temperature, humidity, strict=True)
    ]) + "\n")  # fmt: skip
    return {"csv": str(table)}


def _cdtl_outsource_options(folder: Path) -> dict[str, Any]:
    return {"csv": str(WEATHER), "class_column": "play", "sensitive": "temperature",
            "model_out": str(folder / "model"), "cdbs_db": str(folder / "db")}  # fmt: skip


_PPID3 = {
    "csv": str(WEATHER),
    "class_column": "play",
    "partition": "outlook,temperature;humidity,windy",
}
#: every configuration the page shows; ``tests/protocols/test_views.py`` names them by these keys
VARIANTS: dict[str, Variant] = {
    "ppid3-psi": Variant(
        "PPID3, set-intersection counts, held-out records classified (Algorithm 8)",
        "ppid3", {**_PPID3, "counts": "psi", "test_split": 0.3},
    ),
    "ppid3-fast-ot": Variant(
        "PPID3, fast counts, `--helper ot`", "ppid3",
        {**_PPID3, "counts": "fast", "reveal": "counts", "helper": "ot"},
    ),
    "ppid3-fast-dealer": Variant(
        "PPID3, fast counts, `--helper dealer`", "ppid3",
        {**_PPID3, "counts": "fast", "reveal": "counts", "helper": "dealer"},
    ),
    "ppid3-fast-sites": Variant(
        "PPID3, fast counts, `--helper sites` (three sites)", "ppid3",
        {**_PPID3, "partition": "outlook;temperature;humidity,windy", "counts": "fast",
         "reveal": "counts", "helper": "sites"},
    ),
    "ppid3-reveal-tree-dealer": Variant(
        "PPID3 revealing only the tree (`--reveal tree`), `--helper dealer`", "ppid3",
        {**_PPID3, "reveal": "tree", "helper": "dealer"},
    ),
    "ppid3-reveal-tree-sites": Variant(
        "PPID3 revealing only the tree (`--reveal tree`), `--helper sites` (three sites)",
        "ppid3",
        {**_PPID3, "partition": "outlook;temperature;humidity,windy", "reveal": "tree",
         "helper": "sites"},
    ),
    "ppid3-reveal-tree-ot": Variant(
        "PPID3 revealing only the tree (`--reveal tree`), `--helper ot` (two sites, no third "
        "party)",
        "ppid3", {**_PPID3, "reveal": "tree", "helper": "ot"},
    ),
    "ppid3-reveal-tree-shuffles": Variant(
        "PPID3 revealing only the tree, numbers split at every distinct value and counted by "
        "shuffles (`--splits threshold --shuffle-from 0`, three sites)",
        "ppid3",
        {**_PPID3, "partition": "outlook;temperature;humidity,windy", "reveal": "tree",
         "helper": "sites", "splits": "threshold", "shuffle_from": 0}, _numbers,
    ),
    "ppid3-reveal-tree-classify": Variant(
        "PPID3's classification without a path of new records with parts trained with "
        "`--reveal tree` (three sites)",
        "ppid3-classify", {},
        lambda folder: _ppid3_model(folder, reveal="tree", helper="sites",
                                    partition="outlook;temperature;humidity,windy"),
    ),
    "ppid3-classify": Variant(
        "PPID3's classification of new records with saved parts (`ppid3-classify`)",
        "ppid3-classify", {}, lambda folder: _ppid3_model(folder, counts="psi"),
    ),
    "hybrid-id3-dealer": Variant(
        "Hybrid-ID3, commodity-server dot products", "hybrid-id3",
        {"csv": str(WEATHER), "class_column": "play", "test_split": 0},
    ),
    "hybrid-id3-paillier": Variant(
        "Hybrid-ID3, Paillier dot products", "hybrid-id3",
        {"csv": str(WEATHER), "class_column": "play", "test_split": 0,
         "dot_product": "paillier", "max_depth": 1},
    ),
    "hybrid-id3-classify": Variant(
        "Hybrid-ID3's classification of new records (`hybrid-id3-classify`)",
        "hybrid-id3-classify", {}, _hybrid_model,
    ),
    "cdtl-outsource": Variant(
        "cdtl, a first session outsourcing the client's table (`cdtl-outsource`)",
        "cdtl-outsource", {}, _cdtl_outsource_options,
    ),
    "cdtl": Variant(
        "cdtl with the baselines cnl and cdbsl", "cdtl",
        {"dataset": "house-votes-84", "sensitive": "physician-fee-freeze", "cv": 2},
    ),
    "cdbs-load": Variant(
        "Load on one CDBS (`cdbs-load`)", "cdbs-load",
        {"dataset": "house-votes-84", "sensitive": "physician-fee-freeze", "clients": 2,
         "predictions": 5},
    ),
    "cdtl-classify": Variant(
        "cdtl, a later session classifying with the stored table (`cdtl-classify`)",
        "cdtl-classify", {}, _cdtl_outsourced,
    ),
    "secure-sum": Variant("Secure sum", "secure-sum", {"inputs": "5,6,7"}),
    "is-r-empty": Variant("IsREmpty (Algorithm 2)", "is-r-empty", {"flags": "1,0,1"}),
    "psi-ca": Variant("Set-intersection cardinality", "psi-ca", {"random": 20}),
    "psi": Variant(
        "Private set intersection, the record alignment of `--records common` (three sites)",
        "psi", {"random": 20},
    ),
    "dot-product-dealer": Variant(
        "Secure dot products, commodity server", "dot-product", {"n": 50}
    ),
    "dot-product-paillier": Variant(
        "Secure dot products, Paillier", "dot-product", {"n": 20, "method": "paillier"}
    ),
    "secure-argmax": Variant(
        "Secure comparison and argmax on shares, commodity dealer", "secure-argmax",
        {"rows": 20, "candidates": 6, "fractions": True},
    ),
    "secure-argmax-sites": Variant(
        "Secure comparison and argmax on shares, a third site dealing", "secure-argmax",
        {"rows": 20, "candidates": 6, "fractions": True, "helper": "sites"},
    ),
    "secure-argmax-ot": Variant(
        "Secure comparison and argmax on shares, by oblivious transfer", "secure-argmax",
        {"rows": 20, "candidates": 6, "fractions": True, "helper": "ot"},
    ),
}  # fmt: skip


def party_label(variant: str, name: str, run: RunResult) -> str:
    """How the page names a party: its role, for PPID3 the class site apart, for the
    secure argmax each site by its name (two hold shares, the third deals), and for the set
    intersection each site by its place in the chain."""
    report = run.reports[name]
    role = str(report.get("role", name))
    if variant == "psi":
        sites = list(run.reports)
        return (
            "first site"
            if name == sites[0]
            else "last site"
            if name == sites[-1]
            else ("middle site")
        )
    if variant.startswith("secure-argmax") and role == "site":
        return name
    if variant.startswith("ppid3") and role == "site":
        sites = [n for n, r in run.reports.items() if r.get("role") == "site"]
        return "class site" if name == (run.class_site or sites[-1]) else "site"
    return role


def receipts() -> dict[str, Receipt]:
    """Every receipt the code declares at module level, by name."""
    found: dict[str, Receipt] = {}
    for package in ("mpc", "protocols", "parties"):
        base = importlib.import_module(package)
        for info in pkgutil.walk_packages(base.__path__, f"{package}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, Receipt):
                    found.setdefault(value.name, value)
    return found


def received(run: RunResult, variant: str) -> dict[str, dict[str, str]]:
    """label -> receipt -> kind, over every party of the run (runtime messages left out)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for name, report in run.reports.items():
        label = party_label(variant, name, run)
        for line in report.get("received", []):
            if line["receipt"].startswith("runtime/"):
                continue
            out[label][line["receipt"]] = line["kind"]
    return out


def learned(run: RunResult, variant: str) -> dict[str, list[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for name, report in run.reports.items():
        out[party_label(variant, name, run)].update(e["label"] for e in report.get("ledger", []))
    return {k: sorted(v) for k, v in out.items()}


def run_variant(key: str, folder: Path) -> RunResult:
    v = VARIANTS[key]
    options = dict(v.options)
    if v.prepare is not None:
        options.update(v.prepare(folder))
    run = run_system(v.system, timeout=60, **options)
    if not run.ok:
        why = "; ".join(f"{n}: {r.get('error')}" for n, r in run.reports.items() if r.get("error"))
        raise SystemExit(f"{key}: the run failed: {run.error}" + (f" ({why})" if why else ""))
    return run


def trust_lines(run: RunResult) -> list[str]:
    """What a run's privacy rests on (its report's trust) and, with a PPID3 helper, who must
    not collude with whom (the helper's declaration)."""
    out = []
    if run.trust:
        out += [f"**Trust:** {run.trust}.", ""]
    helper = run.result.get("helper") if isinstance(run.result, dict) else None
    if run.system.startswith("ppid3") and helper in PREPROCESSING:
        collusion = PREPROCESSING[helper].collusion
        out += [f"**Who must not collude** (`--helper {helper}`): {collusion}.", ""]
        if run.system == "ppid3-classify" or run.result.get("reveal") == "tree":
            out += [
                "Without a path or with `--reveal tree`, `p0` and `p1` (the first two sites) must "
                "not collude: together they hold every count and every record's path; each "
                "alone, and every other party, receives what they open re-randomised.",
                "",
            ]
    return out


def page(runs: dict[str, RunResult]) -> str:
    known = receipts()
    lines = [
        "# What each party receives",
        "",
        "<!-- written by scripts/leakage_table.py; tests/protocols/test_views.py checks it -->",
        "",
        "Every message a party receives is accounted for under a *receipt* that its code names",
        "(`mpc/runtime/view.py`): **public** (independent of every party's data, or part of the",
        "public result), **uniform** (masked, encrypted, a share or fresh randomness) or",
        "**declared** (leakage the paper names or these pages declare). *Uniform* is judged",
        "beside everything the receiver holds, its own randomness and what it dealt included,",
        "not message by message: a share that is uniform on its own is not uniform beside the",
        "triple its receiver dealt. *Opens* names what the receiver learns when it unmasks a",
        "message with randomness of its own, or adds the shares of one opening: every value",
        "two parties open on shares goes out through one door (`protocols/engine/opening.py`),",
        "re-randomised for any receiver outside the two. A run's report lists, for every party,",
        "each received tag with its receipt, kind, sender and volume (`received`), beside its",
        "*ledger* of learned values.",
        "",
        "The tables below were made by `python scripts/leakage_table.py`, which runs every",
        "system in a small configuration; the record-swap tests "
        "(`tests/protocols/test_views.py`) check",
        "that no party of their runs receives anything not listed here, under another kind, or",
        "with other words than the code's, and the joint-view tests that, with the party's own",
        "randomness fixed and everyone else's fresh, nothing uniform it receives repeats from",
        "run to run or differs between inputs with the same declared output. Each section says",
        "what the run's privacy rests on and, for PPID3, who must not collude with whom. The",
        "runtime's own messages (`hello`, `bye`, `probe`, `status`, `abort`: version, name,",
        "role, state) are left out.",
        "",
    ]
    for key, run in runs.items():
        v = VARIANTS[key]
        lines += [f"## {v.title}", "", f"<!-- variant: {key} -->", "", *trust_lines(run)]
        lines += ["| party | receives | kind | what |", "|---|---|---|---|"]
        got = received(run, key)
        for label in sorted(got):
            for name in sorted(got[label]):
                r = known.get(name)
                what = r.what if r is not None else "?"
                if r is not None and r.opens:
                    what += f" (opens `{r.opens}`)"
                lines.append(f"| {label} | `{name}` | {got[label][name]} | {what} |")
        lines += ["", "Ledgers (values learned by design):", ""]
        for label, labels in sorted(learned(run, key).items()):
            lines.append(f"- {label}: " + (", ".join(f"`{x}`" for x in labels) or "nothing"))
        lines.append("")
    return "\n".join(lines)


def documented(text: str) -> dict[str, dict[str, dict[str, tuple[str, str]]]]:
    """The page read back: variant -> party label -> receipt -> (kind, what)."""
    out: dict[str, dict[str, dict[str, tuple[str, str]]]] = {}
    current: dict[str, dict[str, tuple[str, str]]] | None = None
    for line in text.splitlines():
        if line.startswith("<!-- variant: "):
            current = out.setdefault(line.removeprefix("<!-- variant: ").removesuffix(" -->"), {})
        elif current is not None and line.startswith("| ") and "`" in line:
            label, name, kind, what = (c.strip() for c in line.strip("|").split(" | ", 3))
            current.setdefault(label, {})[name.strip("`")] = (kind, what)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="compare with the page, write nothing")
    p.add_argument("--only", nargs="*", default=None, help="these variants only (with --check)")
    args = p.parse_args(argv)
    keys = list(VARIANTS) if not args.only else args.only
    runs = {}
    with tempfile.TemporaryDirectory(prefix="mpc-leakage-") as tmp:
        for key in keys:
            folder = Path(tmp) / key
            folder.mkdir()
            print(f"[leakage] {key}", file=sys.stderr, flush=True)
            runs[key] = run_variant(key, folder)
    text = page(runs)
    if args.check:
        shown = documented(PAGE.read_text(encoding="utf-8"))
        made = documented(text)
        stale = [k for k in keys if shown.get(k) != made.get(k)]
        for k in stale:
            print(f"{k}: the page differs from this run", file=sys.stderr)
        return 1 if stale else 0
    PAGE.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
