"""What a party receives, declared: every ``recv`` names a :class:`Receipt`.

A party's *view* is everything it receives. The runtime accounts every message under the
receipt its ``recv`` names, so the record of what a party saw is complete by construction:
there is no way to receive a protocol message without declaring what it is. A receipt says
which of three kinds the message is:

* :attr:`Kind.PUBLIC` — independent of every party's private data, or part of the public
  result (the tree structure, a node's leaf flag, a row count the papers make public);
* :attr:`Kind.UNIFORM` — masked, encrypted, a share, or the sender's fresh randomness:
  uniformly distributed whatever the data, and not only on its own: beside everything the
  receiver holds, its own randomness and what it dealt included (a share that is uniform
  alone is not uniform beside the triple its receiver dealt). Its *skeleton* (the shapes of its
  arrays, the lengths of its lists and strings, the values under the dict keys the receipt
  names ``public``) is public; the rest, its *payload*, is what must look uniform. Where the
  receiver can unmask it with randomness of its own, ``opens`` names the ledger label of what
  it then learns;
* :attr:`Kind.DECLARED` — leakage the paper names (Theorem 1's counts, a disguised table of
  randomized response), or the docs declare.

:class:`ViewRecorder` is what the tests use to hold the runtime to this (``MPC_VIEW=1`` in a
party process): every public and declared message as received (``canonical`` turns a
message into what it tells, up to the sender's own randomness, such as a row order), the
skeleton of every uniform one, and per receipt the statistics of the uniform payload that a
chi-square test reads (:func:`uniformity_p_value`). A uniform receipt whose payload holds
what cannot be uniform (a float, a small integer without a declared ``modulus``, a string
that is not hex) fails the run there, naming the receipt.

The record-swap view test (``tests/protocols/test_views.py``) runs a system twice on tables
that differ only by the swap of two records' data outside what a party P sees; every aggregate P may
learn is the same, so P's public and declared messages, its uniform skeletons and its ledger
must be too, and its uniform payloads must pass the chi-square test. It runs with P's own
randomness fixed in both runs (:mod:`mpc.crypto.randomness`), everyone else's fresh, and then
P's uniform payloads must also not repeat from one run to the other, nor differ in
distribution (the joint-view test: :func:`repeated_payloads`, :func:`two_sample_p_value`,
over the samples each uniform message keeps).
"""

from __future__ import annotations

import base64
import enum
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.errors import ProtocolError
from mpc.runtime.expect import Expect
from mpc.runtime.metrics import jsonable

__all__ = [
    "READY",
    "Batch",
    "Kind",
    "Receipt",
    "ViewRecorder",
    "declared",
    "public",
    "repeated_payloads",
    "repetition_p_value",
    "tag_pattern",
    "two_sample_p_value",
    "uniform",
    "uniformity_p_value",
]


class Batch(list[Any]):
    """What a receipt's ``canonical`` returns for a message that carries several (requests
    that travel together or alone, as timing has it): each is recorded as a message of its
    own, so that the view does not depend on how they were grouped."""


class Kind(enum.StrEnum):
    """What a received message is: see the module docstring."""

    PUBLIC = "public"
    UNIFORM = "uniform"
    DECLARED = "declared"


@dataclass(frozen=True)
class Receipt:
    """The declaration of one kind of message a party receives.

    ``name`` (``protocol/what``) names it in reports and in the docs, ``what`` says in a few
    words what the body is. For :attr:`Kind.UNIFORM`: ``public`` lists the dict keys whose
    values are public (``shape`` of :func:`mpc.runtime.chunks.pack_array`), ``modulus`` the
    ring of the small integers of the payload (none allowed without it), ``opens`` the ledger
    label of what the receiver learns when it unmasks the message with randomness of its own,
    ``elements`` says that its 2-d ``uint8`` arrays hold group elements or ciphertexts row by
    row (the first and last bytes of each, which an encoding's sign or top bits fix, are not
    tested); ``shared`` says that the message is one of several shares that only *together*
    open what ``opens`` names (an opening of :mod:`protocols.engine.opening`): each one stays
    uniform beside everything its receiver holds, its own randomness included, where a
    message the receiver unmasks with its own randomness is a function of that randomness and
    of what it opens;
    its strings are public unless ``tokens`` says they are random hex tokens (node ids), and
    with ``permutations`` a list of ints that permutes ``0 .. L-1`` is a random permutation
    (its rank is tested), and so is a packed array of unsigned ints that does (its first
    :data:`PERMUTATION_HEAD` positions are tested, in 16 buckets).
    ``canonical`` maps a body to what it tells the receiver, up to the sender's own
    randomness (a row order, a permutation of the classes; for a uniform receipt, the order
    of its parts). For the other kinds
    ``uniform_keys`` names the dict keys, at any depth, whose values are ciphertexts within
    it (uniform: recorded and tested as a uniform receipt's payload); ``records`` says how
    the body refers to records of the common order (:mod:`protocols.primitives.record_alignment`,
    new in every run): ``"positions"`` (its integer arrays are positions in that order) or
    ``"rows"`` (it is a list with one entry per record, in that order). The view then names
    the records by the party's own ids, which is how the party knows them. ``ordered=False``
    says that the order of these messages (and the numbers in their tags) depends on timing
    only, as requests from tasks running side by side: the view compares them as a
    multiset. ``expect`` (:mod:`mpc.runtime.expect`) is the form every body must have: a
    receive refuses one that does not fit, naming the sender."""

    name: str
    kind: Kind
    what: str
    public: tuple[str, ...] = ("shape",)
    modulus: int | None = None
    opens: str | None = None
    canonical: Callable[[Any], Any] | None = None
    elements: bool = False
    shared: bool = False
    tokens: bool = False
    permutations: bool = False
    uniform_keys: tuple[str, ...] = ()
    records: str | None = None
    ordered: bool = True
    expect: Expect | None = None

    def __post_init__(self) -> None:
        if self.kind is not Kind.UNIFORM and (
            self.modulus is not None
            or self.opens
            or self.elements
            or self.shared
            or self.tokens
            or self.permutations
        ):
            raise ValueError(
                f"receipt {self.name}: modulus, opens, elements, shared, tokens and permutations "
                "are for uniform messages"
            )
        if self.shared and not self.opens:
            raise ValueError(f"receipt {self.name}: shares open something (opens)")
        if self.kind is Kind.UNIFORM and (self.uniform_keys or self.records):
            raise ValueError(
                f"receipt {self.name}: a uniform message has no uniform keys and no records"
            )
        if self.records not in (None, "positions", "rows"):
            raise ValueError(f"receipt {self.name}: records is 'positions' or 'rows'")


def public(
    name: str,
    what: str,
    *,
    canonical: Callable[[Any], Any] | None = None,
    ordered: bool = True,
    expect: Expect | None = None,
) -> Receipt:
    """A :attr:`Kind.PUBLIC` receipt."""
    return Receipt(name, Kind.PUBLIC, what, canonical=canonical, ordered=ordered, expect=expect)


def declared(
    name: str,
    what: str,
    *,
    canonical: Callable[[Any], Any] | None = None,
    uniform_keys: tuple[str, ...] = (),
    records: str | None = None,
    expect: Expect | None = None,
) -> Receipt:
    """A :attr:`Kind.DECLARED` receipt."""
    return Receipt(
        name, Kind.DECLARED, what, canonical=canonical, uniform_keys=uniform_keys,
        records=records, expect=expect,
    )  # fmt: skip


def uniform(
    name: str,
    what: str,
    *,
    public: tuple[str, ...] = ("shape",),
    modulus: int | None = None,
    opens: str | None = None,
    elements: bool = False,
    shared: bool = False,
    tokens: bool = False,
    permutations: bool = False,
    canonical: Callable[[Any], Any] | None = None,
    ordered: bool = True,
    expect: Expect | None = None,
) -> Receipt:
    """A :attr:`Kind.UNIFORM` receipt."""
    return Receipt(
        name, Kind.UNIFORM, what, public=public, modulus=modulus, opens=opens,
        elements=elements, shared=shared, tokens=tokens, permutations=permutations,
        canonical=canonical, ordered=ordered, expect=expect,
    )  # fmt: skip


#: a barrier's message: that the sender is ready (no data)
READY = public("runtime/ready", "that the sender is ready (a barrier)")

_NUMBER = re.compile(r"\d+")


def tag_pattern(tag: str) -> str:
    """A tag with its numbers (node, level, request, hop) as ``*``, its first segment (the
    protocol's name) as it is: the tags of one receipt at every node of a tree fold into one
    line of a report."""
    head, sep, rest = tag.partition("/")
    return head + sep + _NUMBER.sub("*", rest)


# ----------------------------------------------------------------------------- recording

#: the bytes of each part of a uniform message that a view keeps as its sample
SAMPLE_BYTES = 8192

#: integers at or beyond this size in a uniform payload are ring or group elements (Paillier
#: ciphertexts, big shares): their low bytes are tested, their top two bytes are not
_BIG = 1 << 64
_HEX = re.compile(r"[0-9a-f]+")


@dataclass
class _Payload:
    """Statistics of one receipt's uniform payload: nibbles (of bytes, hex strings and the
    low bytes of big integers), bits (of bool arrays), buckets of ``modulus``."""

    nibbles: Counter[int] = field(default_factory=Counter)
    #: the group elements seen (a ciphertext that occurs again is the same element, as the
    #: common elements of PSI-CA are by design: each distinct one is tested once)
    seen: set[bytes] = field(default_factory=set)
    bits: Counter[int] = field(default_factory=Counter)
    buckets: Counter[int] = field(default_factory=Counter)
    #: permutation length -> rank (Lehmer code) -> count
    perms: defaultdict[int, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    count: int = 0

    def add_bytes(self, data: np.ndarray) -> None:
        b = np.asarray(data, dtype=np.uint8).reshape(-1)
        if b.size == 0:
            return
        self.nibbles.update(
            dict(enumerate(np.bincount(np.concatenate([b >> 4, b & 15]), minlength=16).tolist()))
        )
        self.count += int(b.size)

    def to_dict(self) -> dict[str, Any]:
        return {
            "nibbles": [self.nibbles[i] for i in range(16)],
            "bits": [self.bits[0], self.bits[1]],
            "buckets": [self.buckets[i] for i in range(16)],
            "perms": {str(n): dict(sorted(c.items())) for n, c in sorted(self.perms.items())},
            "values": self.count,
        }


#: how the values under a receipt's ``uniform_keys`` are read: ciphertexts, byte strings or
#: rows of bytes
_SEALED = Receipt("sealed", Kind.UNIFORM, "ciphertexts within a message", public=(), elements=True)


def _is_permutation(value: list[Any] | tuple[Any, ...]) -> bool:
    return (
        len(value) >= 2
        and all(type(v) is int for v in value)
        and sorted(value) == list(range(len(value)))
    )


#: positions of a long permutation (an array) tested and sampled: each is uniform alone, and
#: the first few of a uniform permutation are nearly independent
PERMUTATION_HEAD = 64


def _packed_permutation(value: dict[Any, Any]) -> np.ndarray | None:
    """The permutation of ``0 .. L-1`` that a packed one-dimensional array of unsigned ints
    (:func:`mpc.runtime.chunks.pack_array`) holds, or None if it holds none."""
    parts, shape = value.get("parts"), value.get("shape")
    if set(value) != {"shape", "parts"} or not isinstance(parts, list) or not parts:
        return None
    if not (isinstance(shape, list) and len(shape) == 1 and shape[0] >= 2):
        return None
    if not all(isinstance(a, np.ndarray) and a.dtype.kind == "u" for a in parts):
        return None
    flat = np.concatenate(parts)
    if flat.size != shape[0] or int(flat.max()) >= flat.size:
        return None
    if np.bincount(flat.astype(np.int64), minlength=flat.size).max() != 1:
        return None
    return flat


def _rank(perm: list[Any] | tuple[Any, ...]) -> int:
    """The Lehmer rank of a permutation of ``0 .. L-1`` (uniform on ``0 .. L!-1`` for a
    uniformly random one)."""
    rank, rest = 0, list(range(len(perm)))
    for i, v in enumerate(perm):
        j = rest.index(v)
        rank += j * math.factorial(len(perm) - 1 - i)
        rest.pop(j)
    return rank


def _strip(data: bytes) -> np.ndarray:
    """The bytes of a group element or seed that are uniform: all but the first and last of
    an encoding of 8 bytes or more (an X25519 u-coordinate's top bit, a ristretto255
    encoding's sign bit)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    return arr[1:-1] if arr.size >= 8 else arr


def _stats_key(receipt: Receipt, peer: str) -> str:
    """Where a uniform message's payload statistics go: by receipt, and for a share of an
    opening (``shared``) by receipt and sender, since the shares of one opening sum to what
    it opens (``p1``'s is the value less ``p0``'s) and pooled their bytes are not
    independent draws: each sender's shares are uniform alone and are tested alone."""
    return f"{receipt.name} from {peer}" if receipt.shared else receipt.name


class ViewRecorder:
    """One party's view as the tests read it: see the module docstring. With ``samples``
    (the default) each uniform message also keeps a sample of its payload (the first
    :data:`SAMPLE_BYTES` of each part, with the chance that two independent uniform values
    of the part agree), which the joint-view test compares across runs (:func:`repeats`)."""

    def __init__(self, *, samples: bool = True) -> None:
        self.samples = samples
        self._leaves: list[dict[str, Any]] | None = None
        self.messages: list[dict[str, Any]] = []
        self.payloads: defaultdict[str, _Payload] = defaultdict(_Payload)
        #: this party's own record ids in the common order of its latest record alignment
        self.record_ids: list[str] | None = None

    def record(self, peer: str, tag: str, receipt: Receipt, body: Any) -> None:
        """Put one received message on record (raises :class:`ProtocolError` when a uniform
        receipt carries a value that cannot be uniform)."""
        value = receipt.canonical(body) if receipt.canonical else body
        if receipt.records is not None:
            value = self._by_id(value, receipt)
        for item in value if isinstance(value, Batch) else [value]:
            self._leaves = [] if self.samples else None
            if receipt.kind is Kind.UNIFORM:
                shown = self._skeleton(
                    item, receipt, self.payloads[_stats_key(receipt, peer)], "body"
                )
            elif receipt.uniform_keys:
                shown = self._mixed(item, receipt, "body")
            else:
                shown = jsonable(item)
            leaves, self._leaves = self._leaves, None
            self.messages.append(
                {"from": peer, "tag": tag, "receipt": receipt.name, "kind": str(receipt.kind),
                 "body": shown, **({} if receipt.ordered else {"unordered": True}),
                 **({"payload": leaves} if leaves else {}),
                 **({"opens": receipt.opens} if receipt.opens and not receipt.shared else {})}
            )  # fmt: skip

    def _by_id(self, value: Any, receipt: Receipt) -> Any:
        """``value`` with its records named by this party's ids (``receipt.records``)."""
        ids = self.record_ids
        if ids is None:
            raise ProtocolError(
                f"receipt {receipt.name!r} refers to records, but no record alignment ran"
            )
        if receipt.records == "rows":
            rows = list(value)
            if len(rows) != len(ids):
                raise ProtocolError(f"receipt {receipt.name!r}: {len(rows)} rows for {len(ids)}")
            return dict(sorted(zip(ids, (jsonable(r) for r in rows), strict=True)))

        def walk(v: Any) -> Any:
            if isinstance(v, np.ndarray) and v.dtype.kind in "iu":
                return sorted(ids[int(i)] for i in v.reshape(-1))
            if isinstance(v, dict):
                return {k: walk(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [walk(x) for x in v]
            return v

        return walk(value)

    def _mixed(self, value: Any, receipt: Receipt, path: str) -> Any:
        """A public or declared body with ciphertexts under ``receipt.uniform_keys``."""
        if isinstance(value, dict):
            out = {}
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0])):
                if k in receipt.uniform_keys:
                    stats = self.payloads[receipt.name]
                    out[str(k)] = self._skeleton(v, _SEALED, stats, f"{path}.{k}")
                else:
                    out[str(k)] = self._mixed(v, receipt, f"{path}.{k}")
            return out
        if isinstance(value, list | tuple):
            return [self._mixed(v, receipt, f"{path}[{i}]") for i, v in enumerate(value)]
        return jsonable(value)

    def _skeleton(self, value: Any, receipt: Receipt, stats: _Payload, path: str) -> Any:
        """The public part of a uniform body; its payload goes into ``stats``."""
        if receipt.permutations and isinstance(value, dict):
            order = _packed_permutation(value)
            if order is not None:  # a long one: its first positions, each uniform
                head = order[:PERMUTATION_HEAD].astype(np.int64)
                stats.buckets.update(
                    dict(enumerate(np.bincount(head * 16 // order.size, minlength=16).tolist()))
                )
                stats.count += int(head.size)
                # position by position (as bytes): two uniform permutations agree at a
                # position with probability 1/L, their buckets of B about 1/B
                buckets = min(order.size, 256)
                self._sample((head * buckets // order.size).astype(np.uint8), 1,
                             -(-order.size // buckets) / order.size)  # fmt: skip
                return {"permutation": int(order.size)}
        if isinstance(value, dict):
            return {
                str(k): (
                    jsonable(v)
                    if k in receipt.public
                    else self._skeleton(v, receipt, stats, f"{path}.{k}")
                )
                for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
            }
        if isinstance(value, list | tuple):
            if receipt.permutations and _is_permutation(value):
                stats.perms[len(value)][_rank(value)] += 1
                stats.count += 1
                rank = _rank(value)
                width = max(1, (math.factorial(len(value)).bit_length() + 7) // 8)
                self._sample(np.frombuffer(rank.to_bytes(width, "little"), np.uint8), width,
                             1 / math.factorial(len(value)))  # fmt: skip
                return {"permutation": len(value)}
            return [self._skeleton(v, receipt, stats, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, np.ndarray):
            if value.dtype == np.bool_:
                ones = int(np.count_nonzero(value))
                stats.bits.update({1: ones, 0: int(value.size) - ones})
                stats.count += int(value.size)
                self._sample(value.reshape(-1).astype(np.uint8), 1, 0.5)
            elif receipt.elements and value.dtype == np.uint8 and value.ndim >= 2:
                rows = np.ascontiguousarray(value).reshape(-1, value.shape[-1])
                fresh = []
                for row in rows:
                    key = row.tobytes()
                    if key not in stats.seen:
                        stats.seen.add(key)
                        fresh.append(row)
                if fresh:
                    stats.add_bytes(np.stack(fresh)[:, 1:-1])
                self._sample(rows[:, 1:-1], 1, 1 / 256)
            elif value.dtype.kind == "u":
                stats.add_bytes(np.ascontiguousarray(value).view(np.uint8))
                flat = np.ascontiguousarray(value).reshape(-1)
                if value.dtype == np.uint8:  # the last byte of packed bits holds padding
                    flat = flat[:-1]
                self._sample(flat, value.dtype.itemsize, 2.0 ** (-8 * value.dtype.itemsize))
            else:
                raise self._refuse(receipt, path, f"a {value.dtype} array")
            return {"array": str(value.dtype), "shape": list(value.shape)}
        if isinstance(value, bytes | bytearray | memoryview):
            data = bytes(value)
            stats.add_bytes(_strip(data))
            self._sample(_strip(data), 1, 1 / 256)
            return {"bytes": len(data)}
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            if not receipt.tokens:
                return value
            if not _HEX.fullmatch(value):
                raise self._refuse(receipt, path, "a string that is not lowercase hex")
            digits = np.frombuffer(value.encode(), dtype=np.uint8)
            nib = np.where(digits >= ord("a"), digits - ord("a") + 10, digits - ord("0"))
            stats.nibbles.update(dict(enumerate(np.bincount(nib, minlength=16).tolist())))
            stats.count += len(value)
            self._sample(nib.astype(np.uint8), 1, 1 / 16)
            return {"hex": len(value)}
        if isinstance(value, float):
            raise self._refuse(receipt, path, "a float")
        try:
            number = int(value)  # ints and gmpy2.mpz
        except (TypeError, ValueError):
            raise self._refuse(receipt, path, f"a {type(value).__name__}") from None
        if receipt.modulus is not None and 0 <= number < receipt.modulus:
            stats.buckets[number * 16 // receipt.modulus] += 1
            stats.count += 1
            width = max(1, (receipt.modulus.bit_length() + 7) // 8)
            self._sample(np.frombuffer(number.to_bytes(width, "little"), np.uint8), width,
                         1 / receipt.modulus)  # fmt: skip
            return {"mod": receipt.modulus}
        if abs(number) >= _BIG:
            data = abs(number).to_bytes((abs(number).bit_length() + 7) // 8, "little")
            stats.add_bytes(np.frombuffer(data[:-2], dtype=np.uint8))
            self._sample(np.frombuffer(data[:-2], dtype=np.uint8), 1, 1 / 256)
            return {"int": "big"}  # its length varies with its value
        raise self._refuse(receipt, path, f"the integer {number} (no modulus declared)")

    def _sample(self, values: np.ndarray, width: int, chance: float) -> None:
        """Keep the first :data:`SAMPLE_BYTES` of a uniform part of the message being
        recorded: elements of ``width`` bytes, two of which from independent uniform draws
        agree with probability ``chance``."""
        if self._leaves is None:
            return
        data = np.ascontiguousarray(values).view(np.uint8).reshape(-1)
        if data.size == 0:
            return
        data = data[: SAMPLE_BYTES - SAMPLE_BYTES % width]
        self._leaves.append(
            {"width": width, "chance": chance, "data": base64.b64encode(data.tobytes()).decode()}
        )

    @staticmethod
    def _refuse(receipt: Receipt, path: str, what: str) -> ProtocolError:
        return ProtocolError(
            f"receipt {receipt.name!r} is declared uniform, but {path} is {what}, which cannot "
            "be uniform; declare it public or declared, or name its ring (modulus)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "uniform": {k: v.to_dict() for k, v in sorted(self.payloads.items())},
        }


# ----------------------------------------------------------------------------- testing


def uniformity_p_value(stats: dict[str, Any]) -> float:
    """The smallest p-value of the chi-square tests of one receipt's payload statistics
    (:meth:`ViewRecorder.to_dict`'s ``uniform`` entries): nibbles and buckets against 16
    equal bins, bits against 2. A test with fewer than 5 expected per bin is not made
    (p = 1). Permutations are tested by their rank, over ``L!`` bins (16 beyond ``6!``)."""
    p = 1.0
    for key, bins in (("nibbles", 16), ("bits", 2), ("buckets", 16)):
        counts = np.asarray(stats.get(key, []), dtype=np.float64)
        total = float(counts.sum())
        if counts.size != bins or total < 5 * bins:
            continue
        expected = total / bins
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        p = min(p, _chi2_sf(chi2, bins - 1))
    for length, ranks in (stats.get("perms") or {}).items():
        size = math.factorial(int(length))
        bins = size if size <= 720 else 16
        counts = np.zeros(bins)
        for rank, n in ranks.items():
            counts[int(rank) * bins // size] += n
        total = float(counts.sum())
        if total < 5 * bins:
            continue
        expected = total / bins
        p = min(p, _chi2_sf(float(((counts - expected) ** 2 / expected).sum()), bins - 1))
    return p


def repeated_payloads(
    first: dict[str, Any], second: dict[str, Any], *, opened: frozenset[str] = frozenset()
) -> dict[str, tuple[int, int, float]]:
    """How much of two views' uniform payloads agree (:meth:`ViewRecorder.to_dict` of two
    runs with the receiver's own randomness fixed): per receipt, the elements compared, the
    elements that agree, and how many would agree by chance were every element an
    independent uniform draw in each run. The messages of one sender, tag and receipt are
    paired in the order received; parts are compared element by element over their
    samples: bytes and bits position by position, wider words as multisets (a row order that
    other parties' randomness draws, as record alignment's, may move them). Messages the
    receiver unmasks with its own randomness into a ledger label of
    ``opened`` (one it learnt alike in both runs) are left out: they are a function of that
    randomness and of what they open."""

    def keyed(view: dict[str, Any]) -> dict[tuple[str, str, str, int], list[Any]]:
        out: dict[tuple[str, str, str, int], list[Any]] = {}
        seen: Counter[tuple[str, str, str]] = Counter()
        for m in view.get("messages", []):
            if "payload" not in m or m.get("opens") in opened:
                continue
            k = (m["from"], m["tag"], m["receipt"])
            out[(*k, seen[k])] = m["payload"]
            seen[k] += 1
        return out

    a, b = keyed(first), keyed(second)
    totals: dict[str, tuple[int, int, float]] = {}
    for key in sorted(set(a) & set(b)):
        compared, agree, chance = totals.get(key[2], (0, 0, 0.0))
        for la, lb in zip(a[key], b[key], strict=False):
            w = int(la["width"])
            if w != int(lb["width"]):
                continue
            xa = np.frombuffer(base64.b64decode(la["data"]), np.uint8)
            xb = np.frombuffer(base64.b64decode(lb["data"]), np.uint8)
            na, nb = xa.size // w, xb.size // w
            if na == 0 or nb == 0:
                continue
            if w == 1:  # bytes and bits: element by element
                n = min(na, nb)
                agree += int((xa[:n] == xb[:n]).sum())
                chance += n * float(la["chance"])
            else:  # words: in any order (a row order drawn by others may move them)
                n = min(na, nb)
                agree += _common(xa[: na * w].reshape(na, w), xb[: nb * w].reshape(nb, w))
                chance += na * nb * float(la["chance"])
            compared += n
        totals[key[2]] = (compared, agree, chance)
    return totals


def _common(a: np.ndarray, b: np.ndarray) -> int:
    """How many rows two arrays of byte rows have in common, as multisets."""
    va = np.ascontiguousarray(a).view(np.dtype((np.void, a.shape[1]))).reshape(-1)
    vb = np.ascontiguousarray(b).view(np.dtype((np.void, b.shape[1]))).reshape(-1)
    ua, ca = np.unique(va, return_counts=True)
    ub, cb = np.unique(vb, return_counts=True)
    _, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    return int(np.minimum(ca[ia], cb[ib]).sum())


def repetition_p_value(agree: int, chance: float) -> float:
    """The chance of ``agree`` or more agreements where ``chance`` are expected (the
    Poisson tail: many elements, each agreeing rarely and independently)."""
    if agree <= chance:
        return 1.0
    lam = max(chance, 1e-300)
    log_term = -lam + agree * math.log(lam) - math.lgamma(agree + 1)
    total, j, term = 0.0, agree, log_term
    while True:
        total += math.exp(term)
        j += 1
        term += math.log(lam) - math.log(j)
        if term < log_term - 50 or j > agree + 10_000:
            return min(1.0, total)


def two_sample_p_value(first: dict[str, Any], second: dict[str, Any]) -> float:
    """The smallest p-value of the chi-square tests of homogeneity of two runs' statistics
    of one receipt's payload (:meth:`ViewRecorder.to_dict`'s ``uniform`` entries): do the
    nibbles, bits and buckets of the two come from one distribution? A table with fewer
    than 5 expected in a cell is not tested (p = 1)."""
    p = 1.0
    for key, bins in (("nibbles", 16), ("bits", 2), ("buckets", 16)):
        a = np.asarray(first.get(key, []), dtype=np.float64)
        b = np.asarray(second.get(key, []), dtype=np.float64)
        if a.size != bins or b.size != bins or a.sum() == 0 or b.sum() == 0:
            continue
        table = np.stack([a, b])
        cols = table.sum(axis=0)
        keep = cols > 0
        table, cols = table[:, keep], cols[keep]
        if table.shape[1] < 2:
            continue
        expected = table.sum(axis=1)[:, None] * cols[None, :] / table.sum()
        if (expected < 5).any():
            continue
        chi2 = float(((table - expected) ** 2 / expected).sum())
        p = min(p, _chi2_sf(chi2, table.shape[1] - 1))
    return p


def _chi2_sf(x: float, k: int) -> float:
    """The survival function of the chi-square distribution with ``k`` degrees of freedom
    (the regularized upper incomplete gamma function Q(k/2, x/2), by its series or its
    continued fraction)."""
    a, z = k / 2.0, x / 2.0
    if z <= 0:
        return 1.0
    log_prefix = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:  # the series of P(a, z)
        term = total = 1.0 / a
        n = a
        for _ in range(1000):
            n += 1
            term *= z / n
            total += term
            if term < total * 1e-15:
                break
        return max(0.0, 1.0 - math.exp(log_prefix) * total)
    # Lentz's continued fraction of Q(a, z)
    tiny = 1e-300
    b = z + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(log_prefix) * h
