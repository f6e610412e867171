"""The ``mpc`` command: the top of the layers, imported by nothing in the framework.

* :mod:`parties.cli.main` — ``mpc run``, ``mpc deploy``, ``mpc keygen``, ``mpc party``,
  ``mpc ping``: the parser, the dispatch, and how a run is launched and summarised;
* :mod:`parties.cli.train` — ``mpc datasets`` and ``mpc train`` (the plain learners);
* :mod:`parties.cli.predict` — ``mpc predict`` (a saved plain model on new rows);
* :mod:`parties.cli.sanitize` — ``mpc sanitize`` (Chang & Tracy's adaptive modification).

Its exit codes: 0 success, 1 a party failed, 2 a usage or input error, 130/143 stopped by
SIGINT/SIGTERM, 141 standard output closed.
"""

import sys
from typing import TYPE_CHECKING, Any

from parties.forker import start_early

if TYPE_CHECKING:
    from parties.cli.main import main


def __getattr__(name: str) -> Any:
    """``main``, loaded on first use: the ``mpc`` console script asks for it. For ``mpc run``
    the zygote that forks the parties (:mod:`parties.forker`) starts first, so that it loads
    the party program while this process loads the command's modules."""
    if name == "main":
        start_early(sys.argv[1:])
        from parties.cli.main import main

        globals()["main"] = main  # once: a second look finds it, and starts nothing
        return main
    raise AttributeError(f"module 'parties.cli' has no attribute {name!r}")


__all__ = ["main"]
