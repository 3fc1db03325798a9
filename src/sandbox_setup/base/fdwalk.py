"""Walks over trees another account can write, by file descriptor only.

Root walks the workspaces the agent writes (the ACL grant and its undo, the
end-of-session scan, the audit). The agent can swap any entry at any moment, so
nothing here resolves a path twice or follows a name that may have changed:

- directories are opened relative to their parent's fd with
  ``O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK``: a symlink fails (``ELOOP``), and a
  FIFO, socket or device fails (``ENOTDIR``) before the kernel opens it;
- only entries the directory listing calls regular files are looked at as files,
  and then through ``O_PATH | O_NOFOLLOW`` (which opens nothing for I/O: no
  FIFO end connects, no device driver runs); a file is read only after ``fstat``
  of that fd says it is regular, by reopening the same inode through
  ``/proc/self/fd``;
- the walk is bounded by entry count and depth, and says when it stopped early.

Everything is stdlib, so the launcher can use it at session end.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def kind_of(mode: int) -> str:
    """``dir``, ``file``, ``link`` or ``other`` (FIFO, socket, device) for ``st_mode``."""
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def open_dir_at(dir_fd: int | None, name: str) -> int:
    """Open directory ``name`` in ``dir_fd`` without following a symlink and without
    opening anything that is not a directory (``OSError`` then)."""
    return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def lstat_at(dir_fd: int | None, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in ``dir_fd``; None when it does not exist (or its
    parent stopped being a directory)."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def open_dir_path(top_fd: int, rel: str) -> int:
    """Open the directory ``rel`` (``a/b/c``, ``.`` for the top) below ``top_fd``,
    one component at a time, never following a symlink. ``OSError`` when a
    component is missing, a symlink, or not a directory."""
    fd = os.dup(top_fd)
    try:
        for part in rel.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                raise OSError(errno.EPERM, "'..' in a walked path", rel)
            child = open_dir_at(fd, part)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


@dataclass(frozen=True, slots=True)
class FileContent:
    """A regular file read by fd: its bytes (at most the limit) and its ``fstat``."""

    data: bytes
    st: os.stat_result
    complete: bool  # False: the file is larger than the limit, ``data`` is its start

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _reopen_for_reading(path_fd: int, dir_fd: int | None, name: str, st: os.stat_result) -> int:
    try:
        # The same inode the O_PATH fd holds, whatever the name means by now.
        return os.open(f"/proc/self/fd/{path_fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        pass  # no /proc: open the name again and check it is still that inode
    fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    again = os.fstat(fd)
    if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(again.st_mode):
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "changed while it was opened", name)
    return fd


def read_file_at(dir_fd: int | None, name: str, limit: int) -> FileContent | None:
    """The contents of regular file ``name`` in ``dir_fd``, at most ``limit`` bytes.

    None when ``name`` is missing or is not a regular file (a symlink, a FIFO, a
    device: never opened for reading). Other ``OSError`` (permissions) propagate.
    """
    try:
        path_fd = os.open(name, PATH_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        st = os.fstat(path_fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        try:
            fd = _reopen_for_reading(path_fd, dir_fd, name, st)
        except FileNotFoundError:
            return None
    finally:
        os.close(path_fd)
    try:
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return FileContent(data=data[:limit], st=st, complete=len(data) <= limit)


@dataclass(frozen=True, slots=True)
class WalkLimits:
    """Where a walk stops: ``max_entries`` names seen in total, ``max_depth``
    directory levels below the top (None: no bound)."""

    max_entries: int | None = 200_000
    max_depth: int | None = 64


UNBOUNDED = WalkLimits(max_entries=None, max_depth=None)


@dataclass(slots=True)
class WalkStats:
    """What a walk saw, and why it stopped early if it did."""

    entries: int = 0
    dirs: int = 0
    skipped: list[str] = field(default_factory=list)  # vanished or swapped mid-walk
    errors: list[str] = field(default_factory=list)  # not opened or listed: not seen
    truncated: list[str] = field(default_factory=list)
    stopped: bool = False


@dataclass(slots=True)
class DirVisit:
    """One directory of a walk. ``fd`` is valid until the walk moves past this
    directory's subtree. Remove names from ``subdirs`` to keep the walk out of them."""

    rel: str
    fd: int
    depth: int
    entries: list[os.DirEntry[str]]
    subdirs: list[str]

    def join(self, name: str) -> str:
        return name if self.rel == "." else f"{self.rel}/{name}"


def _list(fd: int, rel: str, depth: int, limits: WalkLimits, stats: WalkStats) -> DirVisit:
    try:
        with os.scandir(fd) as it:
            entries = list(it)
    except OSError as exc:
        (stats.skipped if exc.errno in _RACES else stats.errors).append(f"{rel}: {exc.strerror}")
        entries = []
    stats.dirs += 1
    stats.entries += len(entries)
    if limits.max_entries is not None and stats.entries > limits.max_entries and not stats.stopped:
        stats.stopped = True
        stats.truncated.append(f"stopped at {rel}: more than {limits.max_entries} entries")
    # d_type from the listing (or an fstatat on file systems without it): a
    # symlink to a directory is not a directory here.
    subdirs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    return DirVisit(rel=rel, fd=fd, depth=depth, entries=entries, subdirs=subdirs)


# Directory descriptors a walk keeps open along its path; below this depth a
# directory is opened again from the top (one component at a time, checked to be
# the same inode) for each child, so a walk holds a bounded number of descriptors
# however deep the tree is.
KEEP_OPEN = 32
# errnos of an entry that vanished or was swapped mid-walk (it is not there to miss)
_RACES = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


def walk(
    top_fd: int, limits: WalkLimits | None = None, stats: WalkStats | None = None
) -> Iterator[DirVisit]:
    """Every directory below (and including) the directory ``top_fd``, depth first,
    parents before children, symlinks never followed. ``top_fd`` stays the caller's.

    A directory that vanished or was swapped for something else between being
    listed and being opened is skipped (named in ``stats.skipped``); the walk
    never opens it. One that could not be opened or listed for another reason
    (permissions, no descriptors left) is named in ``stats.errors``: the walk did
    not see what is below it. A visit's ``fd`` is valid during its yield (and, for
    the first :data:`KEEP_OPEN` levels, until the walk leaves its subtree).
    """
    limits = limits or WalkLimits()
    stats = stats if stats is not None else WalkStats()
    stack: list[_Frame] = []
    try:
        visit = _list(top_fd, ".", 0, limits, stats)
        yield visit
        stack.append(_Frame(top_fd, ".", 0, iter(list(visit.subdirs)), False, _ident(top_fd)))
        while stack and not stats.stopped:
            frame = stack[-1]
            name = next(frame.names, None)
            if name is None:
                stack.pop().close()
                continue
            child_rel = name if frame.rel == "." else f"{frame.rel}/{name}"
            if limits.max_depth is not None and frame.depth + 1 > limits.max_depth:
                stats.truncated.append(f"not entered {child_rel}: deeper than {limits.max_depth}")
                continue
            try:
                child = frame.open_child(_nearest_open(stack), name)
            except OSError as exc:
                (stats.skipped if exc.errno in _RACES else stats.errors).append(
                    f"{child_rel}: {exc.strerror}"
                )
                continue
            depth = frame.depth + 1
            stack.append(_Frame(child, child_rel, depth, iter(()), True, _ident(child)))
            visit = _list(child, child_rel, depth, limits, stats)
            yield visit
            stack[-1].names = iter(list(visit.subdirs))
            if depth > KEEP_OPEN:
                stack[-1].close()  # opened again from the top for each child
    finally:
        for frame in stack:
            frame.close()


@dataclass(slots=True)
class _Frame:
    """A directory on the walk's path: its fd (None once closed), the names still
    to descend into, and its (dev, ino) to check it when it is opened again."""

    fd: int | None
    rel: str
    depth: int
    names: Iterator[str]
    owned: bool
    ident: tuple[int, int]

    def close(self) -> None:
        if self.owned and self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def open_child(self, base: _Frame, name: str) -> int:
        if self.fd is not None:
            return open_dir_at(self.fd, name)
        assert base.fd is not None
        rel = self.rel if base.rel == "." else self.rel[len(base.rel) + 1 :]
        fd = open_dir_path(base.fd, rel)
        try:
            if _ident(fd) != self.ident:
                raise OSError(errno.ENOENT, "replaced during the walk", self.rel)
            return open_dir_at(fd, name)
        finally:
            os.close(fd)


def _nearest_open(stack: list[_Frame]) -> _Frame:
    """The deepest frame whose directory is still open (the top always is)."""
    for frame in reversed(stack):
        if frame.fd is not None:
            return frame
    raise AssertionError("the top of a walk is always open")


def _ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)
