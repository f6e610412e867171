"""Option types shared by the command line of every system (:mod:`parties.cli.main`), the
systems' own options (``parties/*_system.py``) and the Python API (:mod:`parties.api`), and
the one check of every option that names an output. Imports nothing from the systems, so that
any of them may use it without a cycle."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any

from mpc.learners.plot import check_plot_path, require_matplotlib
from mpc.runtime.files import check_output

__all__ = ["EITHER_OUTPUTS", "OUTPUT_OPTIONS", "NumberList", "check_outputs", "output_checks"]

#: the options that name an output, whatever the command; a metavar of DIR means a folder
OUTPUT_OPTIONS = frozenset(
    {"--out", "--report", "--tree-out", "--dot", "--model-out", "--predictions-out", "--keep",
     "--secrets", "--db", "--cdbs-db", "--plot"}
)  # fmt: skip
#: outputs that are a folder or a file (cdtl-outsource: DIR/client.model.json, or FILE.json)
EITHER_OUTPUTS = frozenset({("cdtl-outsource", "--model-out")})


def output_checks(parser: argparse.ArgumentParser, command: str) -> list[tuple[str, str, str]]:
    """``(option, dest, kind)`` of every output option of ``parser`` (the parser of
    ``command``): ``kind`` is ``"folder"`` for a metavar of DIR, ``"either"`` for
    :data:`EITHER_OUTPUTS`, else ``"file"``."""
    checks = []
    for action in parser._actions:
        option = next((o for o in action.option_strings if o in OUTPUT_OPTIONS), None)
        if option is None or action.nargs == 0:
            continue
        kind = (
            "either"
            if (command, option) in EITHER_OUTPUTS
            else "folder"
            if action.metavar == "DIR"
            else "file"
        )
        checks.append((option, action.dest, kind))
    return checks


def check_outputs(checks: Iterable[tuple[str, str, str]], args: argparse.Namespace) -> None:
    """Check every output path of ``args`` named by ``checks`` (:func:`output_checks`) with
    :func:`mpc.runtime.files.check_output`, before any work: missing parent folders are fine
    (they are created), a path that cannot be written raises :class:`~mpc.errors.ConfigError`
    naming the option and the path. A picture (``--plot``) needs matplotlib and a suffix it
    can write, which are checked first."""
    for option, dest, kind in checks:
        value = getattr(args, dest, None)
        if value is None or value == "" or (option == "--db" and value == ":memory:"):
            continue  # none given, or SQLite's in-memory database
        if option == "--plot":
            require_matplotlib("--plot")
            check_plot_path(value, option)
        check_output(value, kind=kind, option=option)


class NumberList:
    """The argparse ``type`` of an option whose value is a comma-separated list of numbers
    (``--inputs -3,4,5``). ``mpc`` keeps a value that starts with a minus sign after such an
    option as its value (argparse alone takes it for an option; see :mod:`parties.cli.main`).

    Called with the option's text, it returns ``parse(text)``: by default the list of
    integers, an :class:`argparse.ArgumentTypeError` naming what was expected otherwise."""

    def __init__(self, parse: Callable[[str], Any] | None = None) -> None:
        self.parse = parse
        self.__name__ = "number list"  # what argparse calls the type in its messages

    def __call__(self, text: str) -> Any:
        if self.parse is not None:
            return self.parse(text)
        try:
            return [int(v) for v in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated integers (e.g. -3,4,5), got {text!r}"
            ) from None
