"""cgroup.delegation: can a session get task and memory limits from a cgroup here?

The facts and the judgement are :mod:`sandbox_setup.base.cgroups` (the launcher and the
audit use the same); this check reports them before anyone launches.
"""

from __future__ import annotations

from sandbox_setup.base.cgroups import CgroupFacts, judge_delegation, read_cgroup_facts
from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.model import Status

FALLBACK = (
    "Without it the launcher limits a session's tasks with RLIMIT_NPROC on the agent's "
    "uid (a dedicated agent account), and does NOT limit its memory."
)


def judge_cgroup_delegation(facts: CgroupFacts) -> Verdict:
    """Pure: pass where systemd or a delegated cgroup v2 subtree can hold a session."""
    delegation = judge_delegation(facts)
    if delegation.kind != "none":
        return Verdict(Status.PASS, delegation.reason)
    return Verdict(
        Status.WARN,
        f"no cgroup for a session's limits: {delegation.reason}",
        FALLBACK,
        delegation.remedy,
        cause="no-cgroup-delegation",
    )


def check_cgroup_delegation(ctx: Context) -> Verdict:
    # Always this process's own cgroup on the live system: that is where the
    # launcher will run (a --root tree has no cgroups of its own).
    return judge_cgroup_delegation(read_cgroup_facts())
