"""The egress rules (sandbox_setup.policy.network / domains / addresses): every rule,
every malformed value."""

from __future__ import annotations

import ipaddress
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_setup.base.errors import InputError
from sandbox_setup.policy.addresses import embedded_ipv4, refusal_reason
from sandbox_setup.policy.domains import (
    REACHES,
    DomainPattern,
    parse_domain_pattern,
    parse_port,
    pattern_reach,
)
from sandbox_setup.policy.network import CLAUDE_ENDPOINTS, REFUSED_PREFIX, EgressPolicy
from sandbox_setup.policy.network_words import allowance_warning

# --- ports -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "port"), [("1", 1), ("443", 443), ("65535", 65535), (" 8080 ", 8080), (22, 22)]
)
def test_parse_port_accepts_1_to_65535(value: str | int, port: int) -> None:
    assert parse_port(value) == port


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0", "out of range"),
        ("70000", "out of range"),
        ("65536", "out of range"),
        (0, "out of range"),
        ("abc", "not a number"),
        ("", "not a number"),
        ("-1", "not a number"),
        ("+80", "not a number"),
        ("8o", "not a number"),
        ("1e3", "not a number"),
        ("٣", "not a number"),  # a digit, but not an ASCII one
        (True, "not a number"),
    ],
)
def test_parse_port_refuses_naming_the_value(value: object, why: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_port(value)  # type: ignore[arg-type]
    assert repr(value) in str(caught.value)
    assert why in str(caught.value)
    assert caught.value.exit_code == 2


# --- domain patterns -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "rendered"),
    [
        ("example.com", DomainPattern("example.com"), "example.com"),
        ("Example.COM", DomainPattern("example.com"), "example.com"),
        ("example.com.", DomainPattern("example.com"), "example.com"),
        ("*.example.com", DomainPattern("example.com", wildcard=True), "*.example.com"),
        ("example.com:8443", DomainPattern("example.com", port=8443), "example.com:8443"),
        ("*.a.example.com:22", DomainPattern("a.example.com", True, 22), "*.a.example.com:22"),
        ("localhost", DomainPattern("localhost"), "localhost"),
        ("xn--bcher-kva.example", DomainPattern("xn--bcher-kva.example"), "xn--bcher-kva.example"),
        ("_dmarc.example.com", DomainPattern("_dmarc.example.com"), "_dmarc.example.com"),
    ],
)
def test_name_patterns(text: str, expected: DomainPattern, rendered: str) -> None:
    pattern = parse_domain_pattern(text)
    assert pattern == expected
    assert str(pattern) == rendered
    assert parse_domain_pattern(rendered) == pattern


@pytest.mark.parametrize(
    ("text", "address", "port", "rendered"),
    [
        ("203.0.113.7", "203.0.113.7", None, "203.0.113.7"),
        ("10.0.0.5:5432", "10.0.0.5", 5432, "10.0.0.5:5432"),
        ("[2001:db8::7]", "2001:db8::7", None, "[2001:db8::7]"),
        ("[2001:DB8:0::7]:443", "2001:db8::7", 443, "[2001:db8::7]:443"),
        ("[::ffff:10.0.0.5]:5432", "10.0.0.5", 5432, "10.0.0.5:5432"),  # mapped: its IPv4
        ("127.0.0.1:8080", "127.0.0.1", 8080, "127.0.0.1:8080"),
    ],
)
def test_ip_literals_are_exact_addresses(
    text: str, address: str, port: int | None, rendered: str
) -> None:
    pattern = parse_domain_pattern(text)
    assert pattern.address == ipaddress.ip_address(address)
    assert pattern.port == port
    assert not pattern.wildcard
    assert str(pattern) == rendered


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("https://example.com", "a URL"),
        ("http://example.com:80/x", "a URL"),
        ("example.com/path", "path"),
        ("user@example.com", "user info"),
        ("example.com?q", "query"),
        ("example.com#f", "fragment"),
        ("exa mple.com", "white space"),
        ("  example.com  ", "white space around it"),  # was stored with the spaces (issue 26)
        ("[fe80::1%eth0]", "zone id"),
        ("fe80::1%eth0", "zone id"),
        ("bücher.example", "xn--"),
        ("ex*.com", "wildcard may only be the whole leftmost label"),
        ("a.*.com", "wildcard may only be the whole leftmost label"),
        ("*", "wildcard may only be the whole leftmost label"),
        ("*.*.example.com", "wildcard may only be the whole leftmost label"),
        ("**.example.com", "wildcard may only be the whole leftmost label"),
        ("example.*", "wildcard may only be the whole leftmost label"),
        ("*.com", "top-level"),
        ("*.", "wildcard may only be the whole leftmost label"),
        ("a..b.com", "empty label"),
        (".example.com", "empty label"),
        ("example.com..", "empty label"),
        ("-bad.example.com", "label '-bad'"),
        ("bad-.example.com", "label 'bad-'"),
        ("a" * 64 + ".com", "is not letters"),
        (("a" * 60 + ".") * 5 + "com", "longer than 253"),
        ("example.com:0", "port '0'"),
        ("example.com:70000", "port '70000'"),
        ("example.com:abc", "port 'abc'"),
        ("example.com:", "port ''"),
        ("example.com:-1", "port '-1'"),
        ("a:b:c", "more than one ':'"),
        ("::1", "must be in brackets"),
        ("2001:db8::1:443", "must be in brackets"),
        ("[2001:db8::1", "unclosed ["),
        ("[2001:db8::1]x", "text after ]"),
        ("[2001:db8::1]:0", "port '0'"),
        ("[example.com]:443", "brackets hold an IPv6 address only"),
        ("[10.0.0.1]", "brackets hold an IPv6 address only"),
        ("127.1", "looks like an IP address"),
        ("2130706433", "looks like an IP address"),
        ("0x7f.1", "looks like an IP address"),
        ("256.1.1.1", "looks like an IP address"),
        ("010.0.0.1", "looks like an IP address"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3:80", "unspecified"),
        ("[::]:443", "unspecified"),
    ],
)
def test_malformed_patterns_are_exit_2_naming_value_and_why(text: str, why: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_domain_pattern(text)
    message = str(caught.value)
    assert repr(text) in message
    assert why in message
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("pattern", "host", "port", "matches"),
    [
        ("example.com", "example.com", 443, True),
        ("example.com", "EXAMPLE.com.", 80, True),
        ("example.com", "a.example.com", 443, False),
        ("example.com", "example.com.evil.test", 443, False),
        ("example.com", "badexample.com", 443, False),
        ("*.example.com", "a.example.com", 443, True),
        ("*.example.com", "a.b.example.com", 443, True),
        ("*.example.com", "example.com", 443, False),  # like Claude's allowedDomains
        ("*.example.com", "aexample.com", 443, False),
        ("*.example.com", "example.com.evil.test", 443, False),
        ("example.com:443", "example.com", 443, True),
        ("example.com:443", "example.com", 80, False),
        ("*.example.com:443", "x.example.com", 8443, False),
        ("203.0.113.7", "203.0.113.7", 1, True),
        ("203.0.113.7:22", "203.0.113.7", 23, False),
        ("203.0.113.7", "::ffff:203.0.113.7", 22, True),  # the same address, mapped
        ("203.0.113.7", "203.0.113.8", 22, False),
        ("[2001:db8::7]", "[2001:db8:0:0::7]", 443, True),
        ("[2001:db8::7]", "2001:db8::7", 443, True),
        ("*.example.com", "203.0.113.7", 443, False),  # a name pattern never matches an IP
        ("203.0.113.7", "seven.example.com", 443, False),
    ],
)
def test_pattern_matching(pattern: str, host: str, port: int, matches: bool) -> None:
    assert parse_domain_pattern(pattern).matches(host, port) is matches


labels = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)


@given(st.lists(labels, min_size=1, max_size=4), st.sampled_from(["com", "test", "example"]))
def test_wildcards_match_exactly_the_names_under_their_base(names: list[str], tld: str) -> None:
    base = ".".join([*names[1:], tld]) if len(names) > 1 else f"{names[0]}.{tld}"
    pattern = parse_domain_pattern(f"*.{base}")
    assert pattern.matches(f"x.{base}", 443)
    assert not pattern.matches(base, 443)
    assert not pattern.matches(f"x{base}", 443)


# --- addresses -------------------------------------------------------------------------

HOST_ADDRESSES = ("192.0.2.2", "fd00::2", "198.51.100.9")


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.170.2", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("168.63.129.16", "cloud metadata"),
        ("192.0.0.192", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("fd00:ec2::23", "cloud metadata"),
        ("fd20:ce::254", "cloud metadata"),
        ("fd00:c1::a9fe:a9fe", "cloud metadata"),
        ("fd00:42::42", "cloud metadata"),
        ("fd00:a9fe:a9fe::1", "cloud metadata"),
        ("fd00:100::100:200", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%2", "link-local"),
        ("192.0.2.2", "host address"),
        ("198.51.100.9", "host address"),  # a documentation range, but this host's own
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("100.127.255.255", "private"),
        ("fd12:3456::1", "private"),
        ("fc00::1", "private"),
        ("fd00::2", "host address"),  # ULA, and this host's: the host rule comes first
        ("fec0::1", "private"),
        ("64:ff9b:1::a00:1", "private"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("240.0.0.1", "reserved"),
        ("198.18.0.1", "reserved"),
        ("192.0.0.8", "reserved"),
        # IPv4 hidden in IPv6: judged as the IPv4 address it reaches.
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:192.0.2.2", "host address"),
        ("64:ff9b::7f00:1", "loopback, as 127.0.0.1 inside an IPv6 address"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata, as 169.254.169.254 inside an IPv6 address"),
        ("2002:a00:1::", "private, as 10.0.0.1 inside an IPv6 address"),
        ("2002:7f00:1::1", "loopback, as 127.0.0.1 inside an IPv6 address"),
        ("::127.0.0.1", "loopback, as 127.0.0.1 inside an IPv6 address"),
        ("::ffff:0:7f00:1", "loopback, as 127.0.0.1 inside an IPv6 address"),
    ],
)
def test_refusal_reason_names_the_rule(address: str, rule: str) -> None:
    assert refusal_reason(address, HOST_ADDRESSES) == rule


@pytest.mark.parametrize(
    "address",
    ["203.0.113.10", "198.51.100.1", "192.0.2.3", "8.8.8.8", "1.1.1.1", "172.32.0.1",
     "100.128.0.1", "2001:db8::10", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::"],
)  # fmt: skip
def test_public_addresses_pass(address: str) -> None:
    assert refusal_reason(address, HOST_ADDRESSES) is None


@pytest.mark.parametrize(
    ("address", "inner"),
    [("::ffff:1.2.3.4", "1.2.3.4"), ("64:ff9b::102:304", "1.2.3.4"),
     ("2002:102:304::", "1.2.3.4"), ("::1.2.3.4", "1.2.3.4"), ("2001:db8::1", None),
     ("::1", None), ("::", None), ("1.2.3.4", None)],
)  # fmt: skip
def test_embedded_ipv4(address: str, inner: str | None) -> None:
    found = embedded_ipv4(ipaddress.ip_address(address))
    assert (str(found) if found else None) == inner


# --- decisions -------------------------------------------------------------------------

POLICY = EgressPolicy.build(
    ["*.allowed.test", "allowed.test", "db.allowed.test:5432", "10.0.0.5:5432",
     "[fd12::5]", "169.254.169.254:80"],
    host_addresses=HOST_ADDRESSES,
)  # fmt: skip


@pytest.mark.parametrize(
    ("host", "port", "resolved", "allowed", "rule"),
    [
        ("api.anthropic.com", 443, ["203.0.113.9"], True, "allowlisted"),
        ("claude.ai", 443, ["203.0.113.9"], True, "allowlisted"),
        ("platform.claude.com", 443, ["2001:db8::9"], True, "allowlisted"),
        ("api.anthropic.com", 80, ["203.0.113.9"], False, "not allowlisted"),
        ("www.allowed.test", 443, ["203.0.113.10", "2001:db8::10"], True, "allowlisted"),
        ("allowed.test", 80, ["203.0.113.10"], True, "allowlisted"),
        ("denied.test", 443, ["203.0.113.10"], False, "not allowlisted"),
        ("allowed.test.evil.example", 443, ["203.0.113.10"], False, "not allowlisted"),
        # a name on the allowlist, but the address rules refuse what it resolves to
        ("loop.allowed.test", 443, ["127.0.0.1"], False, "loopback"),
        ("loop6.allowed.test", 443, ["::1"], False, "loopback"),
        ("mapped.allowed.test", 443, ["::ffff:127.0.0.1"], False, "loopback"),
        ("meta.allowed.test", 443, ["169.254.169.254"], False, "cloud metadata"),
        ("meta6.allowed.test", 443, ["fd00:ec2::254"], False, "cloud metadata"),
        ("lan.allowed.test", 443, ["10.0.0.7"], False, "private"),
        ("self.allowed.test", 443, ["192.0.2.2"], False, "host address"),
        ("nat64.allowed.test", 443, ["64:ff9b::7f00:1"], False, "loopback"),
        # rebinding: one bad address among good ones refuses the destination
        ("rebind.allowed.test", 443, ["203.0.113.10", "127.0.0.1"], False, "loopback"),
        ("rebind.allowed.test", 443, ["10.0.0.7", "169.254.169.254"], False, "cloud metadata"),
        ("gone.allowed.test", 443, [], False, "unresolved"),
        # exact allowances lift the address rules for that address (and port) only
        ("db.allowed.test", 5432, ["10.0.0.5"], True, "allowlisted"),
        ("db.allowed.test", 5433, ["10.0.0.5"], False, "private"),  # the allowance is for 5432
        ("x.allowed.test", 5432, ["10.0.0.5"], True, "allowlisted"),
        ("x.allowed.test", 443, ["10.0.0.5"], False, "private"),
        ("x.allowed.test", 443, ["fd12::5"], True, "allowlisted"),
        ("x.allowed.test", 443, ["0.0.0.0"], False, "unspecified"),
        # IP literal destinations: only exact allowances
        ("10.0.0.5", 5432, [], True, "allowed address"),
        ("10.0.0.5", 5433, [], False, "address not allowlisted"),
        ("[fd12::5]", 22, [], True, "allowed address"),
        ("169.254.169.254", 80, [], True, "allowed address"),
        ("169.254.169.254", 443, [], False, "address not allowlisted"),
        ("127.0.0.1", 80, [], False, "address not allowlisted"),
        ("::ffff:127.0.0.1", 80, [], False, "address not allowlisted"),
        ("203.0.113.10", 443, [], False, "address not allowlisted"),
        ("0.0.0.0", 9, [], False, "unspecified"),
        ("[::]", 9, [], False, "unspecified"),
        # malformed destinations
        ("", 443, [], False, "malformed"),
        ("a b.test", 443, [], False, "malformed"),
        ("x.allowed.test", 0, ["203.0.113.10"], False, "malformed"),
        ("x.allowed.test", 65536, ["203.0.113.10"], False, "malformed"),
    ],
)
def test_decide(host: str, port: int, resolved: list[str], allowed: bool, rule: str) -> None:
    decision = POLICY.decide(host, port, resolved)
    assert (decision.allowed, decision.rule) == (allowed, rule), decision.message
    if not allowed:
        assert decision.message.startswith(REFUSED_PREFIX)


def test_refusal_message_names_destination_address_and_rule() -> None:
    decision = POLICY.decide("api.allowed.test", 443, ["203.0.113.10", "127.0.0.1"])
    assert decision.message == (
        "sandbox-launch egress proxy: refused api.allowed.test:443: "
        "resolves to 127.0.0.1 (loopback)"
    )


def test_the_gravest_rule_is_named_whatever_the_resolver_order() -> None:
    one = POLICY.decide("a.allowed.test", 443, ["10.0.0.7", "127.0.0.1"])
    other = POLICY.decide("a.allowed.test", 443, ["127.0.0.1", "10.0.0.7"])
    assert one == other
    assert one.rule == "loopback"


def test_precheck_refuses_off_list_names_without_resolving() -> None:
    # The proxy resolves only what precheck let through: a name off the list is never
    # looked up (the lookup itself would carry data out through DNS).
    assert POLICY.precheck("secret.attacker.example", 443) is not None
    assert POLICY.precheck("x.allowed.test", 443) is None


def test_claude_endpoints_are_always_in_the_policy() -> None:
    policy = EgressPolicy.build([])
    assert [str(p) for p in policy.allowed] == list(CLAUDE_ENDPOINTS)
    for endpoint in CLAUDE_ENDPOINTS:
        parse_domain_pattern(endpoint)  # the list itself is valid


def test_build_refuses_a_malformed_operator_pattern() -> None:
    with pytest.raises(InputError, match=re.escape("'https://evil.example'")):
        EgressPolicy.build(["ok.example", "https://evil.example"])


def test_json_round_trip() -> None:
    again = EgressPolicy.from_json(POLICY.to_json())
    assert again == POLICY
    for args in (("x.allowed.test", 443, ["127.0.0.1"]), ("10.0.0.5", 5432, [])):
        assert again.decide(*args) == POLICY.decide(*args)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"schema": 2, "allowed": []}',
        '{"schema": 1, "allowed": "example.com"}',
        '{"schema": 1, "allowed": [1]}',
        '{"schema": 1, "allowed": ["https://x"]}',
        '{"schema": 1, "allowed": ["10.0.0.5"]}',
        '{"schema": 1, "allowed": [], "allowed_addresses": ["example.com"]}',
        '{"schema": 1, "allowed": [], "host_addresses": ["not-an-ip"]}',
    ],
)
def test_malformed_json_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError):
        EgressPolicy.from_json(text)


@pytest.mark.parametrize(
    ("text", "reach"),
    [
        ("localhost", "loopback"),
        ("a.localhost:8080", "loopback"),
        ("127.0.0.1:5432", "loopback"),
        ("metadata.google.internal", "cloud metadata"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.10.1", "link-local"),
        ("10.0.0.5:5432", "private"),
        ("example.com", None),
        ("203.0.113.7", None),
    ],
)
def test_what_an_allowance_opens_is_a_typed_reach_with_its_words(
    text: str, reach: str | None
) -> None:
    """The grammar says what a pattern opens (pattern_reach, one of REACHES); the words
    module says it for people; the engine withholds a refusal's remedy by the reach,
    never by the warning's text."""
    pattern = parse_domain_pattern(text)
    assert pattern_reach(pattern) == reach
    warning = allowance_warning(pattern)
    if reach is None:
        assert warning is None
    else:
        assert reach in REACHES
        assert warning is not None and f" is {reach}: the agent can reach it" in warning
