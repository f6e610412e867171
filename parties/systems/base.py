"""What every system's launcher is: :class:`System` (its options, its plan, the result it
reads off the parties' reports, its summary and its audit), the :class:`Plan` it hands the
launcher, and the :class:`Audit` of a run.

A system's party program is not here: it is :mod:`parties.programs`, which the launcher never
needs and a party process imports alone.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mpc.deployment.launcher import PartySpec
from mpc.errors import ProtocolError
from parties.params import Params

__all__ = ["SEMI_HONEST", "Audit", "Plan", "System", "agreed", "number"]

#: the trust of the systems that have no helper: every party semi-honest, none colluding
SEMI_HONEST = "semi-honest parties, no two colluding"


@dataclass(frozen=True)
class Plan:
    """What a system's plan hands the launcher: one :class:`~mpc.deployment.launcher.PartySpec`
    per party (name, role, private input), the protocol parameters of the deployment file,
    launcher-side state for :meth:`System.finish` (never sent to a party) and notes for the
    user."""

    parties: list[PartySpec]
    params: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    #: what the launcher tells its user before the run (``[mpc] NOTE`` on stderr, unless
    #: ``--quiet``): a column read otherwise than one might expect, say
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Audit:
    """What a local run's launcher, which reads every party's report, can say of the run.

    ``tree`` is the tree (JSON of :mod:`mpc.learners.tree`) assembled from the parts every
    party holds, for this audit only: no party holds it. A node's ``site`` is an index into
    ``sites``; the leaves are held by ``class_site``. ``accuracy`` is the accuracy of the
    private tree on the held-out rows (where there are some, else on the training rows;
    cdtl: its cross-validated accuracy). ``trust`` is the assumption the run's privacy rests
    on."""

    trust: str
    tree: dict[str, Any] | None = None
    sites: tuple[str, ...] = ()
    class_site: str | None = None
    accuracy: float | None = None


class System:
    """A system the launcher can run (``mpc run NAME``, ``mpc deploy NAME``,
    :func:`parties.api.run_system`).

    ``name`` and ``help`` name and describe it; ``options`` is its :class:`~parties.params.Params`
    (every option, declared once); ``has_tree``: its audit has a tree to draw. :meth:`plan`
    makes the parties and the deployment's parameters from the options (``deploy``: for
    ``mpc deploy``, which may write only public things), :meth:`finish` the result from every
    party's report, :meth:`summary` the lines ``mpc run`` prints and :meth:`audit` what the
    launcher reads off the result."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    options: ClassVar[type[Params]] = Params
    has_tree: ClassVar[bool] = False

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        raise NotImplementedError

    def plan_from(self, args: argparse.Namespace, *, deploy: bool = False) -> Plan:
        """:meth:`plan` of the options as the command line parsed them (``args``)."""
        return self.plan(self.options.from_namespace(args), deploy=deploy)

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> Any:
        """The run's result (default: the result every party reported alike)."""
        return agreed(reports)

    def summary(self, result: Any) -> list[str] | None:
        """The lines ``mpc run`` prints for ``result`` (None: the result as JSON)."""
        return None

    def audit(self, result: Any) -> Audit:
        return Audit(SEMI_HONEST)


def number(value: Any) -> float | None:
    """``value`` as a float when it is a number, else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def agreed(reports: dict[str, dict[str, Any]], who: list[str] | None = None) -> Any:
    """The result every party of ``who`` (default: all) reported, which must be the same."""
    names = who or list(reports)
    values = [reports[n].get("result") for n in names]
    if any(v != values[0] for v in values):
        raise ProtocolError(
            f"parties disagree on the result: {dict(zip(names, values, strict=True))}"
        )
    return values[0]
