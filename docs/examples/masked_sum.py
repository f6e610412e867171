"""A party program of one's own: the sum of private integers by additive secret sharing.

Roles: k >= 2 parties, each holding a private integer x_i.

1. Each party draws k - 1 shares uniformly mod 2^64 from its own CSPRNG (``secrets``), keeps
   x_i minus their sum as its own share, and sends one share to each other party (``send``).
2. Each party adds its own share to the shares it receives (``recv`` from each peer): a
   partial sum s_i, uniform on its own whatever the inputs.
3. Each party sends s_i to all (``broadcast``) and receives everyone's (``gather``); the sum of
   the s_j is the sum of the x_i.

What each party learns: k - 1 uniform shares (nothing about any x_j) and the partial sums,
whose total is the result; the ledger records the result (``masked-sum/result``). Secure
against semi-honest parties as long as not all k - 1 others pool what they saw.

Run it: ``python docs/examples/masked_sum.py`` runs it in one process on the in-memory
transport (the debugging path), then with every party as its own process over CurveZMQ.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from typing import Any

from mpc import Party
from mpc.runtime.local import run_in_memory
from mpc.runtime.view import uniform
from parties.api import party_main, run_program

MODULUS = 2**64

#: what a party receives: every receive names what the message is, so that the report's
#: ``received`` and the record-swap tests can hold the program to it
SHARE = uniform("masked-sum/share", "a uniform share of the sender's x", modulus=MODULUS)
PARTIAL = uniform(
    "masked-sum/partial",
    "the sender's partial sum: uniform on its own, the sum of all of them is the result",
    modulus=MODULUS,
    opens="masked-sum/result",
)


async def masked_sum(party: Party, x: int) -> int:
    """The sum of every party's ``x``, mod 2^64 (a negative sum wraps round)."""
    shares = {peer: secrets.randbelow(MODULUS) for peer in party.peers}
    own = (x - sum(shares.values())) % MODULUS
    for peer, share in shares.items():
        await party.send(peer, "masked-sum/share", share)
    received = [await party.recv(peer, "masked-sum/share", SHARE) for peer in party.peers]
    partial = (own + sum(received)) % MODULUS
    await party.broadcast("masked-sum/partial", partial)
    partials = await party.gather(party.peers, "masked-sum/partial", PARTIAL)
    total = (partial + sum(partials.values())) % MODULUS
    party.ledger.record("masked-sum/result", total, step="masked-sum/partial")
    return total


async def program(party: Party, inputs: dict[str, Any]) -> int:
    """What each party process runs: its own input file holds ``{"x": ...}``."""
    return await masked_sum(party, int(inputs["x"]))


def main() -> int:
    values = {"alice": 12, "bob": 30, "carol": 7}

    # 1. in memory: the same code, one process, no sockets (tracebacks show where it fails)
    results, _ = asyncio.run(
        run_in_memory(list(values), lambda party: masked_sum(party, values[party.name]))
    )
    print(f"in memory:    {results}")

    # 2. as processes: this file, started once per party with the argument "party"
    run = run_program(
        [sys.executable, __file__, "party"],
        {name: {"x": x} for name, x in values.items()},
        name="masked-sum",
        timeout=30,
    )
    print(f"as processes: ok={run.ok} {run.result}")
    for name, report in run.parties.items():
        sent = report.metrics["bytes_sent"]
        print(f"  {name}: learned {report.ledger[0]['value']}, sent {sent} bytes")
    return 0 if run.ok and set(results.values()) == {sum(values.values())} else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["party"]:  # one party process, started by run_program
        sys.exit(party_main(program, sys.argv[2:], prog="masked_sum.py party"))
    sys.exit(main())
