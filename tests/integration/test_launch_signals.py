"""Signals reach Claude inside the verified sandbox; the launcher exits with its status.

On this kind of host (``dev.tty.legacy_tiocsti`` = 1) bwrap runs with
``--new-session``, so the terminal's signals reach only the launcher, which
must forward them; these tests send them to the launcher the same way.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch_fixtures import LaunchTree, launch_tree, launcher_env, tree_processes
from tests.tools import REPO

pytestmark = pytest.mark.integration

TRAPPING_CLAUDE = """#!/bin/sh
touch {marker}
trap 'echo WINCH >> {log}' WINCH
trap 'echo TERM >> {log}; exit 42' TERM
trap 'echo INT >> {log}; exit 43' INT
trap 'echo HUP >> {log}; exit 44' HUP
echo ready > {ready}
i=0
while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
exit 9
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


def _wait_for(path: Path, text: str = "", timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never contained {text!r}")


def _start(tree: LaunchTree, mode: str = "sandbox") -> tuple[subprocess.Popen[str], Path]:
    log = tree.workspace / "signals.log"
    ready = tree.workspace / "ready"
    claude = tree.write_script(TRAPPING_CLAUDE.format(marker=tree.marker, log=log, ready=ready))
    config = tree.write_config(claude, mode=mode)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config)],
        env=launcher_env(),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(ready)
    return proc, log


# user mode runs Claude in its own session too where TIOCSTI works (this host).
@pytest.mark.parametrize("mode", ["sandbox", "user"])
@pytest.mark.parametrize(
    ("signum", "name", "status"),
    [(signal.SIGTERM, "TERM", 42), (signal.SIGINT, "INT", 43), (signal.SIGHUP, "HUP", 44)],
)
def test_signal_reaches_claude_and_status_comes_back(
    tree: LaunchTree, signum: int, name: str, status: int, mode: str
) -> None:
    proc, log = _start(tree, mode)
    try:
        proc.send_signal(signal.SIGWINCH)
        _wait_for(log, "WINCH")
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == status, stderr
    assert name in log.read_text()


def test_killing_the_launcher_ends_the_sandbox(tree: LaunchTree) -> None:
    proc, _ = _start(tree)
    assert tree_processes(tree) != []
    proc.kill()  # SIGKILL: nothing to forward, --die-with-parent must act
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and tree_processes(tree):
        time.sleep(0.05)
    assert tree_processes(tree) == []
