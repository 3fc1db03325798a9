"""How many workspaces, allowed domains and loopback ports a setup may have.

Stated once, here: the answers (flags, answers file, the TUI) are checked against
these before a plan is made, and the launcher refuses a ``launcher.toml`` over them,
so nothing the apply accepts is refused at every launch.

Why these numbers:

- ``loopback_ports``: the launcher makes every exposed port's listeners (IPv4 and IPv6)
  inside the sandbox's network namespace and passes them, with the proxy's own and the
  probe sockets, as file descriptors in one ``SCM_RIGHTS`` message, which Linux caps at
  253 descriptors (``SCM_MAX_FD``). 64 ports need ``2 * (64 + 1) + 2 = 132``: well
  inside the cap, with room to spare, and far beyond any real project's dev servers.
- ``allowed_domains``: each connection is matched against every pattern and the plan,
  the audit and the launch notice list them all; 256 keeps all of them readable.
- ``workspaces``: each one is a bind mount in the sandbox and an ACL walk at apply and
  audit; 64 keeps both quick and is more than any one agent needs.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_LOOPBACK_PORTS = 64
MAX_ALLOWED_DOMAINS = 256
MAX_WORKSPACES = 64

# the key (answers.toml, and launcher.toml under [sandbox]) -> its maximum
LIST_MAXIMA: dict[str, int] = {
    "workspaces": MAX_WORKSPACES,
    "allowed_domains": MAX_ALLOWED_DOMAINS,
    "loopback_ports": MAX_LOOPBACK_PORTS,
}


def over_maximum(key: str, items: Sequence[object]) -> str | None:
    """Why the list ``items`` of ``key`` (a :data:`LIST_MAXIMA` key) is too long, or None.
    Repeated items count once, as they are used."""
    try:
        count = len(dict.fromkeys(items))
    except TypeError:  # unhashable items: the type check that follows names them
        count = len(items)
    maximum = LIST_MAXIMA[key]
    if count <= maximum:
        return None
    return f"{count} given, at most {maximum} are supported"
