"""Defects from the security review, reproduced with the real tools: the agent's
own moves (run as its uid with ``setpriv``) must never turn an apply or an undo
(run as root) against files outside the workspace.

- undo does not follow a symlink the agent planted in place of a workspace
  directory (it used to ``setfacl --restore`` by path: chmod of the link target);
- a re-apply does not follow such a symlink either (ACLs by fd, not by path);
- a workspace that is itself a symlink (to /etc of the tree, or outside the
  root) is refused with exit 2, nothing written;
- ``--undo`` that could not undo something exits 1 and says what was left.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    SANDBOX,
    group_entry,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
    system_state,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def base() -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "setpriv", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    # /tmp/pytest-of-root is 0700: the agent needs a tree it can walk into.
    base = Path(tempfile.mkdtemp(prefix="sandbox-setup-symlinks-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
        assert host_passwd_digest() == before


def victim(base: Path) -> Path:
    """A private directory outside the target root, with a private file in it."""
    path = base / "victim"
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    (path / "secret").write_text("root only\n")
    os.chmod(path / "secret", 0o600)
    return path


def state_of(path: Path) -> list[tuple[str, int, int, int, str]]:
    """Mode, owner and ACL text of ``path`` and everything below it."""
    out = []
    for item in [path, *sorted(path.rglob("*"))]:
        st = item.lstat()
        acl = subprocess.run(
            ["getfacl", "--absolute-names", "--numeric", "--omit-header", str(item)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        out.append((str(item), st.st_mode, st.st_uid, st.st_gid, acl))
    return out


def as_agent(root: Path, script: str) -> None:
    """Run ``script`` as the agent user of ``root`` (its uid, its groups)."""
    agent = passwd_entry(root, "claude-agent")
    ws_group = group_entry(root, "sandbox-ws-claude-agent")
    assert agent is not None and ws_group is not None
    subprocess.run(
        ["setpriv", "--reuid", agent[2], "--regid", agent[3], "--groups", ws_group[2],
         "sh", "-ec", script],
        check=True, cwd="/", capture_output=True, text=True,
    )  # fmt: skip


def apply(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_undo_does_not_follow_a_symlink_the_agent_planted(base: Path) -> None:
    root = make_target_root(base / "root")
    (root / "srv/project/sub").mkdir()
    target = victim(base)
    before = state_of(target)
    apply(root, *SANDBOX)
    ws = root / "srv/project"
    as_agent(root, f"cd {ws} && mv sub sub.moved && ln -s {target} sub")
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    assert state_of(target) == before, "undo changed a directory outside the workspace"
    # The workspace itself lost the group's ACLs and setgid bits.
    assert "group:" not in subprocess.run(
        ["getfacl", "--omit-header", "--numeric", str(ws / "sub.moved")],
        capture_output=True, text=True, check=True,
    ).stdout.replace("group::", "")  # fmt: skip
    assert not (ws / "sub.moved").stat().st_mode & stat.S_ISGID


def test_undo_after_the_agent_swapped_a_file_for_a_symlink(base: Path) -> None:
    root = make_target_root(base / "root")
    target = victim(base)
    before = state_of(target)
    apply(root, *SANDBOX)
    ws = root / "srv/project"
    as_agent(root, f"cd {ws} && rm README.md && ln -s {target}/secret README.md")
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    assert state_of(target) == before


def test_reapply_does_not_follow_a_directory_swapped_for_a_symlink(base: Path) -> None:
    root = make_target_root(base / "root")
    target = victim(base)
    before = state_of(target)
    apply(root, *SANDBOX)
    ws = root / "srv/project"
    as_agent(root, f"cd {ws} && mv src src.moved && ln -s {target} src")
    # A narrowed mask makes the re-apply walk the workspace again.
    ws.chmod(ws.stat().st_mode & ~0o020)
    apply(root, *SANDBOX)
    assert state_of(target) == before, "re-apply granted the group access outside"


def test_undo_restores_the_workspace_acls_exactly(base: Path) -> None:
    root = make_target_root(base / "root")
    ws = root / "srv/project"
    # An ACL and a default ACL of the operator's own, kept through apply + undo.
    subprocess.run(["setfacl", "-m", "u:4242:r", str(ws / "README.md")], check=True)
    subprocess.run(["setfacl", "-d", "-m", "u:4242:rx", str(ws / "src")], check=True)
    before = state_of(ws)
    apply(root, *SANDBOX)
    assert state_of(ws) != before
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    assert state_of(ws) == before


@pytest.mark.parametrize("link", ["../etc", "ABSOLUTE"], ids=["to-etc", "outside-root"])
def test_a_workspace_that_is_a_symlink_is_refused(base: Path, link: str) -> None:
    root = make_target_root(base / "root")
    outside = victim(base)
    (root / "srv/proj").symlink_to(str(outside) if link == "ABSOLUTE" else link)
    before_tree = system_state(root)
    before_out = state_of(outside)
    etc_before = state_of(root / "etc")
    proc = run_cli("--headless", "--root", str(root), "--yes", "--mode", "user",
                   "--workspace", "/srv/proj")  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "/srv/proj" in proc.stderr and "symlink" in proc.stderr
    assert system_state(root) == before_tree
    assert state_of(outside) == before_out
    assert state_of(root / "etc") == etc_before


def test_undo_that_leaves_something_exits_1_and_says_what(base: Path) -> None:
    root = make_target_root(base / "root")
    apply(root, *SANDBOX)
    managed = root / "etc/claude-code/managed-settings.json"
    managed.write_text('{"changed": "by hand"}\n')
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "left /etc/claude-code/managed-settings.json" in proc.stdout + proc.stderr
    assert managed.read_text() == '{"changed": "by hand"}\n'


def test_the_acl_walk_never_enters_a_directory_swapped_mid_walk(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-apply race, made deterministic: right after the walk has listed the
    workspace top, ``src`` becomes a symlink to a private directory (as the agent
    could do at any moment). The walk must skip it, not grant the group access
    there."""
    from sandbox_setup.configure.accounts import users

    ws = base / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src/main.py").write_text("x\n")
    target = victim(base)
    before = state_of(target)
    real_walk = users.walk_workspace
    swapped = []

    def racing_walk(top_fd: int):  # type: ignore[no-untyped-def]
        for rel, items in real_walk(top_fd):
            if rel == "." and not swapped:
                (ws / "src").rename(ws / "src.moved")
                (ws / "src").symlink_to(target)
                swapped.append(True)
            yield rel, items

    monkeypatch.setattr(users, "walk_workspace", racing_walk)
    top = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        users.grant_workspace(top, 4321)
    finally:
        os.close(top)
    assert swapped
    assert state_of(target) == before, "the walk followed a directory swapped for a symlink"
    assert "group:4321:rwx" in state_of(ws)[0][4]
