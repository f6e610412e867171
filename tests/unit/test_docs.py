"""The README and the documentation site (mkdocs.yml, docs/) keep their promises, read as files.

The README stays short and links only to pages that exist; every page of the site's navigation
exists and every page is in it; every file a page includes with ``--8<--`` exists; every ``mpc``
command a page shows names a subcommand that ``python -m mpc --help`` lists, and every
``mpc run SYSTEM`` a system that ``python -m mpc run --help`` lists. Building the site itself
(``mkdocs build --strict``) is left to CI (.ci/run), which installs the ``docs`` extra.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 250

#: ``[text](target)`` and ``![alt](target)``: the target, up to a space or the closing bracket
LINK = re.compile(r"\]\(([^)\s]+)")
#: a snippet line of pymdownx.snippets: ``--8<-- "path"``
SNIPPET = re.compile(r'^\s*-{1,}8<-{1,}\s+"([^"]+)"', re.M)
#: ``mpc WORD`` or ``python -m mpc WORD`` as a command, not inside a longer name
#: (``mpc-trees``, ``mpc.learners.id3``, ``[mpc]`` and ``mpc: error`` do not match)
COMMAND = re.compile(r"(?<![\w./\[-])(?:python -m mpc|mpc)[ \t]+([A-Za-z][\w-]*)")
#: ``mpc run SYSTEM``: the system, in lower case (``mpc run SYSTEM`` is a placeholder)
RUN_SYSTEM = re.compile(r"(?<![\w./\[-])(?:python -m mpc|mpc)[ \t]+run[ \t]+([a-z][\w-]*)")
#: a subcommand in argparse's help: four spaces, the name, then spaces or the end of the line
HELP_ENTRY = re.compile(r"^ {4}([a-z][\w-]*)(?: |$)", re.M)


def doc_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def nav_pages(nav: object) -> Iterator[str]:
    """Every page path in mkdocs.yml's ``nav`` (strings, titled entries, nested sections)."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def code_of(text: str) -> str:
    """The code of a Markdown page: its fenced blocks, and its code spans one per line."""
    parts = re.findall(r"^ *```[^\n]*\n(.*?)^ *```", text, flags=re.M | re.S)
    prose = re.sub(r"^ *```[^\n]*\n.*?^ *```", "", text, flags=re.M | re.S)
    # a code span may wrap onto the next line, never across a blank line
    spans = re.findall(r"`([^`]+)`", prose)
    parts += [" ".join(span.split()) for span in spans if "\n\n" not in span]
    return "\n".join(parts)


@cache
def help_entries(*args: str) -> frozenset[str]:
    """The subcommands listed by ``python -m mpc ARGS --help``, parsed once per ARGS."""
    out = subprocess.run(
        [sys.executable, "-m", "mpc", *args, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    listed = out.split("positional arguments:", 1)[1].split("options:", 1)[0]
    return frozenset(HELP_ENTRY.findall(listed))


def shown_commands(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """(file, word) for every command of ``pattern`` shown in the README or a docs page."""
    found = []
    for path in [README, *doc_pages()]:
        for word in pattern.findall(code_of(path.read_text(encoding="utf-8"))):
            found.append((str(path.relative_to(ROOT)), word))
    return found


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme_links_only_to_docs_pages_that_exist() -> None:
    targets = LINK.findall(README.read_text(encoding="utf-8"))
    local = [t for t in targets if not re.match(r"[a-z][a-z+.-]*:", t) and not t.startswith("#")]
    assert local, "the README links to no documentation page"
    for target in local:
        path = (ROOT / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(DOCS), f"README.md links outside docs/: {target}"
        assert path.suffix == ".md" and path.is_file(), f"README.md links to a missing {target}"


def test_readme_keeps_the_test_command() -> None:
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\npython -m pytest\n" in readme
    assert "\npython -m pytest\n" in ci


def test_every_nav_page_exists_and_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = list(nav_pages(config["nav"]))
    assert "index.md" in listed
    missing = [page for page in listed if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml's nav lists pages that do not exist: {missing}"
    pages = {p.relative_to(DOCS).as_posix() for p in doc_pages()}
    assert not pages - set(listed), f"pages not in mkdocs.yml's nav: {sorted(pages - set(listed))}"


def test_every_snippet_exists() -> None:
    included = [
        (path.name, target)
        for path in doc_pages()
        for target in SNIPPET.findall(path.read_text(encoding="utf-8"))
    ]
    assert ("benchmarks.md", "results/bench/bench.md") in included
    assert ("benchmarks.md", "results/bench/helpers.md") in included
    missing = [(page, t) for page, t in included if not (ROOT / t).is_file()]
    assert not missing, f"snippets of files that do not exist: {missing}"


def test_every_command_shown_names_a_subcommand_of_mpc() -> None:
    subcommands = help_entries()
    assert {"run", "deploy", "train", "sanitize"} <= subcommands, sorted(subcommands)
    shown = shown_commands(COMMAND)
    assert len(shown) > 50, "too few mpc commands found: the pattern no longer matches them"
    wrong = sorted({(f, w) for f, w in shown if w not in subcommands})
    assert not wrong, f"commands that mpc --help does not list ({sorted(subcommands)}): {wrong}"


@pytest.mark.parametrize("system", ["ppid3", "hybrid-id3", "cdtl", "psi-ca"])
def test_every_system_is_shown_running(system: str) -> None:
    assert system in help_entries("run")
    assert system in {w for _, w in shown_commands(RUN_SYSTEM)}


def test_every_mpc_run_names_a_system_of_mpc_run() -> None:
    systems = help_entries("run")
    shown = shown_commands(RUN_SYSTEM)
    wrong = sorted({(f, w) for f, w in shown if w not in systems})
    assert not wrong, f"systems that mpc run --help does not list ({sorted(systems)}): {wrong}"


def test_the_site_loads_nothing_from_an_outside_server() -> None:
    """Material loads Google's web fonts unless told not to (``theme.font: false``): a reader
    of the site would tell an outside server that they read it."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"].get("font") is False, config["theme"]
    for page in (ROOT / "docs").rglob("*"):
        if page.suffix in (".md", ".css", ".html"):
            text = page.read_text(encoding="utf-8")
            assert "fonts.googleapis.com" not in text and "fonts.gstatic.com" not in text, page


def test_no_docstring_the_api_pages_render_opens_a_literal_block_with_a_bare_colon_pair() -> None:
    """A line that is only ``::`` renders as a stray ``:`` on the API pages (mkdocstrings):
    a literal block is opened at the end of a sentence (``For example::``)."""
    import importlib
    import inspect

    modules = sorted(
        {m for page in (ROOT / "docs").rglob("*.md")
         for m in re.findall(r"^::: ([\w.]+)$", page.read_text(encoding="utf-8"), re.M)}
    )  # fmt: skip
    assert "parties.api" in modules
    bare = []
    for name in modules:
        module = importlib.import_module(name)
        objects = [module, *(getattr(module, n) for n in getattr(module, "__all__", ()))]
        for obj in objects:
            doc = inspect.getdoc(obj) or ""
            if any(line.strip() == "::" for line in doc.splitlines()):
                bare.append(f"{name}: {getattr(obj, '__name__', obj)}")
    assert bare == [], bare


def test_wide_tables_scroll_and_the_home_page_commands_fit() -> None:
    """The site's own stylesheet makes a wide table scroll inside the page (the benchmarks'
    tables have a dozen columns), and the home page's commands fit the content's width."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert "stylesheets/extra.css" in config.get("extra_css", [])
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    rule = re.search(r"\.md-typeset table:not\(\[class\]\) \{([^}]*)\}", css)
    assert rule and "overflow-x: auto" in rule.group(1), css
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", home, re.M | re.S)
    commands = [line for info, block in blocks for line in block.splitlines()
                if info == "bash" or line.startswith("$ ")]  # fmt: skip
    assert commands and max(map(len, commands)) <= 72, [c for c in commands if len(c) > 72]


def _files_block() -> list[str]:
    """The lines of the code block under "## The files" on the architecture page."""
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## The files", 1)[1]
    block = section.split("```", 2)[1]
    return block.splitlines()[1:]


def _under(lines: list[str], folder: str) -> str:
    """The text of ``folder``'s entry (``mpc/runtime`` says ``runtime/`` under ``mpc/``): its
    line and every line indented deeper below it, up to the next entry at its depth or
    shallower."""
    start, depth = 0, -1
    for part in folder.split("/"):
        for i in range(start, len(lines)):
            line = lines[i]
            indent = len(line) - len(line.lstrip())
            if indent > depth and line.lstrip().startswith(part + "/"):
                start, depth = i, indent
                break
        else:
            raise AssertionError(f"architecture.md names no folder {folder}/")
    out = [lines[start]]
    for line in lines[start + 1 :]:
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped and indent <= depth and not line[: depth + 1].isspace():
            break
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("package", ["mpc", "protocols", "parties"])
def test_the_architecture_page_names_every_module_under_its_folder(package: str) -> None:
    lines = _files_block()
    missing = []
    for path in sorted((ROOT / package).rglob("*.py")):
        if path.name == "__init__.py":
            continue
        folder = path.parent.relative_to(ROOT).as_posix()
        if not re.search(rf"(?<![\w.]){re.escape(path.name)}\b", _under(lines, folder)):
            missing.append(path.relative_to(ROOT).as_posix())
    assert missing == [], f"docs/architecture.md does not name {missing} under their folders"


def test_every_primitive_names_its_references() -> None:
    """Each module of the engine, the oblivious transfers and the primitives says in its
    docstring, on a ``References:`` line, which published protocols it follows."""
    import ast

    missing = []
    for folder in ("engine", "ot", "primitives"):
        for path in sorted((ROOT / "protocols" / folder).glob("*.py")):
            if path.name in ("__init__.py", "checks.py", "dot_product_base.py"):
                continue
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            if "\nReferences: " not in "\n" + doc:
                missing.append(path.relative_to(ROOT).as_posix())
    assert missing == []
