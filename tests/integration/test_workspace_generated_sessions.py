"""Issue 24's generator of plants, written by the agent inside real sessions, both modes.

Each hypothesis example draws a batch of 4 to 8 plants (:data:`tests.git_plants.plants`:
git's command-valued configuration keys in random case, hooks, attribute drivers,
an in-progress ``rebase-merge/``, in one of five repository layouts). Plant *i*
goes into slot *i* of the workspace, an operator-style repository of root's
(:class:`tests.git_plants.Slot`: a commit, a root-made ``app/lib``, a linked
worktree, a local remote outside the workspace with a newer commit).

ONE real ``sandbox-launch`` session (``sandbox`` or ``user`` mode, as the agent) runs a
stand-in agent that makes every write of the batch; the session ends and the
launcher's own end scan runs. Then root's real git runs ``status``, ``diff``,
``log``, ``commit``, ``checkout``, ``rebase --continue`` and ``pull`` from the local
remote in every directory each plant concerns, and no marker may have been
written by uid 0. Root's git has a temp HOME with ``safe.directory = *`` and no
protected include of layer 1: the session (read-only mounts in sandbox mode) and
the end scan have to hold.

The examples are derandomized and use no example database, so CI runs the same
batches every time; a failure prints the batch (hypothesis's falsifying example
and the assertion). The control writes a fixed batch (one plant per layout) as
the agent on the host, without a session: root's git runs every one of them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.git_plants import (
    LAYOUTS,
    RootGit,
    Slot,
    agent_script,
    control_plant,
    grant,
    plants,
    ran_as_root,
)
from tests.launch_fixtures import (
    LaunchTree,
    as_agent,
    launcher_env,
    make_launch_tree,
    run_launcher,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

SLOTS = 8
batches = st.lists(plants, min_size=4, max_size=SLOTS)
CONTROL = [control_plant(layout) for layout in LAYOUTS]


@dataclass
class Workspace:
    """The launch tree, root's git, and the workspace's template to restore."""

    tree: LaunchTree
    git: RootGit
    template: Path
    markers: Path
    runs: int = 0

    def fresh(self) -> list[Slot]:
        """The workspace as it was before any session (``cp -a``: owners, modes,
        ACLs, at the same path, so the worktrees' absolute paths stay right), no
        markers, and the slots."""
        ws = self.tree.workspace
        shutil.rmtree(ws)
        subprocess.run(["cp", "-a", str(self.template), str(ws)], check=True)
        for marker in self.markers.iterdir():
            marker.unlink()
        return slots(self)

    def plan(
        self, batch: list[dict[str, Any]]
    ) -> tuple[Path, list[list[str]], list[tuple[Slot, list[Path]]]]:
        """The agent's program for ``batch`` (plant i in slot i), its writes, and
        where root's git runs for each slot."""
        writes: list[list[str]] = []
        where: list[tuple[Slot, list[Path]]] = []
        for slot, spec in zip(self.fresh(), batch, strict=False):
            made, dirs = slot.writes(spec)
            writes += made
            where.append((slot, dirs))
        self.runs += 1
        program = self.tree.write_script(agent_script(writes), name=f"claude-plants-{self.runs}")
        return program, writes, where


def slots(ws: Workspace) -> list[Slot]:
    base = ws.tree.base
    return [
        Slot(
            ws.git, ws.tree.workspace / f"s{i}", base / "remotes" / f"s{i}.git", ws.markers, f"s{i}"
        )
        for i in range(SLOTS)
    ]


@pytest.fixture(scope="module")
def workspace() -> Iterator[Workspace]:
    require_root()
    for tool in ("bwrap", "setpriv", "git", "setfacl", "cp"):
        require_tool(tool)
    with make_launch_tree() as tree:
        markers = tree.base / "markers"
        markers.mkdir()
        markers.chmod(0o777)
        (tree.base / "remotes").mkdir()
        made = Workspace(tree, RootGit(tree.base / "root-home"), tree.base / "template", markers)
        ws = tree.workspace
        os.chown(ws, 0, 0)
        ws.chmod(0o755)
        for slot in slots(made):
            slot.setup()
        grant(ws, tree.agent.uid)
        subprocess.run(["cp", "-a", str(ws), str(made.template)], check=True)
        yield made


def _done(stdout: str) -> list[str]:
    return list(json.loads(stdout.strip().splitlines()[-1]))


def test_the_control_root_runs_each_layouts_plant_without_a_session(workspace: Workspace) -> None:
    program, writes, where = workspace.plan(CONTROL)
    result = as_agent(workspace.tree, [str(program)])
    assert result.returncode == 0, result.stderr
    assert set(_done(result.stdout)) == {"ok"}, list(zip(writes, _done(result.stdout), strict=True))
    for slot, dirs in where:
        slot.review(dirs)
    fired = {name.split("-")[0] for name in ran_as_root(workspace.markers)}
    assert fired == {slot.tag for slot, _ in where}, (fired, CONTROL)


@pytest.mark.parametrize("mode", ["sandbox", "user"])
@settings(
    max_examples=25,
    derandomize=True,
    database=None,
    deadline=None,
    # no shrinking: each step is a session; the failing batch is printed whole
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@example(batch=CONTROL)
@given(batch=batches)
def test_no_plant_the_agent_writes_in_a_session_runs_as_root(
    workspace: Workspace, mode: str, batch: list[dict[str, Any]]
) -> None:
    program, writes, where = workspace.plan(batch)
    config = workspace.tree.write_config(program, mode=mode)
    state = workspace.tree.base / f"state-{workspace.runs}"
    result = run_launcher(config, env=launcher_env({"XDG_STATE_HOME": str(state)}))
    assert result.returncode == 0, result.stderr
    done = _done(result.stdout)
    # user mode: no read-only mounts, every write lands. sandbox mode: only the
    # session's read-only mounts in root's .git refuse (config, hooks, info, and
    # config.worktree: a 0444 placeholder of root's, so EACCES); outside .git, all land.
    refused = [(w[0], d) for w, d in zip(writes, done, strict=True) if d != "ok"]
    if mode == "user":
        assert refused == [], refused
    else:
        assert all(".git" in Path(p).parts and d in ("EROFS", "EACCES") for p, d in refused), (
            refused
        )
    for slot, dirs in where:
        slot.review(dirs)
    fired = ran_as_root(workspace.markers)
    assert fired == {}, (
        f"ran as root after a {mode} session: {fired}\nbatch: {batch}\n{result.stderr}"
    )
