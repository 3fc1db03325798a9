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
from pathlib import Path, PurePosixPath
from typing import Any

from wizard.base.accounts import lookup_group_gid, lookup_user
from wizard.base.errors import SetupError
from wizard.base.paths import Layout
from wizard.base.regular_files import read_regular_text

# The group that gives the agent user rwX on the workspaces.
WORKSPACE_GROUP = "sandbox-ws"
AGENT_SHELL = "/bin/bash"


class CommandError(SetupError):
    """A system command failed; the message carries its argv and stderr."""


def run_tool(argv: Sequence[str], *, timeout: float = 120.0) -> str:
    """Run ``argv``; raise :class:`CommandError` with its stderr on failure."""
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False, cwd="/"
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
# file for a symlink. Every step therefore works on fds from ``os.fwalk(...,
# follow_symlinks=False)`` plus ``O_PATH | O_NOFOLLOW`` opens, and setfacl is
# handed ``/proc/self/fd/N`` (the inode we opened), never a path it would resolve.
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


def walk_workspace(top_fd: int) -> Iterator[tuple[str, list[tuple[str, int, os.stat_result]]]]:
    """For the directory ``top_fd`` and every directory below it (symlinks never
    followed): ``(relative dir, [(relative path, fd, stat)])`` with the directory
    itself first, then its regular files. The fds are valid during the yield."""
    for dirpath, _dirs, files, dirfd in os.fwalk(".", dir_fd=top_fd, follow_symlinks=False):
        rel_dir = os.path.normpath(dirpath)
        items = [(rel_dir, dirfd, os.fstat(dirfd))]
        opened = []
        try:
            for name in files:
                try:
                    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
                except FileNotFoundError:
                    continue
                opened.append(fd)
                st = os.fstat(fd)
                if stat.S_ISREG(st.st_mode):  # symlinks, fifos, devices: left alone
                    items.append((os.path.normpath(os.path.join(rel_dir, name)), fd, st))
            yield rel_dir, items
        finally:
            for fd in opened:
                os.close(fd)


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


def grant_workspace(top_fd: int, gid: int) -> None:
    """rwX for ``gid`` on every directory and regular file, a default ACL and the
    setgid bit on every directory (new files inherit both); owners unchanged."""
    spec = f"g:{gid}:rwX"
    for _rel_dir, items in walk_workspace(top_fd):
        _setfacl_fds(["-m", spec], [fd for _rel, fd, _st in items])
        dirfd = items[0][1]
        _setfacl_fds(["-d", "-m", spec], [dirfd])
        mode = os.fstat(dirfd).st_mode
        if not mode & 0o2000:
            os.fchmod(dirfd, stat.S_IMODE(mode) | 0o2000)


def revoke_workspace(top_fd: int, snapshot: dict[str, object]) -> int:
    """Undo :func:`grant_workspace` from its :func:`acl_snapshot`: where the group's
    entry was added, put the old ACL back (and the old group bits); clear setgid bits
    that were added. A path created since gets the group's entries stripped. Never
    chowns. Returns how many paths changed."""
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
