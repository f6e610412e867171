"""The party runtime: what every protocol runs on, and nothing about any protocol.

* :mod:`mpc.runtime.party` — :class:`~mpc.runtime.party.Party`: send, receive, gather,
  handshake, deadlines, abort, metrics and ledger;
* :mod:`mpc.runtime.transport` — ZeroMQ with CurveZMQ (and an in-memory network for tests);
* :mod:`mpc.runtime.codec` — the versioned msgpack envelope, typed frames, size limits;
* :mod:`mpc.runtime.config`, :mod:`mpc.runtime.keys` — deployment files and CurveZMQ keys;
* :mod:`mpc.runtime.files` — private files (0600 / 0700) and the one rule for output paths;
* :mod:`mpc.runtime.metrics` — cost counters and the leakage ledger;
* :mod:`mpc.runtime.monitor` — health checks and progress lines;
* :mod:`mpc.runtime.view` — receipts: what each message a party receives may be, and what
  it was;
* :mod:`mpc.runtime.local` — several parties in one process (tests, debugging).

Starting parties is not the runtime's business: :mod:`mpc.deployment` writes deployment files
and runs whole deployments as local processes or in network namespaces.

It imports only :mod:`mpc.errors` from outside itself: protocols, systems and the command
line build on it, never the other way round.
"""
