"""File operations for apply and undo: atomic, symlink-safe, owner-preserving.

Every path is opened component by component from the layout's root with
``O_NOFOLLOW`` and directory file descriptors, so a directory or symlink that
another user controls cannot redirect a write made as root (docs/design.md,
invariant 3). A symlink is followed only when it is owned by root or by the
operator, and only when it stays inside the root; anything else is an
:class:`~sandbox_setup.base.errors.InputError` that names the path. The final component of
a file we write must not be a symlink at all.

Writes go to a temp file in the same directory, are fsynced, then renamed over
the target; the directory is fsynced too. A killed process therefore leaves the
old or the new file, never a partial one (at most a stray temp file).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox_setup.base.errors import InputError, access_denied
from sandbox_setup.base.regular_files import not_regular

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_MAX_SYMLINKS = 40


def trusted_uids() -> frozenset[int]:
    """Owners whose symlinks we follow: root and whoever runs this tool."""
    return frozenset({0, os.geteuid()})


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileState:
    """A regular file as it is now."""

    data: bytes
    mode: int  # permission bits only
    uid: int
    gid: int


@dataclass(frozen=True)
class DirSpec:
    """How to create missing parent directories: mode and owner."""

    mode: int
    uid: int
    gid: int


def _inside(root: Path, path: str) -> bool:
    return path == str(root) or path.startswith(str(root).rstrip("/") + "/")


def _denied(path: Path, exc: OSError, access: str) -> InputError:
    """A file or directory this user may not open (mode 0000, another owner's): an
    input error naming it and the fix, not an internal error."""
    return access_denied(path, exc, access)


def open_dir(
    root: Path,
    real_dir: Path,
    *,
    create: DirSpec | None = None,
    before_mkdir: Callable[[Path], None] | None = None,
) -> int | None:
    """An O_DIRECTORY fd for ``real_dir`` (inside ``root``), walked without
    following untrusted symlinks. Returns None when a component is missing and
    ``create`` is None. Missing directories are created with ``create``'s mode
    and owner; ``before_mkdir(path)`` runs first (the journal records intent).
    """
    root = Path(root)
    pending = list(Path(real_dir).relative_to(root).parts)
    current = str(root)
    fd = os.open(root, _DIR_FLAGS)
    hops = 0
    try:
        while pending:
            name = pending.pop(0)
            if name in ("", "."):
                continue
            try:
                nfd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if create is None:
                    os.close(fd)
                    return None
                path = Path(current) / name
                if before_mkdir is not None:
                    before_mkdir(path)
                os.mkdir(name, create.mode, dir_fd=fd)
                os.chown(name, create.uid, create.gid, dir_fd=fd, follow_symlinks=False)
                os.chmod(name, create.mode, dir_fd=fd, follow_symlinks=False)
                nfd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except PermissionError as exc:
                raise _denied(Path(current) / name, exc, "rwx") from None
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                st = os.lstat(name, dir_fd=fd)
                path = Path(current) / name
                if not stat.S_ISLNK(st.st_mode):
                    raise InputError(f"{path}: not a directory") from None
                if st.st_uid not in trusted_uids():
                    raise InputError(
                        f"{path}: is a symlink owned by uid {st.st_uid}; refusing to follow a "
                        "symlink another user controls (replace it with a directory)"
                    ) from None
                hops += 1
                if hops > _MAX_SYMLINKS:
                    raise InputError(f"{path}: too many levels of symlinks") from None
                link = os.readlink(name, dir_fd=fd)
                if link.startswith("/"):
                    dest = os.path.normpath(str(root) + "/" + link.lstrip("/"))
                else:
                    dest = os.path.normpath(os.path.join(current, link))
                if not _inside(root, dest):
                    raise InputError(f"{path}: symlink leads outside {root}") from None
                # Restart the walk from the root along the link's destination.
                os.close(fd)
                fd = os.open(root, _DIR_FLAGS)
                current = str(root)
                pending = list(Path(dest).relative_to(root).parts) + pending
                continue
            os.close(fd)
            fd = nfd
            current = str(Path(current) / name)
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def read_file(root: Path, real_path: Path) -> FileState | None:
    """The regular file at ``real_path`` or None when it does not exist.

    A symlink or a non-regular file there is an InputError naming the path.
    """
    real_path = Path(real_path)
    dfd = open_dir(root, real_path.parent)
    if dfd is None:
        return None
    try:
        try:
            fd = os.open(
                real_path.name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                dir_fd=dfd,
            )
        except FileNotFoundError:
            return None
        except PermissionError as exc:
            raise _denied(real_path, exc, "rw") from None
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            dest = os.readlink(real_path.name, dir_fd=dfd)
            owner = os.lstat(real_path.name, dir_fd=dfd).st_uid
            raise InputError(
                f"{real_path}: is a symlink (owned by uid {owner}) to {dest}; sandbox-setup "
                "never writes through a symlink; replace it with a regular file"
            ) from None
        # fstat before fdopen: a directory here must be an InputError naming the
        # path, not fdopen's IsADirectoryError.
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise not_regular(real_path, st.st_mode)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read()
        return FileState(data, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    finally:
        os.close(dfd)


def temp_name(real_path: Path) -> str:
    return f".{Path(real_path).name}.sandbox-setup-{os.getpid()}.tmp"


def atomic_write(
    root: Path,
    real_path: Path,
    data: bytes,
    *,
    mode: int,
    uid: int,
    gid: int,
    dirs: DirSpec,
    before_mkdir: Callable[[Path], None] | None = None,
    before_rename: Callable[[Path], None] | None = None,
) -> None:
    """Replace ``real_path`` with ``data`` atomically (temp, fsync, rename).

    The file ends up with ``mode``/``uid``/``gid``; missing parents are created
    per ``dirs``. The final component must not be a symlink. ``before_rename(real_path)``
    runs once the temp file is whole and fsynced, just before the rename (a fault
    test stops the write there).
    """
    real_path = Path(real_path)
    dfd = open_dir(root, real_path.parent, create=dirs, before_mkdir=before_mkdir)
    assert dfd is not None
    name = real_path.name
    tmp = temp_name(real_path)
    try:
        try:
            st = os.lstat(name, dir_fd=dfd)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise InputError(f"{real_path}: exists and is not a regular file; left untouched")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=dfd,
        )
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if (uid, gid) != (os.geteuid(), os.getegid()):
                os.fchown(fd, uid, gid)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_rename is not None:
            before_rename(real_path)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        os.fsync(dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    finally:
        os.close(dfd)


# fallocate(2) flag: allocate blocks beyond the end of the file without changing its
# size, so later appends land in blocks that are already there.
_FALLOC_FL_KEEP_SIZE = 0x01


def reserve_space(fd: int, length: int) -> bool:
    """Make sure ``length`` bytes past the end of the file ``fd`` are allocated
    (fallocate, KEEP_SIZE): appends into them cannot fail with ENOSPC. False where
    the filesystem cannot preallocate; an OSError (ENOSPC) when there is no room."""
    libc = ctypes.CDLL(None, use_errno=True)
    fallocate = libc.fallocate
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fallocate.restype = ctypes.c_int
    if fallocate(fd, _FALLOC_FL_KEEP_SIZE, os.fstat(fd).st_size, length) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(err, os.strerror(err))


def keep_name(real_path: Path, tag: str) -> str:
    """The name of a restore point of ``real_path`` (same directory; see :func:`keep`)."""
    return f".{Path(real_path).name}.sandbox-setup-{tag}.keep"


def keep(root: Path, real_path: Path, name: str, *, move: bool = False) -> str | None:
    """Keep the current ``real_path`` under ``name`` in the same directory, so that
    restoring it later is a rename, which needs no free space.

    ``move=False``: a hard link to the current inode (the file is about to be
    replaced by a rename, which leaves that inode as it is); where the filesystem
    refuses a link, a copy with the same mode and owner. ``move=True``: the file
    itself is renamed (it is about to be rewritten in place, as shadow-utils does
    with its ``-`` backups). Returns ``"link"``, ``"copy"``, ``"moved"``, or None
    when there is no file to keep.
    """
    real_path = Path(real_path)
    dfd = open_dir(root, real_path.parent)
    if dfd is None:
        return None
    try:
        try:
            st = os.lstat(real_path.name, dir_fd=dfd)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{real_path}: exists and is not a regular file; left untouched")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dfd)  # a stale restore point of a killed run
        if move:
            os.rename(real_path.name, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            os.fsync(dfd)
            return "moved"
        try:
            os.link(real_path.name, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            os.fsync(dfd)
            return "link"
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EMLINK, errno.EOPNOTSUPP, errno.EXDEV):
                raise
    finally:
        os.close(dfd)
    state = read_file(root, real_path)
    if state is None:
        return None
    atomic_write(
        root,
        real_path.parent / name,
        state.data,
        mode=state.mode,
        uid=state.uid,
        gid=state.gid,
        dirs=DirSpec(0o755, 0, 0),
    )
    return "copy"


def restore_kept(root: Path, real_path: Path, name: str, sha: str) -> bool:
    """Put the restore point ``name`` back over ``real_path`` by a rename (no new
    space needed). False when it is not there; an InputError when it no longer holds
    the bytes with ``sha`` (it is left where it is)."""
    real_path = Path(real_path)
    kept = read_file(root, real_path.parent / name)
    if kept is None:
        return False
    if sha256(kept.data) != sha:
        raise InputError(
            f"{real_path.parent / name}: the kept copy of {real_path} does not match the "
            "journal; left as it is"
        )
    dfd = open_dir(root, real_path.parent)
    assert dfd is not None
    try:
        os.rename(name, real_path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return True


def remove_file(root: Path, real_path: Path) -> bool:
    """Unlink the regular file (or stray temp) at ``real_path``; False if absent."""
    real_path = Path(real_path)
    dfd = open_dir(root, real_path.parent)
    if dfd is None:
        return False
    try:
        # lstat first: on a read-only filesystem unlink fails with EROFS even for a
        # name that is not there, and an absent file is nothing to undo.
        os.lstat(real_path.name, dir_fd=dfd)
        os.unlink(real_path.name, dir_fd=dfd)
        os.fsync(dfd)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(dfd)


def remove_empty_dir(root: Path, real_dir: Path) -> bool:
    """rmdir ``real_dir`` if it exists and is empty."""
    real_dir = Path(real_dir)
    dfd = open_dir(root, real_dir.parent)
    if dfd is None:
        return False
    try:
        os.lstat(real_dir.name, dir_fd=dfd)  # absent: nothing to do (see remove_file)
        os.rmdir(real_dir.name, dir_fd=dfd)
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
            return False
        raise
    finally:
        os.close(dfd)
