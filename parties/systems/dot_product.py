"""``mpc run dot-product``: secure dot products of random vectors between processes
(:mod:`parties.programs.dot_product`).

``mpc run dot-product --n N [--method M] [--batch M] [--seed S]`` draws Alice's ``M`` vectors
and Bob's ``L`` vectors of length ``N`` from the seed (demo input, which the launcher knows
anyway; the protocol's masks and keys come from each party's OS randomness, never from the
seed), writes each party only its own vectors, and runs the dot products with the product
revealed to Alice (a method's helper, the commodity server ``dealer``, joins when the method
has one). The launcher generated both inputs, so it checks Alice's result against the plain
product mod 2^64 (``correct``); no party can make that check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc.crypto.paillier import MIN_KEY_BITS, PAILLIER_KEY_BITS
from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from parties.params import AtLeast, Between, Params, option
from parties.programs.dot_product import TAG, DotParams
from parties.systems.base import Audit, Plan, System
from protocols.primitives.dot_product import METHODS
from protocols.primitives.paillier_dot import paillier_capacity_bits

__all__ = ["DotProduct", "DotProductOptions"]


@dataclass(frozen=True)
class DotProductOptions(Params):
    n: int = option(
        1000, flag="--n", metavar="N", check=AtLeast(1), help="vector length (default 1000)"
    )
    method: str = option(
        "dealer",
        flag="--method",
        choices=METHODS,
        help="how the products are computed: "
        + "; ".join(f"{m.name}: {m.help}" for m in METHODS.values())
        + " (default: dealer)",
    )
    batch: int = option(
        1,
        flag="--batch",
        metavar="M",
        check=AtLeast(1),
        help="Alice's number of vectors; one run computes M*L dot products (default 1)",
    )
    bob_vectors: int = option(
        1,
        flag="--bob-vectors",
        metavar="L",
        check=AtLeast(1),
        help="Bob's number of vectors (default 1)",
    )
    bits: int = option(
        64,
        flag="--bits",
        metavar="B",
        check=Between(1, 64),
        help="entries are uniform B-bit integers; 64 exercises the wrap mod "
        "2^64, 1 gives the 0/1 record vectors of Teng & Du (default 64)",
    )
    key_bits: int | None = option(
        None, flag="--key-bits", metavar="BITS", help="Paillier modulus size (default 2048)"
    )
    seed: int = option(
        0,
        flag="--seed",
        help="seed of the demo input: both parties' random vectors, drawn by "
        "the launcher (default 0); never of the protocol's masks or keys, which "
        "come from the OS",
    )

    def check(self) -> None:
        super().check()
        key_bits = PAILLIER_KEY_BITS if self.key_bits is None else self.key_bits
        if self.method == "paillier":
            if key_bits < MIN_KEY_BITS or key_bits % 2:
                raise ConfigError(
                    f"--key-bits must be an even number >= {MIN_KEY_BITS}, got {key_bits}"
                )
            if paillier_capacity_bits(self.n) >= key_bits:
                raise ConfigError(
                    f"--key-bits {key_bits} is too small for --n {self.n}: the masked products "
                    f"need a modulus of more than {paillier_capacity_bits(self.n)} bits"
                )
        elif self.key_bits is not None:
            raise ConfigError("--key-bits goes with --method paillier")


class DotProduct(System):
    name = "dot-product"
    help = (
        "secure dot products (Teng & Du's N(E) = Va . Vb) of random vectors: Du & Zhan's "
        "commodity server or Paillier, the product revealed to alice"
    )
    options = DotProductOptions

    def plan(self, options: Any, *, deploy: bool = False) -> Plan:
        o: DotProductOptions = options
        key_bits = PAILLIER_KEY_BITS if o.key_bits is None else o.key_bits
        rng = np.random.default_rng(o.seed)
        high = 2**o.bits
        a = rng.integers(0, high, size=(o.batch, o.n), dtype=np.uint64)
        b = rng.integers(0, high, size=(o.n, o.bob_vectors), dtype=np.uint64)
        parties = [
            PartySpec("alice", "alice", {"vectors": a.tolist()}),  # Alice's rows
            PartySpec("bob", "bob", {"vectors": b.T.tolist()}),  # Bob's columns, one per line
        ]
        helper = METHODS[o.method].helper
        if helper is not None:
            parties.append(PartySpec(helper, helper))
        params = DotParams(
            method=o.method, m=o.batch, n=o.n, l=o.bob_vectors, key_bits=key_bits
        ).to_deployment()
        return Plan(parties, params, {"A": a, "B": b})

    def finish(self, reports: dict[str, dict[str, Any]], plan: Plan) -> dict[str, Any]:
        a, b = plan.context["A"], plan.context["B"]
        m, n, ell = a.shape[0], a.shape[1], b.shape[1]
        got = (reports["alice"].get("result") or {}).get("product")
        if got is None:
            raise ProtocolError("alice reported no product")
        plain = (a @ b).tolist()  # numpy uint64 arithmetic wraps mod 2^64
        single = m == ell == 1
        phases = {
            name: ((r.get("metrics") or {}).get("phases_s") or {}).get(TAG, 0.0)
            for name, r in reports.items()
        }
        seconds = max(phases.values())
        return {
            "method": plan.params["method"],
            "n": n,
            "m": m,
            "l": ell,
            "dot_products": m * ell,
            "product": got[0][0] if single else got,
            "plain": plain[0][0] if single else plain,
            "correct": got == plain,
            "protocol_s": round(seconds, 6),
            "dot_products_per_s": round(m * ell / seconds, 3) if seconds > 0 else None,
            "per_party": {
                name: {
                    k: (r.get("metrics") or {}).get(k)
                    for k in ("bytes_sent", "bytes_received", "messages_sent", "rounds", "crypto")
                }
                for name, r in sorted(reports.items())
            },
        }

    def summary(self, result: Any) -> list[str]:
        lines = [
            f"method:    {result['method']}, {result['dot_products']} dot product(s) of length "
            f"{result['n']} ({result['m']} x {result['n']} times {result['n']} x "
            f"{result['l']})",
            f"product:   {result['product']}  (revealed to alice, mod 2^64)",
            f"plain:     {result['plain']}  (the launcher's check; no party knows both vectors)",
            f"correct:   {result['correct']}",
            f"time:      {result['protocol_s']:.4f} s in the protocol",
        ]
        for name, cost in result["per_party"].items():
            crypto = ", ".join(f"{k} {v}" for k, v in (cost.get("crypto") or {}).items())
            lines.append(
                f"{name + ':':<10} sent {cost['bytes_sent']} B, received "
                f"{cost['bytes_received']} B" + (f"; {crypto}" if crypto else "")
            )
        return lines

    def audit(self, result: Any) -> Audit:
        method = result.get("method") if isinstance(result, dict) else None
        return Audit(trust=METHODS[str(method)].trust if method in METHODS else "")
