"""Claude Code's inner-sandbox mount-point files, removed when a session ends.

Claude Code's own bwrap (2.1.332; none of these in 2.1.197's binary) binds a
read-only or an empty file or directory over paths it protects; where such a path
does not exist it first creates an empty file or directory as the mount point (a
real 2.1.332 session through ``sandbox-launch`` leaves directories), in the
workspace, as the agent, and leaves it there after the command (and the session)
ends. The names
are :data:`MOUNT_POINTS`, tied to the releases whose binaries make them.

:func:`remove_mount_points` removes one only when it is still what Claude left: an
empty regular file owned by the agent with one link, or an empty directory owned
by the agent (``rmdir``: the kernel refuses one with anything in it), at exactly
one of those paths, reached from the workspace by file descriptor (``openat`` with
``O_NOFOLLOW`` at each step, so a symlinked ``.git`` or ``.claude`` leads nowhere
outside). Anything else stays where it is, for the workspace scan to judge.

It runs when a session ends (:class:`~sandbox_setup.boundary.session.Boundary`);
nothing of the agent's runs then in that session.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MountPoint:
    """One path (relative to a workspace) Claude's bwrap creates as a mount point."""

    parts: tuple[str, ...]
    releases: str  # the releases seen making it


_SEEN = "2.1.332"
MOUNT_POINTS: tuple[MountPoint, ...] = tuple(
    MountPoint(tuple(path.split("/")), _SEEN)
    for path in (
        ".claude/.cc-writes",
        ".git/NOTES_MERGE_WORKTREE",
        ".git/glab-cli",
        ".git/remotes",
        ".git/worktrees",
        ".git/objects/info/alternates",
        # the marker inside first: its directory is empty only after it went
        ".git/objects/info/commit-graphs/.claude-sandbox-noreplace",
        ".git/objects/info/commit-graphs",
        ".git/objects/info/.claude-sandbox-noreplace",
        ".git/info/.claude-sandbox-noreplace",
    )
)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _is_leftover_file(st: os.stat_result, agent_uid: int) -> bool:
    return (
        stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_uid == agent_uid and st.st_nlink == 1
    )


def _remove_one(root_fd: int, point: MountPoint, agent_uid: int) -> bool:
    """Remove ``point`` under the directory ``root_fd`` if it is a leftover."""
    fds: list[int] = []
    try:
        parent = root_fd
        for name in point.parts[:-1]:
            parent = os.open(name, _DIR_FLAGS, dir_fd=parent)
            fds.append(parent)
        leaf = point.parts[-1]
        st = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == agent_uid:
            os.rmdir(leaf, dir_fd=parent)  # only an empty one: the kernel checks
            return True
        if not _is_leftover_file(st, agent_uid):
            return False
        os.unlink(leaf, dir_fd=parent)
        return True
    except OSError:  # missing, a symlink, not a directory: nothing of Claude's to remove
        return False
    finally:
        for fd in fds:
            os.close(fd)


def remove_mount_points(workspaces: Sequence[str], agent_uid: int) -> list[str]:
    """Remove the leftover mount-point files of each workspace; the paths removed.
    A workspace that cannot be opened is skipped (the scan reports it)."""
    removed: list[str] = []
    for workspace in workspaces:
        try:
            root_fd = os.open(workspace, _DIR_FLAGS)
        except OSError:
            continue
        try:
            removed += [
                os.path.join(workspace, *point.parts)
                for point in MOUNT_POINTS
                if _remove_one(root_fd, point, agent_uid)
            ]
        finally:
            os.close(root_fd)
    return removed
