"""``python -m parties ROLE --config FILE --name NAME``: run one party (see parties.main)."""

import os
import sys

# One BLAS thread per party, set before numpy loads: the parties of a deployment share the
# host's cores, and idle OpenBLAS threads spin, so several threaded parties on two cores run
# several times slower than single-threaded ones. An explicit setting in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from mpc.runtime.launcher import Stopped  # noqa: E402
from parties.main import PROG, main  # noqa: E402

try:
    sys.exit(main())
except Stopped as exc:  # SIGINT or SIGTERM: the party told its peers and closed; one line
    print(f"{PROG}: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
