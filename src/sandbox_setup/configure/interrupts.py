"""SIGINT, SIGTERM and SIGHUP during an apply: one rollback for all three.

Ctrl-C raises :class:`KeyboardInterrupt` and the apply rolls back what it had done.
SIGTERM (``kill``, a service manager) and SIGHUP (the terminal went away) used to
kill the process on the spot: no rollback, no word, the user and its group left
behind. While :func:`handled` is active all three raise :class:`Interrupted` (a
``KeyboardInterrupt``, so every path that rolls back on Ctrl-C does so on these),
which names the signal.

Some work must not be cut in half by that exception: a shadow-utils tool that is
rewriting the account files (an exception there makes ``subprocess.run`` SIGKILL it,
leaving its lock files and ``-`` backups behind), the rollback itself, the commit.
Inside :func:`deferred` a signal is only noted; it is raised when the block ends (or,
when the block fails after it came, raised in place of that failure). The tools
themselves run in a session of their own (``configure/accounts/users.py``: ``run_tool``), so a
signal sent to the whole process group (Ctrl-C at the terminal, a hangup,
``kill -TERM -PGID``) reaches the apply and not them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The apply was interrupted by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class _State:
    depth = 0  # how many deferred() blocks are open
    pending: int | None = None  # a signal that arrived inside one
    active = False


_state = _State()


def _handler(signum: int, _frame: FrameType | None) -> None:
    if _state.depth:
        if _state.pending is None:
            _state.pending = signum
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` inside the block (main
    thread only; elsewhere, as in the TUI's worker, the block changes nothing)."""
    if _state.active or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        if previous[sig] is not signal.SIG_IGN:  # nohup'd: stays ignored
            signal.signal(sig, _handler)
    _state.active = True
    try:
        yield
    finally:
        _state.active = False
        _state.pending = None
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal that arrives inside the block is raised when it ends (when no other
    deferred block is still open), never in the middle of it."""
    _state.depth += 1
    try:
        yield
    except BaseException as exc:
        # The block failed after a signal came (a child the signal reached too): the
        # apply stops because it was told to, and says so (exit 130, not the failure).
        _state.depth -= 1
        if not _state.depth and _state.pending is not None and _state.active:
            signum, _state.pending = _state.pending, None
            if not isinstance(exc, KeyboardInterrupt):
                raise Interrupted(signum) from exc
        raise
    _state.depth -= 1
    if not _state.depth and _state.pending is not None and _state.active:
        signum, _state.pending = _state.pending, None
        raise Interrupted(signum)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Like :func:`deferred`, but what arrived is dropped, not raised: for the
    rollback, which is already the answer to the interruption."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if not _state.depth:
            _state.pending = None
