"""On a real terminal (a pty): window resizes and Ctrl-C reach Claude, TIOCSTI does not work.

The launcher runs as the session leader of a new pty, the way a login shell's
child would be the foreground job. With ``dev.tty.legacy_tiocsti`` = 1 Claude
gets its own session in both ``sandbox`` (bwrap ``--new-session``) and ``user``
mode (a new session on a pty of its own that the launcher relays), so the agent
can no longer push keystrokes into the operator's terminal, which the operator's
shell would run as root once Claude exits. In user mode window sizes and Ctrl-C
reach Claude through its pty, as a terminal's would.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch_fixtures import LaunchTree, launcher_env, make_launch_tree, start_launcher_on_pty
from tests.tools import REPO, require_root, require_tool

pytestmark = pytest.mark.integration

TTY_CLAUDE = """#!/usr/bin/python3
import fcntl, signal, struct, sys, termios, time
open({marker!r}, "w").close()
log = open({log!r}, "a", buffering=1)

def on_winch(signum, frame):
    rows, cols = struct.unpack("HHHH", fcntl.ioctl(0, termios.TIOCGWINSZ, b"\\0" * 8))[:2]
    log.write("WINCH %dx%d\\n" % (rows, cols))

def on_int(signum, frame):
    log.write("INT\\n")
    sys.exit(43)

signal.signal(signal.SIGWINCH, on_winch)
signal.signal(signal.SIGINT, on_int)
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x")
    log.write("TIOCSTI allowed\\n")
except OSError as exc:
    log.write("TIOCSTI errno %d\\n" % exc.errno)
log.write("ready\\n")
end = time.monotonic() + 60
while time.monotonic() < end:
    time.sleep(0.05)
sys.exit(9)
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    require_root()
    require_tool("bwrap")
    if Path("/proc/sys/dev/tty/legacy_tiocsti").read_text().strip() == "0":
        pytest.skip("legacy_tiocsti is 0 here: the launcher does not use --new-session")
    with make_launch_tree() as made:
        yield made


def _wait_for(path: Path, text: str, master: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _drain(master)
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never contained {text!r}")


def _drain(master: int) -> None:
    os.set_blocking(master, False)
    try:
        while os.read(master, 4096):
            pass
    except OSError:
        pass  # nothing to read (EAGAIN), or the other side closed (EIO)


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_resize_and_ctrl_c_reach_claude_and_tiocsti_is_blocked(tree: LaunchTree, mode: str) -> None:
    log = tree.workspace / "tty.log"
    claude = tree.write_script(TTY_CLAUDE.format(marker=str(tree.marker), log=str(log)))
    config = tree.write_config(claude, mode=mode)
    master, slave = pty.openpty()
    proc = start_launcher_on_pty(config, slave)
    os.close(slave)
    try:
        _wait_for(log, "ready", master)
        if mode == "sandbox":
            assert "TIOCSTI errno 1" in log.read_text()  # EPERM: not its controlling terminal
        else:
            # user mode: its terminal is the session's own pty (relayed), so TIOCSTI
            # only pushes input into the session itself, never into the operator's.
            assert "TIOCSTI allowed" in log.read_text()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
        _wait_for(log, "WINCH 50x132", master)
        os.write(master, b"\x03")  # Ctrl-C, typed
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            _drain(master)
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    assert "INT" in log.read_text()
    assert proc.returncode == 43


# Pushes a command into its terminal's input queue, as an agent attacking root would.
INJECTING_CLAUDE = """#!/usr/bin/python3
import fcntl, termios
open({marker!r}, "w").close()
log = open({log!r}, "a", buffering=1)
try:
    for byte in {command!r}.encode():
        fcntl.ioctl(0, termios.TIOCSTI, bytes([byte]))
    log.write("TIOCSTI allowed\\n")
except OSError as exc:
    log.write("TIOCSTI errno %d\\n" % exc.errno)
"""


def _as_ctty() -> None:
    # Make the pty the shell's controlling terminal, as a terminal emulator does.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_injected_keystrokes_never_reach_the_operators_shell(tree: LaunchTree, mode: str) -> None:
    # The operator's shell: runs the launcher, then reads and runs the next line
    # typed at the terminal (as an interactive root shell would after Claude exits).
    proof = tree.config_dir / "as-root-proof"  # root-only directory: only root can create it
    typed = tree.config_dir / "operator-typed"
    log = tree.workspace / "inject.log"
    claude = tree.write_script(
        INJECTING_CLAUDE.format(marker=str(tree.marker), log=str(log), command=f"id -u > {proof}\n")
    )
    config = tree.write_config(claude, mode=mode)
    shell = (
        f"{sys.executable} -m sandbox_setup.launcher --config {config}; echo LAUNCHER-EXIT $?; "
        'read -r line; eval "$line"'
    )
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", shell],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=_as_ctty,
        env=launcher_env(),
        cwd=REPO,
    )
    os.close(slave)
    output = b""
    try:
        deadline = time.monotonic() + 60
        while b"LAUNCHER-EXIT" not in output and time.monotonic() < deadline:
            output += _read_some(master)
        assert b"LAUNCHER-EXIT 0" in output, output
        # What the operator types next: the shell runs the first line in the queue.
        os.write(master, f"echo typed > {typed}\n".encode())
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            output += _read_some(master)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    assert tree.marker.exists(), "the fake Claude never ran"
    assert not proof.exists(), f"the agent ran a command as root: {proof.read_text()!r}"
    # sandbox: refused (not its controlling terminal); user: allowed, but into the
    # session's own pty, which dies with the session; the operator's shell read only
    # what the operator typed (below).
    expected = "TIOCSTI errno" if mode == "sandbox" else "TIOCSTI allowed"
    assert expected in log.read_text(), log.read_text()
    assert typed.read_text() == "typed\n", output


def _read_some(master: int) -> bytes:
    ready, _, _ = select.select([master], [], [], 0.05)
    if not ready:
        return b""
    try:
        return os.read(master, 4096)
    except OSError:
        return b""  # the other side closed (EIO)


# Turns echo and canonical mode off on its terminal, as a TUI that crashed (or an
# agent that wants the operator's next password in the clear) would, and leaves.
MODE_CHANGING_CLAUDE = """#!/usr/bin/python3
import termios
open({marker!r}, "w").close()
for fd in (0, 1, 2):
    try:
        modes = termios.tcgetattr(fd)
    except termios.error:
        continue
    modes[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, modes)
"""


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_terminal_modes_restored_when_not_in_the_foreground(tree: LaunchTree, mode: str) -> None:
    # `timeout` (without --foreground) puts the launcher in a process group of its
    # own: it is not the terminal's foreground group, yet it must put the modes back.
    require_tool("timeout")
    claude = tree.write_script(MODE_CHANGING_CLAUDE.format(marker=str(tree.marker)))
    config = tree.write_config(claude, mode=mode)
    shell = (
        f"timeout 60 {sys.executable} -m sandbox_setup.launcher --config {config}; "
        "echo LAUNCHER-EXIT $?; sleep 30"
    )
    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    assert before[3] & termios.ECHO and before[3] & termios.ICANON
    proc = subprocess.Popen(
        ["/bin/sh", "-c", shell],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=_as_ctty,
        env=launcher_env(),
        cwd=REPO,
    )
    output = b""
    try:
        deadline = time.monotonic() + 90
        while b"LAUNCHER-EXIT" not in output and time.monotonic() < deadline:
            output += _read_some(master)
        after = termios.tcgetattr(slave)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(slave)
        os.close(master)
    assert b"LAUNCHER-EXIT 0" in output, output
    assert tree.marker.exists(), "the fake Claude never ran"
    assert after[3] & termios.ECHO, "echo stayed off after the launcher ended"
    assert after[3] & termios.ICANON, "canonical mode stayed off after the launcher ended"
