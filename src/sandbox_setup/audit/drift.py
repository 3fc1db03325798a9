"""Drift: what the saved answers would write now, against what is on disk.

The plan is built from the saved answers and the live report by the same
:func:`sandbox_setup.configure.plan.build_plan` an apply uses, so drift is exactly what a
re-apply would change. The settings merge owns only some keys, so a key the
user added to settings.json yields no diff by construction: it is not drift.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.host_facts import HostFacts
from sandbox_setup.configure.plan import build_plan

if TYPE_CHECKING:
    from sandbox_setup.configure.plan import Plan
from sandbox_setup.configure.accounts.login_routes import LOGIN_KINDS
from sandbox_setup.configure.actions import SetShell, WriteFile
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.apparmor import APPARMOR_KIND
from sandbox_setup.configure.git_protect import GIT_KINDS
from sandbox_setup.configure.settings import owned_changes

FILE_KINDS = ("write-file",)
# Non-file changes already reported, more precisely, as audit.safety.agent_missing.
USER_KINDS = ("create-user", "create-group")


def drift_id(layout: Layout, kind: str, target: str) -> str:
    """The stable audit ID for a drifted action."""
    path = PurePosixPath(target)
    if path == layout.launcher_config:
        return "audit.drift.launcher_config"
    if path == layout.answers:
        return "audit.drift.answers"
    if path == layout.managed_settings or path.name == "settings.json":
        return "audit.drift.settings"
    if kind == "install-claude":
        return "audit.drift.claude_binary"
    if kind in FILE_KINDS:
        return "audit.drift.file"
    return "audit.drift." + kind.replace("-", "_")


_SEVERITY = {
    "audit.drift.settings": Severity.HIGH,  # the settings are the security policy
    "audit.drift.launcher_config": Severity.HIGH,  # it picks the mode
    "audit.drift.answers": Severity.LOW,
}


def findings_from_plan(
    plan: Plan, layout: Layout, reapply: str, agent_missing: bool
) -> list[AuditFinding]:
    """One finding per action a re-apply would change, with its diff for files."""
    found = []
    for action in plan.actions:
        if not action.is_change():
            continue
        kind = str(action.kind)
        if agent_missing and kind in USER_KINDS:
            continue
        if kind in GIT_KINDS:  # audit.git.* (sandbox_setup.audit.git) reports them
            continue
        if kind in LOGIN_KINDS or kind == SetShell.kind:  # audit.login.* reports them
            continue
        if kind == APPARMOR_KIND:  # audit.apparmor.* (sandbox_setup.audit.apparmor)
            continue
        target = str(action.target)
        finding_id = drift_id(layout, kind, target)
        is_file = action.writes_file
        what = (
            f"{layout.real(target) if target.startswith('/') else target} differs from "
            "what the saved answers write"
            if is_file
            else f"a re-apply would {action.describe()}"
        )
        if finding_id == "audit.drift.settings" and isinstance(action, WriteFile):
            what = _settings_summary(action, what)
        found.append(
            AuditFinding(
                id=finding_id,
                severity=_SEVERITY.get(finding_id, Severity.MEDIUM),
                summary=what,
                detail=action.describe() if is_file else "",
                remedy=reapply,
                diff=action.diff() if is_file else "",
            )
        )
    return found


def _settings_summary(action: WriteFile, fallback: str) -> str:
    """Name each owned key that differs (``sandbox.failIfUnavailable is false,
    should be true``), so the one line says what the agent or a hand edit changed;
    the diff stays in the finding. A file whose owned keys agree (only its owner
    or mode drifted) keeps the general summary."""
    changes = owned_changes(action.current(), action.desired())
    if not changes:
        return fallback
    return f"{action.real} (owned keys): " + "; ".join(changes)


def drift_findings(
    report: Report,
    facts: HostFacts,
    answers: Answers,
    layout: Layout,
    reapply: str,
    agent_missing: bool,
) -> list[AuditFinding]:
    """Drift of this setup; a plan the live host now rules out is itself a finding."""
    try:
        plan = build_plan(report, answers, layout, str(layout.real(layout.answers)), facts=facts)
        return findings_from_plan(plan, layout, reapply, agent_missing)
    except SetupError as exc:
        summary = "cannot compare with the saved answers: the plan is refused now"
        detail = str(exc)
    except Exception as exc:  # like a crashing check: report it, the audit goes on
        summary = "cannot compare with the saved answers: building the plan failed"
        detail = f"{type(exc).__name__}: {exc}"
    return [
        AuditFinding(
            id="audit.drift.unavailable",
            severity=Severity.MEDIUM,
            summary=summary,
            detail=detail,
            remedy="fix what the other findings name (a plan refused by the host needs the "
            f"host fixed or another mode: sandbox-setup), then: {reapply}",
        )
    ]
