"""The audit view: opens when a launcher config exists, shows drift with its
diff, and "fix" re-applies the saved answers through review and apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static

import sandbox_setup.audit.runner
from sandbox_setup.base.choices import Mode
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.done import DoneScreen
from sandbox_setup.tui.findings_view import FindingList, Row
from sandbox_setup.tui.review import ReviewScreen
from sandbox_setup.tui.welcome import WelcomeScreen
from tests.tui.fake_findings import SANDBOX_HOST, fake_report
from tests.tui.helpers import make_app, plain, wait_for, wait_until
from tests.tui.test_modes import run_mode

SETTINGS = "etc/claude-code/managed-settings.json"


@pytest.fixture
def fake_audit_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's live probes return the fixed findings (the TUI is not the probe)."""
    monkeypatch.setattr(
        sandbox_setup.audit.runner,
        "run_live_checks",
        lambda *args, **kwargs: fake_report(SANDBOX_HOST),
    )


def _drift_rows(screen: AuditScreen) -> list[Row]:
    return [row for row in screen.query_one(FindingList).rows if row.id.startswith("audit.drift")]


async def test_audit_view_shows_drift_and_fix_reapplies(
    tmp_path: Path, fake_audit_probes: None
) -> None:
    root = await run_mode(tmp_path, Mode.USER)
    settings = root / SETTINGS
    data = json.loads(settings.read_text())
    assert data, "the wizard wrote managed settings"
    settings.write_text(json.dumps({}) + "\n")  # someone emptied the policy

    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await wait_for(pilot, AuditScreen)  # not the welcome: a setup exists
        await wait_until(pilot, lambda: not screen.busy, tries=1500)
        status = str(screen.query_one("#audit-status", Static).render())
        assert screen.audit is not None, status
        assert "Mode: user" in status and "exposure" in status
        drift = _drift_rows(screen)
        assert drift, [r.id for r in screen.query_one(FindingList).rows]
        assert "managed-settings.json" in plain(drift[0].body)
        # The host checks are listed too.
        assert screen.query_one(FindingList).row("bwrap.sandbox") is not None

        await pilot.press("f")
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: not review.busy)
        assert review.plan is not None
        await pilot.press("a")
        applying = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not applying.busy, tries=1500)
        assert applying.error is None, applying.error
        await pilot.press("enter")
        await wait_for(pilot, DoneScreen)
        await pilot.press("enter")
        screen = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: screen.audit is not None, tries=1500)
        assert _drift_rows(screen) == []
        await pilot.press("q")
        await wait_until(pilot, lambda: app.return_value is not None)
    assert json.loads(settings.read_text()) == data
    assert app.return_value in (0, 1)


async def test_audit_view_can_start_the_wizard(tmp_path: Path, fake_audit_probes: None) -> None:
    root = await run_mode(tmp_path, Mode.USER)
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, AuditScreen)
        await pilot.press("w")
        welcome = await wait_for(pilot, WelcomeScreen)
        assert "found" in str(welcome.query_one("#welcome-text", Static).render())
