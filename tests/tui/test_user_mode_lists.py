"""User mode's allowed domains and loopback ports in the TUI (issue 29's Landlock
network wall): the fields are there and on in user mode, a bad value is marked on its
field, and what is typed reaches the plan. Pilot at 80x24, fake findings, the real core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from sandbox_setup.base.choices import Mode
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.form import Field
from sandbox_setup.tui.review import ReviewScreen
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.helpers import make_app, make_root, make_target_root, type_text, wait_for, wait_until
from tests.tui.test_habits import to_details


async def _fill(pilot: Pilot[Any], details: DetailsScreen, domains: str, ports: str) -> None:
    await type_text(pilot, "/srv/project")
    for id, text in (("domains", domains), ("ports", ports)):
        field = details.query_one(f"#{id}", Input)
        assert not field.disabled, id
        while pilot.app.focused is not field:
            await pilot.press("tab")
        await type_text(pilot, text)
    await pilot.press("ctrl+n")


async def test_user_mode_takes_the_lists_into_the_plan(tmp_path: Path) -> None:
    app = make_app(make_target_root(tmp_path), SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        details = await to_details(pilot, Mode.USER)
        assert not details.query("#network")  # no network choice: the host's, Landlocked
        await _fill(pilot, details, "pypi.org, *.github.com", "4000")
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy)
        assert review.plan is not None, [str(e.render()) for e in review.query(".error")]
        assert review.plan.answers.allowed_domains == ("pypi.org", "*.github.com")
        assert review.plan.answers.loopback_ports == (4000,)
        assert review.plan.launcher_config.loopback_ports == (4000,)
        lines = "\n".join(review.plan.network)
        assert "through the session's proxy: pypi.org, *.github.com" in lines


async def test_a_bad_domain_is_marked_on_its_field_in_user_mode(tmp_path: Path) -> None:
    app = make_app(make_root(tmp_path), SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        details = await to_details(pilot, Mode.USER)
        await _fill(pilot, details, "*", "")
        await pilot.pause()
        assert pilot.app.screen is details
        error = details.query_one("#field-domains", Field).error
        assert error is not None and "allowed domain '*'" in error, error
