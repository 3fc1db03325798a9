"""Root's protected git settings still hold (:mod:`sandbox_setup.policy.git_protected`).

The actions an apply would take now (:func:`~sandbox_setup.configure.git_protect.
protected_git_actions`, from the launcher config) are the measure, so the audit and the
apply cannot disagree on what "installed" means. A missing include file is silent in
git (it skips it), which is why each piece is judged on its own:

- ``audit.git.protected``: the owned file is missing, edited, or not root's 0644;
- ``audit.git.protected_dir``: a directory above it is not root's or is writable by
  others (whoever can write it can swap the file);
- ``audit.git.include``: a global git config (root's, a workspace owner's) no longer
  includes it last, or cannot be read (a symlink, a line git refuses).

They are independent of drift (``audit.drift.*`` skips these actions), so they are
reported even when the drift cannot be compared.
"""

from __future__ import annotations

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.audit.rules import judge_parent_dirs
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.actions import WriteFile
from sandbox_setup.configure.git_protect import PROTECTED_KIND, protected_git_actions
from sandbox_setup.policy.git_protected import PROTECTED_FILE

_WHY = (
    "Without it root's git finds a bare repository planted in a workspace and obeys its "
    "config (core.fsmonitor, core.pager: programs run as root); git silently skips an "
    "include whose file is missing."
)


def _finding(action: WriteFile, reapply: str) -> AuditFinding:
    protected = action.kind == PROTECTED_KIND
    state = action.state()
    if protected:
        what = "is missing" if state is None else "differs from what the apply wrote"
        summary = f"root's protected git settings {action.real} {what}"
    else:
        summary = (
            f"{action.real} is missing: it held the include of root's protected git "
            f"settings ({PROTECTED_FILE})"
            if state is None
            else f"{action.real} does not include root's protected git settings "
            f"({PROTECTED_FILE}) after its last safe.* entry and include"
        )
        if state is not None and action.render(state.data) == state.data:
            summary = f"{action.real} has the include but not the planned owner or mode"
    return AuditFinding(
        id="audit.git.protected" if protected else "audit.git.include",
        severity=Severity.HIGH,
        summary=summary,
        detail=_WHY,
        remedy=reapply,
        diff=action.diff(),
    )


def git_findings(layout: Layout, config: LauncherConfig, reapply: str) -> list[AuditFinding]:
    """The ``audit.git.*`` findings of this setup (none in unsafe mode: nothing installed)."""
    try:
        actions = protected_git_actions(
            layout, config.mode, config.agent_user, config.workspaces, []
        )
    except SetupError as exc:
        return [_unreadable(str(exc), reapply)]
    found: list[AuditFinding] = []
    for action in actions:
        assert isinstance(action, WriteFile)
        try:
            if action.is_change():
                found.append(_finding(action, reapply))
        except SetupError as exc:  # a symlink, a line git refuses
            found.append(_unreadable(str(exc), reapply))
        leaf, parents = layout.chain(layout.resolve(action.path))
        if action.kind == PROTECTED_KIND and leaf.exists:
            found += judge_parent_dirs(
                parents, {0}, "audit.git.protected_dir", "root's protected git settings"
            )
    return found


def _unreadable(reason: str, reapply: str) -> AuditFinding:
    return AuditFinding(
        id="audit.git.include",
        severity=Severity.HIGH,
        summary=f"root's protected git settings cannot be judged: {reason}",
        detail=_WHY,
        remedy=f"fix the file named above, then: {reapply}",
    )
