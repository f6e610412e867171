"""Typed checks of received message bodies: what a protocol expects, written once.

A protocol states the form of a message body with the builders below and passes it to
:meth:`mpc.runtime.party.Party.recv` (``expect=``), or declares it on the message's
:class:`mpc.runtime.view.Receipt` (``expect=``) so that every receive of that message checks
it. A body that does not fit raises :class:`mpc.errors.ProtocolError` naming the sender, the
step, the message and what was wrong::

    site1: site2 sent, at ppid3/l2/branching, the winners' fan-outs (ppid3/branching),
    which must be a list of 3 items, each an integer >= 1: item 2 is 0

The builders check types and public bounds only (a count between 0 and the number of rows, a
list of one entry per node, a name among the parties); relations between messages stay with
the protocol. ``bool`` is never accepted as an integer, as msgpack keeps them apart.

    >>> fan_outs = list_of(integer(lo=1), length=3)
    >>> check(fan_outs, [2, 3, 2], "fan-outs")
    [2, 3, 2]
    >>> check(fan_outs, [2, 0, 2], "fan-outs")
    Traceback (most recent call last):
    ...
    mpc.errors.ProtocolError: fan-outs must be a list of 3 items, each an integer >= 1: item 1 is 0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.errors import ProtocolError

__all__ = [
    "ANY",
    "Expect",
    "array",
    "boolean",
    "check",
    "either",
    "hex_text",
    "integer",
    "list_of",
    "mapping",
    "nothing_or",
    "one_of",
    "raw",
    "real",
    "record",
    "text",
    "tuple_of",
]


def _brief(x: Any) -> str:
    """A short description of a received value for an error message (never all of it)."""
    if isinstance(x, np.ndarray):
        return f"an array of {x.dtype} and shape {x.shape}"
    if isinstance(x, list | tuple):
        return f"a list of {len(x)}"
    if isinstance(x, Mapping):
        return f"a map with keys {sorted(map(str, x))[:6]}"
    text = repr(x)
    return text if len(text) <= 40 else f"{type(x).__name__} {text[:37]}..."


class Expect:
    """The form of a value. ``problem(x)`` says what is wrong with ``x`` (``None``: it fits);
    ``describe()`` says what fits, in words that complete "must be ..."."""

    def problem(self, x: Any) -> str | None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


def check(expect: Expect, x: Any, what: str) -> Any:
    """Return ``x`` if it fits ``expect``; else raise ``ProtocolError`` naming ``what``."""
    reason = expect.problem(x)
    if reason is not None:
        raise ProtocolError(f"{what} must be {expect.describe()}: {reason}")
    return x


@dataclass(frozen=True)
class _Any(Expect):
    def problem(self, x: Any) -> str | None:
        return None

    def describe(self) -> str:
        return "anything"


ANY: Expect = _Any()


@dataclass(frozen=True)
class _Integer(Expect):
    lo: int | None
    hi: int | None

    def problem(self, x: Any) -> str | None:
        if isinstance(x, bool) or not isinstance(x, int):
            return f"got {_brief(x)}"
        if (self.lo is not None and x < self.lo) or (self.hi is not None and x > self.hi):
            return f"got {x}"
        return None

    def describe(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"an integer in {self.lo}..{self.hi}"
        if self.lo is not None:
            return f"an integer >= {self.lo}"
        if self.hi is not None:
            return f"an integer <= {self.hi}"
        return "an integer"


def integer(lo: int | None = None, hi: int | None = None) -> Expect:
    """An ``int`` (never a ``bool``) in ``lo..hi`` (both ends included; ``None``: unbounded)."""
    return _Integer(lo, hi)


@dataclass(frozen=True)
class _Type(Expect):
    types: tuple[type, ...]
    words: str

    def problem(self, x: Any) -> str | None:
        if isinstance(x, bool) and bool not in self.types:
            return f"got {_brief(x)}"
        return None if isinstance(x, self.types) else f"got {_brief(x)}"

    def describe(self) -> str:
        return self.words


def boolean() -> Expect:
    """``True`` or ``False``."""
    return _Type((bool,), "true or false")


def real() -> Expect:
    """A ``float`` (a gain, a fraction)."""
    return _Type((float,), "a number")


@dataclass(frozen=True)
class _Bytes(Expect):
    length: int | None

    def problem(self, x: Any) -> str | None:
        if not isinstance(x, bytes):
            return f"got {_brief(x)}"
        if self.length is not None and len(x) != self.length:
            return f"got {len(x)} bytes"
        return None

    def describe(self) -> str:
        return "bytes" if self.length is None else f"{self.length} bytes"


def raw(length: int | None = None) -> Expect:
    """``bytes`` (a key, a seed, a ciphertext); of exactly ``length`` when given."""
    return _Bytes(length)


@dataclass(frozen=True)
class _Hex(Expect):
    max_length: int

    def problem(self, x: Any) -> str | None:
        ok = (
            isinstance(x, str)
            and 0 < len(x) <= self.max_length
            and all(c in "0123456789abcdef" for c in x)
        )
        return None if ok else f"got {_brief(x)}"

    def describe(self) -> str:
        return f"lowercase hex text of at most {self.max_length} digits"


def hex_text(max_length: int = 128) -> Expect:
    """A non-empty string of lowercase hex digits (a digest, a commitment, a random id), of at
    most ``max_length``."""
    return _Hex(max_length)


@dataclass(frozen=True)
class _Text(Expect):
    choices: tuple[str, ...]

    def problem(self, x: Any) -> str | None:
        if not isinstance(x, str):
            return f"got {_brief(x)}"
        if self.choices and x not in self.choices:
            return f"got {_brief(x)}"
        return None

    def describe(self) -> str:
        if not self.choices:
            return "a string"
        return "one of " + ", ".join(map(repr, self.choices))


def text(choices: Sequence[str] = ()) -> Expect:
    """A string; one of ``choices`` when they are given."""
    return _Text(tuple(choices))


@dataclass(frozen=True)
class _OneOf(Expect):
    values: tuple[Any, ...]

    def problem(self, x: Any) -> str | None:
        for v in self.values:
            if type(x) is type(v) and x == v:
                return None
        return f"got {_brief(x)}"

    def describe(self) -> str:
        return "one of " + ", ".join(map(repr, self.values))


def one_of(*values: Any) -> Expect:
    """Exactly one of ``values`` (of the same type: ``1`` is not ``True``)."""
    return _OneOf(values)


@dataclass(frozen=True)
class _Optional(Expect):
    inner: Expect

    def problem(self, x: Any) -> str | None:
        return None if x is None else self.inner.problem(x)

    def describe(self) -> str:
        return f"nothing or {self.inner.describe()}"


def nothing_or(inner: Expect) -> Expect:
    """``None`` (msgpack's nil) or what ``inner`` accepts."""
    return _Optional(inner)


@dataclass(frozen=True)
class _Either(Expect):
    options: tuple[Expect, ...]

    def problem(self, x: Any) -> str | None:
        reasons = [o.problem(x) for o in self.options]
        return None if None in reasons else f"got {_brief(x)}"

    def describe(self) -> str:
        return " or ".join(o.describe() for o in self.options)


def either(*options: Expect) -> Expect:
    """What any one of ``options`` accepts."""
    return _Either(options)


@dataclass(frozen=True)
class _List(Expect):
    item: Expect
    length: int | None
    min_length: int

    def problem(self, x: Any) -> str | None:
        if not isinstance(x, list):
            return f"got {_brief(x)}"
        if self.length is not None and len(x) != self.length:
            return f"got a list of {len(x)}"
        if len(x) < self.min_length:
            return f"got a list of {len(x)}"
        for i, v in enumerate(x):
            reason = self.item.problem(v)
            if reason is not None:
                return (
                    f"item {i} is {reason[4:]}"
                    if reason.startswith("got ")
                    else (f"item {i}: {reason}")
                )
        return None

    def describe(self) -> str:
        if self.length is not None:
            size = f"{self.length} items"
        elif self.min_length:
            size = f"at least {self.min_length} items"
        else:
            size = "items"
        return f"a list of {size}, each {self.item.describe()}"


def list_of(item: Expect, length: int | None = None, *, min_length: int = 0) -> Expect:
    """A list whose every item fits ``item``: of exactly ``length`` items when given."""
    return _List(item, length, min_length)


@dataclass(frozen=True)
class _Tuple(Expect):
    items: tuple[Expect, ...]

    def problem(self, x: Any) -> str | None:
        if not isinstance(x, list) or len(x) != len(self.items):
            return f"got {_brief(x)}"
        for i, (v, item) in enumerate(zip(x, self.items, strict=True)):
            reason = item.problem(v)
            if reason is not None:
                return f"item {i}: {reason}"
        return None

    def describe(self) -> str:
        return "[" + ", ".join(i.describe() for i in self.items) + "]"


def tuple_of(*items: Expect) -> Expect:
    """A list of ``len(items)`` values, the ``i``-th fitting ``items[i]`` (msgpack carries
    tuples as lists)."""
    return _Tuple(items)


@dataclass(frozen=True)
class _Mapping(Expect):
    key: Expect
    value: Expect

    def problem(self, x: Any) -> str | None:
        if not isinstance(x, Mapping):
            return f"got {_brief(x)}"
        for k, v in x.items():
            reason = self.key.problem(k)
            if reason is not None:
                return f"key {_brief(k)}: {reason}"
            reason = self.value.problem(v)
            if reason is not None:
                return f"at key {_brief(k)}: {reason}"
        return None

    def describe(self) -> str:
        return f"a map from {self.key.describe()} to {self.value.describe()}"


def mapping(key: Expect, value: Expect) -> Expect:
    """A map whose keys fit ``key`` and values fit ``value``."""
    return _Mapping(key, value)


@dataclass(frozen=True)
class _Record(Expect):
    fields: tuple[tuple[str, Expect], ...]
    optional: frozenset[str] = field(default_factory=frozenset)
    extra: bool = False

    def problem(self, x: Any) -> str | None:
        if not isinstance(x, Mapping):
            return f"got {_brief(x)}"
        names = {n for n, _ in self.fields}
        unknown = [k for k in x if k not in names]
        if unknown and not self.extra:
            return f"unknown key {_brief(unknown[0])}"
        for name, expect in self.fields:
            if name not in x:
                if name in self.optional:
                    continue
                return f"no {name!r}"
            reason = expect.problem(x[name])
            if reason is not None:
                return f"{name!r}: {reason}"
        return None

    def describe(self) -> str:
        return "a map with " + ", ".join(repr(n) for n, _ in self.fields)


def record(
    fields: Mapping[str, Expect], *, optional: Sequence[str] = (), extra: bool = False
) -> Expect:
    """A map with the keys of ``fields`` (each value fitting its entry); the keys in
    ``optional`` may be absent, and other keys are refused unless ``extra``."""
    return _Record(tuple(fields.items()), frozenset(optional), extra)


@dataclass(frozen=True)
class _Array(Expect):
    kind: str  # numpy dtype kind letters accepted, e.g. "iu"
    ndim: int | None
    width: int | None

    def problem(self, x: Any) -> str | None:
        if not isinstance(x, np.ndarray):
            return f"got {_brief(x)}"
        if x.dtype.kind not in self.kind and x.size:
            return f"got {_brief(x)}"
        if self.ndim is not None and x.ndim != self.ndim:
            return f"got {_brief(x)}"
        if self.width is not None and (x.ndim < 2 or x.shape[1] != self.width):
            return f"got {_brief(x)}"
        return None

    def describe(self) -> str:
        kinds = {"i": "integer", "u": "unsigned", "f": "float", "b": "boolean"}
        words = " or ".join(kinds.get(k, k) for k in self.kind)
        shape = f"{self.ndim}-d " if self.ndim is not None else ""
        width = f" with {self.width} columns" if self.width is not None else ""
        return f"a {shape}{words} array{width}"


def array(kind: str, ndim: int | None = None, width: int | None = None) -> Expect:
    """A numpy array whose dtype kind is one of the letters ``kind`` (``"iu"``: integers), of
    ``ndim`` dimensions and ``width`` columns when given (an empty array of any dtype fits)."""
    return _Array(kind, ndim, width)
