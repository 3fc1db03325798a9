"""What the host checks and the audit view share (:mod:`sandbox_setup.tui.findings_step`),
shown on both with Pilot at 80x24: Enter opens a row in full, ``c`` copies its fix
from the list, the Re-run button runs the work again, and Re-run waits while it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.checks import ChecksScreen
from sandbox_setup.tui.detail import DetailScreen
from sandbox_setup.tui.findings_step import FindingsStep
from sandbox_setup.tui.findings_view import FindingList
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.fake_screens import FakeCore, WizardHarness, fake_core
from tests.tui.helpers import wait_for, wait_until

SIZE = (80, 24)


def counted(core: FakeCore, step: str, runs: list[str]) -> Callable[[], FindingsStep[Any]]:
    """The step's screen over ``core``, each run of its worker's work noted in ``runs``."""
    if step == "checks":
        run_checks = core.run_checks

        def checks(on_finding: Any) -> Any:
            runs.append(step)
            return run_checks(on_finding)

        core.run_checks = checks  # type: ignore[method-assign]
        return lambda: ChecksScreen(core)
    audit = core.audit

    def audited() -> Any:
        runs.append(step)
        return audit()

    core.audit = audited  # type: ignore[method-assign]
    return lambda: AuditScreen(core)


@pytest.mark.parametrize("step", ["checks", "audit"])
async def test_rows_open_copy_their_fix_and_rerun_alike(tmp_path: Path, step: str) -> None:
    runs: list[str] = []
    app = WizardHarness(counted(fake_core(tmp_path, SANDBOX_HOST), step, runs))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for(pilot, FindingsStep)
        await wait_until(pilot, lambda: len(runs) == 1 and not screen.busy)
        rows = screen.query_one(FindingList)
        fixable = next(row for row in rows.rows if row.remedy)
        rows.highlighted = [row.id for row in rows.rows].index(fixable.id)
        await pilot.press("c")
        assert app.clipboard == fixable.remedy
        await pilot.press("enter")
        detail = await wait_for(pilot, DetailScreen)
        assert detail.row.id == fixable.id
        await pilot.press("escape")
        await wait_for(pilot, FindingsStep)
        await pilot.click("#rerun")
        await wait_until(pilot, lambda: len(runs) == 2 and not screen.busy)
        screen.busy = True  # as while the worker runs: no second run meanwhile
        assert screen.check_action("rerun", ()) is False
        screen.busy = False
        assert screen.check_action("rerun", ()) is True
