"""What ``python -m parties`` does once its BLAS threads are set: run one party
(:func:`parties.main.main`) and turn how it ends into an exit code.

With ``MPC_PROFILE_DIR`` set to a folder, the party runs under :mod:`cProfile` and writes its
statistics to ``<folder>/<NAME>.prof`` (mode 0600) when it ends (read them with :mod:`pstats`, e.g.
``python -m pstats DIR/site1.prof``); the launcher passes the variable on to every party, so
``MPC_PROFILE_DIR=DIR mpc run ...`` profiles each party of a run. Profiling slows a party
down: its wall times are not the run's."""

from __future__ import annotations

import cProfile
import marshal
import os
import sys

from mpc.runtime.files import write_private
from mpc.runtime.signals import Stopped
from parties.main import PROG, main


def run_process() -> int:
    """Run the party that ``sys.argv`` describes; its exit code. SIGINT or SIGTERM ends it
    with one line (the party has told its peers and closed) and 128 + the signal."""
    try:
        folder = os.environ.get("MPC_PROFILE_DIR")
        return _profiled(folder) if folder else main()
    except Stopped as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return exc.exit_code


def _profiled(folder: str) -> int:
    """``main()`` under :mod:`cProfile`, its statistics written to ``folder/<name>.prof``
    (the ``--name`` of the command line, or ``party`` without one) however it ends."""

    argv = sys.argv[1:]
    name = argv[argv.index("--name") + 1] if "--name" in argv[:-1] else "party"
    profile = cProfile.Profile()
    try:
        return profile.runcall(main)
    finally:  # what Profile.dump_stats writes, as a private file (0600, its folder 0700)
        profile.create_stats()
        path = os.path.join(folder, f"{os.path.basename(name)}.prof")
        write_private(path, marshal.dumps(profile.stats))
