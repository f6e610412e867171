#!/usr/bin/env python3
"""Run a whole deployment as local processes: a thin wrapper around ``mpc run``.

python scripts/run_local.py secure-sum --parties 5 --inputs 3,1,4,1,5
python scripts/run_local.py is-r-empty --flags 0,1,0 --json
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from parties.cli import main

if __name__ == "__main__":
    sys.exit(main(["run", *sys.argv[1:]]))
