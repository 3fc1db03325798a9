"""Hypothesis strategies for what a proxy client sends: request heads and SOCKS5 messages.

Most of what these draw is valid or one step from it (a byte that ends a line, a
second Content-Length, a method in lower case), since that is where a parser's
decisions are; :data:`ANY_BYTES` covers the rest. A head is what the proxy's reader hands
:func:`sandbox_setup.launcher.egress.wire.parse_request_head`: the bytes before the
first blank line, without it. Used by ``tests/unit/test_proxy_wire_fuzz.py`` and
``tests/unit/test_proxy_wire_h11.py``.
"""

from __future__ import annotations

from hypothesis import strategies as st

# Bytes a parser has to decide about: line ends, controls, the separators, Latin-1.
NASTY = ("\n", "\r", "\r\n", "\r\n ", "\x00", "\t", " ", "\x0b", "\x0c", "\x7f", "\x85",
         "\xa0", "\xb2", "\xe9", "\xff", ":", ",", "@", "[", "]", "%", "#", "?", "/")  # fmt: skip
TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
VISIBLE = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
LATIN1 = st.characters(min_codepoint=0x00, max_codepoint=0xFF)

ANY_BYTES = st.binary(max_size=600)


class Odd:
    """Which parts of one head are odd, by their order of drawing (a head has up to 32)."""

    def __init__(self, parts: frozenset[int] = frozenset()) -> None:
        self.parts = parts
        self.drawn = 0

    def now(self) -> bool:
        """Whether the part drawn now is to be odd."""
        self.drawn += 1
        return self.drawn - 1 in self.parts


class Pool:
    """Values for one part of a head: valid ones, and odd ones."""

    def __init__(self, valid: list[str] | st.SearchStrategy[str], odd: list[str]) -> None:
        self.valid = valid if isinstance(valid, st.SearchStrategy) else st.sampled_from(valid)
        self.odd = st.sampled_from(odd)

    def draw(self, draw: st.DrawFn, odd: Odd) -> str:
        return draw(self.odd if odd.now() else self.valid)


METHODS = Pool(
    ["GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "PATCH", "CONNECT"],
    ["get", "Connect", "M-SEARCH", "G\xe9T", "\xff", "", "GET\x00", "GET ", "PRI"],
)
VERSIONS = Pool(
    ["HTTP/1.1", "HTTP/1.0"],
    ["HTTP/1.2", "HTTP/2.0", "HTTP/1", "http/1.1", "HTTP/1.1 ", "HTTP/0.9", "HTTP/1.1\n"],
)
HOSTS = Pool(
    ["a.test", "registry.npmjs.org", "203.0.113.7", "[2001:db8::1]", "A.Test."],
    ["[::1", "2001:db8::1", "", "user@a.test", "a b", "[fe80::1%eth0]", "a.test\x00"],
)
PORTS = Pool(["", ":80", ":443", ":8080"], [":", ":0", ":65536", ":x", ":\xb2", ":0443"])
SCHEMES = Pool(["http://"], ["https://", "HTTP://", "ftp://", "", "http:/"])
PATHS = Pool(st.text(VISIBLE, max_size=24).map(lambda p: "/" + p), ["", "?q", "#f", "/a b"])
HEADER_NAMES = Pool(
    st.sampled_from(["Content-Length", "Transfer-Encoding", "Connection", "Proxy-Connection",
                     "User-Agent", "Accept", "Keep-Alive", "Proxy-Authorization", "X-A"])
    | st.text(st.sampled_from(TOKEN_CHARS), min_size=1, max_size=12),
    ["", " Host", "Host ", "X\xe9", "X\nY", "X Y", "X:Y", "Host"],  # Host: a second one
)  # fmt: skip
HOST_NAMES = Pool(["Host", "host", "HOST"], ["Host ", "Hos t"])
CLEAN_VALUES = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=24
)
VALUES = {
    "content-length": Pool(
        ["0", "5", "12345"], ["5, 5", "+5", "-1", "0x10", "", "9" * 19, "9" * 21, "5 5"]
    ),
    "transfer-encoding": Pool(["chunked", "Chunked"], ["gzip", "gzip, chunked", ""]),
    "connection": Pool(["keep-alive", "close", "Upgrade, X-A"], ["", "keep-alive,"]),
}
# Any other header: a bare LF in a value is the classic injection.
OTHER_VALUES = Pool(CLEAN_VALUES, ["a\nHost: b.test", "a\rb", "\x00", "a\x0bb", "a\x7f"])
SEPARATORS = Pool([": ", ":"], [":\t", ":  ", " : ", "\t:", ": \t"])
TRAILING = Pool([""], [" ", "\t", " \t ", "\xa0"])


@st.composite
def targets(draw: st.DrawFn, method: str, odd: Odd) -> str:
    """An authority for CONNECT, an absolute URI for the rest (or, odd, the other)."""
    authority = HOSTS.draw(draw, odd) + PORTS.draw(draw, odd)
    if (method == "CONNECT") != odd.now():
        return authority
    return SCHEMES.draw(draw, odd) + authority + PATHS.draw(draw, odd)


@st.composite
def header_lines(draw: st.DrawFn, odd: Odd) -> str:
    name = HEADER_NAMES.draw(draw, odd)
    value = VALUES.get(name.lower(), OTHER_VALUES).draw(draw, odd)
    return name + SEPARATORS.draw(draw, odd) + value + TRAILING.draw(draw, odd)


@st.composite
def heads(draw: st.DrawFn, odd_parts: int = 0) -> bytes:
    """A request line and a few headers, valid but for at most ``odd_parts`` parts."""
    odd = Odd(draw(st.frozensets(st.integers(0, 31), min_size=odd_parts, max_size=odd_parts)))
    method = METHODS.draw(draw, odd)
    line = f"{method} {draw(targets(method, odd))} {VERSIONS.draw(draw, odd)}"
    headers = [draw(header_lines(odd)) for _ in range(draw(st.integers(0, 6)))]
    if draw(st.booleans()):  # the Host real clients send first
        host = HOSTS.draw(draw, odd) + PORTS.draw(draw, odd)
        headers.insert(0, HOST_NAMES.draw(draw, odd) + ": " + host)
    return "\r\n".join([line, *headers]).encode("latin-1")


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    """``base``'s bytes with a few nasty bytes inserted, bytes deleted, or lines repeated."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "repeat"]))
        if action == "insert":
            data[where:where] = draw(st.sampled_from(NASTY)).encode("latin-1")
        elif action == "delete" and data:
            del data[min(where, len(data) - 1)]
        elif action == "repeat":
            lines = bytes(data).split(b"\r\n")
            lines.insert(where % len(lines), lines[where % len(lines)])
            data = bytearray(b"\r\n".join(lines))
    return bytes(data)


VALID_HEADS = heads()
ODD_HEADS = st.integers(1, 2).flatmap(lambda n: heads(odd_parts=n))
HEADS = st.one_of(VALID_HEADS, ODD_HEADS, mutated(VALID_HEADS))

# Large inputs, made by repeating a drawn piece (hypothesis draws it small, so these cost
# nothing to generate): 100-300 KB in one target, one value, empty lines or raw bytes;
# or some thousands of headers (each is a few microseconds of Python, twice over when
# forwarded and parsed back).
BIG_SIZE = st.integers(100_000, 300_000)


@st.composite
def big_heads(draw: st.DrawFn) -> bytes:
    size = draw(BIG_SIZE)
    piece = draw(st.text(LATIN1, min_size=1, max_size=8)).encode("latin-1")
    filler = piece * (size // len(piece))
    shape = draw(st.sampled_from(["target", "value", "headers", "lines", "raw"]))
    if shape == "target":
        return b"GET http://a.test/" + filler + b" HTTP/1.1\r\nHost: a.test"
    if shape == "value":
        return b"GET http://a.test/ HTTP/1.1\r\nX-A: " + filler
    if shape == "headers":
        return b"GET http://a.test/ HTTP/1.1" + (b"\r\nX-A: " + piece) * (size // 64)
    if shape == "lines":
        return b"GET http://a.test/ HTTP/1.1" + b"\r\n" * (size // 2)
    return filler


# SOCKS5 (RFC 1928): a greeting is VER NMETHODS METHODS..., a request VER CMD RSV ATYP
# ADDR PORT; the counts and lengths in them are what a parser can be lied to about.
@st.composite
def socks_greetings(draw: st.DrawFn) -> bytes:
    methods = draw(st.binary(max_size=12))
    count = draw(st.sampled_from([len(methods)] * 4 + [0, 1, 255, len(methods) + 1]))
    return bytes([draw(st.sampled_from([5, 5, 5, 4, 0])), count % 256]) + methods


@st.composite
def socks_requests(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from([5, 5, 5, 4]))
    command = draw(st.sampled_from([1, 1, 2, 3, 0, 255]))
    reserved = draw(st.sampled_from([0, 0, 0, 1]))
    atyp = draw(st.sampled_from([1, 3, 4, 0, 2, 5, 255]))
    if atyp == 3:
        domain = draw(
            st.text(VISIBLE, min_size=1, max_size=40).map(str.encode)
            | st.binary(max_size=40)
        )  # fmt: skip
        count = draw(st.sampled_from([len(domain)] * 4 + [0, 255, len(domain) + 1]))
        address = bytes([count % 256]) + domain
    else:
        size = {1: 4, 4: 16}.get(atyp, 4)
        address = draw(st.binary(min_size=size, max_size=size) | st.binary(max_size=20))
    port = draw(st.binary(min_size=2, max_size=2) | st.binary(max_size=3))
    return bytes([version, command, reserved, atyp]) + address + port


SOCKS_GREETINGS = socks_greetings() | st.binary(max_size=20)
SOCKS_REQUESTS = socks_requests() | mutated(socks_requests()) | st.binary(max_size=30)
