"""Keys pressed while the checks run are not lost (issue 17), at 80x24 with fake
findings. (Enter, ``c`` and Next pressed while they run: tests/tui/test_steps.py
``test_findings_fill_in_while_probes_run``.)"""

from __future__ import annotations

import threading
from pathlib import Path

from sandbox_setup.tui.checks import ChecksScreen
from sandbox_setup.tui.detail import DetailScreen
from sandbox_setup.tui.findings_view import FindingList
from sandbox_setup.tui.welcome import WelcomeScreen
from tests.tui.fake_findings import CONTAINER_HOST, FakeProvider
from tests.tui.helpers import make_root, wait_for, wait_until
from tests.tui.test_habits import SIZE, fake_app


async def test_the_row_moved_to_while_findings_arrive_stays_highlighted(tmp_path: Path) -> None:
    """↓ pressed while the probes run moves to a row; when they are done and the
    rows are put worst first, that row is still the highlighted one (it was the
    row at the same index, another check, before: the ↓ presses were lost)."""
    app = fake_app(make_root(tmp_path), CONTAINER_HOST)
    provider = FakeProvider(CONTAINER_HOST)
    provider.gate = threading.Event()
    app.core.report_provider = provider  # type: ignore[attr-defined]
    # As the real core: every check is a "running" row from the start.
    app.core.pending = [(f.id, f.title) for f in CONTAINER_HOST]  # type: ignore[attr-defined]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, WelcomeScreen)
            await pilot.press("enter")
            checks = await wait_for(pilot, ChecksScreen)
            rows = checks.query_one(FindingList)
            await pilot.press(*["down"] * 4)
            chosen = rows.current()
            assert chosen is not None and chosen.id == CONTAINER_HOST[4].id
            provider.gate.set()
            await wait_until(pilot, lambda: checks.report is not None)
            # Worst first now: the rows moved, the highlight went with the one chosen.
            assert [r.id for r in rows.rows] != [f.id for f in CONTAINER_HOST]
            current = rows.current()
            assert current is not None and current.id == chosen.id
            await pilot.press("enter")
            detail = await wait_for(pilot, DetailScreen)
            assert detail.row.id == chosen.id
            await pilot.press("escape")
            await wait_for(pilot, ChecksScreen)
            # Re-run: "running" rows in the checks' order, then worst first; still that row.
            runs = provider.runs
            await pilot.press("r")
            await wait_until(pilot, lambda: provider.runs > runs and checks.report is not None)
            current = rows.current()
            assert current is not None and current.id == chosen.id
    finally:
        provider.gate.set()


async def test_without_moving_the_top_row_is_the_worst_once_the_checks_are_done(
    tmp_path: Path,
) -> None:
    app = fake_app(make_root(tmp_path), CONTAINER_HOST)
    app.core.pending = [(f.id, f.title) for f in CONTAINER_HOST]  # type: ignore[attr-defined]
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, WelcomeScreen)
        await pilot.press("enter")
        checks = await wait_for(pilot, ChecksScreen)
        await wait_until(pilot, lambda: checks.report is not None)
        rows = checks.query_one(FindingList)
        assert rows.highlighted == 0
        current = rows.current()
        assert current is not None and current.marker == "FAIL"
