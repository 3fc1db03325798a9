"""Which account may be the agent, and setups that stay apart (issue 14, docs/design.md 9).

Real ``useradd --prefix`` trees (never the host's accounts) and the real headless
CLI: service and system accounts, and one with a password, are refused with exit 3
naming the rule and nothing written; an existing regular account is the agent only
with ``--reuse-account``; one with running processes (a live ``ac-`` account, the
only way to have them) is refused unless reused. Two setups in one tree each get a
group of their own: neither agent can write the other's workspace (checked by the
kernel, as the agents, with setpriv), and undoing one leaves the other intact. An
older setup that used the shared ``sandbox-ws`` is upgraded on its next apply.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode, SettingsScope
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.configure.answers import Answers, dump_answers
from sandbox_setup.configure.launcher_toml import render_launcher_config
from tests.core_fixtures import (
    CONFIG,
    STATE,
    group_entry,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
    snapshot,
    system_state,
)
from tests.live_accounts import live_account
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(integration_workdir: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "usermod", "setfacl", "setpriv"):
        require_tool(tool)
    before = host_passwd_digest()
    base = Path(tempfile.mkdtemp(prefix="ac-accounts-", dir=integration_workdir))
    base.chmod(0o755)
    root = make_target_root(base / "root")
    root.chmod(0o755)
    for name in ("a", "b"):
        ws = root / "srv" / name
        ws.mkdir(parents=True)
        (ws / "file.txt").write_text(f"{name}\n")
    yield root
    shutil.rmtree(base, ignore_errors=True)
    assert host_passwd_digest() == before, "the host's account files changed"


def useradd(root: Path, *args: str) -> None:
    subprocess.run(["useradd", "--prefix", str(root), *args], check=True, capture_output=True)


def headless(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("--headless", "--root", str(root), *args)


def audit_ids(root: Path) -> list[str]:
    """The finding IDs of ``--audit --json`` (exit 0 or 1: it could audit)."""
    done = run_cli("--audit", "--json", "--root", str(root))
    assert done.returncode in (0, 1), done.stderr
    return [f["id"] for f in json.loads(done.stdout)["findings"]]


def refused(root: Path, *args: str) -> str:
    """Run an apply that must be refused: exit 3 and nothing written. Its stderr."""
    before = snapshot(root)
    proc = headless(root, "--yes", *args)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert snapshot(root) == before, "a refused apply wrote something"
    return proc.stderr


ACCOUNTS = {
    # name: (useradd arguments, rules the refusal must name)
    "postgres": (
        ("--system", "--home-dir", "/var/lib/postgresql", "--shell", "/bin/bash", "postgres"),
        ["[system account]", "[service account]", "/var/lib/postgresql"],
    ),
    "nobody": ((), ["[system account]", "[service account]", "nologin"]),  # in every tree
    "daemon": (
        (
            "--system",
            "--uid",
            "1",
            "--home-dir",
            "/usr/sbin",
            "--shell",
            "/usr/sbin/nologin",
            "daemon",
        ),
        ["[system account]", "uid 1, below UID_MIN", "[service account]"],
    ),
    "withpass": (
        (
            "--create-home",
            "--shell",
            "/bin/bash",
            "--password",
            "$6$salt$0123456789abcdef",
            "withpass",
        ),
        ["[password]", "a usable password", "usermod --prefix"],
    ),
}


@pytest.mark.parametrize("name", list(ACCOUNTS))
def test_service_system_and_password_accounts_are_refused_even_when_reused(
    root: Path, name: str
) -> None:
    args, expected = ACCOUNTS[name]
    if args:
        useradd(root, *args)
    for reuse in ((), ("--reuse-account",)):
        stderr = refused(root, "--mode", "user", "--agent-user", name, *reuse,
                         "--workspace", "/srv/a")  # fmt: skip
        assert f"the account {name} cannot be the agent user" in stderr
        for text in expected:
            assert text in stderr, stderr
    assert group_entry(root, "sandbox-ws-" + name) is None


def test_a_new_agent_may_not_take_a_service_name(root: Path) -> None:
    stderr = refused(root, "--mode", "user", "--agent-user", "postgres")
    assert "well-known service account" in stderr
    assert passwd_entry(root, "postgres") is None


def test_an_existing_regular_account_is_the_agent_only_when_reused(root: Path) -> None:
    useradd(root, "--create-home", "--shell", "/bin/bash", "alice")
    stderr = refused(root, "--mode", "user", "--agent-user", "alice", "--workspace", "/srv/a")
    assert "[existing account] alice already exists and sandbox-setup did not create it" in stderr
    assert "--reuse-account" in stderr
    plan = headless(root, "--mode", "user", "--agent-user", "alice", "--reuse-account",
                    "--workspace", "/srv/a")  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    # Never "create user alice ... unchanged": the plan says what is true.
    assert "user alice already exists (reused: --reuse-account); it is the agent" in plan.stdout
    assert "create user alice" not in plan.stdout
    done = headless(root, "--yes", "--mode", "user", "--agent-user", "alice", "--reuse-account",
                    "--workspace", "/srv/a")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert group_entry(root, "sandbox-ws-alice")[3] == "alice"  # type: ignore[index]
    assert not [i for i in audit_ids(root) if i.startswith("audit.accounts")]
    # Its owner gives it nologin (the fix sandbox-launch names for a reused account
    # with a login shell): still the setup's agent, no service sign.
    subprocess.run(["usermod", "--prefix", str(root), "--shell", "/usr/sbin/nologin", "alice"],
                   check=True)  # fmt: skip
    assert "audit.accounts.service" not in audit_ids(root)
    # Later someone turns the account into a service's (its home where services keep
    # their data): the audit judges it by the same rules the plan applied.
    subprocess.run(["usermod", "--prefix", str(root), "--home", "/var/lib/alice", "alice"],
                   check=True)  # fmt: skip
    assert "audit.accounts.service" in audit_ids(root)
    undo = run_cli("--undo", "--yes", "--root", str(root))
    assert undo.returncode == 0, undo.stderr
    # Not created by this setup: undo takes its access away but keeps the account.
    assert passwd_entry(root, "alice") is not None
    assert group_entry(root, "sandbox-ws-alice") is None


def test_an_account_with_running_processes_is_refused_unless_reused(tmp_path: Path) -> None:
    require_tool("sleep")
    base = Path(tempfile.mkdtemp(prefix="ac-busy-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        workspace = base / "ws"
        workspace.mkdir()
        claude = base / "bin/claude"
        claude.parent.mkdir()
        claude.write_text('#!/bin/sh\necho "2.1.197 (Claude Code)"\n')
        claude.chmod(0o755)
        env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_STATE_HOME": str(tmp_path / "st")}
        args = ("--headless", "--mode", "user", "--agent-user", "ac-busy", "--workspace",
                str(workspace), "--claude", str(claude), "--settings-scope", "user")  # fmt: skip
        with live_account("ac-busy") as account:
            sleeper = subprocess.Popen(
                ["setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", "--clear-groups",
                 "sleep", "120"]
            )  # fmt: skip
            try:
                # The live root, but no --yes: the plan is built (and refused), nothing written.
                proc = run_cli(*args, env=env)
                assert proc.returncode == 3, (proc.stdout, proc.stderr)
                assert "[running processes] ac-busy has 1 running process" in proc.stderr
                reused = run_cli(*args, "--reuse-account", env=env)
                assert reused.returncode == 0, reused.stderr
                assert "reused account ac-busy has 1 running process" in reused.stderr
                assert "nothing written" in reused.stderr
            finally:
                sleeper.kill()
                sleeper.wait()
        assert not (tmp_path / "config").exists() and not (tmp_path / "st").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def ids(root: Path, name: str) -> tuple[int, int, list[int]]:
    """uid, gid and every group id of ``name`` in the tree (as setpriv needs them)."""
    entry = passwd_entry(root, name)
    assert entry is not None
    gids = [int(entry[3])]
    for line in (root / "etc/group").read_text().splitlines():
        fields = line.split(":")
        if name in fields[3].split(","):
            gids.append(int(fields[2]))
    return int(entry[2]), int(entry[3]), gids


def can_write_as(root: Path, name: str, directory: Path) -> bool:
    """Can the tree's account ``name`` create a file in ``directory``? Asked of the
    kernel: a process with exactly that account's uid, gid and groups tries."""
    uid, gid, gids = ids(root, name)
    probe = directory / f".probe-{name}"
    proc = subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", f"--groups={','.join(map(str, gids))}",
         "--", "/bin/sh", "-c", f"touch '{probe}' && rm '{probe}'"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return proc.returncode == 0


def test_two_setups_stay_apart_and_undoing_one_leaves_the_other(root: Path) -> None:
    first = headless(root, "--yes", "--mode", "sandbox", "--agent-user", "agent-a",
                     "--workspace", "/srv/a")  # fmt: skip
    assert first.returncode == 0, first.stderr
    after_first = system_state(root)
    plan = headless(root, "--mode", "user", "--agent-user", "agent-b", "--workspace", "/srv/b",
                    "--settings-scope", "user")  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    # The review shows who is in each group it touches.
    assert "let group sandbox-ws-agent-b (members: agent-b) read and write /srv/b" in plan.stdout
    second = headless(root, "--yes", "--mode", "user", "--agent-user", "agent-b",
                      "--workspace", "/srv/b", "--settings-scope", "user")  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert group_entry(root, "sandbox-ws-agent-a")[3] == "agent-a"  # type: ignore[index]
    assert group_entry(root, "sandbox-ws-agent-b")[3] == "agent-b"  # type: ignore[index]
    a, b = root / "srv/a", root / "srv/b"
    assert can_write_as(root, "agent-a", a) and can_write_as(root, "agent-b", b)
    assert not can_write_as(root, "agent-a", b), "agent-a can write the other setup's workspace"
    assert not can_write_as(root, "agent-b", a), "agent-b can write the other setup's workspace"
    ledger = json.loads((root / STATE / "setups.json").read_text())
    assert sorted(ledger["setups"]) == ["agent-a", "agent-b"]
    assert ledger["setups"]["agent-b"]["group"] == "sandbox-ws-agent-b"

    undo = run_cli("--undo", "--yes", "--root", str(root))
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "removed group sandbox-ws-agent-b" in undo.stdout
    assert passwd_entry(root, "agent-b") is None and group_entry(root, "sandbox-ws-agent-b") is None
    # The other setup: its agent, group and access as they were.
    assert passwd_entry(root, "agent-a") is not None
    assert group_entry(root, "sandbox-ws-agent-a")[3] == "agent-a"  # type: ignore[index]
    assert can_write_as(root, "agent-a", a) and not can_write_as(root, "agent-a", b)
    assert system_state(root) == after_first


def without_group_files(state: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in state.items() if k not in ("etc/group", "etc/gshadow")}


def test_an_old_setup_with_the_shared_group_still_reads_and_is_upgraded(root: Path) -> None:
    # What an older version left: one shared sandbox-ws group with its ACLs, the
    # agent in it, a launcher.toml without the new keys, a journal of that apply.
    subprocess.run(["groupadd", "--prefix", str(root), "sandbox-ws"], check=True)
    useradd(root, "--create-home", "--home-dir", "/home/claude-agent", "--shell", "/bin/bash",
            "--user-group", "--groups", "sandbox-ws", "claude-agent")  # fmt: skip
    useradd(root, "--create-home", "--shell", "/bin/bash", "--groups", "sandbox-ws", "other")
    gid = group_entry(root, "sandbox-ws")[2]  # type: ignore[index]
    subprocess.run(["setfacl", "-R", "-m", f"g:{gid}:rwX", str(root / "srv/a")], check=True)
    config = LauncherConfig(
        Mode.USER,
        PurePosixPath("/usr/local/bin/claude"),
        "claude-agent",
        PurePosixPath("/home/claude-agent"),
        workspaces=(PurePosixPath("/srv/a"),),
    )
    (root / CONFIG).mkdir(parents=True)
    # Its launcher.toml had no [limits] (and never a group): cut the new table off.
    text = render_launcher_config(config)
    (root / CONFIG / "launcher.toml").write_text(text[: text.index("[limits]")])
    answers = Answers(
        Mode.USER, workspaces=(PurePosixPath("/srv/a"),), settings_scope=SettingsScope.USER
    )
    (root / CONFIG / "answers.toml").write_text(dump_answers(answers))
    (root / STATE).mkdir(parents=True)
    journal = [
        {"txn": "old", "op": "begin", "at": "2026-01-01T00:00:00+00:00", "root": str(root)},
        {"txn": "old", "op": "create-group", "name": "sandbox-ws"},
        {"txn": "old", "op": "create-user", "name": "claude-agent", "home": "/home/claude-agent"},
        {"txn": "old", "op": "commit", "at": "2026-01-01T00:00:01+00:00"},
    ]
    (root / STATE / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in journal))
    assert can_write_as(root, "other", root / "srv/a"), "the old shared group's leak"
    before = system_state(root)
    assert group_entry(root, "sandbox-ws")[3] == "claude-agent,other"  # type: ignore[index]

    assert "audit.accounts.legacy_group" in audit_ids(root)  # the old config reads

    args = ("--mode", "user", "--workspace", "/srv/a", "--settings-scope", "user")
    plan = headless(root, *args)
    assert plan.returncode == 0, plan.stderr  # created by sandbox-setup: no --reuse-account
    assert "remove user claude-agent from group sandbox-ws" in plan.stdout
    assert "members: claude-agent, other" in plan.stdout
    assert "other: they keep the access it gave" in plan.stderr
    done = headless(root, "--yes", *args)
    assert done.returncode == 0, done.stderr
    assert "claude-agent" not in group_entry(root, "sandbox-ws")[3].split(",")  # type: ignore[index]
    assert group_entry(root, "sandbox-ws-claude-agent")[3] == "claude-agent"  # type: ignore[index]
    assert can_write_as(root, "claude-agent", root / "srv/a")
    assert not can_write_as(root, "claude-agent", root / "srv/b")
    undo = run_cli("--undo", "--yes", "--root", str(root))
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "added claude-agent back to group sandbox-ws" in undo.stdout
    # Back as it was; usermod appends a member, so only the order in etc/group differs.
    assert without_group_files(system_state(root)) == without_group_files(before)
    assert set(group_entry(root, "sandbox-ws")[3].split(",")) == {"claude-agent", "other"}  # type: ignore[index]
    assert group_entry(root, "sandbox-ws-claude-agent") is None
    assert os.path.exists(root / "home/claude-agent")
