"""``python -m parties ROLE --config FILE --name NAME``: run one party (see parties.main).

With ``MPC_PROFILE_DIR`` set to a folder, the party runs under :mod:`cProfile` and writes its
statistics to ``<folder>/<NAME>.prof`` (mode 0600) when it ends (read them with :mod:`pstats`, e.g.
``python -m pstats DIR/site1.prof``); the launcher passes the variable on to every party, so
``MPC_PROFILE_DIR=DIR mpc run ...`` profiles each party of a run. Profiling slows a party
down: its wall times are not the run's."""

import os
import sys

# One BLAS thread per party, set before numpy loads: the parties of a deployment share the
# host's cores, and idle OpenBLAS threads spin, so several threaded parties on two cores run
# several times slower than single-threaded ones. An explicit setting in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import cProfile  # noqa: E402
import marshal  # noqa: E402

from mpc.runtime.files import write_private  # noqa: E402
from mpc.runtime.signals import Stopped  # noqa: E402
from parties.main import PROG, main  # noqa: E402


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


try:
    _folder = os.environ.get("MPC_PROFILE_DIR")
    sys.exit(_profiled(_folder) if _folder else main())
except Stopped as exc:  # SIGINT or SIGTERM: the party told its peers and closed; one line
    print(f"{PROG}: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
