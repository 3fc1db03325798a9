"""Bare ``sandbox-setup``: the CLI's entry to the wizard picks the first screen.

These go through ``sandbox_setup.cli.main([... "--root", DIR])`` ->
``sandbox_setup.tui.app.run_app``
(not by building a SetupApp by hand), so the dispatch, ``--root`` and the
core that run_app builds are what is tested. ``SetupApp.run`` is replaced by
a headless Pilot run that records the first screen the flow shows.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from textual.screen import Screen

import sandbox_setup.audit.runner
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.cli import main
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.tui.app import SetupApp
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.welcome import WelcomeScreen
from tests.tui.fake_findings import SANDBOX_HOST, fake_report
from tests.tui.helpers import make_target_root

FIRST_SCREENS = (AuditScreen, WelcomeScreen)


class _Terminal:
    """A standard stream that says it is a terminal (run_app refuses otherwise)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _first_screen(monkeypatch: pytest.MonkeyPatch, root: Path) -> tuple[int, dict[str, Any]]:
    """Run ``sandbox-setup --root ROOT``; what SetupApp.run saw, and main's exit code."""
    # The audit view's live probes return fixed findings (the TUI is not the probe).
    monkeypatch.setattr(
        sandbox_setup.audit.runner,
        "run_live_checks",
        lambda *args, **kwargs: fake_report(SANDBOX_HOST),
    )
    monkeypatch.setattr(sys, "stdin", _Terminal(sys.stdin))
    monkeypatch.setattr(sys, "stdout", _Terminal(sys.stdout))
    seen: dict[str, Any] = {}

    def run_under_pilot(app: SetupApp, *args: Any, **kwargs: Any) -> int:
        async def drive() -> None:
            async with app.run_test(size=(80, 24)) as pilot:
                for _ in range(1000):
                    if isinstance(app.screen, FIRST_SCREENS):
                        break
                    await pilot.pause(0.02)
                screen: Screen[Any] = app.screen
                seen["screen"] = type(screen)
                seen["root"] = app.core.layout.root

        asyncio.run(drive())
        return 0

    monkeypatch.setattr(SetupApp, "run", run_under_pilot)
    code = main(["--root", str(root)])
    return code, seen


def _write_launcher_config(root: Path) -> Path:
    layout = Layout.for_root(root)
    config = LauncherConfig(
        mode=Mode.USER,
        claude=PurePosixPath("/usr/local/bin/claude"),
        agent_user="claude-agent",
        agent_home=PurePosixPath("/home/claude-agent"),
        workspaces=(PurePosixPath("/srv/project"),),
    )
    path = layout.real(layout.launcher_config)
    path.parent.mkdir(parents=True)
    path.write_text(render_launcher_config(config))
    return path


def test_bare_command_opens_on_the_audit_view_when_a_launcher_config_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_target_root(tmp_path)
    _write_launcher_config(root)
    code, seen = _first_screen(monkeypatch, root)
    assert code == 0
    assert seen["root"] == root.resolve()
    assert seen["screen"] is AuditScreen


def test_bare_command_opens_on_the_welcome_without_a_launcher_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_target_root(tmp_path)
    code, seen = _first_screen(monkeypatch, root)
    assert code == 0
    assert seen["root"] == root.resolve()
    assert seen["screen"] is WelcomeScreen
