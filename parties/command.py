"""The ``mpc`` console command's entry point (``mpc = "parties.command:main"``, and ``python
-m mpc``): :func:`parties.cli.main.main`, after starting, for ``mpc run``, the zygote that
forks the parties (:func:`parties.forker.start_early`), so that it loads the party program
while this process loads the command's modules."""

import sys
from typing import TYPE_CHECKING, Any

from parties.forker import start_early

if TYPE_CHECKING:
    from parties.cli import main


def __getattr__(name: str) -> Any:
    """``main``, loaded on first use (the console script asks for it): the zygote starts
    first, then the command's modules load."""
    if name == "main":
        start_early(sys.argv[1:])
        from parties.cli import main

        globals()["main"] = main  # once: a second look finds it, and starts nothing
        return main
    raise AttributeError(f"module 'parties.command' has no attribute {name!r}")


__all__ = ["main"]
