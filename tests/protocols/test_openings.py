"""The one door of what p0 and p1 open (:mod:`protocols.engine.opening`): the opened values
are the sums of the shares; a party outside the pair never receives a share as it was
computed; and no receipt of a share of a result exists but the door's, or one its receiver
unmasks with randomness of its own."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpc.errors import MPCError
from mpc.runtime.codec import decode
from mpc.runtime.local import run_in_memory
from mpc.runtime.transport import InMemoryNetwork
from mpc.runtime.view import ViewRecorder, _Payload, uniformity_p_value
from protocols.engine.opening import OPENINGS, Pair, open_shares, opening
from protocols.engine.ring import RING64, Ring

from ..views import P_MIN, _leakage_script

NAMES = ["p0", "p1", "x", "y"]
TEST_OPENING = opening("test/opening", "a share of a test value, re-randomised", opens="test/v")

#: the receipts whose receiver unmasks the message with randomness of its own: each such
#: message is a function of that randomness and of what it opens, which is why it is not a
#: share of the door's (and why the joint-view test lets it repeat when what it opens does)
UNMASKED_BY_THE_RECEIVER = {
    "secure-sum/ring": "the running sum plus the receiver's own mask r",
    "is-r-empty/Ek": "equal after P1's own encryption: P1's own key",
    "psi-ca/final": "the receiver's sets under every key, its own among them",
    "intersection/first-tags-opened": "the first site's tags under the key whose tags the "
    "receiver obtained for its own records, by its own OPRF randomness",
    "intersection/masked-tags-opened": "tags under that key, masked by OT pads the receiver "
    "computes from its own seeds where it chose the running intersection",
    "fast-counts/permuted-open": "the owner's counts less L, which the owner's K, L open",
    "dot-product/encrypted": "Paillier ciphertexts under alice's own key",
}


def _run(values: list[int], ring: Ring, to: list[str], *, agree: bool = True) -> Any:
    """p0 and p1 share ``values`` and open them to ``to``; returns every party's result and
    what each party outside the pair received, by sender."""
    rng = np.random.default_rng(len(values))
    x = ring.array(values)
    r = ring.array([int(v) for v in rng.integers(0, 2**63, size=len(values))])
    shares = {"p0": r, "p1": ring.reduce(x - r)}
    network = InMemoryNetwork()
    seen: dict[tuple[str, str], Any] = {}

    def tap(sender: str, receiver: str, frames: list[bytes]) -> None:
        env = decode(frames)
        if env.tag == "t/open":
            seen[(sender, receiver)] = env.body

    network.taps.append(tap)

    async def program(party: Any) -> Any:
        pair = Pair(party, "p0", "p1")
        if agree:
            await pair.agree("t/key")
        return await open_shares(pair, shares.get(party.name), len(values), to=to,
                                 tag="t/open", receipt=TEST_OPENING, ring=ring)  # fmt: skip

    results, _ = asyncio.run(run_in_memory(NAMES, program, timeout=10, network=network))
    return results, seen, shares


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([64, 128, 256]),
    st.lists(st.integers(-(2**60), 2**60), min_size=1, max_size=12),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True),
)
def test_the_opened_values_are_the_sums_of_the_shares_for_every_receiver(
    bits: int, values: list[int], to: list[str]
) -> None:
    ring = Ring(bits)
    results, seen, shares = _run(values, ring, to)
    for name in NAMES:
        assert results[name] == (values if name in to else None), name
    # a party outside the pair never receives a share as it was computed
    for (sender, receiver), body in seen.items():
        if receiver in ("p0", "p1"):
            continue
        got = ring.unpack(body, (len(values),), sender, "share")
        assert not (got == shares[sender]).any(), (sender, receiver)


def test_an_opening_to_a_party_outside_the_pair_needs_the_pair_s_key() -> None:
    with pytest.raises(MPCError, match="agreed a key"):
        _run([1, 2], RING64, ["x"], agree=False)


def test_within_the_pair_no_key_is_needed() -> None:
    results, _, _ = _run([5, 7], RING64, ["p0"], agree=False)
    assert results["p0"] == [5, 7]


def test_every_share_of_a_result_goes_through_the_door() -> None:
    """Every receipt of the code that opens something (``opens``) is the door's
    (:func:`protocols.engine.opening.opening`: a share, re-randomised for a receiver outside
    the pair) or one its receiver unmasks with randomness of its own
    (:data:`UNMASKED_BY_THE_RECEIVER`); a new kind of opening must be one of the two."""
    found = _leakage_script().receipts()
    for name, receipt in sorted(found.items()):
        if receipt.opens is None:
            continue
        if receipt.shared:
            assert OPENINGS.get(name) == receipt, f"{name} is a share not made by opening()"
        else:
            assert name in UNMASKED_BY_THE_RECEIVER, (
                f"{name} opens {receipt.opens!r}: make it an opening() and send it through "
                "open_shares, or say why its receiver unmasks it with randomness of its own"
            )
    assert set(UNMASKED_BY_THE_RECEIVER) <= set(found)


def test_a_receiver_tests_the_two_shares_of_an_opening_each_alone() -> None:
    """The two shares a receiver outside the pair gets sum to what it opens: ``p1``'s is
    ``x`` less ``p0``'s, so pooled their bytes pair up (``v`` with ``255 - v``, beyond the
    lowest byte) and the chi-square statistic doubles. The view keeps each sender's shares of
    an opening apart and tests each alone, uniform as each is."""
    a = np.random.default_rng(23289).integers(0, 2**63, 8, dtype=np.uint64)
    view = ViewRecorder()
    view.record("p0", "t/open", TEST_OPENING, RING64.pack(a))
    view.record("p1", "t/open", TEST_OPENING, RING64.pack(RING64.reduce(-a)))
    stats = view.to_dict()["uniform"]
    assert len(stats) == 2 and all(s["values"] == 64 for s in stats.values())
    assert all(uniformity_p_value(s) > P_MIN for s in stats.values()), stats
    pooled = _Payload()
    for part in (a, RING64.reduce(-a)):
        pooled.add_bytes(part.view(np.uint8))
    assert uniformity_p_value(pooled.to_dict()) < P_MIN  # what pooling them would say
