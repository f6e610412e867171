"""The typed message checks (mpc/runtime/expect.py) and their use by ``Party.recv``."""

from __future__ import annotations

import asyncio
import doctest
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpc.errors import ProtocolError
from mpc.runtime import expect
from mpc.runtime.expect import (
    array,
    boolean,
    check,
    either,
    hex_text,
    integer,
    list_of,
    mapping,
    nothing_or,
    one_of,
    raw,
    real,
    record,
    text,
)
from mpc.runtime.local import run_in_memory
from mpc.runtime.party import Party
from mpc.runtime.view import Kind, Receipt

# every msgpack-decodable value the runtime can hand a protocol, nested
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(), st.binary()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@given(_values, st.integers(-5, 5), st.integers(0, 10))
def test_integer_accepts_exactly_the_ints_in_range(x: Any, lo: int, span: int) -> None:
    fits = _is_int(x) and lo <= x <= lo + span
    assert (integer(lo, lo + span).problem(x) is None) == fits


@given(_values)
def test_the_scalar_checks_keep_bool_int_float_and_str_apart(x: Any) -> None:
    assert (boolean().problem(x) is None) == isinstance(x, bool)
    assert (real().problem(x) is None) == isinstance(x, float)
    assert (text().problem(x) is None) == isinstance(x, str)
    assert (integer().problem(x) is None) == _is_int(x)
    assert (nothing_or(integer()).problem(x) is None) == (x is None or _is_int(x))


@given(_values, st.integers(0, 4))
def test_list_of_checks_the_length_and_every_item(x: Any, n: int) -> None:
    fits = isinstance(x, list) and len(x) == n and all(_is_int(v) and v >= 1 for v in x)
    assert (list_of(integer(lo=1), n).problem(x) is None) == fits


@given(_values)
def test_record_needs_its_keys_and_refuses_others(x: Any) -> None:
    shape = record({"seed": st_bytes(), "n": integer(lo=0)}, optional=["n"])
    fits = (
        isinstance(x, dict)
        and set(x) <= {"seed", "n"}
        and isinstance(x.get("seed"), bytes)
        and ("n" not in x or (_is_int(x["n"]) and x["n"] >= 0))
    )
    assert (shape.problem(x) is None) == fits


def st_bytes() -> expect.Expect:
    """Bytes, through ``either`` of the type check the module builds for other kinds."""
    return expect._Type((bytes,), "bytes")  # the module's own building block


@given(_values)
def test_mapping_one_of_and_either(x: Any) -> None:
    m = mapping(text(), nothing_or(real()))
    fits = isinstance(x, dict) and all(
        isinstance(k, str) and (v is None or isinstance(v, float)) for k, v in x.items()
    )
    assert (m.problem(x) is None) == fits
    assert (one_of(1, "a").problem(x) is None) == ((_is_int(x) and x == 1) or x == "a")
    assert (either(boolean(), text()).problem(x) is None) == isinstance(x, bool | str)


def test_arrays_are_checked_by_kind_dimensions_and_width() -> None:
    ints = array("iu", ndim=2, width=3)
    assert ints.problem(np.zeros((4, 3), dtype=np.int64)) is None
    assert ints.problem(np.zeros((4, 2), dtype=np.int64)) is not None
    assert ints.problem(np.zeros((4, 3), dtype=np.float64)) is not None
    assert ints.problem(np.zeros(3, dtype=np.int64)) is not None
    assert ints.problem([[1, 2, 3]]) is not None


def test_the_error_names_what_was_expected_and_the_offending_item() -> None:
    with pytest.raises(ProtocolError) as err:
        check(list_of(integer(lo=1), 3), [2, True, 2], "fan-outs")
    assert str(err.value) == (
        "fan-outs must be a list of 3 items, each an integer >= 1: item 1 is True"
    )
    with pytest.raises(ProtocolError, match=r"'seed': got 'x'"):
        check(record({"seed": st_bytes()}), {"seed": "x"}, "dealing")
    with pytest.raises(ProtocolError, match="unknown key 'extra'"):
        check(record({"a": integer()}), {"a": 1, "extra": 2}, "a request")


def test_the_module_examples_run() -> None:
    assert doctest.testmod(expect).failed == 0


FAN_OUTS = Receipt(
    "test/fan-outs", Kind.PUBLIC, "the winners' fan-outs", expect=list_of(integer(lo=1))
)


def _send_and_receive(body: Any, **kw: Any) -> Any:
    """site2 sends ``body`` under ``t/1``; returns what site1's receive gives."""

    async def site1(party: Party) -> Any:
        return await party.recv("site2", "t/1", FAN_OUTS, **kw)

    async def site2(party: Party) -> None:
        await party.send("site1", "t/1", body)

    results, _ = asyncio.run(
        run_in_memory(["site1", "site2"], {"site1": site1, "site2": site2}, timeout=5)
    )
    return results["site1"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ([2, 3], None),
        ([2, 0], "site1: site2 sent, at t/1, the winners' fan-outs (test/fan-outs), which must "
                 "be a list of items, each an integer >= 1: item 1 is 0"),
        ("3", "which must be a list of items, each an integer >= 1: got '3'"),
    ],
)  # fmt: skip
def test_recv_checks_the_receipts_form_and_names_sender_step_and_message(
    body: Any, error: str | None
) -> None:
    """A receive whose receipt declares a form refuses a body that does not fit it, naming
    the sender, the step and the message, before the protocol sees the body."""
    if error is None:
        assert _send_and_receive(body) == body
    else:
        with pytest.raises(ProtocolError) as err:
            _send_and_receive(body)
        assert error in str(err.value)


def test_recv_takes_a_form_known_only_at_run_time() -> None:
    """``expect=`` at the receive overrides the receipt's form: a length known at run time."""
    assert _send_and_receive([2, 3], expect=list_of(integer(lo=1), 2)) == [2, 3]
    with pytest.raises(ProtocolError, match="got a list of 2"):
        _send_and_receive([2, 3], expect=list_of(integer(lo=1), 3))


def test_raw_bytes_and_hex_text() -> None:
    assert raw(32).problem(bytes(32)) is None
    assert raw(32).problem(bytes(31)) == "got 31 bytes"
    assert raw().problem("text") is not None
    assert hex_text().problem("00ff") is None
    for wrong in ("", "00FF", "0g", 7, "a" * 129):
        assert hex_text().problem(wrong) is not None, wrong
