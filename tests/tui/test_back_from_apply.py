"""Going back from Apply (issue 17), at 80x24 with fake findings: after a failed
apply the review is built again from the answers (a new screen, a new plan, Apply
enabled for what is left to do); after a successful one there is no way back, so a
"0 change(s)" review with Apply enabled cannot be reached."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from textual.widgets import Button, RichLog, Static

from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.plan import Plan
from sandbox_setup.tui.app import SetupApp
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.done import DoneScreen
from sandbox_setup.tui.review import ReviewScreen
from tests.tui.fake_findings import SANDBOX_HOST, FakeProvider
from tests.tui.fake_screens import FAKE_PLAN, FakeCore, ScreenHarness, fake_core
from tests.tui.helpers import make_root, wait_for, wait_until
from tests.tui.test_habits import SIZE, to_details


class CountingCore(FakeCore):
    plans: int = 0

    def build_plan(self, report: Report, answers: Answers) -> Plan:
        self.plans += 1
        return super().build_plan(report, answers)


async def to_review(pilot: Any) -> ReviewScreen:
    await to_details(pilot)
    await pilot.press(*"/srv/project", "ctrl+n")
    review = await wait_for(pilot, ReviewScreen)
    await wait_until(pilot, lambda: not review.busy)
    return review  # type: ignore[no-any-return]


def summary(review: ReviewScreen) -> str:
    return str(review.query_one("#plan-summary", Static).render())


async def test_back_from_a_failed_apply_is_a_fresh_review_and_from_a_done_one_none(
    tmp_path: Path,
) -> None:
    core = CountingCore(Layout.for_root(make_root(tmp_path)), FakeProvider(SANDBOX_HOST))
    core.fail = True
    app = SetupApp(core)
    async with app.run_test(size=SIZE) as pilot:
        first = await to_review(pilot)
        assert core.plans == 1
        await pilot.press("a")
        applying = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not applying.busy)
        assert applying.error is not None
        core.fail = False
        await pilot.press("escape")  # back, as "Back to review" does
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy)
        assert review is not first and core.plans == 2  # planned again, not the old one
        assert review.plan is not None and review.changes == len(review.plan.changes()) > 0
        assert not review.query_one("#apply", Button).disabled
        assert summary(review).startswith(f"{review.changes} change(s)")
        await pilot.press("a")
        applying = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not applying.busy)
        assert applying.error is None
        for key in ("escape", "escape"):  # applied: no way back to a review
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is applying, key
        assert core.plans == 2
        await pilot.press("enter")
        await wait_for(pilot, DoneScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DoneScreen) and core.plans == 2


async def test_a_failed_apply_shows_its_whole_back_label(tmp_path: Path) -> None:
    """The failure comes after the screen has been laid out for the last time (no
    resize follows): "Back to review" is longer than "Continue", and the button
    must grow to show it, not stay at the old width showing "Back to "."""
    (tmp_path / "srv/project").mkdir(parents=True)
    backend = fake_core(tmp_path, SANDBOX_HOST)
    backend.fail = True
    backend.gate = gate = threading.Event()
    app = ScreenHarness(lambda: ApplyScreen(backend, FAKE_PLAN), on_exit=gate.set)
    async with app.run_test(size=SIZE) as pilot:
        applying = await wait_for(pilot, ApplyScreen)
        log = applying.query_one("#apply-log", RichLog)
        await wait_until(pilot, lambda: len(log.lines) >= 2)  # held at the third action
        button = applying.query_one("#continue", Button)
        for _ in range(5):
            await pilot.pause()
        assert button.region.width < len("Back to review") + 2  # "Continue" fits in less
        gate.set()
        await wait_until(pilot, lambda: not applying.busy)
        assert str(button.label) == "Back to review"
        await wait_until(pilot, lambda: button.region.width >= len("Back to review") + 2, 100)
