"""``python -m mpc`` is the ``mpc`` command."""

import sys

from parties.command import main

sys.exit(main())
