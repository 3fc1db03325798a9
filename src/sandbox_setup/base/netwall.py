"""The words and the typed value for a user-mode session's network wall (DESIGN.md
invariant 16): one place, so the checks, the plan, the launcher and the audit say the
same. Which wall a host gives is decided by
:func:`sandbox_setup.policy.network.user_network_wall`."""

from __future__ import annotations

import enum


class UserNetworkWall(enum.StrEnum):
    """Which network wall a user-mode session gets on a host (DESIGN.md invariant 16)."""

    # A network namespace of its own (root may create one): loopback only, the session's
    # proxy listening inside, the exposed loopback ports forwarded in; Landlock's ports
    # (ABI >= 4) as the second wall.
    NAMESPACE = "namespace"
    # Landlock's TCP ports only (root cannot create a network namespace here).
    PORTS = "ports"
    # No wall: the host's network (no Landlock ABI >= 4, or [user] landlock = false).
    HOST = "host"


PORTS_ONLY = "ports only: any address on these ports is reachable; UDP is not filtered"
NAMESPACE_WALL = (
    "a network namespace of its own: loopback only, the session's egress proxy listening "
    "there, the exposed loopback ports forwarded in; TCP and UDP reach nothing else "
    "(Landlock's ports as a second wall)"
)
