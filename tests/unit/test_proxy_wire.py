"""The egress proxy's parsers: request heads, authorities, SOCKS5, /proc/net readers."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sandbox_setup.launcher.egress import wire
from sandbox_setup.launcher.egress.proxy import parse_fib_trie, parse_if_inet6
from sandbox_setup.policy.network import Decision
from tests.tools import REPO


@pytest.mark.parametrize(
    ("authority", "default", "expected"),
    [
        ("example.com:443", None, ("example.com", 443)),
        ("[2001:db8::1]:443", None, ("2001:db8::1", 443)),
        ("example.com", 80, ("example.com", 80)),
        ("[2001:db8::1]", 80, ("2001:db8::1", 80)),
        ("203.0.113.7:8080", None, ("203.0.113.7", 8080)),
    ],
)
def test_split_authority(authority: str, default: int | None, expected: tuple[str, int]) -> None:
    assert wire.split_authority(authority, default) == expected


@pytest.mark.parametrize(
    "authority",
    ["example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:x",
     "2001:db8::1:443", "[2001:db8::1", "[nope]:443", ":443", "user@example.com:443",
     "[2001:db8::1]443"],
)  # fmt: skip
def test_split_authority_refuses(authority: str) -> None:
    with pytest.raises(wire.WireError):
        wire.split_authority(authority)


def test_parse_request_head() -> None:
    head = wire.parse_request_head(b"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nX-Y:  z \r\n")
    assert head == wire.RequestHead(
        "GET", "http://a.test/x", "HTTP/1.1", (("Host", "a.test"), ("X-Y", "z"))
    )


@pytest.mark.parametrize(
    "head",
    [b"GET /\r\n", b"GET / HTTP/2\r\n", b"GE T / HTTP/1.1", b"GET / HTTP/1.1\r\nbad header",
     b"GET / HTTP/1.1\r\n: empty-name", b"GET / HTTP/1.1\r\nSpace Name: x", b"\x16\x03\x01"],
)  # fmt: skip
def test_parse_request_head_refuses(head: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.parse_request_head(head)


# Each of these was accepted and forwarded as written: a bare LF (or CR) ends a line at a
# destination that ends lines with LF alone, so it could add a request line or a Host of
# the client's choosing ahead of the proxy's own. A Latin-1 letter in the method was
# upper-cased out of Latin-1 ("\xff" -> "\u0178"), and forwarded_head then raised
# UnicodeEncodeError, which no caller catches.
@pytest.mark.parametrize(
    "head",
    [b"GET http://a.test/\nHost:evil.test HTTP/1.1\r\nHost: a.test",  # LF in the target
     b"GET http://a.test/ HTTP/1.1\nHost:evil.test\r\nX: 1",  # LF after the version
     b"GET http://a.test/ HTTP/1.1\r\nX\nHost: evil.test",  # LF in a header name
     b"GET http://a.test/ HTTP/1.1\r\nX: a\nHost: evil.test",  # LF in a value
     b"GET http://a.test/ HTTP/1.1\r\nX: a\rHost: evil.test",  # CR in a value
     b"GET http://a.test/ HTTP/1.1\r\nX: a\x00b",  # NUL in a value
     b"GET http://a.test/\x7f HTTP/1.1",  # DEL in the target
     b"GET http://a.test/\xe9 HTTP/1.1",  # not ASCII in the target
     b"\xff http://a.test/ HTTP/1.1",  # a Latin-1 letter as the method
     b"get http://a.test/ HTTP/1.1",  # methods are case-sensitive
     b"connect a.test:443 HTTP/1.1",
     b"GET http://a.test/ HTTP/1.2", b"GET http://a.test/ HTTP/1.1x",
     b"GET http://a.test/ HTTP/1.1\r\nX\xe9: 1",  # not a token
     b"GET http://a.test/ HTTP/1.1\r\nX: 1\r\n folded",  # obs-fold
     b"GET http://a.test/ HTTP/1.1\r\n\r\nX: 1",  # an empty line inside
     b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test"],
)  # fmt: skip
def test_parse_request_head_refuses_what_a_destination_could_read_otherwise(head: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.parse_request_head(head)


@pytest.mark.parametrize(
    ("headers", "status"),
    [(b"Content-Length: x", 400), (b"Content-Length: 5, 5", 400), (b"Content-Length: +5", 400),
     (b"Content-Length: 5\r\nContent-Length: 5", 400), (b"Content-Length: " + b"9" * 19, 400),
     (b"Transfer-Encoding: gzip", 501), (b"Transfer-Encoding: gzip, chunked", 501),
     (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", 501),
     (b"Content-Length: 5\r\nTransfer-Encoding: chunked", 400)],
)  # fmt: skip
def test_a_body_length_read_two_ways_is_refused(headers: bytes, status: int) -> None:
    with pytest.raises(wire.WireError) as refused:
        wire.parse_request_head(b"POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\n" + headers)
    assert refused.value.status == status


def test_values_lose_only_spaces_and_tabs() -> None:
    head = wire.parse_request_head(
        b"POST http://a.test/ HTTP/1.0\r\nTransfer-Encoding: \tChunked \r\n"
        b"X-A:\xa0b\tc\xa0\r\nX-B:\r\n"
    )
    assert head.headers == (
        ("Transfer-Encoding", "Chunked"), ("X-A", "\xa0b\tc\xa0"), ("X-B", "")
    )  # fmt: skip


def test_a_port_is_ascii_digits() -> None:
    # "²" passed isdigit() and int() raised ValueError; so did 5000 digits (int's limit).
    for authority in ("a.test:\xb2", "a.test:" + "9" * 5000, "a.test:٤٤٣"):
        with pytest.raises(wire.WireError):
            wire.split_authority(authority)


@pytest.mark.parametrize(
    ("uri", "host", "port", "authority", "path"),
    [
        ("http://a.test/x?y=1", "a.test", 80, "a.test", "/x?y=1"),
        ("http://a.test", "a.test", 80, "a.test", "/"),
        ("http://a.test?q", "a.test", 80, "a.test", "/?q"),
        ("http://a.test:8080/p#frag", "a.test", 8080, "a.test:8080", "/p"),
        ("HTTP://[2001:db8::1]:81/", "2001:db8::1", 81, "[2001:db8::1]:81", "/"),
    ],
)
def test_parse_absolute_uri(uri: str, host: str, port: int, authority: str, path: str) -> None:
    assert wire.parse_absolute_uri(uri) == wire.ForwardTarget(host, port, authority, path)


@pytest.mark.parametrize(
    ("uri", "why"),
    [("/index.html", "egress proxy"), ("https://a.test/", "CONNECT"),
     ("ftp://a.test/", "CONNECT"), ("http://user:pw@a.test/", "user info"),
     ("http:///x", "malformed")],
)  # fmt: skip
def test_parse_absolute_uri_refuses(uri: str, why: str) -> None:
    with pytest.raises(wire.WireError, match=why):
        wire.parse_absolute_uri(uri)


def test_forwarded_head_is_origin_form_with_the_uri_host_and_no_hop_headers() -> None:
    head = wire.parse_request_head(
        b"POST http://a.test:8080/p?q HTTP/1.1\r\nHost: other.internal\r\n"
        b"Proxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\n"
        b"Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: 5\r\n"
        b"Content-Length: 3\r\nUser-Agent: t\r\n"
    )
    sent = wire.forwarded_head(head, wire.parse_absolute_uri(head.target))
    assert sent == (
        b"POST /p?q HTTP/1.1\r\nHost: a.test:8080\r\nContent-Length: 3\r\n"
        b"User-Agent: t\r\nConnection: close\r\n\r\n"
    )


def test_refusal_response_is_a_403_with_the_marker_and_one_line() -> None:
    message = "sandbox-launch egress proxy: refused x:443: resolves to 127.0.0.1 (loopback)"
    answer = wire.refusal_response(Decision(False, "loopback", message))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"\r\nX-Sandbox-Launch-Proxy: refused" in head
    assert f"Content-Length: {len(message) + 1}".encode() in head
    assert body == message.encode() + b"\n"


def test_unresolved_is_a_502_not_a_policy_refusal() -> None:
    answer = wire.refusal_response(Decision(False, "unresolved", "does not resolve"))
    assert answer.startswith(b"HTTP/1.1 502 ")


@pytest.mark.parametrize(
    ("greeting", "method"),
    [(b"\x05\x01\x00", 0x00), (b"\x05\x02\x02\x00", 0x00), (b"\x05\x01\x02", 0xFF)],
)
def test_socks_choose_method(greeting: bytes, method: int) -> None:
    assert wire.socks_choose_method(greeting) == method


@pytest.mark.parametrize("greeting", [b"\x04\x01\x00", b"\x05\x02\x00", b"\x05"])
def test_socks_greeting_refused(greeting: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.socks_choose_method(greeting)


@pytest.mark.parametrize(
    ("request_bytes", "expected"),
    [
        (b"\x05\x01\x00\x01\xcb\x00\x71\x0a\x01\xbb", (1, "203.0.113.10", 443)),
        (b"\x05\x01\x00\x03\x06a.test\x00\x50", (1, "a.test", 80)),
        (b"\x05\x01\x00\x04" + bytes(15) + b"\x01\x00\x16", (1, "::1", 22)),
        (b"\x05\x02\x00\x01\x01\x02\x03\x04\x00\x50", (2, "1.2.3.4", 80)),
    ],
)
def test_parse_socks_request(request_bytes: bytes, expected: tuple[int, str, int]) -> None:
    assert wire.parse_socks_request(request_bytes) == expected


@pytest.mark.parametrize(
    "request_bytes",
    [b"\x04\x01\x00\x01\x01\x02\x03\x04\x00\x50", b"\x05\x01\x01\x01\x01\x02\x03\x04\x00\x50",
     b"\x05\x01\x00\x03\x00\x00\x50", b"\x05\x01\x00\x03\x02\xc3\xa4\x00\x50",
     b"\x05\x01\x00\x09\x00\x50", b"\x05\x01\x00\x01\x01\x02\x00\x50",
     b"\x05\x01\x00\x03\x03a\x00b\x00\x50", b"\x05\x01\x00\x03\x03a b\x00\x50"],
)  # fmt: skip
def test_parse_socks_request_refuses(request_bytes: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.parse_socks_request(request_bytes)


def test_a_short_socks_header_is_refused() -> None:
    with pytest.raises(wire.WireError):
        wire.socks_address_length(b"\x05\x01\x00")


def test_socks_reply_layout() -> None:
    assert wire.socks_reply(wire.SOCKS_NOT_ALLOWED) == b"\x05\x02\x00\x01\0\0\0\0\0\0"


FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
Local:
           |-- 192.0.2.2
              /32 host LOCAL
"""
IF_INET6 = """fe8000000000000000fc00fffe000001 04 40 20 80     eth0
00000000000000000000000000000001 01 80 10 80       lo
fd000000000000000000000000000002 04 40 00 82     eth0
"""


def test_host_addresses_from_proc_net() -> None:
    assert parse_fib_trie(FIB_TRIE) == {"127.0.0.1", "192.0.2.2"}
    assert parse_if_inet6(IF_INET6) == {"fe80::fc:ff:fe00:1", "::1", "fd00::2"}


def test_the_launcher_side_of_the_proxy_imports_no_asyncio() -> None:
    # sandbox-launch imports sandbox_setup.launcher.egress.proxy on every start; the
    # server (and asyncio, ~50 ms, should it ever come back) is for the proxy process only.
    code = (
        "import sys, sandbox_setup.launcher.egress.proxy; "
        "bad = [m for m in ('asyncio', 'sandbox_setup.launcher.egress.server', "
        "'tomlkit', 'textual') if m in sys.modules]; print(bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert result.stdout.strip() == "[]"
