"""The ``mpc`` command: ``mpc keygen``, ``mpc run SYSTEM``, ``mpc deploy SYSTEM``,
``mpc party ROLE``, ``mpc ping``.

``mpc run SYSTEM`` starts one OS process per party on this machine over CurveZMQ, waits for
them and prints a summary (``--json``: one JSON document
``{"system", "ok", "result", "parties": {NAME: {"role", "metrics", "ledger", ...}}}``).
Its exit code is 0 only when every party succeeded. SIGINT (Ctrl-C) or SIGTERM stops any
command with one line on stderr and exit code 128 + the signal number (130, 143); a stopped
``mpc run`` first kills its parties and removes its temporary deployment. A standard output
closed early (``mpc ... | head``) ends the command quietly with exit code 141 (128 + SIGPIPE,
as a program killed by SIGPIPE reports it to the shell).

Every option that names a file or folder to write (``--report``, ``--out``, ``--model-out``,
...) is checked before the command does any work, under one rule: missing parent folders are
created (:data:`mpc.runtime.files.OUTPUT_RULE`); a path that cannot be written is a one-line error
with exit code 2, before any party starts. An option whose value is a list of numbers
(``--inputs -3,4,5``) takes a value that starts with a minus sign (:class:`NumberList
<parties.params.NumberList>`).

What the commands write for one party's eyes (keys, private inputs, reports, ledgers) is
mode 0600 in folders of mode 0700 (:mod:`mpc.runtime.files`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from mpc import __version__
from mpc.deployment.launcher import write_deployment
from mpc.errors import MPCError
from mpc.runtime.files import check_output, write_private
from mpc.runtime.keys import fingerprint, load_public_key, write_keypair
from mpc.runtime.monitor import ProgressLine, describe_progress
from mpc.runtime.signals import Stopped, stop_on_signals
from parties.api import run_planned
from parties.cli.check import add_check_parser, run_check
from parties.cli.parser import CommandParser, keep_negative_values, plain_text, walk
from parties.cli.predict import add_predict_parser, run_predict
from parties.cli.sanitize import add_sanitize_parser, run_sanitize
from parties.cli.train import add_datasets_parser, add_train_parser, run_datasets, run_train
from parties.forker import forker
from parties.main import main as party_main
from parties.main import ping_main
from parties.options import check_outputs
from parties.systems.base import System
from parties.systems.registry import SYSTEMS, get_system

__all__ = ["build_parser", "main", "plain_text"]

_EPILOG = """\
examples:
  mpc run secure-sum --parties 5 --inputs 3,1,4,1,5
  mpc run is-r-empty --flags 0,1,0 --json
  mpc run secure-sum --parties 4 --kill site3 --after 0 --timeout 5
  mpc train --learner id3 --dataset mushroom --cv 10
  mpc datasets
  mpc keygen --out keys site1 site2 site3
  mpc party site --config deployment.toml --name site1
  mpc ping --config deployment.toml --name site1 --secret-key keys/monitor.secret

output paths:
  every option that names a file or folder to write is checked before anything runs;
  missing parent folders are created (mode 0700); a path that cannot be written is an error

exit codes:
  0 success; 1 a party or the protocol failed; 2 a wrong option, input or output path;
  130 stopped by SIGINT (Ctrl-C), 143 by SIGTERM (parties killed, temporary files removed);
  141 standard output closed early (mpc ... | head)
"""

#: the exit code of a command whose standard output was closed (128 + SIGPIPE)
EXIT_BROKEN_PIPE = 141


def _add_common(p: CommandParser) -> None:
    g = p.add_argument_group("options of every system")
    g.add_argument(
        "--json", action="store_true", help="print one JSON document instead of a summary"
    )
    g.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the JSON document to FILE",
    )
    g.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="deadline in seconds for every receive and the startup handshake "
        "(default: 60); a dead peer ends the run within it",
    )
    g.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr while the parties run",
    )
    g.add_argument(
        "--insecure",
        action="store_true",
        help="plaintext ZeroMQ without CurveZMQ (debugging only; logged as a warning)",
    )
    g.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the deployment (keys, config, data, logs, reports) to DIR and keep it",
    )
    g.add_argument(
        "--kill",
        default=None,
        metavar="PARTY",
        help="fault injection: this party kills itself (SIGKILL) ...",
    )
    g.add_argument(
        "--after",
        type=int,
        default=0,
        metavar="N",
        help="... after sending N protocol messages (default: 0, right after startup)",
    )


def build_parser() -> CommandParser:
    """The ``mpc`` parser: every command, with plain-text help; every parser notes its
    output options in ``args.output_checks`` (checked before the command runs)."""
    parser = _build_parser()
    for p in walk(parser):
        if p.outputs:
            p.set_defaults(output_checks=list(p.outputs))
    return parser


def _build_parser() -> CommandParser:
    parser = CommandParser(
        prog="mpc",
        description="Privacy-preserving decision tree learning by secure multiparty "
        "computation: every party is its own process, talking over CurveZMQ.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"mpc-trees {__version__}",
        help="the release; every party of a deployment must run the same one",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    kg = sub.add_parser("keygen", help="write CurveZMQ key pairs (NAME.public, NAME.secret)")
    kg.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="output directory (made with mode 0700 unless --secrets takes the secret keys)",
    )
    kg.add_argument(
        "--secrets",
        type=Path,
        default=None,
        metavar="DIR",
        help="write each NAME.secret to DIR/NAME/ instead, a folder of its own to hand to "
        "that party alone; --out then holds only the public keys",
    )
    kg.add_argument("names", nargs="+", metavar="NAME", help="party names")

    run = sub.add_parser(
        "run",
        help="run a system with every party as a local process",
        description="Start one process per party on 127.0.0.1, wait for them, "
        "print the result, the cost and what each party learned.",
    )
    _per_system(run, _add_run)

    deploy = sub.add_parser(
        "deploy",
        help="write a deployment for parties on other hosts (one container or host each)",
        description="Plan a run as `mpc run` does (same options), but only write the "
        "deployment file and each party's private input to --out, with every party "
        "reachable at its own host name (a compose service name by default) and its public "
        "key read from --keys; then print how to start each party.",
    )
    _per_system(deploy, _add_deploy)
    add_datasets_parser(sub)
    add_train_parser(sub)
    add_predict_parser(sub)
    add_sanitize_parser(sub)
    add_check_parser(sub)
    party = sub.add_parser(
        "party", help="run one party of a deployment (as python -m parties)", add_help=False
    )
    party.add_argument("rest", nargs=argparse.REMAINDER)
    ping = sub.add_parser(
        "ping", help="health check: ping a running party (as python -m parties ping)",
        add_help=False,
    )  # fmt: skip
    ping.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def check_command_outputs(args: argparse.Namespace) -> None:
    """Check every output path of the parsed command (:func:`mpc.runtime.files.check_output`),
    before it does any work: missing parent folders are fine (they are created), a path that
    cannot be written raises :class:`~mpc.errors.ConfigError` naming the option and the path;
    a ``--plot`` without matplotlib says how to install it
    (:func:`parties.options.check_outputs`)."""
    check_outputs(getattr(args, "output_checks", None) or (), args)
    if getattr(args, "command", None) == "deploy" and getattr(args, "private", None):
        check_output(Path(args.out) / args.private, kind="folder", option="--private")


def _per_system(
    parser: CommandParser, add_options: Callable[[CommandParser, System], None]
) -> None:
    """One sub-command per system under ``parser``: the system's own options, then ours."""
    systems = parser.add_subparsers(dest="system", required=True, metavar="SYSTEM")
    for system in SYSTEMS.values():
        sp = systems.add_parser(system.name, help=system.help, description=system.help)
        system.options.add_arguments(sp)
        add_options(sp, system)


def _add_run(p: CommandParser, system: System) -> None:
    """The options of ``mpc run SYSTEM``: those of every system, and ``--plot`` for a
    system whose audit has a tree."""
    _add_common(p)
    if system.has_tree:
        p.add_argument(
            "--plot",
            type=Path,
            default=None,
            metavar="FILE",
            help="draw the tree (assembled from every site's own nodes, as the summary shows "
            "it) to FILE.svg or FILE.png, interior nodes coloured by the site that holds them, "
            "leaves with their class counts (needs matplotlib: the experiments extra)",
        )


def _add_deploy(p: CommandParser, system: System) -> None:
    g = p.add_argument_group("options of mpc deploy")
    g.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    g.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="NAME=HOST",
        help="where party NAME is reached (repeatable; default: its own name, as a compose "
        "service or a DNS name)",
    )
    g.add_argument(
        "--bind",
        action="append",
        default=[],
        metavar="NAME=ADDRESS",
        help="where party NAME listens (repeatable; default: its --host when that is a "
        "loopback address, else 0.0.0.0, every interface); a party can also be started with "
        "`python -m parties ... --bind tcp://ADDRESS:PORT`",
    )
    g.add_argument(
        "--port",
        type=int,
        default=5700,
        metavar="P",
        help="the i-th party listens on port P + i (default 5700); open it in the firewall",
    )
    g.add_argument(
        "--keys",
        default=None,
        metavar="DIR",
        help="the folder holding NAME.public (default: keys, next to the deployment file); a "
        "relative DIR is taken from the current directory, as every path here is, and written "
        "into the deployment file relative to it; an absolute one as the parties see it "
        "(/public/keys in the containers)",
    )
    g.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="deadline in seconds for every receive and the startup handshake (default 60)",
    )
    g.add_argument("--insecure", action="store_true", help="plaintext ZeroMQ (debugging only)")
    g.add_argument(
        "--monitor",
        action="store_true",
        help="admit the monitor key KEYS/monitor.public: its holder may ping every party "
        "(health checks, `mpc ping`) and do nothing else",
    )
    g.add_argument(
        "--private",
        default=None,
        metavar="DIR",
        help="write each party's private input to DIR/NAME/SYSTEM.json, a folder of its own "
        "to hand to that party alone (DIR as the parties see it; relative to --out), instead "
        "of --out/data/NAME.json; --out then holds only the deployment file",
    )


def _deploy(args: argparse.Namespace) -> int:
    system = get_system(args.system)
    plan = system.plan(system.options.from_namespace(args), deploy=True)
    names = [p.name for p in plan.parties]
    hosts: dict[str, str] = {}
    for item in args.host:
        name, sep, host = item.partition("=")
        if not sep or not host or name not in names:
            raise MPCError(f"--host {item!r}: expected NAME=HOST with NAME one of {names}")
        hosts[name] = host
    if not 1 <= args.port <= 65535 - len(names):
        raise MPCError(f"--port must leave room for {len(names)} ports below 65536")
    binds: dict[str, str] = {}
    for item in args.bind:
        name, sep, host = item.partition("=")
        if not sep or not host or name not in names:
            raise MPCError(f"--bind {item!r}: expected NAME=ADDRESS with NAME one of {names}")
        binds[name] = host
    endpoints = [
        (
            f"tcp://{hosts.get(n, n)}:{args.port + i}",
            f"tcp://{binds.get(n, _listen_on(hosts.get(n)))}:{args.port + i}",
        )
        for i, n in enumerate(names)
    ]
    if args.monitor and args.insecure:
        raise MPCError("--monitor needs keys; an --insecure deployment lets anyone ping")
    keys = _keys_seen_from(args.out, args.keys)
    path = write_deployment(
        args.out, system.name, plan.params, plan.parties, timeout=args.timeout,
        insecure=args.insecure, endpoints=endpoints, keys=keys, monitor=args.monitor,
        private=args.private,
    )  # fmt: skip
    inputs = [p for p in plan.parties if p.data is not None or p.csv is not None]
    if not inputs:
        print(f"wrote {path} (public: endpoints, keys, parameters; no data)")
    elif args.private is None:
        print(f"wrote {path} and {len(inputs)} private input files in {args.out / 'data'}")
    else:
        folder = os.path.normpath(args.out / args.private)
        print(
            f"wrote {path} and {len(inputs)} private input files as "
            f"{folder}/NAME/{system.name}.* (a folder per party)"
        )
    keys = keys if Path(keys).is_absolute() else os.path.normpath(args.out / keys)
    print(
        f"keys: each party makes its own pair on its own host (mpc keygen --out keys NAME), "
        f"keeps NAME.secret there and sends NAME.public, to be put in {keys}/"
    )
    for spec, (endpoint, bind) in zip(plan.parties, endpoints, strict=True):
        own = " --data ITS.csv" if "id" in spec.entries and spec.csv is None else ""
        print(
            f"{spec.name:<8} at {endpoint} (listens on {bind.split('//')[1]}): python -m parties "
            f"{spec.role} --config {path} --name {spec.name} --secret-key keys/{spec.name}.secret"
            f"{own}"
        )
    folder = Path(keys)
    print("fingerprints, to compare with each party over another channel:")
    for name in [*names, "monitor"] if args.monitor else names:
        try:
            print(f"{name:<8} {fingerprint(load_public_key(folder / f'{name}.public'))}")
        except MPCError:
            print(f"{name:<8} missing: {folder / f'{name}.public'} (ask {name} for it)")
    return 0


def _keys_seen_from(out: Path, keys: str | None) -> str:
    """``--keys`` as the deployment file in ``out`` names it: ``keys`` by default (beside
    the file), an absolute folder as given, a relative one (from the current directory)
    relative to ``out``."""
    if keys is None:
        return "keys"
    if Path(keys).is_absolute():
        return keys
    return os.path.relpath(keys, out)


def _listen_on(host: str | None) -> str:
    """Where a party listens by default: the address others reach it at when that is a
    loopback address (a local deployment stays on the loopback), else every interface (a
    host or service name resolves to one of this host's addresses)."""
    if host is not None and (host == "localhost" or host.startswith("127.") or host == "::1"):
        return host
    return "0.0.0.0"


class _RunProgress(ProgressLine):
    """The progress lines of ``mpc run``: the parties' reports (``NAME: TEXT``) in words
    (:func:`mpc.runtime.monitor.describe_progress`), as a status line on a terminal."""

    def update(self, line: str) -> None:
        name, sep, text = line.partition(": ")
        super().update(f"{name}: {describe_progress(text)}" if sep else describe_progress(line))


def _run(args: argparse.Namespace) -> int:
    system = get_system(args.system)
    if args.after < 0:
        raise MPCError(f"--after must be >= 0, got {args.after}")
    # The zygote that forks the parties is made before anything reads a table or a key.
    with forker() as zygote:
        plan = system.plan(system.options.from_namespace(args))
        if not args.quiet:  # a note (a column read as continuous) matters with --json too
            for note in plan.notes:
                print(f"[mpc] {note}", file=sys.stderr)
        display = None if args.json or args.quiet else _RunProgress(sys.stderr, "[mpc] ")
        if args.insecure:
            logging.getLogger("mpc").warning(
                "--insecure: parties talk in plaintext, unauthenticated"
            )
        try:
            run = run_planned(
                system, plan, timeout=args.timeout, insecure=args.insecure, keep=args.keep,
                kill=(args.kill, args.after) if args.kill else None, progress=display,
                forker=zygote,
            )  # fmt: skip
        finally:
            if display is not None:
                display.close()
    if not run.ok and all(r.ok for r in run.parties.values()):
        print(f"mpc: {run.error}", file=sys.stderr)  # the parties agreed on no result
    # (the document of a large run takes a while to write: only when it is asked for)
    text = json.dumps(run.to_json(), indent=2) if args.report or args.json else ""
    if args.report:
        write_private(args.report, text + "\n")
    picture = None
    if getattr(args, "plot", None) is not None and run.tree is not None:
        picture = run.plot(args.plot)
    if args.json:
        print(text)
    else:
        print(run.summary())
        if picture is not None:
            left = f"; {picture.left_out} nodes left out" if picture.left_out else ""
            print(f"\npicture: {picture.path} ({picture.drawn} nodes drawn{left})")
        if not run.ok:
            for n, r in run.reports.items():
                if r.get("exit_code") not in (0,) and run.logs.get(n):
                    tail = run.logs[n].strip().splitlines()[-3:]
                    print(f"\nlast log lines of {n}:\n  " + "\n  ".join(tail), file=sys.stderr)
    return 0 if run.ok else 1


def main(argv: list[str] | None = None) -> int:
    """The ``mpc`` command; returns its exit code (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    try:
        with stop_on_signals():
            code = _main(argv)
            sys.stdout.flush()  # a closed standard output shows here, not at exit
            return code
    except Stopped as exc:  # (a signal that comes again is ignored: one line, whatever happens)
        print(f"mpc: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    except MPCError as exc:
        print(f"mpc: error: {exc}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    if argv[:1] == ["party"]:
        return party_main(argv[1:], prog="mpc party")
    if argv[:1] == ["ping"]:
        return ping_main(argv[1:], prog="mpc ping")
    parser = build_parser()
    lists = {flag for p in walk(parser) for flag in p.number_lists}
    args, extra = parser.parse_known_args(keep_negative_values(argv, lists))
    if extra:  # said under the usage of the command they were given to, not the top level's
        parser.chosen(args).error(f"unrecognized arguments: {' '.join(extra)}")
    check_command_outputs(args)
    return _dispatch(args)


def _stdout_to_devnull() -> None:
    """Point standard output at /dev/null, so that flushing it at exit raises nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with contextlib.suppress(OSError, ValueError):  # no stdout, or no file behind it
            os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _dispatch(args: argparse.Namespace) -> int:
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "datasets": run_datasets, "train": run_train, "predict": run_predict,
        "deploy": _deploy, "sanitize": run_sanitize, "check": run_check, "keygen": _keygen,
        "run": _run,
    }  # fmt: skip
    return commands[args.command](args)


def _keygen(args: argparse.Namespace) -> int:
    for name in args.names:
        pair = write_keypair(args.out, name, secret_dir=args.secrets)
        secret = (args.secrets / name if args.secrets else args.out) / f"{name}.secret"
        print(
            f"{name}: {args.out / (name + '.public')} (fingerprint {fingerprint(pair.public)}"
            f"; send it to whoever writes the deployment file), {secret} (secret, mode "
            "0600; it stays on this host)"
        )
    return 0
