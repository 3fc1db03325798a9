"""Reading an input file that someone else may have replaced with something else.

:func:`read_regular` opens with ``O_NONBLOCK``, so a FIFO at the path (which
nobody will ever write to) cannot block the run for ever, then refuses anything
that is not a regular file (a FIFO, a directory, a device) with an
:class:`~sandbox_setup.base.errors.InputError` naming the path (exit 2). Symlinks are
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


def read_regular(path: Path | str) -> bytes:
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
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: Path | str, *, errors: str = "strict") -> str:
    """:func:`read_regular` decoded as UTF-8 (``errors`` as for ``bytes.decode``)."""
    return read_regular(path).decode("utf-8", errors=errors)
