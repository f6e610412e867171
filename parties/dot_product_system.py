"""The ``dot-product`` system: secure dot products of random vectors between processes.

``mpc run dot-product --n N [--method dealer|paillier] [--batch M] [--seed S]`` draws Alice's
``M`` vectors and Bob's ``L`` vectors of length ``N`` from the seed (demo input, which the
launcher knows anyway; the protocol's masks and keys come from each party's OS randomness,
never from the seed), writes each party only its
own vectors, and runs :func:`protocols.primitives.dot_product.dot_products` with the product
revealed to Alice (the commodity server ``dealer`` joins for the dealer method). The launcher
generated both inputs, so it checks Alice's result against the plain product mod 2^64 (``correct``);
no party can make that check.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.config import DeploymentConfig, PartyConfig
from mpc.runtime.party import Party
from mpc.runtime.view import READY
from protocols.primitives.dot_product import METHODS, dot_products

__all__ = [
    "dot_product_args",
    "dot_product_plan",
    "dot_product_reported",
    "dot_product_result",
    "dot_product_run",
    "dot_product_summary",
]

TAG = "dot-product"


def dot_product_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=1000, metavar="N", help="vector length (default 1000)")
    p.add_argument(
        "--method",
        choices=tuple(METHODS),
        default="dealer",
        help="dealer: Du & Zhan's commodity server (a third process); paillier: two parties "
        "with homomorphic encryption (default: dealer)",
    )
    p.add_argument(
        "--batch",
        type=int,
        default=1,
        metavar="M",
        help="Alice's number of vectors; one run computes M*L dot products (default 1)",
    )
    p.add_argument(
        "--bob-vectors",
        type=int,
        default=1,
        metavar="L",
        help="Bob's number of vectors (default 1)",
    )
    p.add_argument(
        "--bits",
        type=int,
        default=64,
        metavar="B",
        help="entries are uniform B-bit integers; 64 exercises the wrap mod 2^64, 1 gives the "
        "0/1 record vectors of Teng & Du (default 64)",
    )
    p.add_argument(
        "--key-bits",
        type=int,
        default=None,
        metavar="BITS",
        help="Paillier modulus size (default 2048)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the demo input: both parties' random vectors, drawn by the launcher "
        "(default 0); never of the protocol's masks or keys, which come from the OS",
    )


def dot_product_plan(args: argparse.Namespace) -> Any:
    from mpc.crypto.paillier import MIN_KEY_BITS, PAILLIER_KEY_BITS
    from parties.plan import Plan
    from protocols.primitives.paillier_dot import paillier_capacity_bits

    for flag, value in (
        ("--n", args.n),
        ("--batch", args.batch),
        ("--bob-vectors", args.bob_vectors),
    ):
        if value < 1:
            raise ConfigError(f"{flag} must be at least 1, got {value}")
    if not 1 <= args.bits <= 64:
        raise ConfigError(f"--bits must be between 1 and 64, got {args.bits}")
    key_bits = PAILLIER_KEY_BITS if args.key_bits is None else args.key_bits
    if args.method == "paillier":
        if key_bits < MIN_KEY_BITS or key_bits % 2:
            raise ConfigError(
                f"--key-bits must be an even number >= {MIN_KEY_BITS}, got {key_bits}"
            )
        if paillier_capacity_bits(args.n) >= key_bits:
            raise ConfigError(
                f"--key-bits {key_bits} is too small for --n {args.n}: the masked products "
                f"need a modulus of more than {paillier_capacity_bits(args.n)} bits"
            )
    elif args.key_bits is not None:
        raise ConfigError("--key-bits goes with --method paillier")
    rng = np.random.default_rng(args.seed)
    high = 2**args.bits
    a = rng.integers(0, high, size=(args.batch, args.n), dtype=np.uint64)
    b = rng.integers(0, high, size=(args.n, args.bob_vectors), dtype=np.uint64)
    parties = [
        PartySpec("alice", "alice", {"vectors": a.tolist()}),  # Alice's rows
        PartySpec("bob", "bob", {"vectors": b.T.tolist()}),  # Bob's columns, one per line
    ]
    helper = METHODS[args.method].helper
    if helper is not None:
        parties.append(PartySpec(helper, helper))
    params = {
        "method": args.method,
        "m": args.batch,
        "n": args.n,
        "l": args.bob_vectors,
        "key_bits": key_bits,
    }
    return Plan(parties, params, {"A": a, "B": b})


async def dot_product_run(party: Party, cfg: DeploymentConfig, me: PartyConfig) -> Any:
    from parties.plan import load_party_data

    p = cfg.params
    try:
        m, n, ell, key_bits = (int(p[k]) for k in ("m", "n", "l", "key_bits"))
        method = str(p["method"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"protocol.params: need integers m, n, l, key_bits and a method: {exc}"
        ) from None
    shape = (m, n, ell)
    options: dict[str, Any] = {
        "method": method,
        "shape": shape,
        "reveal_to": "alice",
        "tag": TAG,
        "key_bits": key_bits,
    }
    vectors = None
    if me.role != "dealer":
        want = (m, n) if me.role == "alice" else (ell, n)
        vectors = _vectors(load_party_data(me), want, me)
    await _barrier(party)
    if vectors is None:
        await dot_products(party, None, **options)
        return None
    out = await dot_products(party, vectors if me.role == "alice" else vectors.T, **options)
    if me.role == "alice" and out is not None:
        return {"product": out.tolist()}
    return None  # Bob holds a share of zero: he learns nothing


async def _barrier(party: Party) -> None:
    """Every party has loaded its input: the timed protocol phase starts together."""
    with party.phase(f"{TAG}/ready"):
        await party.broadcast(f"{TAG}/ready", True)
        await party.gather(party.peers, f"{TAG}/ready", READY)


def _vectors(data: dict[str, Any], shape: tuple[int, int], me: PartyConfig) -> np.ndarray:
    try:
        vectors = np.array(data["vectors"], dtype=np.uint64)
    except (KeyError, TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"party {me.name!r}: data file {me.data} needs `vectors`, a list of lists of "
            "integers in [0, 2^64)"
        ) from None
    if vectors.shape != shape:
        raise ConfigError(
            f"party {me.name!r}: data file {me.data} holds vectors of shape {vectors.shape}, "
            f"the deployment says {shape}"
        )
    return vectors


def dot_product_reported(reports: dict[str, dict[str, Any]]) -> Any:
    """Alice's reported product (the only party that learns it)."""
    return (reports.get("alice") or {}).get("result")


def dot_product_result(reports: dict[str, dict[str, Any]], plan: Any) -> dict[str, Any]:
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


def dot_product_summary(result: dict[str, Any]) -> list[str]:
    lines = [
        f"method:    {result['method']}, {result['dot_products']} dot product(s) of length "
        f"{result['n']} ({result['m']} x {result['n']} times {result['n']} x {result['l']})",
        f"product:   {result['product']}  (revealed to alice, mod 2^64)",
        f"plain:     {result['plain']}  (the launcher's check; no party knows both vectors)",
        f"correct:   {result['correct']}",
        f"time:      {result['protocol_s']:.4f} s in the protocol",
    ]
    for name, cost in result["per_party"].items():
        crypto = ", ".join(f"{k} {v}" for k, v in (cost.get("crypto") or {}).items())
        lines.append(
            f"{name + ':':<10} sent {cost['bytes_sent']} B, received {cost['bytes_received']} B"
            + (f"; {crypto}" if crypto else "")
        )
    return lines
