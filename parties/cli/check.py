"""``mpc check``: what an organisation verifies on its own host before it runs its party.

A deployment file arrives from whoever wrote it (``mpc deploy``). Before starting its party,
an organisation checks, on its own host and with its own files only:

* the key fingerprint of every party in the file, to compare with what each organisation read
  out over another channel (a phone call): a key swapped in transit shows here;
* the agreement digest: one short code over everything the parties must read alike (release,
  protocol and parameters, parties and their columns, public keys, deadlines). The parties
  compare it in their handshake and refuse to run on a difference; comparing it beforehand
  finds a stale copy of the file before anybody waits on a deadline;
* with ``--name``: that its secret key is the half of the public key the file names for it,
  and that its CSV (``--data``) has its id column and its columns, read as its party will
  read it: with the same options its party takes (``--id``, ``--delimiter``, ``--nominal``,
  ``--continuous``, ``--ignore``, ``--missing``, ``--model``, ...), over its deployment entry,
  and then checked by the system's own party program as before a run (a saved model part
  and its new records, too).

Nothing is sent anywhere; the command reads the deployment file, the public keys it names and
the organisation's own key and CSV.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from mpc import __version__
from mpc.errors import ConfigError, MPCError
from mpc.runtime.config import agreement
from mpc.runtime.keys import fingerprint, load_public_key, load_secret_key
from parties.main import add_own_files, check_party_outputs, own_files
from parties.own_data import read_own_table
from parties.own_party import OwnParty, load_deployment, own_party
from parties.programs.registry import PROGRAMS

__all__ = ["add_check_parser", "agreement_code", "run_check"]


def agreement_code(digests: dict[str, str]) -> str:
    """One short code for a deployment's agreement digests (:func:`mpc.runtime.config.
    agreement`), grouped for reading aloud: equal codes, equal deployments."""
    text = json.dumps(digests, sort_keys=True).encode()
    digest = hashlib.sha256(b"mpc-trees/agreement/v1\0" + text).hexdigest()[:20]
    return " ".join(digest[i : i + 4] for i in range(0, 20, 4))


def add_check_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="check a deployment file on this host: key fingerprints, the agreement code, "
        "this party's key and CSV",
        description="Print what a deployment file says (system, parameters, every party's "
        "endpoint and key fingerprint) and its agreement code, which must be the same at "
        "every organisation; with --name, check this party's own secret key and CSV as its "
        "party will read them. Reads only local files; sends nothing.",
    )
    p.add_argument("--config", type=Path, required=True, metavar="FILE",
                   help="the deployment file received (deployment.toml)")  # fmt: skip
    p.add_argument("--name", default=None, metavar="NAME",
                   help="this host's party: check its secret key and its CSV")  # fmt: skip
    p.add_argument("--secret-key", type=Path, default=None, metavar="FILE",
                   help="its secret key file (default: its `secret_key` entry)")  # fmt: skip
    add_own_files(p)  # every file option its party takes, read as its party reads them


def _class_column(cfg_params: dict[str, Any], me: OwnParty, header: list[str]) -> str | None:
    """The class column this party's file is read with: the protocol's ``class`` when the
    party holds it (PPID3's ``class_site``; elsewhere, when its header has it)."""
    name = cfg_params.get("class")
    if not isinstance(name, str):
        return None
    if cfg_params.get("class_site") == me.name:
        return name
    return name if name in header and "class_site" not in cfg_params else None


def run_check(args: argparse.Namespace) -> int:
    cfg = load_deployment(args.config)
    code = agreement_code(agreement(cfg, __version__))
    params = ", ".join(f"{k}={v}" for k, v in cfg.params.items() if not isinstance(v, dict))
    print(f"deployment: {cfg.path} ({cfg.protocol}, release {__version__})")
    print(f"parameters: {params}")
    print(f"agreement:  {code}  (the same at every organisation, or the parties refuse to run)")
    for p in cfg.parties:
        if p.public_key is None:
            key = "no key (an --insecure deployment)"
        else:
            key = f"key {fingerprint(load_public_key(p.public_key))}"
        columns = f"  columns {','.join(p.columns)}" if p.columns else ""
        print(f"{p.name:<8} {p.role:<6} {p.endpoint:<32} {key}{columns}")
    if args.name is None:
        if args.secret_key is not None or args.data is not None:
            raise ConfigError("--secret-key and --data check one party's files: give --name")
        return 0
    me = own_files(own_party(cfg, args.name), args)
    secret = args.secret_key or me.secret_key
    if secret is None:
        raise ConfigError(f"{me.name}: give --secret-key FILE (its secret key)")
    if me.public_key is not None:
        pair = load_secret_key(secret)
        if pair.public != load_public_key(me.public_key):
            raise ConfigError(
                f"{secret} is not the secret half of {me.name}'s public key in {cfg.path} "
                f"(fingerprint {fingerprint(pair.public)}, the file names "
                f"{fingerprint(load_public_key(me.public_key))})"
            )
        print(f"{me.name}: {secret} is the secret half of its public key")
    if me.data is not None:
        _check_data(cfg.params, me, Path(me.data))
    check_party_outputs(me)
    system = PROGRAMS.get(cfg.protocol)
    if system is not None and me.role in system.roles:
        try:  # what the party itself reads and checks before it waits for anyone
            system.check(cfg, me)
        except MPCError as exc:
            raise ConfigError(str(exc)) from None
        if me.model is not None:
            print(f"{me.name}: {me.model}: its own part of a saved model, for these records")
    print("ok")
    return 0


def _check_data(params: dict[str, Any], me: OwnParty, data: Path) -> None:
    try:
        with data.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh, delimiter=me.delimiter), [])
    except OSError as exc:
        raise ConfigError(f"--data {data}: {exc.strerror}") from None
    reading = dataclasses.replace(me, data=data)
    class_column = _class_column(params, me, header)
    try:
        own, warning = read_own_table(reading, class_column=class_column)
    except MPCError as exc:
        raise ConfigError(str(exc)) from None
    table = own.table
    with_class = f", the class {class_column!r}" if class_column else ""
    ids = f"id column {me.id_column!r}" if me.id_column else "no id column"
    print(
        f"{me.name}: {data}: {table.n_rows:,} records, {ids}, columns "
        f"{', '.join(table.attributes)}{with_class}"
    )
    if warning:
        print(f"{me.name}: warning: {warning}")
