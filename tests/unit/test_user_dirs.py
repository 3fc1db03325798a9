"""Where the operator's config and state live on the live system: platformdirs'
directories (docs/design.md, "Files it writes"), so ``XDG_CONFIG_HOME`` and ``XDG_STATE_HOME``
move them (every test relies on that to keep off the host's files) and otherwise they
are under ``$HOME`` (root: ``/root/.config/sandbox-setup/launcher.toml``)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.paths import Layout
from sandbox_setup.launcher.egress.network import state_dir


def test_xdg_variables_move_the_config_and_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "conf"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "st"))
    layout = Layout.for_root("/")
    assert layout.launcher_config == PurePosixPath(tmp_path, "conf/sandbox-setup/launcher.toml")
    assert layout.journal == PurePosixPath(tmp_path, "st/sandbox-setup/journal.jsonl")
    assert state_dir() == tmp_path / "st/sandbox-setup"


def test_without_them_the_directories_are_under_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", "/root")
    layout = Layout.for_root("/")
    assert layout.launcher_config == PurePosixPath("/root/.config/sandbox-setup/launcher.toml")
    assert layout.state_dir == PurePosixPath("/root/.local/state/sandbox-setup")
    assert state_dir() == Path("/root/.local/state/sandbox-setup")


def test_under_another_root_they_follow_the_operator_of_that_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    layout = Layout.for_root(tmp_path)
    home = PurePosixPath(layout.operator.home)
    assert layout.config_dir == home / ".config/sandbox-setup"
    assert layout.state_dir == home / ".local/state/sandbox-setup"
