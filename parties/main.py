"""Entry point of one party process: ``python -m parties ROLE --config FILE --name NAME``
(``--config`` and ``--name`` default to ``$MPC_CONFIG`` and ``$MPC_PARTY``).

The process reads the deployment file, reads and checks its own input (its file with its
columns and ids, its saved model part: the system's ``check``), loads its own secret key and
the peers' public keys, opens the ZeroMQ runtime (CurveZMQ unless ``--insecure``), runs the
configured system's party program and writes a JSON report (result, error, metrics, ledger;
mode 0600, as it is the party's private output). A wrong input is said at once, before the
party waits for anyone; its peers are told that it stopped and why, in public words (the
notices wait at most one deadline for them). Exit codes: 0 on success, 1 when the protocol
failed (peer silent or dead, abort, protocol error), 2 when the configuration or input is
wrong (nothing was started).

``python -m parties ping --config FILE --name NAME`` is the health check of a running party:
it sends a PING with the deployment's monitor key (``--secret-key`` or
``$MPC_MONITOR_KEY_FILE``) and exits 0 when the party answers and has not failed, 1 when it
does not answer (or refuses the key, or has failed), 2 when the configuration is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from mpc import __version__
from mpc.crypto import randomness
from mpc.errors import ConfigError, InputError, MPCError, PeerError, ProtocolError
from mpc.runtime.config import DeploymentConfig, agreement, check_endpoint
from mpc.runtime.faults import Fault
from mpc.runtime.files import OUTPUT_RULE, check_output, write_private
from mpc.runtime.keys import load_public_key, load_secret_key
from mpc.runtime.metrics import jsonable
from mpc.runtime.monitor import ping
from mpc.runtime.party import Party
from mpc.runtime.signals import STOP_SIGNALS, Stopped
from mpc.runtime.transport import PeerAddress, ZmqTransport
from parties.own_party import OwnParty, load_deployment, own_party
from parties.params import column_list
from parties.programs.registry import no_input, program_of

__all__ = ["PROG", "build_parser", "check_party_outputs", "main", "own_files"]

log = logging.getLogger("mpc.party")

#: ``MPC_VIEW=1``: the report also holds the party's whole view (every public and declared
#: message as received, the skeletons and payload statistics of the uniform ones), for the
#: record-swap tests (:class:`mpc.runtime.view.ViewRecorder`)
VIEW_ENV = "MPC_VIEW"

#: ``MPC_STRICT_RECEIPTS=1`` (the tests set it): a party that received a message no receive
#: took (listed as ``undeclared`` in its report) fails, instead of only listing it
STRICT_ENV = "MPC_STRICT_RECEIPTS"

#: what a party process runs once its runtime is up (a system's ``run``)
RunProgram = Callable[[Party, DeploymentConfig, OwnParty], Awaitable[Any]]
#: what it does first, before it waits for anyone: read and check its own input
Check = Callable[[DeploymentConfig, OwnParty], None]


def _add_identity(p: argparse.ArgumentParser) -> None:
    """``--config`` and ``--name``, defaulting to ``$MPC_CONFIG`` and ``$MPC_PARTY`` (so that
    a container's command and its healthcheck share one setting)."""
    config, name = os.environ.get("MPC_CONFIG"), os.environ.get("MPC_PARTY")
    p.add_argument(
        "--config",
        required=not config,
        default=Path(config) if config else None,
        type=Path,
        help="the deployment TOML file (default: $MPC_CONFIG)",
    )
    p.add_argument(
        "--name",
        required=not name,
        default=name,
        help="this party's name in the deployment file (default: $MPC_PARTY)",
    )


#: the command that runs a party (``mpc party`` passes its own name)
PROG = "python -m parties"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run one party of a deployment as this process. Output paths (--report, "
        "--model-out, --predictions-out) are checked before the party connects.",
    )
    p.add_argument("role", help="this party's role; must match its entry in the deployment file")
    _add_identity(p)
    p.add_argument(
        "--secret-key",
        type=Path,
        default=None,
        help="this party's secret key file (default: its `secret_key` entry, "
        "else $MPC_SECRET_KEY_FILE)",
    )
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        help=f"write the JSON report here (default: print it to stdout); {OUTPUT_RULE}",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="plaintext, unauthenticated ZeroMQ (debugging only; every party must agree)",
    )
    p.add_argument(
        "--bind",
        default=None,
        metavar="tcp://ADDRESS:PORT",
        help="where this party listens (default: its `bind` entry, else its endpoint): this "
        "host's business, e.g. one interface of several",
    )
    add_own_files(p)
    faults = p.add_mutually_exclusive_group()
    faults.add_argument(
        "--kill-after",
        type=int,
        default=None,
        metavar="N",
        help="fault injection: SIGKILL this process after it sent N protocol messages",
    )
    faults.add_argument(
        "--stop-after",
        type=int,
        default=None,
        metavar="N",
        help="fault injection: SIGSTOP this process after it sent N protocol messages (it "
        "goes on when sent SIGCONT)",
    )
    faults.add_argument(
        "--compute-after",
        type=int,
        default=None,
        metavar="N",
        help="fault injection: after it sent N protocol messages, compute for --compute-for "
        "seconds without yielding (a busy party, not a dead one), then go on",
    )
    p.add_argument(
        "--compute-for",
        type=float,
        default=None,
        metavar="S",
        help="how long --compute-after computes, in seconds",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def add_own_files(p: argparse.ArgumentParser) -> None:
    """The party's own files, each over its entry in the deployment file."""
    own = p.add_argument_group(
        "this party's own files (each overrides the party's entry in the deployment file)"
    )
    own.add_argument(
        "--data",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="this party's own CSV file with a header row: its record id column, its "
        "attributes and (on the party that holds it) the class; the process reads no other "
        "party's file",
    )
    own.add_argument(
        "--id",
        dest="id_column",
        default=None,
        metavar="COLUMN",
        help="the record id column of --data: every party holds the same records under the "
        "same ids, in any row order (checked before training without revealing the ids)",
    )
    own.add_argument(
        "--delimiter", default=None, metavar="C", help="the CSV's field delimiter (default ',')"
    )
    own.add_argument(
        "--nominal",
        default=None,
        type=column_list,
        metavar="COL,...",
        help="numeric columns to read as categories (coded grades, 0/1 flags)",
    )
    own.add_argument(
        "--continuous",
        default=None,
        type=column_list,
        metavar="COL,...",
        help="columns to read as numbers (binned for the ID3 family); other numeric columns "
        "are continuous too unless --nominal names them",
    )
    own.add_argument(
        "--ignore",
        default=None,
        type=column_list,
        metavar="COL,...",
        help="columns of --data the model leaves out (free text, a second key); a column the "
        "deployment does not list for this party is left out too",
    )
    own.add_argument(
        "--missing",
        default=None,
        type=column_list,
        metavar="M,...",
        help="more cell values of --data that mean missing, such as NA,n/a (a blank cell and "
        "? always do)",
    )
    own.add_argument(
        "--model-out",
        type=Path,
        default=None,
        metavar="FILE",
        help="after training, write this party's part of the model here (private JSON); "
        f"{OUTPUT_RULE}",
    )
    own.add_argument(
        "--model",
        type=Path,
        default=None,
        metavar="FILE",
        help="classify --data's records with this saved model part (no training)",
    )
    own.add_argument(
        "--predictions-out",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="where this party writes the predictions (id, class) if it receives them; "
        f"{OUTPUT_RULE}",
    )


def build_ping_parser(prog: str = f"{PROG} ping") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Health check: PING a running party over its own protocol (CurveZMQ with "
        "the deployment's monitor key) and print its PONG.",
    )
    _add_identity(p)
    p.add_argument(
        "--secret-key",
        type=Path,
        default=None,
        help="the monitor's secret key file (default: $MPC_MONITOR_KEY_FILE)",
    )
    p.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="wait at most S seconds (5)"
    )
    return p


def ping_main(argv: list[str], *, prog: str = f"{PROG} ping") -> int:
    """``python -m parties ping``: 0 healthy, 1 no (good) answer, 2 bad configuration."""

    args = build_ping_parser(prog).parse_args(argv)
    try:
        cfg = load_deployment(args.config)
        target = cfg.party(args.name)
        server_key, monitor = None, None
        if not cfg.insecure:
            if cfg.monitor_key is None:
                raise ConfigError(
                    f"{cfg.path}: no deployment.monitor_key, so no party admits a monitor; "
                    "write the deployment with `mpc deploy ... --monitor`"
                )
            env_key = os.environ.get("MPC_MONITOR_KEY_FILE")
            secret_path = args.secret_key or (Path(env_key) if env_key else None)
            if secret_path is None:
                raise ConfigError("no monitor key: give --secret-key or MPC_MONITOR_KEY_FILE")
            monitor = load_secret_key(secret_path)
            if monitor.public != load_public_key(cfg.monitor_key):
                raise ConfigError(
                    f"{secret_path} is not the secret key of the deployment's monitor_key "
                    f"{cfg.monitor_key}"
                )
            if target.public_key is None:
                raise ConfigError(f"party {target.name!r} has no public_key")
            server_key = load_public_key(target.public_key)
    except MPCError as exc:
        print(f"ping: error: {exc}", file=sys.stderr)
        return 2
    try:
        pong = ping(
            target.name,
            target.endpoint,
            server_key=server_key,
            monitor=monitor,
            timeout=args.timeout,
            max_frame_bytes=cfg.max_frame_bytes,
        )
    except MPCError as exc:
        print(f"ping: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(
        f"{pong.name} ({pong.role}) at {target.endpoint}: {pong.state}, protocol version "
        f"{pong.version}, {pong.round_trip_s * 1000:.1f} ms"
    )
    return 1 if pong.state == "failed" else 0


def own_files(me: OwnParty, args: argparse.Namespace) -> OwnParty:
    """This party's entry with its command-line file options applied over the deployment's."""
    changes: dict[str, Any] = {}
    for key, flag in (("data", "data"), ("model_out", "model_out"), ("model", "model")):
        if getattr(args, flag, None) is not None:
            changes[key] = getattr(args, flag)
    if getattr(args, "predictions_out", None) is not None:
        changes["predictions"] = args.predictions_out
    if getattr(args, "id_column", None) is not None:
        changes["id_column"] = args.id_column or None
    if getattr(args, "delimiter", None) is not None:
        if len(args.delimiter) != 1:
            raise ConfigError(f"--delimiter: expected one character, got {args.delimiter!r}")
        changes["delimiter"] = args.delimiter
    if getattr(args, "nominal", None) is not None:
        changes["nominal"] = args.nominal
    if getattr(args, "continuous", None) is not None:
        changes["continuous"] = args.continuous
    if getattr(args, "missing", None) is not None:
        changes["missing"] = args.missing
    if getattr(args, "ignore", None) is not None:
        changes["ignore"] = tuple(args.ignore)
    if getattr(args, "bind", None) is not None:
        changes["bind"] = check_endpoint(args.bind, "--bind")
    return dataclasses.replace(me, **changes)


def _error_dict(exc: BaseException) -> dict[str, Any]:
    err: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, PeerError):
        err["peer"], err["step"] = exc.peer, exc.step
    return err


def _fault(args: argparse.Namespace) -> Fault | None:
    if (args.compute_after is None) != (args.compute_for is None):
        raise ConfigError("--compute-after N and --compute-for S go together")
    if args.kill_after is not None:
        return Fault(args.kill_after, "kill")
    if args.stop_after is not None:
        return Fault(args.stop_after, "stop")
    if args.compute_after is not None:
        if not args.compute_for > 0:
            raise ConfigError(f"--compute-for: expected seconds > 0, got {args.compute_for}")
        return Fault(args.compute_after, "compute", args.compute_for)
    return None


def _transport(cfg: DeploymentConfig, me: OwnParty, args: argparse.Namespace) -> ZmqTransport:
    if args.insecure:
        log.warning(
            "%s: --insecure: messages travel in plaintext and peers are NOT authenticated", me.name
        )
        keypair = None
        monitor_key = None
        peers = {p.name: PeerAddress(p.endpoint, None) for p in cfg.parties if p.name != me.name}
    else:
        if cfg.insecure:
            raise ConfigError(
                f"{cfg.path}: deployment.insecure = true, but this party was not "
                "started with --insecure; pass it to confirm plaintext"
            )
        secret_path = (
            args.secret_key
            or me.secret_key
            or (
                Path(os.environ["MPC_SECRET_KEY_FILE"])
                if os.environ.get("MPC_SECRET_KEY_FILE")
                else None
            )
        )
        if secret_path is None:
            raise ConfigError(
                f"party {me.name!r}: no secret key; give --secret-key, a "
                "`secret_key` entry or MPC_SECRET_KEY_FILE"
            )
        pair = load_secret_key(secret_path)
        assert me.public_key is not None  # load_config requires it when secure
        if load_public_key(me.public_key) != pair.public:
            raise ConfigError(
                f"party {me.name!r}: secret key {secret_path} does not belong to "
                f"the public key {me.public_key} named in the deployment file"
            )
        keypair = (pair.public, pair.secret)
        monitor_key = load_public_key(cfg.monitor_key) if cfg.monitor_key else None
        peers = {}
        for p in cfg.parties:
            if p.name != me.name:
                assert p.public_key is not None
                peers[p.name] = PeerAddress(p.endpoint, load_public_key(p.public_key))
    return ZmqTransport(
        me.name,
        me.bind,
        peers,
        keypair=keypair,
        max_frame_bytes=cfg.max_frame_bytes,
        monitor_key=monitor_key,
    )


def _party(cfg: DeploymentConfig, me: OwnParty, args: argparse.Namespace) -> Party:
    return Party(
        me.name,
        me.role,
        cfg.names,
        _transport(cfg, me, args),
        timeout=cfg.timeout,
        max_frame_bytes=cfg.max_frame_bytes,
        fault=_fault(args),
        record_view=os.environ.get(VIEW_ENV) == "1",
        agreement=agreement(cfg, __version__),
    )


async def _refuse(
    cfg: DeploymentConfig, me: OwnParty, args: argparse.Namespace, exc: ConfigError
) -> None:
    """This party's own input is wrong: tell its peers that it stopped and why (in public
    words), waiting at most one deadline for them to be up."""
    peers = [n for n in cfg.names if n != me.name]
    log.info(
        "%s: telling %s that it stopped (each notice waits at most %g s for its peer)",
        me.name, ", ".join(peers), cfg.timeout,
    )  # fmt: skip
    try:
        await _party(cfg, me, args).refuse(exc)
    except MPCError as err:  # its keys, its port: it cannot tell them
        log.error("%s: could not tell its peers: %s: %s", me.name, type(err).__name__, err)


async def _run(
    cfg: DeploymentConfig,
    me: OwnParty,
    args: argparse.Namespace,
    report: dict[str, Any],
    program: RunProgram,
    check: Check,
) -> int:
    record_view = os.environ.get(VIEW_ENV) == "1"
    fixed = randomness.fixed_seed_of(me.name, os.environ)
    if fixed is not None and not record_view:
        raise ConfigError(
            f"{randomness.FIXED_ENV} fixes a party's randomness for a view test, so it needs "
            f"{VIEW_ENV}=1 beside it; unset {randomness.FIXED_ENV}"
        )
    source = contextlib.nullcontext() if fixed is None else randomness.fixed(*fixed)
    if fixed is not None:
        what = "all of it" if fixed[1] is None else ", ".join(fixed[1])
        log.warning("%s: randomness fixed by %s for a view test (%s): this party protects "
                    "nothing", me.name, randomness.FIXED_ENV, what)  # fmt: skip
        report["randomness"] = f"fixed for a view test ({what})"
    with source:  # the input check and the run draw from the same source
        return await _checked_run(cfg, me, args, report, program, check)


async def _checked_run(
    cfg: DeploymentConfig,
    me: OwnParty,
    args: argparse.Namespace,
    report: dict[str, Any],
    program: RunProgram,
    check: Check,
) -> int:
    """The party's own input checked before it waits for anyone, then its run."""
    try:  # its own input first: a wrong file is said now, not after waiting for the others
        check(cfg, me)
    except ConfigError as exc:
        log.error("%s: %s: %s", me.name, type(exc).__name__, exc)
        report["error"] = _error_dict(exc)
        await _refuse(cfg, me, args, exc)
        return 2
    party = _party(cfg, me, args)
    rc = 0
    try:
        await _run_program(party, cfg, me, report, program)
    except MPCError as exc:
        log.error("%s: %s: %s", me.name, type(exc).__name__, exc)
        report["error"] = _error_dict(exc)
        rc = 2 if isinstance(exc, InputError) else 1  # this party's own input is wrong
    except Exception as exc:
        log.error("%s: unexpected error:\n%s", me.name, traceback.format_exc())
        report["error"] = _error_dict(exc)
        rc = 1
    report.update(party.report())
    unclaimed = [r for r in report["received"] if r["kind"] == "undeclared"]
    if rc == 0 and unclaimed and os.environ.get(STRICT_ENV) == "1":
        what = ", ".join(f"{r['tag']} from {r['from']} ({r['messages']})" for r in unclaimed)
        log.error("%s: received messages that no receive declared: %s", me.name, what)
        report["error"] = _error_dict(
            ProtocolError(f"{me.name}: received messages that no receive declared: {what}")
        )
        rc = 1
    report["ok"] = rc == 0
    return rc


async def _run_program(
    party: Party, cfg: DeploymentConfig, me: OwnParty, report: dict[str, Any], program: RunProgram
) -> None:
    async with party:
        log.info("%s: connected to %s; running %s", me.name, ", ".join(party.peers), cfg.protocol)
        report["result"] = jsonable(await program(party, cfg, me))


async def _run_stoppable(
    cfg: DeploymentConfig,
    me: OwnParty,
    args: argparse.Namespace,
    report: dict[str, Any],
    program: RunProgram,
    check: Check,
) -> int:
    """:func:`_run`, ended cleanly by SIGINT or SIGTERM: the first signal cancels the run
    (the party tells its peers that it stops and closes its sockets), then :class:`Stopped`
    is raised for the caller to print one line and exit 128 + the signal number. Signals
    that come again during the cleanup are ignored; signals the process was told to ignore
    stay ignored. The handlers go through the event loop, so a signal never lands in the
    middle of a task's step."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    got: list[int] = []

    def stop(signum: int) -> None:
        if not got and task is not None:
            got.append(signum)
            # the message is what the abort notice tells the peers
            task.cancel(f"{me.name} was interrupted by {signal.Signals(signum).name}")

    in_main = threading.current_thread() is threading.main_thread()
    handled = [s for s in STOP_SIGNALS if in_main and signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.getsignal(s) for s in handled}
    for s in handled:
        loop.add_signal_handler(s, stop, s)
    try:
        return await _run(cfg, me, args, report, program, check)
    except asyncio.CancelledError:
        if got:
            raise Stopped(got[0]) from None
        raise
    finally:
        for s in handled:
            loop.remove_signal_handler(s)
            old = previous[s]
            signal.signal(s, old if old is not None else signal.SIG_DFL)


def check_party_outputs(me: OwnParty) -> None:
    """Refuse, before the party connects, a model or predictions file it could not write
    (:func:`mpc.runtime.files.check_output`); the message names the option and the path."""
    for path, option in ((me.model_out, "--model-out"), (me.predictions, "--predictions-out")):
        if path is not None:
            check_output(path, kind="file", option=f"{me.name}: {option}")


def report_text(report: dict[str, Any]) -> str:
    """A party's report as JSON text, one line per top-level key: every value goes through
    the json module's C encoder (an ``indent`` would use its pure-Python one, seconds a party
    for a large tree's ledger)."""
    items = [f"  {json.dumps(str(k))}: {json.dumps(v)}" for k, v in report.items()]
    return "{\n" + ",\n".join(items) + "\n}" if items else "{}"


def main(
    argv: Sequence[str] | None = None, *, prog: str = PROG, program: RunProgram | None = None
) -> int:
    """One party process: ``argv`` as the module docstring says (default: ``sys.argv``).
    The party runs its system's program (``protocol.name`` of the deployment file), or
    ``program`` when one is given (a party program of one's own, whatever the name)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["ping"]:
        return ping_main(argv[1:], prog=f"{prog} ping")
    args = build_parser(prog).parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format=f"%(asctime)s {args.name} %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    report: dict[str, Any] = {
        "name": args.name,
        "role": args.role,
        "ok": False,
        "result": None,
        "error": None,
    }
    if args.report:
        try:  # where the report goes must be writable before anything else happens
            check_output(args.report, kind="file", option="--report")
        except ConfigError as exc:
            log.error("%s: %s: %s", args.name, type(exc).__name__, exc)
            return 2
    try:
        cfg = load_deployment(args.config)
        me = own_files(own_party(cfg, args.name), args)
        check_party_outputs(me)
        if me.role != args.role:
            raise ConfigError(
                f"party {me.name!r} has role {me.role!r} in {cfg.path}, "
                f"but was started as {args.role!r}"
            )
        check: Check = no_input  # a program of one's own reads its input as it likes
        if program is None:
            system = program_of(cfg.protocol)
            if me.role not in system.roles:
                raise ConfigError(
                    f"system {cfg.protocol!r} has roles {sorted(system.roles)}, not {me.role!r}"
                )
            program, check = system.run, system.check
        rc = asyncio.run(_run_stoppable(cfg, me, args, report, program, check))
    except MPCError as exc:  # configuration, keys, input: nothing was started
        log.error("%s: %s: %s", args.name, type(exc).__name__, exc)
        report["error"] = _error_dict(exc)
        rc = 2
    text = report_text(report)
    if args.report:  # private (0600, its folder 0700 if made here) and written atomically
        write_private(args.report, text)
    else:
        print(text)
    return rc
