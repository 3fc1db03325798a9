"""Which accounts may be the agent (DESIGN.md invariants 5 and 9), as pure rules.

The plan refuses an existing account that breaks one (exit 3, naming the rule
and the fix) and the audit reports one that breaks one later; both judge the
facts :mod:`wizard.base.account_files` gathers.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

# Membership in these groups is a way to root (sudo's defaults, su's pam_wheel).
ADMIN_GROUPS = frozenset({"root", "sudo", "wheel", "admin"})


class PasswordState(enum.StrEnum):
    """What the account's shadow entry says about logging in with a password."""

    LOCKED = "locked"  # "!" or "*": no password login
    EMPTY = "empty"  # anyone can log in
    USABLE = "usable"  # a password hash: someone can log in with it
    NO_ENTRY = "no-entry"
    UNREADABLE = "unreadable"


def password_state(shadow_text: str | None, name: str) -> PasswordState:
    """The state of ``name``'s password in the shadow file's text (None: unreadable)."""
    if shadow_text is None:
        return PasswordState.UNREADABLE
    for line in shadow_text.splitlines():
        fields = line.split(":")
        if len(fields) < 2 or fields[0] != name:
            continue
        password = fields[1]
        if password.startswith(("!", "*")):
            return PasswordState.LOCKED
        return PasswordState.EMPTY if password == "" else PasswordState.USABLE
    return PasswordState.NO_ENTRY


def admin_memberships(groups: Mapping[str, int]) -> list[str]:
    """The groups (name -> gid) that are a way to root: an admin group or gid 0."""
    return sorted(name for name, gid in groups.items() if name in ADMIN_GROUPS or gid == 0)
