"""The egress proxy's head parser against h11: whatever the proxy accepts, h11 reads alike.

The proxy decides on the head it parsed and forwards that head (origin-form, its own
Host, hop-by-hop headers dropped); the destination reads it with a parser of its own.
If the two could read one head differently, the destination could act on a request
line or a header nobody decided on. So for every head
:func:`wire.parse_request_head` accepts (drawn by hypothesis from ``tests/wire_heads.py``,
and a table of what real clients send), h11, a strict RFC 9112 parser, must accept it
too and read the same method, target, version and headers, in order (Host,
Content-Length, Transfer-Encoding, Connection and Proxy-Connection among them: what
routes and frames a request). The head as forwarded must read, to h11, as exactly what
was decided: the URI's path, one Host (the URI's authority), ``Connection: close``.

Where the two legitimately differ, the proxy is the stricter, and a table says so
(:data:`STRICTER`), with one exception, documented at :func:`h11_reads`: h11 requires
Host in an HTTP/1.1 request, and the proxy does not, since it never reads Host.
"""

from __future__ import annotations

import re
from datetime import timedelta

import h11
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sandbox_setup.launcher.egress import wire
from tests.wire_heads import HEADS, ODD_HEADS, VALID_HEADS

DIFFERENTIAL = settings(
    max_examples=300,
    deadline=timedelta(seconds=1),
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
STAND_IN_HOST = b"\r\nHost: h11.invalid"


def h11_reads(head: bytes) -> tuple[h11.Request, bool]:
    """What h11, as a server, reads from ``head`` and the blank line after it; and whether
    a stand-in Host was added for it.

    The one documented leniency: a head without Host gets one for h11 (which requires it
    in HTTP/1.1, RFC 9112 3.2). The proxy ignores the client's Host: CONNECT and an
    absolute URI carry the destination, and the forwarded head's Host is the URI's. Older
    clients leave Host out of CONNECT, so the proxy does not insist.
    """
    names = [line.partition(b":")[0].lower() for line in head.split(b"\r\n")[1:]]
    added = b"host" not in names
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=len(head) + 1024)
    connection.receive_data(head + (STAND_IN_HOST if added else b"") + b"\r\n\r\n")
    try:
        event = connection.next_event()
    except h11.ProtocolError as exc:
        raise AssertionError(f"the proxy accepts a head h11 refuses ({exc}): {head!r}") from None
    assert isinstance(event, h11.Request), (event, head)
    return event, added


def text(value: bytes) -> str:
    return value.decode("latin-1")


def agree(head: bytes) -> None:
    """When the proxy accepts ``head``, h11 accepts it and reads the same request; and,
    forwarded, h11 reads exactly what the proxy decided on."""
    try:
        ours = wire.parse_request_head(head)
    except wire.WireError:
        return
    # The proxy's reader ends a head at the first blank line, and its parser drops the
    # last CRLF when given one; h11 is given the head as the proxy read it.
    head = head.removesuffix(b"\r\n")
    theirs, added = h11_reads(head)
    assert ours.method == text(theirs.method), head
    assert ours.target == text(theirs.target), head
    assert ours.version == "HTTP/" + text(theirs.http_version), head
    read = [(text(name), text(value)) for name, value in theirs.headers.raw_items()]
    if added:
        assert read.pop() == ("Host", "h11.invalid")
    # h11 gives Transfer-Encoding's value in lower case (a coding name is
    # case-insensitive); the proxy forwards it as written.
    expected = [
        (name, value.lower() if name.lower() == "transfer-encoding" else value)
        for name, value in ours.headers
    ]
    assert read == expected, head
    if ours.method != "CONNECT":
        forwarded_agrees(ours)


def forwarded_agrees(ours: wire.RequestHead) -> None:
    try:
        target = wire.parse_absolute_uri(ours.target)
    except wire.WireError:
        return
    sent = wire.forwarded_head(ours, target)
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=len(sent) + 1024)
    connection.receive_data(sent)
    try:
        event = connection.next_event()
    except h11.ProtocolError as exc:
        raise AssertionError(f"h11 refuses the forwarded head ({exc}): {sent!r}") from None
    assert isinstance(event, h11.Request), (event, sent)
    assert (text(event.method), text(event.target)) == (ours.method, target.path), sent
    named = [(text(name), text(value)) for name, value in event.headers]
    assert [value for name, value in named if name == "host"] == [target.authority], sent
    assert [value for name, value in named if name == "connection"] == ["close"], sent
    for framing in ("content-length", "transfer-encoding"):
        assert [value for name, value in named if name == framing] == [
            value.lower() for name, value in ours.headers if name.lower() == framing
        ], sent


@DIFFERENTIAL
@given(HEADS)
def test_h11_reads_what_the_proxy_accepts(head: bytes) -> None:
    agree(head)


# What real clients send (as each writes it, header case included) and the odd shapes
# an RFC allows: all accepted, all read alike.
REAL_WORLD = {
    "curl, absolute-form GET": b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n"
    b"User-Agent: curl/8.5.0\r\nAccept: */*\r\nProxy-Connection: Keep-Alive",
    "curl, CONNECT": b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
    b"User-Agent: curl/8.5.0\r\nProxy-Connection: Keep-Alive",
    "undici (Node), CONNECT": b"CONNECT registry.npmjs.org:443 HTTP/1.1\r\n"
    b"host: registry.npmjs.org:443\r\nconnection: keep-alive",
    "Python http.client up to 3.11, CONNECT": b"CONNECT pypi.org:443 HTTP/1.0",
    "Python http.client 3.12, CONNECT": b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443",
    "Go, CONNECT": b"CONNECT proxy.golang.org:443 HTTP/1.1\r\nHost: proxy.golang.org:443\r\n"
    b"User-Agent: Go-http-client/1.1",
    "CONNECT to an IPv6 literal": b"CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443",
    "apt": b"GET http://deb.debian.org/debian/dists/bookworm/InRelease HTTP/1.1\r\n"
    b"Host: deb.debian.org\r\nCache-Control: max-age=0\r\n"
    b"If-Modified-Since: Sat, 10 Feb 2024 09:51:34 GMT\r\n"
    b"User-Agent: Debian APT-HTTP/1.3 (2.6.1)",
    "requests, a query and a port": b"GET http://a.test:8080/simple/?x=1&y=%20 HTTP/1.1\r\n"
    b"Host: a.test:8080\r\nUser-Agent: python-requests/2.31.0\r\n"
    b"Accept-Encoding: gzip, deflate\r\nAccept: */*\r\nConnection: keep-alive",
    "POST with a length": b"POST http://a.test/upload HTTP/1.1\r\nHost: a.test\r\n"
    b"Content-Type: application/json\r\nContent-Length: 12345",
    "chunked, the coding capitalised": b"PUT http://a.test/x HTTP/1.1\r\nHost: a.test\r\n"
    b"Transfer-Encoding: Chunked",
    "odd spacing": b"GET http://a.test/ HTTP/1.1\r\nHost:a.test\r\nX-A:value\r\n"
    b"X-B: \t value \t \r\nX-C:   a  b\tc   \r\nX-Empty:\r\nX-Blank: ",
    "duplicate headers": b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nAccept: a\r\n"
    b"Accept: b\r\nCookie: x=1\r\nCookie: y=2\r\nConnection: keep-alive\r\n"
    b"Proxy-Connection: keep-alive\r\nConnection: X-Drop\r\nX-Drop: 1",
    "every token character in a name": b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n"
    b"X-!#$%&'*+.^_`|~09az: 1",
    "Latin-1 in a value": b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX-Name: caf\xe9\xa0",
    "HTTP/1.0 without Host": b"GET http://a.test/ HTTP/1.0\r\nUser-Agent: old",
    "HTTP/1.1 without Host (see h11_reads)": b"GET http://a.test/ HTTP/1.1\r\nAccept: */*",
    "a 60 KB header": b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nCookie: " + b"c" * 60_000,
    "passed with its last CRLF": b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n",
}


@pytest.mark.parametrize("head", REAL_WORLD.values(), ids=REAL_WORLD.keys())
def test_real_world_heads(head: bytes) -> None:
    wire.parse_request_head(head)  # accepted
    agree(head)


# Heads h11 accepts and the proxy refuses, and why: each is a place where leniency
# would let the destination read another head than the one decided on.
STRICTER = {
    "a method in lower case (methods are case-sensitive; not CONNECT)": b"connect a.test:443 "
    b"HTTP/1.1\r\nHost: a.test:443",
    "a method with a hyphen": b"M-SEARCH http://a.test/ HTTP/1.1\r\nHost: a.test",
    "an HTTP version after 1.1": b"GET http://a.test/ HTTP/2.0\r\nHost: a.test",
    "a folded line (RFC 9112 5.2: a proxy must refuse or unfold)": b"GET http://a.test/ "
    b"HTTP/1.1\r\nHost: a.test\r\nX-A: 1\r\n folded",
    "a control byte in a value": b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX-A: a\x01b",
    "DEL in a value": b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX-A: a\x7f",
    "a list of one Content-Length (h11 merges it)": b"POST http://a.test/ HTTP/1.1\r\n"
    b"Host: a.test\r\nContent-Length: 5, 5",
    "Content-Length twice (h11 merges equal ones)": b"POST http://a.test/ HTTP/1.1\r\n"
    b"Host: a.test\r\nContent-Length: 5\r\nContent-Length: 5",
    "a 20-digit Content-Length": b"POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\n"
    b"Content-Length: " + b"9" * 20,
    "Content-Length and Transfer-Encoding (RFC 9112 6.1: a smuggling sign)": b"POST "
    b"http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n"
    b"Transfer-Encoding: chunked",
}


@pytest.mark.parametrize("head", STRICTER.values(), ids=STRICTER.keys())
def test_where_they_differ_the_proxy_is_stricter(head: bytes) -> None:
    h11_reads(head)  # h11 accepts
    with pytest.raises(wire.WireError):
        wire.parse_request_head(head)


def test_a_head_without_host_is_the_one_lenience() -> None:
    head = REAL_WORLD["HTTP/1.1 without Host (see h11_reads)"] + b"\r\n\r\n"
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(head)
    with pytest.raises(h11.RemoteProtocolError, match="Host"):
        connection.next_event()


# --- the differential can fail --------------------------------------------------------


def search(strategy: st.SearchStrategy[bytes]) -> None:
    """:func:`agree` over ``strategy`` under the same settings, stopping at the first
    failure, unshrunk (finding one is the point)."""
    settings(DIFFERENTIAL, max_examples=1000, phases=[Phase.generate])(given(strategy)(agree))()


def test_a_framing_check_left_out_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # No framing checks: Content-Length "5, 5", two of them, gzip... pass; h11 refuses
    # some and merges others.
    monkeypatch.setattr(wire, "check_framing", lambda headers: None)
    with pytest.raises(AssertionError):
        search(ODD_HEADS)


def test_a_line_break_let_through_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # A value may hold CR and LF: h11 (as many servers) reads another header there.
    monkeypatch.setattr(wire, "CONTROL", re.compile(r"\x00"))
    with pytest.raises(AssertionError):
        search(ODD_HEADS)


def test_a_method_read_case_blind_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # The old parser upper-cased the method: "connect" became CONNECT.
    real = wire.parse_request_head

    def case_blind(head: bytes) -> wire.RequestHead:
        method, space, rest = head.partition(b" ")
        return real(method.upper() + space + rest)

    monkeypatch.setattr(wire, "parse_request_head", case_blind)
    with pytest.raises(AssertionError):
        search(ODD_HEADS)


def test_the_valid_heads_are_mostly_accepted() -> None:
    """The differential means something only if many drawn heads are accepted."""
    accepted = []

    @settings(DIFFERENTIAL, max_examples=200, phases=[Phase.generate])
    @given(VALID_HEADS)
    def count(head: bytes) -> None:
        try:
            wire.parse_request_head(head)
            accepted.append(True)
        except wire.WireError:
            accepted.append(False)

    count()
    assert sum(accepted) > 0.8 * len(accepted)
