"""tty.tiocsti: may a sandboxed process push input into the operator's terminal?"""

from __future__ import annotations

from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.model import Status

PERSIST = "/etc/sysctl.d/90-sandbox-setup-tty.conf"


def judge_tiocsti(value: int | None) -> Verdict:
    """Pure: over ``dev.tty.legacy_tiocsti`` (absent before Linux 6.2)."""
    remedy = f"sysctl -w dev.tty.legacy_tiocsti=0 && echo dev.tty.legacy_tiocsti=0 > {PERSIST}"
    mitigation = (
        "The sandbox launcher runs bwrap with --new-session, which keeps a sandboxed "
        "process from injecting input with TIOCSTI even so."
    )
    if value == 0:
        return Verdict(Status.PASS, "TIOCSTI injection is disabled (dev.tty.legacy_tiocsti=0)")
    if value is None:
        return Verdict(
            Status.WARN,
            "dev.tty.legacy_tiocsti is absent (a kernel before 6.2): TIOCSTI is always allowed",
            mitigation,
            "use a kernel >= 6.2 and " + remedy,
            cause="tiocsti-always-allowed",
        )
    return Verdict(
        Status.WARN,
        "TIOCSTI is allowed (dev.tty.legacy_tiocsti=1): a process sharing the terminal can "
        "type into it",
        mitigation,
        remedy,
        cause="tiocsti-enabled",
    )


def check_tiocsti(ctx: Context) -> Verdict:
    return judge_tiocsti(ctx.facts.sysctl_int("dev.tty.legacy_tiocsti"))
