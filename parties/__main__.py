"""``python -m parties ROLE --config FILE --name NAME``: run one party (see parties.main)."""

import sys

from parties.main import main

sys.exit(main())
