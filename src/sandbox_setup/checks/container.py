"""platform.container: which container runtime (if any) this runs in."""

from __future__ import annotations

from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.platform import Platform


def judge_platform(platform: Platform) -> Verdict:
    """Pure: informational; the runtime picks the remedies other checks print."""
    if platform.name == "none":
        return Verdict(Status.PASS, "no container detected", "no container marker found")
    return Verdict(
        Status.PASS,
        f"running in {platform.name}",
        "evidence: " + "; ".join(platform.evidence),
    )


def check_platform(ctx: Context) -> Verdict:
    return judge_platform(ctx.platform)
