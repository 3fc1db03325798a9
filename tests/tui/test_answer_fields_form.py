"""A tick box declared once (base/answer_fields.py) is on the wizard's details step:
shown in the modes that hold it, read back into the answers (Pilot at 80x24). The
unit half of this (flags, file, draft, words) is tests/unit/test_answer_fields.py."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

import sandbox_setup.tui.details as details_step
from sandbox_setup.base.choices import InnerSandbox, Mode
from sandbox_setup.tui.controls import Toggle
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.form import Field
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.fake_screens import ScreenHarness, fake_core
from tests.tui.helpers import wait_until
from tests.unit.test_answer_fields import FIELDS, Extended


@pytest.mark.parametrize(("mode", "shown"), [(Mode.SANDBOX, True), (Mode.UNSAFE, False)])
async def test_a_tick_box_declared_once_is_on_the_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Mode, shown: bool
) -> None:
    monkeypatch.setattr(details_step, "ANSWER_FIELDS", FIELDS)
    (tmp_path / "srv/project").mkdir(parents=True)
    core = fake_core(tmp_path, SANDBOX_HOST)
    answers = Extended(mode, workspaces=(PurePosixPath("/srv/project"),))
    app = ScreenHarness(lambda: DetailsScreen(core, mode, answers, InnerSandbox.STRONG, ""))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: bool(app.screen.query("#field-claude")))
        screen = app.screen
        assert isinstance(screen, DetailsScreen)
        found = screen.query("#field-colour-prompt")
        assert bool(found) is shown
        if not shown:
            return
        field = found.first(Field)
        assert field.label == "The agent's prompt"
        box = screen.query_one("#colour-prompt", Toggle)
        assert str(box.label) == "Colour the prompt" and not box.value
        box.value = True
        await pilot.pause()
        filled, errors = screen.collect()
        assert errors == {} and filled is not None
        assert filled.colour_prompt is True  # type: ignore[attr-defined]
