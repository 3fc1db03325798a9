"""``sandbox-launch``: start Claude Code the way launcher.toml says, or refuse.

The console script is ``sandbox_setup.launcher:main``; the work is in
:mod:`sandbox_setup.launcher.main`. Nothing in this package imports Textual or
tomlkit: the launcher only reads its config.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Sequence

from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.launcher.seams import REAL, LaunchSeams


def main(argv: Sequence[str] | None = None, *, seams: LaunchSeams | None = None) -> int:
    """Console script entry point (see :func:`sandbox_setup.launcher.main.main`).

    Run as the process's entry (``argv`` None: the console script, ``python -m``),
    the launcher exits right after its output is flushed: the session has ended
    completely by then (every process, the cgroup, the boundary's scan), no thread
    and no atexit handler is left, and the interpreter's own teardown of some two
    hundred modules (~10 ms) would change nothing but the time.

    ``seams``: what a test replaces (:mod:`sandbox_setup.launcher.seams`); the
    console script passes none."""
    # why: this __init__ runs first for every module of the package, also in the
    # processes that need none of the launch pipeline (the egress probe of --check,
    # `python -m sandbox_setup.launcher.egress.probe`).
    try:
        from sandbox_setup.launcher.main import main as launcher_main
    except KeyboardInterrupt:
        print("sandbox-launch: interrupted", file=sys.stderr)
        code = int(ExitCode.INTERRUPTED)
    else:
        code = launcher_main(argv, seams=seams or REAL)
    if argv is None:
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    if atexit._ncallbacks() or threading.active_count() > 1:
        return  # someone needs the ordinary exit: take it
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        return  # the ordinary exit reports a failed flush (and exits 120), as always
    os._exit(code)
