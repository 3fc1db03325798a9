"""Which addresses the egress proxy never connects to, and why: pure functions.

:func:`refusal_reason` names the rule for one address; :mod:`sandbox_setup.policy.network`
applies it to every address a destination resolved to. The floor is Claude's
sandbox-runtime (``resolved-address-guard.ts``: loopback, unspecified, link-local,
multicast, broadcast, cloud metadata and this host's own addresses); invariant 7 adds
the private ranges, so the agent reaches no intranet address the operator did not name.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def canonical_address(address: IPAddress) -> IPAddress:
    """The address a socket really reaches: an IPv4-mapped IPv6 address is its IPv4 one."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.scope_id:
            return ipaddress.IPv6Address(address.compressed.split("%", 1)[0])
    return address


def parse_address(text: str) -> IPAddress | None:
    """An IP literal (brackets allowed for IPv6), canonical; None when ``text`` is not one."""
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return canonical_address(ipaddress.ip_address(bare))
    except ValueError:
        return None


# Well-known cloud instance-metadata addresses (credentials live there), named by their
# own rule so a refusal says so even where a broader rule would catch them too.
# The floor is sandbox-runtime's resolved-address guard (CLOUD_METADATA_ADDRESSES).
CLOUD_METADATA = tuple(
    ipaddress.ip_network(n)
    for n in (
        "169.254.169.254/32",  # AWS, GCP, Azure, OCI, DigitalOcean, OpenStack, ...
        "169.254.170.2/32",  # AWS ECS task metadata
        "169.254.169.253/32",  # AWS Route 53 resolver
        "100.100.100.200/32",  # Alibaba Cloud
        "168.63.129.16/32",  # Azure WireServer / host agent
        "192.0.0.192/32",  # Oracle Cloud Infrastructure Classic
        "fd00:ec2::/32",  # AWS IPv6 services: IMDS fd00:ec2::254, EKS pod identity, DNS
        "fd20:ce::254/128",  # Google Cloud, IPv6-only instances
        "fd00:c1::a9fe:a9fe/128",  # Oracle Cloud IPv6
        "fd00:42::42/128",  # Scaleway IPv6
        "fd00:a9fe:a9fe::1/128",  # Akamai / Linode IPv6
        "fd00:100::100:200/128",  # Alibaba Cloud IPv6
    )
)


def _nets(*names: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(n) for n in names)


# (rule, ranges), in the order a refusal names them. Host addresses come between
# link-local and private (see refusal_reason). Documentation ranges (TEST-NET-1..3,
# 2001:db8::/32) are not here: they are public in form, and the tests use them as the
# "outside world".
_ADDRESS_RULES: tuple[tuple[str, tuple[Network, ...]], ...] = (
    ("unspecified", _nets("0.0.0.0/8", "::/128")),
    ("loopback", _nets("127.0.0.0/8", "::1/128")),
    ("cloud metadata", CLOUD_METADATA),
    ("link-local", _nets("169.254.0.0/16", "fe80::/10")),
)
_LATER_RULES: tuple[tuple[str, tuple[Network, ...]], ...] = (
    (
        "private",
        _nets(
            "10.0.0.0/8",
            "172.16.0.0/12",
            "192.168.0.0/16",
            "100.64.0.0/10",
            "fc00::/7",
            "fec0::/10",
            "64:ff9b:1::/48",
        ),
    ),
    ("multicast", _nets("224.0.0.0/4", "ff00::/8")),
    ("broadcast", _nets("255.255.255.255/32")),
    ("reserved", _nets("240.0.0.0/4", "192.0.0.0/24", "198.18.0.0/15")),
)
RULE_ORDER = (
    *(rule for rule, _ in _ADDRESS_RULES),
    "host address",
    *(rule for rule, _ in _LATER_RULES),
)
# Rules an exact allowance cannot lift: these addresses are this host itself.
UNEXEMPTABLE = frozenset({"unspecified"})


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one delivers to: mapped, compatible, NAT64 (64:ff9b::/96), 6to4."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if value >> 32 == 0x0064_FF9B_0000_0000_0000_0000:  # NAT64 well-known prefix /96
        return ipaddress.IPv4Address(value & 0xFFFF_FFFF)
    if value >> 32 == 0 and value > 1:  # IPv4-compatible ::a.b.c.d (deprecated, still routed)
        return ipaddress.IPv4Address(value)
    if value >> 32 == 0xFFFF_0000:  # IPv4-translated ::ffff:0:a.b.c.d
        return ipaddress.IPv4Address(value & 0xFFFF_FFFF)
    return None


def _classify(address: IPAddress, host_addresses: frozenset[IPAddress]) -> str | None:
    for rule, nets in _ADDRESS_RULES:
        if any(address in net for net in nets if net.version == address.version):
            return rule
    if address in host_addresses:
        return "host address"
    for rule, nets in _LATER_RULES:
        if any(address in net for net in nets if net.version == address.version):
            return rule
    return None


def refusal_reason(
    ip: IPAddress | str, host_addresses: Iterable[IPAddress | str] = ()
) -> str | None:
    """The rule that refuses connecting to ``ip``, or None when it may be reached.

    Rules, in the order a refusal names them: unspecified, loopback, cloud metadata,
    link-local, host address (any address of this host's interfaces: a service bound
    to 0.0.0.0 answers there as on loopback), private (RFC 1918, CGNAT 100.64/10, ULA
    fc00::/7, site-local, local-use NAT64), multicast, broadcast, reserved. An IPv6
    address carrying an IPv4 one (``::ffff:127.0.0.1``, NAT64, 6to4, IPv4-compatible)
    is judged as that IPv4 address too, and the refusal says so.
    """
    address = ip if not isinstance(ip, str) else ipaddress.ip_address(ip)
    address = canonical_address(address)
    hosts = frozenset(canonical_address(as_address(a)) for a in host_addresses)
    rule = _classify(address, hosts)
    if rule is not None:
        return rule
    inner = embedded_ipv4(address)
    if inner is not None:
        inner_rule = _classify(inner, hosts)
        if inner_rule is not None:
            return f"{inner_rule}, as {inner} inside an IPv6 address"
    return None


def as_address(value: IPAddress | str) -> IPAddress:
    return value if not isinstance(value, str) else ipaddress.ip_address(value)
