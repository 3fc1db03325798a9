"""What the configured mode needs from the host, against what the host can do now.

Pure judging over the live check report and a few gathered facts about the
Claude binary; its version is read by :mod:`sandbox_setup.base.claude_version`, the
same reader the plan records it with.
"""

from __future__ import annotations

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base import remedies
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.checks.causes import SWITCH_CAUSE
from sandbox_setup.checks.model import Report, Status, cause_key
from sandbox_setup.policy.claude_release import FLOOR, INSTALL_NEWEST, floor_problem

# (check ID, audit ID, what the mode uses it for)
SANDBOX_NEEDS = ("bwrap.sandbox", "audit.mode.bwrap_sandbox", "the launcher's bubblewrap sandbox")
INNER_NEEDS = {
    "strong": ("bwrap.nested", "audit.mode.bwrap_nested", "Claude's inner sandbox (strong)"),
    "weak": (
        "bwrap.nested_weak",
        "audit.mode.bwrap_nested_weak",
        "Claude's inner sandbox (weak, enableWeakerNestedSandbox)",
    ),
}


def _need(report: Report, check_id: str, audit_id: str, purpose: str) -> list[AuditFinding]:
    finding = report.get(check_id)
    if finding is not None and finding.status is Status.PASS:
        return []
    status = str(finding.status) if finding else "missing"
    cause = finding.summary if finding else "the check did not run"
    detail = finding.detail if finding else ""
    return [
        AuditFinding(
            id=audit_id,
            severity=Severity.HIGH,
            summary=f"{check_id} is now {status}: {purpose} needs it ({cause})",
            detail=detail,
            remedy=(finding.remedy if finding and finding.remedy else "")
            or remedies.rerun_checks(check_id),
        )
    ]


# Claude's inner sandbox in any mode: without socat it runs commands unsandboxed
# (or, with the failIfUnavailable the settings carry, refuses to start).
DEPS_NEEDS = (
    "claude.sandbox_deps",
    "audit.mode.sandbox_deps",
    "Claude's inner sandbox (socat and ripgrep; without them Claude refuses to start)",
)


# User (and unsafe) mode: Claude's own sandbox with nothing around it
# (bwrap.direct, bwrap.direct_weak).
DIRECT_NEEDS = {
    "strong": (
        "bwrap.direct",
        "audit.mode.bwrap_direct",
        "Claude's own sandbox (strong), with no outer sandbox",
    ),
    "weak": (
        "bwrap.direct_weak",
        "audit.mode.bwrap_direct_weak",
        "Claude's own sandbox (weak, enableWeakerNestedSandbox), with no outer sandbox",
    ),
}


def _direct_needs(report: Report, config: LauncherConfig) -> list[AuditFinding]:
    """The inner strength of a mode with no outer sandbox, still verified (a report
    without the direct probes, from an older version, is not judged here)."""
    spec = DIRECT_NEEDS.get(config.inner_sandbox)
    if spec is None or report.get(spec[0]) is None:
        return []
    if config.inner_sandbox == "weak" and report.passed("bwrap.direct"):
        return []  # the strong form works, so the weak one does
    return _need(report, *spec)


LAUNCH_NEEDS = (
    "launch.path",
    "audit.mode.launch_path",
    "every launch's own start-up (the sandbox's verification and network set-up)",
)


def _launch_needs(report: Report, config: LauncherConfig) -> list[AuditFinding]:
    """launch.path, as the plan judges it: a network-only refusal matters to allowlist."""
    finding = report.get(LAUNCH_NEEDS[0])
    if finding is None or finding.status is Status.SKIP:
        return []  # not tried (an older report, or no launch probe given)
    if cause_key(finding) == "launch-network" and str(config.network) != "allowlist":
        return []
    return _need(report, *LAUNCH_NEEDS)


def _switch_needs(report: Report) -> list[AuditFinding]:
    """Root can no longer become another account (a container without CAP_SETUID or
    CAP_SETGID): a user-mode launch runs the agent as one too."""
    finding = report.get(LAUNCH_NEEDS[0])
    if finding is None or cause_key(finding) != SWITCH_CAUSE:
        return []
    return _need(report, LAUNCH_NEEDS[0], LAUNCH_NEEDS[1], "every launch (root becomes the agent)")


def mode_findings(report: Report, config: LauncherConfig) -> list[AuditFinding]:
    """Sandbox mode needs bwrap.sandbox, and the nested probe of its inner strength;
    an inner sandbox that is on, in any mode, needs its dependencies; user mode, a
    root that can become the agent."""
    deps = _need(report, *DEPS_NEEDS) if config.inner_sandbox != "off" else []
    if str(config.mode) != "sandbox":
        switch = _switch_needs(report) if str(config.mode) == "user" else []
        return switch + _direct_needs(report, config) + deps
    found = _need(report, *SANDBOX_NEEDS)
    if not found:
        found = _launch_needs(report, config)
    inner = INNER_NEEDS.get(config.inner_sandbox)
    if inner is not None:
        need = _need(report, *inner)
        if need and config.inner_sandbox == "strong" and report.passed("bwrap.nested_weak"):
            # Name the way out that the host still allows.
            first = need[0]
            need = [
                AuditFinding(
                    id=first.id,
                    severity=first.severity,
                    summary=first.summary,
                    detail=first.detail,
                    remedy=first.remedy
                    + "\n# or accept the weaker inner sandbox this host still allows: "
                    'set inner_sandbox = "weak" in the answers and re-apply',
                )
            ]
        found += need
    return found + deps


def claude_findings(
    config: LauncherConfig,
    shown: str,
    exists: bool,
    trusted: bool,
    version: str | None,
    reapply: str,
) -> list[AuditFinding]:
    """The binary is there and is the version recorded at apply."""
    if not exists:
        return [
            AuditFinding(
                id="audit.claude.missing",
                severity=Severity.HIGH,
                summary=f"the Claude binary {shown} recorded in the launcher config is gone",
                detail="The launcher cannot start Claude Code.",
                remedy=f"reinstall Claude Code, then re-apply the saved answers: {reapply}",
            )
        ]
    if not trusted:
        # An untrusted binary is never executed; its safety finding says why.
        return []
    below = floor_findings(shown, version, reapply)
    if config.claude_version is None or version == config.claude_version:
        return below
    now = version or "unknown (--version failed)"
    return [
        AuditFinding(
            id="audit.claude.changed",
            severity=Severity.MEDIUM,
            summary=f"Claude Code at {shown} is version {now}, "
            f"the setup recorded {config.claude_version}",
            detail="A new version may change the root guard or the sandbox settings it "
            "honours; re-check and re-apply so the launcher config records what runs.",
            remedy=f"{remedies.rerun_checks('claude.installed', 'claude.root_guard')} && {reapply}",
        ),
        *below,
    ]


def floor_findings(shown: str, version: str | None, reapply: str) -> list[AuditFinding]:
    """A Claude Code below the release floor (policy.claude_release), named with the
    fixes it lacks; nothing for a release at or above it, or an unknown one."""
    problem = floor_problem(version)
    if problem is None:
        return []
    return [
        AuditFinding(
            id="audit.claude.below_floor",
            severity=Severity.MEDIUM,
            summary=f"Claude Code at {shown} is {version}, below the release floor {FLOOR}",
            detail=problem + ". Its own sandbox is weaker than what the setup counts on.",
            remedy=f"{INSTALL_NEWEST} && {reapply}",
        )
    ]
