"""What the network choices mean, in words: the lines a plan, a review, ``--dry-run``, an
audit and the launcher show, the plan's warnings for an allowance, and why a choice cannot
be a mode's.

The rules these word are :mod:`sandbox_setup.policy.network` (the engine) and
:mod:`sandbox_setup.policy.domains` (the patterns); nothing here decides a connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
from sandbox_setup.policy.domains import DomainPattern, parse_domain_pattern, pattern_reach
from sandbox_setup.policy.network import CLAUDE_ENDPOINTS, SANDBOX_PROXY_PORT

__all__ = [
    "ALLOWLIST_SUMMARY",
    "HOST_EXPOSURE",
    "NONE_EXPOSURE",
    "REFUSAL_WORDS",
    "USER_MODE_BELOW_NETWORK_ABI",
    "USER_MODE_NETWORK",
    "allowance_warning",
    "allowance_warnings",
    "allowances_problem",
    "describe_network",
    "describe_user_allowances",
    "describe_user_network",
    "network_choice_problem",
    "network_exposure",
    "proxy_port_problem",
    "refusal_words",
    "user_wall_phrase",
]

# Why an allowance of each kind (sandbox_setup.policy.domains.REACHES) deserves a word in
# the plan.
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
    rule = pattern_reach(pattern)
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
        lines.append(message("allowed by you (", DOMAINS, "): " + ", ".join(allowed_domains)))
    if loopback_ports:
        lines.append(
            message(
                "host loopback ports seen inside at 127.0.0.1 (",
                PORTS,
                "): " + ", ".join(str(p) for p in loopback_ports),
            )
        )
    return lines


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


# The options these lines name (typed: each face names them, base/message.py).
DOMAINS = Ref(Option.ALLOW_DOMAIN)
PORTS = Ref(Option.ALLOW_LOOPBACK_PORT)
USER_MODE_NETWORK = message(
    'user mode\'s config says network "host"; where root can create a network namespace '
    "the session runs in one of its own (its egress proxy inside: Claude Code's endpoints "
    "and ",
    DOMAINS,
    "; the ",
    PORTS,
    " ports forwarded in), and where Landlock ABI >= 4 confines it ([user] landlock, on by "
    "default) the agent connects only to that proxy and those ports, without any ",
    Ref(Option.NETWORK),
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
        return message(f"network {str(network)!r} needs sandbox mode; ", USER_MODE_NETWORK)
    return (
        f"network {str(network)!r} needs sandbox mode; in {mode} mode the agent shares the "
        'host\'s network (network = "host")'
    )


def allowances_problem(mode: Mode, network: Network, what: str) -> str | None:
    """Why ``--what`` (``allow-domain`` or ``allow-loopback-port``) cannot apply to
    ``mode`` with ``network`` (None: it can; see the notes in
    :mod:`sandbox_setup.policy.network`)."""
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
    lines: list[str] = []
    if allowed_domains:
        lines.append(
            message(
                "allowed by you (",
                DOMAINS,
                "), through the session's proxy: " + ", ".join(allowed_domains),
            )
        )
    if loopback_ports:
        lines.append(
            message(
                "host loopback ports the agent may connect to (",
                PORTS,
                "): " + ", ".join(str(p) for p in loopback_ports),
            )
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
