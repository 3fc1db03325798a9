"""Claude as launchers run it (issue 16), with the real launcher, bwrap and setpriv and a
fake Claude that reports what it got: the caller's variables it passes (exactly the
list), the directory it starts in (each rule, both modes), the one notice line on
stderr (never stdout; --quiet), the loopback-port hint, and a config whose Claude is
the claude shim."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.configure.claude_shim import render_shim
from sandbox_setup.launcher.egress.netns import namespace_possible
from sandbox_setup.policy.credentials import placeholder
from sandbox_setup.policy.environment import DEFAULT_PASS, passed_names
from tests.launch_fixtures import (
    LaunchTree,
    last_json,
    launch_tree,
    launcher_env,
    report_claude,
    run_launcher,
    tree_processes,
)
from tests.tools import REPO

pytestmark = pytest.mark.integration

MODES = ["sandbox", "user"]
SECRET = "sk-ant-api03-passed-secret-value"


def _listener() -> int:
    """A loopback port that accepts connections: the launch checks that its base URL
    answers (issue 28), so the caller's points at one."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            conn, _ = server.accept()
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return int(server.getsockname()[1])


API_PORT = _listener()
CALLER = {
    "ANTHROPIC_API_KEY": SECRET,
    "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{API_PORT}",
    "AWS_SECRET_ACCESS_KEY": "decoy-aws-secret",
    "GITHUB_TOKEN": "decoy-github-token",
    "MY_EXTRA": "extra-value",
    "IS_SANDBOX": "0",
    "CLAUDE_CODE_BUBBLEWRAP": "1",
}
# Prints, as one JSON line, its environment exactly as it was given (/proc/self/environ)
# and where it started; touches the marker so a run that never got here cannot pass.
ENV_CLAUDE = """#!/usr/bin/python3 -IS
import json, os, sys
open({marker!r}, "w").write("ran")
raw = open("/proc/self/environ", "rb").read().split(b"\\0")[:-1]
env = dict(entry.decode().split("=", 1) for entry in raw)
print(json.dumps({{"env": env, "cwd": os.getcwd(), "args": sys.argv[1:]}}))
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def env_claude(tree: LaunchTree) -> Path:
    return tree.write_script(ENV_CLAUDE.format(marker=str(tree.marker)))


def second_workspace(tree: LaunchTree, name: str = "workspace2") -> Path:
    path = tree.base / name
    path.mkdir(mode=0o755)
    os.chown(path, tree.agent.uid, tree.agent.gid)
    return path


# -- the caller's environment ---------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_exactly_the_pass_list_reaches_claude(tree: LaunchTree, mode: str) -> None:
    config = tree.write_config(env_claude(tree), mode=mode, env_pass=passed_names(["MY_EXTRA"]))
    result = run_launcher(config, ["--print", "ok"], env=launcher_env(CALLER))
    assert result.returncode == 0, result.stderr
    env = last_json(result.stdout)["env"]
    base = {"HOME": str(tree.home), "PATH": "/usr/local/bin:/usr/bin:/bin",
            "SHELL": "/bin/bash", "TERM": "xterm-256color", "LANG": "C.UTF-8"}  # fmt: skip
    passed = {k: CALLER[k] for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MY_EXTRA")}
    if mode == "sandbox":
        # The caller's IS_SANDBOX=0 and CLAUDE_CODE_BUBBLEWRAP are never taken; only
        # the verified sandbox claims itself. (PWD: the release gate is a shell.)
        assert env == {**base, **passed, "IS_SANDBOX": "1", "PWD": str(tree.workspace)}
    else:
        # With Landlock's network wall (ABI >= 4), the session's proxy is the way out:
        # its variables are the launcher's, not the caller's.
        ours = {k: v for k, v in env.items() if k.lower().endswith("_proxy")}
        assert all(
            v.startswith("http://127.0.0.1:")
            for k, v in ours.items()
            if not k.lower().startswith("no_")
        )
        if namespace_possible().possible:
            # The session's network namespace holds the API gateway: Claude gets the
            # key's placeholder and the gateway's URL (docs/design.md invariant 17).
            passed["ANTHROPIC_API_KEY"] = placeholder(tree.agent.name, "ANTHROPIC_API_KEY")
            passed["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:3129"
            assert "API gateway: ANTHROPIC_API_KEY kept outside" in result.stderr
        assert env == {
            **base,
            **passed,
            "USER": tree.agent.name,
            "LOGNAME": tree.agent.name,
            **ours,
        }
    assert "decoy" not in result.stdout + result.stderr


def test_without_the_list_nothing_of_the_caller_passes(tree: LaunchTree) -> None:
    result = run_launcher(tree.write_config(env_claude(tree)), env=launcher_env(CALLER))
    assert result.returncode == 0, result.stderr
    names = set(last_json(result.stdout)["env"])
    assert names == {"HOME", "PATH", "SHELL", "TERM", "LANG", "IS_SANDBOX", "PWD"}
    assert "passes none of your variables" in result.stderr


def test_the_passed_values_never_appear_on_a_command_line(tree: LaunchTree) -> None:
    # /proc/PID/cmdline is world-readable: a secret there is a secret for every user.
    # While Claude runs, no process of the launch (setpriv, bwrap, the gate) shows it.
    release = tree.workspace / "release"
    claude = tree.write_script(
        f"#!/bin/sh\ntouch {tree.marker}\n"
        f"while [ ! -e {release} ]; do sleep 0.05; done\n"
        'case "$ANTHROPIC_API_KEY" in sk-*) echo key-inside ;; esac\n'
    )
    config = tree.write_config(claude, env_pass=DEFAULT_PASS)
    argv = [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config)]
    with subprocess.Popen(
        argv, env=launcher_env(CALLER), cwd=REPO, stdout=subprocess.PIPE, text=True
    ) as launch:
        try:
            deadline = time.monotonic() + 30
            while not tree.marker.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert tree.marker.exists(), "Claude never started"
            launched = tree_processes(tree)
            assert len(launched) >= 3, launched  # launcher, setpriv/bwrap, the sandbox
            for pid in launched:
                with contextlib.suppress(OSError):
                    assert SECRET.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
        finally:
            release.touch()
        stdout, _ = launch.communicate(timeout=30)
    assert launch.returncode == 0 and "key-inside" in stdout


@pytest.mark.parametrize("mode", MODES)
def test_dry_run_names_the_passed_variables_and_never_shows_a_value(
    tree: LaunchTree, mode: str
) -> None:
    config = tree.write_config(env_claude(tree), mode=mode, env_pass=passed_names(["MY_EXTRA"]))
    result = run_launcher(config, env=launcher_env(CALLER), dry_run=True)
    assert result.returncode == 0, result.stderr
    assert "  ANTHROPIC_API_KEY=<set, not shown>" in result.stdout
    assert "  MY_EXTRA=<set, not shown>" in result.stdout
    for value in (SECRET, "8317", "extra-value", "decoy"):
        assert value not in result.stdout + result.stderr
    assert not tree.marker.exists()


def test_dry_run_names_the_api_gateway_and_its_switch(tree: LaunchTree) -> None:
    # docs/design.md invariant 17: what holds the key is said before anything starts.
    config = tree.write_config(env_claude(tree), network="allowlist", env_pass=passed_names([]))
    result = run_launcher(config, env=launcher_env(CALLER), dry_run=True)
    assert result.returncode == 0, result.stderr
    assert "note: API gateway: ANTHROPIC_API_KEY kept outside the sandbox" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    config.write_text(config.read_text().replace("[sandbox]\n", '[sandbox]\napi_gateway = "off"\n'))
    off = run_launcher(config, env=launcher_env(CALLER), dry_run=True)
    assert off.returncode == 0, off.stderr
    said = 'API key passed to Claude as it is, readable by the agent: [sandbox] api_gateway = "off"'
    assert f"note: {said}" in off.stdout
    assert "API gateway: ANTHROPIC_API_KEY kept outside" not in off.stdout


# -- the working directory ------------------------------------------------------------


def _cwd_run(
    tree: LaunchTree, mode: str, cwd: Path, workspaces: list[Path] | None = None
) -> subprocess.CompletedProcess[str]:
    claude = tree.write_script(report_claude(tree, os.getpid()))
    config = tree.write_config(claude, mode=mode, workspaces=workspaces)
    return run_launcher(config, ["--print", "ok"], cwd=cwd)


@pytest.mark.parametrize("mode", MODES)
def test_claude_starts_where_the_operator_is_inside_the_workspace(
    tree: LaunchTree, mode: str
) -> None:
    below = tree.workspace / "src" / "lib"
    below.mkdir(parents=True)
    os.chown(below.parent, tree.agent.uid, tree.agent.gid)
    os.chown(below, tree.agent.uid, tree.agent.gid)
    result = _cwd_run(tree, mode, below)
    assert result.returncode == 0, result.stderr
    assert last_json(result.stdout)["cwd"] == str(below)
    assert f"in {below}" in result.stderr and "outside the workspace" not in result.stderr


@pytest.mark.parametrize("mode", MODES)
def test_one_workspace_and_the_operator_elsewhere_starts_there_and_says_so(
    tree: LaunchTree, mode: str
) -> None:
    result = _cwd_run(tree, mode, tree.outside)
    assert result.returncode == 0, result.stderr
    assert last_json(result.stdout)["cwd"] == str(tree.workspace)
    assert f"in {tree.workspace} (you are in {tree.outside}, outside the workspace)" in (
        result.stderr
    )


@pytest.mark.parametrize("mode", MODES)
def test_with_several_workspaces_it_starts_in_the_one_the_operator_is_in(
    tree: LaunchTree, mode: str
) -> None:
    other = second_workspace(tree)
    result = _cwd_run(tree, mode, other, workspaces=[tree.workspace, other])
    assert result.returncode == 0, result.stderr
    assert last_json(result.stdout)["cwd"] == str(other)


@pytest.mark.parametrize("mode", MODES)
def test_with_several_workspaces_and_the_operator_in_none_it_refuses_listing_them(
    tree: LaunchTree, mode: str
) -> None:
    other = second_workspace(tree)
    result = _cwd_run(tree, mode, tree.outside, workspaces=[tree.workspace, other])
    assert result.returncode == 2, result.stderr
    assert str(tree.workspace) in result.stderr and str(other) in result.stderr
    assert "none of the workspaces" in result.stderr
    assert not tree.marker.exists() and result.stdout == ""


def test_a_symlinked_workspace_starts_under_its_configured_path(tree: LaunchTree) -> None:
    link = tree.base / "ws-link"
    link.symlink_to(tree.workspace)
    (tree.workspace / "sub").mkdir()
    os.chown(tree.workspace / "sub", tree.agent.uid, tree.agent.gid)
    # Inside, only the configured path is mounted: the real one does not exist there.
    claude = tree.write_script(f"#!/bin/sh\ntouch {link}/sub/from-inside\npwd\n")
    config = tree.write_config(claude, workspaces=[link])
    result = run_launcher(config, cwd=tree.workspace / "sub")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{link}/sub\n"
    assert (tree.workspace / "sub/from-inside").exists()


# -- the notice -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_one_notice_line_on_stderr_and_stdout_is_claudes_alone(tree: LaunchTree, mode: str) -> None:
    claude = tree.write_script(f"#!/bin/sh\ntouch {tree.marker}\nprintf 'only claude\\n'\n")
    config = tree.write_config(claude, mode=mode, env_pass=DEFAULT_PASS)
    result = run_launcher(config, ["--print", "ok"], env=launcher_env(CALLER), cwd=tree.outside)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "only claude\n"
    # One launch notice; the other lines are the launcher's own warnings and notes.
    lines = result.stderr.splitlines()
    notices = [line for line in lines if line.startswith("sandbox-launch:") and " mode; " in line]
    assert len(notices) == 1, result.stderr
    assert all(line.startswith("sandbox-launch: ") for line in lines), result.stderr
    for part in (f"{mode} mode", f"agent {tree.agent.name}", f"in {tree.workspace}", "network",
                 "passes ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY"):  # fmt: skip
        assert part in notices[0]
    assert SECRET not in result.stderr
    quiet = run_launcher(config, env=launcher_env(CALLER), cwd=tree.outside, options=["--quiet"])
    assert quiet.returncode == 0 and quiet.stdout == "only claude\n"
    # no notice and no notes; a warning stays (network host: what the agent can reach)
    assert all("network host:" in line for line in quiet.stderr.splitlines()), quiet.stderr
    assert (mode == "sandbox") is ("network host:" in quiet.stderr)


def test_unsafe_mode_keeps_its_warning_under_quiet(tree: LaunchTree) -> None:
    claude = tree.write_script("#!/bin/sh\nprintf 'only claude\\n'\n")
    config = tree.write_config(claude, mode="unsafe", accepted=True)
    loud = run_launcher(config)
    assert "unsafe mode" in loud.stderr and "environment inherited" in loud.stderr
    quiet = run_launcher(config, options=["--quiet"])
    assert quiet.stdout == "only claude\n"
    assert "NO OS sandbox" in quiet.stderr and "environment inherited" not in quiet.stderr


# -- a base URL on the host's loopback ------------------------------------------------


def test_the_launch_says_which_loopback_port_the_allowlist_needs(tree: LaunchTree) -> None:
    claude = env_claude(tree)
    config = tree.write_config(claude, network="allowlist", env_pass=DEFAULT_PASS)
    # base_url_port = "auto" (the default): the launch exposes it, nothing to do.
    result = run_launcher(config, env=launcher_env(CALLER), dry_run=True)
    assert result.returncode == 0 and "--allow-loopback-port" not in result.stderr
    exposed = f"host loopback port {API_PORT} (from ANTHROPIC_BASE_URL, this session only)"
    assert exposed in result.stdout, result.stdout
    off = config.read_text().replace("[sandbox]\n", '[sandbox]\nbase_url_port = "off"\n', 1)
    config.write_text(off)
    result = run_launcher(config, env=launcher_env(CALLER), dry_run=True)
    assert f"--allow-loopback-port {API_PORT}" in result.stderr, result.stderr
    allowed = tree.write_config(
        claude, network="allowlist", env_pass=DEFAULT_PASS, loopback_ports=[API_PORT]
    )
    result = run_launcher(allowed, env=launcher_env(CALLER), dry_run=True)
    assert result.returncode == 0 and "--allow-loopback-port" not in result.stderr
    host = tree.write_config(claude, network="host", env_pass=DEFAULT_PASS)
    assert "--allow-loopback-port" not in run_launcher(host, env=launcher_env(CALLER)).stderr


# -- never the shim -------------------------------------------------------------------


def test_a_config_whose_claude_is_the_shim_is_refused(tree: LaunchTree) -> None:
    shim = tree.bin / "claude"
    shim.write_bytes(render_shim("/usr/local/bin/sandbox-launch", str(tree.config_dir)))
    shim.chmod(0o755)
    for mode in ("sandbox", "user", "unsafe"):
        result = run_launcher(tree.write_config(shim, mode=mode, accepted=True))
        assert result.returncode == 3, (mode, result.stderr)
        assert "claude shim, not Claude Code" in result.stderr
