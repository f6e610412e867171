"""The message contract: round trips of every supported type, rejection of hostile frames."""

from __future__ import annotations

import sys
import tracemalloc

import gmpy2
import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mpc.errors import ProtocolError
from mpc.runtime.codec import (
    ALLOWED_DTYPES,
    DECODE_SLACK_BYTES,
    KINDS,
    PROTOCOL_VERSION,
    Envelope,
    _check_msgpack,
    decode,
    encode,
)

dtypes = st.sampled_from(sorted(ALLOWED_DTYPES)).map(np.dtype)
arrays = dtypes.flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**300), max_value=2**300)
    | st.integers(min_value=-(2**300), max_value=2**300).map(gmpy2.mpz)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
bodies = st.recursive(
    scalars | arrays,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    if isinstance(a, list | tuple):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=300)
@given(body=bodies, tag=st.text(max_size=40), depth=st.integers(0, 2**40))
def test_round_trip_every_supported_type(body: object, tag: str, depth: int) -> None:
    frames = encode("msg", tag, depth, body)
    env = decode([bytes(f) for f in frames])
    assert (env.kind, env.tag, env.depth) == ("msg", tag, depth)
    assert same(body, env.body)


def test_arrays_travel_as_raw_frames_not_per_element() -> None:
    arr = np.arange(100_000, dtype=np.uint64)
    frames = encode("msg", "t", 0, {"v": arr})
    assert len(frames) == 2
    assert len(frames[1]) == arr.nbytes
    assert len(frames[0]) < 100  # the header only describes the array


def test_big_ints_keep_their_type() -> None:
    env = decode(encode("msg", "t", 0, [2**100, gmpy2.mpz(-(2**90)), 5]))
    assert type(env.body[0]) is int and env.body[0] == 2**100
    assert isinstance(env.body[1], type(gmpy2.mpz(0))) and env.body[1] == -(2**90)


def _header(body: object, version: int = PROTOCOL_VERSION) -> bytes:
    return msgpack.packb([version, "msg", "t", 0, body])


@pytest.mark.parametrize(
    ("frames", "needle"),
    [
        ([], "empty message"),
        ([b"\xc1"], "malformed"),
        ([b"\x95\x01"], "malformed"),  # truncated array
        ([msgpack.packb([1, 2, 3])], "expected [version"),
        ([_header(1, version=99)], "version mismatch"),
        ([msgpack.packb([1, "bogus", "t", 0, None])], "unknown message kind"),
        ([msgpack.packb([1, "msg", "t", -1, None])], "depth"),
        ([msgpack.packb({1: 2})], "map key"),
        ([_header(msgpack.ExtType(42, b"x"))], "unknown extension type 42"),
        ([_header(msgpack.ExtType(1, b"\x07\x01"))], "sign byte"),
        ([_header(msgpack.ExtType(3, msgpack.packb(["|O", [1], 1]))), b"x" * 8], "not allowed"),
        ([_header(msgpack.ExtType(3, msgpack.packb(["<i8", [2], 1]))), b"x" * 8], "need 16"),
        ([_header(msgpack.ExtType(3, msgpack.packb(["<i8", [1], 5]))), b"x" * 8], "out of range"),
        ([_header(msgpack.ExtType(3, msgpack.packb(["<i8", [-1], 1]))), b""], "shape"),
        ([_header(None), b"unreferenced"], "references 0"),
        (
            [_header([msgpack.ExtType(3, msgpack.packb(["<i8", [1], 1]))] * 2), b"x" * 8],
            "referenced twice",
        ),
    ],
)
def test_malformed_frames_raise_protocol_error(frames: list[bytes], needle: str) -> None:
    with pytest.raises(ProtocolError, match=None) as info:
        decode(frames)
    assert needle in str(info.value)


def test_oversized_frames_are_rejected_before_parsing() -> None:
    frames = encode("msg", "t", 0, np.zeros(1000, dtype=np.uint8))
    with pytest.raises(ProtocolError, match="max_frame_bytes"):
        decode([bytes(f) for f in frames], max_frame_bytes=999)
    with pytest.raises(ProtocolError, match="max_frame_bytes"):
        encode("msg", "t", 0, np.zeros(2000, dtype=np.uint8), max_frame_bytes=1024)


@pytest.mark.parametrize("value", [object(), {1, 2}, np.array(["a"]), complex(1, 2)])
def test_unsendable_types_are_refused_at_the_sender(value: object) -> None:
    with pytest.raises(ProtocolError):
        encode("msg", "t", 0, value)


@settings(max_examples=300)
@given(st.binary(max_size=200), st.lists(st.binary(max_size=50), max_size=3))
def test_random_frames_never_crash_the_decoder(header: bytes, rest: list[bytes]) -> None:
    _decode_or_reject([header, *rest])


@settings(max_examples=200)
@given(body=bodies, data=st.data())
def test_mutated_valid_messages_decode_or_raise_protocol_error(
    body: object, data: st.DataObject
) -> None:
    frames = [bytearray(f) for f in encode("msg", "t", 1, body)]
    i = data.draw(st.integers(0, len(frames) - 1))
    if frames[i]:
        j = data.draw(st.integers(0, len(frames[i]) - 1))
        frames[i][j] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.booleans())
    if cut and frames[i]:
        frames[i] = frames[i][: data.draw(st.integers(0, len(frames[i]) - 1))]
    _decode_or_reject([bytes(f) for f in frames])


def _decode_or_reject(frames: list[bytes]) -> None:
    """Hostile input either decodes to a valid envelope or raises ProtocolError, nothing else."""
    try:
        env = decode(frames)
    except ProtocolError as exc:
        assert str(exc)
    else:
        assert env.kind in KINDS and isinstance(env.tag, str) and env.depth >= 0


# ----------------------------------------------------------------------------- allocation

#: the frame limit of the allocation tests; every hostile frame below is at most this long
LIMIT = 1 << 20
_ENVELOPE = b"\x95\x01\xa3msg\xa1t\x00"  # [1, "msg", "t", 0, <body follows>]


def _u32(n: int) -> bytes:
    return n.to_bytes(4, "big")


def _array_ext(dtype: str, shape: list[int], index: int = 1) -> bytes:
    meta = msgpack.packb([dtype, shape, index])
    return b"\xc7" + bytes([len(meta), 3]) + meta


def _padded(body: bytes) -> bytes:
    """``body`` after the envelope, padded with zero bytes to the frame limit."""
    frame = _ENVELOPE + body
    return frame + b"\x00" * (LIMIT - len(frame))


HUGE = 2**32 - 1
HOSTILE = {
    "array claims 2^32 elements": [_ENVELOPE + b"\xdd" + _u32(HUGE)],
    "map claims 2^32 entries": [_ENVELOPE + b"\xdf" + _u32(HUGE)],
    "str claims 2^32 bytes": [_ENVELOPE + b"\xdb" + _u32(HUGE) + b"abc"],
    "bin claims 2^32 bytes": [_ENVELOPE + b"\xc6" + _u32(HUGE) + b"abc"],
    "ext claims 2^32 bytes": [_ENVELOPE + b"\xc9" + _u32(HUGE) + b"\x01\x00\x01"],
    "big int ext claims 2^32 bytes": [_ENVELOPE + b"\xc9" + _u32(HUGE) + b"\x01"],
    # each level claims (almost) the whole frame; msgpack preallocates every level
    "nested lists each claiming the frame": [_padded((b"\xdd" + _u32(LIMIT - 64)) * 1000)],
    "nested maps each claiming the frame": [_padded((b"\xdf" + _u32(LIMIT // 2 - 64)) * 1000)],
    "depth bomb": [_padded(b"\x91" * 100_000)],
    # valid structure, but 1 byte becomes a 56-byte list (or a 64-byte dict) plus a slot
    "a frame of empty lists": [_ENVELOPE + b"\xdd" + _u32(LIMIT - 20) + b"\x90" * (LIMIT - 20)],
    "a frame of empty maps": [_ENVELOPE + b"\xdd" + _u32(LIMIT - 20) + b"\x80" * (LIMIT - 20)],
    "a frame of two-letter strings": [
        _ENVELOPE + b"\xdd" + _u32(LIMIT // 3 - 10) + b"\xa2ab" * (LIMIT // 3 - 10)
    ],
    "a frame of floats": [
        _ENVELOPE + b"\xdd" + _u32(LIMIT // 9 - 5) + b"\xcb" + b"\x00" * 8 * (LIMIT // 9 - 5)
    ],
    "array shape 2^31 x 2^31 for 8 bytes": [
        _ENVELOPE + _array_ext("<f8", [2**31, 2**31]),
        b"x" * 8,
    ],
    "array shape 2^62 for 8 bytes": [_ENVELOPE + _array_ext("<i8", [2**62]), b"x" * 8],
    "array descriptor with nested lies": [
        _ENVELOPE + b"\xc7\xfa\x03" + (b"\xdd" + _u32(200)) * 50,
        b"x" * 8,
    ],
    "big int of 1 MiB": [
        _ENVELOPE + b"\xc9" + _u32(LIMIT - 20) + b"\x01\x00" + b"\xff" * (LIMIT - 21)
    ],
}


@pytest.mark.parametrize("frames", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_frames_are_refused_before_they_allocate(frames: list[bytes]) -> None:
    """Frames whose headers claim huge sizes, nest deep or amplify (a byte that becomes a
    56-byte object) are refused; decoding them never allocates as much as the frame limit."""
    assert all(len(f) <= LIMIT for f in frames)
    peak, error = _peak_decoding(frames, LIMIT)
    assert isinstance(error, ProtocolError), f"decoded: {error!r}"
    assert peak < LIMIT // 4, f"decoding allocated {peak} bytes before refusing: {error}"


def test_a_header_within_the_budget_still_decodes() -> None:
    body = {"ids": list(range(1000)), "names": [f"v{i}" for i in range(1000)], "n": 2**100}
    frames = encode("msg", "t", 0, body, max_frame_bytes=LIMIT)
    peak, env = _peak_decoding([bytes(f) for f in frames], LIMIT)
    assert isinstance(env, Envelope) and env.body == body
    assert peak < LIMIT


#: msgpack headers that carry a length, and the width of that length in bytes
LENGTH_WIDTHS = {0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1,
                 0xC5: 2, 0xC6: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}  # fmt: skip
length_claims = st.sampled_from(sorted(LENGTH_WIDTHS)).flatmap(
    lambda head: st.integers(0, 2 ** (8 * LENGTH_WIDTHS[head]) - 1).map(
        lambda n: bytes([head]) + n.to_bytes(LENGTH_WIDTHS[head], "big")
    )
)
hostile_pieces = (
    length_claims
    | st.sampled_from([b"\x90", b"\x80", b"\x91", b"\x81\xa0", b"\xc0", b"\x01", b"\x03"])
    | st.binary(min_size=1, max_size=8)
)


@settings(max_examples=300)
@given(pieces=st.lists(hostile_pieces, max_size=300), repeat=st.integers(1, 200))
def test_random_length_claims_never_allocate_beyond_the_limit(
    pieces: list[bytes], repeat: int
) -> None:
    """Headers made of container and string headers with random (up to 2^32) lengths, empty
    containers and random bytes, repeated: refused or decoded, within the frame limit."""
    limit = 64 * 1024
    frame = (_ENVELOPE + b"".join(pieces) * repeat)[:limit]
    peak, result = _peak_decoding([frame], limit)
    assert isinstance(result, ProtocolError | Envelope)
    assert peak <= limit + DECODE_SLACK_BYTES, f"{peak} bytes for a {len(frame)}-byte frame"


def _peak_decoding(frames: list[bytes], limit: int) -> tuple[int, ProtocolError | Envelope]:
    """(peak bytes allocated while decoding, the envelope or the ProtocolError raised).

    tracemalloc counts every thread's allocations: the switch interval is raised for the
    decoding, so that another thread of the process (a test runner's I/O thread) allocates
    nothing inside the measurement."""
    interval = sys.getswitchinterval()
    tracemalloc.start()
    sys.setswitchinterval(30.0)
    try:
        tracemalloc.reset_peak()
        try:
            result: ProtocolError | Envelope = decode(frames, max_frame_bytes=limit)
        except ProtocolError as exc:
            result = exc
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        sys.setswitchinterval(interval)
        tracemalloc.stop()
    return peak, result


@settings(max_examples=200)
@given(
    body=st.recursive(
        scalars | st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40),
        lambda inner: (
            st.lists(inner, max_size=30) | st.dictionaries(st.text(max_size=8), inner, max_size=8)
        ),
        max_leaves=60,
    )
)
def test_the_allocation_estimate_bounds_what_decoding_allocates(body: object) -> None:
    """For valid headers (no arrays), the decoder's estimate of the objects it will build is
    at least what decoding them allocates (tracemalloc), so the limit it enforces holds."""
    frames = [bytes(f) for f in encode("msg", "t", 0, body)]
    estimate = _check_msgpack(frames[0], 2**62, "header")
    peak, env = _peak_decoding(frames, LIMIT)
    assert isinstance(env, Envelope)
    assert peak <= estimate + 2048, f"decoding allocated {peak} bytes, estimated {estimate}"
