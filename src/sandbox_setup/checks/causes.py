"""Name why a namespace experiment failed, from what it left behind.

A failed ``unshare``/``bwrap``/``apply-seccomp`` prints one of a few errors; the
same error has different causes on different hosts, so the error is read
together with the host facts (sysctls, seccomp mode, no_new_privs, the bounding
set, AppArmor profiles, mounts over /proc, the platform). :data:`KNOWN_ERRORS` is
the one table: each row is an exact error text seen in the wild and the function
that names its cause here; the first row whose text is in the probe's stderr and
whose function names a cause wins. Every cause has a stable key (tests and the
audit match on it) and a remedy to paste. Pure functions only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sandbox_setup.base import remedies
from sandbox_setup.base.accounts import DEFAULT_AGENT_USER
from sandbox_setup.base.apparmor import manual_remedy
from sandbox_setup.base.message import Option, Recheck, Ref, message
from sandbox_setup.checks.facts import CAP_SETFCAP, HostFacts
from sandbox_setup.checks.mounts import proc_covers, proc_locked_readonly, summarize_covers
from sandbox_setup.checks.platform import cap_add_remedy, seccomp_remedy, unmask_remedy
from sandbox_setup.checks.probe import ProbeResult

SYSCTL_USERNS_PERSIST = "/etc/sysctl.d/90-sandbox-setup-userns.conf"

# The profile (base.apparmor), how --apparmor-bwrap-profile installs it, the same by
# hand, and the host-wide sysctl with what it weakens.
APPARMOR_BWRAP_PROFILE = manual_remedy()


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
# apply-seccomp (Claude's seccomp helper) could not install its filter.
SECCOMP_FILTER_REFUSED = ("apply-seccomp: prctl(PR_SET_SECCOMP)", "apply-seccomp: seccomp(")
# apply-seccomp's nested user namespace came without capabilities (Ubuntu 24.04:
# bubblewrap 0.9.0's cleared bounding set, or AppArmor's unpriv_bwrap).
HELPER_WITHOUT_CAPS = (
    "apply-seccomp: write /proc/self/setgroups (nested userns is capability-restricted; "
    "caller must provide CAP_SYS_ADMIN): Permission denied",
)
# Mapping uid 0 into a new user namespace, refused (Linux 5.12+: the creator needs
# CAP_SETFCAP); only a uid-0 caller maps uid 0.
ROOT_UID_MAP_REFUSED = (
    "bwrap: setting up uid map: Operation not permitted",
    "unshare: write failed /proc/self/uid_map: Operation not permitted",
    "apply-seccomp: write /proc/self/uid_map: Operation not permitted",
)
LOOPBACK_REFUSED = (
    "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted",
    "bwrap: loopback: Failed RTM_NEWLINK: Operation not permitted",
)
DEVPTS_REFUSED = ("Can't mount devpts on /newroot/dev/pts",)
MOUNT_SETUP_REFUSED = ("pivot_root: Permission denied", "Failed to make / slave")
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
            "user.max_user_namespaces=0: the kernel allows no user namespaces (hardened "
            "images set this, e.g. the RHEL STIG)",
            "sysctl -w user.max_user_namespaces=15000 && echo "
            f"user.max_user_namespaces=15000 > {SYSCTL_USERNS_PERSIST}\n"
            "# and drop the line that zeroes it, or it comes back at boot:\n"
            "grep -rn max_user_namespaces /etc/sysctl.conf /etc/sysctl.d/",
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
        "bwrap works with its own profile: " + APPARMOR_BWRAP_PROFILE,
    )


def cause_fresh_proc(facts: HostFacts, platform: str, *, uid: int, in_our_outer: bool) -> Cause:
    """Why a fresh procfs mount was refused."""
    if in_our_outer and uid == 0:
        return Cause(
            "outer-sandbox-by-root",
            "the outer sandbox was started by root, so bwrap covered /proc/irq and /proc/bus "
            "(and /proc/sys, /proc/sysrq-trigger where root may write them) read-only inside "
            "it; those covers make a nested fresh /proc impossible",
            message(
                "let an unprivileged user start the outer sandbox (sandbox mode does: the "
                "launcher drops to the agent user first); ",
                Recheck("that user", DEFAULT_AGENT_USER),
            ),
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


@dataclass(frozen=True)
class Failure:
    """A failed experiment and where it failed: what a row of the table judges."""

    result: ProbeResult
    facts: HostFacts
    uid: int
    platform: str
    bwrap_setuid: bool = False
    in_our_outer: bool = False  # inside the outer sandbox this probe started

    @property
    def tool(self) -> str:
        return "bwrap" if self.result.argv and self.result.argv[0] == "bwrap" else "unshare"


def _limit(f: Failure) -> Cause:
    return cause_userns_sysctls(f.facts, f.uid) or Cause(
        "user-namespace-limit",
        "the user namespace limit was reached (ENOSPC)",
        "sysctl user.max_user_namespaces (raise it) and check nesting depth",
    )


def _unsupported(_f: Failure) -> Cause:
    return Cause(
        "userns-unsupported",
        "the kernel does not support user namespaces (CONFIG_USER_NS)",
        "use a kernel built with CONFIG_USER_NS=y",
    )


def _filter_refused(f: Failure) -> Cause:
    return Cause(
        "seccomp-filter-refused",
        "Claude's seccomp helper could not install its filter (prctl(PR_SET_SECCOMP) refused: "
        "a seccomp profile around this process forbids new filters)",
        seccomp_remedy(f.platform),
    )


def _userns_refused(f: Failure) -> Cause:
    facts, uid = f.facts, f.uid
    # setuid is ignored under no_new_privs; it matters only when bwrap then
    # cannot create the namespace itself
    if f.tool == "bwrap" and f.bwrap_setuid and facts.no_new_privs:
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
        # Docker's default profile, for one: unshare/clone(CLONE_NEWUSER) -> EPERM
        return Cause(
            "seccomp-blocks-userns",
            "a seccomp filter refuses unshare/clone(CLONE_NEWUSER) (EPERM while the "
            "sysctls allow user namespaces; Seccomp: 2 in /proc/self/status)",
            seccomp_remedy(f.platform),
        )
    return Cause(
        "userns-refused",
        "creating a user namespace was refused (EPERM) and neither a sysctl nor a "
        "seccomp filter explains it",
        "check the LSM logs: journalctl -k | grep -i -e apparmor -e avc",
    )


def _apparmor_restricted(facts: HostFacts) -> bool:
    return facts.sysctl_int("kernel.apparmor_restrict_unprivileged_userns") == 1


def cause_unpriv_bwrap(facts: HostFacts) -> Cause | None:
    """Ubuntu's bwrap-userns-restrict profile, when it is what confines this."""
    if not facts.bwrap_restricting_profiles:
        return None
    profile = facts.bwrap_restricting_profiles[0]
    return Cause(
        "apparmor-unpriv-bwrap",
        f"AppArmor's bwrap-userns-restrict profile ({profile}) lets bwrap create user "
        "namespaces but confines what it runs to unpriv_bwrap, which has no capabilities: "
        "a sandbox or seccomp helper inside bwrap gets none in its own namespace",
        f"apparmor_parser -R {profile} && mv {profile} /root/{profile.rsplit('/', 1)[-1]}"
        ".disabled\n" + APPARMOR_BWRAP_PROFILE,
    )


CONTAINERS = ("docker", "podman", "kubernetes", "lxc", "nspawn", "oci")


def _helper_without_caps(f: Failure) -> Cause | None:
    if _apparmor_restricted(f.facts) and f.uid != 0:
        restricted = cause_unpriv_bwrap(f.facts) or cause_apparmor(f.facts, f.uid, tool="unshare")
        if restricted is not None:
            return restricted
    if f.platform in CONTAINERS:
        return None  # the container's own restrictions: the ID-map row names them
    return Cause(
        "bwrap-bounding-set-cleared",
        "Claude's seccomp helper (apply-seccomp) got no CAP_SYS_ADMIN in its nested user "
        "namespace: the bwrap that started it cleared the capability bounding set (as "
        "bubblewrap 0.9.0 on Ubuntu 24.04 does), and no AppArmor rule explains it",
        f"{remedies.change_setup('--inner-sandbox', 'off')}   "
        "(the launcher's own sandbox still confines the agent); or, to keep Claude's "
        "sandbox without its Unix-socket filter, set sandbox.network.allowAllUnixSockets "
        "= true in /etc/claude-code/managed-settings.json (Claude then skips the helper)",
    )


# setpriv (root dropping to the probe user, as a launch drops to the agent) was refused
# the id change: the container dropped CAP_SETUID or CAP_SETGID.
SWITCH_REFUSED = ("setresuid failed", "setresgid failed", "setgroups failed")
SWITCH_CAUSE = "root-cannot-switch-user"


def switch_capability(error: str) -> str | None:
    """The capability (without ``CAP_``) an id change refused in ``error`` needs."""
    if "setresuid failed" in error:
        return "SETUID"
    if "setresgid failed" in error or "setgroups failed" in error:
        return "SETGID"
    return None


def _switch_refused(f: Failure) -> Cause | None:
    # (only root's probes change ids: f.uid is the probe user's, whom root became)
    capability = switch_capability(f.result.stderr)
    if capability is None:
        return None
    return Cause(
        SWITCH_CAUSE,
        f"root lacks CAP_{capability} here: it cannot become another account, so no launch "
        "as root works (sandbox and user mode both run the agent, and the egress proxy, "
        f"as accounts of their own): {f.result.last_error or 'setpriv failed'}",
        cap_add_remedy(f.platform, capability)
        or f"give root CAP_{capability} (systemd: CapabilityBoundingSet=)",
    )


def _root_uid_map(f: Failure) -> Cause | None:
    if f.uid != 0 or f.facts.has_bounding_cap(CAP_SETFCAP):
        return None  # an unprivileged caller maps its own uid, not 0: another cause
    return Cause(
        "root-without-setfcap",
        "root without CAP_SETFCAP in its capability bounding set: Linux (5.12+) maps uid 0 "
        "into a new user namespace only for a creator holding CAP_SETFCAP, so bwrap and "
        "Claude's seccomp helper cannot start a sandbox as root here",
        "give the process CAP_SETFCAP (docker/podman: --cap-add SETFCAP; systemd: remove it "
        "from CapabilityBoundingSet=/CapabilityBoundingSet=~), or run the sandbox as an "
        "unprivileged user: sandbox mode's launcher drops to the agent user first",
    )


def _loopback(f: Failure) -> Cause:
    if _apparmor_restricted(f.facts) and f.uid != 0:
        restricted = cause_unpriv_bwrap(f.facts) if f.in_our_outer else None
        restricted = restricted or cause_apparmor(f.facts, f.uid, tool="bwrap")
        if restricted is not None:
            return restricted
    return Cause(
        "netns-loopback-refused",
        "bwrap could not bring up loopback in its new network namespace (RTM_NEWADDR "
        "refused: no CAP_NET_ADMIN there, which an LSM or a seccomp profile took away)",
        "check the LSM logs: journalctl -k | grep -i -e apparmor -e avc   (Ubuntu: "
        "kernel.apparmor_restrict_unprivileged_userns=1 does this; the bwrap AppArmor profile "
        f"that this check names fixes it: {remedies.rerun_checks('userns.policy')})",
    )


def _id_map(f: Failure) -> Cause:
    apparmor = cause_apparmor(f.facts, f.uid, tool=f.tool)
    if apparmor:
        return apparmor
    return Cause(
        "nested-userns-restricted",
        "a nested user namespace is capability-restricted: writing its "
        "/proc/self/setgroups or /proc/self/uid_map was refused (the /proc it sees is "
        "bound from outside, not its own)",
        "make a fresh /proc possible so the strong form works: " + unmask_remedy(f.platform),
    )


def _devpts(f: Failure) -> Cause:
    if f.platform == "podman":
        return Cause(
            "podman-keep-id-devpts",
            "bwrap could not mount a new devpts on /dev/pts: rootless podman with "
            "--userns=keep-id gives this user a namespace where devpts cannot be mounted",
            "run the container without --userns=keep-id (the default rootless mapping) and "
            "let sandbox-setup create the agent user inside it: podman run ... (no "
            "--userns=keep-id); or run the agent as the container's root user",
        )
    return Cause(
        "devpts-refused",
        "bwrap could not mount a new devpts on /dev/pts (--dev /dev)",
        "check the container's /dev/pts mount and the LSM logs: "
        "journalctl -k | grep -i -e apparmor -e avc",
    )


def _mount_setup(f: Failure) -> Cause:
    if f.platform == "lxc":
        return Cause(
            "lxc-nesting-off",
            "LXC's AppArmor profile refuses bwrap's mount setup (pivot_root or making / a "
            "slave mount): the container does not allow nesting",
            "lxc config set <container> security.nesting=true && lxc restart <container>   "
            "(Incus: incus config set ...; Proxmox: features: nesting=1 in "
            "/etc/pve/lxc/<id>.conf; plain LXC: lxc.apparmor.allow_nesting = 1)",
        )
    return Cause(
        "mount-setup-refused",
        "bwrap's mount setup (pivot_root, or making / a slave mount) was refused",
        "check the LSM logs: journalctl -k | grep -i -e apparmor -e avc",
    )


def _fresh_proc(f: Failure) -> Cause:
    return cause_fresh_proc(f.facts, f.platform, uid=f.uid, in_our_outer=f.in_our_outer)


@dataclass(frozen=True)
class KnownError:
    """An error text seen in the wild, and the function that names its cause here
    (None: not this row's cause; the next row that matches decides)."""

    texts: tuple[str, ...]
    cause: Callable[[Failure], Cause | None]
    seen: str  # where it is seen: for the reader of this table


# Order matters: specific texts before the general ones they contain.
KNOWN_ERRORS: tuple[KnownError, ...] = (
    # First: the switch fails before the experiment runs, so nothing after it tells.
    KnownError(SWITCH_REFUSED, _switch_refused, "docker/podman --cap-drop SETUID or SETGID"),
    KnownError(USERNS_LIMIT, _limit, "user.max_user_namespaces=0 (RHEL STIG), nesting depth"),
    KnownError(USERNS_UNSUPPORTED, _unsupported, "kernels without CONFIG_USER_NS"),
    KnownError(SECCOMP_FILTER_REFUSED, _filter_refused, "a seccomp profile forbidding filters"),
    KnownError(
        NEW_USERNS_REFUSED,
        _userns_refused,
        "Docker's default seccomp profile, unprivileged_userns_clone=0, setuid bwrap + NNP",
    ),
    KnownError(
        HELPER_WITHOUT_CAPS,
        _helper_without_caps,
        "Ubuntu 24.04: bubblewrap 0.9.0's cleared bounding set, AppArmor's unpriv_bwrap",
    ),
    KnownError(ROOT_UID_MAP_REFUSED, _root_uid_map, "root with CAP_SETFCAP dropped"),
    KnownError(LOOPBACK_REFUSED, _loopback, "Ubuntu 24.04 AppArmor userns restriction"),
    KnownError(ID_MAP_REFUSED, _id_map, "AppArmor userns restriction, a bound /proc"),
    KnownError(DEVPTS_REFUSED, _devpts, "rootless podman --userns=keep-id"),
    KnownError(MOUNT_SETUP_REFUSED, _mount_setup, "LXC without nesting"),
    KnownError(FRESH_PROC_REFUSED, _fresh_proc, "masked /proc: docker, podman, k8s, root bwrap"),
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
    failure = Failure(result, facts, uid, platform, bwrap_setuid, in_our_outer)
    if result.not_found:
        tool = failure.tool
        package = "bubblewrap" if tool == "bwrap" else "util-linux"
        return Cause(
            f"{tool}-missing", f"{result.argv[0]} is not installed", f"apt-get install -y {package}"
        )
    if result.timed_out:
        return Cause(
            "timeout",
            "the experiment did not finish in time",
            message("re-run with ", Ref(Option.TIMEOUT, value="30")),
        )
    for row in KNOWN_ERRORS:
        if _has(result.stderr, *row.texts):
            cause = row.cause(failure)
            if cause is not None:
                return cause
    return Cause(
        "unknown",
        "failed: " + (result.last_error or f"exit {result.returncode}"),
        "",
    )
