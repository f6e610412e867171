#!/usr/bin/env python3
"""Benchmark OT-extension multiplication (:mod:`protocols.ot.iknp`): Gilboa products
per second, correlated OTs per second and bytes per product, for 10^4 .. 10^6 products.

Two parties, A and B, each its own OS process over ZeroMQ with CurveZMQ on localhost (the
shipped transport), or both in one process over the in-memory network (``--transport
memory``: one core does the work of both). Each run sets up a fresh session (128 base OTs,
timed apart as ``setup``) and multiplies ``n`` pairs of uniform uint64 values; the products
are checked once per size, after the timed runs. It prints the machine, the number of runs
and the spread (min .. max) over them. Not a test.

python scripts/bench_ot.py                       # n = 1e4, 1e5, 1e6; 3 runs; two processes
python scripts/bench_ot.py --quick               # n = 1e4, 1e5; 2 runs
python scripts/bench_ot.py --n 100000 --runs 5 --transport memory
python scripts/bench_ot.py --n 1000000 --k 1,2,4        # IKNP beside SoftSpokenOT
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import platform
import statistics
import time
from typing import Any

import numpy as np
from cryptography.hazmat.backends.openssl.backend import backend

from mpc.deployment.launcher import free_ports
from mpc.runtime.keys import generate_keypair
from mpc.runtime.local import run_in_memory
from mpc.runtime.metrics import cpu_model
from mpc.runtime.party import Party
from mpc.runtime.transport import PeerAddress, ZmqTransport
from mpc.runtime.view import READY, declared
from protocols.ot import gilboa, iknp

#: B's shares of the products, sent to A once per size to check them (benchmark data only)
CHECK = declared("bench/check", "B's shares of the products, to check them")

SIZES = (10_000, 100_000, 1_000_000)
NAMES = ("A", "B")
#: the receive deadline of every party: generous, a million products move 1.5 GB
TIMEOUT_S = 300.0


def machine() -> str:
    return (
        f"{cpu_model()}, {os.cpu_count()} cores; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}, numpy {np.__version__}, "
        f"{backend.openssl_version_text()}"
    )


def inputs(n: int, run: int) -> tuple[np.ndarray, np.ndarray]:
    """Both parties' values (public benchmark data, so each side can check the products)."""
    rng = np.random.default_rng(1_000_003 * n + run)
    return rng.integers(0, 2**64, n, dtype=np.uint64), rng.integers(0, 2**64, n, dtype=np.uint64)


async def program(party: Party, sizes: list[int], runs: int, ks: list[int]) -> list[dict[str, Any]]:
    """One party's side of every run: its timings (wall and this process's CPU time, of every
    thread), and at A the check of the products."""
    me, peer = party.name, "B" if party.name == "A" else "A"
    rows = []
    for n, k in [(n, k) for n in sizes for k in ks]:
        for run in range(runs):
            a, b = inputs(n, run)
            tag = f"bench/{n}/{k}/{run}"
            await party.send(peer, f"{tag}/go", None)  # start together
            await party.recv(peer, f"{tag}/go", READY)
            sent0 = sum(party.metrics.bytes_sent.values())
            recv0 = sum(party.metrics.bytes_received.values())
            t0, c0 = time.perf_counter(), time.process_time()
            session: iknp.ExtensionSender | iknp.ExtensionReceiver
            if me == "A":
                session = await iknp.extension_sender(party, peer, tag=tag, k=k)
            else:
                session = await iknp.extension_receiver(party, peer, tag=tag, k=k)
            t1 = time.perf_counter()
            if me == "A":
                z = await gilboa.ot_multiply(party, peer, a, "A", session=session)
            else:
                z = await gilboa.ot_multiply(party, peer, b, "B", session=session)
            t2, c2 = time.perf_counter(), time.process_time()
            moved = (
                sum(party.metrics.bytes_sent.values())
                - sent0
                + sum(party.metrics.bytes_received.values())
                - recv0
            )
            if run == runs - 1:  # check once per size, outside the timed part
                if me == "B":
                    await party.send(peer, f"{tag}/check", z)
                else:
                    other = await party.recv(peer, f"{tag}/check", CHECK)
                    if not np.array_equal(z + other, a * b):
                        raise SystemExit(f"n = {n}: the shares do not add up to the products")
            rows.append(
                {
                    "n": n,
                    "k": k,
                    "setup_s": t1 - t0,
                    "mul_s": t2 - t1,
                    "cpu_s": c2 - c0,
                    "bytes": moved,
                }
            )
    return rows


def _party_process(
    name: str, ports: dict[str, int], keys: dict[str, tuple[bytes, bytes]], sizes: list[int],
    runs: int, ks: list[int], out: Any,
) -> None:  # fmt: skip
    async def main() -> list[dict[str, Any]]:
        peer = "B" if name == "A" else "A"
        transport = ZmqTransport(
            name,
            f"tcp://127.0.0.1:{ports[name]}",
            {peer: PeerAddress(f"tcp://127.0.0.1:{ports[peer]}", keys[peer][0])},
            keypair=keys[name],
            max_frame_bytes=64 * 1024 * 1024,
        )
        async with Party(name, "site", list(NAMES), transport, timeout=TIMEOUT_S) as party:
            return await program(party, sizes, runs, ks)

    out.put((name, asyncio.run(main())))


def run_processes(sizes: list[int], runs: int, ks: list[int]) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    ports = dict(zip(NAMES, free_ports(2), strict=True))
    pairs = {n: generate_keypair() for n in NAMES}
    keys = {n: (k.public, k.secret) for n, k in pairs.items()}
    out = ctx.Queue()
    procs = [ctx.Process(target=_party_process, args=(n, ports, keys, sizes, runs, ks, out))
             for n in NAMES]  # fmt: skip
    for p in procs:
        p.start()
    results = dict(out.get(timeout=TIMEOUT_S * len(sizes) * len(ks) * runs) for _ in procs)
    for p in procs:
        p.join(30)
        if p.exitcode != 0:
            raise SystemExit(f"party process {p.name} ended with exit code {p.exitcode}")
    for row, theirs in zip(results["A"], results["B"], strict=True):
        row["cpu_s"] += theirs["cpu_s"]  # two processes: the CPU time of both
    return list(results["A"])


def run_memory(sizes: list[int], runs: int, ks: list[int]) -> list[dict[str, Any]]:
    results, _ = asyncio.run(
        run_in_memory(list(NAMES), lambda p: program(p, sizes, runs, ks), timeout=TIMEOUT_S)
    )
    return list(results["A"])  # one process: A's CPU time is already that of both parties


def spread(values: list[float]) -> str:
    med = statistics.median(values)
    return f"{med:>10,.0f}  ({min(values):,.0f} .. {max(values):,.0f})"


def report(
    rows: list[dict[str, Any]], sizes: list[int], runs: int, ks: list[int], transport: str,
    load: str,
) -> None:  # fmt: skip
    print(f"machine:   {machine()}; load average before the runs: {load}")
    print(
        f"transport: {transport}; {runs} run(s) per size, each with its own 128 base OTs; "
        "median (min .. max) over the runs"
    )
    head = (
        f"{'products':>10}{'k':>3}{'products/s':>34}{'correlated OTs/s':>38}"
        f"{'setup ms':>10}{'CPU µs/product':>16}{'bytes/product':>15}"
    )
    print(head)
    print("-" * len(head))
    for n, k in [(n, k) for n in sizes for k in ks]:
        mine = [r for r in rows if r["n"] == n and r["k"] == k]
        per_s = [n / r["mul_s"] for r in mine]
        ots = [gilboa.RING_BITS * x for x in per_s]
        setup = statistics.median(r["setup_s"] for r in mine) * 1e3
        per_product = statistics.median(r["bytes"] for r in mine) / n
        cpu = statistics.median(r["cpu_s"] for r in mine) / n * 1e6
        print(
            f"{n:>10,}{k:>3}{spread(per_s):>34}{spread(ots):>38}{setup:>10.1f}{cpu:>16.1f}"
            f"{per_product:>15,.1f}"
        )
    print(
        "k: the small field's width (SoftSpokenOT; 1 is IKNP); bytes/product: both directions, "
        "setup included (u: 64 x 16/k B from B, τ: 64 x 8 B from A, plus framing and the 4 kB "
        "of base OTs amortised over n); CPU µs/product: both parties together, setup included "
        "(wall-clock rates depend on what else the machine runs; CPU time much less)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Gilboa products per second over OT extension.")
    p.add_argument("--n", default=None, metavar="N1,N2,...", help="numbers of products")
    p.add_argument("--runs", type=int, default=None, help="runs per size (default 3)")
    p.add_argument("--transport", choices=("zmq", "memory"), default="zmq")
    p.add_argument("--quick", action="store_true", help="n = 1e4, 1e5 and 2 runs")
    p.add_argument("--k", default=str(iknp.K_BITS), metavar="K1,K2,...",
                   help="widths of the small field (1: IKNP; default the sessions' own, "
                        f"{iknp.K_BITS})")  # fmt: skip
    args = p.parse_args(argv)
    if args.n:
        sizes = [int(x) for x in args.n.split(",")]
    else:
        sizes = list(SIZES[:2] if args.quick else SIZES)
    runs = args.runs or (2 if args.quick else 3)
    if runs < 1 or any(n < 1 for n in sizes):
        p.error("--runs and every --n must be >= 1")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    ks = [int(x) for x in args.k.split(",")]
    run = run_processes if args.transport == "zmq" else run_memory
    rows = run(sizes, runs, ks)
    transport = (
        "two processes, CurveZMQ over TCP on localhost"
        if args.transport == "zmq"
        else "one process, in-memory network"
    )
    report(rows, sizes, runs, ks, transport, load)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
