"""TIOCSTI from inside the sandbox cannot type into the operator's terminal.

test_launch_tty.py checks the ioctl's errno on stdin; this test checks the
effect, on the terminal itself. The launcher runs on a pty as the session
leader (the pty is its controlling terminal, as under a terminal emulator);
the fake ``claude`` tries to push ``echo pwned`` plus a newline into the terminal
through each of stdin, stdout, stderr and ``/dev/tty``, then exits. Afterwards
the terminal's input queue, which the operator's shell would read next, must be
empty. A control injection by the test itself (root) shows that the queue check
sees injected input.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch_fixtures import LaunchTree, launch_tree, start_launcher_on_pty

pytestmark = pytest.mark.integration

INJECTING_CLAUDE = r"""#!/usr/bin/python3
import fcntl, json, os, termios
result = {{}}
def inject(fd):
    try:
        for ch in b"echo pwned\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([ch]))
        return "injected"
    except OSError as exc:
        return "errno %d" % exc.errno
for fd in (0, 1, 2):
    result[str(fd)] = inject(fd)
try:
    tty = os.open("/dev/tty", os.O_RDWR)
    result["/dev/tty"] = inject(tty)
except OSError as exc:
    result["/dev/tty"] = "open errno %d" % exc.errno
with open({log!r}, "w") as handle:
    handle.write(json.dumps(result))
"""


def queued(fd: int) -> int:
    """Bytes waiting in the terminal's input queue (what a shell would read next)."""
    count: int = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    return count


def drain(master: int) -> None:
    os.set_blocking(master, False)
    try:
        while os.read(master, 4096):
            pass
    except OSError:
        pass  # nothing to read (EAGAIN), or the other side closed (EIO)


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def test_tiocsti_from_the_sandbox_types_nothing_into_the_terminal(tree: LaunchTree) -> None:
    log = tree.workspace / "tiocsti.json"
    claude = tree.write_script(INJECTING_CLAUDE.format(log=str(log)))
    config = tree.write_config(claude)
    master, slave = pty.openpty()
    try:
        # Control: root may inject (CAP_SYS_ADMIN), and the queue check sees it.
        fcntl.ioctl(slave, termios.TIOCSTI, b"x")
        fcntl.ioctl(slave, termios.TIOCSTI, b"\n")
        assert queued(slave) > 0, "the queue check cannot see injected input"
        termios.tcflush(slave, termios.TCIFLUSH)
        assert queued(slave) == 0
        proc = start_launcher_on_pty(config, slave)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            drain(master)
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.returncode == 0
        attempts = json.loads(log.read_text())
        assert queued(slave) == 0, f"keystrokes reached the terminal: {attempts}"
    finally:
        os.close(slave)
        os.close(master)
    assert set(attempts) == {"0", "1", "2", "/dev/tty"}
    assert all(result != "injected" for result in attempts.values()), attempts
    legacy = Path("/proc/sys/dev/tty/legacy_tiocsti").read_text().strip() == "1"
    if legacy:  # the launcher then adds --new-session: no controlling terminal inside
        assert attempts["/dev/tty"].startswith("open errno"), attempts
