"""``python -m mpc`` is the ``mpc`` command."""

import sys

from parties.cli import main

sys.exit(main())
