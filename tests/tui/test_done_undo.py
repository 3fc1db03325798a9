"""The done screen after the fourth apply of a setup (issue 28): one undo must not look
complete while earlier applies remain. Real applies under a temp root through the CLI,
the real core counts them from the journal, and Pilot reads the screen at 80x24."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Static

from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.tui.done import DoneScreen
from sandbox_setup.tui.draft import Draft
from sandbox_setup.tui.flow import _done_screen
from tests.core_fixtures import SANDBOX, make_target_root, run_cli
from tests.tools import require_root, require_tool
from tests.tui.fake_findings import FakeProvider
from tests.tui.fake_screens import ScreenHarness


def test_the_done_screen_says_how_many_applies_an_undo_leaves(tmp_path: Path) -> None:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl"):
        require_tool(tool)
    root = make_target_root(tmp_path / "root")
    for args in (SANDBOX, ("--allow-loopback-port", "10100"), ("--pass-env", "MY_TOKEN")):
        proc = run_cli("--headless", "--yes", *args, "--root", str(root))
        assert proc.returncode == 0, proc.stderr
    core = InteractiveCore.for_root(root, FakeProvider([]))
    screen = _done_screen(core, Draft())

    async def read() -> str:
        app = ScreenHarness(lambda: screen)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, DoneScreen)
            return str(app.screen.query_one("#done-text", Static).render())

    text = asyncio.run(read())
    assert "Undo this apply only (2 earlier applies stay in effect):" in text
    assert "Undo the whole setup (all 3 applies, back to the host before it):" in text
    assert f"sandbox-setup --undo --all --root {root}" in text
    assert "Undo this apply:\n" not in text
