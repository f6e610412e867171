"""Run the systems from Python: the runs of ``mpc run``, with a typed result.

For example::

    from parties import run_system

    run = run_system("ppid3", dataset="weather", counts="fast")
    run.ok, run.accuracy, run.trust    # True, 1.0, 'semi-honest sites; ...'
    run.tree                           # the audit view of the tree (mpc.learners.tree)
    run.parties["site1"].ledger        # what site1 learned, entry by entry
    run.parties["site1"].metrics       # its bytes, messages, rounds, crypto operations
    print(run.summary())               # what `mpc run ppid3 ...` prints
    run.plot("ppid3.svg")              # a picture of the tree, nodes coloured by site

:func:`run_system` starts one OS process per party on 127.0.0.1 over CurveZMQ, exactly as
``mpc run`` does (:func:`mpc.deployment.launcher.launch`): the options are those of ``mpc run
SYSTEM``, as keyword arguments named as the command line names them (``--class-site 2`` is
``class_site=2``, ``--id rid`` is ``id="rid"``, ``--class label`` is ``class_="label"``; a
flag is ``True``, a list of numbers a list; ``quiet=True`` is ``--quiet``); they are checked,
and every output path with them, before any party starts. A run whose parties fail returns
a :class:`RunResult` with ``ok`` False and each party's error; a wrong option raises
:class:`~mpc.errors.ConfigError` at once.

A party program of one's own runs the same way: :func:`run_program` starts a process per
party with a command of one's own, and :func:`party_main` is what that command runs (the
example of the API page, ``docs/examples/masked_sum.py``). To debug a program, run it in one
process on the in-memory transport with :func:`mpc.runtime.local.run_in_memory`: the same
code, no sockets, exceptions with their tracebacks.
"""

from __future__ import annotations

import json
import keyword
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mpc.deployment.launcher import LaunchResult, PartySpec, launch
from mpc.errors import ConfigError, MPCError
from mpc.learners.plot import PlotInfo, check_plot_path, plot_tree, require_matplotlib
from mpc.learners.tree import Node, from_json
from mpc.runtime.config import DeploymentConfig
from mpc.runtime.files import check_output
from mpc.runtime.party import Party
from parties.forker import Forker
from parties.main import main as party_process
from parties.options import check_outputs
from parties.own_data import load_party_data
from parties.own_party import OwnParty
from parties.params import Params
from parties.systems.base import Audit, Plan, System
from parties.systems.registry import get_system

__all__ = [
    "PartyProgram",
    "PartyReport",
    "RunResult",
    "option_keywords",
    "party_main",
    "run_planned",
    "run_program",
    "run_system",
    "summary_text",
    "system_options",
]

#: a party program of one's own: ``await program(party, inputs)`` with this party's input
PartyProgram = Callable[[Party, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class PartyReport:
    """One party's report, as its process wrote it: its role, whether it succeeded (``ok``,
    ``exit_code``), its ``error`` (``{"type", "message"}``, or None), its ``result``, its
    ``metrics`` (bytes, messages, rounds, crypto operations, phase times) and its ``ledger``:
    every value it learned by design, one ``{"label", "value", ...}`` entry each."""

    name: str
    role: str
    ok: bool
    exit_code: int | None
    error: Mapping[str, Any] | None
    result: Any
    metrics: Mapping[str, Any]
    ledger: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_report(cls, name: str, report: Mapping[str, Any]) -> PartyReport:
        return cls(
            name=name,
            role=str(report.get("role", "")),
            ok=bool(report.get("ok")),
            exit_code=report.get("exit_code"),
            error=report.get("error"),
            result=report.get("result"),
            metrics=MappingProxyType(dict(report.get("metrics") or {})),
            ledger=tuple(report.get("ledger") or ()),
        )

    def learned(self, label: str) -> list[Any]:
        """The values of this party's ledger entries with ``label``, in order."""
        return [e.get("value") for e in self.ledger if e.get("label") == label]


@dataclass(frozen=True)
class RunResult:
    """The outcome of a run: :func:`run_system` or :func:`run_program`.

    * ``ok``: every party succeeded and the result could be built (else ``error`` says why,
      and each party's report its own error);
    * ``result``: the system's result, as ``mpc run --json`` prints it under ``"result"``;
    * ``tree``: the tree as the audit sees it, assembled from every party's own nodes (no
      party holds it), or None for a system without one; a node's ``site`` indexes
      ``sites``, the leaves are held by ``class_site``;
    * ``accuracy``: the private tree's accuracy where the system has one (on the held-out
      rows if there are some, else on the training rows; cdtl: cross-validated);
    * ``trust``: the assumption the run's privacy rests on;
    * ``parties``: each party's :class:`PartyReport`; ``reports`` and ``logs``: the raw
      reports and each process's log.
    """

    system: str
    ok: bool
    result: Any
    parties: Mapping[str, PartyReport]
    wall_s: float
    tree: Node | None = None
    sites: tuple[str, ...] = ()
    class_site: str | None = None
    accuracy: float | None = None
    trust: str | None = None
    error: str | None = None
    deployment: Path | None = None
    reports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    logs: Mapping[str, str] = field(default_factory=dict, repr=False)
    summarize: Callable[[Any], list[str] | None] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The document of ``mpc run --json``: ``{"system", "ok", "result", "wall_s",
        "parties": {NAME: {"role", "ok", "exit_code", "error", "result", "metrics",
        "ledger", "received"}}}`` (and ``"deployment"`` when it was kept): ``received`` lists
        every message the party received, by tag pattern, receipt, kind and sender."""
        doc: dict[str, Any] = {
            "system": self.system,
            "ok": self.ok,
            "result": self.result,
            "wall_s": round(self.wall_s, 3),
            "parties": {
                n: {
                    k: r.get(k)
                    for k in (
                        "role",
                        "ok",
                        "exit_code",
                        "error",
                        "result",
                        "metrics",
                        "ledger",
                        "received",
                    )
                }
                for n, r in self.reports.items()
            },
        }
        if self.deployment is not None:
            doc["deployment"] = str(self.deployment)
        return doc

    def summary(self) -> str:
        """The text ``mpc run`` prints: the result, then a line per party (exit code, bytes,
        messages, rounds, crypto operations, what it learned)."""
        return summary_text(self.to_json(), self.summarize)

    def plot(self, path: str | Path, *, max_nodes: int = 50, title: str | None = None) -> PlotInfo:
        """Draw :attr:`tree` to ``path`` (``.svg`` or ``.png``) with
        :func:`mpc.learners.plot.plot_tree`: interior nodes coloured by the site that holds
        them, leaves with their class counts."""
        if self.tree is None:
            raise ConfigError(f"this {self.system} run has no tree to draw")
        if title is None:
            dataset = self.result.get("dataset") if isinstance(self.result, dict) else None
            title = (
                f"{self.system}{f' on {dataset}' if dataset else ''}: the tree assembled "
                "from every party's own nodes (no party holds it)"
            )
        return plot_tree(
            self.tree,
            path,
            sites=self.sites,
            class_site=self.class_site,
            title=title,
            max_nodes=max_nodes,
        )


# ----------------------------------------------------------------------------- options


def _keyword(flag: str) -> str:
    """The keyword of a command-line flag: no dashes, ``-`` as ``_``, a trailing ``_`` for
    a name Python keeps (``--class`` is ``class_``)."""
    name = flag.lstrip("-").replace("-", "_")
    return f"{name}_" if keyword.iskeyword(name) else name


def option_keywords(system: str | System) -> dict[str, str]:
    """The keyword of every option of ``mpc run SYSTEM`` -> the option's field: its flag's
    keyword (``class_site`` for ``--class-site``, ``id`` for ``--id``, ``class_`` for
    ``--class``), and the field's own name too where it differs (``class_column``)."""
    sys_ = get_system(system) if isinstance(system, str) else system
    names = sys_.options.option_names()
    keywords = {_keyword(sys_.options.flag_of(n)): n for n in names}
    return {**{n: n for n in names}, **keywords}


def system_options(system: str | System, **options: Any) -> Params:
    """The options of ``mpc run SYSTEM`` given as keyword arguments, as the system's typed
    options (:attr:`~parties.systems.base.System.options`): named as the command line names
    them (:func:`option_keywords`: ``class_site=2`` for ``--class-site 2``, ``class_="label"``
    for ``--class label``, ``id="rid"`` for ``--id rid``), or by the option's field; its typed
    value or the text the command line takes; True or False for a switch; a list for a list
    (or for a repeatable option, one value each); None for the default. An unknown option or
    a wrong value raises :class:`~mpc.errors.ConfigError`."""
    sys_ = get_system(system) if isinstance(system, str) else system
    keywords = option_keywords(sys_)
    unknown = sorted(set(options) - set(keywords))
    if unknown:
        flags = sorted(_keyword(sys_.options.flag_of(n)) for n in sys_.options.option_names())
        raise ConfigError(
            f"{sys_.name} has no option {unknown[0]!r}; its options are {flags} (those of "
            f"`mpc run {sys_.name} --help`, - as _)"
        )
    fields: dict[str, Any] = {}
    for given, value in options.items():
        field_name = keywords[given]
        if field_name in fields:
            raise ConfigError(f"run_system({sys_.name!r}): {given!r} gives an option twice")
        fields[field_name] = value
    try:
        return sys_.options.from_options(**fields)
    except ConfigError as exc:
        raise ConfigError(f"run_system({sys_.name!r}): {exc}") from None


# ----------------------------------------------------------------------------- runs


def run_system(
    system: str,
    *,
    timeout: float = 60.0,
    insecure: bool = False,
    keep: str | Path | None = None,
    plot: str | Path | None = None,
    kill: tuple[str, int] | None = None,
    progress: Callable[[str], None] | None = None,
    quiet: bool = False,
    **options: Any,
) -> RunResult:
    """Run ``system`` (a name of ``mpc run --help``) with every party as a local process, as
    ``mpc run`` does, and return its :class:`RunResult`.

    ``options`` are the system's own, named as ``mpc run SYSTEM --help`` names them
    (:func:`system_options`); ``timeout`` is every receive's deadline in seconds
    (``--timeout``); ``insecure`` turns CurveZMQ off (debugging only); ``keep`` keeps the
    deployment (keys, config, data, logs, reports) in that folder; ``plot`` draws the tree to
    that file (``.svg`` or ``.png``; matplotlib); ``kill = (party, n)`` makes that party kill
    itself after sending ``n`` messages (fault injection); ``progress`` gets the launcher's
    and the parties' progress lines; ``quiet`` prints nothing, not even the plan's notes (a
    column read as continuous). Options and output paths are checked before any party
    starts."""
    sys_ = get_system(system)
    args = system_options(sys_, **options)
    if plot is not None:
        if not sys_.has_tree:
            raise ConfigError(f"plot: {sys_.name} makes no tree to draw")
        require_matplotlib("plot")
        check_plot_path(plot, "plot")
        check_output(plot, kind="file", option="plot")
    if keep is not None:
        check_output(keep, kind="folder", option="keep")
    check_outputs(args.outputs(), args)
    plan = sys_.plan(args)
    for note in [] if quiet else plan.notes:
        print(f"[mpc] {note}", file=sys.stderr)
    run = run_planned(
        sys_, plan, timeout=timeout, insecure=insecure,
        keep=Path(keep) if keep is not None else None, kill=kill, progress=progress,
    )  # fmt: skip
    if plot is not None and run.tree is not None:
        run.plot(plot)
    return run


def run_planned(
    system: System,
    plan: Plan,
    *,
    timeout: float = 60.0,
    insecure: bool = False,
    keep: Path | None = None,
    kill: tuple[str, int] | None = None,
    progress: Any = None,
    forker: Forker | None = None,
) -> RunResult:
    """Launch the parties of ``plan`` (``system.plan(args)``) and build the
    :class:`RunResult` from their reports: ``mpc run`` after its options are read.
    ``forker``: see :func:`mpc.deployment.launcher.launch`."""
    names = [p.name for p in plan.parties]
    if kill is not None and kill[0] not in names:
        raise ConfigError(f"--kill {kill[0]}: no such party; parties are {names}")
    if kill is not None and kill[1] < 0:
        raise ConfigError(f"--after must be >= 0, got {kill[1]}")
    if timeout <= 0:
        raise ConfigError(f"--timeout must be > 0 seconds, got {timeout}")
    res = launch(
        system.name, plan.params, plan.parties, timeout=timeout, insecure=insecure, keep=keep,
        kill=kill, progress=progress, forker=forker,
    )  # fmt: skip
    result, error = None, None
    ok = res.ok
    if ok:
        try:
            result = system.finish(res.reports, plan)
        except MPCError as exc:
            ok, error = False, str(exc)
    audit = system.audit(result) if ok else None
    return _run_result(system.name, ok, result, res, audit, error, keep, system.summary)


def _run_result(
    name: str,
    ok: bool,
    result: Any,
    res: LaunchResult,
    audit: Audit | None,
    error: str | None,
    keep: Path | None,
    summarize: Callable[[Any], list[str] | None] | None,
) -> RunResult:
    if error is None and not ok:
        failed = [n for n, r in res.reports.items() if not r.get("ok")]
        error = f"the run failed: {', '.join(failed) or 'a party'} did not succeed"
    return RunResult(
        system=name,
        ok=ok,
        result=result,
        parties=MappingProxyType(
            {n: PartyReport.from_report(n, r) for n, r in res.reports.items()}
        ),
        wall_s=res.wall_s,
        tree=from_json(audit.tree) if audit is not None and audit.tree is not None else None,
        sites=audit.sites if audit is not None else (),
        class_site=audit.class_site if audit is not None else None,
        accuracy=audit.accuracy if audit is not None else None,
        trust=audit.trust if audit is not None else None,
        error=error,
        deployment=res.directory if keep is not None else None,
        reports=MappingProxyType(res.reports),
        logs=MappingProxyType(res.logs),
        summarize=summarize,
    )


# ----------------------------------------------------------------------------- programs


def run_program(
    command: Sequence[str],
    inputs: Mapping[str, Mapping[str, Any]],
    *,
    name: str = "program",
    roles: Mapping[str, str] | None = None,
    params: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
    insecure: bool = False,
    keep: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Run a party program of one's own with every party as a local process over CurveZMQ.

    ``inputs`` maps each party's name to its private input (a JSON object: only that party's
    process reads it); ``command`` starts one party, e.g. ``[sys.executable, "my.py",
    "party"]``, whose code hands its arguments to :func:`party_main`. ``name`` and
    ``params`` go to the deployment file (``protocol.name``, ``protocol.params``); ``roles``
    default to ``"site"``. The result's ``result`` maps each party to what its program
    returned."""
    if len(inputs) < 2:
        raise ConfigError(f"inputs must name at least two parties, got {list(inputs)}")
    parties = [PartySpec(n, (roles or {}).get(n, "site"), dict(data)) for n, data in inputs.items()]
    if keep is not None:
        check_output(keep, kind="folder", option="keep")
    if timeout <= 0:
        raise ConfigError(f"timeout must be > 0 seconds, got {timeout}")
    res = launch(
        name, dict(params or {}), parties, timeout=timeout, insecure=insecure,
        keep=Path(keep) if keep is not None else None, progress=progress, command=command,
    )  # fmt: skip
    result = {n: r.get("result") for n, r in res.reports.items()} if res.ok else None
    return _run_result(name, res.ok, result, res, None, None, Path(keep) if keep else None, None)


def party_main(program: PartyProgram, argv: Sequence[str], *, prog: str = "party") -> int:
    """One party process of a program of one's own: ``argv`` is what :func:`run_program`
    (or an operator, as for ``python -m parties``) gives it, ``ROLE --config FILE --name NAME
    [--report FILE] [--insecure]``. The party reads its private input, connects to its
    peers, runs ``await program(party, inputs)`` and writes its report (result, error,
    metrics, ledger). Returns the exit code: 0 success, 1 the protocol failed, 2 a wrong
    configuration or input. ``prog`` names the command in its messages."""

    async def run(party: Party, cfg: DeploymentConfig, me: OwnParty) -> Any:
        return await program(party, load_party_data(me))

    return party_process(list(argv), prog=prog, program=run)


# ----------------------------------------------------------------------------- text


def _learned(ledger: list[dict[str, Any]]) -> str:
    """The ledger in one cell: every value when there are few (a long one cut short; --json
    prints it whole), else counts per label."""
    if not ledger:
        return "-"
    if len(ledger) <= 4:
        return "; ".join(f"{e['label']}={_cut(json.dumps(e['value']))}" for e in ledger)
    labels: dict[str, int] = {}
    for e in ledger:
        labels[e["label"]] = labels.get(e["label"], 0) + 1
    return ", ".join(f"{n} x {label}" for label, n in labels.items())


def _cut(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else f"{text[: limit - 15]}... ({len(text)} chars)"


def summary_text(
    doc: dict[str, Any], summarize: Callable[[Any], list[str] | None] | None = None
) -> str:
    """The summary ``mpc run`` prints of a run's JSON document (:meth:`RunResult.to_json`);
    ``summarize`` gives the system's own lines for the result."""
    lines = [f"system: {doc['system']}", f"ok:     {doc['ok']}", f"wall:   {doc['wall_s']} s"]
    own = summarize(doc["result"]) if doc["ok"] and summarize is not None else None
    if own is not None:
        lines += own
    elif doc["ok"]:
        lines.append(f"result: {json.dumps(doc['result'])}")
    lines.append("")
    header = (
        f"{'party':<10} {'role':<8} {'exit':>4} {'sent B':>9} {'recv B':>9} {'msgs':>5} "
        f"{'rounds':>6} {'crypto':<16} learned"
    )
    lines.append(header)
    for name, p in doc["parties"].items():
        m = p.get("metrics") or {}
        crypto = ",".join(f"{k}={v}" for k, v in (m.get("crypto") or {}).items()) or "-"
        learned = _learned(p.get("ledger") or [])
        lines.append(
            f"{name:<10} {p.get('role', ''):<8} {p.get('exit_code')!s:>4} "
            f"{m.get('bytes_sent', 0):>9} {m.get('bytes_received', 0):>9} "
            f"{m.get('messages_sent', 0):>5} {m.get('rounds', 0):>6} {crypto:<16} {learned}"
        )
    errors = [(n, p["error"]) for n, p in doc["parties"].items() if p.get("error")]
    if errors:
        lines.append("")
        lines.append("errors:")
        lines += [f"  {n}: {e.get('type')}: {e.get('message')}" for n, e in errors]
    if doc.get("deployment"):
        lines.append(f"\ndeployment kept in {doc['deployment']}")
    return "\n".join(lines)
