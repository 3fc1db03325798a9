"""User mode's Landlock walls: which ones apply on a host, and what they allow (pure).

One rule decides the shape (docs/design.md, launcher.toml's ``[user] landlock``): a
process whose Landlock ruleset handles filesystem access may not ``mount(2)`` or
``pivot_root(2)``, nor may its children, so a filesystem ruleset breaks Claude Code's
own bwrap sandbox ("Failed to make / slave"). Hence:

* **network** (ABI >= 4): TCP connect only to the session's egress proxy (and the
  loopback ports the operator exposed, and a loopback ``ANTHROPIC_BASE_URL`` that was
  passed); bind nothing. Everywhere it exists: it does not hinder bwrap. One exception
  (:func:`bridge_ports`): in the session's own network namespace with Claude's inner
  sandbox on, bind and connect also on the two ports of that sandbox's bridge.
* **scope** (ABI >= 6): abstract unix sockets and signals stay inside the domain.
  Everywhere it exists.
* **files** (ABI >= 1): only where Claude's inner sandbox is off (``inner_sandbox =
  "off"``, what the plan writes where user namespaces are refused): readable the system
  trees and Claude's install, writable the workspaces, the agent's home and temp; other
  homes, other ``/srv`` projects, ``/root``, ``/var/log`` are then unreachable. Where
  the inner sandbox is on it confines files itself, and the walls say so.

What Landlock cannot do (docs/threat-model.md): make ``.git/hooks`` read-only inside a
writable workspace (rules only add access), filter UDP or DNS, hide a path's existence
or a subpath of a readable tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from sandbox_setup.base.landlock import NETWORK_ABI, SCOPE_ABI
from sandbox_setup.base.netwall import describe_user_wall

# Readable (and executable): what programs need. /opt is not here: other software there
# is not the agent's; Claude's own install is added wherever it is.
SYSTEM_READABLE = (
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    "/proc", "/sys",
)  # fmt: skip
# Writable besides the workspaces and the home: the shared temp directories (Landlock
# cannot give the agent only its own files there; their modes still do), and the
# devices a shell and a terminal program open.
TEMP_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
DEVICES = (
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
    "/dev/ptmx", "/dev/pts",
)  # fmt: skip
# Claude Code's Bash sandbox (sandbox-runtime; measured with 2.1.197 and 2.1.332) runs
# each command in a network namespace of its own and bridges it to the proxy with socat
# listening there on these fixed ports: HTTP (``TCP-LISTEN:3128``: the command's
# HTTP(S)_PROXY and ALL_PROXY) and SOCKS (``:1080``: FTP_PROXY, RSYNC_PROXY);
# docs/claude-code-behaviour.md.
CLAUDE_BRIDGE_PORTS = (3128, 1080)


def bridge_ports(namespace: bool, inner_sandbox_on: bool) -> tuple[int, ...]:
    """The TCP ports a user-mode session's Landlock domain lets its processes bind and
    connect to besides its proxy's and the exposed ones: Claude's Bash sandbox's bridge
    (:data:`CLAUDE_BRIDGE_PORTS`), only where the session runs in a network namespace of
    its own (``namespace``) and Claude's inner sandbox is on; else none.

    Landlock's TCP rules know ports, not addresses or namespaces, and a domain's rules
    hold in every namespace its processes enter: without these, the bridge's listener in
    Claude's inner namespace is refused (EACCES) and a sandboxed command has no network
    at all, the allowlist included. Why that is safe with a namespace: every address a
    process of the session can bind is in the session's namespace or one made inside it
    (loopback only, no route out), so a listener there serves the session's own
    processes and nothing outside it; and what a connect to these ports reaches is
    walled by the namespace (in the session's: the listeners the launcher made there,
    the proxy and the exposed ports, and the session's own; in Claude's: the bridge).
    Without a namespace of its own (Landlock's ports the only wall) a bind would listen
    on the host's network, and a connect reach any of the host's services on these
    ports: no bridge ports then, and Claude's Bash sandbox has no network there (the
    plan says "no TCP bind"). The launch's gate refuses a bind rule without a namespace
    (:class:`sandbox_setup.launcher.user.landlock_gate.LandlockGate`)."""
    return CLAUDE_BRIDGE_PORTS if namespace and inner_sandbox_on else ()


@dataclass(frozen=True, slots=True)
class Walls:
    """Which Landlock walls a user-mode session gets here, and why not the others."""

    abi: int
    files: bool
    network: bool
    scope: bool

    @property
    def any(self) -> bool:
        return self.files or self.network or self.scope

    def describe(
        self, inner_sandbox_on: bool, namespace: bool | None = None, landlock_on: bool = True
    ) -> list[str]:
        """The plan's and ``--dry-run``'s lines: which wall confines what here.
        ``namespace``: root may give the session a network namespace of its own here
        (None: not known, e.g. not probed); ``landlock_on``: ``[user] landlock``."""
        bridge = bridge_ports(bool(namespace), inner_sandbox_on)
        ports = (
            f"Landlock ABI {self.abi}: TCP connect only to the ports of the "
            "session's egress proxy (the allowlist) and of the exposed loopback ports; "
            + (
                "TCP bind and connect also on "
                + " and ".join(map(str, bridge))
                + " only, for the bridge Claude Code's Bash sandbox listens on inside "
                "its own network namespace (a listener in the session's namespace "
                "serves only the session)"
                if bridge
                else "no TCP bind"
            )
        )
        network = "network: " + describe_user_wall(self.abi, landlock_on, namespace, ports)
        if not landlock_on:
            return ["Landlock: off ([user] landlock = false): files only by the account's "
                    "modes", network]  # fmt: skip
        if self.abi < 1:
            return ["Landlock: not available on this kernel: files only by the account's "
                    "modes", network]  # fmt: skip
        lines = []
        if self.files:
            lines.append(
                f"Landlock ABI {self.abi} files: readable only the system trees, Claude's "
                "install and what [user] readable adds; writable only the workspaces, the "
                "agent's home, /tmp, /var/tmp, /dev/shm (other homes, /srv projects, /root, "
                "/var/log are unreadable)"
            )
        elif inner_sandbox_on:
            lines.append(
                "files: Claude Code's own bwrap sandbox confines its Bash commands; Landlock "
                "has no file rules here (they would forbid the mounts that sandbox needs), "
                "so Claude's own process reads what the agent account may"
            )
        else:
            lines.append("files: no Landlock file rules (turned off): the account's modes only")
        lines.append(network)
        if self.scope:
            lines.append(
                f"Landlock ABI {self.abi} scope: no signal to, and no abstract unix socket of, "
                "a process outside the session"
            )
        else:
            lines.append(f"scope: not limited (Landlock ABI {self.abi} < {SCOPE_ABI})")
        lines.append(
            "Landlock cannot: make .git/hooks read-only inside a writable workspace (the "
            "end-of-session scan covers it), hide a subpath of a readable tree or that a "
            "path exists, filter UDP or DNS, tell one address from another"
        )
        return lines


def user_walls(abi: int, enabled: bool, inner_sandbox_on: bool) -> Walls:
    """The walls for a user-mode session: ``enabled`` is ``[user] landlock``."""
    if not enabled or abi < 1:
        return Walls(abi, False, False, False)
    return Walls(
        abi,
        files=not inner_sandbox_on,
        network=abi >= NETWORK_ABI,
        scope=abi >= SCOPE_ABI,
    )


def claude_install_dirs(claude: str, real: str) -> tuple[str, ...]:
    """Claude's install, wherever it is: the binary's real directory and, for an npm
    install (``.../node_modules/@anthropic-ai/claude-code/cli.js``), the tree that
    holds the outermost ``node_modules`` (its ``.bin`` link and its dependencies).
    ``real``: where ``claude``'s symlinks lead."""
    found = [str(PurePosixPath(claude).parent), str(PurePosixPath(real).parent)]
    parts = PurePosixPath(real).parts
    if "node_modules" in parts:
        found.append(str(PurePosixPath(*parts[: parts.index("node_modules")])))
    return tuple(dict.fromkeys(found))


def user_trees(
    agent_home: PurePosixPath | str,
    workspaces: Sequence[PurePosixPath | str],
    claude: str,
    claude_real: str,
    readable: Sequence[str] = (),
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(readable, writable)`` paths of the files wall; ``readable``: what the operator
    added (``[user] readable``)."""
    read = [*SYSTEM_READABLE, *claude_install_dirs(claude, claude_real), *readable]
    write = [*map(str, workspaces), str(agent_home), *TEMP_WRITABLE, *DEVICES]
    return tuple(dict.fromkeys(read)), tuple(dict.fromkeys(write))


__all__ = [
    "CLAUDE_BRIDGE_PORTS",
    "Walls",
    "bridge_ports",
    "claude_install_dirs",
    "user_trees",
    "user_walls",
]
