"""The ``mpc`` command: the top of the layers, imported by nothing in the framework.

* :mod:`parties.cli.main` — ``mpc run``, ``mpc deploy``, ``mpc keygen``, ``mpc party``,
  ``mpc ping``: the parser, the dispatch, and how a run is launched and summarised;
* :mod:`parties.cli.train` — ``mpc datasets`` and ``mpc train`` (the plain learners);
* :mod:`parties.cli.predict` — ``mpc predict`` (a saved plain model on new rows);
* :mod:`parties.cli.sanitize` — ``mpc sanitize`` (Chang & Tracy's adaptive modification).

Its exit codes: 0 success, 1 a party failed, 2 a usage or input error, 130/143 stopped by
SIGINT/SIGTERM, 141 standard output closed.
"""

from parties.cli.main import main

__all__ = ["main"]
