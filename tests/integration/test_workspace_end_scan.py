"""The end-of-session check (sandbox_setup.boundary.session.check) on real workspaces: the
state it returns (what a settled trusted state holds) is the workspaces as they are after
it, walked once when nothing was moved aside, again when something was (the move changed
them)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.boundary import scan as workspace_scan
from sandbox_setup.boundary import session as boundary
from sandbox_setup.boundary.scan import snapshot

pytestmark = pytest.mark.integration


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    discover = workspace_scan._discover

    def counted(workspace: str, limits: object) -> object:
        seen.append(workspace)
        return discover(workspace, limits)  # type: ignore[arg-type]

    monkeypatch.setattr(workspace_scan, "_discover", counted)
    yield seen


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    ws, state = tmp_path / "ws", tmp_path / "state"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (ws / ".git" / "objects").mkdir()
    (ws / ".git" / "refs").mkdir()
    (ws / "README").write_text("hello\n")
    state.mkdir(mode=0o700)
    return ws, state


def test_nothing_new_the_baseline_is_the_scans_own_walk(tmp_path: Path, walks: list[str]) -> None:
    ws, state = _repo(tmp_path)
    before = snapshot([str(ws)])
    walks.clear()
    checked = boundary.check([str(ws)], before, state, "s1")
    assert checked.lines == [] and checked.complete
    assert walks == [str(ws)]  # one walk: the scan's
    assert checked.marks == dict(snapshot([str(ws)]).marks)


def test_something_moved_aside_the_baseline_is_walked_again(
    tmp_path: Path, walks: list[str]
) -> None:
    ws, state = _repo(tmp_path)
    before = snapshot([str(ws)])
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho planted\n")
    os.chmod(hook, 0o755)
    walks.clear()
    checked = boundary.check([str(ws)], before, state, "s2")
    assert any("pre-commit" in line for line in checked.lines), checked.lines
    assert not hook.exists()  # moved aside
    assert walks == [str(ws), str(ws)]  # the scan, then the workspace as it is now
    assert checked.marks == dict(snapshot([str(ws)]).marks)
