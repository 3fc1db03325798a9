"""Judging /proc/self/mountinfo: masks and covers over /proc, from real-world samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_setup.checks.mounts import (
    parse_mountinfo,
    proc_covers,
    proc_locked_readonly,
    summarize_covers,
    top_proc_mount,
)

FIXTURES = Path(__file__).parent / "fixtures" / "mountinfo"


def mounts(name: str):
    return parse_mountinfo((FIXTURES / name).read_text())


@pytest.mark.parametrize(
    ("fixture", "masked", "read_only"),
    [
        ("host_debian12.txt", set(), set()),  # binfmt_misc on its empty dir hides nothing
        ("kubernetes_unmasked.txt", set(), set()),
        ("bwrap_unprivileged_outer.txt", set(), set()),
        (
            "docker_default.txt",
            {"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/scsi"},
            {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
        ),
        (
            "podman_rootless.txt",
            {
                "/proc/acpi",
                "/proc/kcore",
                "/proc/keys",
                "/proc/latency_stats",
                "/proc/timer_list",
                "/proc/scsi",
            },
            {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
        ),
        (
            "kubernetes_containerd.txt",
            {"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/scsi"},
            {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
        ),
        (
            "lxc_unprivileged.txt",
            {
                "/proc/cpuinfo",
                "/proc/diskstats",
                "/proc/loadavg",
                "/proc/meminfo",
                "/proc/slabinfo",
                "/proc/stat",
                "/proc/swaps",
                "/proc/uptime",
            },
            {"/proc/sys"},
        ),
        ("bwrap_root_outer.txt", set(), {"/proc/irq", "/proc/bus"}),
        (
            "runc_docker_userns.txt",
            {"/proc/acpi", "/proc/keys", "/proc/timer_list"},
            {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys"},
        ),
    ],
)
def test_proc_covers_of_each_runtime(fixture: str, masked: set[str], read_only: set[str]) -> None:
    covers = proc_covers(mounts(fixture))
    assert {c.path for c in covers if c.kind == "masked"} == masked
    assert {c.path for c in covers if c.kind == "read-only"} == read_only


def test_only_mounts_on_the_visible_proc_count() -> None:
    # bwrap leaves the host's /proc (ro) under its fresh one; the visible one is the last
    found = mounts("bwrap_root_outer.txt")
    top = top_proc_mount(found)
    assert top is not None and top.mount_id == 93
    assert not proc_locked_readonly(found)


def test_read_only_proc_is_locked() -> None:
    assert proc_locked_readonly(mounts("proc_read_only.txt"))
    assert not proc_locked_readonly(mounts("host_debian12.txt"))


def test_parse_unescapes_and_skips_garbage() -> None:
    text = (
        "40 23 0:50 / /proc/my\\040dir rw - tmpfs tmpfs rw\n"
        "not a mountinfo line\n"
        "23 1 0:22 / /proc rw - proc proc rw\n"
        "x y 0:1 / /z rw - tmpfs t rw\n"
    )
    parsed = parse_mountinfo(text)
    assert [m.mount_point for m in parsed] == ["/proc/my dir", "/proc"]
    assert parsed[1].fstype == "proc" and parsed[1].options == ("rw",)


def test_no_proc_mount_means_no_covers() -> None:
    assert proc_covers(parse_mountinfo("28 1 254:1 / / rw - ext4 /dev/vda1 rw\n")) == ()


def test_summary_groups_and_shortens() -> None:
    covers = proc_covers(mounts("docker_default.txt"))
    text = summarize_covers(covers, limit=2)
    assert text.startswith("/proc/acpi, /proc/kcore +3 more (masked); ")
    assert "/proc/bus, /proc/fs +3 more (read-only)" in text
