"""The ``--allow-domain`` grammar: a destination pattern, parsed and matched, as pure
functions over text.

:func:`parse_domain_pattern` reads what the operator gives (the flag, the answers file,
the wizard, the proxy's policy document); :class:`DomainPattern` says which destination
it matches; :func:`pattern_reach` says what of this host, its cloud's metadata service or
the local network an allowed pattern opens. The engine that decides with them is
:mod:`sandbox_setup.policy.network`; the sentences an operator reads about them are
:mod:`sandbox_setup.policy.network_words`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.policy.addresses import (
    UNEXEMPTABLE,
    IPAddress,
    parse_address,
    refusal_reason,
)

__all__ = [
    "PATTERN_SYNTAX",
    "REACHES",
    "DomainPattern",
    "host_port",
    "normalize_host",
    "parse_domain_pattern",
    "parse_port",
    "pattern_reach",
    "plausible_host",
]

PATTERN_SYNTAX = (
    "example.com, *.example.com, 203.0.113.7 or [2001:db8::7], each with an optional :PORT"
)
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
_DIGITS = re.compile(r"^[0-9]+$")


def parse_port(value: str | int, what: str = "port") -> int:
    """A TCP port, 1..65535, from text or an int; :class:`InputError` (exit 2) naming it."""
    if isinstance(value, bool):
        raise InputError(f"{what} {value!r} is not a number")
    if isinstance(value, int):
        number = value
    else:
        text = value.strip()
        if not _DIGITS.match(text):
            raise InputError(f"{what} {value!r} is not a number (expected 1-65535)")
        number = int(text)
    if not 1 <= number <= 65535:
        raise InputError(f"{what} {value!r} is out of range (expected 1-65535)")
    return number


@dataclass(frozen=True, slots=True)
class DomainPattern:
    """One allowed destination: an exact name, a ``*.`` wildcard, or an exact address.

    ``*.example.com`` matches every name *under* example.com (``a.example.com``,
    ``a.b.example.com``), not ``example.com`` itself, as in Claude Code's own
    ``sandbox.network.allowedDomains``. ``port`` None matches every port.
    """

    host: str  # lowercase name without the "*." (or the canonical address text)
    wildcard: bool = False
    port: int | None = None
    address: IPAddress | None = None

    def matches(self, host: str, port: int) -> bool:
        """Does a destination ``host:port`` (a name or an IP literal) fall under this pattern?"""
        if self.port is not None and port != self.port:
            return False
        name = normalize_host(host)
        literal = parse_address(name)
        if self.address is not None:
            return literal is not None and literal == self.address
        if literal is not None:
            return False  # a name pattern never matches an address, nor the reverse
        if self.wildcard:
            return name.endswith("." + self.host)
        return name == self.host

    def __str__(self) -> str:
        if self.address is not None and self.address.version == 6:
            host = f"[{self.address.compressed}]"
        else:
            host = ("*." if self.wildcard else "") + self.host
        return host if self.port is None else f"{host}:{self.port}"


def normalize_host(host: str) -> str:
    """Lowercase, without brackets or one trailing dot (``Example.COM.`` -> ``example.com``)."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name.endswith(".") and not name.endswith(".."):
        name = name[:-1]
    return name


def _refuse(text: str, why: str) -> InputError:
    return InputError(message(f"allowed domain {text!r}: ", why, f" (expected {PATTERN_SYNTAX})"))


def parse_domain_pattern(text: str) -> DomainPattern:
    """An ``--allow-domain`` value, validated; :class:`InputError` (exit 2) naming it and why.

    Refused: a URL or a path (``https://x``, ``x/y``), user info, a wildcard anywhere
    but a whole leftmost label (``ex*.com``, ``a.*.com``, ``*``, ``*.com``), empty or
    malformed labels, a port that is not 1..65535, an unbracketed IPv6 address (is
    ``::1:443`` a port or not?), a name that only looks like an address (``127.1``,
    ``2130706433``: resolvers read those as 127.0.0.1), and the unspecified address.
    IP literals are exact addresses only: no wildcards, no ranges.
    """
    if not isinstance(text, str) or not text.strip():
        raise _refuse(str(text), "it is empty")
    raw = text.strip()
    if raw != text:
        raise _refuse(text, "white space around it; give the host alone, e.g. example.com")
    if "%" in raw:
        raise _refuse(
            text,
            "an IPv6 zone id (%eth0) names an interface of this host; the proxy "
            "dials addresses, not links: give a routable address",
        )
    if "://" in raw:
        raise _refuse(text, "a URL, not a host; give only the host, e.g. example.com")
    for char, why in (("/", "contains a path"), ("@", "contains user info"),
                      ("?", "contains a query"), ("#", "contains a fragment")):  # fmt: skip
        if char in raw:
            raise _refuse(text, why)
    if any(c.isspace() for c in raw):
        raise _refuse(text, "contains white space")
    if not raw.isascii():
        raise _refuse(text, "not ASCII; write an internationalized name in its xn-- form")

    host, port = _split_port(text, raw)
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise _refuse(text, "brackets hold an IPv6 address only") from None
    elif ":" in host:
        if parse_address(host) is not None:
            raise _refuse(text, "an IPv6 address must be in brackets, e.g. [2001:db8::1]:443")
        raise _refuse(text, "more than one ':'")
    address = parse_address(host)
    if address is not None:
        if refusal_reason(address) in UNEXEMPTABLE:
            raise _refuse(
                text,
                message(
                    "the unspecified address means this host; ",
                    Ref(Option.ALLOW_LOOPBACK_PORT, Act.USE),
                ),
            )
        return DomainPattern(host=address.compressed, port=port, address=address)

    name = normalize_host(host)
    wildcard = name.startswith("*.")
    base = name[2:] if wildcard else name
    if "*" in base:
        raise _refuse(text, "a wildcard may only be the whole leftmost label, as in *.example.com")
    if not base:
        raise _refuse(text, "no host")
    if len(base) > 253:
        raise _refuse(text, "longer than 253 characters")
    labels = base.split(".")
    for label in labels:
        if not label:
            raise _refuse(text, "an empty label (two dots, or a leading dot)")
        if not _LABEL.match(label):
            raise _refuse(text, f"label {label!r} is not letters, digits and inner hyphens")
    if _DIGITS.match(labels[-1]):
        raise _refuse(text, "looks like an IP address but is not a dotted quad")
    if wildcard and len(labels) < 2:
        raise _refuse(text, "a wildcard over a top-level domain allows too much")
    return DomainPattern(host=base, wildcard=wildcard, port=port)


# Names that reach the machine itself or its cloud's metadata service, without resolving.
_LOOPBACK_NAMES = ("localhost",)  # and every *.localhost (RFC 6761)
_METADATA_NAMES = ("metadata.google.internal", "metadata.goog", "instance-data.ec2.internal")
# What an allowance may open, gravest first: the address rules of refusal_reason an exact
# allowance exempts (matched by their first words), and the names above.
REACHES: tuple[str, ...] = ("loopback", "cloud metadata", "link-local", "private")


def pattern_reach(pattern: DomainPattern) -> str | None:
    """What an allowed pattern opens of this host, its cloud's metadata service or the
    local network (one of :data:`REACHES`), or None. The proxy refuses those ranges
    unless one is allowed exactly; the operator should know when an allowance does that
    (:func:`sandbox_setup.policy.network_words.allowance_warning`)."""
    if pattern.address is not None:
        reason = refusal_reason(pattern.address)
        return next((r for r in REACHES if reason is not None and reason.startswith(r)), None)
    if pattern.host in _LOOPBACK_NAMES or pattern.host.endswith(".localhost"):
        return "loopback"
    if pattern.host in _METADATA_NAMES:
        return "cloud metadata"
    return None


def _split_port(text: str, raw: str) -> tuple[str, int | None]:
    if raw.startswith("["):
        close = raw.find("]")
        if close == -1:
            raise _refuse(text, "an unclosed [")
        host, rest = raw[: close + 1], raw[close + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise _refuse(text, "text after ]")
        return host, _pattern_port(text, rest[1:])
    if raw.count(":") == 1:
        host, _, port_text = raw.partition(":")
        return host, _pattern_port(text, port_text)
    return raw, None


def _pattern_port(text: str, port_text: str) -> int:
    try:
        return parse_port(port_text)
    except InputError:
        raise _refuse(text, f"port {port_text!r} is not 1-65535") from None


def host_port(name: str, port: int) -> str:
    """``name:port``, an IPv6 address in brackets (the text a pattern parses back from)."""
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def plausible_host(name: str) -> bool:
    """An IP literal, or ASCII labels of letters, digits and inner hyphens."""
    if parse_address(name) is not None:
        return True
    return name.isascii() and all(_LABEL.match(label) for label in name.split("."))
