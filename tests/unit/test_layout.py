"""The layers: imports run one way, never in a circle, and no private name crosses modules.

The framework's packages, bottom to top::

    mpc.errors
    mpc.runtime   mpc.crypto   mpc.datasets      (each imports only mpc.errors and itself)
    mpc.learners                                 (+ mpc.datasets, mpc.runtime, mpc.crypto)
    mpc.deployment                               (+ mpc.runtime: files, launcher, netlab)
    protocols                                    (+ anything in mpc but mpc.deployment)
    parties                                      (+ protocols; the systems and party programs)
    parties.cli                                  (the ``mpc`` command: may import anything)
    parties.command                              (its entry point: the zygote, then parties.cli)

``mpc/__init__.py`` (the public surface) imports from mpc's own packages only, and
``mpc/__main__.py`` (``python -m mpc``) only hands over to :mod:`parties.command`. Every import
counts, function-level ones too: an import put inside a function to dodge a cycle is still
an edge of the graph.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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
    "mpc.learners": {"mpc.errors", "mpc.datasets", "mpc.runtime", "mpc.crypto"},
    "mpc.deployment": {"mpc.errors", "mpc.runtime"},
    "mpc": MPC - {"mpc"},
    "mpc.__main__": {"parties.command"},
    "protocols": MPC - {"mpc", "mpc.deployment"},
    "parties": MPC | {"protocols"},
    "parties.cli": MPC | {"protocols", "parties"},
    "parties.command": {"parties", "parties.cli"},
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


# ------------------------------------------------------------------ sizes, private names, imports

#: the places of code outside the tests, which the size and import rules cover
SOURCES = ("mpc", "protocols", "parties", "scripts")
#: a file and a function may be at most this long (lines)
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100
#: third-party packages a function may import where it needs them: the optional extras
#: (pyproject's ``experiments``, ``test`` and ``docs``), which an installation may lack
OPTIONAL = frozenset({"matplotlib", "scipy", "sklearn", "pandas", "yaml"})


def _sources(root: Path = ROOT) -> list[Path]:
    return [
        f for top in SOURCES if (root / top).is_dir() for f in sorted((root / top).rglob("*.py"))
    ]


def long_files(root: Path = ROOT) -> list[str]:
    """Every source file over :data:`MAX_FILE_LINES` lines."""
    out = []
    for f in _sources(root):
        n = len(f.read_text(encoding="utf-8").splitlines())
        if n > MAX_FILE_LINES:
            out.append(f"{f.relative_to(root)}: {n} lines")
    return out


def long_functions(root: Path = ROOT) -> list[str]:
    """Every function (or method) over :data:`MAX_FUNCTION_LINES` lines."""
    out = []
    for f in _sources(root):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out.append(f"{f.relative_to(root)}:{node.lineno} {node.name}: {n} lines")
    return out


def _defined_private_names(root: Path) -> set[str]:
    """Every private name the project itself defines: functions, classes, assignments at any
    level, attributes it sets (``self._x = ...``), parameters."""
    names: set[str] = set()
    for f in [*_sources(root), *sorted((root / "tests").glob("*.py"))]:
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[0])
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value.startswith("_") and node.value.isidentifier()):  # fmt: skip
                names.add(node.value)  # __slots__ entries, getattr names
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


#: underscored names that their library documents as public: ``os._exit`` (how a forked
#: child leaves without running its parent's cleanup)
PUBLIC = frozenset({"_exit"})


def private_library_names(root: Path = ROOT) -> list[str]:
    """Every use of another library's private name in the project's sources: ``from lib
    import _x``, or an attribute ``._x`` that the project never defines (so it belongs to
    a library: argparse's ``parser._actions``, say)."""
    ours = _defined_private_names(root)
    out = []
    for f in _sources(root):
        rel = f.relative_to(root)
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] in PACKAGES:
                    continue
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        out.append(f"{rel}:{node.lineno}: {a.name} from {node.module}")
            elif isinstance(node, ast.Attribute):
                name = node.attr
                if name.startswith("_") and not name.startswith("__") and name not in ours | PUBLIC:
                    out.append(f"{rel}:{node.lineno}: .{name}")
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _nested_imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """The imports inside a function or class, with the name of the outermost one."""
    found = []

    def visit(node: ast.AST, owner: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            inner = owner
            if owner is None and isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef
                                             | ast.ClassDef):  # fmt: skip
                inner = child.name
            if isinstance(child, ast.Import | ast.ImportFrom) and owner is not None:
                found.append((child, owner))
            visit(child, inner)

    visit(tree, None)
    return found


def function_level_imports(root: Path = ROOT) -> list[str]:
    """Every import inside a function or class that has no reason to be there: an import of
    the project's own module that, made at the top, would close no import cycle; or of a
    library that is not an optional extra (:data:`OPTIONAL`). A module's ``__getattr__``
    (PEP 562: names loaded on first use) is the one place such an import may stand."""
    modules = _modules(root)
    top: dict[str, set[str]] = {m: set() for m in modules}
    for m, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                top[m] |= _targets(node, m, modules)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            x = todo.pop()
            if x == goal:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(top.get(x, ()))
        return False

    out = []
    for f in _sources(root):
        rel = f.relative_to(root)
        name = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        for node, owner in _nested_imports(ast.parse(f.read_text(encoding="utf-8"))):
            if owner == "__getattr__":
                continue
            targets = _targets(node, name, modules)
            if targets:
                if name in modules and any(reaches(t, name) for t in targets):
                    continue  # at the top it would close a cycle
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)} (in {owner}; "
                           "import it at the top)")  # fmt: skip
                continue
            roots = {a.name.split(".")[0] for a in node.names} if isinstance(node, ast.Import) \
                else {str(node.module).split(".")[0]}  # fmt: skip
            if not roots <= OPTIONAL:
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)} (in {owner}; "
                           "import it at the top)")  # fmt: skip
    return out


def _targets(node: ast.Import | ast.ImportFrom, me: str, modules: dict[str, Path]) -> set[str]:
    """The project modules an import statement loads (empty for a library's)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.module and node.level == 0:
        names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                 else node.module for a in node.names]  # fmt: skip
    else:
        return set()
    out = set()
    for n in names:
        if n.split(".")[0] not in PACKAGES:
            continue
        resolved = _resolve(n, modules)
        if resolved is not None and resolved != me:
            out.add(resolved)
    return out


def test_no_file_and_no_function_is_too_long() -> None:
    assert long_files() == []
    assert long_functions() == []


def test_no_private_name_of_another_library() -> None:
    assert private_library_names() == []


def test_no_function_level_import_without_a_reason() -> None:
    assert function_level_imports() == []


@pytest.mark.parametrize(
    ("files", "check", "expected"),
    [
        # a function that imports a module it could import at the top
        (
            {"parties/a.py": "def f():\n    from parties.b import x\n",
             "parties/b.py": "x = 1\n"},
            function_level_imports,
            ["parties/a.py:2: from parties.b import x (in f; import it at the top)"],
        ),
        # the same import, where at the top it would close a cycle: allowed
        (
            {"parties/a.py": "def f():\n    from parties.b import x\n",
             "parties/b.py": "import parties.a\nx = 1\n"},
            function_level_imports,
            [],
        ),
        # the standard library inside a function; an optional extra is fine there
        (
            {"scripts/s.py": "def f():\n    import json\n    import matplotlib\n"},
            function_level_imports,
            ["scripts/s.py:2: import json (in f; import it at the top)"],
        ),
        # argparse's private list of actions
        (
            {"parties/cli.py": "import argparse\np = argparse.ArgumentParser()\n"
                               "print(p._actions, argparse._SubParsersAction)\n"},
            private_library_names,
            ["parties/cli.py:3: ._actions", "parties/cli.py:3: ._SubParsersAction"],
        ),
        # a file and a function too long
        (
            {"protocols/big.py": "def f():\n" + "    x = 1\n" * 100},
            long_functions,
            ["protocols/big.py:1 f: 101 lines"],
        ),
    ],
    ids=["import-no-cycle", "import-closes-cycle", "stdlib-in-function", "private-attr", "long"],
)  # fmt: skip
def test_the_new_checks_catch_what_they_are_for(
    tmp_path: Path, files: dict[str, str], check: object, expected: list[object]
) -> None:
    root = _write(tmp_path, files)
    assert callable(check)
    assert check(root) == expected


#: the test files that may name the ``shared/datasets`` folder beside the clone: the test of
#: the package's default data directory, which is that folder
SHARED_ALLOWED = {"tests/unit/test_datasets.py"}


def _beside_the_clone(node: ast.AST) -> bool:
    """Whether ``node`` is a path to ``shared/`` beside the clone: ``X.parent / "shared"``,
    ``X.parents[n] / "shared"``, or ``Path("../shared...")``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        right, left = node.right, node.left
        if isinstance(right, ast.Constant) and right.value == "shared":
            return (isinstance(left, ast.Attribute) and left.attr == "parent") or (
                isinstance(left, ast.Subscript)
                and isinstance(left.value, ast.Attribute)
                and left.value.attr == "parents"
            )
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Path" and node.args:
        first = node.args[0]
        return isinstance(first, ast.Constant) and str(first.value).startswith("../shared")
    return False


def tests_reading_shared(root: Path = ROOT) -> list[str]:
    """Every line of a test that reaches the ``shared/`` folder beside the clone by a path
    of its own: a stranger's clone has none. Tests find datasets through
    :mod:`tests.datasets`."""
    out = []
    for f in sorted((root / "tests").rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel in SHARED_ALLOWED:
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if _beside_the_clone(node):
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_test_reads_the_folder_beside_the_clone_by_path() -> None:
    assert tests_reading_shared() == []


def test_the_shared_check_sees_a_path_to_the_folder_beside_the_clone(tmp_path: Path) -> None:
    root = _write(tmp_path, {
        "tests/test_x.py": 'DATA = ROOT.parent / "shared" / "datasets"\n'
                           'OK = tmp_path / "shared"\n',
        "tests/test_y.py": 'p = Path("../shared/datasets/car")\n'
                           'q = Path(__file__).parents[2] / "shared"\n',
    })  # fmt: skip
    assert tests_reading_shared(root) == [
        "tests/test_x.py:1: ROOT.parent / 'shared'",
        "tests/test_y.py:1: Path('../shared/datasets/car')",
        "tests/test_y.py:2: Path(__file__).parents[2] / 'shared'",
    ]


def test_a_party_process_imports_only_what_it_runs() -> None:
    """The party entry point, every system's party program and the zygote that forks the
    parties of ``mpc run`` load no launcher code: no deployment tools, no plain learners'
    training for the audit, no pictures, no command line, no Python API."""
    code = (
        "import sys\n"
        "import parties.main, parties.programs.registry, parties.process, parties.zygote\n"
        "bad = ('mpc.deployment', 'mpc.learners.plot', 'matplotlib', 'parties.api', "
        "'parties.cli', 'parties.systems.registry')\n"
        "print(sorted(m for m in sys.modules if m.startswith(bad)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True, cwd=ROOT)  # fmt: skip
    assert out.stdout.strip() == "[]", out.stdout
