"""The real Claude Code from npm, as root: its root guard, and what sandbox-launch does to it.

Nobody is logged in, so a Claude that gets past the root guard stops at the
login message; that message is the evidence it got past.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.launch_fixtures import (
    LaunchTree,
    launch_tree,
    launcher_env,
    run_launcher,
)
from tests.tools import claude_binary

pytestmark = pytest.mark.e2e

GUARD = "cannot be used with root/sudo privileges"
LOGIN = "Not logged in"
BYPASS = ["--dangerously-skip-permissions", "--print", "ok"]


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree()


@pytest.fixture
def root_home(tree: LaunchTree) -> Path:
    """An empty HOME for Claude as root, so the operator's real ~/.claude is never used."""
    home = tree.base / "root-home"
    home.mkdir(mode=0o700)
    return home


def _output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def test_direct_launch_as_root_stops_at_the_guard(root_home: Path) -> None:
    claude = claude_binary()
    result = subprocess.run(
        [claude, *BYPASS],
        env={"PATH": "/usr/bin:/bin", "HOME": str(root_home)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode != 0
    assert GUARD in _output(result)


def test_sandbox_mode_gets_past_the_guard(tree: LaunchTree) -> None:
    config = tree.write_config(claude_binary())
    result = run_launcher(config, BYPASS)
    assert GUARD not in _output(result)
    assert LOGIN in _output(result), _output(result)


def test_unsafe_without_acceptance_never_starts_claude(tree: LaunchTree, root_home: Path) -> None:
    config = tree.write_config(claude_binary(), mode="unsafe")
    result = run_launcher(config, BYPASS, env=launcher_env({"HOME": str(root_home)}))
    assert result.returncode == 3
    assert "no acceptance is recorded" in result.stderr
    assert GUARD not in _output(result) and LOGIN not in _output(result)
    assert list(root_home.iterdir()) == []  # Claude would have written its state here


def test_unsafe_with_acceptance_gets_past_the_guard_and_warns(
    tree: LaunchTree, root_home: Path
) -> None:
    config = tree.write_config(claude_binary(), mode="unsafe", accepted=True)
    result = run_launcher(config, BYPASS, env=launcher_env({"HOME": str(root_home)}))
    assert GUARD not in _output(result)
    assert LOGIN in _output(result), _output(result)
    assert "NO OS sandbox" in result.stderr and "sandbox-setup" in result.stderr


def test_unsafe_with_is_sandbox_0_exported_keeps_the_guard(
    tree: LaunchTree, root_home: Path
) -> None:
    config = tree.write_config(claude_binary(), mode="unsafe", accepted=True)
    env = launcher_env({"HOME": str(root_home), "IS_SANDBOX": "0"})
    result = run_launcher(config, BYPASS, env=env)
    assert GUARD in _output(result)
    assert "NO OS sandbox" in result.stderr
