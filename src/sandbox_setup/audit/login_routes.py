"""The agent still has no way in but the launcher (:mod:`sandbox_setup.policy.login_routes`).

The actions an apply would take now (:func:`~sandbox_setup.configure.accounts.login_routes.
login_route_actions`, from the launcher config) are the measure, so the audit and the
apply cannot disagree:

- ``audit.login.sshd``: the agent's sshd drop-in is missing or edited;
- ``audit.login.deny``: ``/etc/cron.deny`` or ``/etc/at.deny`` no longer names the agent;
- ``audit.login.shell``: an agent this setup created has a login shell (one created
  before agents got ``nologin``, or changed since): su or a console could start a
  process outside any session. A re-apply gives it ``nologin`` (journaled, undone
  by ``--undo``); an account the setup did not create is not judged here;
- ``audit.login.linger``: systemd-logind lingers for the agent (a file in
  ``/var/lib/systemd/linger``): its user service manager, and every unit it was given
  (``claude daemon install`` writes one), runs from boot outside any session.

They are independent of drift (``audit.drift.*`` skips these actions).
"""

from __future__ import annotations

import os

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.printable import pasted_word
from sandbox_setup.configure.accounts.login_routes import SSHD_KIND, login_route_actions
from sandbox_setup.configure.accounts.users import AGENT_SHELL
from sandbox_setup.configure.actions import WriteFile
from sandbox_setup.configure.ledger import created_accounts
from sandbox_setup.policy.login_routes import LINGER_DIR, has_login_shell

_WHY = (
    "A process the agent starts outside a session (an ssh login with a key it planted, "
    "a cron or at job) is in no session's pid namespace or cgroup, outlives the launcher "
    "and its end-of-session workspace scan, and can plant what root's git then obeys."
)


def login_findings(layout: Layout, config: LauncherConfig, reapply: str) -> list[AuditFinding]:
    """The ``audit.login.*`` findings of this setup."""
    found = _shell_findings(layout, config, reapply) + _linger_findings(layout, config)
    try:
        actions = login_route_actions(layout, config.mode, config.agent_user, [])
    except SetupError:
        return found
    for action in actions:
        assert isinstance(action, WriteFile)
        try:
            changed = action.is_change()
        except SetupError as exc:
            changed, reason = True, str(exc)
        else:
            reason = ""
        if not changed:
            continue
        sshd = action.kind == SSHD_KIND
        state = None if reason else action.state()
        what = (
            f"cannot be read ({reason})"
            if reason
            else "is missing"
            if state is None
            else "differs from what the apply wrote"
            if sshd
            else f"does not name {config.agent_user}"
        )
        summary = (
            f"the sshd drop-in that denies {config.agent_user} ({action.real}) {what}"
            if sshd
            else f"{action.real} {what}"
        )
        found.append(
            AuditFinding(
                id="audit.login.sshd" if sshd else "audit.login.deny",
                severity=Severity.HIGH,
                summary=summary,
                detail=_WHY,
                remedy=reapply,
                diff=action.diff(),
            )
        )
    return found


def _shell_findings(layout: Layout, config: LauncherConfig, reapply: str) -> list[AuditFinding]:
    if str(config.mode) not in ("sandbox", "user") or layout.operator.uid != 0:
        return []
    agent = lookup_user(config.agent_user, layout.root)
    if agent is None or not has_login_shell(agent.shell):
        return []
    prefix = "" if layout.live else f" --prefix {pasted_word(str(layout.root))}"
    usermod = f"usermod{prefix} --shell {AGENT_SHELL} {pasted_word(agent.name)}"
    # A reused account's shell is its owner's: the re-apply leaves it, so the
    # remedy is the owner's usermod alone; either way sandbox-launch refuses the
    # agent until then (policy.accounts.launch_agent_problems).
    created = agent.name in created_accounts(layout)
    return [
        AuditFinding(
            id="audit.login.shell",
            severity=Severity.MEDIUM,
            summary=f"the agent {agent.name} has the login shell {agent.shell or '(none)'}: "
            "sandbox-launch refuses it",
            detail=_WHY
            + " sandbox-launch gives Claude bash itself; the account needs no shell of its own.",
            remedy=f"{reapply} (it sets the shell {AGENT_SHELL}; or: {usermod})"
            if created
            else f"{usermod}   (a reused account: its owner changes its shell)",
        )
    ]


def _linger_findings(layout: Layout, config: LauncherConfig) -> list[AuditFinding]:
    if str(config.mode) not in ("sandbox", "user"):
        return []
    marker = LINGER_DIR / config.agent_user
    try:
        os.lstat(layout.real(marker))
    except OSError:
        return []
    remedy = (
        f"loginctl disable-linger {pasted_word(config.agent_user)}"
        if layout.live
        else f"rm -- {pasted_word(str(layout.real(marker)))}"
    )
    return [
        AuditFinding(
            id="audit.login.linger",
            severity=Severity.HIGH,
            summary=f"systemd-logind lingers for the agent {config.agent_user} ({marker})",
            detail=_WHY
            + " A lingering user's service manager starts at boot and runs its units (a "
            "`claude daemon install` service among them) outside any session.",
            remedy=remedy,
        )
    ]
