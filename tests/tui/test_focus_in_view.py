"""The details form at 80x24 (and 60x20) as a keyboard user meets it (issue 28): Tab
and Shift+Tab never show the focus on a field below (or above) the visible part of
the form, not even for one frame, and a pre-filled field keeps its value when the
first key is typed (the cursor at its end, nothing selected)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from textual.app import App
from textual.geometry import Region
from textual.widgets import Input

from sandbox_setup.base.choices import InnerSandbox, Mode
from sandbox_setup.configure.answers import Answers
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.form import Field
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.fake_screens import ScreenHarness, fake_core
from tests.tui.helpers import make_root, wait_until
from tests.tui.test_habits import fake_app, settle, to_details

Frame = tuple[str, Region, Region, Region]  # focused id, its region, its field's, the form's


def record_frames(app: App[Any], screen: DetailsScreen) -> list[Frame]:
    """Where the focus is in every frame the app paints. Pilot's ``press`` returns
    once the app is idle, when a later scroll may already have fixed what the
    terminal showed for a frame or more; the frames are what an operator sees (and
    types into), so each is checked as it is painted (``App._display``, the one
    place every frame passes)."""
    frames: list[Frame] = []
    form = screen.query_one("#details-form")
    display: Callable[..., Any] = app._display  # type: ignore[attr-defined]

    def recording(shown: Any, renderable: Any) -> Any:
        focused = app.focused
        if shown is screen and renderable is not None and focused is not None:
            field = next((a for a in focused.ancestors if isinstance(a, Field)), None)
            outer = field.region if field is not None else focused.region
            frames.append((focused.id or "", focused.region, outer, form.region))
        return display(shown, renderable)

    app._display = recording  # type: ignore[attr-defined]
    return frames


def rows_within(inner: Region, outer: Region) -> bool:
    """``inner`` is on the rows of ``outer`` (the 60x20 form is narrower than its
    longest labels: rows are what scrolling is about)."""
    return outer.y <= inner.y and inner.bottom <= outer.bottom


@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
async def test_tab_and_shift_tab_never_paint_the_focus_outside_the_form(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=size) as pilot:
        details = await to_details(pilot, Mode.SANDBOX)
        stops = len(details.focus_chain)
        frames = record_frames(app, details)
        visited = set()
        for key in ["tab"] * stops + ["shift+tab"] * stops:
            await pilot.press(key)
            await settle(pilot)
            focused = app.focused
            assert focused is not None
            visited.add(focused.id)
            # And once settled: the whole field, label to error, on screen.
            _, region, outer, form = frames[-1]
            if focused.id in ("next", "back"):
                assert rows_within(region, app.screen.region)
            else:
                assert rows_within(outer, form), (key, focused.id, outer, form)
        bad = [
            (id, region.y, form.y, form.bottom)
            for id, region, _, form in frames
            if id not in ("next", "back") and not rows_within(region, form)
        ]
        assert not bad, f"focused field painted outside the form (id, y, form rows): {bad}"
        assert {"ports", "tmpfs", "claude"} <= visited


async def test_a_prefilled_field_keeps_its_value_when_typed_into(tmp_path: Path) -> None:
    """Saved answers pre-fill the form (a re-run): the field focused on opening and
    the one Tab reaches both take the first key at the end of their value."""
    (tmp_path / "srv/project").mkdir(parents=True)
    core = fake_core(tmp_path, SANDBOX_HOST)
    saved = Answers(
        Mode.SANDBOX, workspaces=(PurePosixPath("/srv/project"),), agent_user="op-agent"
    )
    app = ScreenHarness(
        lambda: DetailsScreen(core, Mode.SANDBOX, saved, InnerSandbox.STRONG, "hint")
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.focused, Input))
        workspaces = app.screen.query_one("#workspaces", Input)
        agent = app.screen.query_one("#agent-user", Input)
        assert app.focused is workspaces
        await pilot.press("comma")
        await pilot.press("tab")
        assert app.focused is agent
        assert agent.selected_text == "" and agent.cursor_position == len("op-agent")
        await pilot.press("X")
        assert agent.value == "op-agentX"
        assert workspaces.value == "/srv/project,"
