"""Which runtime the markers name, and which remedy it gets."""

from __future__ import annotations

import pytest

from sandbox_setup.checks.container import judge_platform
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.mounts import parse_mountinfo
from sandbox_setup.checks.platform import Platform, detect_platform, seccomp_remedy, unmask_remedy
from tests.unit.fixtures.trees import fixture_text

DOCKER_CGROUP_V1 = "12:pids:/docker/1f0c5e\n1:name=systemd:/docker/1f0c5e\n"
K8S_CGROUP = "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-9c1f.scope\n"


@pytest.mark.parametrize(
    ("markers", "env", "expected"),
    [
        ({}, {}, "none"),
        ({"/proc/1/cgroup": "0::/\n"}, {}, "none"),
        ({"/.dockerenv": ""}, {}, "docker"),
        ({"/proc/1/cgroup": DOCKER_CGROUP_V1}, {}, "docker"),
        ({"/run/.containerenv": 'engine="podman-4.3.1"\n'}, {}, "podman"),
        ({"/proc/1/environ": "PATH=/bin\ncontainer=podman\n"}, {}, "podman"),
        ({"/proc/1/cgroup": K8S_CGROUP, "/.dockerenv": ""}, {}, "kubernetes"),
        ({}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "kubernetes"),
        ({"/run/systemd/container": "lxc\n"}, {}, "lxc"),
        ({"/dev/lxd/sock": ""}, {}, "lxc"),
        ({"/run/systemd/container": "systemd-nspawn\n"}, {}, "nspawn"),
        ({"/proc/version": "Linux version 5.15.167.4-microsoft-standard-WSL2"}, {}, "wsl"),
        (
            {"/proc/version": "Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016"},
            {},
            "gvisor",
        ),
        ({"/proc/1/comm": "bwrap\n"}, {}, "bwrap"),
    ],
)
def test_detect_platform(markers: dict[str, str], env: dict[str, str], expected: str) -> None:
    platform = detect_platform(HostFacts(markers=markers, env=env))
    assert platform.name == expected
    assert bool(platform.evidence) is (expected != "none")


def test_masked_kcore_without_markers_is_an_oci_container() -> None:
    mounts = parse_mountinfo(fixture_text("mountinfo", "docker_default.txt"))
    assert detect_platform(HostFacts(mounts=mounts)).name == "oci"


@pytest.mark.parametrize(
    ("platform", "needle"),
    [
        ("podman", "--security-opt unmask=/proc/*"),
        ("docker", "--security-opt systempaths=unconfined"),
        ("kubernetes", "procMount: Unmasked"),
        ("lxc", "security.nesting=true"),
        ("bwrap", "unprivileged user"),
    ],
)
def test_unmask_remedy_per_runtime(platform: str, needle: str) -> None:
    assert needle in unmask_remedy(platform)


def test_unknown_runtime_gets_every_unmask_remedy() -> None:
    text = unmask_remedy("none")
    for needle in (
        "unmask=/proc/*",
        "systempaths=unconfined",
        "procMount: Unmasked",
        "hostUsers: false",
        "security.nesting=true",
    ):
        assert needle in text


def test_seccomp_remedy_names_the_runtime_flag() -> None:
    assert "seccomp=unconfined" in seccomp_remedy("docker")
    assert "seccompProfile" in seccomp_remedy("kubernetes")
    assert "CLONE_NEWUSER" in seccomp_remedy("none")


def test_judge_platform_is_informational() -> None:
    none = judge_platform(Platform("none", ()))
    docker = judge_platform(Platform("docker", ("/.dockerenv exists",)))
    assert none.status is Status.PASS and "no container" in none.summary
    assert docker.status is Status.PASS and "docker" in docker.summary
    assert "/.dockerenv" in docker.detail
