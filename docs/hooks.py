"""MkDocs hooks of this site (mkdocs.yml: ``hooks``); not a page.

* The figures the experiment scripts write under ``results/`` become files of the site, so a
  page shows them with the same relative link (``../results/...``) that works on a plain
  checkout of the repository.
* The docstrings are written in reStructuredText: in the API pages a role's prefix
  (``:func:``) is dropped and its name stays as code, ``~a.b.C`` shows as ``C``, and the
  ``::`` that opens a literal block shows as ``:``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
FIGURES = {".png", ".svg"}

_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj|py:\w+):(?=<code)")
_TILDE = re.compile(r"<code>~(?:\w+\.)*(\w+)</code>")


def on_files(files: Files, config: Any) -> Files:
    for path in sorted(RESULTS.rglob("*")):
        if path.suffix in FIGURES and path.is_file():
            files.append(
                File(
                    path.relative_to(ROOT).as_posix(),
                    src_dir=str(ROOT),
                    dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"],
                )
            )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    up = "../" * page.file.src_uri.count("/")
    return markdown.replace(f"](../{up}results/", f"]({up}results/")


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    if not page.file.src_uri.startswith("api/"):
        return html
    html = _ROLE.sub("", html)
    html = _TILDE.sub(r"<code>\1</code>", html)
    return html.replace("::</p>", ":</p>")
