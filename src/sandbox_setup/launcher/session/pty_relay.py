"""A pty of the session's own, relayed to the operator's terminal (as sudo's use_pty).

The agent never gets the operator's terminal: where stdin, stdout or stderr is a
terminal, the session gets the slave side of a new pty in its place and the
launcher copies bytes both ways (the operator's terminal in raw mode, so Ctrl-C,
Ctrl-Z and the like reach the session's line discipline as keys and its
foreground job as signals). Window size changes are passed on (``SIGWINCH``).

So a process of the agent can reach the operator's terminal only through the
relay, only while the launcher relays: once the session ends, the relay stops
and nothing of the agent holds an fd to the operator's terminal (it never held
one), so a line typed afterwards cannot be read, and nothing can be written to
it or injected into it (TIOCSTI needs the terminal itself).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pty
import select
import signal
import termios
import tty
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

STDIO = (0, 1, 2)
CHUNK = 65536


def _is_tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _foreground(fd: int) -> bool:
    """Is this process in the terminal's foreground process group (may set modes)?"""
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False


def set_modes(fd: int, modes: list[Any]) -> None:
    """Put the terminal ``fd``'s modes back, from the foreground or not.

    From a background process group (``timeout`` without ``--foreground`` puts the
    launcher in one) ``tcsetattr`` would stop the launcher with SIGTTOU; with the
    signal blocked the kernel lets the change through instead, so the operator's
    terminal gets its echo and line editing back however the launcher was started."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSADRAIN, modes)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@dataclass(slots=True)
class PtyRelay:
    """One session's pty and the relay between it and the operator's terminal."""

    ttys: tuple[int, ...]  # which of 0, 1, 2 are the operator's terminal
    master: int = -1
    slave: int = -1
    _saved: list[Any] | None = field(default=None, repr=False)
    _pending: bytes = b""
    _input_open: bool = True

    @classmethod
    def for_stdio(cls) -> PtyRelay | None:
        """A relay when any of stdin, stdout, stderr is a terminal; None otherwise
        (then the session gets the launcher's pipes or files as they are)."""
        ttys = tuple(fd for fd in STDIO if _is_tty(fd))
        if not ttys:
            return None
        relay = cls(ttys)
        relay.master, relay.slave = pty.openpty()
        for fd in (relay.master, relay.slave):
            os.set_inheritable(fd, False)
        relay.copy_window_size()
        relay._copy_modes()
        return relay

    @property
    def terminal(self) -> int:
        """The operator's terminal (the first of 0, 1, 2 that is one)."""
        return self.ttys[0]

    @property
    def output(self) -> int:
        """Where the session's output goes: stdout if a terminal, else stderr, else stdin's."""
        for fd in (1, 2, 0):
            if fd in self.ttys:
                return fd
        return self.terminal

    def child_stdio(self) -> tuple[int, int, int]:
        """The session's stdin, stdout, stderr: the pty where the operator's are a terminal."""
        std = (0, 1, 2)
        return tuple(self.slave if fd in self.ttys else std[fd] for fd in STDIO)  # type: ignore[return-value]

    def copy_window_size(self) -> None:
        with contextlib.suppress(OSError):
            size = fcntl.ioctl(self.terminal, termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, size)

    def _copy_modes(self) -> None:
        # The session's pty starts with the operator's modes (echo, erase key, ...).
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(self.slave, termios.TCSANOW, termios.tcgetattr(self.terminal))

    def start(self) -> None:
        """After the session started: raw mode on the operator's terminal (when in
        the foreground; a background launcher only relays output)."""
        os.close(self.slave)
        self.slave = -1
        os.set_blocking(self.master, False)
        if 0 not in self.ttys or not _foreground(0):
            self._input_open = False
            return
        with contextlib.suppress(termios.error):
            self._saved = termios.tcgetattr(0)
            tty.setraw(0, termios.TCSANOW)

    def restore(self) -> None:
        """The operator's terminal as it was (idempotent)."""
        if self._saved is not None:
            set_modes(0, self._saved)
            self._saved = None

    def close(self) -> None:
        self.restore()
        for fd in (self.master, self.slave):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.master = self.slave = -1

    def _write_out(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.output, view)
            except BlockingIOError:
                select.select([], [self.output], [], 1.0)
                continue
            except OSError:
                return  # the operator's terminal is gone: nothing to show it on
            view = view[written:]

    def pump(self, timeout: float) -> bool:
        """Copy what is ready, waiting at most ``timeout``. False once the session's
        side is closed (every process holding the pty is gone)."""
        readers = [self.master] + ([0] if self._input_open and not self._pending else [])
        writers = [self.master] if self._pending else []
        try:
            ready_r, ready_w, _ = select.select(readers, writers, [], timeout)
        except InterruptedError:
            return True
        if self.master in ready_r:
            try:
                data = os.read(self.master, CHUNK)
            except BlockingIOError:
                data = None
            except OSError as exc:
                if exc.errno == errno.EIO:
                    return False  # the slave's last holder closed it
                raise
            if data == b"":
                return False
            if data:
                self._write_out(data)
        if 0 in ready_r:
            try:
                data = os.read(0, CHUNK)
            except OSError:
                data = b""
            if data:
                self._pending += data
            else:
                self._input_open = False  # the operator's end of input
        if self.master in ready_w and self._pending:
            try:
                written = os.write(self.master, self._pending)
                self._pending = self._pending[written:]
            except BlockingIOError:
                pass
            except OSError:
                self._pending = b""
        return True

    def drain(self, timeout: float = 0.2) -> None:
        """What the session wrote before it ended, without waiting for more."""
        self._input_open = False
        self._pending = b""
        while self.master >= 0 and self.pump(timeout):
            ready, _, _ = select.select([self.master], [], [], 0)
            if not ready:
                return


def relay_until(relay: PtyRelay, done: Callable[[], bool], tick: float = 0.05) -> None:
    """Relay until ``done()`` (the session's first process exited) or the pty closed."""
    while not done():
        if not relay.pump(tick):
            return


def install_winch(relay: PtyRelay) -> Callable[[], None]:
    """Pass window size changes on; returns the function that puts the old handler back."""
    previous = signal.signal(signal.SIGWINCH, lambda _s, _f: relay.copy_window_size())

    def restore() -> None:
        signal.signal(signal.SIGWINCH, previous)

    return restore


@dataclass(slots=True)
class TerminalState:
    """The operator's terminal modes and fd flags, put back when a session ends.

    In sandbox mode the sandbox holds the operator's terminal itself (bubblewrap's
    stdio) while the session runs; whatever it changed (raw mode, no echo,
    O_NONBLOCK on the shared open file, which makes the shell's next ``read`` fail)
    is undone before the launcher returns."""

    modes: dict[int, list[Any]] = field(default_factory=dict)
    flags: dict[int, int] = field(default_factory=dict)

    @classmethod
    def save(cls) -> TerminalState:
        state = cls()
        for fd in STDIO:
            if not _is_tty(fd):
                continue
            with contextlib.suppress(OSError):
                state.flags[fd] = fcntl.fcntl(fd, fcntl.F_GETFL)
            if fd not in state.modes and not state.modes:
                with contextlib.suppress(termios.error):
                    state.modes[fd] = termios.tcgetattr(fd)
        return state

    def restore(self) -> None:
        for fd, flags in self.flags.items():
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETFL, flags)
        for fd, modes in self.modes.items():
            set_modes(fd, modes)  # in the foreground or not (SIGTTOU held off)
