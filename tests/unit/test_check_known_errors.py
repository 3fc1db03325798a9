"""The table of known error texts (sandbox_setup.checks.causes.KNOWN_ERRORS), from canned output.

Each case is the exact text a tool prints on a host where it was seen, with the
host facts that tell its cause apart. Which of these this kernel reproduces for
real is in tests/integration/test_check_causes_real.py (and the container
scenarios of test_check_containers.py); the rest can only be canned here:

- real: root without CAP_SETFCAP, user.max_user_namespaces=0, a seccomp profile
  that refuses new user namespaces (Docker's default) or new filters;
- text real, cause simulated: ``loopback: Failed RTM_NEWADDR`` (a seccomp
  profile refusing sendto stands in for AppArmor taking CAP_NET_ADMIN);
- canned: Ubuntu 24.04's bubblewrap 0.9.0 / AppArmor ``unpriv_bwrap`` (no
  AppArmor here, and an empty bounding set alone does not break the helper on
  this kernel), rootless podman ``--userns=keep-id`` devpts, LXC's AppArmor
  (``pivot_root``, ``make / slave``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sandbox_setup.checks.causes import KNOWN_ERRORS, diagnose
from sandbox_setup.checks.facts import HostFacts, parse_status, profile_restricts_bwrap_children
from sandbox_setup.checks.mounts import parse_mountinfo
from sandbox_setup.checks.probe import ProbeResult
from tests.unit.fixtures.trees import DEBIAN_SYSCTLS, UBUNTU_2404_SYSCTLS, fixture_text

BWRAP = ("bwrap", "--unshare-user", "--unshare-pid", "--proc", "/proc", "true")
UNSHARE = ("unshare", "-Ur", "true")
RESTRICT = "/etc/apparmor.d/bwrap-userns-restrict"
UBUNTU_NO_RESTRICTION = {**UBUNTU_2404_SYSCTLS, "kernel.apparmor_restrict_unprivileged_userns": "0"}

# The exact texts, as the tools print them.
HELPER_SETGROUPS = (
    "apply-seccomp: write /proc/self/setgroups (nested userns is capability-restricted; "
    "caller must provide CAP_SYS_ADMIN): Permission denied"
)
HELPER_UID_MAP = "apply-seccomp: write /proc/self/uid_map: Operation not permitted"
HELPER_PRCTL = "apply-seccomp: prctl(PR_SET_SECCOMP): Operation not permitted"
BWRAP_ROOT_UID_MAP = "bwrap: setting up uid map: Operation not permitted"
LOOPBACK = "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"
DEVPTS = "bwrap: Can't mount devpts on /newroot/dev/pts: Permission denied"
PIVOT_ROOT = "bwrap: pivot_root: Permission denied"
MAKE_SLAVE = "bwrap: Failed to make / slave: Permission denied"
DOCKER_SECCOMP = (
    "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. See <https://deb.li/bubblewrap> or "
    "<file:///usr/share/doc/bubblewrap/README.Debian.gz>."
)
STIG_ENOSPC = "unshare: unshare failed: No space left on device"
# CapBnd of a root whose bounding set lacks CAP_SETFCAP (bit 31), e.g. docker --cap-drop SETFCAP.
NO_SETFCAP_STATUS = fixture_text("status", "host_root.txt").replace(
    "CapBnd:\t000001ffffffffff", "CapBnd:\t000001ff7fffffff"
)


def facts(
    status: str = "host_root.txt",
    sysctls: dict[str, str] | None = None,
    profiles: tuple[str, ...] = (),
    restricting: tuple[str, ...] = (),
    status_text: str | None = None,
) -> HostFacts:
    return HostFacts(
        status=parse_status(status_text or fixture_text("status", status)),
        mounts=parse_mountinfo(fixture_text("mountinfo", "host_debian12.txt")),
        sysctl=dict(DEBIAN_SYSCTLS if sysctls is None else sysctls),
        bwrap_profiles=profiles,
        bwrap_restricting_profiles=restricting,
    )


# What root's setpriv printed in real rootful Podman 4.3.1 with --cap-drop SETUID / SETGID.
SETPRIV_SETRESUID = "setpriv: setresuid failed: Operation not permitted"
SETPRIV_SETRESGID = "setpriv: setresgid failed: Operation not permitted"


def failed(argv: tuple[str, ...], stderr: str) -> ProbeResult:
    return ProbeResult(argv, 1, "", stderr + "\n")


UBUNTU_RESTRICTING = facts(
    sysctls=UBUNTU_2404_SYSCTLS, profiles=(RESTRICT,), restricting=(RESTRICT,)
)
CASES = [
    # (name, stderr, argv, facts, uid, platform, in_our_outer, key, words)
    (
        "ubuntu 24.04 bwrap 0.9.0: the helper in Claude's bwrap",
        HELPER_SETGROUPS,
        BWRAP,
        facts(sysctls=UBUNTU_NO_RESTRICTION),
        1000,
        "none",
        True,
        "bwrap-bounding-set-cleared",
        ["bounding set", "0.9.0", "--inner-sandbox off", "allowAllUnixSockets"],
    ),
    (
        "ubuntu unpriv_bwrap: the helper",
        HELPER_SETGROUPS,
        BWRAP,
        UBUNTU_RESTRICTING,
        1000,
        "none",
        True,
        "apparmor-unpriv-bwrap",
        ["unpriv_bwrap", f"apparmor_parser -R {RESTRICT}", "flags=(unconfined)"],
    ),
    (
        "ubuntu unpriv_bwrap: loopback inside our outer sandbox",
        LOOPBACK,
        BWRAP,
        UBUNTU_RESTRICTING,
        1000,
        "none",
        True,
        "apparmor-unpriv-bwrap",
        ["no capabilities"],
    ),
    (
        "ubuntu without a bwrap profile: loopback",
        LOOPBACK,
        BWRAP,
        facts(sysctls=UBUNTU_2404_SYSCTLS),
        1000,
        "none",
        False,
        "apparmor-userns-restricted",
        ["/etc/apparmor.d/sandbox-setup-bwrap", "userns,"],
    ),
    (
        "loopback without AppArmor",
        LOOPBACK,
        BWRAP,
        facts(),
        1000,
        "none",
        False,
        "netns-loopback-refused",
        ["RTM_NEWADDR", "journalctl"],
    ),
    (
        "rootless podman --userns=keep-id",
        DEVPTS,
        BWRAP,
        facts(),
        1000,
        "podman",
        False,
        "podman-keep-id-devpts",
        ["--userns=keep-id"],
    ),
    ("devpts elsewhere", DEVPTS, BWRAP, facts(), 1000, "none", False, "devpts-refused", []),
    (
        "lxc pivot_root",
        PIVOT_ROOT,
        BWRAP,
        facts(),
        0,
        "lxc",
        False,
        "lxc-nesting-off",
        ["security.nesting=true", "nesting=1"],
    ),
    (
        "lxc make / slave",
        MAKE_SLAVE,
        BWRAP,
        facts(),
        1000,
        "lxc",
        False,
        "lxc-nesting-off",
        ["lxc.apparmor.allow_nesting"],
    ),
    (
        "make / slave elsewhere",
        MAKE_SLAVE,
        BWRAP,
        facts(),
        1000,
        "none",
        False,
        "mount-setup-refused",
        [],
    ),
    (
        "docker's default seccomp",
        DOCKER_SECCOMP,
        BWRAP,
        facts("docker_default.txt"),
        0,
        "docker",
        False,
        "seccomp-blocks-userns",
        ["docker run --security-opt seccomp=unconfined"],
    ),
    (
        "rhel stig max_user_namespaces=0",
        STIG_ENOSPC,
        UNSHARE,
        facts(sysctls={"user.max_user_namespaces": "0"}),
        0,
        "none",
        False,
        "max-user-namespaces-zero",
        ["STIG", "sysctl -w user.max_user_namespaces=15000", "grep -rn max_user_namespaces"],
    ),
    (
        "root without CAP_SETFCAP: bwrap",
        BWRAP_ROOT_UID_MAP,
        BWRAP,
        facts(status_text=NO_SETFCAP_STATUS),
        0,
        "docker",
        False,
        "root-without-setfcap",
        ["CAP_SETFCAP", "--cap-add SETFCAP"],
    ),
    (
        "root without CAP_SETFCAP: the helper",
        HELPER_UID_MAP,
        BWRAP,
        facts(status_text=NO_SETFCAP_STATUS),
        0,
        "none",
        True,
        "root-without-setfcap",
        ["CapabilityBoundingSet"],
    ),
    (
        "podman --cap-drop SETUID: root's setpriv to the probe user",
        SETPRIV_SETRESUID,
        BWRAP,
        facts("docker_default.txt"),
        65534,
        "podman",
        False,
        "root-cannot-switch-user",
        ["CAP_SETUID", "podman run --cap-add SETUID ...", "no launch as root works"],
    ),
    (
        "docker --cap-drop SETGID: root's setpriv to the probe user",
        SETPRIV_SETRESGID,
        BWRAP,
        facts("docker_default.txt"),
        0,
        "docker",
        False,
        "root-cannot-switch-user",
        ["CAP_SETGID", "docker run --cap-add SETGID ..."],
    ),
    (
        "no CAP_SETUID outside a known runtime",
        SETPRIV_SETRESUID,
        BWRAP,
        facts("docker_default.txt"),
        0,
        "none",
        False,
        "root-cannot-switch-user",
        ["give root CAP_SETUID"],
    ),
    (
        "a filter that forbids filters",
        HELPER_PRCTL,
        BWRAP,
        facts("docker_default.txt"),
        1000,
        "docker",
        True,
        "seccomp-filter-refused",
        ["seccomp=unconfined"],
    ),
]


@pytest.mark.parametrize(
    ("stderr", "argv", "host", "uid", "platform", "outer", "key", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_known_error(
    stderr: str,
    argv: tuple[str, ...],
    host: HostFacts,
    uid: int,
    platform: str,
    outer: bool,
    key: str,
    words: list[str],
) -> None:
    cause = diagnose(failed(argv, stderr), host, uid=uid, platform=platform, in_our_outer=outer)
    assert cause.key == key, cause
    text = cause.summary + "\n" + cause.remedy
    for word in words:
        assert word in text, (word, cause)
    assert cause.remedy.strip(), f"{key} has no remedy"


def test_every_row_of_the_table_has_a_canned_case() -> None:
    from tests.unit.test_check_causes import CASES as OLDER_CASES

    texts = [case[1] for case in CASES] + [case[1].stderr for case in OLDER_CASES]
    for row in KNOWN_ERRORS:
        if row.texts == (
            "Creating new namespace failed, likely because the kernel does not support",
        ):
            continue  # no kernel this project meets lacks CONFIG_USER_NS
        assert any(any(t in canned for t in row.texts) for canned in texts), row.seen


def test_an_unprivileged_uid_map_refusal_is_not_blamed_on_setfcap() -> None:
    # Only a uid-0 caller maps uid 0; with CAP_SETFCAP present, the older rows decide.
    cause = diagnose(failed(BWRAP, BWRAP_ROOT_UID_MAP), facts(), uid=0, platform="none")
    assert cause.key == "nested-userns-restricted"
    nobody = diagnose(
        failed(BWRAP, BWRAP_ROOT_UID_MAP), facts(status_text=NO_SETFCAP_STATUS), uid=1000,
        platform="none",
    )  # fmt: skip
    assert nobody.key != "root-without-setfcap"


def test_the_helper_text_in_a_container_names_the_containers_restriction() -> None:
    cause = diagnose(failed(BWRAP, HELPER_SETGROUPS), facts(), uid=1000, platform="docker")
    assert cause.key == "nested-userns-restricted"


def test_restricting_profile_detection() -> None:
    assert profile_restricts_bwrap_children(fixture_text("apparmor", "bwrap-userns-restrict"))
    assert not profile_restricts_bwrap_children(fixture_text("apparmor", "bwrap"))


def test_root_is_never_blamed_on_apparmor_for_the_helper() -> None:
    # AppArmor's userns restriction spares root; the bounding-set cause is what is left.
    host = replace(UBUNTU_RESTRICTING)
    cause = diagnose(failed(BWRAP, HELPER_SETGROUPS), host, uid=0, platform="none")
    assert cause.key == "bwrap-bounding-set-cleared"
