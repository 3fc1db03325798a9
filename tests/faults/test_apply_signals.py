"""SIGINT, SIGTERM and SIGHUP inside account creation roll the apply back, and a
kill -9 there is finished by ``--undo`` (issue 26): afterwards every file under the
root, the shadow-utils ``-`` backups (``etc/passwd-``, ``group-``, ``shadow-``,
``gshadow-``) included, is byte for byte as before (content, mode, owner; the
workspace ACLs too).

The point inside account creation is made by a slow stand-in: ``groupadd`` and
``useradd`` on the apply's PATH are small scripts that run the real tool and, for
the one under test, sleep before or after it (or run it in the background and wait,
so a kill -9 of the group lands while the real tool runs). The script writes its
pid to a mark file when it reaches that point; the test then sends the signal.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import REPO, SANDBOX, make_target_root, run_cli
from tests.faults.conftest import FaultRow
from tests.faults.tmpfs_root import tree
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

TOOLS = ("groupadd", "useradd")
STAND_IN = """#!/bin/sh
real={real}
if [ "$SLOW_TOOL" = {name} ] && [ "$SLOW_WHEN" = before ]; then
    echo $$ > "$SLOW_MARK.tmp"; mv "$SLOW_MARK.tmp" "$SLOW_MARK"; sleep 3
fi
if [ "$SLOW_TOOL" = {name} ] && [ "$SLOW_WHEN" = inside ]; then
    "$real" "$@" &
    child=$!
    echo $child > "$SLOW_MARK.tmp"; mv "$SLOW_MARK.tmp" "$SLOW_MARK"
    wait $child
    exit $?
fi
"$real" "$@"
rc=$?
if [ "$SLOW_TOOL" = {name} ] && [ "$SLOW_WHEN" = after ]; then
    echo $$ > "$SLOW_MARK.tmp"; mv "$SLOW_MARK.tmp" "$SLOW_MARK"; sleep 3
fi
exit $rc
"""


@pytest.fixture
def stand_ins(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    # Other runs on the machine may add their own live accounts: what must never reach
    # the host is this apply's agent.
    assert not _host_has_agent()
    directory = tmp_path / "bin"
    directory.mkdir()
    for name in TOOLS:
        real = shutil.which(name)
        assert real is not None
        script = directory / name
        script.write_text(STAND_IN.format(real=real, name=name))
        script.chmod(0o755)
    yield directory
    assert not _host_has_agent(), "the apply reached the host's account files"


def _host_has_agent() -> bool:
    return any(line.startswith("claude-agent:") for line in open("/etc/passwd"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _start_apply(
    root: Path, stand_ins: Path, tool: str, when: str
) -> tuple[subprocess.Popen[str], int]:
    mark = root.parent / "mark"
    env = {
        **os.environ,
        "PATH": f"{stand_ins}:{os.environ['PATH']}",
        "SLOW_TOOL": tool,
        "SLOW_WHEN": when,
        "SLOW_MARK": str(mark),
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "sandbox_setup", "--headless", "--root", str(root), "--yes",
         *SANDBOX],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not mark.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            out, err = child.communicate()
            raise AssertionError(f"the apply never reached {when} {tool}: {out}{err}")
        time.sleep(0.01)
    return child, int(mark.read_text())


POINTS = [(tool, when) for tool in TOOLS for when in ("before", "after")]


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: signal.Signals(s).name
)
@pytest.mark.parametrize(("tool", "when"), POINTS)
def test_a_signal_inside_account_creation_rolls_back_byte_for_byte(
    tmp_path: Path, stand_ins: Path, sig: signal.Signals, tool: str, when: str, fault: FaultRow
) -> None:
    name = signal.Signals(sig).name
    fault.expect(
        f"{name} to the apply {when} {tool} runs",
        "rolled back: exit 130, one line naming the signal; every file under the root "
        "(shadow '-' backups, modes, owners, ACLs) byte for byte as before",
    )
    root = make_target_root(tmp_path / "root")
    before = tree(root)
    child, _ = _start_apply(root, stand_ins, tool, when)
    os.kill(child.pid, sig)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130, (child.returncode, out, err)
    assert f"sandbox-setup: interrupted by {name}: rolled back" in err, err
    assert "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.startswith("sandbox-setup:")] == [
        err.strip().splitlines()[-1]
    ], err
    after = tree(root)
    assert after == before, sorted(
        k for k in set(after) | set(before) if after.get(k) != before.get(k)
    )
    undo = run_cli("--undo", "--yes", "--root", str(root))
    assert undo.returncode == 0 and "Nothing to undo" in undo.stdout, undo.stdout + undo.stderr
    fault.saw(f"exit 130: {err.strip().splitlines()[-1]}; tree byte for byte as before")


@pytest.mark.parametrize("who", ["the apply", "its process group"])
@pytest.mark.parametrize(("tool", "when"), [*POINTS, *[(t, "inside") for t in TOOLS]])
def test_kill_9_inside_account_creation_then_undo_is_byte_for_byte(
    tmp_path: Path, stand_ins: Path, who: str, tool: str, when: str, fault: FaultRow
) -> None:
    fault.expect(
        f"kill -9 of {who} {when} {tool} runs, then --undo --yes",
        "the undo exits 0 and every file under the root (shadow '-' backups included) is "
        "byte for byte as before",
    )
    root = make_target_root(tmp_path / "root")
    before = tree(root)
    child, pid = _start_apply(root, stand_ins, tool, when)
    if who == "the apply":
        os.kill(child.pid, signal.SIGKILL)
    else:
        os.killpg(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)
    deadline = time.monotonic() + 60
    while _alive(pid) and time.monotonic() < deadline:  # an orphaned tool finishes first
        time.sleep(0.05)
    undo = run_cli("--undo", "--yes", "--root", str(root))
    assert undo.returncode == 0, undo.stdout + undo.stderr
    after = tree(root)
    changed = sorted(k for k in set(after) | set(before) if after.get(k) != before.get(k))
    left = {k: (root / k).read_bytes()[:40] for k in changed if (root / k).is_file()}
    assert after == before, (changed, left, undo.stdout)
    fault.saw(f"undo exit 0 ({undo.stdout.strip().splitlines()[0][:80]}); tree as before")


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: signal.Signals(s).name
)
@pytest.mark.parametrize(("tool", "when"), [("groupadd", "before"), ("useradd", "inside")])
def test_a_signal_to_the_process_group_inside_account_creation_rolls_back(
    tmp_path: Path, stand_ins: Path, sig: signal.Signals, tool: str, when: str, fault: FaultRow
) -> None:
    """Ctrl-C at the terminal, a hangup or ``kill -TERM -PGID`` reach the whole process
    group: the account tool runs in a session of its own, so it finishes, and the apply
    rolls back (never "groupadd failed (exit -2)", exit 2)."""
    name = signal.Signals(sig).name
    fault.expect(
        f"{name} to the apply's process group {when} {tool} runs",
        "rolled back: exit 130, one line naming the signal; the tree byte for byte as before",
    )
    root = make_target_root(tmp_path / "root")
    before = tree(root)
    child, _ = _start_apply(root, stand_ins, tool, when)
    os.killpg(child.pid, sig)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130, (child.returncode, out, err)
    assert f"sandbox-setup: interrupted by {name}: rolled back" in err, err
    assert "failed (exit" not in err and "Traceback" not in err, err
    after = tree(root)
    assert after == before, sorted(
        k for k in set(after) | set(before) if after.get(k) != before.get(k)
    )
    fault.saw(f"exit 130: {err.strip().splitlines()[-1]}; tree byte for byte as before")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(word) for word in text.split()]


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: signal.Signals(s).name
)
def test_a_signal_during_the_probes_is_exit_130_with_one_line(
    tmp_path: Path, sig: signal.Signals, fault: FaultRow
) -> None:
    """The first process the apply starts is a probe: a signal then (the first ~0.6 s
    of an apply) is exit 130 and one line naming it, never a silent death."""
    require_root()
    name = signal.Signals(sig).name
    fault.expect(
        f"{name} to the apply while its first probe runs",
        f"exit 130, 'sandbox-setup: interrupted by {name}', nothing written",
    )
    root = make_target_root(tmp_path / "root")
    before = tree(root)
    child = subprocess.Popen(
        [sys.executable, "-m", "sandbox_setup", "--headless", "--root", str(root), "--yes",
         *SANDBOX],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not _children(child.pid):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the apply started no probe"
        time.sleep(0.002)
    os.kill(child.pid, sig)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, (child.returncode, out, err)
    assert err.strip().splitlines()[-1] == f"sandbox-setup: interrupted by {name}", err
    assert "Traceback" not in err, err
    assert tree(root) == before
    fault.saw(f"exit 130: {err.strip().splitlines()[-1]}")
