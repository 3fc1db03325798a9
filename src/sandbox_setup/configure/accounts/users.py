"""Accounts and workspace access: the commands that create the agent user, its
groups and the ACLs that let it into the workspaces.

Commands are built as argv lists (shown by ``--dry-run``) and run with
:func:`run_tool`. Under ``--root DIR`` every shadow-utils command gets
``--prefix DIR`` so it edits ``DIR/etc/passwd`` and friends, never the host's;
ACL entries use numeric ids from ``DIR/etc/group`` for the same reason.
"""

from __future__ import annotations

import errno
import grp
import os
import stat
import struct
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox_setup.base import fdwalk
from sandbox_setup.base.accounts import lookup_group_gid, lookup_user
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.base.regular_files import read_regular_text
from sandbox_setup.policy import accounts as accounts_policy
from sandbox_setup.policy.inodes import may_change_inode

# The group that gives one setup's agent rwX on its workspaces is
# sandbox_setup.policy.accounts.workspace_group(agent); this one was shared by all setups
# before (kept for old setups' undo and upgrade).
LEGACY_WORKSPACE_GROUP = "sandbox-ws"
# The agent's shell (nologin): sandbox_setup.policy.accounts.AGENT_SHELL, which
# sandbox-launch requires too.
AGENT_SHELL = accounts_policy.AGENT_SHELL


class CommandError(SetupError):
    """A system command failed; the message carries its argv and stderr."""


def run_tool(argv: Sequence[str], *, timeout: float = 120.0) -> str:
    """Run ``argv``; raise :class:`CommandError` with its stderr on failure.

    The tool runs in a session of its own: the operator's Ctrl-C, a hangup of the
    terminal or ``kill -TERM -PGID`` reach the apply, which waits for the tool to
    finish its rewrite of the account files and then rolls back
    (:mod:`sandbox_setup.configure.interrupts`), never the tool half way through."""
    try:
        proc = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd="/",
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CommandError(f"{' '.join(argv)}: {exc}") from None
    if proc.returncode != 0:
        raise CommandError(
            f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.strip()}"
        )
    return proc.stdout


def prefix_args(layout: Layout) -> list[str]:
    return [] if layout.live else ["--prefix", str(layout.root)]


def useradd_argv(
    layout: Layout, name: str, home: PurePosixPath, groups: Sequence[str]
) -> list[str]:
    """useradd with a locked password (no ``-p``: shadow holds ``!``), a 0700
    home, and its own group."""
    argv = ["useradd", *prefix_args(layout), "--create-home", "--home-dir", str(home)]
    argv += ["--user-group", "--shell", AGENT_SHELL, "--key", "HOME_MODE=0700"]
    if groups:
        argv += ["--groups", ",".join(groups)]
    return [*argv, name]


def userdel_argv(layout: Layout, name: str) -> list[str]:
    return ["userdel", *prefix_args(layout), "--remove", name]


def groupadd_argv(layout: Layout, name: str) -> list[str]:
    return ["groupadd", *prefix_args(layout), name]


def groupdel_argv(layout: Layout, name: str) -> list[str]:
    return ["groupdel", *prefix_args(layout), name]


def add_to_group_argv(layout: Layout, user: str, group: str) -> list[str]:
    return ["usermod", *prefix_args(layout), "--append", "--groups", group, user]


def remove_from_group_argv(layout: Layout, user: str, group: str) -> list[str]:
    return ["usermod", *prefix_args(layout), "--remove", "--groups", group, user]


def set_shell_argv(layout: Layout, user: str, shell: str) -> list[str]:
    return ["usermod", *prefix_args(layout), "--shell", shell, user]


def group_members(name: str, root: Path) -> list[str] | None:
    """Supplementary members of group ``name`` in the target system (None: no group)."""
    if Path(root).resolve() == Path("/"):
        try:
            return list(grp.getgrnam(name).gr_mem)
        except KeyError:
            return None
    try:
        text = read_regular_text(Path(root) / "etc/group", errors="replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and parts[0] == name:
            return [m for m in parts[3].split(",") if m]
    return None


def user_exists(layout: Layout, name: str) -> bool:
    return lookup_user(name, layout.root) is not None


def group_gid(layout: Layout, name: str) -> int | None:
    return lookup_group_gid(name, layout.root)


def acl_entries(real_path: Path) -> set[str]:
    """The ACL of ``real_path`` as a set of ``[default:]type:qualifier:perms`` lines
    with numeric qualifiers (``getfacl -n``)."""
    out = run_tool(["getfacl", "--absolute-names", "--numeric", "--omit-header", str(real_path)])
    entries = set()
    for line in out.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            entries.add(line)
    return entries


# Workspace ACLs, walked by file descriptor. The agent can write the workspace,
# so on a re-apply or an undo (both as root) it may have swapped any directory or
# file for a symlink, or for a symlink to a FIFO. Every step therefore works on
# fds from sandbox_setup.base.fdwalk (directories opened O_DIRECTORY | O_NOFOLLOW |
# O_NONBLOCK, so a symlink or a FIFO is refused before anything is opened) plus
# O_PATH | O_NOFOLLOW opens of what the listing calls regular files, and setfacl
# is handed /proc/self/fd/N (the inode we opened), never a path it would resolve.
_ACCESS = "system.posix_acl_access"
_DEFAULT = "system.posix_acl_default"
_ACL_GROUP = 0x08
_FDS_PER_CALL = 200
ACL_SNAPSHOT_FORMAT = "sandbox-setup-acl-1"


def _fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


def _get_acl(fd: int, name: str) -> bytes | None:
    try:
        return os.getxattr(_fd_path(fd), name)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.EOPNOTSUPP):
            return None
        raise


def _has_group(raw: bytes | None, gid: int) -> bool:
    if not raw:
        return False
    return any(
        struct.unpack_from("<HHI", raw, off)[0::2] == (_ACL_GROUP, gid)
        for off in range(4, len(raw) - 7, 8)
    )


def _without_group(raw: bytes, gid: int) -> bytes:
    kept = [
        raw[off : off + 8]
        for off in range(4, len(raw) - 7, 8)
        if struct.unpack_from("<HHI", raw, off)[0::2] != (_ACL_GROUP, gid)
    ]
    return raw[:4] + b"".join(kept)


def is_private(st: os.stat_result) -> bool:
    """A file or directory its owner keeps to themselves: no read bit for the
    group and none for others (a 0600 ``.env``, a 0700 ``secrets/``)."""
    return not st.st_mode & 0o044


@dataclass
class AclWalkReport:
    """What an ACL walk left alone, relative to the workspace: paths private to
    their owner (unless included) and files with more than one hard link (the
    same inode lives elsewhere too, maybe outside the workspace)."""

    private: list[str] = field(default_factory=list)
    hardlinked: list[str] = field(default_factory=list)

    def lines(self, workspace: PurePosixPath | str) -> list[str]:
        """``stays private: 3 files, e.g. /srv/app/.env`` and the hard-link twin."""
        out = []
        for what, paths in (
            ("stays private", self.private),
            ("not changed (more than one hard link)", self.hardlinked),
        ):
            paths = list(dict.fromkeys(paths))  # a walk per group may meet a path twice
            if paths:
                noun = "file" if len(paths) == 1 else "files"
                example = PurePosixPath(workspace) / paths[0]
                out.append(f"{what}: {len(paths)} {noun}, e.g. {example}")
        return out


# Regular files held open at once per directory: a directory of any size costs at
# most this many descriptors (plus one per level of the walk's path).
WALK_BATCH = 256


def walk_workspace(top_fd: int) -> Iterator[tuple[str, list[tuple[str, int, os.stat_result]]]]:
    """For the directory ``top_fd`` and every directory below it (symlinks never
    followed, FIFOs, sockets and devices never opened): ``(relative dir, [(relative
    path, fd, stat)])``. The directory itself comes first in its first batch, then
    its regular files, at most :data:`WALK_BATCH` of them per yield (a directory
    with more yields again, without itself), so the descriptors held stay bounded
    whatever the directory's size. The fds are valid during the yield."""
    for visit in fdwalk.walk(top_fd, fdwalk.UNBOUNDED):
        items = [(visit.rel, visit.fd, os.fstat(visit.fd))]
        files = [e for e in visit.entries if e.is_file(follow_symlinks=False)]
        for start in range(0, max(len(files), 1), WALK_BATCH):
            opened = []
            try:
                for entry in files[start : start + WALK_BATCH]:
                    # The listing's type first: a FIFO or a symlink is never opened
                    # at all; fstat below catches a regular file swapped since.
                    try:
                        fd = os.open(entry.name, fdwalk.PATH_FLAGS, dir_fd=visit.fd)
                    except (FileNotFoundError, NotADirectoryError):
                        continue
                    opened.append(fd)
                    st = os.fstat(fd)
                    if stat.S_ISREG(st.st_mode):
                        items.append((visit.join(entry.name), fd, st))
                yield visit.rel, items
            finally:
                for fd in opened:
                    os.close(fd)
            items = []


def _left_alone(rel: str, st: os.stat_result, include_private: bool, report: AclWalkReport) -> bool:
    """Whether a grant must skip ``rel`` (and record why)."""
    if rel == ".":
        return False
    if not include_private and is_private(st):
        report.private.append(rel)
        return True
    if not may_change_inode(st):
        report.hardlinked.append(rel)
        return True
    return False


def _below(rel: str, dirs: list[str]) -> bool:
    return any(rel.startswith(d + "/") for d in dirs)


def survey_workspace(top_fd: int, include_private: bool = False) -> AclWalkReport:
    """What :func:`grant_workspace` would leave alone, without changing anything
    (for the plan: "stays private: 3 files, e.g. /srv/app/.env")."""
    report = AclWalkReport()
    private_dirs: list[str] = []
    for _rel_dir, items in walk_workspace(top_fd):
        for rel, _fd, st in items:
            if _below(rel, private_dirs):
                continue
            if _left_alone(rel, st, include_private, report) and stat.S_ISDIR(st.st_mode):
                private_dirs.append(rel)
    return report


def _setfacl_fds(args: Sequence[str], fds: Sequence[int]) -> None:
    for start in range(0, len(fds), _FDS_PER_CALL):
        batch = fds[start : start + _FDS_PER_CALL]
        argv = ["setfacl", *args, *(_fd_path(fd) for fd in batch)]
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=120, pass_fds=batch, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CommandError(f"setfacl {' '.join(args)}: {exc}") from None
        if proc.returncode != 0:
            raise CommandError(
                f"setfacl {' '.join(args)} failed (exit {proc.returncode}): {proc.stderr.strip()}"
            )


def acl_snapshot(top_fd: int, gid: int) -> dict[str, object]:
    """What undo needs to take the workspace back: per path, its permission bits
    and its access/default ACLs (hex), before the group's entries are added."""
    entries: dict[str, dict[str, object]] = {}
    for _rel_dir, items in walk_workspace(top_fd):
        for rel, fd, st in items:
            access = _get_acl(fd, _ACCESS)
            default = _get_acl(fd, _DEFAULT) if stat.S_ISDIR(st.st_mode) else None
            entries[rel] = {
                "mode": stat.S_IMODE(st.st_mode),
                "acl": access.hex() if access is not None else None,
                "default_acl": default.hex() if default is not None else None,
            }
    return {"format": ACL_SNAPSHOT_FORMAT, "gid": gid, "entries": entries}


def grant_workspace(top_fd: int, gid: int, *, include_private: bool = False) -> AclWalkReport:
    """rwX for ``gid`` on every directory and regular file, a default ACL and the
    setgid bit on every directory (new files inherit both); owners unchanged.

    Left alone (and returned): what is private to its owner, with everything below
    a private directory, unless ``include_private``; files with more than one hard
    link, whose inode is also somewhere else.
    """
    spec = f"g:{gid}:rwX"
    report = AclWalkReport()
    private_dirs: list[str] = []
    for rel_dir, items in walk_workspace(top_fd):
        if rel_dir in private_dirs or _below(rel_dir, private_dirs):
            continue
        dirfd = None
        if items and items[0][0] == rel_dir:  # the directory's first batch
            dir_rel, dirfd, dir_st = items[0]
            if _left_alone(dir_rel, dir_st, include_private, report):
                private_dirs.append(dir_rel)
                continue
            items = items[1:]
        files = [fd for rel, fd, st in items if not _left_alone(rel, st, include_private, report)]
        _setfacl_fds(["-m", spec], [*([dirfd] if dirfd is not None else []), *files])
        if dirfd is not None:
            _setfacl_fds(["-d", "-m", spec], [dirfd])
            mode = os.fstat(dirfd).st_mode
            if not mode & 0o2000:
                os.fchmod(dirfd, stat.S_IMODE(mode) | 0o2000)
    return report


def revoke_workspace(
    top_fd: int, snapshot: dict[str, object], *, report: AclWalkReport | None = None
) -> int:
    """Undo :func:`grant_workspace` from its :func:`acl_snapshot`: where the group's
    entry was added, put the old ACL back (and the old group bits); clear setgid bits
    that were added. A path created since gets the group's entries stripped. Never
    chowns, and never changes a file with more than one hard link (its inode may be
    outside the workspace too; listed in ``report``). Returns how many paths changed."""
    gid = int(snapshot["gid"])  # type: ignore[call-overload]
    saved_all = snapshot["entries"]
    assert isinstance(saved_all, dict)
    top = saved_all.get(".")
    # A directory made (or moved) since the apply inherited the setgid bit: clear it
    # when the workspace itself did not have one before.
    new_dir_setgid = bool(top is None or top["mode"] & 0o2000)
    changed = 0
    for _rel_dir, items in walk_workspace(top_fd):
        for rel, fd, st in items:
            if not may_change_inode(st):
                if report is not None:
                    report.hardlinked.append(rel)
                continue
            if _revoke_one(fd, st, gid, saved_all.get(rel), new_dir_setgid):
                changed += 1
    return changed


def _revoke_one(
    fd: int, st: os.stat_result, gid: int, saved: dict[str, Any] | None, new_dir_setgid: bool
) -> bool:
    path = _fd_path(fd)
    is_dir = stat.S_ISDIR(st.st_mode)
    changed = False
    for name in (_DEFAULT, _ACCESS) if is_dir else (_ACCESS,):
        current = _get_acl(fd, name)
        if not _has_group(current, gid):
            continue
        assert current is not None
        key = "acl" if name == _ACCESS else "default_acl"
        if saved is None:
            os.setxattr(path, name, _without_group(current, gid))
        elif saved[key] is not None and not _has_group(bytes.fromhex(saved[key]), gid):
            os.setxattr(path, name, bytes.fromhex(saved[key]))
        elif saved[key] is None:
            os.removexattr(path, name)
            if name == _ACCESS:  # the mask had become the group bits
                mode = stat.S_IMODE(os.stat(path).st_mode)
                os.chmod(path, (mode & ~0o070) | (saved["mode"] & 0o070))
        else:
            continue  # the entry was there before the apply
        changed = True
    mode = stat.S_IMODE(os.stat(path).st_mode)
    had_setgid = new_dir_setgid if saved is None else bool(saved["mode"] & 0o2000)
    if is_dir and mode & 0o2000 and not had_setgid:
        os.chmod(path, mode & ~0o2000)
        changed = True
    return changed
