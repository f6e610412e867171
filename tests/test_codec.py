"""The message contract: round trips of every supported type, rejection of hostile frames."""

from __future__ import annotations

import gmpy2
import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mpc.codec import ALLOWED_DTYPES, KINDS, PROTOCOL_VERSION, decode, encode
from mpc.errors import ProtocolError

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
