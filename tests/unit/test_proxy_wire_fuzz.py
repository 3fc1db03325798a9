"""Fuzzing the egress proxy's wire parsers: any input gives a result or a WireError, quickly.

Every parser in :mod:`sandbox_setup.launcher.egress.wire` documents one error,
:class:`WireError` (its ``status`` is the HTTP status or the SOCKS5 reply code the
proxy sends back). The server catches that and nothing else, so any other exception
is a client thread dying with a traceback and no answer. Each example runs under
hypothesis' ``deadline``, inputs up to 300 KB included, so a parser that is slow on
some input (a quadratic split, a backtracking pattern) fails here too. A head it
accepts must also be forwardable: :func:`wire.forwarded_head` must not raise, and what
it writes must be one request, with one Host (the URI's), that parses back the same.

The last tests run the same properties against mutated parsers and show that each
kind of failure is found.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import DeadlineExceeded

from sandbox_setup.launcher.egress import wire
from tests.wire_heads import (
    ANY_BYTES,
    HEADS,
    ODD_HEADS,
    SOCKS_GREETINGS,
    SOCKS_REQUESTS,
    big_heads,
)

# 1 s for calls that take some milliseconds, up to 200 ms for the largest inputs on two
# loaded cores; a parser gone quadratic on them takes minutes.
FUZZ = settings(
    max_examples=300,
    deadline=timedelta(seconds=1),
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Each parser, looked up when called (so the mutation tests can replace it), over bytes.
PARSERS: dict[str, Callable[[bytes], object]] = {
    "parse_request_head": lambda data: wire.parse_request_head(data),
    "split_authority": lambda data: wire.split_authority(data.decode("latin-1")),
    "split_authority with a default": lambda data: wire.split_authority(data.decode("latin-1"), 80),
    "parse_absolute_uri": lambda data: wire.parse_absolute_uri(data.decode("latin-1")),
    "socks_choose_method": lambda data: wire.socks_choose_method(data),
    "socks_address_length": lambda data: wire.socks_address_length(data),
    "parse_socks_request": lambda data: wire.parse_socks_request(data),
}


def outcome(parse: Callable[[bytes], object], data: bytes) -> object:
    """What ``parse`` made of ``data``: its result, or the WireError it raised. Any other
    exception propagates and fails the test."""
    try:
        return parse(data)
    except wire.WireError as exc:
        assert isinstance(exc.status, int) and 0 <= exc.status < 600
        return exc


def every_parser_is_total(data: bytes) -> None:
    for parse in PARSERS.values():
        outcome(parse, data)


def accepted_heads_are_forwardable(data: bytes) -> None:
    """A head the proxy accepts either names a destination (or is refused by a WireError)
    and, forwarded, is one clean request for exactly what was decided."""
    head = outcome(wire.parse_request_head, data)
    if isinstance(head, wire.WireError):
        return
    assert isinstance(head, wire.RequestHead)
    if head.method == "CONNECT":
        outcome(PARSERS["split_authority"], head.target.encode("latin-1"))
        return
    target = outcome(PARSERS["parse_absolute_uri"], head.target.encode("latin-1"))
    if isinstance(target, wire.WireError):
        return
    assert isinstance(target, wire.ForwardTarget)
    sent = wire.forwarded_head(head, target)
    assert sent.endswith(b"\r\n\r\n") and sent.count(b"\r\n\r\n") == 1, sent
    lines = sent[:-4].split(b"\r\n")
    assert not [line for line in lines if b"\n" in line or b"\r" in line], sent
    again = wire.parse_request_head(sent[:-4])
    assert (again.method, again.target, again.version) == (head.method, target.path, head.version)
    named = [(name.lower(), value) for name, value in again.headers]
    assert [value for name, value in named if name == "host"] == [target.authority]
    assert [value for name, value in named if name == "connection"] == ["close"]
    assert not {name for name, _ in named} & (wire.HOP_BY_HOP - {"connection"})


@FUZZ
@given(ANY_BYTES)
def test_any_bytes(data: bytes) -> None:
    every_parser_is_total(data)
    accepted_heads_are_forwardable(data)


@FUZZ
@given(HEADS)
def test_near_valid_heads(data: bytes) -> None:
    every_parser_is_total(data)
    accepted_heads_are_forwardable(data)


@FUZZ
@given(st.one_of(SOCKS_GREETINGS, SOCKS_REQUESTS))
def test_near_valid_socks_messages(data: bytes) -> None:
    every_parser_is_total(data)
    if len(data) >= 4:
        outcome(wire.socks_address_length, data[:4])
        outcome(wire.socks_address_length, data[:5])


@settings(FUZZ, max_examples=40)
@given(big_heads())
def test_large_inputs_in_bounded_time(data: bytes) -> None:
    every_parser_is_total(data)
    accepted_heads_are_forwardable(data)


# --- the properties can fail ---------------------------------------------------------


def search(prop: Callable[[bytes], None], strategy: st.SearchStrategy[bytes]) -> None:
    """``prop`` over ``strategy`` under the same settings, stopping at the first failure,
    unshrunk (finding one is the point)."""
    settings(FUZZ, max_examples=1000, phases=[Phase.generate])(given(strategy)(prop))()


def test_a_foreign_exception_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # socks_address_length as it was: a header under 4 bytes raised IndexError.
    guarded = wire.socks_address_length

    def unguarded(header: bytes) -> int:
        _ = header[3]
        return guarded(header)

    monkeypatch.setattr(wire, "socks_address_length", unguarded)
    with pytest.raises(IndexError):
        search(every_parser_is_total, ANY_BYTES)


def test_a_line_break_let_through_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # A value check that lets CR and LF through: the forwarded head gains a line. (The
    # odd third of HEADS, where such values are, so that the search is short.)
    monkeypatch.setattr(wire, "CONTROL", re.compile(r"\x00"))
    with pytest.raises(AssertionError):
        search(accepted_heads_are_forwardable, ODD_HEADS)


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
def test_a_slow_parser_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    real = wire.parse_request_head

    def slow(head: bytes) -> wire.RequestHead:
        if len(head) > 100_000:
            time.sleep(1.5)
        return real(head)

    monkeypatch.setattr(wire, "parse_request_head", slow)
    with pytest.raises(DeadlineExceeded):
        search(every_parser_is_total, big_heads())
