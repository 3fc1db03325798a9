"""An unexpected exception: one line for the operator, the traceback kept on disk.

Exit code 70 (``ExitCode.INTERNAL``) means a bug in sandbox-setup, never
"findings" (1). The traceback goes to ``crash.log`` in the state directory of
the user running the tool (under ``--root`` for the wizard), appended, mode
0600, written without following a symlink. When the state directory is unusable (a
file in its place, no space, no permission) the traceback goes to a new private file
in the temp directory, and the one line names it; only when that fails too is the
traceback printed, so it is never lost.
"""

from __future__ import annotations

import datetime
import os
import sys
import tempfile
import traceback
from pathlib import Path

CRASH_LOG = "crash.log"


def _append(state_dir: Path, text: str) -> Path:
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state_dir / CRASH_LOG
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, text.encode("utf-8", errors="replace"))
    finally:
        os.close(fd)
    return path


def report_crash(program: str, exc: BaseException, state_dir: Path | None) -> None:
    """Print the one line, keep the traceback (see the module docstring)."""
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    trace = "".join(traceback.format_exception(exc))
    summary = (
        f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
    )
    where = None
    why = "no state directory"
    record = f"--- {when} {program} (pid {os.getpid()})\n{trace}"
    if state_dir is not None:
        try:
            where = _append(state_dir, record)
        except OSError as error:
            why = f"{error.strerror or error}"
    if where is None:
        where = _temp_log(program, record)
        if where is not None:
            print(
                f"{program}: internal error ({summary}); this is a bug in sandbox-setup. "
                f"The traceback is in {where} (the state directory {state_dir} could not "
                f"take it: {why})",
                file=sys.stderr,
            )
            return
    if where is not None:
        print(
            f"{program}: internal error ({summary}); this is a bug in sandbox-setup. "
            f"The traceback is in {where}",
            file=sys.stderr,
        )
    else:
        print(
            f"{program}: internal error ({summary}); this is a bug in sandbox-setup. "
            f"The traceback could not be saved ({why}):",
            file=sys.stderr,
        )
        sys.stderr.write(trace)


def _temp_log(program: str, record: str) -> Path | None:
    """A new 0600 file in the temp directory holding ``record``, or None."""
    try:
        fd, name = tempfile.mkstemp(prefix=f"{program}-crash-", suffix=".log")
    except OSError:
        return None
    try:
        os.write(fd, record.encode("utf-8", errors="replace"))
    except OSError:
        return None
    finally:
        os.close(fd)
    return Path(name)
