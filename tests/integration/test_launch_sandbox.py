"""sandbox-launch in sandbox mode with the real bwrap: what the child sees, what it can't do.

A fake ``claude`` reports from inside; a ``sleep`` started by the test as
the agent (so plain permissions would let the agent signal it) stands for a
host process the agent must neither see nor signal.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base.cgroups import judge_delegation, read_cgroup_facts
from tests.launch_fixtures import (
    OPERATOR_SECRET,
    LaunchTree,
    agent_sleeper,
    as_agent,
    host_namespaces,
    last_json,
    launch_tree,
    launcher_env,
    report_claude,
    run_launcher,
    state_home,
)
from tests.tools import REPO

pytestmark = pytest.mark.integration


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


@pytest.fixture
def host_sleep(tree: LaunchTree) -> Iterator[subprocess.Popen[bytes]]:
    yield from agent_sleeper(tree)


def _report(tree: LaunchTree, host_pid: int, **config: Any) -> tuple[dict[str, Any], str]:
    claude = tree.write_script(report_claude(tree, host_pid))
    result = run_launcher(tree.write_config(claude, **config), ["--print", "ok"])
    assert result.returncode == 0, result.stderr
    return last_json(result.stdout), result.stderr


def test_child_runs_inside_verified_namespaces(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    report, _ = _report(tree, host_sleep.pid)
    host = host_namespaces()
    assert report["uid"] == tree.agent.uid
    for kind in ("user", "mnt", "pid", "ipc", "uts"):
        assert report["ns"][kind] != host[kind], kind
    assert report["is_sandbox"] == "1"
    assert report["args"] == ["--print", "ok"]
    assert report["cwd"] == str(tree.workspace)
    assert report["cap_eff"] == "0000000000000000"
    assert report["no_new_privs"] == "1"
    # Clean environment: the caller's secret did not cross.
    assert set(report["env"]) <= {"HOME", "PATH", "SHELL", "TERM", "LANG", "IS_SANDBOX", "PWD"}
    assert report["env"]["HOME"] == str(tree.home)
    assert report["env"]["TERM"] == "xterm-256color"


def test_system_is_read_only_and_only_home_and_workspace_are_writable(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    report, _ = _report(tree, host_sleep.pid)
    assert report["write_usr"] is False
    assert report["write_etc"] is False
    assert report["write_root_home"] is False
    assert report["write_workspace"] is True
    assert report["write_home"] is True
    # outside/ is the agent's own directory on the host: only the sandbox keeps it out.
    assert report["write_outside"] is False
    assert not (tree.outside / ".sandbox-launch-probe").exists()


def test_system_writes_are_refused_by_the_read_only_mount(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    # On the host, the agent's write into /usr or /etc is refused by permissions
    # (EACCES); inside, by the read-only bind (EROFS), which the kernel reports
    # before it looks at permissions. A writable bind would give EACCES here.
    for directory in ("/usr", "/etc"):
        host = as_agent(tree, ["/usr/bin/touch", f"{directory}/.sandbox-launch-probe"])
        assert host.returncode != 0 and "Permission denied" in host.stderr, host.stderr
    report, _ = _report(tree, host_sleep.pid)
    assert report["write_errors"] == {"/usr": "EROFS", "/etc": "EROFS"}


def test_operators_files_the_agent_may_read_on_the_host_are_not_in_the_sandbox(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    # The control: without a sandbox, plain permissions let the agent read the
    # operator's 0644 secret and write into the inbox it owns.
    read = as_agent(tree, ["/usr/bin/cat", str(tree.operator_secret)])
    assert (read.returncode, read.stdout) == (0, OPERATOR_SECRET), read.stderr
    probe = tree.operator_inbox / "host-probe"
    wrote = as_agent(tree, ["/usr/bin/touch", str(probe)])
    assert wrote.returncode == 0 and probe.exists(), wrote.stderr
    probe.unlink()
    report, _ = _report(tree, host_sleep.pid)
    # Not bound into the sandbox: the path does not even exist there.
    assert report["read_operator_secret"] == "ENOENT"
    assert OPERATOR_SECRET not in json.dumps(report)
    assert report["write_operator_inbox"] is False
    assert os.listdir(tree.operator_inbox) == []


def test_escape_attempts_fail(tree: LaunchTree, host_sleep: subprocess.Popen[bytes]) -> None:
    report, _ = _report(tree, host_sleep.pid)
    assert report["read_root"] is False
    assert report["sees_host_pid"] is False
    assert report["kill_host"] == "ProcessLookupError"
    assert host_sleep.poll() is None, "the host process was killed from inside"
    assert report["remount_rc"] != 0
    # Only the sandbox's own processes are visible (init, claude, mount's parent...).
    assert report["process_count"] < 10


def test_network_none_unshares_the_network(
    tree: LaunchTree, host_sleep: subprocess.Popen[bytes]
) -> None:
    claude = tree.write_script(
        "#!/bin/sh\ntouch " + str(tree.marker) + "\nreadlink /proc/self/ns/net\n"
    )
    shared = run_launcher(tree.write_config(claude))
    isolated = run_launcher(tree.write_config(claude, network="none", name="none.toml"))
    host_net = os.readlink("/proc/self/ns/net")
    assert shared.returncode == 0 and isolated.returncode == 0, shared.stderr + isolated.stderr
    assert shared.stdout.strip() == host_net
    assert isolated.stdout.strip() not in ("", host_net)


def test_exit_status_passes_through(tree: LaunchTree) -> None:
    ok = tree.write_script("#!/bin/sh\nexit 7\n")
    assert run_launcher(tree.write_config(ok)).returncode == 7
    killed = tree.write_script("#!/bin/sh\nkill -9 $$\n", name="killed")
    assert run_launcher(tree.write_config(killed, name="k.toml")).returncode == 128 + 9


def test_dry_run_prints_the_command_and_starts_nothing(tree: LaunchTree) -> None:
    claude = tree.write_script("#!/bin/sh\ntouch " + str(tree.marker) + "\n")
    result = run_launcher(
        tree.write_config(claude), ["--print", "ok"], dry_run=True, env=launcher_env()
    )
    assert result.returncode == 0, result.stderr
    command = next(line for line in result.stdout.splitlines() if line.startswith("command: "))
    assert f"/usr/bin/setpriv --reuid={tree.agent.uid} --regid={tree.agent.gid}" in command
    assert "/usr/bin/bwrap --unshare-user --unshare-pid" in command
    # The sandbox's command: the release gate, then Claude with its arguments.
    assert command.endswith(f"sandbox-gate '{{gate-fd}}' {claude} --print ok")
    assert " -- /bin/sh -c " in command
    assert "SECRET_TOKEN" not in result.stdout
    assert not tree.marker.exists()


def _environment_block(stdout: str) -> dict[str, str]:
    """The ``--dry-run`` lines under ``environment (...):``, as a dict."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("environment"))
    assert "nothing else is inherited" in lines[start], lines[start]
    block: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        key, _, value = line.strip().partition("=")
        block[key] = value
    return block


def test_dry_run_prints_the_clean_environment_and_is_sandbox_only_for_bwrap(
    tree: LaunchTree,
) -> None:
    claude = tree.write_script("#!/bin/sh\ntouch " + str(tree.marker) + "\n")
    # The caller exports IS_SANDBOX and a secret: neither may be inherited.
    env = launcher_env({"IS_SANDBOX": "1", "HOME": "/root", "LANG": "de_DE.UTF-8"})
    result = run_launcher(tree.write_config(claude), ["--print", "ok"], dry_run=True, env=env)
    assert result.returncode == 0, result.stderr
    block = _environment_block(result.stdout)
    assert block == {
        "HOME": str(tree.home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "SHELL": "/bin/bash",
        "TERM": "xterm-256color",
        "LANG": "de_DE.UTF-8",
    }
    assert "must-not-leak" not in result.stdout and "SECRET_TOKEN" not in result.stdout
    # IS_SANDBOX appears in the command exactly once: bwrap's --setenv, among
    # bwrap's options (before the sandbox's command).
    command = next(line for line in result.stdout.splitlines() if line.startswith("command: "))
    argv = shlex.split(command.removeprefix("command: "))
    assert argv.count("IS_SANDBOX") == 1 and not any("IS_SANDBOX=" in a for a in argv), argv
    at = argv.index("IS_SANDBOX")
    assert argv[at - 1 : at + 2] == ["--setenv", "IS_SANDBOX", "1"]
    bwrap = argv.index("/usr/bin/bwrap")
    assert bwrap < at < argv.index("--", bwrap)
    # The printed block is bwrap's whole environment (no --reset-env rebuilds it);
    # bwrap adds IS_SANDBOX, nothing else.
    assert "--reset-env" not in argv and "--clearenv" not in argv
    setenv = {argv[i + 1]: argv[i + 2] for i, arg in enumerate(argv) if arg == "--setenv"}
    assert setenv == {"IS_SANDBOX": "1"}
    assert not tree.marker.exists()


def test_symlinked_workspace_is_mounted_at_its_configured_path(tree: LaunchTree) -> None:
    link = tree.base / "ws-link"
    link.symlink_to(tree.workspace)
    claude = tree.write_script("#!/bin/sh\ntouch " + str(link) + "/from-inside\npwd\n")
    result = run_launcher(tree.write_config(claude, workspaces=[link]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(link)
    assert (tree.workspace / "from-inside").exists()


def session_cgroup_parents() -> list[Path]:
    """Where this host's session cgroups go (one per v1 hierarchy, or the v2 parent);
    skips, saying why, where the host delegates none."""
    delegation = judge_delegation(read_cgroup_facts())
    if delegation.kind == "cgroup1" and delegation.v1_parents is not None:
        return [Path(p) for p in delegation.v1_parents]
    if delegation.kind == "cgroup2" and delegation.parent is not None:
        return [Path(delegation.parent)]
    pytest.skip(f"no session cgroup on this host ({delegation.reason})")


def test_the_sandbox_runs_in_the_sessions_cgroup_and_it_is_gone_after(tree: LaunchTree) -> None:
    # The launcher leaves the session's cgroup (in the background) once the sandbox
    # is verified: what it started, Claude included, stays in it until the end.
    parents = session_cgroup_parents()
    started = tree.workspace / "started"
    claude = tree.write_script(f"#!/bin/sh\ntouch {started}\nsleep 3\n")
    env = {**launcher_env(), "XDG_STATE_HOME": str(state_home(0))}
    argv = [
        sys.executable,
        "-m",
        "sandbox_setup.launcher",
        "--config",
        str(tree.write_config(claude)),
    ]
    launcher = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        session = [parent / f"sandbox-launch-{launcher.pid}" for parent in parents]
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists()
        time.sleep(0.5)  # the launcher's move out is done by now
        for directory in session:
            procs = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
            assert procs and launcher.pid not in procs, (directory, procs)
        assert launcher.wait(timeout=30) == 0
    finally:
        launcher.kill()
        launcher.wait()
    for directory in session:
        assert not directory.exists()  # removed at the session's end


def test_a_launch_refused_after_the_cgroup_was_joined_leaves_no_cgroup(tree: LaunchTree) -> None:
    # The session's cgroup is joined while the launch is prepared; a refusal after
    # that (here: the Claude binary is not executable) removes it again.
    parents = session_cgroup_parents()
    claude = tree.write_script("#!/bin/sh\nexit 0\n")
    claude.chmod(0o644)
    env = {**launcher_env(), "XDG_STATE_HOME": str(state_home(0))}
    argv = [
        sys.executable,
        "-m",
        "sandbox_setup.launcher",
        "--config",
        str(tree.write_config(claude)),
    ]
    launcher = subprocess.Popen(argv, env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)
    _, stderr = launcher.communicate(timeout=60)
    assert launcher.returncode == 3, stderr
    assert "is not executable" in stderr
    for parent in parents:
        assert not (parent / f"sandbox-launch-{launcher.pid}").exists()
