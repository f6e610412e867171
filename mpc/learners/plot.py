"""Pictures of trees: a tree drawn to an SVG or PNG file with matplotlib.

For example::

    from mpc.learners.plot import plot_tree
    plot_tree(model.tree_, "tree.svg", title="weather, ID3")
    plot_tree(result.tree, "ppid3.png", sites=["site1", "site2", "site3"], class_site="site3")

Every interior node is a box with its attribute, coloured by the site that owns it (its
``site`` index into ``sites``; a plain tree has one owner, the table), with one legend entry
per site; every leaf shows its class and its class counts; every edge its test (``= value``,
``<= threshold``, ``!= value``). A tree of more than ``max_nodes`` nodes is drawn to the
deepest level that keeps it within ``max_nodes``; an interior node cut there is drawn with
its class counts and the number of nodes below it, and the picture says how many nodes were
left out. The file is written as every output of a run is (:mod:`mpc.runtime.files`):
mode 0600, missing parent folders made.

matplotlib is an optional dependency (the ``experiments`` extra): :func:`require_matplotlib`
says so in one line, before any work, where it is missing, with the command that installs it
here (:func:`install_hint`). The
drawing uses matplotlib's object interface (no pyplot, no global state), so it is safe in any
program.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpc.errors import ConfigError
from mpc.learners.tree import Leaf, Node, Split, from_json, node_count
from mpc.runtime.files import write_private

__all__ = [
    "FORMATS",
    "PlotInfo",
    "check_plot_path",
    "install_hint",
    "plot_tree",
    "require_matplotlib",
]

#: the file formats a picture can have, by suffix
FORMATS = (".svg", ".png")
#: the matplotlib that the ``experiments`` extra pins
MATPLOTLIB = "matplotlib>=3.8"

#: colours of the sites (matplotlib's tab10, light enough for black text)
_SITE_COLOURS = (
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#c7c7c7",
)  # fmt: skip
_LEAF_COLOUR = "#ffffff"
_CUT_COLOUR = "#eeeeee"


def install_hint(root: Path | None = None) -> str:
    """The command that installs matplotlib for this installation: run from a source checkout
    (``root``, default: the folder above this package, holding ``pyproject.toml``), the
    checkout's own ``experiments`` extra; installed from a wheel, matplotlib itself (the
    project is not on a package index, so ``pip install 'mpc-trees[experiments]'`` would not
    find it)."""
    root = Path(__file__).resolve().parents[2] if root is None else root
    if (root / "pyproject.toml").is_file() and (root / "mpc" / "learners").is_dir():
        return f"python -m pip install -e '{root}[experiments]'"
    return f"python -m pip install '{MATPLOTLIB}'"


def require_matplotlib(what: str = "drawing a tree") -> None:
    """Raise :class:`~mpc.errors.ConfigError` (one line: what needs it, how to install it)
    when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError(
            f"{what} needs matplotlib, which is not installed: {install_hint()}"
        ) from None


def check_plot_path(path: str | Path, option: str = "--plot") -> Path:
    """``path`` if its suffix is one of :data:`FORMATS`, else a
    :class:`~mpc.errors.ConfigError` naming ``option``."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ConfigError(
            f"{option} {path}: expected a file ending in {' or '.join(FORMATS)}, "
            f"got {path.suffix or 'no suffix'}"
        )
    return path


@dataclass(frozen=True)
class PlotInfo:
    """What :func:`plot_tree` drew: the file, the nodes drawn and left out, the owners."""

    path: Path
    nodes: int
    drawn: int
    left_out: int
    depth_drawn: int
    owners: tuple[str, ...]


@dataclass
class _Box:
    node: Node
    depth: int
    x: float = 0.0
    children: list[tuple[str, _Box]] | None = None
    hidden: int = 0  # nodes below a node cut at the depth limit


def _edge_label(node: Split, key: str) -> str:
    if node.kind == "threshold":
        return f"{key} {node.threshold:g}"
    if node.kind == "binary":
        return f"{'=' if key == '==' else '!='} {node.value}"
    return f"= {key}"


def _wrap(text: str, width: int = 16) -> str:
    """A long name on a few lines (broken at hyphens and spaces where it can be)."""
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=True)) or text


def _fmt(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else f"{n:.1f}"


def _counts(counts: Mapping[str, float]) -> str:
    """The non-zero class counts, one to a line (``no rows`` for none)."""
    shown = [f"{c}: {_fmt(n)}" for c, n in sorted(counts.items()) if n]
    if not shown:
        return "no rows"
    return "\n".join(shown)


def _depth_limit(tree: Node, max_nodes: int) -> int:
    """The deepest level such that the nodes down to it are at most ``max_nodes`` (at least
    the root and its children are drawn)."""
    per_level: list[int] = []
    level = [tree]
    while level:
        per_level.append(len(level))
        level = [c for n in level if isinstance(n, Split) for c in n.children.values()]
    total, limit = 0, 0
    for d, n in enumerate(per_level):
        total += n
        if total > max_nodes and d > 1:
            break
        limit = d
    return limit


def _layout(tree: Node, limit: int) -> tuple[_Box, int]:
    """Boxes down to depth ``limit``: leaves (and cut nodes) at consecutive x, a parent
    centred over its children; the number of columns used."""
    column = [0]

    def place(node: Node, depth: int) -> _Box:
        box = _Box(node, depth)
        if isinstance(node, Split) and depth < limit:
            box.children = [(k, place(c, depth + 1)) for k, c in node.children.items()]
            box.x = (box.children[0][1].x + box.children[-1][1].x) / 2
        else:
            if isinstance(node, Split):
                box.hidden = node_count(node) - 1
            box.x = column[0]
            column[0] += 1
        return box

    return place(tree, 0), column[0]


def _boxes_and_owners(
    top: _Box, sites: Sequence[str] | None
) -> tuple[list[_Box], dict[int | None, str]]:
    """Every box below ``top`` and the name of each site that owns a drawn interior node."""
    owners: dict[int | None, str] = {}
    boxes: list[_Box] = []
    stack = [top]
    while stack:
        box = stack.pop()
        boxes.append(box)
        if isinstance(box.node, Split) and box.node.site not in owners:
            i = box.node.site
            owners[i] = (
                "one table (plain learner)"
                if i is None
                else sites[i]
                if sites is not None and 0 <= i < len(sites)
                else f"site {i + 1}"
            )
        stack += [c for _, c in box.children or []]
    return boxes, owners


def plot_tree(
    tree: Node | Mapping[str, Any],
    path: str | Path,
    *,
    sites: Sequence[str] | None = None,
    class_site: str | None = None,
    title: str | None = None,
    max_nodes: int = 50,
) -> PlotInfo:
    """Draw ``tree`` (a :mod:`mpc.learners.tree` node, or its JSON) to ``path`` (``.svg`` or
    ``.png``); see the module docstring. ``sites`` names the owner of each ``site`` index
    (default ``site 1``, ``site 2``, ...); ``class_site`` is named in the leaves' legend
    entry. Returns what was drawn."""
    require_matplotlib()
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    path = check_plot_path(path, "path")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise ConfigError(f"max_nodes must be an int >= 1, got {max_nodes!r}")
    root = tree if isinstance(tree, Leaf | Split) else from_json(tree)
    total = node_count(root)
    limit = _depth_limit(root, max_nodes)
    top, columns = _layout(root, limit)

    boxes, owners = _boxes_and_owners(top, sites)
    order = sorted(owners, key=lambda i: -1 if i is None else i)
    colour = {i: _SITE_COLOURS[n % len(_SITE_COLOURS)] for n, i in enumerate(order)}

    levels = max(b.depth for b in boxes) + 1
    width = min(max(6.0, 1.5 * columns), 60.0)
    height = 1.5 + 1.6 * levels
    fig = Figure(figsize=(width, height))
    ax = fig.subplots()
    ax.set_xlim(-0.7, columns - 0.3)
    ax.set_ylim(-(levels - 1) - 0.6, 0.5)
    ax.axis("off")
    font = 8 if columns > 12 else 9
    for box in boxes:
        y = -box.depth
        node = box.node
        if box.children is not None:
            assert isinstance(node, Split)
            for key, child in box.children:
                ax.plot([box.x, child.x], [y - 0.12, -child.depth + 0.16], color="#555555",
                        linewidth=0.8, zorder=1)  # fmt: skip
                ax.text((box.x + child.x) / 2, (y - child.depth) / 2, _wrap(_edge_label(node, key)),
                        fontsize=font - 1, ha="center", va="center", zorder=2,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white",
                              "ec": "none"})  # fmt: skip
            text, face = _wrap(node.attribute), colour[node.site]
        elif isinstance(node, Split):  # cut at the depth limit
            text = f"{_wrap(node.attribute)}\n{_counts(node.counts)}\n+{box.hidden} nodes below"
            face = colour[node.site]
        else:
            text, face = f"{node.label}\n{_counts(node.counts)}", _LEAF_COLOUR
        ax.text(box.x, y, text, fontsize=font, ha="center", va="center", zorder=3,
                bbox={"boxstyle": "round,pad=0.35", "fc": face, "ec": "#333333",
                      "ls": "--" if box.hidden else "-"})  # fmt: skip
    handles = [Patch(facecolor=colour[i], edgecolor="#333333", label=owners[i]) for i in order]
    leaf_label = "leaf: class (class counts)" + (f", at {class_site}" if class_site else "")
    handles.append(Patch(facecolor=_LEAF_COLOUR, edgecolor="#333333", label=leaf_label))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=font,
              ncol=min(len(handles), 4), frameon=False, title="interior nodes by owner",
              title_fontsize=font)  # fmt: skip
    drawn = len(boxes)
    left_out = total - drawn
    heading = title or ""
    if left_out:
        note = f"{drawn} of {total} nodes drawn (to depth {limit}); {left_out} nodes left out"
        heading = f"{heading}\n{note}" if heading else note
    if heading:
        ax.set_title(heading, fontsize=font + 1)
    fig.tight_layout()
    fmt = path.suffix.lower()[1:]
    # text stays text in an SVG (searchable, small); no date, so a picture is reproducible
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mpc-trees"}):
        fig.savefig(buffer, format=fmt, metadata=metadata)
    # the tree is what its owners learned: a private file, like every other output of a run
    write_private(path, buffer.getvalue())
    return PlotInfo(
        path=path,
        nodes=total,
        drawn=drawn,
        left_out=left_out,
        depth_drawn=limit,
        owners=tuple(owners[i] for i in order),
    )
