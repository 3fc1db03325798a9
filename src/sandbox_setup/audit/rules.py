"""The launcher's safety rules, as pure judging functions over gathered facts.

Gathering (stat, reading /etc files under the root) is in
:mod:`sandbox_setup.audit.safety`; everything here takes plain values so it is
table-tested without a kernel. Each rule returns audit findings with a stable
ID, a severity, what was found and where, and a remedy to paste.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.pathfacts import PathFacts
from sandbox_setup.base.printable import pasted_word
from sandbox_setup.policy.accounts import PasswordState, password_state
from sandbox_setup.policy.sudoers import SudoersHit
from sandbox_setup.policy.trust import directory_problems, file_problems


def _octal(mode: int) -> str:
    return f"{stat.S_IMODE(mode):04o}"


def judge_owned_file(
    facts: PathFacts, trusted_uids: Iterable[int], finding_prefix: str, what: str
) -> list[AuditFinding]:
    """A file the launcher trusts (the trust rule, :mod:`sandbox_setup.policy.trust`):
    ``<prefix>_owner`` and ``<prefix>_mode`` findings. A missing file is not
    judged here (each caller says what a missing file means)."""
    trusted = set(trusted_uids)
    found: list[AuditFinding] = []
    if not facts.exists:
        return found
    for problem in file_problems(facts, trusted):
        if problem.kind in ("owner", "type"):
            owners = " or ".join(str(u) for u in sorted(trusted))
            summary = (
                f"{what} {facts.shown} is owned by uid {facts.uid}, not uid {owners}"
                if problem.kind == "owner"
                else f"{what} {facts.shown} is not a regular file"
            )
            found.append(
                AuditFinding(
                    id=f"{finding_prefix}_owner",
                    severity=Severity.HIGH,
                    summary=summary,
                    detail="Whoever owns it can rewrite it; the launcher refuses such a file.",
                    remedy=f"chown {min(trusted)} {pasted_word(facts.shown)}",
                )
            )
        elif problem.kind == "writable":
            found.append(
                AuditFinding(
                    id=f"{finding_prefix}_mode",
                    severity=Severity.HIGH,
                    summary=(
                        f"{what} {facts.shown} is group/world-writable (mode {_octal(facts.mode)})"
                    ),
                    detail="Anyone in its group or on the machine could change the mode or the "
                    "agent; the launcher refuses to start with it.",
                    remedy=f"chmod go-w {pasted_word(facts.shown)}",
                )
            )
    return found


def judge_parent_dirs(
    dirs: Iterable[PathFacts], trusted_uids: Iterable[int], finding_id: str, what: str
) -> list[AuditFinding]:
    """Every directory on the way to a trusted file must be trusted too (the trust
    rule, :mod:`sandbox_setup.policy.trust`, as the launcher applies it)."""
    trusted = set(trusted_uids)
    found: list[AuditFinding] = []
    for facts in dirs:
        problems = []
        for problem in directory_problems(facts, trusted):
            if problem.kind == "owner":
                problems.append(f"owned by uid {facts.uid}")
            elif problem.kind == "writable":
                problems.append(f"group/world-writable (mode {_octal(facts.mode)})")
            else:
                problems.append("not a directory")
        if problems:
            found.append(
                AuditFinding(
                    id=finding_id,
                    severity=Severity.HIGH,
                    summary=f"directory {facts.shown} on the path of {what} is "
                    + " and ".join(problems),
                    detail="Whoever can write a directory on the path can swap the file "
                    "beneath it; the launcher refuses such a path.",
                    remedy=f"chown root {pasted_word(facts.shown)} && "
                    f"chmod go-w {pasted_word(facts.shown)}",
                )
            )
    return found


def judge_agent_home(
    facts: PathFacts, agent: str, agent_uid: int, agent_gid: int
) -> list[AuditFinding]:
    """The agent home: a directory owned by the agent, mode 0700."""
    shown = pasted_word(facts.shown)
    # Numeric ids: under --root the agent exists only in DIR/etc/passwd.
    owner = f"{agent_uid}:{agent_gid}"
    if not facts.exists or not facts.is_dir:
        return [
            AuditFinding(
                id="audit.safety.agent_home",
                severity=Severity.HIGH,
                summary=f"the agent home {facts.shown} is missing",
                detail="The launcher needs the agent's home (its only writable place "
                "besides the workspaces).",
                remedy=f"install -d -m 0700 -o {agent_uid} -g {agent_gid} {shown}",
            )
        ]
    problems = []
    if facts.uid != agent_uid:
        problems.append(f"owned by uid {facts.uid}, not {agent} (uid {agent_uid})")
    if facts.perms & 0o077:
        problems.append(f"mode {_octal(facts.mode)}, not 0700")
    if not problems:
        return []
    return [
        AuditFinding(
            id="audit.safety.agent_home",
            severity=Severity.MEDIUM,
            summary=f"the agent home {facts.shown} is " + " and ".join(problems),
            detail="Other users could read the agent's Claude login and history, or the "
            "agent could not write its own state.",
            remedy=f"chown {owner} {shown} && chmod 0700 {shown}",
        )
    ]


def judge_workspace(facts: PathFacts, agent_has_access: bool) -> list[AuditFinding]:
    """A workspace: exists, reachable by the agent through its group, not world-writable."""
    shown = pasted_word(facts.shown)
    if not facts.exists or not facts.is_dir:
        return [
            AuditFinding(
                id="audit.safety.workspace_missing",
                severity=Severity.MEDIUM,
                summary=f"the workspace {facts.shown} is missing",
                remedy=f"mkdir -p {shown}, then re-apply the saved answers",
            )
        ]
    found = []
    if facts.perms & 0o002:
        found.append(
            AuditFinding(
                id="audit.safety.workspace_mode",
                severity=Severity.MEDIUM,
                summary=f"the workspace {facts.shown} is world-writable "
                f"(mode {_octal(facts.mode)})",
                detail="Any local user can plant files the agent will read and run.",
                remedy=f"chmod o-w {shown}",
            )
        )
    if not agent_has_access:
        found.append(
            AuditFinding(
                id="audit.safety.workspace_access",
                severity=Severity.LOW,
                summary=f"the agent has no write access to the workspace {facts.shown}",
                detail="Access is given through the workspace group with setgid directories "
                "and default ACLs; they are gone.",
                remedy="re-apply the saved answers (it restores the group and ACLs)",
            )
        )
    return found


def judge_password(
    shadow_text: str | None, agent: str, shadow_path: str, prefix: str | None = None
) -> list[AuditFinding]:
    """The agent's password must be locked (:func:`sandbox_setup.policy.accounts.password_state`).

    ``prefix`` is the ``--root`` directory, for a remedy that edits that tree.
    """
    where = f"--prefix {pasted_word(prefix)} " if prefix else ""
    remedy = f"usermod {where}--lock {agent}"
    state = password_state(shadow_text, agent)
    if state is PasswordState.LOCKED:
        return []
    if state is PasswordState.UNREADABLE:
        summary = f"cannot read {shadow_path} to confirm the agent's password is locked"
        return [AuditFinding("audit.safety.password", Severity.MEDIUM, summary, remedy=remedy)]
    if state is PasswordState.NO_ENTRY:
        summary = f"no entry for {agent} in {shadow_path}; cannot confirm its password is locked"
        return [AuditFinding("audit.safety.password", Severity.MEDIUM, summary, remedy=remedy)]
    if state is PasswordState.EMPTY:
        return [
            AuditFinding(
                id="audit.safety.password",
                severity=Severity.CRITICAL,
                summary=f"the agent {agent} has an EMPTY password in {shadow_path}",
                detail="Anyone can log in or su to the agent without a password.",
                remedy=remedy,
            )
        ]
    return [
        AuditFinding(
            id="audit.safety.password",
            severity=Severity.HIGH,
            summary=f"the agent {agent} has a usable password in {shadow_path}",
            detail="The agent account must be reachable only through the launcher.",
            remedy=remedy,
        )
    ]


def judge_sudoers(hits: Iterable[SudoersHit], agent: str) -> list[AuditFinding]:
    found = []
    for hit in hits:
        nopasswd = " with NOPASSWD" if hit.nopasswd else ""
        found.append(
            AuditFinding(
                id="audit.safety.sudoers",
                severity=Severity.CRITICAL if hit.nopasswd else Severity.HIGH,
                summary=f"sudoers rule for the agent {agent}{nopasswd}: "
                f"{hit.path}:{hit.line}: {hit.text}",
                detail="The agent must not be able to become root; a sudoers entry undoes "
                "the separation the setup made.",
                remedy=f"visudo -f {pasted_word(hit.path)}  # delete line {hit.line}",
            )
        )
    return found
