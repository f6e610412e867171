"""Party entry points: one process per party (``python -m parties ROLE ...``), the systems
they run (:mod:`parties.systems`), and running them from Python (:mod:`parties.api`)::

    from parties import run_system
    run = run_system("ppid3", dataset="weather")
    print(run.summary())
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parties.api import (
        PartyReport,
        RunResult,
        party_main,
        run_program,
        run_system,
        system_options,
    )


def __getattr__(name: str) -> Any:
    """The API's names, imported on first use: ``python -m parties`` runs this package's
    ``__init__`` before ``__main__``, which must set one BLAS thread per party before numpy
    loads (an eager import here loaded numpy first, and every party's OpenBLAS spun a thread
    per core)."""
    if name in __all__:
        from parties import api

        return getattr(api, name)
    raise AttributeError(f"module 'parties' has no attribute {name!r}")


__all__ = [
    "PartyReport",
    "RunResult",
    "party_main",
    "run_program",
    "run_system",
    "system_options",
]
