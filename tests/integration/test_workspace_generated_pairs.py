"""Issue 24's generator of plants over PAIRS of overlapping sessions, both modes.

``test_workspace_generated_sessions.py`` writes each batch in one session. Here each
hypothesis example runs two real ``sandbox-launch`` sessions of one workspace that
overlap as an attacker would arrange them: session A's agent makes every write of the
batch and holds; session B starts (the plants are there); A ends and its check moves
them aside; B's agent makes the same writes again and B ends. Then root's real git
reviews every slot (``status``, ``diff``, ``log``, ``commit``, ``checkout``,
``rebase --continue``, ``pull``) and no marker may have been written by uid 0: B's
check judges against the trusted state of the run A began, not against what B saw
at its start.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings

from tests.git_plants import agent_script, ran_as_root
from tests.integration.test_workspace_generated_sessions import (  # noqa: F401 (fixture)
    CONTROL,
    Workspace,
    batches,
    workspace,
)
from tests.launch_fixtures import launcher_env
from tests.tools import REPO

pytestmark = pytest.mark.integration

# Before the writes (B) or after them (A): wait for the test's word in HOLD.
_HOLD = r"""
import os as _os, sys as _sys, time as _time
_HOLD, _ROLE = {hold!r}, _sys.argv[-1]
def _say(what):
    open(_os.path.join(_HOLD, _ROLE + "-" + what), "w").close()
def _wait(what):
    while not _os.path.exists(_os.path.join(_HOLD, _ROLE + "-" + what)):
        _time.sleep(0.05)
if _ROLE == "b":
    _say("started")
    _wait("go")
"""
_AFTER = r"""
if _ROLE == "a":
    _say("planted")
    _wait("go")
"""


def pair_script(writes: list[list[str]], hold: Path) -> str:
    """The batch's agent program, holding where the pair needs it."""
    text = agent_script(writes)
    head, sep, body = text.partition("\nres = []\n")
    assert sep, "the agent program changed: update the pair's hold points"
    return head + _HOLD.format(hold=str(hold)) + sep + body + _AFTER


def _launch(config: Path, role: str, state: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "sandbox_setup.launcher", "--config", str(config), "--", role]
    return subprocess.Popen(
        argv, env=launcher_env({"XDG_STATE_HOME": str(state)}), cwd=REPO,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait(path: Path, *procs: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        for proc in procs:
            assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.05)


@pytest.mark.parametrize("mode", ["sandbox", "user"])
@settings(
    max_examples=8,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@example(batch=CONTROL)
@given(batch=batches)
def test_no_plant_survives_a_pair_of_overlapping_sessions(
    workspace: Workspace,  # noqa: F811 (the fixture imported above)
    mode: str,
    batch: list[dict[str, Any]],
) -> None:
    _program, writes, where = workspace.plan(batch)
    hold = workspace.tree.workspace / ".hold"
    hold.mkdir()
    hold.chmod(0o777)
    agent = workspace.tree.write_script(
        pair_script(writes, hold), name=f"claude-pair-{workspace.runs}"
    )
    config = workspace.tree.write_config(agent, mode=mode)
    state = workspace.tree.base / f"state-pair-{workspace.runs}"
    first = _launch(config, "a", state)
    second: subprocess.Popen[str] | None = None
    try:
        _wait(hold / "a-planted", first)
        second = _launch(config, "b", state)
        _wait(hold / "b-started", first, second)
        (hold / "a-go").write_text("")
        _out, told = first.communicate(timeout=180)
        assert first.returncode == 0, told
        (hold / "b-go").write_text("")
        _out, more = second.communicate(timeout=180)
        assert second.returncode == 0, more
        told += more
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    for slot, dirs in where:
        slot.review(dirs)
    fired = ran_as_root(workspace.markers)
    assert fired == {}, f"ran as root after a {mode} pair: {fired}\nbatch: {batch}\n{told}"
