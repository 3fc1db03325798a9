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

The grammar of the allowed patterns is :mod:`sandbox_setup.policy.domains`; what the
operator reads about the network choices (the plan's, audit's and launcher's lines, the
warnings and the problems of a choice) is :mod:`sandbox_setup.policy.network_words`.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sandbox_setup.base import remedies
from sandbox_setup.base.errors import InputError
from sandbox_setup.base.netwall import UserNetworkWall
from sandbox_setup.policy.addresses import (
    RULE_ORDER,
    UNEXEMPTABLE,
    IPAddress,
    as_address,
    canonical_address,
    parse_address,
    refusal_reason,
)
from sandbox_setup.policy.domains import (
    DomainPattern,
    host_port,
    normalize_host,
    parse_domain_pattern,
    pattern_reach,
    plausible_host,
)

__all__ = [
    "CLAUDE_ENDPOINTS",
    "REFUSED_PREFIX",
    "SANDBOX_PROXY_PORT",
    "Decision",
    "EgressPolicy",
    "inner_proxy_port",
    "refusal_remedy",
    "user_network_wall",
    "user_proxy_port",
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
        where = host_port(name, port)
        if not name or len(name) > 253 or not plausible_host(name):
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
        where = host_port(name, port)
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
    if pattern.address is not None or pattern_reach(pattern) is not None:
        return ""
    return f"; to allow it: {remedies.allow_domain(where)}"


def refusal_remedy(host: str, port: int, rule: str, root: str = "/") -> str | None:
    """The command that would allow a refused destination, or None. Only for a name the
    proxy refused as not on the allowlist; never for an IP address, a name refused for
    where it resolves (loopback, metadata, private ranges), nor a name that reaches this
    host or its cloud's metadata service without resolving
    (:func:`~sandbox_setup.policy.domains.pattern_reach`)."""
    if rule != "not allowlisted":
        return None
    name = normalize_host(host)
    if parse_address(name) is not None:
        return None
    try:
        pattern = parse_domain_pattern(host_port(name, port))
    except InputError:
        return None
    if pattern.address is not None or pattern_reach(pattern) is not None:
        return None
    return remedies.allow_domain(str(pattern), root)


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
