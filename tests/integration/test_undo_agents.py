"""Undo and the agent account (issue 14, docs/design.md invariants 6 and 9).

- a live agent with running processes: undo stops them first (and says so), then
  removes the account; the apply and the undo run in a mount namespace of their
  own where /home is a temp directory, so only the ``ac-`` account (and its group)
  touch the host, and both are removed;
- a step that fails (``userdel`` on an immutable passwd file, a real failure) is
  never marked done: undo exits 1, ``--audit`` reports the account that outlived
  its setup, and the next ``--undo`` retries exactly what is left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.processes import processes_of_uid
from tests.core_fixtures import (
    REPO,
    group_entry,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
)
from tests.live_accounts import leftover_lines, remove_live_account
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(integration_workdir: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "setfacl", "chattr"):
        require_tool(tool)
    before = host_passwd_digest()
    base = Path(tempfile.mkdtemp(prefix="ac-undo-", dir=integration_workdir))
    root = make_target_root(base / "root")
    for name in ("a", "b"):
        (root / "srv" / name).mkdir(parents=True)
    yield root
    subprocess.run(["chattr", "-i", str(root / "etc/passwd")], check=False)
    shutil.rmtree(base, ignore_errors=True)
    assert host_passwd_digest() == before, "the host's account files changed"


def audit_ids(root: Path) -> list[str]:
    done = run_cli("--audit", "--json", "--root", str(root))
    assert done.returncode in (0, 1), done.stderr
    return [f["id"] for f in json.loads(done.stdout)["findings"]]


def test_a_failed_undo_step_stays_recorded_and_the_next_undo_retries_it(root: Path) -> None:
    for args in (
        ("--mode", "sandbox", "--agent-user", "agent-a", "--workspace", "/srv/a"),
        ("--mode", "user", "--agent-user", "agent-b", "--workspace", "/srv/b"),
    ):
        done = run_cli("--headless", "--root", str(root), "--yes", *args)
        assert done.returncode == 0, done.stderr
    subprocess.run(["chattr", "+i", str(root / "etc/passwd")], check=True)

    first = run_cli("--undo", "--yes", "--root", str(root))
    assert first.returncode == 1, first.stdout + first.stderr
    assert "could not undo remove user agent-b" in first.stdout
    assert "the journal keeps them" in first.stderr and "--undo --yes" in first.stderr
    assert passwd_entry(root, "agent-b") is not None
    # The files of that apply were reverted: the launcher is setup a's again.
    assert 'user = "agent-a"' in (root / "root/.config/sandbox-setup/launcher.toml").read_text()
    assert "audit.accounts.outlived" in audit_ids(root)
    preview = run_cli("--undo", "--root", str(root))
    assert "remove user agent-b" in preview.stdout and "restore" not in preview.stdout

    again = run_cli("--undo", "--yes", "--root", str(root))
    assert again.returncode == 1 and passwd_entry(root, "agent-b") is not None

    subprocess.run(["chattr", "-i", str(root / "etc/passwd")], check=True)
    last = run_cli("--undo", "--yes", "--root", str(root))
    assert last.returncode == 0, last.stdout + last.stderr
    assert "removed user agent-b" in last.stdout
    assert "removed group sandbox-ws-agent-b" in last.stdout
    assert passwd_entry(root, "agent-b") is None and group_entry(root, "sandbox-ws-agent-b") is None
    assert "audit.accounts.outlived" not in audit_ids(root)
    # The other setup was never touched; the next undo is its own.
    assert passwd_entry(root, "agent-a") is not None
    assert group_entry(root, "sandbox-ws-agent-a")[3] == "agent-a"  # type: ignore[index]
    following = run_cli("--undo", "--yes", "--root", str(root))
    assert "removed user agent-a" in following.stdout


AGENT = "ac-undo-agent"
AGENT_GROUP = "sandbox-ws-" + AGENT


def in_own_mounts(home: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m sandbox_setup ARGS`` on the live root, in a mount namespace where /home
    is ``home``: useradd's home and the agent's settings land there, not on the host."""
    script = 'mount --bind "$0" /home && exec "$@"'
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
         str(home), sys.executable, "-m", "sandbox_setup", *args],
        cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_undo_stops_a_live_agents_processes_first_and_removes_it() -> None:
    require_root()
    for tool in ("unshare", "useradd", "userdel", "groupadd", "setfacl", "setpriv", "sleep"):
        require_tool(tool)
    base = Path(tempfile.mkdtemp(prefix="ac-undo-live-", dir="/var/tmp"))
    sleepers: list[subprocess.Popen[bytes]] = []
    try:
        base.chmod(0o755)
        home, workspace, bin_dir = base / "home", base / "ws", base / "bin"
        for directory in (home, workspace, bin_dir):
            directory.mkdir(mode=0o755)
        claude = bin_dir / "claude"
        claude.write_text('#!/bin/sh\necho "2.1.197 (Claude Code)"\n')
        claude.chmod(0o755)
        env = {"XDG_CONFIG_HOME": str(base / "config"), "XDG_STATE_HOME": str(base / "state")}
        done = in_own_mounts(
            home, "--headless", "--yes", "--mode", "user", "--agent-user", AGENT,
            "--workspace", str(workspace), "--claude", str(claude), "--settings-scope", "user",
            env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        account = lookup_user(AGENT)
        assert account is not None and (home / AGENT).is_dir()
        # The agent is busy: one process ignores SIGTERM (only SIGKILL ends it).
        for command in (["sleep", "300"], ["/bin/sh", "-c", "trap '' TERM; sleep 300"]):
            sleepers.append(
                subprocess.Popen(
                    [
                        "setpriv",
                        f"--reuid={account.uid}",
                        f"--regid={account.gid}",
                        "--init-groups",
                        "--",
                        *command,
                    ]
                )
            )
        deadline = time.monotonic() + 10
        while len(processes_of_uid(account.uid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(processes_of_uid(account.uid)) >= 3
        undo = in_own_mounts(home, "--undo", "--yes", env=env)
        assert undo.returncode == 0, undo.stdout + undo.stderr
        assert f"processes of the agent {AGENT} first" in undo.stdout
        assert f"removed user {AGENT}" in undo.stdout
        assert f"removed group {AGENT_GROUP}" in undo.stdout
        assert lookup_user(AGENT) is None
        assert processes_of_uid(account.uid) == []
        assert all(s.wait(timeout=10) is not None for s in sleepers)
        assert not leftover_lines(AGENT) and not leftover_lines(AGENT_GROUP)
        again = in_own_mounts(home, "--undo", "--yes", env=env)
        assert "Nothing to undo" in again.stdout
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
        remove_live_account(AGENT)
        subprocess.run(["groupdel", AGENT_GROUP], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)
