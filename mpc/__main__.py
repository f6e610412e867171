"""``python -m mpc`` is the ``mpc`` command."""

import sys

from mpc.cli import main

sys.exit(main())
