"""The network boundary's rules (invariant 7), as pure functions over values.

Who decides with these: the wizard and the TUI (validating ``--allow-domain`` and
``--allow-loopback-port``), the audit (what the configured policy allows), and the
launcher's egress proxy (every connection). Nothing here resolves a name or opens a
socket: the proxy resolves, then hands the answer to :meth:`EgressPolicy.decide`.

A destination is allowed only when

1. its name matches an allowed pattern (Claude Code's endpoints, :data:`CLAUDE_ENDPOINTS`,
   plus the operator's ``--allow-domain`` patterns) for that port, and
2. *every* address the name resolved to passes :func:`refusal_reason` (so a name that
   also resolves to, or is rebound to, a loopback or private address is refused,
   whatever else it resolves to), unless the operator allowed that exact address.

An IP literal destination (``CONNECT 10.0.0.5:5432``) skips the names: it is allowed
only when the operator allowed that exact address (``--allow-domain 10.0.0.5:5432``);
an allowed address is also exempt from the address rules, since naming it is the
operator's explicit choice. The unspecified address (``0.0.0.0``, ``::``) is never
allowed: connecting to it reaches this host, which is what ``--allow-loopback-port``
is for.

The proxy decides by name *before* it resolves anything, so a name off the allowlist
is never looked up (a lookup of ``secret.attacker.example`` would already carry data
out through DNS).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sandbox_setup.base import remedies
from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.base.netwall import (
    NAMESPACE_WALL,
    NO_SECOND_WALL,
    NO_WALL,
    PORTS_ONLY,
    SECOND_WALL,
    UserNetworkWall,
    describe_user_wall,
    user_lists_apply,
)
from sandbox_setup.policy.addresses import (
    RULE_ORDER,
    UNEXEMPTABLE,
    IPAddress,
    as_address,
    canonical_address,
    parse_address,
    refusal_reason,
)

__all__ = [
    "CLAUDE_ENDPOINTS",
    "HOST_EXPOSURE",
    "Decision",
    "DomainPattern",
    "EgressPolicy",
    "UserNetworkWall",
    "allowances_problem",
    "describe_network",
    "describe_user_allowances",
    "describe_user_network",
    "describe_user_wall",
    "inner_proxy_port",
    "network_choice_problem",
    "network_exposure",
    "normalize_host",
    "parse_domain_pattern",
    "parse_port",
    "proxy_port_problem",
    "refusal_reason",
    "user_lists_apply",
    "user_network_wall",
    "user_proxy_port",
    "user_wall_phrase",
]

# Claude Code's own endpoints: the "Network access requirements" of Claude Code's
# enterprise network configuration page, https://code.claude.com/docs/en/network-config
# (api.anthropic.com: the Claude API; claude.ai: claude.ai account authentication;
# platform.claude.com: Anthropic Console account authentication). Older revisions of
# that page also listed statsig.anthropic.com and sentry.io (telemetry and error
# reports); Claude Code runs without reaching them, so the minimal list leaves them to the
# operator's --allow-domain. TLS only: nothing of Claude Code's needs another port.
CLAUDE_ENDPOINTS: tuple[str, ...] = (
    "api.anthropic.com:443",
    "claude.ai:443",
    "platform.claude.com:443",
)

# The launcher's egress proxy, inside the sandbox: 127.0.0.1:SANDBOX_PROXY_PORT (the
# proxy's listener in the sandbox's network namespace), also written as Claude's inner sandbox's
# httpProxyPort/socksProxyPort. So it cannot also be an exposed loopback port.
SANDBOX_PROXY_PORT = 3128


def user_proxy_port(exposed: Iterable[int]) -> int:
    """Where a user-mode session's proxy listens inside its own network namespace: 3128
    (sandbox mode's), or the first port above it that no exposed loopback port takes
    (in user mode 3128 may be one: the namespace is the launcher's to lay out)."""
    taken = set(exposed)
    port = SANDBOX_PROXY_PORT
    while port in taken:
        port += 1
    return port


def inner_proxy_port(mode: str, network: str | None, inner_sandbox: str) -> int | None:
    """The port Claude's inner sandbox must use as its HTTP and SOCKS proxy, or None.

    Claude Code's Bash sandbox (sandbox-runtime) starts proxies of its own unless
    ``sandbox.network.httpProxyPort``/``socksProxyPort`` name one; inside our allowlist
    sandbox those would apply *its* rules, not ours. So where the launcher gives the
    sandbox the allowlist network and the inner sandbox is on, both are the launcher's
    proxy's listener (one port: the proxy tells HTTP from SOCKS5 by the first byte).
    """
    if mode == "sandbox" and network == "allowlist" and inner_sandbox != "off":
        return SANDBOX_PROXY_PORT
    return None


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
# Why an allowance of each kind deserves a word in the plan.
_REACHES = {
    "loopback": message(
        "every service listening on this host's loopback (databases, admin and debug ports) "
        "becomes reachable through the proxy; to expose one port ",
        Ref(Option.ALLOW_LOOPBACK_PORT, Act.USE, metavar="PORT"),
        " instead",
    ),
    "cloud metadata": "the cloud metadata service hands out this machine's credentials "
    "and tokens to whoever asks",
    "link-local": "link-local addresses hold the cloud metadata service (169.254.169.254) "
    "and this network link's devices",
    "private": "a private (RFC 1918, CGNAT or ULA) address is inside your network, "
    "which the proxy otherwise keeps out of reach",
}


def allowance_warning(pattern: DomainPattern) -> str | None:
    """A warning for an allowed pattern that opens this host, its cloud's metadata
    service or the local network, or None. The proxy refuses those ranges unless one
    is allowed exactly; the operator should know when an allowance does that."""
    rule: str | None = None
    if pattern.address is not None:
        reason = refusal_reason(pattern.address)
        rule = next((r for r in _REACHES if reason is not None and reason.startswith(r)), None)
    elif pattern.host in _LOOPBACK_NAMES or pattern.host.endswith(".localhost"):
        rule = "loopback"
    elif pattern.host in _METADATA_NAMES:
        rule = "cloud metadata"
    if rule is None:
        return None
    return message(f"allowed domain {pattern} is {rule}: the agent can reach it; ", _REACHES[rule])


def allowance_warnings(patterns: Iterable[str]) -> list[str]:
    """:func:`allowance_warning` over the allowed patterns (those that parse)."""
    warnings = []
    for text in patterns:
        try:
            warning = allowance_warning(parse_domain_pattern(text))
        except InputError:
            continue  # refused elsewhere, with its own message
        if warning is not None:
            warnings.append(warning)
    return warnings


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


# --- the policy ---------------------------------------------------------------------

REFUSED_PREFIX = "sandbox-launch egress proxy: refused"


@dataclass(frozen=True, slots=True)
class Decision:
    """What the proxy does with one destination, and the rule that says so."""

    allowed: bool
    rule: str
    message: str


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """The proxy's whole policy: plain data, so it crosses to the proxy process as JSON."""

    allowed: tuple[DomainPattern, ...]  # name patterns: Claude's endpoints + the operator's
    allowed_addresses: tuple[DomainPattern, ...] = ()  # exact addresses (optional port)
    host_addresses: frozenset[IPAddress] = field(default_factory=frozenset)

    @classmethod
    def build(
        cls,
        operator_patterns: Iterable[str] = (),
        host_addresses: Iterable[IPAddress | str] = (),
        claude_endpoints: Sequence[str] = CLAUDE_ENDPOINTS,
    ) -> EgressPolicy:
        """Claude Code's endpoints plus the operator's ``--allow-domain`` values (validated)."""
        patterns = [parse_domain_pattern(p) for p in (*claude_endpoints, *operator_patterns)]
        unique = list(dict.fromkeys(patterns))
        return cls(
            allowed=tuple(p for p in unique if p.address is None),
            allowed_addresses=tuple(p for p in unique if p.address is not None),
            host_addresses=frozenset(canonical_address(as_address(a)) for a in host_addresses),
        )

    def with_host_addresses(self, addresses: Iterable[IPAddress | str]) -> EgressPolicy:
        """This policy with more host addresses (the proxy adds what it reads live)."""
        more = frozenset(canonical_address(as_address(a)) for a in addresses)
        return EgressPolicy(self.allowed, self.allowed_addresses, self.host_addresses | more)

    def address_allowed(self, address: IPAddress, port: int) -> bool:
        """Did the operator allow exactly this address (and port)?"""
        return any(p.matches(address.compressed, port) for p in self.allowed_addresses)

    def precheck(self, host: str, port: int) -> Decision | None:
        """The refusal that needs no resolving (malformed, not allowlisted), else None.

        The proxy calls this before it resolves ``host``, so a name off the allowlist
        is never looked up.
        """
        name = normalize_host(host)
        where = _where(name, port)
        if not name or len(name) > 253 or not _plausible_host(name):
            return Decision(False, "malformed", f"{REFUSED_PREFIX} {where}: not a host name")
        if not 1 <= port <= 65535:
            return Decision(False, "malformed", f"{REFUSED_PREFIX} {where}: port out of range")
        literal = parse_address(name)
        if literal is not None:
            rule = refusal_reason(literal, self.host_addresses)
            if rule in UNEXEMPTABLE:
                return Decision(False, rule, f"{REFUSED_PREFIX} {where}: {rule} address")
            if not self.address_allowed(literal, port):
                # No command to allow it: only names get one (refusal_remedy), never an
                # address (the metadata service, a private range, this host's own).
                return Decision(
                    False,
                    "address not allowlisted",
                    f"{REFUSED_PREFIX} {where}: an IP address the operator did not allow",
                )
            return None
        if not any(p.matches(name, port) for p in self.allowed):
            return Decision(
                False,
                "not allowlisted",
                f"{REFUSED_PREFIX} {where}: not on the allowlist" + _allow_it(where),
            )
        return None

    def decide(
        self, host: str, port: int, resolved_addresses: Sequence[IPAddress | str]
    ) -> Decision:
        """Allowed only if the name is allowlisted and every resolved address passes.

        For an IP literal ``host``, ``resolved_addresses`` is ignored: the literal is
        the address.
        """
        refused = self.precheck(host, port)
        if refused is not None:
            return refused
        name = normalize_host(host)
        where = _where(name, port)
        literal = parse_address(name)
        if literal is not None:
            return Decision(
                True, "allowed address", f"allowed {where}: an address the operator allowed"
            )
        addresses = [canonical_address(as_address(a)) for a in resolved_addresses]
        if not addresses:
            return Decision(
                False, "unresolved", f"{REFUSED_PREFIX} {where}: the name does not resolve"
            )
        refusals = []
        for address in addresses:
            rule = refusal_reason(address, self.host_addresses)
            if rule is None or (rule not in UNEXEMPTABLE and self.address_allowed(address, port)):
                continue
            refusals.append((RULE_ORDER.index(rule.split(",", 1)[0]), address, rule))
        if refusals:
            # The gravest rule, whatever order the resolver answered in.
            _, address, rule = min(refusals, key=lambda r: r[0])
            return Decision(
                False,
                rule.split(",", 1)[0],
                f"{REFUSED_PREFIX} {where}: resolves to {address} ({rule})",
            )
        pattern = next(p for p in self.allowed if p.matches(name, port))
        return Decision(True, "allowlisted", f"allowed {where}: allowlisted by {pattern}")

    def to_json(self) -> str:
        """The policy as one JSON document (``schema`` 1), for the proxy process."""
        return json.dumps(
            {
                "schema": 1,
                "allowed": [str(p) for p in self.allowed],
                "allowed_addresses": [str(p) for p in self.allowed_addresses],
                "host_addresses": sorted(a.compressed for a in self.host_addresses),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> EgressPolicy:
        """The inverse of :meth:`to_json`; :class:`InputError` for anything else."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InputError(f"egress policy: not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("schema") != 1:
            raise InputError("egress policy: expected a JSON object with schema 1")
        lists = {}
        for key in ("allowed", "allowed_addresses", "host_addresses"):
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(f"egress policy: {key!r} must be a list of strings")
            lists[key] = value
        patterns = [parse_domain_pattern(p) for p in lists["allowed"]]
        addresses = [parse_domain_pattern(p) for p in lists["allowed_addresses"]]
        if any(p.address is not None for p in patterns) or any(
            p.address is None for p in addresses
        ):
            raise InputError("egress policy: names and addresses are in the wrong lists")
        try:
            hosts = frozenset(
                canonical_address(ipaddress.ip_address(a)) for a in lists["host_addresses"]
            )
        except ValueError as exc:
            raise InputError(f"egress policy: host address: {exc}") from None
        return cls(tuple(patterns), tuple(addresses), hosts)


def _allow_it(where: str) -> str:
    """The command that allows ``where`` (a refusal's remedy), when it is a valid pattern
    of a name the plan would not warn about (as :func:`refusal_remedy`: never a name
    that reaches this host or its cloud's metadata service)."""
    try:
        pattern = parse_domain_pattern(where)
    except InputError:
        return " (the operator's allowed domains allow more)"
    if pattern.address is not None or allowance_warning(pattern) is not None:
        return ""
    return f"; to allow it: {remedies.allow_domain(where)}"


# What a refusal's rule (the ``rule`` of the proxy's decision records) means, in words.
REFUSAL_WORDS = {
    "not allowlisted": "not on the allowlist",
    "unresolved": "did not resolve",
    "address not allowlisted": "an IP address the operator did not allow",
    "malformed": "not a host name or port",
}


def refusal_words(rule: str) -> str:
    """Why the proxy refused, for people, from the decision's typed ``rule``."""
    return REFUSAL_WORDS.get(rule, f"a {rule} address")


def refusal_remedy(host: str, port: int, rule: str, root: str = "/") -> str | None:
    """The command that would allow a refused destination, or None. Only for a name the
    proxy refused as not on the allowlist; never for an IP address, a name refused for
    where it resolves (loopback, metadata, private ranges), nor a name that reaches this
    host or its cloud's metadata service without resolving (:func:`allowance_warning`)."""
    if rule != "not allowlisted":
        return None
    name = normalize_host(host)
    if parse_address(name) is not None:
        return None
    try:
        pattern = parse_domain_pattern(_where(name, port))
    except InputError:
        return None
    if pattern.address is not None or allowance_warning(pattern) is not None:
        return None
    return remedies.allow_domain(str(pattern), root)


def _where(name: str, port: int) -> str:
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


def _plausible_host(name: str) -> bool:
    if parse_address(name) is not None:
        return True
    return name.isascii() and all(_LABEL.match(label) for label in name.split("."))


# --- what each network choice means, in words (plan, --dry-run, audit, launcher) ----

HOST_EXPOSURE = (
    "the agent shares the host's network: loopback services, the cloud metadata address "
    "169.254.169.254 and abstract unix sockets are reachable"
)
NONE_EXPOSURE = "no network at all: Claude cannot reach its API"
ALLOWLIST_SUMMARY = (
    "a network namespace of its own; egress only through the launcher's proxy, which "
    "refuses loopback, link-local and metadata, this host's own addresses and private "
    "ranges unless one is allowed exactly"
)


def network_exposure(network: Network | str) -> str:
    """One phrase for what ``network`` leaves reachable."""
    if network == Network.HOST:
        return HOST_EXPOSURE
    if network == Network.NONE:
        return NONE_EXPOSURE
    return ALLOWLIST_SUMMARY


def describe_network(
    network: Network | str, allowed_domains: Sequence[str], loopback_ports: Sequence[int]
) -> list[str]:
    """The lines a plan, a review and an audit show for the sandbox's network."""
    if network != Network.ALLOWLIST:
        return [f"{network}: {network_exposure(network)}"]
    lines = [
        f"allowlist: {ALLOWLIST_SUMMARY}",
        "allowed: Claude Code's endpoints " + ", ".join(CLAUDE_ENDPOINTS),
    ]
    if allowed_domains:
        lines.append("allowed by you (--allow-domain): " + ", ".join(allowed_domains))
    if loopback_ports:
        lines.append(
            "host loopback ports seen inside at 127.0.0.1 (--allow-loopback-port): "
            + ", ".join(str(p) for p in loopback_ports)
        )
    return lines


# --- which modes take the operator's lists (--allow-domain, --allow-loopback-port) --
#
# Sandbox mode: with network "allowlist" only (the namespace's proxy and forwarders).
# User mode: always; its config's network stays "host" (``--network allowlist`` is
# sandbox mode's). Where root may make a network namespace, the session runs in one of
# its own whatever the Landlock ABI and ``[user] landlock`` (the session's proxy, which
# allows Claude's endpoints and the allowed domains, listening inside; the allowed
# loopback ports forwarded in); where Landlock has TCP rules (ABI >= 4, ``[user]
# landlock`` on) its ports are a further wall, or the only one where root cannot make a
# namespace (sandbox_setup.policy.landlock). With neither, the agent has the host's
# network and the lists change nothing.
# Unsafe mode: never (Claude runs as the operator; nothing filters its network).


def user_network_wall(landlock_network: bool, namespace_possible: bool) -> UserNetworkWall:
    """The wall from its two facts: root may create a network namespace here (the
    session's own, with its proxy, whatever Landlock gives), and Landlock's network wall
    is planned (ABI >= 4 and ``[user] landlock`` on)."""
    if namespace_possible:
        return UserNetworkWall.NAMESPACE
    return UserNetworkWall.PORTS if landlock_network else UserNetworkWall.HOST


def user_wall_phrase(wall: UserNetworkWall, landlock_network: bool = True) -> str:
    """The words for ``wall`` wherever it is described (launch line, plan, checks);
    ``landlock_network``: Landlock's ports stand behind the namespace as a second wall."""
    if wall is UserNetworkWall.NAMESPACE:
        return f"{NAMESPACE_WALL}; {SECOND_WALL if landlock_network else NO_SECOND_WALL}"
    if wall is UserNetworkWall.PORTS:
        return (
            "Landlock's TCP ports only (root cannot create a network namespace here): " + PORTS_ONLY
        )
    return NO_WALL


USER_MODE_NETWORK = (
    'user mode\'s config says network "host"; where root can create a network namespace '
    "the session runs in one of its own (its egress proxy inside: Claude Code's endpoints "
    "and --allow-domain; the --allow-loopback-port ports forwarded in), and where Landlock "
    "ABI >= 4 confines it ([user] landlock, on by default) the agent connects only to that "
    "proxy and those ports, without any --network"
)
USER_MODE_BELOW_NETWORK_ABI = (
    "where root cannot create a network namespace and Landlock has no TCP rules (ABI < 4, "
    "or [user] landlock = false), the agent has the host's whole network, and these "
    "change nothing"
)


def network_choice_problem(mode: Mode, network: Network) -> str | None:
    """Why ``network`` cannot be the choice of ``mode`` (None: it can)."""
    if mode is Mode.SANDBOX or network is Network.HOST:
        return None
    if mode is Mode.USER:
        return f"network {str(network)!r} needs sandbox mode; {USER_MODE_NETWORK}"
    return (
        f"network {str(network)!r} needs sandbox mode; in {mode} mode the agent shares the "
        'host\'s network (network = "host")'
    )


def allowances_problem(mode: Mode, network: Network, what: str) -> str | None:
    """Why ``--what`` (``allow-domain`` or ``allow-loopback-port``) cannot apply to
    ``mode`` with ``network`` (None: it can; see the notes above)."""
    if mode is Mode.USER:
        return None
    option = Ref(Option(what))  # typed: each face names it (base/message.py)
    if mode is Mode.UNSAFE:
        return message(
            option,
            " needs sandbox or user mode (in unsafe mode Claude runs as you on the host's "
            "whole network: nothing filters it)",
        )
    if network is Network.ALLOWLIST:
        return None
    reach = "everything is reachable" if network is Network.HOST else "nothing is"
    return message(option, f' needs network "allowlist" (network is {str(network)!r}: {reach})')


def proxy_port_problem(mode: Mode, port: int) -> str | None:
    """The sandbox's proxy port inside its namespace cannot also be an exposed loopback
    port; user mode's proxy has an ephemeral port of its own, so any port is fine there."""
    if mode is Mode.SANDBOX and port == SANDBOX_PROXY_PORT:
        return (
            f"{port} is the port of the launcher's egress proxy inside the sandbox; choose another"
        )
    return None


def describe_user_allowances(
    allowed_domains: Sequence[str], loopback_ports: Sequence[int], network_abi: bool | None
) -> list[str]:
    """The plan's, review's and audit's lines for user mode's lists. ``network_abi``:
    they take effect here (:func:`user_lists_apply`: a namespace of the session's own or
    Landlock's TCP rules) (True), not (False), not known (None)."""
    lines = []
    if allowed_domains:
        lines.append(
            "allowed by you (--allow-domain), through the session's proxy: "
            + ", ".join(allowed_domains)
        )
    if loopback_ports:
        lines.append(
            "host loopback ports the agent may connect to (--allow-loopback-port): "
            + ", ".join(str(p) for p in loopback_ports)
        )
    if not lines:
        return []
    if network_abi is False:
        lines.append("they change nothing on this host: " + USER_MODE_BELOW_NETWORK_ABI)
    elif network_abi is None:
        lines.append(
            "they apply where the session gets a network namespace of its own or Landlock "
            "ABI >= 4 confines the network; " + USER_MODE_BELOW_NETWORK_ABI
        )
    return lines


def describe_user_network(
    landlock_abi: int | None,
    landlock_on: bool,
    allowed_domains: Sequence[str],
    loopback_ports: Sequence[int],
    namespace: bool | None = None,
) -> list[str]:
    """The audit's lines for a user-mode agent's network: ``landlock_abi`` as probed
    (None: not probed), ``landlock_on``: ``[user] landlock``, ``namespace``: root may
    give the session a network namespace of its own here (None: not probed)."""
    ports = (
        f"Landlock ABI {landlock_abi} network: TCP connect only to the ports of the "
        "session's egress proxy (Claude Code's endpoints "
        + ", ".join(CLAUDE_ENDPOINTS)
        + ") and of the allowed loopback ports"
    )
    head = "user mode: " + describe_user_wall(landlock_abi, landlock_on, namespace, ports)
    applies = user_lists_apply(landlock_abi, landlock_on, namespace)
    return [head, *describe_user_allowances(allowed_domains, loopback_ports, applies)]
