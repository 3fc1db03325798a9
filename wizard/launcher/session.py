"""Run the agent in a session of its own, under the launcher, with signals passed on.

Used by ``user`` mode when ``dev.tty.legacy_tiocsti`` is not 0. Exec'ing Claude
in the operator's session would hand it the operator's controlling terminal,
and with TIOCSTI the agent could push keystrokes into it that root's shell runs
once Claude exits. In a new session (``setsid``) the terminal is no longer the
agent's controlling terminal, so the kernel refuses TIOCSTI (EPERM), and the
agent cannot make it one again (it is already root's session's terminal).

The terminal's signals (Ctrl-C, resize, hangup) now reach only the launcher's
process group; the launcher forwards them to Claude, waits, and returns
Claude's exit status (128+N when it died of signal N), as an exec would have.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from types import FrameType

from wizard.base.errors import RefusedError
from wizard.launcher.command import Launch

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH, signal.SIGQUIT)


@dataclass
class _Forwarder:
    pid: int | None = None
    # Signals that arrived before the child existed, delivered once it does.
    pending: list[int] = field(default_factory=list)

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.pid is None:
            self.pending.append(signum)
            return
        with contextlib.suppress(OSError):  # it may have exited meanwhile
            os.kill(self.pid, signum)


def run_in_new_session(launch: Launch) -> int:
    """Start ``launch`` in a new session, forward signals, return its exit status."""
    forwarder = _Forwarder()
    previous = {sig: signal.signal(sig, forwarder.on_signal) for sig in FORWARDED}
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        try:
            child = subprocess.Popen(
                list(launch.argv), env=dict(launch.env), start_new_session=True
            )
        except OSError as exc:
            raise RefusedError(f"cannot start {launch.argv[0]}: {exc.strerror}") from None
        try:
            forwarder.pid = child.pid
            for signum in forwarder.pending:
                forwarder.on_signal(signum, None)
            code = child.wait()
        except BaseException:
            # Never leave the agent running detached from a launcher that failed.
            with contextlib.suppress(OSError):
                child.kill()
            child.wait()
            raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code if code >= 0 else 128 - code
