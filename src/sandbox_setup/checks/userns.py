"""userns.policy (sysctls, AppArmor) and userns.create (live ``unshare -Ur true``).

``unshare -Ur`` creates a user namespace and writes its uid/gid maps (and
setgroups), which is what bwrap needs. Writing ``setgroups`` by hand from a
namespace without a map (``unshare -U sh -c 'echo deny > ...'``) fails on good
hosts too, so it is not used.
"""

from __future__ import annotations

from sandbox_setup.checks.base import Context, Verdict
from sandbox_setup.checks.causes import APPARMOR_BWRAP_PROFILE, cause_userns_sysctls, diagnose
from sandbox_setup.checks.experiments import USERNS_PROBE
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import ProbeResult

POLICY_SYSCTLS = (
    "user.max_user_namespaces",
    "kernel.unprivileged_userns_clone",
    "kernel.apparmor_restrict_unprivileged_userns",
    "kernel.apparmor_restrict_unprivileged_unconfined",
)


def judge_userns_policy(facts: HostFacts, uid: int) -> Verdict:
    """Pure: do the sysctls and AppArmor let ``uid`` create user namespaces (for bwrap)?"""
    values = "\n".join(
        f"{name} = {facts.sysctl.get(name) if facts.sysctl.get(name) is not None else '(absent)'}"
        for name in POLICY_SYSCTLS
    )
    profiles = ", ".join(facts.bwrap_profiles) or "(none)"
    detail = f"{values}\nAppArmor profiles granting bwrap userns: {profiles}"
    blocked = cause_userns_sysctls(facts, uid)
    if blocked:
        return Verdict.from_cause(blocked, detail)
    if facts.sysctl_int("kernel.unprivileged_userns_clone") == 0:
        return Verdict(
            Status.WARN,
            "kernel.unprivileged_userns_clone=0: root may create user namespaces, an "
            "unprivileged agent user may not",
            detail,
            "sysctl -w kernel.unprivileged_userns_clone=1",
            cause="unprivileged-userns-clone-zero",
        )
    if facts.sysctl_int("kernel.apparmor_restrict_unprivileged_userns") == 1:
        if facts.bwrap_profiles:
            return Verdict(
                Status.PASS,
                "AppArmor restricts unprivileged user namespaces, and a profile grants "
                "bwrap `userns`",
                detail,
            )
        status = Status.WARN if uid == 0 else Status.FAIL
        return Verdict(
            status,
            "kernel.apparmor_restrict_unprivileged_userns=1 and no AppArmor profile grants "
            "bwrap `userns`: unprivileged users get no working user namespace"
            + (" (root is not affected)" if uid == 0 else ""),
            detail,
            APPARMOR_BWRAP_PROFILE,
            cause="apparmor-userns-restricted",
        )
    return Verdict(Status.PASS, "the sysctls allow user namespaces", detail)


def judge_userns_create(
    result: ProbeResult, facts: HostFacts, *, uid: int, platform: str
) -> Verdict:
    if result.ok:
        return Verdict(
            Status.PASS, "a user namespace with a uid map can be created", result.describe()
        )
    return Verdict.from_cause(
        diagnose(result, facts, uid=uid, platform=platform), result.describe()
    )


def check_userns_policy(ctx: Context) -> Verdict:
    return judge_userns_policy(ctx.facts, ctx.uid)


def check_userns_create(ctx: Context) -> Verdict:
    result = ctx.run(USERNS_PROBE)
    return judge_userns_create(result, ctx.facts, uid=ctx.uid, platform=ctx.platform.name)
