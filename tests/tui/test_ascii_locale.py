"""Under ``LANG=C`` (or ``LC_ALL=C``) the wizard draws ASCII only: borders, the step
indicator, the radio buttons, the keys' arrows, the scroll bars (tui/glyphs.py).
The snapshot is in test_snapshots.py (test_checks_ascii_locale)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from sandbox_setup.base.choices import InnerSandbox, Mode
from sandbox_setup.configure.answers import Answers
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.glyphs import ascii_cells, locale_is_utf8
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.fake_screens import WizardHarness, fake_core
from tests.tui.helpers import wait_until


def screen_text(app: Any) -> str:
    """The whole screen as drawn (every line filter applied), as text."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, force_terminal=True
    )
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    console.print(update)
    return console.export_text()


async def _details_screen(tmp_path: Path) -> str:
    (tmp_path / "srv/project").mkdir(parents=True, exist_ok=True)
    core = fake_core(tmp_path, SANDBOX_HOST)
    app = WizardHarness(
        lambda: DetailsScreen(
            core, Mode.SANDBOX, Answers(Mode.SANDBOX), InnerSandbox.STRONG, "hint"
        )
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: pilot.app.focused is not None)
        await pilot.pause()
        return screen_text(app)


@pytest.mark.parametrize(
    ("variable", "value"), [("LANG", "C"), ("LC_ALL", "C"), ("LC_ALL", "POSIX")]
)
async def test_the_wizard_draws_ascii_where_the_locale_is_not_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    utf8 = await _details_screen(tmp_path)
    assert not utf8.isascii(), "in a UTF-8 locale the wizard draws its glyphs"
    monkeypatch.setenv(variable, value)
    drawn = await _details_screen(tmp_path)
    odd = sorted({c for c in drawn if not c.isascii()})
    assert not odd, f"not ASCII under {variable}={value}: {odd}"
    assert "+checks +path *details oreview" in drawn, drawn  # the step indicator
    assert "|*| allowlist   |o| host" in drawn, drawn  # the radio buttons
    # Cell for cell: the layout is the UTF-8 one's.
    assert [len(line) for line in drawn.splitlines()] == [len(line) for line in utf8.splitlines()]


def test_each_glyph_keeps_its_cell() -> None:
    assert ascii_cells("╭─┤✓ ● ○ ↑↓…▔▁▊▎╯") == "+-++ * o ^v.-_||+"
    assert ascii_cells("é 漢") == "? ??"
    assert ascii_cells("plain") == "plain"


def test_which_locales_are_utf8() -> None:
    assert locale_is_utf8({"LANG": "C.UTF-8"})
    assert locale_is_utf8({"LANG": "C", "LC_ALL": "en_US.utf8"})
    assert not locale_is_utf8({"LANG": "C.UTF-8", "LC_ALL": "C"})
    assert not locale_is_utf8({"LANG": "C.UTF-8", "LC_CTYPE": "POSIX"})
    assert not locale_is_utf8({"LANG": "en_US.ISO-8859-1"})
    assert not locale_is_utf8({})
