"""Reading an input file that someone else may have replaced with something else.

:func:`read_regular` opens with ``O_NONBLOCK``, so a FIFO at the path (which
nobody will ever write to) cannot block the run for ever, then refuses anything
that is not a regular file (a FIFO, a directory, a device) with an
:class:`~sandbox_setup.base.errors.InputError` naming the path (exit 2), and reads at
most ``limit`` bytes (:data:`MAX_CONFIG_BYTES` for the configuration and state files
it is for): a file larger is refused the same way, so no read of configuration or
state blocks or grows without bound. Symlinks are
followed: use it for inputs the operator names or that live in the tree being
configured; writes go through :mod:`sandbox_setup.configure.fsops`, which never follows
one.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from sandbox_setup.base.errors import InputError

# Far above any configuration or state file sandbox-setup reads (the largest, an
# account file of a big host, is a few MiB).
MAX_CONFIG_BYTES = 64 << 20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_regular(path: Path | str, mode: int) -> InputError:
    """The error for ``path`` whose ``st_mode`` is ``mode`` (not a regular file)."""
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return InputError(f"{path}: is {kind}, not a regular file; left untouched")


def read_regular(path: Path | str, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of the regular file ``path``; see the module doc. A missing file
    raises FileNotFoundError (callers decide what absent means)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO on some kernels
            raise InputError(f"{path}: is not a regular file; left untouched") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode)
        chunks = []
        size = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise InputError(
                    f"{path}: is larger than {limit} bytes, too large for a configuration "
                    "or state file; left untouched"
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: Path | str, *, errors: str = "strict") -> str:
    """:func:`read_regular` decoded as UTF-8 (``errors`` as for ``bytes.decode``)."""
    return read_regular(path).decode("utf-8", errors=errors)


def read_regular_or_none(path: Path | str) -> str | None:
    """:func:`read_regular_text` (undecodable bytes replaced), or None when the file
    is missing, unreadable or not a regular file: for a system file a check only
    consults (the sudoers files, login.defs, sshd's config)."""
    try:
        return read_regular_text(path, errors="replace")
    except (OSError, InputError):
        return None
