"""Naming the cause of a failed namespace experiment from its stderr and the host facts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sandbox_setup.checks.causes import diagnose
from sandbox_setup.checks.facts import HostFacts, parse_status
from sandbox_setup.checks.mounts import parse_mountinfo
from sandbox_setup.checks.probe import ProbeResult
from tests.unit.fixtures.trees import DEBIAN_SYSCTLS, UBUNTU_2404_SYSCTLS, fixture_text

UNSHARE = ("unshare", "-Ur", "true")
BWRAP = ("bwrap", "--unshare-user", "--unshare-pid", "--proc", "/proc", "true")

# What the tools really print (util-linux 2.38, bubblewrap 0.8, Claude's apply-seccomp).
UNSHARE_EPERM = "unshare: unshare failed: Operation not permitted"
UNSHARE_ENOSPC = "unshare: unshare failed: No space left on device"
UNSHARE_UID_MAP = "unshare: write failed /proc/self/uid_map: Operation not permitted"
UNSHARE_MOUNT_PROC = "unshare: mount /proc failed: Operation not permitted"
BWRAP_EPERM = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not "
    "allow non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)
BWRAP_ENOSPC = (
    "bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces "
    "exceeded (ENOSPC)"
)
BWRAP_DEBIAN_EPERM = (
    "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. See <https://deb.li/bubblewrap> or "
    "<file:///usr/share/doc/bubblewrap/README.Debian.gz>."
)
BWRAP_UID_MAP = "bwrap: setting up uid map: Permission denied"
BWRAP_PROC = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
APPLY_SECCOMP = (
    "apply-seccomp: write /proc/self/setgroups (nested userns is capability-restricted; "
    "caller must provide CAP_SYS_ADMIN): Permission denied"
)


def facts(
    status: str = "host_root.txt",
    mountinfo: str = "host_debian12.txt",
    sysctls: dict[str, str] | None = None,
    profiles: tuple[str, ...] = (),
) -> HostFacts:
    return HostFacts(
        status=parse_status(fixture_text("status", status)),
        mounts=parse_mountinfo(fixture_text("mountinfo", mountinfo)),
        sysctl=dict(DEBIAN_SYSCTLS if sysctls is None else sysctls),
        bwrap_profiles=profiles,
    )


def failed(argv: tuple[str, ...], stderr: str) -> ProbeResult:
    return ProbeResult(argv, 1, "", stderr + "\n")


CASES = [
    # (name, result, facts, uid, platform, kwargs, expected key, words in summary/remedy)
    (
        "seccomp unshare",
        failed(UNSHARE, UNSHARE_EPERM),
        facts("docker_default.txt"),
        0,
        "docker",
        {},
        "seccomp-blocks-userns",
        ["seccomp", "seccomp=unconfined"],
    ),
    (
        "seccomp bwrap",
        failed(BWRAP, BWRAP_EPERM),
        facts("docker_default.txt"),
        0,
        "kubernetes",
        {},
        "seccomp-blocks-userns",
        ["seccompProfile"],
    ),
    (
        "nesting depth",
        failed(BWRAP, BWRAP_ENOSPC),
        facts(),
        0,
        "none",
        {},
        "user-namespace-limit",
        ["ENOSPC"],
    ),
    (
        "debian bwrap clone 0",
        failed(BWRAP, BWRAP_DEBIAN_EPERM),
        facts(sysctls={**DEBIAN_SYSCTLS, "kernel.unprivileged_userns_clone": "0"}),
        1000,
        "none",
        {},
        "unprivileged-userns-clone-zero",
        [],
    ),
    (
        "bwrap setgroups",
        failed(BWRAP, "bwrap: error writing to setgroups: Permission denied"),
        facts(sysctls=UBUNTU_2404_SYSCTLS),
        1000,
        "none",
        {},
        "apparmor-userns-restricted",
        [],
    ),
    (
        "eperm unexplained",
        failed(UNSHARE, UNSHARE_EPERM),
        facts(),
        0,
        "none",
        {},
        "userns-refused",
        ["EPERM"],
    ),
    (
        "unpriv clone 0",
        failed(BWRAP, BWRAP_EPERM),
        facts(sysctls={**DEBIAN_SYSCTLS, "kernel.unprivileged_userns_clone": "0"}),
        1000,
        "none",
        {},
        "unprivileged-userns-clone-zero",
        ["kernel.unprivileged_userns_clone=1"],
    ),
    (
        "max userns 0 unshare",
        failed(UNSHARE, UNSHARE_ENOSPC),
        facts(sysctls={"user.max_user_namespaces": "0"}),
        0,
        "none",
        {},
        "max-user-namespaces-zero",
        ["user.max_user_namespaces=15000"],
    ),
    (
        "max userns 0 bwrap",
        failed(BWRAP, BWRAP_ENOSPC),
        facts(sysctls={"user.max_user_namespaces": "0"}),
        1000,
        "none",
        {},
        "max-user-namespaces-zero",
        ["sysctl -w user.max_user_namespaces"],
    ),
    (
        "max userns 0 eperm",
        failed(UNSHARE, UNSHARE_EPERM),
        facts("docker_default.txt", sysctls={"user.max_user_namespaces": "0"}),
        0,
        "docker",
        {},
        "max-user-namespaces-zero",
        [],
    ),
    (
        "apparmor bwrap no profile",
        failed(BWRAP, BWRAP_UID_MAP),
        facts(sysctls=UBUNTU_2404_SYSCTLS),
        1000,
        "none",
        {},
        "apparmor-userns-restricted",
        [
            "--apparmor-bwrap-profile",
            "/etc/apparmor.d/sandbox-setup-bwrap",
            "profile sandbox-setup-bwrap /usr/bin/bwrap flags=(unconfined)",
            "userns,",
            "apparmor_parser -r -W /etc/apparmor.d/sandbox-setup-bwrap",
            "_unconfined=1",
            "kernel.apparmor_restrict_unprivileged_userns=0",
            "any process of any user gets unprivileged user namespaces back",
        ],
    ),
    (
        "apparmor bwrap loopback, no profile",
        failed(BWRAP, "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"),
        facts(sysctls=UBUNTU_2404_SYSCTLS),
        1000,
        "none",
        {},
        "apparmor-userns-restricted",
        ["--apparmor-bwrap-profile", "any process of any user"],
    ),
    (
        "apparmor unshare",
        failed(UNSHARE, UNSHARE_UID_MAP),
        facts(sysctls=UBUNTU_2404_SYSCTLS, profiles=("/etc/apparmor.d/bwrap",)),
        1000,
        "none",
        {},
        "apparmor-userns-restricted",
        ["apparmor_restrict_unprivileged_userns"],
    ),
    (
        "nested userns weak",
        failed(BWRAP, UNSHARE_UID_MAP),
        facts(),
        0,
        "podman",
        {},
        "nested-userns-restricted",
        ["uid_map", "unmask=/proc/*"],
    ),
    (
        "apply-seccomp setgroups",
        failed(BWRAP, APPLY_SECCOMP),
        facts(),
        1000,
        "docker",
        {},
        "nested-userns-restricted",
        ["setgroups", "systempaths=unconfined"],
    ),
    (
        "docker masks",
        failed(BWRAP, BWRAP_PROC),
        facts(mountinfo="docker_default.txt"),
        0,
        "docker",
        {},
        "proc-masked",
        ["/proc/kcore", "systempaths=unconfined"],
    ),
    (
        "podman masks",
        failed(UNSHARE, UNSHARE_MOUNT_PROC),
        facts(mountinfo="podman_rootless.txt"),
        0,
        "podman",
        {},
        "proc-masked",
        ["/proc/latency_stats", "unmask=/proc/*"],
    ),
    (
        "kubernetes masks",
        failed(BWRAP, BWRAP_PROC),
        facts(mountinfo="kubernetes_containerd.txt"),
        0,
        "kubernetes",
        {},
        "proc-masked",
        ["procMount: Unmasked", "hostUsers: false"],
    ),
    (
        "lxc masks",
        failed(BWRAP, BWRAP_PROC),
        facts(mountinfo="lxc_unprivileged.txt"),
        0,
        "lxc",
        {},
        "proc-masked",
        ["/proc/meminfo", "security.nesting=true"],
    ),
    (
        "root bwrap covers",
        failed(BWRAP, BWRAP_PROC),
        facts(mountinfo="bwrap_root_outer.txt"),
        0,
        "bwrap",
        {},
        "proc-covered-read-only",
        ["/proc/irq", "read-only", "unprivileged user"],
    ),
    (
        "our outer by root",
        failed(BWRAP, BWRAP_PROC),
        facts(),
        0,
        "none",
        {"in_our_outer": True},
        "outer-sandbox-by-root",
        ["started by root", "--as-user"],
    ),
    (
        "our outer unprivileged",
        failed(BWRAP, BWRAP_PROC),
        facts(),
        1000,
        "none",
        {"in_our_outer": True},
        "fresh-proc-refused",
        [],
    ),
    (
        "read-only proc",
        failed(UNSHARE, UNSHARE_MOUNT_PROC),
        facts(mountinfo="proc_read_only.txt"),
        0,
        "none",
        {},
        "proc-read-only",
        ["read-only"],
    ),
    (
        "setuid bwrap nnp",
        failed(BWRAP, BWRAP_EPERM),
        facts("docker_no_new_privs.txt"),
        1000,
        "docker",
        {"bwrap_setuid": True},
        "setuid-bwrap-no-new-privs",
        ["no_new_privs", "no-new-privileges"],
    ),
    (
        "setuid bwrap without nnp",
        failed(BWRAP, BWRAP_EPERM),
        facts(),
        1000,
        "none",
        {"bwrap_setuid": True},
        "userns-refused",
        [],
    ),
    (
        "bwrap missing",
        ProbeResult(BWRAP, None, not_found=True),
        facts(),
        0,
        "none",
        {},
        "bwrap-missing",
        ["apt-get install -y bubblewrap"],
    ),
    (
        "unshare missing",
        ProbeResult(UNSHARE, None, not_found=True),
        facts(),
        0,
        "none",
        {},
        "unshare-missing",
        ["util-linux"],
    ),
    (
        "timeout",
        ProbeResult(BWRAP, None, timed_out=True),
        facts(),
        0,
        "none",
        {},
        "timeout",
        ["--timeout"],
    ),
    (
        "unknown",
        failed(BWRAP, "bwrap: execvp true: No such file or directory"),
        facts(),
        0,
        "none",
        {},
        "unknown",
        ["execvp true"],
    ),
]


@pytest.mark.parametrize(
    ("result", "host", "uid", "platform", "kwargs", "key", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_diagnose(
    result: ProbeResult,
    host: HostFacts,
    uid: int,
    platform: str,
    kwargs: dict[str, bool],
    key: str,
    words: list[str],
) -> None:
    cause = diagnose(result, host, uid=uid, platform=platform, **kwargs)
    assert cause.key == key, cause
    text = cause.summary + "\n" + cause.remedy
    for word in words:
        assert word in text, (word, cause)
    if key != "unknown":
        assert cause.remedy.strip(), f"{key} has no remedy"


def test_root_is_not_blocked_by_the_unprivileged_sysctl_or_apparmor() -> None:
    # root has CAP_SYS_ADMIN: neither unprivileged_userns_clone=0 nor AppArmor's
    # restriction explains a failure of root's probe.
    host = facts(sysctls={**UBUNTU_2404_SYSCTLS, "kernel.unprivileged_userns_clone": "0"})
    assert diagnose(failed(BWRAP, BWRAP_EPERM), host, uid=0, platform="none").key == (
        "userns-refused"
    )
    assert diagnose(failed(BWRAP, BWRAP_UID_MAP), host, uid=0, platform="none").key == (
        "nested-userns-restricted"
    )


def test_setuid_bwrap_under_no_new_privs_only_explains_a_refused_namespace() -> None:
    nnp_masked = facts("docker_no_new_privs.txt", mountinfo="docker_default.txt")
    proc = diagnose(
        failed(BWRAP, BWRAP_PROC), nnp_masked, uid=1000, platform="docker", bwrap_setuid=True
    )
    assert proc.key == "proc-masked"  # bwrap did create its namespace without setuid
    both = facts(
        "docker_no_new_privs.txt",
        sysctls={**DEBIAN_SYSCTLS, "kernel.unprivileged_userns_clone": "0"},
    )
    cause = diagnose(
        failed(BWRAP, BWRAP_DEBIAN_EPERM), both, uid=1000, platform="docker", bwrap_setuid=True
    )
    assert cause.key == "setuid-bwrap-no-new-privs"
    assert "unprivileged_userns_clone=0" in cause.summary


def test_the_error_decides_not_the_facts_alone() -> None:
    # masks over /proc do not explain a refused user namespace
    host = replace(facts("docker_default.txt", mountinfo="docker_default.txt"))
    assert diagnose(failed(UNSHARE, UNSHARE_EPERM), host, uid=0, platform="docker").key == (
        "seccomp-blocks-userns"
    )


@pytest.mark.parametrize(
    ("stderr", "capability"),
    [
        ("setpriv: setresuid failed: Operation not permitted", "CAP_SETUID"),
        ("setpriv: setresgid failed: Operation not permitted", "CAP_SETGID"),
    ],
)
def test_a_refused_switch_to_the_probe_user_names_the_capability_and_the_flag(
    stderr: str, capability: str
) -> None:
    """docker run --cap-drop SETUID (or SETGID): setpriv fails before the experiment; the
    cause is root's missing capability (every launch drops to the agent), not the tool's."""
    for argv in (BWRAP, UNSHARE):
        cause = diagnose(failed(argv, stderr), facts(), uid=65534, platform="docker")
        assert cause.key == "root-cannot-switch-user"
        assert capability in cause.summary and "no launch as root works" in cause.summary
        assert cause.remedy.startswith(f"docker run --cap-add {capability[4:]} ")
    host = diagnose(failed(BWRAP, stderr), facts(), uid=65534, platform="none")
    assert f"give root {capability}" in host.remedy and "--cap-add" not in host.remedy
