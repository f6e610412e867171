"""The layers: imports run one way, never in a circle, and no private name crosses modules.

The framework's packages, bottom to top::

    mpc.errors
    mpc.runtime   mpc.crypto   mpc.datasets      (each imports only mpc.errors and itself)
    mpc.learners                                 (+ mpc.datasets, mpc.runtime)
    mpc.deployment                               (+ mpc.runtime: files, launcher, netlab)
    protocols                                    (+ anything in mpc but mpc.deployment)
    parties                                      (+ protocols; the systems and party programs)
    parties.cli                                  (the ``mpc`` command: may import anything)

``mpc/__init__.py`` (the public surface) imports from mpc's own packages only, and
``mpc/__main__.py`` (``python -m mpc``) only hands over to :mod:`parties.cli`. Every import
counts, function-level ones too: an import put inside a function to dodge a cycle is still
an edge of the graph.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mpc", "protocols", "parties")

#: mpc's own packages, which every layer above mpc may use
MPC = {
    "mpc", "mpc.errors", "mpc.runtime", "mpc.crypto", "mpc.datasets", "mpc.learners",
    "mpc.deployment",
}  # fmt: skip

#: what each group may import, besides itself (a group is the longest prefix listed here)
ALLOWED: dict[str, set[str]] = {
    "mpc.errors": set(),
    "mpc.runtime": {"mpc.errors"},
    "mpc.crypto": {"mpc.errors"},
    "mpc.datasets": {"mpc.errors"},
    "mpc.learners": {"mpc.errors", "mpc.datasets", "mpc.runtime"},
    "mpc.deployment": {"mpc.errors", "mpc.runtime"},
    "mpc": MPC - {"mpc"},
    "mpc.__main__": {"parties.cli"},
    "protocols": MPC - {"mpc", "mpc.deployment"},
    "parties": MPC | {"protocols"},
    "parties.cli": MPC | {"protocols", "parties"},
}


def _modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for top in PACKAGES:
        for f in sorted((root / top).rglob("*.py")):
            name = ".".join(f.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            found[name] = f
    return found


def _group(module: str) -> str:
    """The longest prefix of ``module`` that :data:`ALLOWED` lists."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in ALLOWED:
            return prefix
    raise AssertionError(f"{module} belongs to no layer; add its package to ALLOWED")


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import of the file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((a.name, [], node.lineno) for a in node.names)
    return found


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The project module ``target`` names (``mpc.runtime.party`` for ``mpc.runtime.party``,
    the package for a name imported from it), or None for a module outside the project."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def _edges(modules: dict[str, Path]) -> dict[str, set[tuple[str, int]]]:
    edges: dict[str, set[tuple[str, int]]] = {m: set() for m in modules}
    for m, path in modules.items():
        for target, names, line in _imports(path):
            if target.split(".")[0] not in PACKAGES:
                continue
            # ``from mpc.runtime import party`` imports the module mpc.runtime.party
            for t in [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]:
                resolved = _resolve(t, modules)
                if resolved is not None and resolved != m:
                    edges[m].add((resolved, line))
    return edges


def upward_imports(root: Path = ROOT) -> list[str]:
    """Every import that leaves its layer for one it may not use, as ``file:line: a -> b``."""
    modules = _modules(root)
    bad = []
    for m, targets in _edges(modules).items():
        mine = _group(m)
        for t, line in sorted(targets):
            theirs = _group(t)
            if theirs != mine and theirs not in ALLOWED[mine]:
                rel = modules[m].relative_to(root)
                bad.append(f"{rel}:{line}: {m} ({mine}) -> {t} ({theirs})")
    return bad


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    graph = {m: {t for t, _ in ts} for m, ts in _edges(_modules(root)).items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def private_imports(root: Path = ROOT) -> list[str]:
    """Every ``from X import _name`` where X is another module of the project."""
    bad = []
    for m, path in _modules(root).items():
        for target, names, line in _imports(path):
            if target.split(".")[0] not in PACKAGES or target == m:
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{path.relative_to(root)}:{line}: {n} from {target}")
    return bad


def test_imports_run_down_the_layers() -> None:
    assert upward_imports() == []


def test_no_import_cycles() -> None:
    assert import_cycles() == []


def test_no_private_name_crosses_modules() -> None:
    assert private_imports() == []


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for top in PACKAGES:
        (root / top).mkdir(exist_ok=True)
    return root


@pytest.mark.parametrize(
    ("files", "check", "expected"),
    [
        # the runtime reaching up to a protocol, even from inside a function
        (
            {
                "mpc/runtime/party.py": "def f():\n    from protocols.secure_sum import s\n",
                "protocols/secure_sum.py": "s = 1\n",
            },
            upward_imports,
            ["mpc/runtime/party.py:2: mpc.runtime.party (mpc.runtime) -> protocols.secure_sum "
             "(protocols)"],
        ),
        # two systems importing each other
        (
            {
                "parties/a_system.py": "import parties.b_system\n",
                "parties/b_system.py": "from parties.a_system import x\n",
            },
            import_cycles,
            [["parties.a_system", "parties.b_system"]],
        ),
        # a private helper borrowed from a neighbour
        (
            {
                "protocols/dot_product.py": "def _pack(): pass\n",
                "protocols/fast_counts.py": "from protocols.dot_product import _pack\n",
            },
            private_imports,
            ["protocols/fast_counts.py:1: _pack from protocols.dot_product"],
        ),
    ],
    ids=["upward", "cycle", "private"],
)  # fmt: skip
def test_the_checks_catch_what_they_are_for(
    tmp_path: Path, files: dict[str, str], check: object, expected: list[object]
) -> None:
    """Each check finds its defect in a small tree made to have it (so a check that finds
    nothing in the project is a check that works, not one that cannot fail)."""
    root = _write(tmp_path, files)
    assert callable(check)
    assert check(root) == expected


def test_the_party_package_loads_no_numpy_before_its_main() -> None:
    """``python -m parties`` runs ``parties/__init__`` first; ``parties/__main__`` then sets
    one BLAS thread per party, which works only if numpy has not been loaded yet (several
    parties' spinning OpenBLAS threads on one host made every product many times slower)."""
    code = "import sys, parties; print('numpy' in sys.modules); parties.run_system"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert out.stdout.split() == ["False"]
