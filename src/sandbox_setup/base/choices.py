"""The operator's choices, as ``StrEnum``s: one list of valid values each.

Answers, the launcher config, the CLI, the plan, the audit and the TUI all take
their choices from here, so a value is spelled, listed and validated once.
"""

from __future__ import annotations

import enum


class Mode(enum.StrEnum):
    """The three honest paths (DESIGN.md)."""

    SANDBOX = "sandbox"
    USER = "user"
    UNSAFE = "unsafe"


class InnerSandbox(enum.StrEnum):
    """Claude Code's own Bash sandbox inside the launcher's: its strength, or off."""

    STRONG = "strong"  # its own fresh /proc
    WEAK = "weak"  # enableWeakerNestedSandbox: the outer /proc bound in
    OFF = "off"


class Network(enum.StrEnum):
    """What the sandbox's network is (sandbox mode)."""

    ALLOWLIST = "allowlist"  # its own namespace; egress only through the launcher's proxy
    HOST = "host"  # the host's network namespace, shared
    NONE = "none"  # loopback only, nothing out


class BaseUrlPort(enum.StrEnum):
    """``[sandbox] base_url_port``: does a loopback ``ANTHROPIC_BASE_URL`` in the launch
    environment expose its port for that session (network allowlist)."""

    AUTO = "auto"  # yes: that one port, for that session, named in the launch line
    OFF = "off"  # no: only the configured loopback_ports


class SettingsScope(enum.StrEnum):
    """Where Claude Code's settings are written."""

    USER = "user"  # ~/.claude/settings.json of the user that runs Claude
    MANAGED = "managed"  # /etc/claude-code/managed-settings.json (root-owned)


def values(choice: type[enum.StrEnum]) -> tuple[str, ...]:
    """The valid spellings of ``choice``, in order (for messages and argparse)."""
    return tuple(member.value for member in choice)
