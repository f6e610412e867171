"""Option types shared by the command line of every system (:mod:`parties.cli.main`) and the
systems' own options (``parties/*_system.py``). Imports nothing from the systems, so that any of
them may use it without a cycle."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["NumberList"]


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
