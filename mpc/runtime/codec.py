"""The message contract: a versioned envelope packed with msgpack, arrays as raw frames.

A message is a ZeroMQ multipart message::

    frame 0      msgpack [version, kind, tag, depth, body]
    frame 1..n   raw little-endian bytes of the numpy arrays referenced from ``body``

``kind`` is ``"msg"`` (protocol data), ``"hello"`` (startup handshake), ``"bye"`` (this
party finished and leaves), ``"abort"`` (the run failed), ``"probe"`` / ``"status"`` (after a
timeout: "what are you waiting for?", answered by the runtime), ``"ping"`` / ``"pong"`` (a
monitor's health check, answered by the runtime; see :mod:`mpc.runtime.monitor`).
``tag`` matches a message to the ``recv`` waiting for it; ``depth`` is the causal round
number (see :class:`mpc.runtime.metrics.Metrics`). ``body`` may hold ``None``, bools, ints, floats,
str, bytes, lists, tuples (decoded as lists), dicts with str keys, and three explicit
extension types:

=========  =========================  ===============================================
ExtType    Python type                payload
=========  =========================  ===============================================
1          ``int`` beyond 64 bits     sign byte (0 or 1) + big-endian magnitude
2          ``gmpy2.mpz``              same as 1
3          ``numpy.ndarray``          msgpack ``[dtype, shape, frame index]``; the data
                                      travels as its own frame, never element by element
=========  =========================  ===============================================

Only the dtypes in :data:`ALLOWED_DTYPES` travel; no pickle, no object arrays. Decoding is
defensive: every frame is checked against ``max_frame_bytes`` before it is parsed, every
array frame must be referenced exactly once and have exactly ``prod(shape) * itemsize``
bytes. Anything else raises :class:`~mpc.errors.ProtocolError`.

Decoding never allocates more than the sender paid for. msgpack preallocates a container as
soon as it reads its header, so a few bytes that *claim* 2^32 elements, nested a thousand
levels deep, would make it allocate gigabytes before it notices the data is missing; and
one byte per empty list becomes 72 bytes of Python objects. So before msgpack sees a header
(or an array descriptor), :func:`_check_msgpack` walks its bytes once without building
anything and refuses it when a declared length does not fit in the bytes that are left,
when containers nest deeper than :data:`MAX_DEPTH`, or when the objects it would build are
estimated to take more than ``max_frame_bytes + DECODE_SLACK_BYTES`` bytes. Array data is
not part of that estimate: it is one copy of a frame that did arrive, of exactly the length
its dtype and shape need.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import gmpy2
import msgpack
import numpy as np

from mpc.errors import ProtocolError

__all__ = [
    "ALLOWED_DTYPES",
    "DEFAULT_MAX_FRAME_BYTES",
    "KINDS",
    "PROTOCOL_VERSION",
    "Envelope",
    "decode",
    "encode",
    "kind_prefix",
]

#: Version of the envelope; a peer speaking another version is refused at the handshake.
PROTOCOL_VERSION = 1
#: Default upper bound for any single frame (header or array).
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
#: Upper bound on the number of frames (arrays) in one message.
MAX_FRAMES = 4096
#: Upper bound on the magnitude of a big integer, in bytes (2^20 bits).
MAX_INT_BYTES = 128 * 1024
MAX_TAG_CHARS = 512
MAX_NDIM = 16
#: Deepest nesting of lists and maps in a message body.
MAX_DEPTH = 256
#: Decoded header objects may take up to ``max_frame_bytes`` plus this many bytes (so that a
#: deployment with a tiny frame limit can still decode its small control messages).
DECODE_SLACK_BYTES = 256 * 1024
#: Largest array descriptor ``[dtype, shape, frame index]`` in bytes (16 dimensions fit).
MAX_DESCRIPTOR_BYTES = 512
KINDS = frozenset({"msg", "hello", "bye", "abort", "probe", "status", "ping", "pong"})

EXT_INT = 1
EXT_MPZ = 2
EXT_NDARRAY = 3

#: dtypes allowed on the wire, as little-endian ``numpy.dtype.str`` values.
ALLOWED_DTYPES = frozenset(
    {"|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f4", "<f8"}
)

_MPZ = type(gmpy2.mpz(0))


@dataclass(frozen=True, slots=True)
class Envelope:
    """One decoded message."""

    kind: str
    tag: str
    depth: int
    body: Any


# kinds of msgpack objects, by their first byte (see _FORMATS)
_SCALAR, _STR, _BIN, _EXT, _ARRAY, _MAP, _INVALID = range(7)


def _formats() -> tuple[tuple[int, int, int, int], ...]:
    """For each first byte: (kind, bytes of its length field, fixed length, extra header
    bytes). A scalar's "fixed length" is its whole size; a fix-sized str, ext, array or map
    takes its length from the first byte or the format (``fixed length``)."""
    table = [(_INVALID, 0, 0, 0)] * 256
    for b in range(0x00, 0x80):
        table[b] = (_SCALAR, 0, 1, 0)  # positive fixint
    for b in range(0xE0, 0x100):
        table[b] = (_SCALAR, 0, 1, 0)  # negative fixint
    for b in range(0x80, 0x90):
        table[b] = (_MAP, 0, b & 0x0F, 0)
    for b in range(0x90, 0xA0):
        table[b] = (_ARRAY, 0, b & 0x0F, 0)
    for b in range(0xA0, 0xC0):
        table[b] = (_STR, 0, b & 0x1F, 0)
    for b in (0xC0, 0xC2, 0xC3):
        table[b] = (_SCALAR, 0, 1, 0)  # nil, false, true
    for b, size in ((0xCA, 5), (0xCB, 9), (0xCC, 2), (0xCD, 3), (0xCE, 5), (0xCF, 9)):
        table[b] = (_SCALAR, 0, size, 0)  # float32/64, uint8..64
    for b, size in ((0xD0, 2), (0xD1, 3), (0xD2, 5), (0xD3, 9)):
        table[b] = (_SCALAR, 0, size, 0)  # int8..64
    for b, width in ((0xC4, 1), (0xC5, 2), (0xC6, 4)):
        table[b] = (_BIN, width, 0, 0)
    for b, width in ((0xC7, 1), (0xC8, 2), (0xC9, 4)):
        table[b] = (_EXT, width, 0, 1)
    for b, size in ((0xD4, 1), (0xD5, 2), (0xD6, 4), (0xD7, 8), (0xD8, 16)):
        table[b] = (_EXT, 0, size, 1)
    for b, width in ((0xD9, 1), (0xDA, 2), (0xDB, 4)):
        table[b] = (_STR, width, 0, 0)
    for b, width in ((0xDC, 2), (0xDD, 4)):
        table[b] = (_ARRAY, width, 0, 0)
    for b, width in ((0xDE, 2), (0xDF, 4)):
        table[b] = (_MAP, width, 0, 0)
    return tuple(table)


_FORMATS = _formats()
_NON_ASCII = re.compile(rb"[\x80-\xff]")


def _check_msgpack(data: bytes | memoryview, budget: int, what: str) -> int:
    """Refuse msgpack ``data`` that would make the unpacker allocate more than ``budget``
    bytes, before it allocates anything.

    One pass over the bytes, building nothing: every declared length must fit in the bytes
    that are left (a container of n elements needs at least n more bytes, counting the
    unread elements of every enclosing container too), nesting stops at :data:`MAX_DEPTH`,
    and the objects msgpack would build (upper estimates of CPython's sizes: a list 56 + 8n
    bytes, a dict 200 + 40n, an ASCII str 50 + n, another str 80 + 4n, bytes 40 + n, an
    extension 100 + 2n, a float or a wide int 32) must fit in ``budget``. Returns that
    estimate; raises :class:`ProtocolError`.
    """
    buf = data if isinstance(data, bytes) else memoryview(data).cast("B")
    end = len(buf)
    formats = _FORMATS
    non_ascii = _NON_ASCII.search
    pos = 0
    cost = 0
    stack: list[int] = []  # elements still to read in each enclosing container
    remaining = 1  # elements still to read in the current container (at first: the message)
    pending = 1  # elements still to read in all of them
    while True:
        if remaining == 0:
            if not stack:
                break
            remaining = stack.pop()
            continue
        remaining -= 1
        pending -= 1
        if pos >= end:
            raise ProtocolError(f"{what}: truncated: an element is missing at byte {pos}")
        first = buf[pos]
        if 0xA0 <= first <= 0xBF:  # fixstr, the commonest element of a table: fast path
            n = first & 0x1F
            pos += 1
            if n > 1:
                if n > end - pos:
                    raise ProtocolError(f"{what}: a str at byte {pos} runs past the end")
                cost += 50 + n if non_ascii(buf, pos, pos + n) is None else 80 + 4 * n
                if cost > budget:
                    _over_budget(what, end, cost, budget)
            pos += n
            continue
        kind, width, fixed, extra = formats[first]
        if kind == _SCALAR:
            pos += fixed
            if fixed > 1:
                cost += 32
            continue
        if kind == _INVALID:
            raise ProtocolError(f"{what}: byte {pos} (0x{first:02x}) is not a msgpack type")
        n = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big") if width else fixed
        pos += 1 + width + extra
        if kind in (_ARRAY, _MAP):
            items = n if kind == _ARRAY else 2 * n
            pending += items
            if pending > end - pos:
                raise ProtocolError(
                    f"{what}: a {'list' if kind == _ARRAY else 'map'} at byte {pos} declares "
                    f"{n} elements, more than the {end - pos} bytes left can hold"
                )
            if len(stack) >= MAX_DEPTH:
                raise ProtocolError(f"{what}: lists and maps nest deeper than {MAX_DEPTH}")
            cost += 56 + 8 * n if kind == _ARRAY else 200 + 40 * n
            stack.append(remaining)
            remaining = items
        else:
            if n > end - pos:
                raise ProtocolError(
                    f"{what}: a value at byte {pos} declares {n} bytes, but only {end - pos} "
                    "are left"
                )
            if kind == _STR:
                if non_ascii(buf, pos, pos + n) is None:
                    cost += 50 + n if n > 1 else 0  # "" and 1-letter str are shared objects
                else:  # 80 + n for the str; decoding may pass through 4 bytes per char
                    cost += 80 + 4 * n
            else:
                cost += 40 + n if kind == _BIN else 100 + 2 * n
            pos += n
        if cost > budget:
            _over_budget(what, end, cost, budget)
    if cost > budget:
        _over_budget(what, end, cost, budget)
    if pos > end:
        raise ProtocolError(f"{what}: truncated: the last value needs {pos - end} more bytes")
    if pos < end:
        raise ProtocolError(f"{what}: {end - pos} bytes of trailing data after the message")
    return cost


def _over_budget(what: str, size: int, cost: int, budget: int) -> NoReturn:
    raise ProtocolError(
        f"{what}: decoding {size} bytes would build objects of about {cost} bytes, over the "
        f"limit of {budget} (max_frame_bytes + {DECODE_SLACK_BYTES}); send bulk data as numpy "
        "arrays"
    )


def _int_payload(value: int) -> bytes:
    sign = b"\x01" if value < 0 else b"\x00"
    magnitude = abs(int(value))
    return sign + magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big")


def _int_from_payload(data: bytes) -> int:
    if not data or data[0] not in (0, 1):
        raise ProtocolError("big integer payload has no valid sign byte (expected 0 or 1)")
    if len(data) - 1 > MAX_INT_BYTES:
        raise ProtocolError(
            f"big integer of {len(data) - 1} bytes exceeds the limit of {MAX_INT_BYTES} bytes"
        )
    magnitude = int.from_bytes(memoryview(data)[1:], "big")
    return -magnitude if data[0] == 1 else magnitude


def encode(
    kind: str,
    tag: str,
    depth: int,
    body: Any,
    *,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> list[bytes | memoryview]:
    """Pack one message into frames. Raises ``ProtocolError`` for types that cannot travel."""
    if kind not in KINDS:
        raise ProtocolError(f"unknown message kind {kind!r}; expected one of {sorted(KINDS)}")
    buffers: list[bytes | memoryview] = []

    def default(obj: Any) -> msgpack.ExtType:
        if isinstance(obj, _MPZ):
            return msgpack.ExtType(EXT_MPZ, _int_payload(int(obj)))
        if isinstance(obj, int) and not isinstance(obj, bool):
            return msgpack.ExtType(EXT_INT, _int_payload(obj))
        if isinstance(obj, np.ndarray):
            arr = obj
            if arr.dtype.byteorder == ">":
                arr = arr.astype(arr.dtype.newbyteorder("<"))
            if not arr.flags.c_contiguous:
                arr = arr.copy(order="C")
            if arr.dtype.str not in ALLOWED_DTYPES:
                raise ProtocolError(
                    f"numpy dtype {obj.dtype} cannot be sent; allowed: {sorted(ALLOWED_DTYPES)}"
                )
            if arr.nbytes > max_frame_bytes:
                raise ProtocolError(
                    f"array of {arr.nbytes} bytes exceeds max_frame_bytes={max_frame_bytes}"
                )
            buffers.append(arr.reshape(-1).view(np.uint8).data)
            meta = msgpack.packb([arr.dtype.str, list(arr.shape), len(buffers)])
            return msgpack.ExtType(EXT_NDARRAY, meta)
        if isinstance(obj, np.generic):
            return obj.item()
        raise ProtocolError(f"type {type(obj).__name__} cannot be sent in a message")

    try:
        header = msgpack.packb(
            [PROTOCOL_VERSION, kind, tag, depth, body], default=default, use_bin_type=True
        )
    except ProtocolError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"message body for tag {tag!r} cannot be packed: {exc}") from exc
    if len(header) > max_frame_bytes:
        raise ProtocolError(
            f"message header of {len(header)} bytes exceeds max_frame_bytes={max_frame_bytes}"
        )
    if len(buffers) + 1 > MAX_FRAMES:
        raise ProtocolError(f"message has {len(buffers)} arrays; at most {MAX_FRAMES - 1} allowed")
    return [header, *buffers]


def kind_prefix(kind: str) -> bytes:
    """The first bytes of frame 0 of every message of ``kind`` (the envelope's array header,
    the version, the kind): what lets a receiver pick out one kind without decoding the
    others. A message that starts so is still decoded, with every check, before use."""
    if kind not in KINDS:
        raise ProtocolError(f"unknown message kind {kind!r}; expected one of {sorted(KINDS)}")
    return b"\x95" + msgpack.packb(PROTOCOL_VERSION) + msgpack.packb(kind, use_bin_type=True)


def decode(
    frames: Sequence[bytes | memoryview], *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
) -> Envelope:
    """Unpack and validate one message; raises ``ProtocolError`` on any violation.

    Whatever the frames hold, the only exception this raises is :class:`ProtocolError`: a
    failure no check foresaw (a bug, or an input no test has tried yet) is turned into one
    too, so a receiver can always reject the message and go on."""
    try:
        return _decode(frames, max_frame_bytes)
    except ProtocolError:
        raise
    except MemoryError:
        raise ProtocolError("message rejected: decoding it ran out of memory") from None
    except Exception as exc:  # never a reason for a receiver to stop reading
        raise ProtocolError(
            f"malformed message: decoding failed with {type(exc).__name__}: {exc}"
        ) from exc


def _decode(frames: Sequence[bytes | memoryview], max_frame_bytes: int) -> Envelope:
    if not frames:
        raise ProtocolError("empty message: expected at least a header frame")
    if len(frames) > MAX_FRAMES:
        raise ProtocolError(f"message has {len(frames)} frames; at most {MAX_FRAMES} allowed")
    for i, frame in enumerate(frames):
        if len(frame) > max_frame_bytes:
            raise ProtocolError(
                f"frame {i} has {len(frame)} bytes, over max_frame_bytes={max_frame_bytes}"
            )
    used: set[int] = set()

    def ext_hook(code: int, data: bytes) -> Any:
        if code == EXT_INT:
            return _int_from_payload(data)
        if code == EXT_MPZ:
            return gmpy2.mpz(_int_from_payload(data))
        if code == EXT_NDARRAY:
            return _array_from(data, frames, used)
        raise ProtocolError(f"unknown extension type {code}; expected 1 (int), 2 (mpz), 3 (array)")

    size = len(frames[0])
    _check_msgpack(frames[0], max_frame_bytes + DECODE_SLACK_BYTES, "malformed message header")
    try:
        header = msgpack.unpackb(
            frames[0],
            ext_hook=ext_hook,
            raw=False,
            strict_map_key=True,
            use_list=True,
            max_str_len=size,
            max_bin_len=size,
            max_array_len=size,
            max_map_len=size,
            max_ext_len=size,
        )
    except ProtocolError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException, RecursionError) as exc:
        # msgpack raises these for hostile input (ExtraData, FormatError, StackError are
        # ValueError subclasses; a non-str map key is a ValueError under strict_map_key)
        raise ProtocolError(f"malformed message header: {type(exc).__name__}: {exc}") from exc
    if not isinstance(header, list) or len(header) != 5:
        raise ProtocolError("malformed envelope: expected [version, kind, tag, depth, body]")
    version, kind, tag, depth, body = header
    # types first: an array or a list compared with == or looked up in a set would raise
    # something other than ProtocolError
    if type(version) is not int or version != PROTOCOL_VERSION:
        raise ProtocolError(
            f"protocol version mismatch: expected {PROTOCOL_VERSION}, received "
            f"{_short(version)}; run the same release of the framework on every party"
        )
    if type(kind) is not str or kind not in KINDS:
        raise ProtocolError(f"unknown message kind {_short(kind)}; expected one of {sorted(KINDS)}")
    if type(tag) is not str or len(tag) > MAX_TAG_CHARS:
        raise ProtocolError(f"message tag must be a str of at most {MAX_TAG_CHARS} characters")
    if type(depth) is not int or depth < 0:
        raise ProtocolError(f"message depth must be a non-negative int, received {_short(depth)}")
    if len(used) != len(frames) - 1:
        raise ProtocolError(
            f"message has {len(frames) - 1} array frames but references {len(used)} of them"
        )
    return Envelope(kind, tag, depth, body)


def _short(value: Any, limit: int = 60) -> str:
    """``repr`` of a received value for an error message, cut to ``limit`` characters (a
    hostile value may be large; the message must stay one line)."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    text = repr(value) if isinstance(value, str | int | float | bool | None) else None
    if text is None:
        return f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _array_from(data: bytes, frames: Sequence[bytes | memoryview], used: set[int]) -> np.ndarray:
    if len(data) > MAX_DESCRIPTOR_BYTES:
        raise ProtocolError(
            f"array descriptor of {len(data)} bytes; at most {MAX_DESCRIPTOR_BYTES} allowed"
        )
    _check_msgpack(data, DECODE_SLACK_BYTES, "malformed array descriptor")
    try:
        meta = msgpack.unpackb(data, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise ProtocolError(f"malformed array descriptor: {exc}") from exc
    if not (isinstance(meta, list) and len(meta) == 3):
        raise ProtocolError("malformed array descriptor: expected [dtype, shape, frame index]")
    dtype_str, shape, index = meta
    if dtype_str not in ALLOWED_DTYPES:
        raise ProtocolError(
            f"array dtype {dtype_str!r} not allowed; allowed: {sorted(ALLOWED_DTYPES)}"
        )
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_NDIM
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
    ):
        raise ProtocolError(f"array shape must be a list of at most {MAX_NDIM} ints >= 0")
    if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index < len(frames):
        raise ProtocolError(f"array frame index {index!r} out of range 1..{len(frames) - 1}")
    if index in used:
        raise ProtocolError(f"array frame {index} referenced twice")
    used.add(index)
    dtype = np.dtype(dtype_str)
    expected = math.prod(shape) * dtype.itemsize
    frame = frames[index]
    if len(frame) != expected:
        raise ProtocolError(
            f"array frame {index} has {len(frame)} bytes; dtype {dtype_str} and shape "
            f"{tuple(shape)} need {expected}"
        )
    return np.frombuffer(frame, dtype=dtype).reshape(shape).copy()
