"""Overlapping sessions cannot launder a plant (DESIGN.md invariant 8: trust is the
workspace's, not a session's). Real git, real ``sandbox-launch`` sessions, both modes.

The reproduction: while session A runs, its agent renames a root-made directory into
place as the workspace's ``.git``, with ``core.fsmonitor`` set to a command. Session B
starts (the plant is there). A ends; its check moves the plant aside. B's agent then
swaps in another root-made directory with the identical config, and B ends. Before,
B's check compared with B's own start snapshot, which held the same setting, and kept
it: root's ``git status`` ran the command as uid 0. Now both ends judge against the
trusted state of the run A began, so the second plant is new too.

The ``--run`` variant: B is root's own review, ``sandbox-launch --run PROGRAM``, and the
code the agent chose runs inside it (``git log``'s pager of the agent's; here the
program itself stands in for it): it waits for A's end and puts the plant back.

Root's git has a temp HOME with ``safe.directory = *`` and no protected include of
layer 1, so only the sessions' checks hold.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.boundary.trust_record import HostRecord
from tests.git_plants import RootGit, grant, ran_as_root
from tests.launch_fixtures import HOST_TRUST, LaunchTree, launch_tree, launcher_env
from tests.tools import REPO

pytestmark = pytest.mark.integration

# The agent: "hold NAME": plant from the root-made directory ``plain``, then hold until
# told; "swap NAME": wait until told, then plant again from ``plain2``. Each step is a
# file in HOLD (inside the workspace: a sandbox sees nothing else of the host).
AGENT = r"""#!/usr/bin/python3
import json, os, sys, time
WS, HOLD, M = {workspace!r}, {hold!r}, {markers!r}
role, name = sys.argv[-2], sys.argv[-1]

def say(what):
    open(os.path.join(HOLD, name + "-" + what), "w").close()

def wait(what):
    while not os.path.exists(os.path.join(HOLD, name + "-" + what)):
        time.sleep(0.05)

def plant(src):
    d = os.path.join(WS, src)
    os.makedirs(os.path.join(d, "objects"), exist_ok=True)
    os.makedirs(os.path.join(d, "refs", "heads"), exist_ok=True)
    with open(os.path.join(d, "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    with open(os.path.join(d, "config"), "w") as f:
        f.write('[core]\n\trepositoryformatversion = 0\n\tbare = false\n'
                '\tfsmonitor = "id -u >> %s/fsmonitor; true"\n' % M)
    dotgit = os.path.join(WS, ".git")
    if os.path.lexists(dotgit):
        os.rename(dotgit, os.path.join(WS, "moved-" + src))
    os.rename(d, dotgit)

if role == "hold":
    plant("plain")
    say("planted")
    wait("go")
else:
    say("started")
    wait("go")
    plant("plain2")
    say("swapped")
print(json.dumps({{"role": role, "done": True}}), flush=True)
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("git", "setfacl")


def prepare(tree: LaunchTree) -> tuple[Path, Path, RootGit]:
    """A root-owned workspace with root-made ``plain`` and ``plain2`` (the agent fills
    and renames them through the ACLs the apply gives it), a hold directory in it and
    markers outside it."""
    ws = tree.workspace
    for name in ("plain", "plain2", "hold"):
        (ws / name).mkdir()
    (ws / "README").write_text("the operator's project\n")
    os.chown(ws, 0, 0)
    ws.chmod(0o755)
    grant(ws)
    (ws / "hold").chmod(0o777)
    markers = tree.base / "markers"
    markers.mkdir()
    markers.chmod(0o777)
    return ws / "hold", markers, RootGit(tree.base / "root-home")


def _launcher(config: Path, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config), *args]
    env = launcher_env({"XDG_STATE_HOME": str(config.parent / "state")})
    return subprocess.Popen(
        argv, env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait(path: Path, *procs: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90
    while not path.exists():
        for proc in procs:
            assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.05)


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (out, err)
    return err


def _kill(*procs: subprocess.Popen[str]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def two_sessions(tree: LaunchTree, mode: str, review: bool) -> tuple[Path, RootGit, str]:
    """A plants and holds; B starts; A ends; B's agent swaps the plant back; B ends."""
    hold, markers, git = prepare(tree)
    agent = tree.write_script(
        AGENT.format(workspace=str(tree.workspace), hold=str(hold), markers=str(markers)),
        name="claude-agent",
    )
    config = tree.write_config(agent, mode=mode)
    first = _launcher(config, "--", "hold", "a")
    second: subprocess.Popen[str] | None = None
    try:
        _wait(hold / "a-planted", first)
        assert (tree.workspace / ".git" / "config").exists()
        if review:
            second = _launcher(config, "--run", str(agent), "swap", "b")
        else:
            second = _launcher(config, "--", "swap", "b")
        _wait(hold / "b-started", first, second)
        (hold / "a-go").write_text("")
        told = _finish(first)
        # A's end moved the first plant aside (B still runs).
        assert "fsmonitor" in told, told
        (hold / "b-go").write_text("")
        told += _finish(second)
    finally:
        _kill(first, *([second] if second else []))
    assert (hold / "b-swapped").exists()
    return markers, git, told


@pytest.mark.parametrize("review", [False, True], ids=["claude", "run"])
@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_overlapping_sessions_cannot_launder_a_plant(
    tree: LaunchTree, mode: str, review: bool
) -> None:
    markers, git, told = two_sessions(tree, mode, review)
    git(tree.workspace, "status")
    git(tree.workspace, "diff")
    assert ran_as_root(markers) == {}, (ran_as_root(markers), told)
    # The last session's complete check settled the workspace's trusted state, and no
    # session of it is left in the host-wide record.
    record = HostRecord.load(HOST_TRUST)
    ws = str(tree.workspace)
    assert record.trusted[ws].settled
    assert not [s for s in record.sessions.values() if s.touches(ws)], record.sessions


def test_the_trusted_state_is_the_hosts_whatever_the_state_directory(tree: LaunchTree) -> None:
    """Two launches with different XDG_STATE_HOME (two shells of root's) share one
    record: the second joins the run of the first."""
    hold, markers, git = prepare(tree)
    agent = tree.write_script(
        AGENT.format(workspace=str(tree.workspace), hold=str(hold), markers=str(markers)),
        name="claude-agent",
    )
    other = tree.base / "other-config"
    other.mkdir()
    first = _launcher(tree.write_config(agent, mode="user"), "--", "hold", "a")
    second: subprocess.Popen[str] | None = None
    try:
        _wait(hold / "a-planted", first)
        second = _launcher(
            tree.write_config(agent, mode="user", directory=other), "--", "swap", "b"
        )
        _wait(hold / "b-started", first, second)
        record = HostRecord.load(HOST_TRUST)
        ws = str(tree.workspace)
        live = [s for s in record.sessions.values() if s.touches(ws) and s.alive]
        assert len(live) == 2, record.sessions
        # B inherited the state A's run began with: no .git in it.
        assert not [rel for rel in record.trusted[ws].marks if rel.startswith(".git")]
        (hold / "a-go").write_text("")
        _finish(first)
        (hold / "b-go").write_text("")
        _finish(second)
    finally:
        _kill(first, *([second] if second else []))
    git(tree.workspace, "status")
    assert ran_as_root(markers) == {}
