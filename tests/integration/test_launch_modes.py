"""user and unsafe modes, and non-root operators, with real setpriv/bwrap and fake Claudes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from sandbox_setup.launcher.egress.netns import namespace_possible
from sandbox_setup.launcher.egress.network import PROXY_ENV
from tests.launch_fixtures import (
    OPERATOR_SECRET,
    LaunchTree,
    host_namespaces,
    last_json,
    launch_tree,
    launcher_env,
    report_claude,
    run_launcher,
)

pytestmark = pytest.mark.integration

UNSAFE_WARNING = "NO OS sandbox"


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


@pytest.fixture
def host_sleep() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def _run_report(
    tree: LaunchTree, mode: str, host_pid: int, args: list[str], **kwargs: Any
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    env = kwargs.pop("env", None)
    user = kwargs.pop("preexec_user", None)
    owner = kwargs.pop("config_owner", None)
    claude = tree.write_script(report_claude(tree, host_pid))
    config = tree.write_config(claude, mode=mode, **kwargs)
    if owner is not None:
        os.chown(config, owner, owner)
    result = run_launcher(config, args, env=env, preexec_user=user)
    assert result.returncode == 0, result.stderr
    return last_json(result.stdout), result


def test_user_mode_switches_to_the_agent_with_a_clean_environment(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    env = launcher_env({"IS_SANDBOX": "1"})
    # Landlock off: its own tests (test_launch_landlock.py) show what it adds.
    report, result = _run_report(
        tree, "user", host_sleep.pid, ["--print", "ok"], env=env, landlock=False
    )
    assert report["uid"] == tree.agent.uid
    assert report["no_new_privs"] == "1"
    assert report["cap_eff"] == "0000000000000000"
    assert report["cwd"] == str(tree.workspace)
    # [user] landlock = false turns off Landlock, not the session's own network
    # namespace where root can make one (its proxy in the environment, Claude's Bash
    # sandbox told its port).
    netns = namespace_possible().possible
    assert report["args"][-2:] == ["--print", "ok"]
    assert report["args"][:1] == (["--settings"] if netns else ["--print"])
    # Not a sandbox, and it does not claim one: the caller's IS_SANDBOX is dropped.
    # Only a pid namespace (and the mount namespace of its fresh /proc) of its own,
    # so that nothing of the session outlives it (the network namespace, where root
    # makes one, shows in the proxy's variables below).
    own = ("pid", "mnt")
    host = host_namespaces()
    assert {k: v for k, v in report["ns"].items() if k not in own} == {
        k: v for k, v in host.items() if k not in own
    }
    assert all(report["ns"][kind] != host[kind] for kind in own)
    assert report["is_sandbox"] is None
    proxy = {*PROXY_ENV, "NO_PROXY", "no_proxy"} if netns else set()
    assert set(report["env"]) <= {"HOME", "PATH", "SHELL", "TERM", "LANG", "USER", "LOGNAME",
                                  *proxy}  # fmt: skip
    assert report["env"]["HOME"] == str(tree.home)
    assert report["env"]["USER"] == tree.agent.name
    assert report["write_root_home"] is False
    assert UNSAFE_WARNING not in result.stderr


def test_user_mode_exit_status_is_claudes(tree: LaunchTree) -> None:
    claude = tree.write_script("#!/bin/sh\nexit 5\n")
    assert run_launcher(tree.write_config(claude, mode="user")).returncode == 5
    killed = tree.write_script("#!/bin/sh\nkill -9 $$\n", name="killed")
    config = tree.write_config(killed, mode="user", name="k.toml")
    assert run_launcher(config).returncode == 128 + 9


def test_user_mode_runs_claude_in_a_session_of_its_own_under_its_reaper(
    tree: LaunchTree,
) -> None:
    claude = tree.write_script(
        "#!/usr/bin/python3\nimport os\nprint(os.getpid(), os.getsid(0), os.getppid())\n"
    )
    result = run_launcher(tree.write_config(claude, mode="user"))
    assert result.returncode == 0, result.stderr
    pid, sid, ppid = map(int, result.stdout.splitlines()[-1].split())
    # The session's first process (pid 1 of its pid namespace) leads a session of
    # its own: the caller's terminal is never the agent's terminal.
    assert (sid, ppid) == (1, 1) and pid != 1


@pytest.mark.parametrize(
    ("args", "exported", "expected"),
    [
        (["--dangerously-skip-permissions", "--print", "ok"], None, "1"),
        (["--print", "ok"], None, None),
        (["--dangerously-skip-permissions", "--print", "ok"], "0", "0"),
        (["--print", "ok"], "1", "1"),
    ],
)
def test_unsafe_mode_is_sandbox_rules_and_warning(
    tree: LaunchTree,
    host_sleep: subprocess.Popen[bytes],
    args: list[str],
    exported: str | None,
    expected: str | None,
) -> None:
    env = launcher_env({"IS_SANDBOX": exported} if exported is not None else {})
    report, result = _run_report(tree, "unsafe", host_sleep.pid, args, env=env, accepted=True)
    assert report["uid"] == 0
    assert report["ns"] == host_namespaces()
    assert report["is_sandbox"] == expected
    assert report["args"] == args
    # The caller's environment is kept in unsafe mode (it is the operator's own session).
    assert report["env"]["SECRET_TOKEN"] == "must-not-leak"
    assert UNSAFE_WARNING in result.stderr and "sandbox-setup" in result.stderr


def test_unsafe_warning_is_printed_on_every_launch(tree: LaunchTree) -> None:
    claude = tree.write_script("#!/bin/sh\nexit 0\n")
    config = tree.write_config(claude, mode="unsafe", accepted=True)
    for _ in range(2):
        result = run_launcher(config)
        assert result.returncode == 0
        assert UNSAFE_WARNING in result.stderr


def test_non_root_operator_sandbox_uses_its_own_uid(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    report, _ = _run_report(
        tree, "sandbox", host_sleep.pid, ["--print", "ok"], preexec_user=tree.agent.uid
    )
    assert report["uid"] == tree.agent.uid
    host = host_namespaces()
    assert all(report["ns"][k] != host[k] for k in host)
    assert report["is_sandbox"] == "1"
    assert report["sees_host_pid"] is False
    assert report["write_usr"] is False


def test_non_root_operator_unsafe_mode_never_sets_is_sandbox(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    # IS_SANDBOX=1 is for root's guard only: a non-root operator asking for the
    # bypass gets nothing set (the guard does not fire for them anyway).
    args = ["--dangerously-skip-permissions", "--print", "ok"]
    # The operator's own config, as sandbox-setup run by them would write it.
    report, result = _run_report(
        tree,
        "unsafe",
        host_sleep.pid,
        args,
        preexec_user=tree.agent.uid,
        config_owner=tree.agent.uid,
        accepted=True,
    )
    assert report["uid"] == tree.agent.uid
    assert report["is_sandbox"] is None and "IS_SANDBOX" not in report["env"]
    assert report["args"] == args
    assert report["ns"] == host_namespaces()
    # Unconfined, as the warning says: it reads what its uid may read.
    assert report["read_operator_secret"] == OPERATOR_SECRET
    assert UNSAFE_WARNING in result.stderr and f"uid {tree.agent.uid}" in result.stderr
    assert "sandbox-setup" in result.stderr


def test_non_root_operator_may_own_the_config(tree: LaunchTree) -> None:
    claude = tree.write_script(f"#!/bin/sh\ntouch {tree.marker}\n")
    config = tree.write_config(claude, mode="user")
    os.chown(config, tree.agent.uid, tree.agent.gid)
    result = run_launcher(config, preexec_user=tree.agent.uid)
    assert result.returncode == 0, result.stderr
    assert tree.marker.exists()


def test_non_root_operator_cannot_switch_to_another_agent(tree: LaunchTree) -> None:
    claude = tree.write_script(f"#!/bin/sh\ntouch {tree.marker}\n")
    config = tree.write_config(claude, mode="user", agent_user="root")
    result = run_launcher(config, preexec_user=tree.agent.uid)
    assert result.returncode == 3
    assert "only root can switch users" in result.stderr
    assert not tree.marker.exists()


def test_root_agent_is_refused(tree: LaunchTree) -> None:
    claude = tree.write_script(f"#!/bin/sh\ntouch {tree.marker}\n")
    result = run_launcher(tree.write_config(claude, mode="user", agent_user="root"))
    assert result.returncode == 3
    assert "agent user 'root' cannot be the agent of a launch: [uid 0]" in result.stderr
    assert not tree.marker.exists()
