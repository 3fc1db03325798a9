"""Fixed fake findings for the TUI tests: the TUI is not the probe.

Two hosts: :data:`SANDBOX_HOST` (everything passes, sandbox recommended) and
:data:`CONTAINER_HOST` (a docker container with a masked /proc: bwrap cannot
start a sandbox, so sandbox mode is ruled out and user mode recommended).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from sandbox_setup.base.choices import Mode
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status

P, W, F, S = Status.PASS, Status.WARN, Status.FAIL, Status.SKIP


def _f(check_id: str, title: str, status: Status, summary: str, remedy: str = "") -> Finding:
    return Finding(
        check_id, title, status, summary, detail=f"fake detail of {check_id}", remedy=remedy
    )


COMMON = [
    _f("identity.root", "Running as root", P, "uid 0, not through sudo"),
    _f("userns.policy", "User namespace policy", P, "max_user_namespaces=96365"),
    _f("userns.create", "Create a user namespace", P, "unshare -U works"),
    _f("bwrap.installed", "bubblewrap installed", P, "bwrap 0.8.0, not setuid"),
    _f("seccomp.available", "seccomp filters", P, "seccomp mode 2 available"),
    _f(
        "tty.tiocsti",
        "TIOCSTI injection",
        W,
        "dev.tty.legacy_tiocsti=1",
        "sysctl -w dev.tty.legacy_tiocsti=0",
    ),
    _f("claude.installed", "Claude Code installed", P, "2.1.197 at /usr/local/bin/claude"),
    _f("claude.sandbox_deps", "socat and ripgrep", P, "socat and rg found"),
]

SANDBOX_HOST: list[Finding] = [
    *COMMON[:3],
    _f("platform.container", "Container platform", P, "none (Firecracker VM)"),
    _f("proc.masks", "Masked /proc", P, "no masked paths"),
    _f("proc.fresh_mount", "Fresh /proc in a pid namespace", P, "mounted"),
    *COMMON[3:4],
    _f("bwrap.sandbox", "bubblewrap starts a sandbox", P, "sandbox came up"),
    _f("bwrap.nested", "Nested sandbox (strong)", P, "inner bwrap works as nobody"),
    _f("bwrap.nested_weak", "Nested sandbox (weak)", P, "works"),
    *COMMON[4:],
]

CONTAINER_HOST: list[Finding] = [
    *COMMON[:3],
    _f("platform.container", "Container platform", W, "docker"),
    _f(
        "proc.masks",
        "Masked /proc",
        F,
        "/proc/kcore, /proc/sys masked by the runtime",
        "docker run --security-opt systempaths=unconfined ...",
    ),
    _f(
        "proc.fresh_mount",
        "Fresh /proc in a pid namespace",
        F,
        "mount proc: Operation not permitted",
        "docker run --security-opt systempaths=unconfined ...",
    ),
    *COMMON[3:4],
    _f(
        "bwrap.sandbox",
        "bubblewrap starts a sandbox",
        F,
        "Can't mount proc on /newroot/proc",
        "docker run --security-opt systempaths=unconfined ...",
    ),
    _f("bwrap.nested", "Nested sandbox (strong)", S, "needs bwrap.sandbox"),
    _f("bwrap.nested_weak", "Nested sandbox (weak)", S, "needs bwrap.sandbox"),
    *COMMON[4:],
]


def fake_report(findings: Sequence[Finding]) -> Report:
    sandbox_ok = any(f.id == "bwrap.sandbox" and f.status is P for f in findings)
    rec = (
        Recommendation(Mode.SANDBOX, "bubblewrap works here, nested too")
        if sandbox_ok
        else Recommendation(Mode.USER, "bubblewrap cannot mount /proc in this container")
    )
    return Report(
        host={"kernel": "6.18", "fake": True}, findings=list(findings), recommendation=rec
    )


class FakeProvider:
    """A report provider that hands out fixed findings one by one.

    ``gate`` (when set) holds the run after the first finding, so a test can
    look at the screen while the probes are still "running".
    """

    def __init__(self, findings: Sequence[Finding], delay: float = 0.0) -> None:
        self.findings = list(findings)
        self.delay = delay
        self.gate: threading.Event | None = None
        self.runs = 0

    def __call__(self, on_finding: Callable[[Finding], object]) -> Report:
        self.runs += 1
        for index, finding in enumerate(self.findings):
            if self.delay:
                time.sleep(self.delay)
            on_finding(finding)
            if index == 0 and self.gate is not None:
                self.gate.wait(timeout=30)
        return fake_report(self.findings)
