"""Party entry points: one process per party (``python -m parties ROLE ...``), the systems
they run (:mod:`parties.systems`), and running them from Python (:mod:`parties.api`)::

    from parties import run_system
    run = run_system("ppid3", dataset="weather")
    print(run.summary())
"""

from parties.api import (
    PartyReport,
    RunResult,
    party_main,
    run_program,
    run_system,
    system_options,
)

__all__ = [
    "PartyReport",
    "RunResult",
    "party_main",
    "run_program",
    "run_system",
    "system_options",
]
