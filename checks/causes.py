"""Name why a namespace experiment failed, from what it left behind.

A failed ``unshare``/``bwrap`` prints one of a few errors; the same error has
different causes on different hosts, so the error is read together with the host
facts (sysctls, seccomp mode, no_new_privs, mounts over /proc, the platform).
Every cause has a stable key (tests and the audit match on it) and a remedy to
paste. Pure functions only.
"""

from __future__ import annotations

from dataclasses import dataclass

from checks.facts import HostFacts
from checks.mounts import proc_covers, proc_locked_readonly, summarize_covers
from checks.platform import seccomp_remedy, unmask_remedy
from checks.probe import ProbeResult

SYSCTL_USERNS_PERSIST = "/etc/sysctl.d/90-sandbox-setup-userns.conf"

APPARMOR_BWRAP_PROFILE = """cat > /etc/apparmor.d/bwrap <<'EOF'
abi <abi/4.0>,
include <tunables/global>
profile bwrap /usr/bin/bwrap flags=(unconfined) {
  userns,
  include if exists <local/bwrap>
}
EOF
apparmor_parser -r /etc/apparmor.d/bwrap"""


@dataclass(frozen=True)
class Cause:
    """Why an experiment failed: a stable key, one line naming it, the fix."""

    key: str
    summary: str
    remedy: str = ""


def _has(text: str, *needles: str) -> bool:
    return any(n in text for n in needles)


# What the tools print, grouped by the step that failed.
NEW_USERNS_REFUSED = (
    "unshare failed: Operation not permitted",
    "No permissions to creating new namespace",
    "No permissions to create new namespace",
    "Creating new namespace failed: Operation not permitted",
    "clone failed: Operation not permitted",
    "unshare failed: Function not implemented",
)
USERNS_LIMIT = ("No space left on device", "(ENOSPC)", "max_*_namespaces exceeded")
USERNS_UNSUPPORTED = ("Creating new namespace failed, likely because the kernel does not support",)
ID_MAP_REFUSED = (
    "/proc/self/uid_map",
    "/proc/self/gid_map",
    "/proc/self/setgroups",
    "setting up uid map",
    "setting up gid map",
    "nested userns is capability-restricted",
    "error writing to setgroups",
)
FRESH_PROC_REFUSED = (
    "Can't mount proc on /newroot/proc",
    "mount /proc failed",
    "cannot mount proc",
)


def cause_userns_sysctls(facts: HostFacts, uid: int) -> Cause | None:
    """A sysctl that forbids user namespaces for this uid, if any."""
    if facts.sysctl_int("user.max_user_namespaces") == 0:
        return Cause(
            "max-user-namespaces-zero",
            "user.max_user_namespaces=0: the kernel allows no user namespaces",
            "sysctl -w user.max_user_namespaces=15000 && echo "
            f"user.max_user_namespaces=15000 > {SYSCTL_USERNS_PERSIST}",
        )
    if uid != 0 and facts.sysctl_int("kernel.unprivileged_userns_clone") == 0:
        return Cause(
            "unprivileged-userns-clone-zero",
            "kernel.unprivileged_userns_clone=0: unprivileged users may not create user namespaces",
            "sysctl -w kernel.unprivileged_userns_clone=1 && echo "
            f"kernel.unprivileged_userns_clone=1 > {SYSCTL_USERNS_PERSIST}",
        )
    return None


def cause_apparmor(facts: HostFacts, uid: int, *, tool: str) -> Cause | None:
    """Ubuntu's AppArmor userns restriction, when it applies to this caller."""
    restricted = facts.sysctl_int("kernel.apparmor_restrict_unprivileged_userns") == 1
    if uid == 0 or not restricted:
        return None
    if tool == "bwrap" and facts.bwrap_profiles:
        return None  # bwrap has its own profile granting userns
    unconfined = facts.sysctl_int("kernel.apparmor_restrict_unprivileged_unconfined") == 1
    extra = " (and kernel.apparmor_restrict_unprivileged_unconfined=1)" if unconfined else ""
    if tool == "bwrap":
        return Cause(
            "apparmor-userns-restricted",
            "kernel.apparmor_restrict_unprivileged_userns=1"
            + extra
            + " and no AppArmor profile grants bwrap `userns`",
            APPARMOR_BWRAP_PROFILE,
        )
    return Cause(
        "apparmor-userns-restricted",
        "kernel.apparmor_restrict_unprivileged_userns=1"
        + extra
        + ": unconfined programs (like unshare) get a user namespace without capabilities",
        "bwrap works with its own profile:\n" + APPARMOR_BWRAP_PROFILE + "\n(or, host-wide: "
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)",
    )


def cause_fresh_proc(facts: HostFacts, platform: str, *, uid: int, in_our_outer: bool) -> Cause:
    """Why a fresh procfs mount was refused."""
    if in_our_outer and uid == 0:
        return Cause(
            "outer-sandbox-by-root",
            "the outer sandbox was started by root, so bwrap covered /proc/irq and /proc/bus "
            "(and /proc/sys, /proc/sysrq-trigger where root may write them) read-only inside "
            "it; those covers make a nested fresh /proc impossible",
            "let an unprivileged user start the outer sandbox (sandbox mode does: the "
            "launcher drops to the agent user first); re-check as that user: "
            "sandbox-setup --check --as-user <agent-user>",
        )
    covers = proc_covers(facts.mounts)
    if covers:
        if platform == "bwrap" or all(c.kind != "masked" for c in covers):
            return Cause(
                "proc-covered-read-only",
                "/proc has read-only covers ("
                + summarize_covers(covers)
                + "), as bwrap leaves when root starts it; a fresh /proc is refused under them",
                unmask_remedy("bwrap" if platform in ("bwrap", "none") else platform),
            )
        return Cause(
            "proc-masked",
            "/proc is masked: " + summarize_covers(covers) + "; the kernel refuses a fresh "
            "/proc in a child namespace while the parent's /proc has mounts over it",
            unmask_remedy(platform),
        )
    if proc_locked_readonly(facts.mounts):
        return Cause(
            "proc-read-only",
            "/proc is mounted read-only; the kernel refuses a fresh read-write /proc under it",
            unmask_remedy(platform),
        )
    return Cause(
        "fresh-proc-refused",
        "mounting a fresh /proc was refused (no mask over /proc found in mountinfo)",
        "check the LSM (AppArmor/SELinux) logs: journalctl -k | grep -i -e apparmor -e avc",
    )


def diagnose(
    result: ProbeResult,
    facts: HostFacts,
    *,
    uid: int,
    platform: str,
    bwrap_setuid: bool = False,
    in_our_outer: bool = False,
) -> Cause:
    """The cause of a failed namespace experiment (``result.ok`` is False)."""
    err = result.stderr
    tool = "bwrap" if result.argv and result.argv[0] == "bwrap" else "unshare"
    if result.not_found:
        package = "bubblewrap" if tool == "bwrap" else "util-linux"
        return Cause(
            f"{tool}-missing", f"{result.argv[0]} is not installed", f"apt-get install -y {package}"
        )
    if result.timed_out:
        return Cause("timeout", "the experiment did not finish in time", "re-run with --timeout 30")
    if _has(err, *USERNS_LIMIT):
        return cause_userns_sysctls(facts, uid) or Cause(
            "user-namespace-limit",
            "the user namespace limit was reached (ENOSPC)",
            "sysctl user.max_user_namespaces (raise it) and check nesting depth",
        )
    if _has(err, *USERNS_UNSUPPORTED):
        return Cause(
            "userns-unsupported",
            "the kernel does not support user namespaces (CONFIG_USER_NS)",
            "use a kernel built with CONFIG_USER_NS=y",
        )
    if _has(err, *NEW_USERNS_REFUSED):
        # setuid is ignored under no_new_privs; it matters only when bwrap then
        # cannot create the namespace itself
        if tool == "bwrap" and bwrap_setuid and facts.no_new_privs:
            also = cause_userns_sysctls(facts, uid)
            return Cause(
                "setuid-bwrap-no-new-privs",
                "bwrap is setuid but this process runs with no_new_privs, so the setuid bit is "
                "ignored and bwrap has no privilege" + (f" (and {also.summary})" if also else ""),
                "run without no_new_privs (docker/podman: drop --security-opt no-new-privileges), "
                "or use a non-setuid bwrap with user namespaces: chmod u-s $(command -v bwrap)",
            )
        sysctl = cause_userns_sysctls(facts, uid)
        if sysctl:
            return sysctl
        if facts.seccomp_mode == 2:
            return Cause(
                "seccomp-blocks-userns",
                "a seccomp filter refuses unshare/clone(CLONE_NEWUSER) (EPERM while the "
                "sysctls allow user namespaces; Seccomp: 2 in /proc/self/status)",
                seccomp_remedy(platform),
            )
        return Cause(
            "userns-refused",
            "creating a user namespace was refused (EPERM) and neither a sysctl nor a "
            "seccomp filter explains it",
            "check the LSM logs: journalctl -k | grep -i -e apparmor -e avc",
        )
    if _has(err, *ID_MAP_REFUSED):
        apparmor = cause_apparmor(facts, uid, tool=tool)
        if apparmor:
            return apparmor
        return Cause(
            "nested-userns-restricted",
            "a nested user namespace is capability-restricted: writing its "
            "/proc/self/setgroups or /proc/self/uid_map was refused (the /proc it sees is "
            "bound from outside, not its own)",
            "make a fresh /proc possible so the strong form works: " + unmask_remedy(platform),
        )
    if _has(err, *FRESH_PROC_REFUSED):
        return cause_fresh_proc(facts, platform, uid=uid, in_our_outer=in_our_outer)
    return Cause(
        "unknown",
        "failed: " + (result.last_error or f"exit {result.returncode}"),
        "",
    )
