"""A structured fuzzer of the message decoder: whatever a peer sends, ``decode`` either returns
a well-formed :class:`~mpc.runtime.codec.Envelope` or raises :class:`~mpc.errors.ProtocolError`, and
never builds more than the frame limit (plus the decoder's slack) of objects.

The inputs are not only random bytes: hypothesis draws msgpack object trees (nested lists and
maps, str and int map keys, every scalar type, extension objects with any code and with the
three codes the contract knows, array descriptors with any dtype, shape and frame index) and
puts them where the envelope expects a version, a kind, a tag, a depth and a body, with array
frames of matching, almost matching or random lengths; and it cuts and flips the bytes of
well-formed messages. The default run draws a few thousand messages; ``pytest -m slow`` runs
the same properties on 200,000.
"""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import FlakyStrategyDefinition

from mpc.errors import ProtocolError
from mpc.runtime.codec import (
    ALLOWED_DTYPES,
    DECODE_SLACK_BYTES,
    KINDS,
    MAX_TAG_CHARS,
    PROTOCOL_VERSION,
    Envelope,
    decode,
    encode,
)

pytestmark = pytest.mark.timeout(600)

#: the frame limit of the fuzzed receiver: small, so that the memory bound is tight
MAX_FRAME = 4096
#: examples per property in the default run
QUICK = 1000
#: ``pytest -m slow``: messages checked in all (structured half, mutated and random bytes a
#: quarter each), drawn in seeded runs of CHUNK examples
THOROUGH = 200_000
CHUNK = 5000
#: messages checked so far by :func:`_check`
CHECKED = [0]

_INT64 = st.integers(min_value=-(2**63), max_value=2**64 - 1)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    _INT64,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=20),
)
_DTYPES = st.one_of(
    st.sampled_from(sorted(ALLOWED_DTYPES)),
    st.sampled_from([">i8", "|O", "<c16", "<U4", "V8"]),
    _SCALARS,
)
_SHAPES = st.one_of(
    st.lists(st.integers(min_value=0, max_value=6), max_size=3),
    st.lists(st.integers(min_value=-(2**63), max_value=2**64 - 1), max_size=20),
    _SCALARS,
)


@st.composite
def _descriptor(draw: st.DrawFn) -> msgpack.ExtType:
    """An array reference: ``[dtype, shape, frame index]``, or something shaped like one."""
    meta = draw(
        st.one_of(
            st.tuples(_DTYPES, _SHAPES, st.integers(min_value=-2, max_value=5)).map(list),
            st.lists(_SCALARS, max_size=4),
        )
    )
    return msgpack.ExtType(3, msgpack.packb(meta, use_bin_type=True))


_EXT = st.one_of(
    _descriptor(),
    st.builds(
        msgpack.ExtType,
        st.sampled_from([1, 2]),
        st.one_of(
            st.binary(max_size=40),
            st.integers(min_value=0, max_value=2).map(lambda s: bytes([s]) + b"\x01" * 9),
        ),
    ),
    st.builds(msgpack.ExtType, st.integers(min_value=0, max_value=127), st.binary(max_size=16)),
)
_TREES = st.recursive(
    st.one_of(_SCALARS, _EXT),
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(
            st.one_of(st.text(max_size=8), _INT64, st.binary(max_size=4)), children, max_size=5
        ),
    ),
    max_leaves=25,
)


def _field(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A header field: mostly a valid value, often any object at all."""
    return st.one_of(valid, valid, _TREES)


_HEADERS = st.one_of(
    st.tuples(
        _field(st.just(PROTOCOL_VERSION)),
        _field(st.sampled_from(sorted(KINDS))),
        _field(st.text(max_size=30)),
        _field(st.integers(min_value=0, max_value=2**20)),
        _TREES,
    ).map(list),
    st.lists(_TREES, max_size=7),
    _TREES,
)


@st.composite
def structured_messages(draw: st.DrawFn) -> list[bytes]:
    """A header packed from an object tree, then 0-4 frames: empty, random, or of the length
    some small array would have."""
    header = msgpack.packb(draw(_HEADERS), use_bin_type=True)
    frames = draw(
        st.lists(
            st.one_of(
                st.binary(max_size=64),
                st.builds(
                    lambda size, n: b"\0" * size * n,
                    st.sampled_from([1, 2, 4, 8]),
                    st.integers(min_value=0, max_value=6),
                ),
            ),
            max_size=4,
        )
    )
    return [header, *frames]


@st.composite
def mutated_messages(draw: st.DrawFn) -> list[bytes]:
    """A well-formed message (arrays, big integers, nested bodies) with its header cut or
    some of its bytes changed, and frames dropped, added or truncated."""
    body = draw(
        st.one_of(
            _TREES.filter(lambda t: _packable(t)),
            st.integers(min_value=0, max_value=6).map(lambda n: np.arange(n, dtype=np.int64)),
            st.builds(lambda: {"a": np.zeros((2, 3), dtype=np.uint8), "n": 2**100}),
        )
    )
    frames = [bytes(f) for f in encode("msg", "t", 1, body)]
    header = bytearray(frames[0])
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        if header:
            at = draw(st.integers(min_value=0, max_value=len(header) - 1))
            header[at] = draw(st.integers(min_value=0, max_value=255))
    cut = draw(st.integers(min_value=0, max_value=len(header)))
    frames[0] = bytes(header[:cut] if draw(st.booleans()) else header)
    action = draw(st.sampled_from(["keep", "drop", "add", "truncate"]))
    if action == "drop" and len(frames) > 1:
        frames.pop()
    elif action == "add":
        frames.append(draw(st.binary(max_size=16)))
    elif action == "truncate" and len(frames) > 1:
        frames[-1] = frames[-1][:-1]
    return frames


_RANDOM_BYTES = st.lists(st.binary(max_size=200), min_size=1, max_size=5)


def _packable(tree: Any) -> bool:
    """Whether the codec can send ``tree`` (object trees with int keys or odd ext codes
    cannot: they are only for the structured strategy)."""
    try:
        encode("msg", "t", 0, tree)
    except ProtocolError:
        return False
    return True


def _check(frames: list[bytes]) -> None:
    """The property: a well-formed envelope or a ProtocolError, and bounded memory."""
    CHECKED[0] += 1
    tracemalloc.start()
    try:
        try:
            env = decode(frames, max_frame_bytes=MAX_FRAME)
        except ProtocolError:
            env = None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    array_bytes = sum(len(f) for f in frames[1:])  # each array is one copy of its frame
    assert peak <= MAX_FRAME + DECODE_SLACK_BYTES + 2 * array_bytes, peak
    if env is not None:
        assert isinstance(env, Envelope)
        assert env.kind in KINDS
        assert isinstance(env.tag, str) and len(env.tag) <= MAX_TAG_CHARS
        assert type(env.depth) is int and env.depth >= 0


def _fuzz(
    strategy: st.SearchStrategy[list[bytes]], examples: int, at_seed: int | None = None
) -> Callable[[], None]:
    test = settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        database=None,
    )(given(strategy)(_check))
    return test if at_seed is None else seed(at_seed)(test)


def test_structured_messages_are_decoded_or_refused_with_a_protocol_error() -> None:
    _fuzz(structured_messages(), QUICK)()


def test_mutated_messages_are_decoded_or_refused_with_a_protocol_error() -> None:
    _fuzz(mutated_messages(), QUICK)()


def test_random_bytes_are_refused_with_a_protocol_error() -> None:
    _fuzz(_RANDOM_BYTES, QUICK)()


@pytest.mark.slow
def test_two_hundred_thousand_messages() -> None:
    """The three properties on 200,000 messages in all, in seeded runs of CHUNK examples.

    A run that hypothesis's engine itself gives up on (it may report its own generation as
    inconsistent after many thousands of examples) is cut short and the next seed goes on:
    what counts is the number of messages :func:`_check` saw, which must reach THOROUGH."""
    plan = [(structured_messages(), THOROUGH // 2), (mutated_messages(), THOROUGH // 4)]
    plan.append((_RANDOM_BYTES, THOROUGH // 4))
    CHECKED[0] = 0
    run = 0
    for strategy, target in plan:
        goal = CHECKED[0] + target
        while CHECKED[0] < goal:
            run += 1
            with contextlib.suppress(FlakyStrategyDefinition):
                _fuzz(strategy, min(CHUNK, goal - CHECKED[0]), at_seed=run)()
    assert CHECKED[0] >= THOROUGH


@pytest.mark.parametrize(
    ("header", "frames"),
    [
        ([1, [1], "t", 0, None], []),  # an unhashable kind
        ([1, {"k": 1}, "t", 0, None], []),
        ([msgpack.ExtType(3, msgpack.packb(["<f8", [1], 1])), "msg", "t", 0, None], [b"\0" * 8]),
        ([[1], "msg", "t", 0, None], []),  # a version that is a list
        ([1, "msg", "t", msgpack.ExtType(3, msgpack.packb(["<i8", [2], 1])), None], [b"\0" * 16]),
        ([1, "msg", ["t"], 0, None], []),
        ([True, "msg", "t", 0, None], []),
        ([1, "msg", "t", True, None], []),
    ],
    ids=[
        "list-kind",
        "map-kind",
        "array-version",
        "list-version",
        "array-depth",
        "list-tag",
        "bool-version",
        "bool-depth",
    ],
)
def test_header_fields_of_the_wrong_type_are_protocol_errors(
    header: list[Any], frames: list[bytes]
) -> None:
    """Each of these once escaped the decoder as a TypeError or ValueError."""
    with pytest.raises(ProtocolError):
        decode([msgpack.packb(header, use_bin_type=True), *frames])
