"""The container harness itself: each place is what it claims, and the host stays as it was.

The check tests compare verdicts with experiments run in these places; if a place
were not what its name says (masks missing, a user namespace absent, a seccomp
profile not loaded), those tests could agree with a wrong check. These tests pin
the places down from the inside, and prove a run leaves no trace on the host.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.installed import ProjectInstall
from tests.integration.containers import (
    DOCKER_CAPS,
    DOCKER_MASKED_PATHS,
    DOCKER_READONLY_PATHS,
    USERNS_HOST_BASE,
    USERNS_SIZE,
    ContainerConfig,
    HostPlace,
    Place,
    RootBwrap,
    RuncContainer,
    Section,
    base_env,
    mount_table,
    parse_sections,
    proc_overmounts,
    seccomp_blocking_userns,
    sectioned_script,
)

pytestmark = pytest.mark.integration

Sections = dict[str, Section]
Maker = Callable[[ContainerConfig], RuncContainer]

# Capability numbers from linux/capability.h, to compute the expected CapEff.
CAP_NUMBERS = {
    "CAP_CHOWN": 0,
    "CAP_DAC_OVERRIDE": 1,
    "CAP_FOWNER": 3,
    "CAP_FSETID": 4,
    "CAP_KILL": 5,
    "CAP_SETGID": 6,
    "CAP_SETUID": 7,
    "CAP_SETPCAP": 8,
    "CAP_NET_BIND_SERVICE": 10,
    "CAP_NET_RAW": 13,
    "CAP_SYS_CHROOT": 18,
    "CAP_MKNOD": 27,
    "CAP_AUDIT_WRITE": 29,
    "CAP_SETFCAP": 31,
}
# What the inspection script reads in a place.
INSPECT = {
    "uid_map": "cat /proc/self/uid_map",
    "status": "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status",
    "mountinfo": "cat /proc/self/mountinfo",
    "proc_sys_write": "echo sst > /proc/sys/kernel/hostname",
    "rootfs_write": "touch /etc/sst-harness-probe",
    "tmp_write": "echo inside > /tmp/sst-harness-probe && cat /tmp/sst-harness-probe",
    "read_root_home": "ls /root",
    "userns": "unshare -Ur true",
    "fresh_proc": "unshare -Urmpf --mount-proc true",
}


def _status(text: str) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def _inspect(place: Place, extra: dict[str, str] | None = None) -> Sections:
    result = place.run(["/bin/sh", "-c", sectioned_script({**INSPECT, **(extra or {})})])
    sections = parse_sections(result.stdout)
    assert "mountinfo" in sections, (result.returncode, result.stdout, result.stderr)
    return sections


def _existing_proc_paths(paths: tuple[str, ...]) -> set[str]:
    return {p for p in paths if p.startswith("/proc/") and os.path.exists(p)}


@pytest.fixture(scope="module")
def bundles(integration_workdir: Path) -> Path:
    return integration_workdir / "harness-bundles"


@pytest.fixture(scope="module")
def container(
    bundles: Path, container_tools: dict[str, str]
) -> Callable[[ContainerConfig], RuncContainer]:
    """Makes runc containers (with the runc found on PATH) whose bundles go in ``bundles``."""

    def make(config: ContainerConfig) -> RuncContainer:
        return RuncContainer(
            config, bundles, runc=container_tools["runc"], unshare=container_tools["unshare"]
        )

    return make


@pytest.fixture(scope="module")
def docker_userns(container: Maker) -> Sections:
    return _inspect(container(ContainerConfig()))


@pytest.fixture(scope="module")
def docker_unmasked(container: Maker) -> Sections:
    return _inspect(container(ContainerConfig().unmasked()))


@pytest.fixture(scope="module")
def docker_no_userns(container: Maker) -> Sections:
    return _inspect(container(ContainerConfig(userns=False)))


def test_sections_round_trip(tmp_path: Path) -> None:
    script = sectioned_script(
        {
            "a.b": "printf 'no newline'",
            "err": "echo to-stderr >&2; exit 7",
            "empty": "true",
            "multi": "printf 'x\\n\\ny\\n'",
        }
    )
    sections = parse_sections(HostPlace().run(["/bin/sh", "-c", script]).stdout)
    assert sections["a.b"].returncode == 0 and sections["a.b"].output == "no newline"
    assert sections["err"].returncode == 7 and sections["err"].output == "to-stderr\n"
    assert sections["empty"].returncode == 0 and sections["empty"].output == ""
    assert sections["multi"].output == "x\n\ny\n"
    with pytest.raises(ValueError, match="bad section name"):
        sectioned_script({"two words": "true"})


def test_docker_masks_are_really_masked(docker_userns: Sections, docker_unmasked: Sections) -> None:
    expected = _existing_proc_paths(DOCKER_MASKED_PATHS + DOCKER_READONLY_PATHS)
    assert expected, "none of Docker's /proc paths exist on this kernel"
    assert set(proc_overmounts(docker_userns["mountinfo"].output)) == expected
    assert docker_userns["proc_sys_write"].returncode != 0
    assert "read-only" in docker_userns["proc_sys_write"].output.lower()
    # the kernel's own verdict on a fresh /proc under these masks
    assert docker_userns["fresh_proc"].returncode != 0
    assert proc_overmounts(docker_unmasked["mountinfo"].output) == []
    assert docker_unmasked["fresh_proc"].returncode == 0, docker_unmasked["fresh_proc"]


def test_user_namespace_mapping(docker_userns: Sections, docker_no_userns: Sections) -> None:
    assert docker_userns["uid_map"].output.split() == ["0", str(USERNS_HOST_BASE), str(USERNS_SIZE)]
    assert docker_no_userns["uid_map"].output.split() == ["0", "0", "4294967295"]
    # a mapped root cannot read the host's /root, which is why install_project exists
    assert docker_userns["read_root_home"].returncode != 0
    assert docker_no_userns["read_root_home"].returncode == 0


def test_docker_default_capabilities(docker_userns: Sections, docker_no_userns: Sections) -> None:
    expected = sum(1 << CAP_NUMBERS[cap] for cap in DOCKER_CAPS)
    for sections in (docker_userns, docker_no_userns):
        status = _status(sections["status"].output)
        assert int(status["CapEff"], 16) == expected
        assert status["NoNewPrivs"] == "0"
        assert status["Seccomp"] == "0"


def test_rootfs_read_only_and_tmp_private(docker_no_userns: Sections) -> None:
    # root with CAP_DAC_OVERRIDE still cannot write the host's / through the bind
    assert docker_no_userns["rootfs_write"].returncode != 0
    assert "read-only" in docker_no_userns["rootfs_write"].output.lower()
    assert not Path("/etc/sst-harness-probe").exists()
    assert docker_no_userns["tmp_write"].output.strip() == "inside"
    tmp_mounts = [line.split() for line in docker_no_userns["mountinfo"].output.splitlines()]
    assert any(f[4] == "/tmp" and "tmpfs" in f[f.index("-") + 1] for f in tmp_mounts)
    assert not Path("/tmp/sst-harness-probe").exists()


def test_seccomp_profile_blocks_only_new_user_namespaces(container: Maker) -> None:
    config = ContainerConfig(seccomp=seccomp_blocking_userns()).unmasked()
    sections = _inspect(
        container(config),
        # fork/clone without CLONE_NEWUSER still works (clone3 -> ENOSYS -> clone)
        {
            "spawn": "sh -c 'echo child' && /usr/bin/python3 -c 'import subprocess; "
            'subprocess.run(["true"], check=True)\''
        },
    )
    assert _status(sections["status"].output)["Seccomp"] == "2"
    assert sections["userns"].returncode != 0
    assert "operation not permitted" in sections["userns"].output.lower()
    assert sections["spawn"].returncode == 0, sections["spawn"]
    assert "child" in sections["spawn"].output


def test_root_bwrap_covers_proc(container_tools: dict[str, str]) -> None:
    sections = _inspect(RootBwrap(bwrap=container_tools["bwrap"]))
    covers = set(proc_overmounts(sections["mountinfo"].output))
    assert covers, "bwrap started by root put no covers over /proc"
    assert covers <= {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}
    assert sections["fresh_proc"].returncode != 0
    assert sections["userns"].returncode == 0


def test_project_runs_inside_a_mapped_container(
    container: Maker, project_install: ProjectInstall
) -> None:
    code = (
        "import sandbox_setup.checks, sandbox_setup.cli, platformdirs, tomlkit; "
        "import importlib.util as u; "
        "print('textual' if u.find_spec('textual') else 'no-textual')"
    )
    result = container(ContainerConfig()).run(
        [str(project_install.python), "-c", code], env=base_env()
    )
    assert result.returncode == 0, result.stderr
    # the check path must not need Textual, and this install does not have it
    assert result.stdout.strip() == "no-textual"


def test_runs_leave_the_host_as_it_was(container: Maker, bundles: Path) -> None:
    before = mount_table()
    place = container(ContainerConfig(userns=False))
    assert place.run(["/bin/true"]).returncode == 0
    with pytest.raises(subprocess.TimeoutExpired):
        place.run(["/bin/sleep", "987"], timeout=3)
    assert mount_table() == before
    assert list(bundles.iterdir()) == [], "a bundle was left behind"
    leftovers = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes() == b"/bin/sleep\x00987\x00":
                leftovers.append(cmdline.parent.name)
        except OSError:
            continue
    assert leftovers == [], f"the timed-out container still runs: {leftovers}"


def test_binds_share_a_host_directory(container: Maker, integration_workdir: Path) -> None:
    shared = integration_workdir / "shared"
    shared.mkdir(mode=0o755, exist_ok=True)
    (shared / "from-host").write_text("host\n")
    config = ContainerConfig(userns=False, binds=((str(shared), "/tmp/shared", True),))
    script = "cat /tmp/shared/from-host && echo inside > /tmp/shared/from-container"
    result = container(config).run(["/bin/sh", "-c", script])
    assert result.returncode == 0, result.stderr
    assert result.stdout == "host\n"
    assert (shared / "from-container").read_text() == "inside\n"
    # under /tmp (a writable tmpfs inside), so only the bind's "ro" can refuse
    read_only = ContainerConfig(userns=False, binds=((str(shared), "/tmp/shared", False),))
    denied = container(read_only).run(["/bin/sh", "-c", "echo x > /tmp/shared/nope"])
    assert denied.returncode != 0 and "read-only" in denied.stderr.lower()
    assert not (shared / "nope").exists()
