#!/usr/bin/env python3
"""How often the fixed-point ID3 tree differs from the float one, and why, on every dataset of
the data directory (``mpc.learners.criteria``).

For each dataset, plain ID3 is grown with ``criterion="entropy"`` (the papers' gain in floating
point) and ``criterion="entropy-fixed"`` (the same gain with a fixed-point ``n log n``, the one
a learner that keeps the counts on shares computes), full trees, continuous columns in
``--bins`` equal-frequency bins. The two trees are walked together from the root; at every
node where they split on different attributes, the report gives both attributes' float gains:
their gap is within the approximation's reach (``4 ε``, ``ε`` the fixed-point log's largest
error) when the two are a near-tie that the approximation can turn. The gini tree's size is
given beside them (MPyC's criterion).

    python scripts/criteria_report.py                    # every dataset, into results/criteria
    python scripts/criteria_report.py --quick            # weather and car, a scratch folder

It writes ``criteria.json`` (every dataset, every differing node) and ``criteria.md`` (the
table of docs/datasets.md) into ``--out`` (default ``results/criteria``; ``--quick`` and
``--datasets`` write to a scratch folder unless ``--out`` says where, so that a partial run
never replaces the committed results).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpc.datasets import available_datasets, resolve_data_dir  # noqa: E402
from mpc.datasets.uci import load_dataset  # noqa: E402
from mpc.learners.criteria import NLOGN_ERROR_BITS, information_gain  # noqa: E402
from mpc.learners.id3 import ID3Classifier  # noqa: E402
from mpc.learners.tree import Node, Split, depth, node_count  # noqa: E402

QUICK = ("weather", "car")


def differing_nodes(
    model: ID3Classifier, a: Node, b: Node, table: Any, rows: np.ndarray, path: list[str]
) -> list[dict[str, Any]]:
    target = np.asarray(table.target, dtype=str)
    columns = {n: np.asarray(table.column(n), dtype=str) for n in table.attributes}
    return _walk(model, a, b, columns, target, rows, path)


def _walk(
    model: ID3Classifier, a: Node, b: Node, columns: dict[str, np.ndarray], target: np.ndarray,
    rows: np.ndarray, path: list[str],
) -> list[dict[str, Any]]:  # fmt: skip
    """The nodes, walking ``a`` and ``b`` together, where they split differently: the path,
    both attributes, their float gains on the node's rows and the gap."""
    if not isinstance(a, Split) or not isinstance(b, Split):
        if isinstance(a, Split) != isinstance(b, Split):
            return [{"path": " / ".join(path) or "root", "entropy": getattr(a, "attribute", None),
                     "entropy_fixed": getattr(b, "attribute", None), "gap": None}]  # fmt: skip
        return []
    if a.attribute != b.attribute:
        gains = {}
        for attribute in (a.attribute, b.attribute):
            column = columns[attribute][rows]
            values = sorted(set(column.tolist()))
            joint = np.array(
                [[int(((column == v) & (target[rows] == c)).sum()) for c in model.classes_]
                 for v in values]
            )  # fmt: skip
            gains[attribute] = information_gain(joint)
        return [{
            "path": " / ".join(path) or "root",
            "rows": len(rows),
            "entropy": a.attribute,
            "entropy_fixed": b.attribute,
            "gain_entropy": gains[a.attribute],
            "gain_entropy_fixed": gains[b.attribute],
            "gap": gains[a.attribute] - gains[b.attribute],
        }]  # fmt: skip
    out = []
    column = columns[a.attribute]
    for value, child in a.children.items():
        other = b.children.get(value)
        if other is None:
            continue
        out += _walk(model, child, other, columns, target, rows[column[rows] == value],
                     [*path, f"{a.attribute}={value}"])  # fmt: skip
    return out


def report(name: str, data_dir: Path | None, bins: int) -> dict[str, Any]:
    table, extra = load_dataset(name, data_dir)
    if extra is not None:
        table = table.concat(extra)
    trees, seconds = {}, {}
    models = {}
    for crit in ("entropy", "entropy-fixed", "gini"):
        started = time.perf_counter()
        models[crit] = ID3Classifier(criterion=crit, bins=bins).fit(table)
        seconds[crit] = time.perf_counter() - started
        trees[crit] = models[crit].tree_
    model = models["entropy"]
    binned = model._transform(table)  # the rows as the trees read them
    diffs = differing_nodes(model, trees["entropy"], trees["entropy-fixed"], binned,
                            np.arange(binned.n_rows), [])  # fmt: skip
    return {
        "dataset": name,
        "rows": table.n_rows,
        "nodes": {c: node_count(t) for c, t in trees.items()},
        "depth": {c: depth(t) for c, t in trees.items()},
        "identical": not diffs,
        "differing_nodes": diffs,
        "fit_s": {c: round(s, 3) for c, s in seconds.items()},
    }


def render(doc: dict[str, Any]) -> str:
    reach = 4 * doc["error_bits"]
    lines = [
        f"Full ID3 trees, continuous columns in {doc['bins']} equal-frequency bins "
        f"({doc['machine']}, {doc['date']}; deterministic, one run). A differing node is one "
        "where the two trees, walked together from the root, split on different attributes; "
        f"its gap is the two attributes' float gain difference there (4ε = {reach:.1e} bits).",
        "",
        "| dataset | rows | nodes: entropy | entropy-fixed | gini | identical | differing "
        "nodes: gaps |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for r in doc["datasets"]:
        gaps = [abs(d["gap"]) for d in r["differing_nodes"] if d.get("gap") is not None]
        ties = sum(1 for g in gaps if g < 1e-12)
        where = "—" if not r["differing_nodes"] else (
            f"{len(r['differing_nodes'])}: {ties} exact ties, {len(gaps) - ties} near-ties "
            f"(largest gap {max(gaps):.1e} bits"
            + (", all within 4ε)" if all(g <= reach for g in gaps) else ")")
        )  # fmt: skip
        n = r["nodes"]
        lines.append(
            f"| {r['dataset']} | {r['rows']:,} | {n['entropy']:,} | {n['entropy-fixed']:,} | "
            f"{n['gini']:,} | {'yes' if r['identical'] else 'no'} | {where} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--data-dir", default=None, help="where the UCI datasets are")
    p.add_argument("--datasets", default=None, help="comma-separated names (default: all)")
    p.add_argument("--bins", type=int, default=4, help="bins per continuous column (4)")
    p.add_argument("--out", type=Path, default=None, help="folder for criteria.json and .md")
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    p.add_argument("--render", type=Path, default=None, help="print the table of a criteria.json")
    args = p.parse_args(argv)
    if args.render is not None:
        print(render(json.loads(args.render.read_text())), end="")
        return 0
    data_dir = resolve_data_dir(args.data_dir)
    names = (
        args.datasets.split(",") if args.datasets
        else list(QUICK) if args.quick
        else [d.name for d in available_datasets(data_dir)]
    )  # fmt: skip
    partial = args.quick or args.datasets is not None  # never over the committed results
    out = args.out or (
        Path(tempfile.mkdtemp(prefix="criteria-")) if partial else ROOT / "results" / "criteria"
    )
    out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "bins": args.bins,
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "error_bits": NLOGN_ERROR_BITS,
        "datasets": [],
    }
    for name in names:
        started = time.perf_counter()
        r = report(name, data_dir, args.bins)
        doc["datasets"].append(r)
        print(f"{name:<16} nodes {r['nodes']['entropy']:>5} / {r['nodes']['entropy-fixed']:>5} "
              f"(gini {r['nodes']['gini']}), identical: {r['identical']} "
              f"({time.perf_counter() - started:.1f} s)", flush=True)  # fmt: skip
    (out / "criteria.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "criteria.md").write_text(render(doc))
    print(f"wrote {out / 'criteria.json'} and {out / 'criteria.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
