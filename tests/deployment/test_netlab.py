"""The shaped link of :mod:`mpc.deployment.netlab`: its delay line hands on every byte, in order,
both ways; a cdtl client and CDBS placed on either side of it run across two network namespaces,
every byte between them crossing the shaped veth pair; the launcher refuses a placement that
leaves a party out.

The namespace test needs root and iproute2 (marked ``netns``); where a namespace cannot be
made it skips, saying why. The link is removed whatever happens."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
from typing import Any

import pytest

from mpc.deployment.launcher import Placement, free_ports, launch
from mpc.deployment.netlab import ShapedLink, delay_line
from mpc.errors import ConfigError
from parties.systems.registry import get_system


@pytest.mark.timeout(30)
def test_the_delay_line_hands_on_every_byte_in_order_both_ways() -> None:
    front, back = free_ports(2)
    payload = bytes(range(256)) * 1200  # 300 KB, several reads' worth

    async def scenario() -> tuple[bytes, bytes]:
        got_at_server = bytearray()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while len(got_at_server) < len(payload):
                got_at_server.extend(await reader.read(1 << 16))
            writer.write(payload[::-1])
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", back)
        relay = asyncio.ensure_future(
            delay_line([(f"127.0.0.1:{front}", f"127.0.0.1:{back}")], 0.002)
        )
        for _ in range(100):  # until the delay line listens
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", front)
                break
            except OSError:
                await asyncio.sleep(0.02)
        else:
            raise AssertionError("the delay line never listened")
        for i in range(0, len(payload), 5000):
            writer.write(payload[i : i + 5000])
        await writer.drain()
        answer = await reader.readexactly(len(payload))
        writer.close()
        relay.cancel()
        server.close()
        return bytes(got_at_server), answer

    at_server, answer = asyncio.run(scenario())
    assert at_server == payload
    assert answer == payload[::-1]


def test_a_placement_that_leaves_a_party_out_is_refused() -> None:
    plan = _weather_plan()
    with pytest.raises(ConfigError, match=r"no place given for \['cdbs'\]"):
        launch(
            "cdtl", plan.params, plan.parties, timeout=5,
            placement={"client": Placement("tcp://127.0.0.1:1")},
        )  # fmt: skip


def _weather_plan() -> Any:
    system = get_system("cdtl")
    p = argparse.ArgumentParser()
    system.options.add_arguments(p)
    return system.plan_from(p.parse_args(["--sensitive", "windy", "--cv", "2"]))


def _tx_bytes(ns: str) -> int:
    out = subprocess.run(
        ["ip", "-n", ns, "-s", "link", "show", "wan0"], capture_output=True, text=True,
        timeout=15, check=True,
    ).stdout.splitlines()  # fmt: skip
    at = next(i for i, line in enumerate(out) if line.strip().startswith("TX:"))
    return int(out[at + 1].split()[0])


@pytest.mark.netns
@pytest.mark.processes
@pytest.mark.timeout(120)
def test_cdtl_runs_across_two_namespaces_over_the_shaped_link() -> None:
    link = ShapedLink(rate_mbit=100, delay_ms=2)
    reason = link.open()
    if reason is not None:
        pytest.skip(reason)
    try:
        where = link.placement(a=["client"], b=["cdbs"])
        shaping = subprocess.run(
            ["tc", "-n", link.a, "qdisc", "show", "dev", "wan0"], capture_output=True,
            text=True, timeout=15, check=True,
        ).stdout  # fmt: skip
        assert "rate 100Mbit" in shaping
        assert ("netem" if link.method == "netem" else "tbf") in shaping
        plan = _weather_plan()
        res = launch("cdtl", plan.params, plan.parties, timeout=30, placement=where)
        assert res.ok, res.logs
        result = get_system("cdtl").finish(res.reports, plan)
        assert set(result["methods"]) == {"cdtl", "cnl", "cdbsl"}
        # every byte the client sent crossed the veth pair (plus TCP's own headers)
        sent = res.reports["client"]["metrics"]["bytes_sent"]
        assert _tx_bytes(link.a) >= sent > 0
        assert _tx_bytes(link.b) >= res.reports["cdbs"]["metrics"]["bytes_sent"] > 0
        assert len(link.round_trip_ms(5)) == 5
    finally:
        link.close()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=15)
    assert link.a not in listed.stdout and link.b not in listed.stdout
