"""seccomp.available: can this process install a seccomp filter (live)?

Claude Code's sandbox applies a seccomp filter (apply-seccomp) inside bwrap. The
probe is a child Python that sets no_new_privs and installs an allow-all BPF
filter, then reports its Seccomp mode; nothing is left behind.
"""

from __future__ import annotations

from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.experiments import seccomp_command
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import ProbeResult


def judge_seccomp(result: ProbeResult, status_seccomp: str | None) -> Verdict:
    """Pure: pass when the child ended with a filter installed (Seccomp: 2)."""
    if status_seccomp is None:
        return Verdict(
            Status.FAIL,
            "the kernel has no seccomp support (no Seccomp: line in /proc/self/status)",
            "",
            "use a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y",
            cause="seccomp-unsupported",
        )
    if result.ok and "Seccomp:\t2" in result.stdout.replace("Seccomp: ", "Seccomp:\t"):
        return Verdict(Status.PASS, "a seccomp filter can be installed", result.describe())
    if result.timed_out or result.not_found:
        return Verdict(Status.ERROR, "the seccomp probe did not run", result.describe())
    error = result.last_error
    if "Invalid argument" in error:
        summary = "installing a seccomp filter fails with EINVAL: no CONFIG_SECCOMP_FILTER"
        key = "seccomp-filter-unsupported"
    else:
        summary = "installing a seccomp filter failed: " + (error or f"exit {result.returncode}")
        key = "seccomp-refused"
    return Verdict(
        Status.FAIL,
        summary,
        result.describe(),
        "use a kernel with CONFIG_SECCOMP_FILTER=y; in a container, check its seccomp "
        "profile and LSM",
        cause=key,
    )


def check_seccomp(ctx: Context) -> Verdict:
    result = ctx.run(seccomp_command())
    return judge_seccomp(result, ctx.facts.status.get("Seccomp") if ctx.facts.status else "0")
