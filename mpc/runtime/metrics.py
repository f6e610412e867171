"""Per-party cost counters and the leakage ledger.

:class:`Metrics` counts what a party paid: bytes and messages per peer in each direction,
rounds, crypto operations and wall time per phase. **Rounds** are causal depth: every message
carries ``depth = 1 + (deepest message its sender had consumed before sending)``, and a
party's ``rounds`` is the deepest message it sent or consumed. The maximum over all parties
is the number of sequential exchanges of the run; messages sent side by side (a broadcast,
a batch) cost one round.

:class:`Ledger` is the record of what a party *learns by design*: every place where a
protocol opens a value to a party calls :meth:`Ledger.record`. Masked values and ciphertexts
that a party receives are not learned values; they appear only as bytes in the metrics.
"""

from __future__ import annotations

import platform
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Ledger", "LedgerEntry", "Metrics", "jsonable"]

try:
    import resource
except ImportError:  # not on POSIX
    resource = None  # type: ignore[assignment]


#: types that are JSON already (checked first: most ledger values are of these)
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


def jsonable(value: Any) -> Any:
    """Convert a value (numpy, gmpy2, tuples, nested containers) to plain JSON types."""
    if type(value) in _PLAIN_TYPES:
        return value
    if isinstance(value, dict):  # checked early: most other ledger values are dicts
        return {
            k if type(k) is str else str(k): v if type(v) in _PLAIN_TYPES else jsonable(v)
            for k, v in value.items()
        }
    if isinstance(value, bool | str | float) or value is None:
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple | set | frozenset):
        return [v if type(v) in _PLAIN_TYPES else jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    try:  # gmpy2.mpz and other int-like numbers
        return int(value)
    except (TypeError, ValueError):
        return str(value)


#: How many rejected messages a party describes in its report; the rest are only counted.
MAX_REJECTED_NOTES = 100


@dataclass
class Metrics:
    """What one party paid. All counters are cumulative over the party's run."""

    bytes_sent: Counter[str] = field(default_factory=Counter)
    bytes_received: Counter[str] = field(default_factory=Counter)
    messages_sent: Counter[str] = field(default_factory=Counter)
    messages_received: Counter[str] = field(default_factory=Counter)
    crypto: Counter[str] = field(default_factory=Counter)
    phases: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    #: the first :data:`MAX_REJECTED_NOTES` rejected messages, one line each (:meth:`reject`)
    rejected: list[str] = field(default_factory=list)
    #: every rejected message, counted (a flood of bad messages costs a counter, not memory)
    rejected_total: int = 0
    rounds: int = 0
    started: float = field(default_factory=time.perf_counter)

    def reject(self, note: str) -> None:
        """Put a rejected message on record: counted always, described while fewer than
        :data:`MAX_REJECTED_NOTES` are described."""
        self.rejected_total += 1
        if len(self.rejected) < MAX_REJECTED_NOTES:
            self.rejected.append(note)

    def count(self, operation: str, n: int = 1) -> None:
        """Add ``n`` crypto operations of kind ``operation`` (e.g. ``"modexp"``)."""
        self.crypto[operation] += n

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Accumulate the wall time spent inside the block under ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] += time.perf_counter() - start

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes_sent": sum(self.bytes_sent.values()),
            "bytes_received": sum(self.bytes_received.values()),
            "messages_sent": sum(self.messages_sent.values()),
            "messages_received": sum(self.messages_received.values()),
            "rounds": self.rounds,
            "per_peer": {
                peer: {
                    "bytes_sent": self.bytes_sent[peer],
                    "bytes_received": self.bytes_received[peer],
                    "messages_sent": self.messages_sent[peer],
                    "messages_received": self.messages_received[peer],
                }
                for peer in sorted(set(self.bytes_sent) | set(self.bytes_received))
            },
            "crypto": dict(sorted(self.crypto.items())),
            "phases_s": {k: round(v, 6) for k, v in self.phases.items()},
            "wall_s": round(time.perf_counter() - self.started, 6),
            "cpu_s": round(time.process_time(), 3),  # this process's CPU time, user + system
            "peak_rss_mb": _peak_rss_mb(),
            "rejected_messages": list(self.rejected),
            "rejected_total": self.rejected_total,
        }


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One value a party learned: ``label`` names it (``protocol/what``), ``step`` the tag;
    ``canonical``, where the value comes in an order another party drew at random (the
    classes of PPID3's counts), is what it tells up to that order (None: the value itself)."""

    label: str
    value: Any
    step: str
    canonical: Any = None


@dataclass
class Ledger:
    """The values one party learned by design, in the order it learned them."""

    entries: list[LedgerEntry] = field(default_factory=list)

    def record(
        self,
        label: str,
        value: Any,
        *,
        step: str = "",
        plain: bool = False,
        canonical: Any = None,
    ) -> None:
        """Put on record that this party learned ``value``; call it wherever a value opens.

        The ledger keeps a plain-JSON copy of ``value`` (:func:`jsonable`). ``plain=True``
        says that ``value`` is plain JSON already, made for this record and not changed
        afterwards (as a value per request on a hot path): it is kept as it is. ``canonical``
        is what the value tells up to an order another party drew at random (see
        :class:`LedgerEntry`)."""
        self.entries.append(
            LedgerEntry(
                label,
                value if plain else jsonable(value),
                step,
                None if canonical is None else jsonable(canonical),
            )
        )

    def labels(self) -> list[str]:
        return [e.label for e in self.entries]

    def to_list(self) -> list[dict[str, Any]]:
        return [
            {"label": e.label, "value": e.value, "step": e.step}
            | ({} if e.canonical is None else {"canonical": e.canonical})
            for e in self.entries
        ]


def _peak_rss_mb() -> float | None:
    """This process's peak resident memory in MB (None where the OS does not say)."""
    if resource is None:
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(kb / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def cpu_model() -> str:
    """This machine's CPU as the benchmarks name it (``model name`` of ``/proc/cpuinfo``, or
    what :mod:`platform` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
