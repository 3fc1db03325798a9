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
"""

from __future__ import annotations

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


def parse_seams(argv: Sequence[str]) -> tuple[ApplySeams, list[str]]:
    """The seams the leading ``--seam-...`` options ask for, and the other arguments."""
    after_change = before_rename = None
    parser = None
    args = list(argv)
    while args and args[0].startswith("--seam-"):
        option, _, value = args.pop(0).partition("=")
        if option == "--seam-pause-after" and value.isdigit():
            after_change = pause_after(int(value))
        elif option == "--seam-pause-in-write" and value:
            before_rename = pause_in_write(value)
        elif option == "--seam-apparmor-parser" and value:
            parser = value
        else:
            raise SystemExit(f"setup_with_seams: unknown seam {option!r}")
    seams = ApplySeams(
        after_change=after_change, before_rename=before_rename, apparmor_parser=parser
    )
    return seams, args


if __name__ == "__main__":
    chosen, rest = parse_seams(sys.argv[1:])
    sys.argv[1:] = rest
    sys.exit(main(apply_seams=chosen))
