"""The words and the typed value for a user-mode session's network wall (docs/design.md
invariant 16): one place, so the checks, the plan, the launcher and the audit say the
same. Which wall a launch gives is decided by
:func:`sandbox_setup.policy.network.user_network_wall`; :func:`describe_user_wall` says
the wall from what the checks know (the checks' layer cannot import the policy's)."""

from __future__ import annotations

import enum

from sandbox_setup.base.landlock import NETWORK_ABI


class UserNetworkWall(enum.StrEnum):
    """Which network wall a user-mode session gets on a host (docs/design.md invariant 16)."""

    # A network namespace of its own (root may create one), whatever the Landlock ABI
    # and whether or not [user] landlock is on: loopback only, the session's proxy
    # listening inside, the exposed loopback ports forwarded in; Landlock's ports
    # (ABI >= 4, [user] landlock on) as the second wall.
    NAMESPACE = "namespace"
    # Landlock's TCP ports only (root cannot create a network namespace here).
    PORTS = "ports"
    # No wall: the host's network (no namespace for root, and no Landlock ABI >= 4 or
    # [user] landlock = false).
    HOST = "host"


PORTS_ONLY = "ports only: any address on these ports is reachable; UDP is not filtered"
NAMESPACE_WALL = (
    "a network namespace of its own: loopback only, the session's egress proxy listening "
    "there, the exposed loopback ports forwarded in; TCP and UDP reach nothing else"
)
SECOND_WALL = "Landlock's TCP ports the second wall"
NO_SECOND_WALL = "no second wall: Landlock has no TCP rules here or is off"
NO_WALL = (
    "none: the host's network (every address and port: loopback services, the cloud "
    "metadata address; UDP too)"
)


def describe_user_wall(
    landlock_abi: int | None, landlock_on: bool, namespace: bool | None, ports: str = ""
) -> str:
    """User mode's network wall in words, from what is known: ``landlock_abi`` as probed
    (None: not probed), ``landlock_on``: ``[user] landlock``, ``namespace``: root may
    make a network namespace here (None: not probed). ``ports``: the words for
    Landlock's network rules (default: a short form). Never a wall that is not there
    (docs/design.md invariant 16)."""
    landlock: bool | None = landlock_on and (
        None if landlock_abi is None else landlock_abi >= NETWORK_ABI
    )
    ports = ports or "Landlock's TCP ports (the session's proxy and the exposed loopback ports)"
    if landlock is False:
        why = (
            "[user] landlock = false"
            if not landlock_on
            else f"Landlock ABI {landlock_abi} < {NETWORK_ABI} has no TCP rules"
        )
        fallback = f"{NO_WALL} ({why})"
    elif landlock is None:
        fallback = (
            f"{ports}; {PORTS_ONLY}, where the launch finds Landlock ABI >= {NETWORK_ABI} "
            f"(landlock.abi not probed); else {NO_WALL}"
        )
    else:
        fallback = f"{ports}; {PORTS_ONLY}"
    if namespace:
        if landlock is None:
            second = f"{ports} as a second wall where Landlock ABI >= {NETWORK_ABI}"
        else:
            second = f"{ports} as the second wall" if landlock else NO_SECOND_WALL
        return f"{NAMESPACE_WALL}; {second}"
    if namespace is None:
        return (
            f"{NAMESPACE_WALL}, where root can create a network namespace (probed at each "
            f"launch; net.user_wall not probed); otherwise {fallback}"
        )
    return f"{fallback} (root cannot create a network namespace here)"


def user_lists_apply(
    landlock_abi: int | None, landlock_on: bool, namespace: bool | None
) -> bool | None:
    """The operator's lists (allowed domains, loopback ports) take effect in user mode
    here: a namespace or Landlock's network wall (None: not known)."""
    if namespace:
        return True
    landlock = landlock_on and (None if landlock_abi is None else landlock_abi >= NETWORK_ABI)
    if landlock is True:
        return True
    return None if (namespace is None or landlock is None) else False
