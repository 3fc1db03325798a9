"""Fail-closed: each refusal exits 3, says why on stderr, and Claude never runs.

The fake ``claude`` touches a marker in the workspace as its first act; its
absence proves no Claude process was started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.launch_fixtures import (
    NOBODY,
    LaunchTree,
    launch_tree,
    launcher_env,
    run_launcher,
    state_home,
)
from tests.live_accounts import live_account
from tests.tools import require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def _claude(tree: LaunchTree) -> Path:
    return tree.write_script(f"#!/bin/sh\ntouch {tree.marker}\necho claude-ran\n")


def _refused(
    tree: LaunchTree,
    config: Path,
    *needles: str,
    env: dict[str, str] | None = None,
    seams: tuple[str, ...] = (),
) -> str:
    # From the workspace: with several, the launcher refuses (exit 2) a directory in none.
    result = run_launcher(config, ["--print", "ok"], env=env, cwd=tree.workspace, seams=seams)
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    assert "sandbox-launch: refused:" in result.stderr
    for needle in needles:
        assert needle in result.stderr
    assert not tree.marker.exists(), "Claude ran although the launch was refused"
    assert "claude-ran" not in result.stdout
    return result.stderr


def test_the_fixture_claude_does_run_when_all_is_well(tree: LaunchTree) -> None:
    # The control case: the same setup without a fault launches, so each refusal
    # below is caused by its one fault.
    result = run_launcher(tree.write_config(_claude(tree)))
    assert result.returncode == 0, result.stderr
    assert tree.marker.exists()


def test_bwrap_missing_from_path(tree: LaunchTree) -> None:
    empty = tree.base / "empty-bin"
    empty.mkdir(mode=0o755)
    env = launcher_env({"PATH": str(empty)})
    _refused(tree, tree.write_config(_claude(tree)), "bwrap not found on PATH", env=env)


def test_bwrap_failing_to_start(tree: LaunchTree) -> None:
    fake_bin = tree.base / "fake-bin"
    fake_bin.mkdir(mode=0o755)
    tree.write_script("#!/bin/sh\necho 'bwrap: simulated failure' >&2\nexit 1\n", "bwrap", fake_bin)
    (fake_bin / "setpriv").symlink_to("/usr/bin/setpriv")
    (fake_bin / "prlimit").symlink_to("/usr/bin/prlimit")  # the session's task limit
    env = launcher_env({"PATH": str(fake_bin)})
    stderr = _refused(tree, tree.write_config(_claude(tree)), "bwrap failed to start", env=env)
    assert "simulated failure" in stderr


def test_real_bwrap_failing_on_a_missing_workspace(tree: LaunchTree) -> None:
    config = tree.write_config(_claude(tree), workspaces=[tree.workspace, tree.base / "gone"])
    _refused(tree, config, "bwrap failed to start")


def test_verification_mismatch_kills_the_sandbox(tree: LaunchTree) -> None:
    # Compared with itself instead of with the launcher, the sandbox must fail verification.
    config = tree.write_config(_claude(tree))
    stderr = _refused(tree, config, "verification failed", seams=("--seam-corrupt-verify",))
    assert "user namespace is the launcher's own" in stderr
    # No sandbox process is left behind waiting on its block fd.
    leftovers = [
        p
        for p in os.listdir("/proc")
        if p.isdigit() and str(tree.base) in _cmdline(p) and "bwrap" in _cmdline(p)
    ]
    assert leftovers == []


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_world_writable_config(tree: LaunchTree) -> None:
    config = tree.write_config(_claude(tree))
    config.chmod(0o666)
    _refused(tree, config, str(config), "group- or world-writable")


def test_group_writable_config(tree: LaunchTree) -> None:
    config = tree.write_config(_claude(tree))
    config.chmod(0o664)
    _refused(tree, config, "group- or world-writable")


def test_foreign_owned_config(tree: LaunchTree) -> None:
    config = tree.write_config(_claude(tree))
    os.chown(config, NOBODY, NOBODY)
    _refused(tree, config, "owned by nobody (uid 65534)")


def test_config_in_a_world_writable_directory(tree: LaunchTree) -> None:
    open_dir = tree.base / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    config = tree.write_config(_claude(tree), directory=open_dir)
    _refused(tree, config, f"directory {open_dir}", "world-writable")


def test_config_in_a_sticky_directory_owned_by_someone_else(tree: LaunchTree) -> None:
    sticky = tree.base / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    os.chown(sticky, NOBODY, NOBODY)
    config = tree.write_config(_claude(tree), directory=sticky)
    _refused(tree, config, f"directory {sticky}")


def test_config_through_a_symlink_is_checked_where_it_points(tree: LaunchTree) -> None:
    open_dir = tree.base / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    real = tree.write_config(_claude(tree), directory=open_dir)
    link = tree.config_dir / "link.toml"
    link.symlink_to(real)
    _refused(tree, link, f"directory {open_dir}")


def test_unknown_mode(tree: LaunchTree) -> None:
    _refused(tree, tree.write_config(_claude(tree), mode="yolo"), "'yolo'")


def test_malformed_config(tree: LaunchTree) -> None:
    config = tree.config_dir / "launcher.toml"
    config.write_text("schema = 1\nmode = \n")
    _refused(tree, config, "invalid TOML")


def test_missing_config(tree: LaunchTree) -> None:
    _refused(tree, tree.config_dir / "absent.toml", "does not exist", "sandbox-setup")


def test_missing_agent_user(tree: LaunchTree) -> None:
    config = tree.write_config(_claude(tree), agent_user="no-such-agent-user")
    _refused(tree, config, "'no-such-agent-user' does not exist")


# The agent account itself (policy/accounts.py, launch_agent_problems): never nobody,
# a system or service account, nor one someone can log in as; each refusal names the
# account, the rule and the fix, in every mode that switches to it, and --dry-run too.
SWITCHING_MODES = ["sandbox", "user"]


@pytest.mark.parametrize("mode", SWITCHING_MODES)
def test_nobody_as_the_agent_is_refused_and_nothing_starts(tree: LaunchTree, mode: str) -> None:
    config = tree.write_config(_claude(tree), mode=mode, agent_user="nobody")
    stderr = _refused(
        tree,
        config,
        "agent user 'nobody' cannot be the agent of a launch",
        "[system account] nobody has uid 65534, above UID_MAX",
        "overflow uid",
        "[service account] nobody is a service account",
        "fix: set [agent] user in launcher.toml to the agent sandbox-setup created",
        "nothing was started",
    )
    assert "[login shell]" not in stderr, "nobody's shell is nologin"
    dry = run_launcher(config, dry_run=True, cwd=tree.workspace)
    assert dry.returncode == 3, (dry.stdout, dry.stderr)
    assert "agent user 'nobody' cannot be the agent of a launch" in dry.stderr


def test_a_system_account_with_a_regular_looking_name_is_refused(tree: LaunchTree) -> None:
    # daemon (uid 1): below UID_MIN, whatever its name says.
    config = tree.write_config(_claude(tree), agent_user="daemon")
    _refused(tree, config, "[system account] daemon has uid 1, below UID_MIN")


LOGIN_ACCOUNT = "ac-h35c-login"


def test_a_login_account_as_the_agent_is_refused_naming_each_way_in(tree: LaunchTree) -> None:
    # A person's account: /bin/bash and a usable password. Regular uid, no service name:
    # only the ways in are wrong, and each is named with its fix.
    with live_account(LOGIN_ACCOUNT, home=tree.base / "login-home", shell="/bin/bash") as account:
        for path in (tree.home, tree.workspace):
            os.chown(path, account.uid, account.gid)
        subprocess.run(
            ["usermod", "--password", "$6$h35c$not.a.real.hash.but.usable", LOGIN_ACCOUNT],
            check=True,
            capture_output=True,
        )
        config = tree.write_config(_claude(tree), mode="user", agent_user=LOGIN_ACCOUNT)
        stderr = _refused(
            tree,
            config,
            f"agent user '{LOGIN_ACCOUNT}' cannot be the agent of a launch",
            f"[login shell] {LOGIN_ACCOUNT} has the login shell /bin/bash",
            f"usermod --shell /usr/sbin/nologin {LOGIN_ACCOUNT}",
            "run sandbox-setup again",
            f"[password] {LOGIN_ACCOUNT} has a usable password",
            f"fix: usermod --lock {LOGIN_ACCOUNT}",
        )
        assert "[system account]" not in stderr and "[service account]" not in stderr


def test_the_same_account_with_nologin_and_locked_launches(tree: LaunchTree) -> None:
    # The control of the two above: a live account as sandbox-setup makes the agent
    # (nologin, locked, regular uid) launches in both modes.
    for mode in SWITCHING_MODES:
        tree.marker.unlink(missing_ok=True)
        config = tree.write_config(_claude(tree), mode=mode, name=f"{mode}.toml")
        result = run_launcher(config, ["--print", "ok"], cwd=tree.workspace)
        assert result.returncode == 0, (mode, result.stderr)
        assert tree.marker.exists(), mode


DAEMON = 1  # an existing system account: "another user", never created here


def _binary_world_writable(tree: LaunchTree) -> tuple[Path, list[str]]:
    claude = _claude(tree)
    claude.chmod(0o777)
    return claude, [str(claude), "group- or world-writable"]


def _binary_group_writable(tree: LaunchTree) -> tuple[Path, list[str]]:
    claude = _claude(tree)
    os.chown(claude, 0, DAEMON)
    claude.chmod(0o775)
    return claude, [str(claude), "group- or world-writable"]


def _binary_owned_by_the_agent(tree: LaunchTree) -> tuple[Path, list[str]]:
    claude = _claude(tree)
    os.chown(claude, tree.agent.uid, tree.agent.gid)
    return claude, [str(claude), f"owned by {tree.agent.name}"]


def _binary_owned_by_another_user(tree: LaunchTree) -> tuple[Path, list[str]]:
    claude = _claude(tree)
    os.chown(claude, DAEMON, DAEMON)
    return claude, [str(claude), "owned by daemon (uid 1)"]


def _binary_in_a_directory(tree: LaunchTree, owner: int, mode: int) -> Path:
    # The binary itself is root's and 0755: only its directory is at fault.
    directory = tree.base / "claude-dir"
    directory.mkdir()
    os.chown(directory, owner, owner)
    directory.chmod(mode)
    return tree.write_script(
        f"#!/bin/sh\ntouch {tree.marker}\necho claude-ran\n", directory=directory
    )


def _directory_owned_by_the_agent(tree: LaunchTree) -> tuple[Path, list[str]]:
    claude = _binary_in_a_directory(tree, tree.agent.uid, 0o755)
    return claude, [f"directory {claude.parent}", f"owned by {tree.agent.name}"]


def _directory_group_writable_by_another_user(tree: LaunchTree) -> tuple[Path, list[str]]:
    claude = _binary_in_a_directory(tree, 0, 0o775)
    os.chown(claude.parent, 0, DAEMON)
    return claude, [f"directory {claude.parent}", "group- or world-writable"]


def _directory_world_writable(tree: LaunchTree) -> tuple[Path, list[str]]:
    claude = _binary_in_a_directory(tree, 0, 0o777)
    return claude, [f"directory {claude.parent}", "group- or world-writable"]


# Invariant 2 for the binary the launcher would exec: in sandbox mode as the
# agent, in unsafe mode (acceptance recorded, so only the binary is at fault)
# as root itself.
MODES = [pytest.param("sandbox", False, id="sandbox"), pytest.param("unsafe", True, id="unsafe")]


@pytest.mark.parametrize(("mode", "accepted"), MODES)
def test_the_fixture_claude_runs_in_each_mode_of_the_binary_tests(
    tree: LaunchTree, mode: str, accepted: bool
) -> None:
    # The control for the parametrized refusals below: their only fault is the binary's.
    claude = _binary_in_a_directory(tree, 0, 0o755)
    result = run_launcher(tree.write_config(claude, mode=mode, accepted=accepted))
    assert result.returncode == 0, result.stderr
    assert tree.marker.exists()


@pytest.mark.parametrize(("mode", "accepted"), MODES)
@pytest.mark.parametrize(
    "fault",
    [
        _binary_world_writable,
        _binary_group_writable,
        _binary_owned_by_the_agent,
        _binary_owned_by_another_user,
        _directory_owned_by_the_agent,
        _directory_group_writable_by_another_user,
        _directory_world_writable,
    ],
)
def test_untrusted_claude_binary(
    tree: LaunchTree,
    mode: str,
    accepted: bool,
    fault: Callable[[LaunchTree], tuple[Path, list[str]]],
) -> None:
    claude, needles = fault(tree)
    config = tree.write_config(claude, mode=mode, accepted=accepted)
    stderr = _refused(tree, config, "Claude binary", *needles)
    assert "WARNING" not in stderr  # refused before unsafe mode's launch began


def test_workspace_over_a_system_directory(tree: LaunchTree) -> None:
    _refused(tree, tree.write_config(_claude(tree), workspaces=[Path("/usr")]), "/usr")


def test_workspace_root_is_refused_before_anything_walks_it(
    tree: LaunchTree, tmp_path: Path
) -> None:
    """``workspaces = ["/"]``: refused from the path alone, never after the workspace
    boundary has scanned the whole host (counted: the directory reads, by strace)."""
    strace = require_tool("strace")
    config = tree.write_config(_claude(tree), workspaces=[Path("/")])
    _refused(tree, config, "workspace / would make system directory")
    counts = tmp_path / "strace.txt"
    env = launcher_env()
    env["XDG_STATE_HOME"] = str(state_home(0))
    done = subprocess.run(
        [strace, "-f", "-c", "-e", "trace=getdents64", "-o", str(counts), sys.executable,
         "-m", "sandbox_setup.launcher", "--config", str(config), "--", "--print", "ok"],
        env=env, cwd=tree.workspace, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    calls = [line.split() for line in counts.read_text().splitlines() if "getdents64" in line]
    reads = int(calls[0][3]) if calls else 0
    assert reads < 500, f"{reads} directory reads before the refusal: / was walked"
    assert not tree.marker.exists()


def test_unsafe_without_recorded_acceptance(tree: LaunchTree) -> None:
    config = tree.write_config(_claude(tree), mode="unsafe")
    _refused(tree, config, "no acceptance is recorded")


def test_workspace_replaced_by_a_symlink_to_root(tree: LaunchTree) -> None:
    # What an agent could leave behind in its home during an earlier session.
    planted = tree.home / "project"
    planted.symlink_to("/")
    config = tree.write_config(_claude(tree), workspaces=[tree.workspace, planted])
    _refused(tree, config, "a symlink to /")


@pytest.mark.parametrize("blank", ["accepted_by", "accepted_at", "statement"])
def test_unsafe_with_an_empty_acceptance_field(tree: LaunchTree, blank: str) -> None:
    config = tree.write_config(_claude(tree), mode="unsafe", accepted=True)
    text = config.read_text()
    lines = [
        f'{blank} = "  "' if line.startswith(f"{blank} =") else line for line in text.splitlines()
    ]
    assert lines != text.splitlines()
    config.write_text("\n".join(lines) + "\n")
    _refused(tree, config, f"unsafe.{blank}", "empty", "Claude Code was not started")


def test_deeply_nested_config(tree: LaunchTree) -> None:
    config = tree.write_config(_claude(tree))
    config.write_text(config.read_text() + "deep = " + "[" * 100_000 + "]" * 100_000 + "\n")
    _refused(tree, config, str(config), "nested too deeply")
