"""The operator's choices, as ``StrEnum``s: one list of valid values each.

Answers, the launcher config, the CLI, the plan, the audit and the TUI all take
their choices from here, so a value is spelled, listed and validated once.
"""

from __future__ import annotations

import enum


class Choice(enum.StrEnum):
    """A choice the operator reads: its repr is its quoted value (``'allowlist'``), so a
    message that quotes one with ``!r`` never shows ``<Network.ALLOWLIST: 'allowlist'>``."""

    def __repr__(self) -> str:
        return repr(self.value)


class Mode(Choice):
    """The three honest paths (docs/design.md)."""

    SANDBOX = "sandbox"
    USER = "user"
    UNSAFE = "unsafe"


class InnerSandbox(Choice):
    """Claude Code's own Bash sandbox inside the launcher's: its strength, or off."""

    STRONG = "strong"  # its own fresh /proc
    WEAK = "weak"  # enableWeakerNestedSandbox: the outer /proc bound in
    OFF = "off"


class Network(Choice):
    """What the sandbox's network is (sandbox mode)."""

    ALLOWLIST = "allowlist"  # its own namespace; egress only through the launcher's proxy
    HOST = "host"  # the host's network namespace, shared
    NONE = "none"  # loopback only, nothing out


class BaseUrlPort(Choice):
    """``[sandbox] base_url_port``: does a loopback ``ANTHROPIC_BASE_URL`` in the launch
    environment expose its port for that session (network allowlist)."""

    AUTO = "auto"  # yes: that one port, for that session, named in the launch line
    OFF = "off"  # no: only the configured loopback_ports


class ApiGateway(Choice):
    """``[sandbox] api_gateway``: does the session's egress side keep the operator's API
    key or token (docs/design.md invariant 17), Claude getting a placeholder and a base URL
    of the session's gateway, where the session has a network namespace of its own."""

    AUTO = "auto"  # yes, wherever the session has a namespace to listen in
    OFF = "off"  # no: the key is passed to Claude as it is


class SettingsScope(Choice):
    """Where Claude Code's settings are written."""

    USER = "user"  # ~/.claude/settings.json of the user that runs Claude
    MANAGED = "managed"  # /etc/claude-code/managed-settings.json (root-owned)


# What each scope reaches, in one place: the CLI help, the plan and the wizard's scope
# choice say it (managed settings bind every user's Claude on the host, not only the agent's).
EVERY_USER = "every user's Claude Code on this host"
SCOPE_REACH: dict[str, str] = {
    "managed": f"root-owned, out of the agent's reach; applies to {EVERY_USER}",
    "user": "only the settings of the user that runs Claude (in sandbox and user modes the "
    "agent owns that file and could rewrite it)",
}


def values(choice: type[enum.StrEnum]) -> tuple[str, ...]:
    """The valid spellings of ``choice``, in order (for messages and argparse)."""
    return tuple(member.value for member in choice)
