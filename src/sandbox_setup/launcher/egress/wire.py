"""What the egress proxy reads and writes on the wire: HTTP heads and SOCKS5, as pure functions.

:mod:`sandbox_setup.launcher.egress.proxy` does the I/O; everything here takes bytes and returns
values, so each malformed input has a table test. Only what a proxy client sends is
parsed: one request head (the proxy never reads a response), a SOCKS5 greeting and
request. Every parser raises :class:`WireError` and nothing else, on any input
(``tests/unit/test_proxy_wire_fuzz.py``), and a head it accepts is read alike by h11
(``tests/unit/test_proxy_wire_h11.py``).
"""

from __future__ import annotations

import ipaddress
import re
import struct
from dataclasses import dataclass

from sandbox_setup.policy.network import Decision

MAX_HEAD = 64 * 1024  # a request head larger than this is refused (431)
PROXY_HEADER = "X-Sandbox-Launch-Proxy"  # marks every answer the proxy itself writes
# Headers for this hop only (RFC 9110 7.6.1): never forwarded to the destination.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization",
     "proxy-authenticate", "te", "trailer", "upgrade"}
)  # fmt: skip

SOCKS_VERSION = 5
SOCKS_NO_AUTH = 0x00
SOCKS_NO_ACCEPTABLE = 0xFF
SOCKS_CONNECT = 0x01
ATYP_IPV4, ATYP_DOMAIN, ATYP_IPV6 = 0x01, 0x03, 0x04
# SOCKS5 replies (RFC 1928 6).
SOCKS_OK = 0x00
SOCKS_FAILURE = 0x01
SOCKS_NOT_ALLOWED = 0x02  # "connection not allowed by ruleset"
SOCKS_NET_UNREACHABLE = 0x03
SOCKS_HOST_UNREACHABLE = 0x04
SOCKS_REFUSED = 0x05
SOCKS_CMD_UNSUPPORTED = 0x07
SOCKS_ATYP_UNSUPPORTED = 0x08

# What a request head may hold (RFC 9110 5.6.2, 9112 3): the proxy forwards a head as
# written, so anything a destination could read as a line break, or as another header,
# is refused here rather than passed on.
METHOD = re.compile(r"[A-Z]+")  # what clients send; methods are case-sensitive
TARGET = re.compile(r"[\x21-\x7e]+")  # a URI or an authority: visible ASCII, no space
VERSION = re.compile(r"HTTP/1\.[01]")
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header name
# In a header value only HTAB of the controls (RFC 9110 5.5): a bare LF or CR would end
# the line at a destination that ends lines with LF alone.
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")  # under an exabyte: no parser's integer overflows
# Not str.isdigit(): it passes "²", which int() refuses, and 5000 digits, past int()'s limit.
PORT = re.compile(r"[0-9]{1,5}")


class WireError(ValueError):
    """The client sent something this proxy does not accept; ``status`` is the HTTP answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class RequestHead:
    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]


def parse_request_head(head: bytes) -> RequestHead:
    """The request line and headers of ``head`` (up to and without the blank line).

    Stricter than a server must be wherever leniency could let the destination read
    another head than the one decided on: a method of upper-case letters (methods are
    case-sensitive, so ``connect`` is not ``CONNECT``), a visible-ASCII target, HTTP/1.0
    or 1.1, token header names, no control but HTAB in values, no line folding, at most
    one Host, and a body framing a destination cannot read two ways
    (:func:`check_framing`). Values lose only the spaces and tabs around them.
    """
    lines = head.decode("latin-1").split("\r\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # passed with the last header's CRLF
    parts = lines[0].split(" ")
    if (
        len(parts) != 3
        or not METHOD.fullmatch(parts[0])
        or not TARGET.fullmatch(parts[1])
        or not VERSION.fullmatch(parts[2])
    ):
        raise WireError(f"not an HTTP/1.x request line: {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        value = value.strip(" \t")
        if not sep or not TOKEN.fullmatch(name) or CONTROL.search(value):
            raise WireError(f"malformed header line: {line[:80]!r}")
        headers.append((name, value))
    check_framing(headers)
    return RequestHead(parts[0], parts[1], parts[2], tuple(headers))


def check_framing(headers: list[tuple[str, str]]) -> None:
    """Refuse what RFC 9112 calls a request's error or a smuggling sign, as a proxy may.

    The head is forwarded as written, so a body's length must be one the destination
    cannot read two ways: one Content-Length of digits, or one ``Transfer-Encoding:
    chunked``, never both (6.1: "ought to be handled as an error"), no other coding
    (6.1: 501). More than one Host is a 400 (3.2). The proxy itself never frames a body.
    """
    named: dict[str, list[str]] = {"host": [], "content-length": [], "transfer-encoding": []}
    for name, value in headers:
        named.get(name.lower(), []).append(value)
    if len(named["host"]) > 1:
        raise WireError("more than one Host header")
    lengths, codings = named["content-length"], named["transfer-encoding"]
    if len(lengths) > 1 or (lengths and not CONTENT_LENGTH.fullmatch(lengths[0])):
        raise WireError(f"malformed Content-Length: {', '.join(lengths)[:80]!r}")
    if len(codings) > 1 or (codings and codings[0].lower() != "chunked"):
        raise WireError("only Transfer-Encoding: chunked is forwarded", status=501)
    if lengths and codings:
        raise WireError("both Content-Length and Transfer-Encoding")


def split_authority(authority: str, default_port: int | None = None) -> tuple[str, int]:
    """``host:port``, ``[v6]:port`` (or a bare host with ``default_port``) -> (host, port)."""
    if authority.startswith("["):
        close = authority.find("]")
        if close == -1:
            raise WireError(f"malformed authority {authority!r}")
        host, rest = authority[1:close], authority[close + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise WireError(f"malformed IPv6 address in {authority!r}") from None
    elif authority.count(":") > 1:
        raise WireError(f"an IPv6 address must be in brackets: {authority!r}")
    else:
        host, sep, port_text = authority.partition(":")
        rest = sep + port_text
    if "@" in host or not host:
        raise WireError(f"malformed authority {authority!r}")
    if not rest:
        if default_port is None:
            raise WireError(f"no port in {authority!r}")
        return host, default_port
    port_text = rest[1:] if rest.startswith(":") else ""
    if not PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise WireError(f"bad port in {authority!r}")
    return host, int(port_text)


@dataclass(frozen=True, slots=True)
class ForwardTarget:
    host: str
    port: int
    authority: str  # for the Host header, as the URI spelled it
    path: str  # origin-form: "/x?y"


def parse_absolute_uri(target: str) -> ForwardTarget:
    """``http://host[:port]/path`` -> the pieces a forwarded request needs."""
    scheme, sep, rest = target.partition("://")
    if not sep:
        raise WireError(
            "this is an egress proxy: send CONNECT host:port, or a request with an "
            "absolute http:// URI"
        )
    if scheme.lower() != "http":
        raise WireError(f"only http:// is forwarded; use CONNECT for {scheme}://")
    end = min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))
    authority, path = rest[:end], rest[end:].partition("#")[0]
    if "@" in authority:
        raise WireError("user info in the URI is not forwarded")
    host, port = split_authority(authority, default_port=80)
    if not path.startswith("/"):
        path = "/" + path
    return ForwardTarget(host, port, authority, path)


def forwarded_head(head: RequestHead, target: ForwardTarget) -> bytes:
    """The head sent to the destination: origin-form, Host from the URI, ``Connection: close``.

    Host is the URI's authority (RFC 9112 3.2.2), whatever the client wrote: the
    decision was made for that name, so the destination must hear the same one.
    ``Connection: close`` keeps one request per destination connection, which is
    all a forwarding proxy without keep-alive bookkeeping can honour.
    """
    named = {
        token.strip().lower()
        for name, value in head.headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    lines = [f"{head.method} {target.path} {head.version}", f"Host: {target.authority}"]
    for name, value in head.headers:
        lower = name.lower()
        if lower in HOP_BY_HOP or lower in named or lower == "host":
            continue
        lines.append(f"{name}: {value}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def proxy_response(status: int, message: str, verdict: str) -> bytes:
    """A complete answer from the proxy itself: one line of text, then the connection closes."""
    body = (message + "\n").encode("utf-8", "replace")
    return (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
        f"{PROXY_HEADER}: {verdict}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii") + body


def refusal_response(decision: Decision) -> bytes:
    """403 naming the rule; a name that does not resolve is a 502 (not a policy refusal)."""
    if decision.rule == "unresolved":
        return proxy_response(502, decision.message, "unresolved")
    return proxy_response(403, decision.message, "refused")


# The answer to an accepted CONNECT, short: curl (and git, through libcurl) reads it one
# byte per recv(2), so as not to read past it into the tunnel; "OK" instead of
# "Connection Established" is 20 system calls fewer for each tunnel it opens.
CONNECT_ESTABLISHED = b"HTTP/1.1 200 OK\r\n\r\n"


def socks_reply(code: int) -> bytes:
    """A SOCKS5 reply; the bound address is always 0.0.0.0:0 (clients do not use it)."""
    return bytes((SOCKS_VERSION, code, 0, ATYP_IPV4)) + b"\0\0\0\0" + b"\0\0"


def socks_choose_method(greeting: bytes) -> int:
    """The method for a ``VER NMETHODS METHODS...`` greeting: no-auth, or none acceptable."""
    if len(greeting) < 2 or greeting[0] != SOCKS_VERSION or len(greeting) != 2 + greeting[1]:
        raise WireError("malformed SOCKS5 greeting")
    return SOCKS_NO_AUTH if SOCKS_NO_AUTH in greeting[2:] else SOCKS_NO_ACCEPTABLE


def socks_address_length(header: bytes) -> int:
    """How many bytes follow the 4-byte request header (``VER CMD RSV ATYP``), plus the 1-byte
    domain length when ATYP is a domain (pass ``header`` with that byte then)."""
    if len(header) < 4:
        raise WireError("short SOCKS5 request", status=SOCKS_FAILURE)
    atyp = header[3]
    if atyp == ATYP_IPV4:
        return 4 + 2
    if atyp == ATYP_IPV6:
        return 16 + 2
    if atyp == ATYP_DOMAIN:
        if len(header) < 5:
            return 1  # read the length byte first
        return header[4] + 2
    raise WireError("unsupported SOCKS5 address type", status=SOCKS_ATYP_UNSUPPORTED)


def parse_socks_request(request: bytes) -> tuple[int, str, int]:
    """``VER CMD RSV ATYP ADDR PORT`` -> (command, host, port). Domains must be visible
    ASCII, as an HTTP target is."""
    if len(request) < 4 or request[0] != SOCKS_VERSION or request[2] != 0:
        raise WireError("malformed SOCKS5 request", status=SOCKS_FAILURE)
    command, atyp = request[1], request[3]
    if atyp == ATYP_IPV4 and len(request) == 10:
        host = str(ipaddress.IPv4Address(request[4:8]))
    elif atyp == ATYP_IPV6 and len(request) == 22:
        host = str(ipaddress.IPv6Address(request[4:20]))
    elif atyp == ATYP_DOMAIN and len(request) >= 5 and len(request) == 7 + request[4]:
        raw = request[5 : 5 + request[4]]
        if not TARGET.fullmatch(raw.decode("latin-1")):
            raise WireError("SOCKS5 domain is not visible ASCII", status=SOCKS_NOT_ALLOWED)
        host = raw.decode("ascii")
    else:
        raise WireError("malformed SOCKS5 address", status=SOCKS_ATYP_UNSUPPORTED)
    (port,) = struct.unpack("!H", request[-2:])
    return command, host, port
