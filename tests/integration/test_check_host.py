"""`sandbox-setup --check --json` on this machine as it is (issue 2, case 1).

Once bubblewrap is installed, the namespace checks pass here; the naive probe
forms the issue warns about really fail here, which is why the checks don't use
them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tools import SRC, require_root, require_tool

pytestmark = pytest.mark.integration

MUST_PASS = ("bwrap.installed", "bwrap.sandbox", "userns.create", "proc.fresh_mount")


def run_check(
    *args: str, unset: tuple[str, ...] = (), **extra: str
) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k not in unset}
    proc = subprocess.run(
        [sys.executable, "-m", "sandbox_setup", "--check", "--json", *args],
        cwd="/",
        env={**env, "PYTHONPATH": str(SRC), **extra},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.fixture(scope="module")
def host_report() -> tuple[int, dict[str, Any], str]:
    require_tool("bwrap")
    require_tool("unshare")
    return run_check()


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["checks"]}


def test_namespace_checks_pass_on_this_host(host_report) -> None:
    _, report, stderr = host_report
    checks = by_id(report)
    for check_id in MUST_PASS:
        assert checks[check_id]["status"] == "pass", (checks[check_id], stderr)


def test_report_is_complete_and_exit_code_matches(host_report) -> None:
    rc, report, _ = host_report
    assert report["schema"] == 1
    assert report["host"]["kernel"] == os.uname().release
    assert report["host"]["euid"] == os.geteuid()
    statuses = [c["status"] for c in report["checks"]]
    assert "error" not in statuses, report["checks"]
    assert rc == (1 if "fail" in statuses else 0)
    assert report["recommendation"]["mode"] == "sandbox"  # bwrap.sandbox passes here


def test_probing_as_an_unprivileged_user(host_report) -> None:
    require_root()
    rc, report, stderr = run_check("--as-user", "nobody")
    checks = by_id(report)
    assert rc == (1 if any(c["status"] in ("fail", "error") for c in checks.values()) else 0)
    assert report["as_user"] == "nobody" and report["host"]["probe_uid"] == 65534
    for check_id in (*MUST_PASS, "bwrap.nested", "bwrap.nested_weak"):
        assert checks[check_id]["status"] == "pass", (checks[check_id], stderr)
    assert report["host"]["inner_sandbox"] == "strong"


def test_root_is_told_the_truth_about_the_sandbox_path(host_report) -> None:
    """As root, --check probes as the agent the launcher would run (a stand-in before
    it exists), says so, and on this healthy host exits 0 recommending the strong
    inner sandbox; only --as-user root shows what root's own sandbox gets."""
    require_root()
    rc, report, stderr = host_report
    checks = by_id(report)
    assert report["as_user"] == "nobody", report["as_user"]
    assert any("stand-in" in note for note in report["host"]["probe_notes"])
    assert checks["bwrap.nested"]["status"] == "pass", checks["bwrap.nested"]
    assert report["recommendation"]["mode"] == "sandbox"
    assert report["host"]["inner_sandbox"] == "strong"
    failing = [c["id"] for c in report["checks"] if c["status"] in ("fail", "error")]
    assert rc == (1 if failing else 0) and "bwrap.nested" not in failing, stderr
    # root's own sandbox covers /proc/irq etc., so the strong form fails for it
    _, as_root, _ = run_check("--as-user", "root")
    nested = by_id(as_root)["bwrap.nested"]
    assert nested["status"] == "fail" and "cause: outer-sandbox-by-root" in nested["detail"]


@pytest.mark.parametrize(
    "naive",
    [
        ["unshare", "-Urmp", "--mount-proc", "true"],  # no --fork: fails on every host
        ["unshare", "-U", "sh", "-c", "echo deny > /proc/self/setgroups"],
    ],
)
def test_naive_probes_fail_even_here(naive: list[str], host_report) -> None:
    """The forms the checks avoid would report a false failure on this good host."""
    assert by_id(host_report[1])["proc.fresh_mount"]["status"] == "pass"
    assert subprocess.run(naive, cwd="/", capture_output=True, timeout=30).returncode != 0


def test_user_namespace_limit_zero_is_named(host_report) -> None:
    """user.max_user_namespaces=0, for real: the user.* sysctls belong to a user
    namespace, so setting 0 inside a throw-away one leaves the host untouched."""
    require_root()
    check = [
        sys.executable,
        "-m",
        "sandbox_setup",
        "--check",
        "--json",
        "userns.policy",
        "userns.create",
        "proc.fresh_mount",
        "bwrap.sandbox",
    ]
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    proc = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", script, "sh", *check],
        cwd="/",
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    checks = by_id(json.loads(proc.stdout))
    for check_id in ("userns.policy", "userns.create", "proc.fresh_mount", "bwrap.sandbox"):
        finding = checks[check_id]
        assert finding["status"] == "fail", finding
        assert "cause: max-user-namespaces-zero" in finding["detail"], finding
        assert "sysctl -w user.max_user_namespaces=" in finding["remedy"]
    assert Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"


def test_setuid_bwrap_under_no_new_privs(host_report, tmp_path: Path) -> None:
    """A setuid bwrap under no_new_privs is named, without a false failure: here
    unprivileged user namespaces work, so bwrap still starts without its setuid bit.
    The setuid copy is bound over /usr/bin/bwrap in a private mount namespace only."""
    require_root()
    before = os.stat("/usr/bin/bwrap")
    copy = Path("/var/tmp") / f"sandbox-setup-suid-{os.getpid()}"
    copy.mkdir(mode=0o755)
    try:
        binary = copy / "bwrap"
        binary.write_bytes(Path(require_tool("bwrap")).read_bytes())
        binary.chmod(0o4755)
        check = [
            sys.executable,
            "-m",
            "sandbox_setup",
            "--check",
            "--json",
            "--as-user",
            "nobody",
            "bwrap.installed",
            "bwrap.sandbox",
        ]
        script = 'mount --bind "$0" /usr/bin/bwrap && exec setpriv --no-new-privs -- "$@"'
        proc = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, str(binary), *check],
            cwd="/",
            env={**os.environ, "PYTHONPATH": str(SRC)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for child in copy.iterdir():
            child.unlink()
        copy.rmdir()
    checks = by_id(json.loads(proc.stdout))
    installed = checks["bwrap.installed"]
    assert installed["status"] == "warn", installed
    assert "cause: setuid-bwrap-no-new-privs" in installed["detail"]
    assert checks["bwrap.sandbox"]["status"] == "pass", (checks["bwrap.sandbox"], proc.stderr)
    after = os.stat("/usr/bin/bwrap")  # the host's bwrap is untouched
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_root_guard_with_the_real_claude_code(host_report) -> None:
    """The real Claude Code carries the guard that blocks --dangerously-skip-permissions
    for root and not for an unprivileged user; the check reports exactly that, judged
    without starting it (issue 26), and warns when root's environment switches the
    guard off (issue 28)."""
    require_root()
    claude = require_tool("claude")
    ids = ("claude.installed", "claude.root_guard")
    clean = ("IS_SANDBOX", "CLAUDE_CODE_BUBBLEWRAP")  # the caller's own claim, if any
    _, as_root, stderr = run_check("--claude", claude, "--as-user", "root", *ids, unset=clean)
    guard = by_id(as_root)["claude.root_guard"]
    assert guard["status"] == "warn" and "cause: root-guard-blocks" in guard["detail"], stderr
    assert "the guard's message in the binary" in guard["detail"]
    installed = by_id(as_root)["claude.installed"]
    assert installed["status"] == "pass" and "Claude Code" in installed["summary"]
    for who in (("--as-user", "nobody"), ()):  # root's plain --check probes as the agent
        _, as_nobody, stderr = run_check("--claude", claude, *who, *ids, unset=clean)
        guard = by_id(as_nobody)["claude.root_guard"]
        assert guard["status"] == "pass" and "not root" in guard["summary"], (guard, stderr)
    _, claimed, stderr = run_check("--claude", claude, "claude.root_guard", IS_SANDBOX="yes")
    guard = by_id(claimed)["claude.root_guard"]
    assert "cause: root-guard-skipped-by-environment" in guard["detail"], (guard, stderr)
