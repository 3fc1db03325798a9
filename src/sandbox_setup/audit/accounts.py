"""The audit's account and session findings (docs/design.md invariants 9 and 10).

- the agent judged by the same account rules the plan applies
  (:func:`sandbox_setup.policy.accounts.agent_account_problems`, explicitly reused:
  the rules no choice waives): ``audit.accounts.system``, ``.service``,
  ``.admin_group`` (``audit.safety.password`` and ``.sudoers`` already cover
  those two rules);
- ``audit.accounts.outlived``: an account sandbox-setup created (ledger or
  journal) that still exists, though no setup uses it any more (an undo whose
  ``userdel`` failed, a setup replaced);
- ``audit.accounts.legacy_group``: the shared ``sandbox-ws`` of older versions
  still has members (each can write the others' workspaces);
- and a note (not a finding) with the session limits and how this host enforces
  them: a cgroup, RLIMIT_NPROC, or, for memory, not at all.
"""

from __future__ import annotations

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base import remedies
from sandbox_setup.base.accounts import Account, lookup_user
from sandbox_setup.base.cgroups import judge_delegation, read_cgroup_facts
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.accounts.agent_account import account_facts, problem_fix
from sandbox_setup.configure.ledger import created_accounts, read_ledger
from sandbox_setup.policy.accounts import (
    LEGACY_WORKSPACE_GROUP,
    AccountRule,
    agent_account_problems,
)

_RULE_IDS = {
    AccountRule.ROOT: "audit.accounts.root",
    AccountRule.SYSTEM: "audit.accounts.system",
    AccountRule.SERVICE: "audit.accounts.service",
    AccountRule.ADMIN_GROUP: "audit.accounts.admin_group",
}


def agent_rule_findings(layout: Layout, agent: Account) -> list[AuditFinding]:
    """The account rules the agent breaks now (password and sudoers: audit.safety)."""
    found = []
    for problem in agent_account_problems(account_facts(layout, agent), reuse=True):
        finding_id = _RULE_IDS.get(problem.rule)
        if finding_id is None:
            continue
        found.append(
            AuditFinding(
                id=finding_id,
                severity=Severity.HIGH,
                summary=f"the agent account breaks the rule [{problem.rule}]: {problem.text}",
                detail="The agent must be an account of its own: never root, a system "
                "account or a service's, never in a group that is a way to root.",
                remedy=problem_fix(layout, problem, agent.name),
            )
        )
    return found


def outlived_findings(layout: Layout, config: LauncherConfig) -> list[AuditFinding]:
    """Accounts sandbox-setup created that no setup uses any more, but still exist."""
    in_use = set(read_ledger(layout)) | {config.agent_user}
    found = []
    for name in sorted(created_accounts(layout) - in_use):
        account = lookup_user(name, layout.root)
        if account is None:
            continue
        found.append(
            AuditFinding(
                id="audit.accounts.outlived",
                severity=Severity.HIGH,
                summary=f"the account {name} (uid {account.uid}), created by sandbox-setup, "
                "outlived its setup",
                detail="No setup uses it any more, yet it keeps its groups, its home and "
                "whatever it can still write; an undo that could not remove it leaves it "
                "recorded for the next --undo.",
                remedy=f"{remedies.undo_last(str(layout.root))}  # or: userdel "
                f"{'' if layout.live else f'--prefix {layout.root} '}--remove {name}",
            )
        )
    return found


def legacy_group_findings(layout: Layout) -> list[AuditFinding]:
    members = users.group_members(LEGACY_WORKSPACE_GROUP, layout.root)
    if not members:
        return []
    return [
        AuditFinding(
            id="audit.accounts.legacy_group",
            severity=Severity.MEDIUM,
            summary=f"the shared workspace group {LEGACY_WORKSPACE_GROUP} of an older version "
            f"still has members: {', '.join(members)}",
            detail="Every member can write every workspace it was given; each setup now has "
            "a group of its own (sandbox-ws-AGENT), made on its next apply.",
            remedy="re-apply each of these setups; this one: "
            + remedies.change_setup(root=str(layout.root)),
        )
    ]


def limits_note(config: LauncherConfig) -> str | None:
    """The session limits and how this host enforces them (a note of the report:
    a fact about the host, not something wrong with the setup)."""
    if str(config.mode) == "unsafe":
        return None
    limits = config.limits
    delegation = judge_delegation(read_cgroup_facts())
    if delegation.kind == "none":
        tasks = f"tasks {limits.tasks} (RLIMIT_NPROC on the agent's uid)"
        memory = f"memory {limits.memory} NOT limited here: {delegation.reason}"
        if delegation.remedy:
            memory += f" (fix: {delegation.remedy})"
    else:
        by = {"systemd": "a systemd scope", "cgroup2": "a cgroup v2", "cgroup1": "cgroup v1"}
        how = by.get(delegation.kind, delegation.kind)
        tasks = f"tasks {limits.tasks} ({how})"
        memory = f"memory {limits.memory} ({how})"
    return f"session limits: {tasks}; {memory}; tmpfs {limits.tmpfs} each for /tmp, /run, /dev/shm"


def account_findings(
    layout: Layout, config: LauncherConfig, agent: Account | None
) -> list[AuditFinding]:
    """Everything above, for the setup ``config`` describes."""
    found: list[AuditFinding] = []
    separate = agent is not None and agent.uid not in (0, layout.operator.uid)
    if str(config.mode) in ("sandbox", "user") and separate and agent is not None:
        found += agent_rule_findings(layout, agent)
    found += outlived_findings(layout, config)
    found += legacy_group_findings(layout)
    return found
