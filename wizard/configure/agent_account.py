"""Whether an existing account may become the agent user (DESIGN.md invariant 5).

The rules of :mod:`wizard.policy.accounts` and :mod:`wizard.policy.sudoers` (the
audit judges with the same ones), run before an apply instead of after it, so a
plan never hands Claude Code an account that can become root or be logged into.
"""

from __future__ import annotations

from wizard.base.account_files import agent_groups, read_text_or_none, sudoers_files
from wizard.base.accounts import Account
from wizard.base.errors import RefusedError
from wizard.base.paths import Layout
from wizard.configure import users
from wizard.policy.accounts import PasswordState, admin_memberships, password_state
from wizard.policy.sudoers import find_sudoers_rules


def check_existing_agent(layout: Layout, agent: Account) -> None:
    """An existing account becomes the agent only if it cannot become root and cannot
    be logged into. Refused (exit 3) with what was found and the fix."""
    groups = agent_groups(layout, agent)
    problems = []
    for hit in find_sudoers_rules(sudoers_files(layout), agent.name, agent.uid, groups):
        nopasswd = " with NOPASSWD" if hit.nopasswd else ""
        problems.append(
            f"sudoers rule for the agent {agent.name}{nopasswd}: {hit.path}:{hit.line}: "
            f"{hit.text} (fix: visudo -f {hit.path}  # delete line {hit.line})"
        )
    shadow = layout.real("/etc/shadow")
    state = password_state(read_text_or_none(shadow), agent.name)
    if state in (PasswordState.EMPTY, PasswordState.USABLE):  # not "cannot read"
        prefix = "" if layout.live else f"--prefix {layout.root} "
        what = "an EMPTY" if state is PasswordState.EMPTY else "a usable"
        problems.append(
            f"the agent {agent.name} has {what} password in {shadow} "
            f"(fix: usermod {prefix}--lock {agent.name})"
        )
    problems += [
        f"the agent {agent.name} is in group {name} (fix: "
        f"{' '.join(users.remove_from_group_argv(layout, agent.name, name))})"
        for name in admin_memberships(groups)
    ]
    if problems:
        raise RefusedError(
            f"the existing account {agent.name} cannot be the agent user: "
            + "; ".join(problems)
            + "; or pick a new --agent-user (sandbox-setup creates it locked)"
        )
