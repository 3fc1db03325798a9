"""Trust checks of the files the launcher reads or executes (security invariant 2).

A file is trusted when it, and every directory on its resolved path, is owned by
root or the invoking user and is not group- or world-writable: nobody else can
then change what the launcher reads or what root executes.

One exception, decided here: a directory that is owned by root, world-writable
and *sticky* (``/tmp``, ``/var/tmp``) is accepted as a path component. The
sticky bit stops other users from renaming or deleting entries they do not own,
so the next component (which must itself pass the owner check) cannot be
swapped. A sticky world-writable directory owned by anyone else is refused.

Symlinks are resolved first and the *resolved* path is checked and used (read or
exec'd), so a link planted somewhere cannot redirect the launcher afterwards.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from wizard.base.errors import RefusedError

# Used when PATH is unset; the same directories Debian's login.defs gives root.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _owner_text(uid: int) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _check_dir(path: Path, st: os.stat_result, owners: frozenset[int], what: str) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise RefusedError(f"{what}: {path} on its path is not a directory")
    writable_by_others = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    root_sticky = st.st_uid == 0 and st.st_mode & stat.S_ISVTX
    if writable_by_others and not root_sticky:
        raise RefusedError(
            f"{what}: directory {path} on its path is group- or world-writable "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); anyone who can write there could "
            f"replace it. Fix: chmod go-w {path}"
        )
    if st.st_uid not in owners:
        raise RefusedError(
            f"{what}: directory {path} on its path is owned by {_owner_text(st.st_uid)}, "
            f"not by you or root. Fix: chown root {path}"
        )


def _check_leaf(path: Path, st: os.stat_result, owners: frozenset[int], what: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise RefusedError(f"{what}: {path} is not a regular file")
    if st.st_uid not in owners:
        raise RefusedError(
            f"{what}: {path} is owned by {_owner_text(st.st_uid)}, not by you or root. "
            f"Fix: chown root {path}"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise RefusedError(
            f"{what}: {path} is group- or world-writable (mode "
            f"{stat.S_IMODE(st.st_mode):04o}). Fix: chmod go-w {path}"
        )


def trusted_owners(uid: int | None = None) -> frozenset[int]:
    """Root and the invoking user."""
    return frozenset({0, os.getuid() if uid is None else uid})


def check_trusted_file(path: Path | PurePosixPath | str, owners: Iterable[int], what: str) -> Path:
    """Check ``path`` and its directories; return the resolved path to use.

    Raises :class:`RefusedError` (exit 3) naming the file and the reason.
    """
    owners = frozenset(owners)
    given = Path(path)
    if not given.is_absolute():
        raise RefusedError(f"{what}: {given} is not an absolute path")
    try:
        real = Path(os.path.realpath(given, strict=True))
    except OSError as exc:
        raise RefusedError(f"{what}: {given}: {exc.strerror or exc}") from None
    parents = list(reversed(real.parents))
    for directory in parents:
        _check_dir(directory, os.lstat(directory), owners, what)
    _check_leaf(real, os.lstat(real), owners, what)
    return real


def read_trusted_text(
    path: Path | PurePosixPath | str, owners: Iterable[int], what: str
) -> tuple[Path, str]:
    """Check then read ``path``; the file read is the one checked (same inode)."""
    real = check_trusted_file(path, owners, what)
    checked = os.lstat(real)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise RefusedError(f"{what}: cannot open {real}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise RefusedError(f"{what}: {real} changed while it was being checked")
        data = handle.read()
    try:
        return real, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefusedError(f"{what}: {real} is not UTF-8 text ({exc.reason})") from None


def find_trusted_tool(name: str, owners: Iterable[int], path_env: str | None) -> Path:
    """The first ``name`` on PATH, resolved and trust-checked, or refuse.

    Relative PATH entries are skipped. The first executable found must pass the
    trust check: a planted, writable copy earlier on PATH is a refusal, not a
    silent fallback to a later one.
    """
    search = path_env if path_env else DEFAULT_PATH
    for entry in search.split(os.pathsep):
        if not entry.startswith("/"):
            continue
        candidate = Path(entry) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return check_trusted_file(candidate, owners, f"{name} (found on PATH)")
    raise RefusedError(
        f"{name} not found on PATH ({search}); the sandbox cannot be built without it. "
        f"Install it (Debian: apt-get install {'bubblewrap' if name == 'bwrap' else 'util-linux'})"
    )
