"""The wizard offers to create a workspace that does not exist: the workspaces field says
how (in the wizard's words), the tick box makes it a step of the plan under review with
the owner and mode asked, and a refused mode is marked on its field. Pilot at 80x24,
fake findings, the real core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input

from sandbox_setup.base.choices import Mode
from sandbox_setup.configure.actions import CreateWorkspace
from sandbox_setup.tui.controls import Toggle
from sandbox_setup.tui.form import Field
from sandbox_setup.tui.review import ReviewScreen
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.helpers import make_app, make_target_root, type_text, wait_for, wait_until
from tests.tui.test_habits import to_details
from tests.wizard_words import names_a_flag

NEW = "/srv/new/app"


async def _focus(pilot: Pilot[Any], widget: Widget) -> None:
    for _ in range(60):
        if pilot.app.focused is widget:
            return
        await pilot.press("tab")
    raise AssertionError(f"never focused {widget}")


async def _retype(pilot: Pilot[Any], field: Input, text: str) -> None:
    await _focus(pilot, field)
    field.value = ""
    await type_text(pilot, text)


async def test_a_missing_workspace_is_offered_and_created_by_the_plan(tmp_path: Path) -> None:
    root = make_target_root(tmp_path)
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        details = await to_details(pilot, Mode.SANDBOX)
        offer = details.query_one("#field-create-workspace", Field)
        assert not offer.display  # the usual form does not grow
        await type_text(pilot, NEW)
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert pilot.app.screen is details  # refused while not ticked
        assert offer.display  # offered, now that a workspace typed does not exist
        assert not details.query_one("#new-workspace").display  # owner, mode: once ticked
        error = details.query_one("#field-workspaces", Field).error
        assert error is not None and f"workspace {NEW} does not exist" in error, error
        assert "tick 'Create it' under 'A workspace that does not exist yet'" in error, error
        assert names_a_flag(error) == [], error  # the wizard's words, not a flag

        toggle = details.query_one("#create-workspace", Toggle)
        await _focus(pilot, toggle)
        await pilot.press("space")
        assert toggle.value
        await pilot.pause()
        assert details.query_one("#new-workspace").display
        owner = details.query_one("#new-ws-owner", Input)
        assert owner.value == root_operator()  # the default: the operator
        assert details.query_one("#new-ws-mode", Input).value == "0750"
        await pilot.press("ctrl+n")
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy)
        assert review.plan is not None, [str(e.render()) for e in review.query(".error")]
        created = [a for a in review.plan.actions if isinstance(a, CreateWorkspace)]
        assert len(created) == 1, [a.describe() for a in review.plan.actions]
        step = created[0]
        assert step.kind == "create-directory" and str(step.path) == NEW
        assert (step.owner, step.mode) == (root_operator(), 0o750)
        assert review.plan.answers.create_workspaces
        assert not (root / "srv" / "new").exists()  # the review writes nothing


async def test_a_world_writable_mode_is_marked_on_its_field(tmp_path: Path) -> None:
    app = make_app(make_target_root(tmp_path), SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        details = await to_details(pilot, Mode.SANDBOX)
        await type_text(pilot, NEW)
        await pilot.press("ctrl+n")
        await pilot.pause()
        toggle = details.query_one("#create-workspace", Toggle)
        await _focus(pilot, toggle)
        await pilot.press("space")
        await pilot.pause()
        await _retype(pilot, details.query_one("#new-ws-mode", Input), "0777")
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert pilot.app.screen is details
        assert details.query_one("#field-workspaces", Field).error is None  # ticked: fine
        error = details.query_one("#field-new-ws-mode", Field).error
        assert error is not None and "every user of the host write" in error, error


def root_operator() -> str:
    import os
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
