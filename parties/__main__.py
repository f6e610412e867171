"""``python -m parties ROLE --config FILE --name NAME``: run one party (see parties.main, and
parties.process for profiling a party with ``MPC_PROFILE_DIR``)."""

import os
import sys

# One BLAS thread per party, set before numpy loads: the parties of a deployment share the
# host's cores, and idle OpenBLAS threads spin, so several threaded parties on two cores run
# several times slower than single-threaded ones. An explicit setting in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from parties.process import run_process  # noqa: E402

sys.exit(run_process())
