"""The AppArmor profile the apply installed on request still holds
(:mod:`sandbox_setup.configure.apparmor`; only where the saved answers ask for it).

The action an apply would take now (the profile for the bwrap the probes ran) is the
measure, so the audit and the apply cannot disagree:

- ``audit.apparmor.profile``: ``/etc/apparmor.d/sandbox-setup-bwrap`` is missing,
  differs from what the apply wrote (edited, or written for another bwrap), or is not
  root's 0644. Missing: bwrap loses its user namespaces at the next boot (or the next
  profile reload), and bwrap-based sandboxes fail there.

Independent of drift (``audit.drift.*`` skips this action), so it is reported even
when the drift cannot be compared. Whether the profile is loaded now is not read:
this kernel interface (``/sys/kernel/security/apparmor``) is root's and absent under
``--root``; ``userns.policy`` and ``bwrap.sandbox`` in the same audit say what bwrap
can do.
"""

from __future__ import annotations

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.apparmor import PROFILE_FILE, SYSCTL_REMEDY
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.apparmor import probed_bwrap, profile_action
from sandbox_setup.configure.host_facts import SandboxBinary

_WHY = (
    "Under kernel.apparmor_restrict_unprivileged_userns=1 this profile is what lets bwrap "
    "create user namespaces: without it the launcher's sandbox and Claude Code's own "
    "bwrap sandbox fail (or fall back) at the next boot or profile reload. An edited "
    "profile may grant bwrap, or another program, more than userns."
)


def apparmor_findings(
    layout: Layout, answers: Answers | None, bwrap: SandboxBinary, reapply: str
) -> list[AuditFinding]:
    """The ``audit.apparmor.*`` findings of this setup (none unless it asked for the
    profile)."""
    if answers is None or not answers.apparmor_bwrap_profile:
        return []
    try:
        action = profile_action(layout, probed_bwrap(bwrap), None)
        if not action.is_change():
            return []
        state = action.state()
    except SetupError as exc:
        return [_finding(f"the AppArmor profile {PROFILE_FILE} cannot be judged: {exc}", reapply)]
    real = layout.real(PROFILE_FILE)
    if state is None:
        summary = f"the AppArmor profile for bwrap {real} is missing"
    elif action.render(state.data) != state.data:
        summary = f"the AppArmor profile for bwrap {real} differs from what the apply wrote"
    else:
        summary = f"the AppArmor profile for bwrap {real} is not root's with mode 0644"
    return [_finding(summary, reapply, action.diff())]


def _finding(summary: str, reapply: str, diff: str = "") -> AuditFinding:
    return AuditFinding(
        id="audit.apparmor.profile",
        severity=Severity.HIGH,
        summary=summary,
        detail=_WHY,
        remedy=f"{reapply}   ({SYSCTL_REMEDY})",
        diff=diff,
    )
