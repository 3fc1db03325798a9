"""``audit.safety.settings_unreadable``: can the agent read the Claude settings?

Claude Code runs as the agent and reads the settings file sandbox-setup wrote
(managed scope: ``/etc/claude-code/managed-settings.json``; user scope: the agent's
``~/.claude/settings.json``). A file or a directory on its way that the agent
cannot read or search makes Claude start silently without the sandbox settings
and deny rules. The check follows the target path inside the root (symlinks
resolved there) and judges each component with :func:`sandbox_setup.policy.access.can_access`
against the agent's uid and groups from the tree's own ``/etc/passwd`` and
``/etc/group``, so it also holds under ``--root``, where the agent is not a host user.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.account_files import agent_groups
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import pasted_word
from sandbox_setup.configure.answers import Answers
from sandbox_setup.policy.access import EXECUTE, READ, can_access, parse_acl

FINDING = "audit.safety.settings_unreadable"


def settings_path(layout: Layout, answers: Answers, agent: Account) -> PurePosixPath:
    """The settings file Claude reads as the agent, in the scope the answers chose."""
    if answers.settings_scope == "user":
        return Layout.user_settings(agent.home)
    return layout.managed_settings


def _allows(real: Path, agent: Account, gids: set[int], want: int) -> bool | None:
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return None
    try:
        acl = parse_acl(os.getxattr(real, "system.posix_acl_access"))
    except OSError:
        acl = []
    return can_access(
        agent.uid, gids, owner=st.st_uid, group=st.st_gid, mode=st.st_mode, acl=acl, want=want
    )


def settings_readable_findings(
    layout: Layout, answers: Answers, agent: Account | None
) -> list[AuditFinding]:
    """One finding when the agent cannot read the settings file (see the module doc)."""
    if agent is None or agent.uid == 0 or answers.settings_scope not in ("user", "managed"):
        return []
    target = layout.resolve(settings_path(layout, answers, agent))
    gids = set(agent_groups(layout, agent).values())
    steps = [(parent, EXECUTE) for parent in reversed(target.parents)] + [(target, READ)]
    for path, want in steps:
        real = layout.real(path)
        allowed = _allows(real, agent, gids, want)
        if allowed is None:
            return []  # missing: the drift findings say so
        if allowed:
            continue
        st = os.stat(real)
        what = "search the directory" if want == EXECUTE else "read"
        bits = "o+x" if want == EXECUTE else "a+r"
        return [
            AuditFinding(
                id=FINDING,
                severity=Severity.HIGH,
                summary=f"the agent {agent.name} cannot {what} {real} (mode "
                f"{stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}): Claude Code, run "
                f"as the agent, cannot read the settings {layout.real(target)}",
                detail="Claude Code then starts without the sandbox settings and the deny "
                "rules that sandbox-setup wrote, and says nothing about it.",
                remedy=f"chmod {bits} {pasted_word(str(real))}",
            )
        ]
    return []
