"""Reading host facts from a (fake) root: status, sysctls, AppArmor profiles, markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_setup.checks.facts import (
    HostFacts,
    gather_host_facts,
    parse_status,
    profile_allows_bwrap_userns,
)
from sandbox_setup.checks.platform import detect_platform
from tests.unit.fixtures.trees import UBUNTU_2404_SYSCTLS, fixture_text, make_root


@pytest.mark.parametrize(
    ("fixture", "seccomp", "nnp"),
    [
        ("host_root.txt", 0, False),
        ("docker_default.txt", 2, False),
        ("docker_no_new_privs.txt", 2, True),
        ("bwrap_inside.txt", 0, True),
        ("no_seccomp_kernel.txt", None, False),
    ],
)
def test_status_variants(fixture: str, seccomp: int | None, nnp: bool) -> None:
    facts = HostFacts(status=parse_status(fixture_text("status", fixture)))
    assert facts.seccomp_mode == seccomp
    assert facts.no_new_privs is nnp


def test_gather_reads_only_under_the_root(tmp_path: Path) -> None:
    root = make_root(
        tmp_path,
        status="docker_default.txt",
        mountinfo="docker_default.txt",
        sysctls=UBUNTU_2404_SYSCTLS,
        files={
            "/.dockerenv": "",
            "/etc/apparmor.d/bwrap": fixture_text("apparmor", "bwrap"),
            "/etc/apparmor.d/usr.bin.man": fixture_text("apparmor", "usr.bin.man"),
        },
    )
    facts = gather_host_facts(root, env={"IS_SANDBOX": "1", "HOME": "/root"})
    assert facts.seccomp_mode == 2
    assert facts.sysctl_int("kernel.apparmor_restrict_unprivileged_userns") == 1
    assert facts.sysctl_int("user.max_user_namespaces") == 63457
    assert facts.sysctl["kernel.seccomp.actions_avail"] is None  # absent file
    assert facts.bwrap_profiles == ("/etc/apparmor.d/bwrap",)
    assert "/.dockerenv" in facts.markers
    assert facts.env == {"IS_SANDBOX": "1"}
    assert any(m.mount_point == "/proc/kcore" for m in facts.mounts)
    assert detect_platform(facts).name == "docker"


def test_gather_on_an_empty_root(tmp_path: Path) -> None:
    facts = gather_host_facts(tmp_path, env={})
    assert facts.status == {} and facts.mounts == () and facts.markers == {}
    assert all(value is None for value in facts.sysctl.values())
    assert facts.sysctl_int("user.max_user_namespaces") is None


def test_sysctl_int_tolerates_garbage() -> None:
    facts = HostFacts(sysctl={"a": "x", "b": "", "c": "1\t2"})
    assert facts.sysctl_int("a") is None
    assert facts.sysctl_int("b") is None
    assert facts.sysctl_int("c") == 1


@pytest.mark.parametrize(
    ("name", "allows"),
    [("bwrap", True), ("usr.bin.man", False), ("unprivileged_userns", False)],
)
def test_bwrap_profile_detection(name: str, allows: bool) -> None:
    assert profile_allows_bwrap_userns(fixture_text("apparmor", name)) is allows
