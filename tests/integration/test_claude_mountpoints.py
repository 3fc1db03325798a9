"""Claude Code's inner-sandbox mount-point files are removed when a session ends,
and nothing else is: on a real filesystem, files owned by a made-up agent uid."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox_setup.boundary.claude_mountpoints import MOUNT_POINTS, remove_mount_points
from sandbox_setup.boundary.session import Boundary
from tests.tools import require_root

pytestmark = pytest.mark.integration

AGENT = 65534  # nobody: only its files are removed
OTHER = 65533


def _file(path: Path, uid: int, data: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chown(path, uid, uid)
    return path


def _workspace(tmp_path: Path) -> Path:
    """Each mount point, every other one an empty directory (a real session's are)."""
    ws = tmp_path / "ws"
    for n, point in enumerate(reversed(MOUNT_POINTS)):  # parents first
        path = ws.joinpath(*point.parts)
        if path.exists():
            continue
        if n % 2 or point.parts[-1] == "commit-graphs":
            path.mkdir(parents=True)
            os.chown(path, AGENT, AGENT)
        else:
            _file(path, AGENT)
    return ws


def test_the_empty_agent_owned_mount_points_go(tmp_path: Path) -> None:
    require_root()
    ws = _workspace(tmp_path)
    removed = remove_mount_points([str(ws)], AGENT)
    assert sorted(removed) == sorted(str(ws.joinpath(*p.parts)) for p in MOUNT_POINTS)
    assert not any(ws.joinpath(*p.parts).exists() for p in MOUNT_POINTS)
    assert (ws / ".git/objects/info").is_dir()  # the directories stay


def test_anything_else_stays_for_the_scan(tmp_path: Path) -> None:
    require_root()
    ws = tmp_path / "ws"
    written = _file(ws / ".git/NOTES_MERGE_WORKTREE", AGENT, b"not empty")
    foreign = _file(ws / ".git/glab-cli", OTHER)  # not the agent's
    root_owned = _file(ws / ".git/remotes", 0)
    (ws / ".git/worktrees/main").mkdir(parents=True)  # not empty: git's
    os.chown(ws / ".git/worktrees", AGENT, AGENT)
    linked = _file(tmp_path / "elsewhere", AGENT)
    (ws / ".git/objects/info").mkdir(parents=True)
    os.link(linked, ws / ".git/objects/info/alternates")  # a hard link: not Claude's
    (ws / ".git/objects/info/commit-graphs").symlink_to(linked)
    (ws / ".git/objects/info/.claude-sandbox-noreplace").mkdir()  # root's: not the agent's
    # A symlinked .claude leads nowhere outside the workspace.
    outside = tmp_path / "outside"
    target = _file(outside / ".cc-writes", AGENT)
    (ws / ".claude").symlink_to(outside)
    plain = _file(ws / "src/remotes", AGENT)  # the same name, another place
    assert remove_mount_points([str(ws)], AGENT) == []
    for path in (written, foreign, root_owned, linked, target, plain):
        assert path.exists(), path
    assert (ws / ".git/worktrees/main").is_dir()
    assert (ws / ".git/objects/info/alternates").exists()
    assert (ws / ".git/objects/info/commit-graphs").is_symlink()
    assert (ws / ".git/objects/info/.claude-sandbox-noreplace").is_dir()


def test_a_session_end_removes_them(tmp_path: Path) -> None:
    """Boundary.end (the launcher sets the agent's uid) removes them before its scan."""
    require_root()
    ws = _workspace(tmp_path)
    state = tmp_path / "state"
    boundary = Boundary.start([(str(ws), str(ws))], state, sandbox=False)
    boundary.agent_uid = AGENT
    boundary.end()
    assert not any(ws.joinpath(*p.parts).exists() for p in MOUNT_POINTS)
