"""proc.masks (mountinfo) and proc.fresh_mount (live): can a fresh /proc be mounted?

bwrap's ``--proc /proc`` needs a fresh procfs in a child user+pid namespace. The
live probe is ``unshare -Urmpf --mount-proc true``: ``--fork`` matters, since
without it unshare mounts /proc before a process exists in the new pid namespace
and fails on every host.
"""

from __future__ import annotations

from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.causes import cause_fresh_proc, diagnose
from sandbox_setup.checks.experiments import FRESH_PROC_PROBE
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.mounts import proc_covers, proc_locked_readonly
from sandbox_setup.checks.probe import ProbeResult


def judge_proc_masks(facts: HostFacts, platform: str) -> Verdict:
    """Pure: fail when something over /proc would make a fresh /proc impossible."""
    covers = proc_covers(facts.mounts)
    if not covers and not proc_locked_readonly(facts.mounts):
        if not facts.mounts:
            return Verdict(Status.SKIP, "mountinfo could not be read", "/proc/self/mountinfo")
        return Verdict(Status.PASS, "nothing is mounted over /proc", "")
    cause = cause_fresh_proc(facts, platform, uid=-1, in_our_outer=False)
    listing = "\n".join(f"{c.path}: {c.kind} ({c.fstype})" for c in covers)
    return Verdict.from_cause(cause, listing)


def judge_fresh_proc(result: ProbeResult, facts: HostFacts, *, uid: int, platform: str) -> Verdict:
    if result.ok:
        return Verdict(
            Status.PASS,
            "a fresh /proc can be mounted in a new user+pid namespace",
            result.describe(),
        )
    cause = diagnose(result, facts, uid=uid, platform=platform)
    return Verdict.from_cause(cause, result.describe())


def check_proc_masks(ctx: Context) -> Verdict:
    return judge_proc_masks(ctx.facts, ctx.platform.name)


def check_fresh_proc(ctx: Context) -> Verdict:
    result = ctx.run(FRESH_PROC_PROBE)
    return judge_fresh_proc(result, ctx.facts, uid=ctx.uid, platform=ctx.platform.name)
