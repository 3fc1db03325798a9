"""Overlapping sessions cannot launder a plant (docs/design.md invariant 8: trust is the
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

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.audit.workspace_scan import scan_findings
from sandbox_setup.boundary.trust_record import HostRecord
from tests.git_plants import RootGit, grant, ran_as_root
from tests.launch_fixtures import HOST_TRUST, LaunchTree, launch_tree, launcher_env
from tests.tools import REPO

pytestmark = pytest.mark.integration

# The agent: "hold NAME": plant from the root-made directory ``plain``, then hold until
# told; "swap NAME": wait until told, then plant again from ``plain2`` and hold again.
# Each step is a file in HOLD (inside the workspace: a sandbox sees nothing else of the
# host).
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
    wait("end")
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
    grant(ws, tree.agent.uid)
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
        _wait(hold / "b-swapped", second)
        # The audit judges against the same trusted state: the swapped plant is new
        # (before: "present", info, exit 0, since B's own start had seen one).
        found, _notes = scan_findings([str(tree.workspace)], HOST_TRUST)
        planted = [f for f in found if f.id == "audit.workspace.planted"]
        assert any("fsmonitor" in f.summary for f in planted), found
        (hold / "b-end").write_text("")
        told += _finish(second)
    finally:
        _kill(first, *([second] if second else []))
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
        (hold / "b-end").write_text("")
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


# The second session's agent, once the first session has ended: can it now write
# where its own session bound the first session's placeholders read-only?
PROBE = r"""#!/usr/bin/python3
import errno, json, os, sys, time
WS, HOLD = {workspace!r}, {hold!r}
role, name = sys.argv[-2], sys.argv[-1]
TARGETS = {targets!r}

def say(what):
    open(os.path.join(HOLD, name + "-" + what), "w").close()

def wait(what):
    while not os.path.exists(os.path.join(HOLD, name + "-" + what)):
        time.sleep(0.05)

def attempt(rel):
    path = os.path.join(WS, rel)
    try:
        if os.path.isdir(path):
            os.rmdir(path)
        elif os.path.lexists(path):
            os.unlink(path)
        with open(path, "w") as f:
            f.write("[core]\n\tfsmonitor = true\n")
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))

if role == "hold":
    say("planted")
    wait("go")
    print(json.dumps({{}}), flush=True)
else:
    say("started")
    wait("go")
    print(json.dumps({{rel: attempt(rel) for rel in TARGETS}}), flush=True)
"""

# Placeholders the first session makes (bwrap's empty mount-point directories at the
# workspace top, the prepared commondir and config.worktree of the repository).
PLACEHOLDERS = (".gitconfig", ".bashrc", "repo/.git/commondir", "repo/.git/config.worktree")


def test_the_first_sessions_end_leaves_the_second_sessions_mounts_in_place(
    tree: LaunchTree,
) -> None:
    """Unlinking a mount point another mount namespace uses detaches that mount there
    (Linux >= 3.18): the first session's end removed its placeholders while the second
    session had them bound read-only, and the second session's agent could then write
    them (reproduced on the code before: every write landed). Now only the last
    session of the workspace removes placeholders."""
    hold, _markers, git = prepare(tree)
    git(tree.workspace, "init", "-q", "repo")
    grant(tree.workspace, tree.agent.uid)
    agent = tree.write_script(
        PROBE.format(workspace=str(tree.workspace), hold=str(hold), targets=PLACEHOLDERS),
        name="claude-probe",
    )
    config = tree.write_config(agent, mode="sandbox")
    first = _launcher(config, "--", "hold", "a")
    second: subprocess.Popen[str] | None = None
    try:
        _wait(hold / "a-planted", first)
        for rel in PLACEHOLDERS:  # made by the first session, on the host
            assert os.path.lexists(tree.workspace / rel), rel
        second = _launcher(config, "--", "probe", "b")
        _wait(hold / "b-started", first, second)
        (hold / "a-go").write_text("")
        _finish(first)
        # The first session ended: the second still has them mounted, so they stay.
        for rel in PLACEHOLDERS:
            assert os.path.lexists(tree.workspace / rel), rel
        (hold / "b-go").write_text("")
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, (out, err)
    finally:
        _kill(first, *([second] if second else []))
    tried = json.loads(out.strip().splitlines()[-1])
    assert set(tried) == set(PLACEHOLDERS), tried
    assert not [rel for rel, done in tried.items() if done == "ok"], tried
    # The last session's end removed every placeholder of both.
    for rel in PLACEHOLDERS:
        assert not os.path.lexists(tree.workspace / rel), rel


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_a_session_of_the_enclosing_workspace_inherits_the_nested_ones_trusted_state(
    tree: LaunchTree, mode: str
) -> None:
    """Nested workspace paths are one family: A works in ``ws/sub`` and plants there, B
    (configured with ``ws``) starts while A runs, A ends, B's agent swaps the plant
    back in ``ws/sub``; B judges ``sub/`` against A's run's trusted state."""
    ws = tree.workspace
    sub = ws / "sub"
    sub.mkdir()
    for name in ("plain", "plain2", "hold"):
        (sub / name).mkdir()
    os.chown(ws, 0, 0)
    ws.chmod(0o755)
    grant(ws, tree.agent.uid)
    hold = sub / "hold"
    hold.chmod(0o777)
    markers = tree.base / "markers"
    markers.mkdir()
    markers.chmod(0o777)
    git = RootGit(tree.base / "root-home")
    agent = tree.write_script(
        AGENT.format(workspace=str(sub), hold=str(hold), markers=str(markers)),
        name="claude-agent",
    )
    inner = tree.write_config(agent, mode=mode, workspaces=[sub], name="inner.toml")
    outer = tree.write_config(agent, mode=mode, workspaces=[ws], name="outer.toml")
    first = _launcher(inner, "--", "hold", "a")
    second: subprocess.Popen[str] | None = None
    try:
        _wait(hold / "a-planted", first)
        second = _launcher(outer, "--", "swap", "b")
        _wait(hold / "b-started", first, second)
        (hold / "a-go").write_text("")
        told = _finish(first)
        (hold / "b-go").write_text("")
        (hold / "b-end").write_text("")
        told += _finish(second)
    finally:
        _kill(first, *([second] if second else []))
    assert (hold / "b-swapped").exists()
    git(sub, "status")
    assert ran_as_root(markers) == {}, (ran_as_root(markers), told)


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_a_killed_session_is_checked_by_the_last_live_one(tree: LaunchTree, mode: str) -> None:
    """B plants and its launcher is killed (no end) while A runs: until A ends the audit
    names B unfinished and its plant planted; A's end, the last of the workspace,
    checks what B left (its placeholders too) and settles the trusted state."""
    hold, markers, git = prepare(tree)
    agent = tree.write_script(
        AGENT.format(workspace=str(tree.workspace), hold=str(hold), markers=str(markers)),
        name="claude-agent",
    )
    config = tree.write_config(agent, mode=mode)
    first = _launcher(config, "--", "swap", "a")
    second: subprocess.Popen[str] | None = None
    try:
        _wait(hold / "a-started", first)
        second = _launcher(config, "--", "hold", "b")
        _wait(hold / "b-planted", first, second)
        second.kill()
        second.communicate(timeout=60)
        (hold / "b-go").write_text("")  # its agent (if it outlived the launcher) ends
        found, _notes = scan_findings([str(tree.workspace)], HOST_TRUST)
        ids = {f.id for f in found}
        assert {"audit.workspace.unfinished", "audit.workspace.planted"} <= ids, found
        (hold / "a-go").write_text("")
        (hold / "a-end").write_text("")
        told = _finish(first)
    finally:
        _kill(first, *([second] if second else []))
    git(tree.workspace, "status")
    assert ran_as_root(markers) == {}, (ran_as_root(markers), told)
    record = HostRecord.load(HOST_TRUST)
    ws = str(tree.workspace)
    assert record.trusted[ws].settled
    assert not [s for s in record.sessions.values() if s.touches(ws)], record.sessions
    assert not os.path.lexists(tree.workspace / ".bashrc")  # B's placeholder went too
    found, _notes = scan_findings([ws], HOST_TRUST)
    assert not [
        f for f in found if f.id.startswith(("audit.workspace.planted", "audit.workspace.unf"))
    ]


def test_sessions_started_at_once_are_all_in_the_record(tree: LaunchTree) -> None:
    """Starts and ends take the record's lock: four sessions started at the same moment
    are all recorded (none overwrote another's entry), and when the last ends the
    record holds none of them and the trusted state is settled."""
    hold, _markers, _git = prepare(tree)
    # Enough files that a start's snapshot (between reading the record and writing it)
    # takes a while: without the lock, starts overlapping there lose each other's entry.
    many = tree.workspace / "many"
    many.mkdir()
    for i in range(200):
        (many / f"d{i}").mkdir()
        for j in range(100):
            (many / f"d{i}" / f"f{j}").touch()
    agent = tree.write_script(
        PROBE.format(workspace=str(tree.workspace), hold=str(hold), targets=()),
        name="claude-probe",
    )
    config = tree.write_config(agent, mode="user")
    names = ("a", "b", "c", "d")
    procs = [_launcher(config, "--", "hold", name) for name in names]
    ws = str(tree.workspace)
    try:
        for name in names:
            _wait(hold / f"{name}-planted", *procs)
        record = HostRecord.load(HOST_TRUST)
        live = [s for s in record.sessions.values() if s.alive and s.touches(ws)]
        assert len(live) == len(names), record.sessions
        assert not record.trusted[ws].settled
        for name in names:
            (hold / f"{name}-go").write_text("")
        for proc in procs:
            _finish(proc)
    finally:
        _kill(*procs)
    record = HostRecord.load(HOST_TRUST)
    assert record.trusted[ws].settled
    assert not [s for s in record.sessions.values() if s.touches(ws)], record.sessions
