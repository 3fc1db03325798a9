"""Every check's judging function over canned inputs (no kernel, no subprocess)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sandbox_setup.checks.base import Verdict
from sandbox_setup.checks.bwrap import (
    OUTER_UP,
    judge_bwrap_installed,
    judge_bwrap_sandbox,
    judge_nested,
    judge_nested_inside_bwrap,
)
from sandbox_setup.checks.claude import judge_claude_installed, judge_sandbox_deps
from sandbox_setup.checks.facts import HostFacts, parse_status
from sandbox_setup.checks.identity import judge_identity
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.mounts import parse_mountinfo
from sandbox_setup.checks.probe import ProbeResult
from sandbox_setup.checks.proc import judge_fresh_proc, judge_proc_masks
from sandbox_setup.checks.seccomp import judge_seccomp
from sandbox_setup.checks.tty import judge_tiocsti
from sandbox_setup.checks.userns import judge_userns_create, judge_userns_policy
from tests.unit.fixtures.trees import DEBIAN_SYSCTLS, UBUNTU_2404_SYSCTLS, fixture_text

OK = ProbeResult(("x",), 0)


def host(mountinfo: str = "host_debian12.txt", status: str = "host_root.txt", **sysctl: str):
    return HostFacts(
        status=parse_status(fixture_text("status", status)),
        mounts=parse_mountinfo(fixture_text("mountinfo", mountinfo)),
        sysctl={**DEBIAN_SYSCTLS, **{k.replace("__", "."): v for k, v in sysctl.items()}},
    )


def cause_of(verdict: Verdict) -> str:
    lines = [line for line in verdict.detail.splitlines() if line.startswith("cause: ")]
    return lines[-1].removeprefix("cause: ") if lines else ""


# identity.root


def test_identity_names_root_sudo_and_the_probe_user() -> None:
    v = judge_identity(0, 0, "alice", "claude-agent", 1001)
    assert v.status is Status.PASS
    assert "through sudo from alice" in v.summary and "claude-agent (uid 1001)" in v.summary
    plain = judge_identity(1000, 1000, None, None, 1000)
    assert "not root" in plain.summary and "sudo" not in plain.summary
    assert "--as-user" in judge_identity(0, 0, None, None, 0).detail


# proc.masks


@pytest.mark.parametrize(
    ("mountinfo", "platform", "status", "cause", "words"),
    [
        ("host_debian12.txt", "none", Status.PASS, "", []),
        (
            "docker_default.txt",
            "docker",
            Status.FAIL,
            "proc-masked",
            ["/proc/kcore", "systempaths=unconfined"],
        ),
        ("podman_rootless.txt", "podman", Status.FAIL, "proc-masked", ["unmask=/proc/*"]),
        (
            "kubernetes_containerd.txt",
            "kubernetes",
            Status.FAIL,
            "proc-masked",
            ["procMount: Unmasked"],
        ),
        ("lxc_unprivileged.txt", "lxc", Status.FAIL, "proc-masked", ["security.nesting=true"]),
        ("bwrap_root_outer.txt", "bwrap", Status.FAIL, "proc-covered-read-only", ["/proc/irq"]),
        ("proc_read_only.txt", "none", Status.FAIL, "proc-read-only", []),
    ],
)
def test_judge_proc_masks(mountinfo, platform, status, cause, words) -> None:
    v = judge_proc_masks(host(mountinfo), platform)
    assert v.status is status
    assert cause_of(v) == cause
    for word in words:
        assert word in v.summary + v.detail + v.remedy


def test_proc_masks_without_mountinfo_is_skipped() -> None:
    assert judge_proc_masks(HostFacts(), "none").status is Status.SKIP


# userns.policy


@pytest.mark.parametrize(
    ("sysctls", "uid", "profiles", "status", "cause"),
    [
        (DEBIAN_SYSCTLS, 0, (), Status.PASS, ""),
        ({"user.max_user_namespaces": "0"}, 0, (), Status.FAIL, "max-user-namespaces-zero"),
        (
            {"kernel.unprivileged_userns_clone": "0"},
            1000,
            (),
            Status.FAIL,
            "unprivileged-userns-clone-zero",
        ),
        (
            {"kernel.unprivileged_userns_clone": "0"},
            0,
            (),
            Status.WARN,
            "unprivileged-userns-clone-zero",
        ),
        (UBUNTU_2404_SYSCTLS, 1000, (), Status.FAIL, "apparmor-userns-restricted"),
        (UBUNTU_2404_SYSCTLS, 0, (), Status.WARN, "apparmor-userns-restricted"),
        (UBUNTU_2404_SYSCTLS, 1000, ("/etc/apparmor.d/bwrap",), Status.PASS, ""),
    ],
)
def test_judge_userns_policy(sysctls, uid, profiles, status, cause) -> None:
    facts = HostFacts(sysctl=dict(sysctls), bwrap_profiles=profiles)
    v = judge_userns_policy(facts, uid)
    assert v.status is status, v
    assert cause_of(v) == cause
    assert "user.max_user_namespaces" in v.detail  # the values are shown
    if status is not Status.PASS:
        assert v.remedy


# live namespace checks: pass on success, the diagnosed cause otherwise


def test_live_judges_pass_on_success() -> None:
    facts = host()
    assert judge_userns_create(OK, facts, uid=0, platform="none").status is Status.PASS
    assert judge_fresh_proc(OK, facts, uid=0, platform="none").status is Status.PASS
    v = judge_bwrap_sandbox(OK, facts, uid=0, platform="none", bwrap_setuid=False)
    assert v.status is Status.PASS


def test_live_judges_name_the_cause() -> None:
    docker = host("docker_default.txt", "docker_default.txt")
    eperm = ProbeResult(
        ("unshare", "-Ur", "true"), 1, "", "unshare: unshare failed: Operation not permitted\n"
    )
    v = judge_userns_create(eperm, docker, uid=0, platform="docker")
    assert (v.status, cause_of(v)) == (Status.FAIL, "seccomp-blocks-userns")
    assert "unshare failed" in v.detail and "seccomp=unconfined" in v.remedy
    mount = ProbeResult(
        ("unshare", "-Urmpf", "--mount-proc", "true"),
        1,
        "",
        "unshare: mount /proc failed: Operation not permitted\n",
    )
    v = judge_fresh_proc(mount, host("docker_default.txt"), uid=0, platform="docker")
    assert (v.status, cause_of(v)) == (Status.FAIL, "proc-masked")
    proc = ProbeResult(
        ("bwrap",), 1, "", "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n"
    )
    v = judge_bwrap_sandbox(
        proc, host("podman_rootless.txt"), uid=0, platform="podman", bwrap_setuid=False
    )
    assert (v.status, cause_of(v)) == (Status.FAIL, "proc-masked")
    assert "unmask=/proc/*" in v.remedy


# bwrap.installed


@pytest.mark.parametrize(
    ("path", "mode", "nnp", "status", "words"),
    [
        (None, None, False, Status.FAIL, ["apt-get install -y bubblewrap"]),
        ("/usr/bin/bwrap", 0o100755, False, Status.PASS, ["not setuid", "0.8.0"]),
        ("/usr/bin/bwrap", 0o104755, False, Status.PASS, ["(setuid)"]),
        ("/usr/bin/bwrap", 0o104755, True, Status.WARN, ["no_new_privs", "chmod u-s"]),
    ],
)
def test_judge_bwrap_installed(path, mode, nnp, status, words) -> None:
    v = judge_bwrap_installed(path, mode, "bubblewrap 0.8.0", nnp)
    assert v.status is status
    text = v.summary + v.detail + v.remedy
    for word in words:
        assert word in text
    if mode is not None:
        assert bool(mode & stat.S_ISUID) is ("(setuid)" in v.summary or "is setuid" in v.summary)


# bwrap.nested / bwrap.nested_weak

PROC_FAIL = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"


def nested_result(rc: int, *lines: str) -> ProbeResult:
    return ProbeResult(("bwrap", "--proc", "/proc", "sh"), rc, "", "\n".join(lines) + "\n")


def test_nested_passes_when_inner_works() -> None:
    v = judge_nested(
        nested_result(0, OUTER_UP), None, host(), weak=False, uid=1000, platform="none"
    )
    assert v.status is Status.PASS and "strong" in v.summary
    assert OUTER_UP not in v.detail  # the marker is ours, not the user's business


def test_nested_inner_failure_as_root_is_the_root_covers() -> None:
    v = judge_nested(
        nested_result(1, OUTER_UP, PROC_FAIL), None, host(), weak=False, uid=0, platform="none"
    )
    assert (v.status, cause_of(v)) == (Status.FAIL, "outer-sandbox-by-root")
    assert "outer sandbox came up" in v.detail
    as_nobody = judge_nested(
        nested_result(1, OUTER_UP, PROC_FAIL),
        None,
        host(),
        weak=False,
        uid=0,
        platform="none",
        unprivileged=nested_result(0, OUTER_UP),
    )
    assert (as_nobody.status, cause_of(as_nobody)) == (Status.FAIL, "outer-sandbox-by-root")
    assert "started by nobody works" in as_nobody.detail


def test_nested_weak_inner_uid_map_failure() -> None:
    line = "unshare: write failed /proc/self/uid_map: Operation not permitted"
    v = judge_nested(
        nested_result(1, OUTER_UP, line), None, host(), weak=True, uid=1000, platform="podman"
    )
    assert (v.status, cause_of(v)) == (Status.FAIL, "nested-userns-restricted")
    assert "weak" in v.summary or "uid_map" in v.summary


def test_nested_outer_failure_is_the_outer_cause_and_reports_the_direct_run() -> None:
    covered = host("bwrap_root_outer.txt")
    direct = ProbeResult(("bwrap", "--bind", "/proc", "/proc"), 0)
    v = judge_nested(
        nested_result(1, PROC_FAIL), direct, covered, weak=True, uid=0, platform="bwrap"
    )
    assert (v.status, cause_of(v)) == (Status.FAIL, "proc-covered-read-only")
    assert "outer sandbox could not start" in v.detail
    assert "alone, with no outer sandbox, works here" in v.detail


# seccomp.available


@pytest.mark.parametrize(
    ("result", "status_line", "status", "cause"),
    [
        (ProbeResult(("python3",), 0, "Seccomp:\t2\n"), "0", Status.PASS, ""),
        (ProbeResult(("python3",), 0, "Seccomp:\t0\n"), "0", Status.FAIL, "seccomp-refused"),
        (
            ProbeResult(("python3",), 1, "", "prctl(PR_SET_SECCOMP, FILTER): Invalid argument\n"),
            "0",
            Status.FAIL,
            "seccomp-filter-unsupported",
        ),
        (
            ProbeResult(("python3",), 1, "", "prctl(PR_SET_SECCOMP, FILTER): Permission denied\n"),
            "2",
            Status.FAIL,
            "seccomp-refused",
        ),
        (ProbeResult(("python3",), 0, "Seccomp:\t2\n"), None, Status.FAIL, "seccomp-unsupported"),
        (ProbeResult(("python3",), None, timed_out=True), "0", Status.ERROR, ""),
    ],
)
def test_judge_seccomp(result, status_line, status, cause) -> None:
    v = judge_seccomp(result, status_line)
    assert v.status is status
    assert cause_of(v) == cause


# tty.tiocsti


@pytest.mark.parametrize(
    ("value", "status", "cause"),
    [
        (0, Status.PASS, ""),
        (1, Status.WARN, "tiocsti-enabled"),
        (None, Status.WARN, "tiocsti-always-allowed"),
    ],
)
def test_judge_tiocsti(value, status, cause) -> None:
    v = judge_tiocsti(value)
    assert (v.status, cause_of(v)) == (status, cause)
    if status is not Status.PASS:
        assert "dev.tty.legacy_tiocsti=0" in v.remedy


# claude.*


def test_judge_claude_installed() -> None:
    missing = judge_claude_installed(None, None, None)
    # The newest release: a bare package name gives 2.1.197 on Debian 12's Node 20.
    assert missing.status is Status.WARN
    assert missing.remedy.startswith("npm install -g @anthropic-ai/claude-code@latest ")
    version = ProbeResult(("claude", "--version"), 0, "2.1.332 (Claude Code)\n")
    found = judge_claude_installed("/usr/local/bin/claude", version, None)
    assert found.status is Status.PASS and "2.1.332" in found.summary
    floor = ProbeResult(("claude", "--version"), 0, "2.1.323 (Claude Code)\n")
    assert judge_claude_installed("/usr/local/bin/claude", floor, None).status is Status.PASS


@pytest.mark.parametrize(
    ("text", "lacks"),
    [
        ("2.1.197 (Claude Code)", ("strictAllowlist", "--cap-drop ALL", "user namespaces")),
        ("2.1.304 (Claude Code)", ("sandbox-escape fixes",)),
        ("2.1.323-beta.1 (Claude Code)", ("sandbox-escape fixes",)),
    ],
)
def test_claude_below_the_floor_warns_naming_it_and_what_it_lacks(
    text: str, lacks: tuple[str, ...]
) -> None:
    version = ProbeResult(("claude", "--version"), 0, text + "\n")
    v = judge_claude_installed("/usr/local/bin/claude", version, None)
    assert (v.status, cause_of(v)) == (Status.WARN, "claude-below-floor")
    assert text.split()[0] in v.summary and "release floor 2.1.323" in v.summary
    assert all(what in v.detail for what in lacks), v.detail
    if text.startswith("2.1.304"):
        assert "user namespaces" not in v.detail  # 2.1.304 has that one
    assert v.remedy.startswith("npm install -g @anthropic-ai/claude-code@latest ")
    denied = ProbeResult(("claude", "--version"), 126, "", "setpriv: Permission denied\n")
    v = judge_claude_installed("/root/.local/bin/claude", version, denied)
    assert (v.status, cause_of(v)) == (Status.WARN, "claude-unreadable-by-agent")
    broken = ProbeResult(("claude", "--version"), 1, "", "Segmentation fault\n")
    assert judge_claude_installed("/x/claude", broken, None).status is Status.FAIL


def test_judge_sandbox_deps() -> None:
    ok = judge_sandbox_deps({"socat": "/usr/bin/socat", "rg": "/usr/bin/rg"})
    assert ok.status is Status.PASS
    v = judge_sandbox_deps({"socat": None, "rg": "/usr/bin/rg"})
    assert v.status is Status.FAIL and "socat" in v.summary
    assert v.remedy == "apt-get install -y socat"
    both = judge_sandbox_deps({"socat": None, "rg": None})
    assert both.remedy == "apt-get install -y socat ripgrep"


def test_untrusted_claude_is_named_and_never_judged_as_run(tmp_path: Path) -> None:
    from sandbox_setup.checks.claude import judge_untrusted_claude
    from sandbox_setup.policy.trust import untrusted_reason

    binary = tmp_path / "claude"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    if os.geteuid() == 0:
        os.chown(binary, 65534, 65534)
        reason = untrusted_reason(str(binary))
        assert reason is not None and "uid 65534" in reason
        os.chown(binary, 0, 0)
    assert untrusted_reason(str(binary)) is None
    binary.chmod(0o775)  # group-writable: someone else can change it
    assert untrusted_reason(str(binary)) is not None
    verdict = judge_untrusted_claude(str(binary), "because")
    assert verdict.status is Status.WARN and "was not run" in verdict.summary
    assert verdict.detail.endswith("cause: claude-untrusted")


def test_inside_a_root_bwrap_the_inner_forms_are_judged_as_they_run_here() -> None:
    facts = host("bwrap_root_outer.txt")
    refused = ProbeResult(
        ("bwrap",), 1, stderr="bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
    )
    strong = judge_nested_inside_bwrap(refused, facts, weak=False, uid=0)
    assert strong.status is Status.FAIL
    assert cause_of(strong) == "proc-covered-read-only"
    assert "cover" in strong.summary and strong.remedy
    assert "inner form ran here" in strong.detail
    weak = judge_nested_inside_bwrap(OK, facts, weak=True, uid=0)
    assert weak.status is Status.PASS and "inside this bwrap sandbox" in weak.summary
