"""The account steps of a plan: the setup's workspace group, the agent, its groups.

Each setup has a group of its own (:func:`sandbox_setup.policy.accounts.workspace_group`)
that only its agent is in, so a second setup's agent never writes the first one's
workspaces. An agent of an older version is taken out of the legacy shared
``sandbox-ws`` on its next apply (the upgrade), and one this setup created that
still has a login shell gets ``nologin`` (:class:`~sandbox_setup.configure.actions.
SetShell`); the review shows who is in every group a step touches. The setup is
recorded in the ledger (:mod:`sandbox_setup.configure.ledger`) as one more journaled
file.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.message import Act, Option, Ref, message
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.actions import (
    Action,
    AddToGroup,
    CreateGroup,
    CreateUser,
    LeaveGroup,
    SetShell,
    WriteFile,
)
from sandbox_setup.configure.ledger import SetupRecord, ledger_path, render_ledger
from sandbox_setup.policy.accounts import LEGACY_WORKSPACE_GROUP, AccountFacts
from sandbox_setup.policy.login_routes import has_login_shell


def _check_group_is_free(layout: Layout, group: str, agent: str) -> None:
    """An existing group of that name must not let anyone else in already."""
    others = [m for m in users.group_members(group, layout.root) or [] if m != agent]
    if others:
        raise RefusedError(
            message(
                f"group {group}, the workspace group of the agent {agent}, already exists "
                f"with other members ({', '.join(others)}): they would write the agent's "
                f"workspaces. Remove them (gpasswd -d NAME {group}) or ",
                Ref(Option.AGENT_USER, Act.CHOOSE_ANOTHER),
            )
        )


def account_actions(
    layout: Layout,
    agent: str,
    home: PurePosixPath,
    facts: AccountFacts | None,
    group: str | None,
    notes: list[str],
    *,
    reused: bool = False,
) -> list[Action]:
    """Group, user, membership and the legacy group's exit for the agent ``agent``
    (``facts``: the existing account's, None when it is created)."""
    actions: list[Action] = []
    if group is not None:
        _check_group_is_free(layout, group, agent)
        actions.append(CreateGroup(layout, group, why=f"workspace access of {agent} only"))
    groups = (group,) if group is not None else ()
    because = "created by sandbox-setup"
    if facts is not None and not facts.created_by_setup:
        because = message("reused: ", Ref(Option.REUSE_ACCOUNT, Act.GIVEN))
    actions.append(CreateUser(layout, agent, home, groups, existing_because=because))
    if facts is None:
        return actions
    if facts.created_by_setup and has_login_shell(facts.shell) and layout.operator.uid == 0:
        # An older version's agent kept a login shell: this setup's own account, so
        # the apply takes it (a reused account's shell stays its owner's).
        actions.append(SetShell(layout, agent, facts.shell))
    if group is not None:
        actions.append(AddToGroup(layout, agent, group))
    legacy = users.group_members(LEGACY_WORKSPACE_GROUP, layout.root) or []
    if agent in legacy:
        actions.append(LeaveGroup(layout, agent, LEGACY_WORKSPACE_GROUP))
        others = [m for m in legacy if m != agent]
        if others:
            notes.append(
                f"the legacy group {LEGACY_WORKSPACE_GROUP} still has {', '.join(others)}: "
                "they keep the access it gave until their setups are applied again"
            )
    if facts.processes and not facts.created_by_setup:
        notes.append(f"the reused account {agent} has {facts.processes} running process(es) now")
    if not facts.created_by_setup and has_login_shell(facts.shell):
        # Its shell is its owner's, but sandbox-launch refuses an agent with a login
        # shell (docs/design.md invariant 14): say so now, not at the first launch.
        notes.append(
            f"the reused account {agent} has the login shell {facts.shell or '/bin/sh'}, which "
            "the apply leaves (it is its owner's); sandbox-launch refuses an agent someone "
            f"can log in as: usermod --shell {users.AGENT_SHELL} {agent}"
        )
    return actions


def ledger_action(layout: Layout, record: SetupRecord) -> WriteFile:
    """Write the setup's ledger entry (root's state dir, 0600, journaled: undo puts
    the previous ledger back)."""
    target = ledger_path(layout)
    source = str(layout.real(target))
    return WriteFile(
        layout,
        target,
        lambda current: render_ledger(current, record, source),
        owner=layout.operator.name,
        label=f"setup ledger entry of {record.agent}",
        mode=0o600,
        dir_mode=0o700,
    )
