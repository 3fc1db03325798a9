"""Root's walks over an agent-writable workspace (the ACL grant, its undo, the scan)
with real setfacl and a real kernel: private files stay private, hard-linked
inodes are not touched, and a directory swapped for a symlink to a FIFO mid-walk
neither hangs the walk nor gets the FIFO opened.

"Nothing was opened" is checked with inotify on the FIFOs: the kernel reports
every open of them (``IN_OPEN``), also one that did not block; opens through
``O_PATH`` or refused by ``O_DIRECTORY`` are not opens. A control proves the
watch sees an open through the link.
"""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.configure.accounts import users
from tests.integration.containers import make_workdir
from tests.tools import REPO, require_root, require_tool

pytestmark = pytest.mark.integration

GID = 4321  # no group needs to exist for an ACL entry
IN_OPEN = 0x20
IN_ACCESS = 0x01


@pytest.fixture
def base() -> Iterator[Path]:
    require_root()
    require_tool("setfacl")
    path = make_workdir("ws-walk-")
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


def _acl(path: Path) -> str:
    return subprocess.run(
        ["getfacl", "-n", "-p", "--omit-header", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _grant(ws: Path, **kwargs: bool) -> users.AclWalkReport:
    top = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return users.grant_workspace(top, GID, **kwargs)
    finally:
        os.close(top)


def _private_tree(ws: Path) -> None:
    (ws / "src").mkdir(parents=True)
    (ws / "src/main.py").write_text("print()\n")
    (ws / ".env").write_text("SECRET=1\n")
    (ws / ".env").chmod(0o600)
    (ws / "secrets").mkdir(mode=0o700)
    (ws / "secrets/key.pem").write_text("k\n")
    (ws / "secrets/key.pem").chmod(0o644)  # readable, but inside a private directory


def test_private_files_stay_private(base: Path) -> None:
    ws = base / "ws"
    _private_tree(ws)
    report = _grant(ws)
    assert sorted(report.private) == [".env", "secrets"]
    assert report.lines(ws) == [f"stays private: 2 files, e.g. {ws}/.env"]
    assert f"group:{GID}:rw" in _acl(ws / "src/main.py")
    for private in (".env", "secrets", "secrets/key.pem"):
        assert f"group:{GID}" not in _acl(ws / private), private
    assert (ws / ".env").stat().st_mode & 0o777 == 0o600
    assert not (ws / "secrets").stat().st_mode & 0o2000

    top = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sorted(users.survey_workspace(top).private) == [".env", "secrets"]
    finally:
        os.close(top)


def test_private_files_open_up_only_when_included(base: Path) -> None:
    ws = base / "ws"
    _private_tree(ws)
    report = _grant(ws, include_private=True)
    assert report.private == []
    for path in (".env", "secrets", "secrets/key.pem"):
        assert f"group:{GID}:rw" in _acl(ws / path), path


def test_a_hard_linked_inode_is_never_changed(base: Path) -> None:
    """The agent hard-links a file from outside (the same file system) into the
    workspace: neither the grant nor the undo touch that inode."""
    ws = base / "ws"
    ws.mkdir()
    outside = base / "outside.conf"
    outside.write_text("root's\n")
    outside.chmod(0o644)
    os.link(outside, ws / "linked.conf")
    before = (_acl(outside), outside.stat().st_mode)
    top = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        snapshot = users.acl_snapshot(top, GID)
        report = users.grant_workspace(top, GID)
        assert report.hardlinked == ["linked.conf"]
        assert (_acl(outside), outside.stat().st_mode) == before
        undo = users.AclWalkReport()
        users.revoke_workspace(top, snapshot, report=undo)
        assert undo.hardlinked == ["linked.conf"]
    finally:
        os.close(top)
    assert (_acl(outside), outside.stat().st_mode) == before


class FifoWatch:
    """inotify on FIFOs: did anything open them?"""

    def __init__(self, paths: list[Path]) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0
        for path in paths:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN | IN_ACCESS)
            assert wd >= 0, path

    def events(self) -> list[int]:
        masks = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return masks
            offset = 0
            while offset < len(data):
                _wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
                masks.append(mask)
                offset += 16 + length

    def close(self) -> None:
        os.close(self.fd)


def _swapper(ws: Path, fifo: Path, stop: threading.Event, swaps: list[int]) -> None:
    """Swap ws/d between a directory and a symlink to the FIFO, and ws/f between a
    regular file and a symlink to it, as fast as it can until told to stop."""
    real_dir, real_file = ws / "d.real", ws / "f.real"
    while not stop.is_set():
        for name, real in (("d", real_dir), ("f", real_file)):
            path = ws / name
            try:
                os.rename(path, real)
                os.symlink(fifo, path)
                time.sleep(0)
                os.unlink(path)
                os.rename(real, path)
            except OSError:
                pass  # a walk holds it busy, or the other half of the swap is late
        swaps[0] += 1


WALKS = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {repo!r})
    from sandbox_setup.configure.accounts import users
    from sandbox_setup.boundary import scan as workspace_scan
    ws, gid, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for _ in range(rounds):
        top = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
        try:
            snap = users.acl_snapshot(top, gid)
            users.grant_workspace(top, gid)
            users.survey_workspace(top)
            users.revoke_workspace(top, snap)
        finally:
            os.close(top)
        before = workspace_scan.snapshot([ws])
        workspace_scan.scan([ws], before)
    print("walks done")
    """
)


def test_the_fifo_swap_race_neither_hangs_nor_opens_the_fifo(base: Path) -> None:
    ws = base / "ws"
    (ws / "d/sub").mkdir(parents=True)
    for i in range(20):
        (ws / f"d/file{i}").write_text("x\n")
        (ws / f"d/sub/file{i}").write_text("x\n")
    (ws / "f").write_text("x\n")
    (ws / "d/.git").mkdir()  # the scan opens what it finds in a repository
    (ws / "d/.git/config").write_text("[core]\n\tbare = false\n")
    fifo = base / "fifo"
    os.mkfifo(fifo)
    os.mkfifo(ws / "pipe")  # and one lying in the workspace itself
    watch = FifoWatch([fifo, ws / "pipe"])
    stop, swaps = threading.Event(), [0]
    swapper = threading.Thread(target=_swapper, args=(ws, fifo, stop, swaps), daemon=True)
    swapper.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", WALKS.format(repo=str(REPO)), str(ws), str(GID), "40"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        stop.set()
        swapper.join(timeout=10)
    events = watch.events()
    watch.close()
    assert proc.returncode == 0 and "walks done" in proc.stdout, proc.stderr
    assert swaps[0] > 10, "the swap loop barely ran; the race was not exercised"
    assert [m for m in events if m & IN_OPEN] == [], "a walk opened the FIFO"


FWALK_SWAP = textwrap.dedent(
    """
    import os, sys
    ws, fifo = sys.argv[1], sys.argv[2]
    walk = os.fwalk(ws, follow_symlinks=False)
    next(walk)  # ws listed: d is a directory
    os.rename(os.path.join(ws, "d"), os.path.join(ws, "d.real"))
    os.symlink(fifo, os.path.join(ws, "d"))
    list(walk)  # fwalk opens "d" by name, following the new link to the FIFO
    print("fwalk went on")
    """
)


def test_the_watch_sees_an_open_through_the_link(base: Path) -> None:
    """Control: opening the FIFO through a symlink, even non-blocking, is seen; and
    the walk the ACL code used before (os.fwalk) does open it on the same swap, and
    blocks there (the hang of issue 12), so the race test above can fail."""
    fifo = base / "fifo"
    os.mkfifo(fifo)
    link = base / "link"
    link.symlink_to(fifo)
    watch = FifoWatch([fifo])
    os.close(os.open(link, os.O_RDONLY | os.O_NONBLOCK))
    assert any(m & IN_OPEN for m in watch.events())

    ws = base / "ws"
    (ws / "d").mkdir(parents=True)
    child = subprocess.Popen(
        [sys.executable, "-c", FWALK_SWAP, str(ws), str(fifo)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        out, _ = child.communicate(timeout=3)
        hung = False
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
        hung = True
    opened = any(m & IN_OPEN for m in watch.events())
    watch.close()
    assert hung or opened, f"fwalk neither blocked nor opened the FIFO: {out}"
