"""What ``mpc run ppid3`` prints: the summary's lines (the mode that ran, the columns, the
cost, what the run trusts, the warnings) and the tree drawn with each node at its site."""

from __future__ import annotations

from typing import Any

import numpy as np

from protocols.engine.preprocessing import PREPROCESSING

__all__ = [
    "TRUST",
    "below_majority",
    "columns_lines",
    "cost_line",
    "mode_line",
    "render_distributed",
    "run_trust",
]

#: the assumption a run makes, by who dealt the correlated randomness (``none``: --counts psi)
TRUST = {"none": "semi-honest sites", **{name: h.trust for name, h in PREPROCESSING.items()}}


def mode_line(result: dict[str, Any]) -> str:
    """Which PPID3 ran, and the flag of the other: only the tree opened (the default) or the
    paper's, whose owners open their counts."""
    if result.get("reveal") == "tree":
        return (
            "mode:      only the tree opened, every count on shares (--reveal tree, the "
            "default); the paper's PPID3, which opens the counts: --counts psi"
        )
    how = "set-intersection cardinality" if result.get("counts") == "psi" else "secret sharing"
    return (
        f"mode:      the paper's PPID3: counts by {how}, opened to their owners "
        f"(--reveal counts --counts {result.get('counts', 'psi')}); only the tree opened: "
        "--reveal tree"
    )


def run_trust(helper: str | None, reveal: str, sites: list[str], test: bool) -> str:
    """What a run rests on, phase by phase: the training's helper (none with set
    intersections), and with ``reveal = "tree"`` the pair that computes on shares and the
    helper of the test records' classification (Algorithm 8, in the paper's mode, needs
    none)."""
    text = TRUST[helper or "none"]
    if reveal == "tree":
        text += f"; p0 and p1 ({sites[0]}, {sites[1]}) do not collude"
        if test:
            text += f"; test records classified without a path, randomness from {helper} too"
    return text


def below_majority(result: dict[str, Any]) -> list[str]:
    """A warning when the held-out accuracy is below always predicting the majority class."""
    test = (result.get("accuracy") or {}).get("test")
    majority = result.get("majority")
    if not isinstance(test, float) or majority is None or test >= majority["share"]:
        return []
    return [
        f"warning:   the held-out accuracy {test:.4f} is below {majority['share']:.4f}, that "
        f"of predicting {majority['class']!r} for every record: the tree does not generalise "
        "(a column with nearly one value per record? see the warnings above)"
    ]


def columns_lines(result: dict[str, Any]) -> list[str]:
    """Each site's columns as it read them: kind, and the cut points of a binned one."""
    lines = []
    for name, cols in result.get("columns", {}).items():
        described = [
            f"{c['name']} ({c['kind']}"
            + (
                f", bins at {', '.join(_short_number(x) for x in c['bins'])})"
                if c.get("bins")
                else ")"
            )
            for c in cols
        ]
        lines.append(f"columns:   {name}: " + "; ".join(described))
    records = result.get("records") or {}
    if any(r["used"] != r["held"] for r in records.values()):
        lines.append("records:   " + "; ".join(
            f"{n}: {r['used']} of its {r['held']} used" for n, r in records.items()
        ) + " (the records every site holds)")  # fmt: skip
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


def cost_line(result: dict[str, Any]) -> str:
    cost = result["cost"]
    if result.get("counts") == "fast":
        dealt = f" ({PREPROCESSING[str(result['helper'])].describe(cost)})"
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
            shown = f" ({counts})" if counts else ""  # --reveal tree: no count is known
            out.append(f"{prefix}{head}[{names[class_site]}] class {node['class']}{shown}")
            return
        out.append(f"{prefix}{head}[{names[node['site']]}] {node['attribute']}")
        for value, child in node["children"].items():
            edge = f"{value} {node['threshold']:g}" if "threshold" in node else f"= {value}"
            visit(child, prefix + "    ", f"{edge}: ")

    visit(tree, "", "")
    return out
