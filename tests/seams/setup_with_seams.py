"""``sandbox-setup`` with test seams: ``python setup_with_seams.py [--seam-...] ARGS``.

Tests only. The leading ``--seam-...`` options build an
:class:`~sandbox_setup.configure.apply.ApplySeams`; the remaining arguments go to the
real ``sandbox-setup``. Each seam stops a headless apply at a known point, prints
``sandbox-setup: test pause ...`` to stderr and sleeps, so the test can SIGKILL it there:

``--seam-pause-after=N``
    after the apply's N-th changing action.
``--seam-pause-in-write=NAME``
    inside the write of the file named NAME: its temp file is written and fsynced,
    the rename has not run.

And one that stands in for a tool, so an apply under ``--root`` runs it:

``--seam-apparmor-parser=PATH``
    load the AppArmor profile with PATH (a stand-in ``apparmor_parser``), not nothing.

Two more seams make the disk full at a known point instead of pausing:

``--seam-fill-disk-after=N:FILE``
    after the apply's N-th changing action, FILE grows until its file system has
    not one free byte (the next step, or the commit, meets a full disk);
``--seam-drop-journal-reserve=JOURNAL``
    at that same point, first hand back the blocks the journal holds allocated past
    its last one (as on a file system without ``fallocate``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from sandbox_setup.cli import main
from sandbox_setup.configure.apply import ApplySeams


def pause(where: str) -> None:
    print(f"sandbox-setup: test pause {where}", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


def pause_after(count: int) -> Callable[[int], None]:
    def after_change(done: int) -> None:
        if done == count:
            pause(f"after {done} actions")

    return after_change


def pause_in_write(name: str) -> Callable[[Path], None]:
    def before_rename(path: Path) -> None:
        if path.name == name:
            pause(f"in write of {name}")

    return before_rename


_PUNCH_BEYOND_END = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE


def drop_reserve(journal: str) -> None:
    """Free the blocks allocated past the end of ``journal`` (its fallocate reserve);
    the block its last byte is in stays, as on any file system."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fd = os.open(journal, os.O_WRONLY)
    try:
        size = os.fstat(fd).st_size
        if libc.fallocate(fd, _PUNCH_BEYOND_END, size, 1 << 24) != 0:
            raise OSError(ctypes.get_errno(), "fallocate punch", journal)
    finally:
        os.close(fd)


def fill_disk(path: str) -> None:
    """Grow ``path`` until its file system is full, to the last byte."""
    with open(path, "ab", buffering=0) as handle:
        for size in (1 << 16, 4096, 1):
            try:
                while True:
                    handle.write(b"\0" * size)
            except OSError:
                continue


def fill_after(count: int, filler: str, journal: str | None) -> Callable[[int], None]:
    def after_change(done: int) -> None:
        if done == count:
            if journal is not None:
                drop_reserve(journal)
            fill_disk(filler)
            print(f"sandbox-setup: test disk full after {done} actions", file=sys.stderr)

    return after_change


def parse_seams(argv: Sequence[str]) -> tuple[ApplySeams, list[str]]:
    """The seams the leading ``--seam-...`` options ask for, and the other arguments."""
    after_change = before_rename = None
    parser = None
    fill: tuple[int, str] | None = None
    journal = None
    args = list(argv)
    while args and args[0].startswith("--seam-"):
        option, _, value = args.pop(0).partition("=")
        count, _, filler = value.partition(":")
        if option == "--seam-pause-after" and value.isdigit():
            after_change = pause_after(int(value))
        elif option == "--seam-pause-in-write" and value:
            before_rename = pause_in_write(value)
        elif option == "--seam-apparmor-parser" and value:
            parser = value
        elif option == "--seam-fill-disk-after" and count.isdigit() and filler:
            fill = (int(count), filler)
        elif option == "--seam-drop-journal-reserve" and value:
            journal = value
        else:
            raise SystemExit(f"setup_with_seams: unknown seam {option!r}")
    if fill is not None:
        after_change = fill_after(fill[0], fill[1], journal)
    seams = ApplySeams(
        after_change=after_change, before_rename=before_rename, apparmor_parser=parser
    )
    return seams, args


if __name__ == "__main__":
    chosen, rest = parse_seams(sys.argv[1:])
    sys.argv[1:] = rest
    sys.exit(main(apply_seams=chosen))
