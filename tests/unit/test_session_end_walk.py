"""How the launcher finds what is left of a session when it ends (docs/design.md invariant 10):
its own tree, walked through ``/proc/PID/task/TID/children``, not every process in /proc.

The walk runs on real process trees (a child subreaper in a subprocess of its own, so
the test run's processes never become anyone's reaper); the two races the walk must
survive (an orphan reparented while the tree is read) are replayed over a fake reader.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sandbox_setup.base import process_tree
from sandbox_setup.base.process_tree import children, is_running, running_descendants
from sandbox_setup.base.processes import descendants
from tests.tools import REPO

HAS_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")
needs_children_files = pytest.mark.skipif(
    not HAS_CHILDREN_FILES, reason="this kernel has no /proc/PID/task/TID/children"
)


@needs_children_files
def test_the_walk_finds_children_and_grandchildren_as_the_full_walk_does() -> None:
    script = "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
    tree = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = 100
        while deadline and len(descendants(os.getpid())) < 2:
            deadline -= 1
            time.sleep(0.05)
        full = sorted(p for p in descendants(os.getpid()) if is_running(p))
        walked = running_descendants(os.getpid())
        assert walked is not None
        assert len(full) >= 2  # the child and its sleep
        assert sorted(walked) == full
        assert tree.pid in walked
    finally:
        for pid in reversed(descendants(os.getpid())):
            os.kill(pid, signal.SIGKILL)
        tree.wait()


def test_a_zombie_is_not_running_and_a_gone_pid_has_no_children() -> None:
    child = subprocess.Popen(["true"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    try:
        assert not is_running(child.pid)
        assert children(child.pid) == []
    finally:
        child.wait()
    assert children(child.pid) == []  # reaped: gone
    assert is_running(os.getpid())


def test_a_kernel_without_children_files_means_the_full_walk(tmp_path: Path) -> None:
    (tmp_path / "7" / "task" / "7").mkdir(parents=True)  # a thread, no children file
    assert children(7, tmp_path) is None
    assert running_descendants(7, tmp_path) is None


def test_an_orphan_reparented_during_the_walk_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # The launcher (1) had one child (2), seen a zombie; meanwhile 2's child (3), still
    # running, was reparented to 1 after 1's list was read: the re-read must catch it.
    reads = {1: [[2], [2, 3], [2, 3]], 2: [[], []], 3: [[]]}
    monkeypatch.setattr(process_tree, "children", lambda pid, proc=None: reads[pid].pop(0))
    monkeypatch.setattr(process_tree, "is_running", lambda pid, proc=None: pid == 3)
    assert running_descendants(1) == [3]


def test_the_walk_ends_only_when_the_second_read_adds_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two zombies, the second reparented during the first walk: empty, after two walks.
    reads = {1: [[2], [2, 3], [2, 3]], 2: [[], []], 3: [[]]}
    monkeypatch.setattr(process_tree, "children", lambda pid, proc=None: reads[pid].pop(0))
    monkeypatch.setattr(process_tree, "is_running", lambda pid, proc=None: False)
    assert running_descendants(1) == []
    assert reads[1] == []  # the list was read three times: first, again, once more


SUBREAPER_SESSION = textwrap.dedent(
    """
    import ctypes, os, sys, time
    sys.path.insert(0, {repo!r})
    from sandbox_setup.launcher.session.runner import (
        PR_SET_CHILD_SUBREAPER, _prctl, kill_descendants,
    )
    from sandbox_setup.base.process_tree import children
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    # A child that double-forks a daemon in a session of its own and exits: the daemon
    # is an orphan, reparented to this subreaper; it forks a grandchild of its own.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            os.write(w, b"x")
            time.sleep(60)
        os._exit(0)
    os.waitpid(pid, 0)
    os.read(r, 1)
    daemon = children(os.getpid())
    killed = kill_descendants(timeout=5)
    print(len(daemon), len(killed), children(os.getpid()) or [], flush=True)
    """
)


@needs_children_files
def test_a_subreaper_kills_its_orphaned_daemon_and_the_daemons_child() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SUBREAPER_SESSION.format(repo=str(REPO))],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    daemon_children, killed, left = done.stdout.split(maxsplit=2)
    assert daemon_children == "1"  # the daemon, reparented to the subreaper
    assert killed == "2"  # the daemon and its child
    assert left.strip() == "[]"
