"""Whether an existing account may become the agent user (DESIGN.md invariant 5).

The audit's own rules (sudoers, password, admin groups), run before an apply
instead of after it, so a plan never hands Claude Code an account that can become
root or be logged into.
"""

from __future__ import annotations

from wizard.base.accounts import Account
from wizard.base.errors import RefusedError
from wizard.base.paths import Layout
from wizard.configure import users

# Membership in these groups is a way to root (sudo's defaults, su's pam_wheel).
_ADMIN_GROUPS = frozenset({"root", "sudo", "wheel", "admin"})


def check_existing_agent(layout: Layout, agent: Account) -> None:
    """An existing account becomes the agent only if it cannot become root and cannot
    be logged into (DESIGN.md invariant 5): the audit's own rules, run before the
    apply instead of after it. Refused (exit 3) with what was found and the fix."""
    from wizard.audit.model import Severity
    from wizard.audit.rules import find_sudoers_rules, judge_password, judge_sudoers
    from wizard.audit.safety import agent_groups, sudoers_files

    groups = agent_groups(layout, agent)
    found = judge_sudoers(
        find_sudoers_rules(sudoers_files(layout), agent.name, agent.uid, groups), agent.name
    )
    shadow = layout.real("/etc/shadow")
    prefix = None if layout.live else str(layout.root)
    try:
        shadow_text: str | None = shadow.read_text(encoding="utf-8", errors="replace")
    except OSError:
        shadow_text = None
    found += [
        f
        for f in judge_password(shadow_text, agent.name, str(shadow), prefix)
        if f.severity >= Severity.HIGH  # a usable or empty password, not "cannot read"
    ]
    problems = [f"{f.summary} (fix: {f.remedy})" for f in found]
    admin = sorted(name for name, gid in groups.items() if name in _ADMIN_GROUPS or gid == 0)
    problems += [
        f"the agent {agent.name} is in group {name} (fix: "
        f"{' '.join(users.remove_from_group_argv(layout, agent.name, name))})"
        for name in admin
    ]
    if problems:
        raise RefusedError(
            f"the existing account {agent.name} cannot be the agent user: "
            + "; ".join(problems)
            + "; or pick a new --agent-user (sandbox-setup creates it locked)"
        )
