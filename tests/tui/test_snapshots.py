"""SVG snapshots of every screen at 80x24 with fixed fake findings and plans.

Update after an intended change with ``pytest tests/tui/test_snapshots.py
--snapshot-update`` and look at the SVGs (docs/screenshots.md shows them).
"""

from __future__ import annotations

import threading
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from sandbox_setup.base.choices import InnerSandbox, Mode, SettingsScope
from sandbox_setup.configure.answers import Answers
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.checks import ChecksScreen
from sandbox_setup.tui.choose_mode import ChooseModeScreen
from sandbox_setup.tui.detail import DetailScreen
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.done import DoneScreen, done_text
from sandbox_setup.tui.findings_view import FindingList
from sandbox_setup.tui.help import HelpScreen
from sandbox_setup.tui.review import ReviewScreen
from sandbox_setup.tui.unsafe import UnsafeScreen
from sandbox_setup.tui.welcome import WelcomeScreen, welcome_text
from tests.tui.fake_findings import CONTAINER_HOST, SANDBOX_HOST
from tests.tui.fake_screens import (
    FAKE_PLAN,
    ScreenHarness,
    StepBarHarness,
    WizardHarness,
    fake_core,
    report_of,
)
from tests.tui.helpers import wait_until

SIZE = (80, 24)
CONFIG = "/root/.config/sandbox-setup"
CLAUDE_HINT = "empty: /usr/local/bin/claude, the one the checks found"


def _backend(tmp_path: Path, findings: list[Any] = SANDBOX_HOST) -> Any:
    (tmp_path / "srv/project").mkdir(parents=True, exist_ok=True)
    return fake_core(tmp_path, findings)


async def _settle(pilot: Pilot[Any], done: Any) -> None:
    """Wait for ``done``, then for animations (the progress bar) and pending
    refreshes: under load a snapshot must not catch a frame in between."""
    await wait_until(pilot, done)
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False  # a blinking cursor is in one frame, not the next
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()
    await pilot.pause()


async def focused(pilot: Pilot[Any]) -> None:
    """A screen that opened: its focus set (and, under load, painted)."""
    await _settle(pilot, lambda: pilot.app.focused is not None)


def test_welcome(snap_compare: Any) -> None:
    text = welcome_text("root", 0, None, "/", None)
    app = ScreenHarness(lambda: WelcomeScreen(text))
    assert snap_compare(app, run_before=focused, terminal_size=SIZE)


def test_checks_running(snap_compare: Any, tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    backend.report_provider.gate = gate = threading.Event()
    backend.pending = [(f.id, f.title) for f in SANDBOX_HOST]

    async def run_before(pilot: Pilot[Any]) -> None:
        rows = pilot.app.screen.query_one(FindingList)
        await _settle(pilot, lambda: any(row.marker == "pass" for row in rows.rows))

    app = ScreenHarness(lambda: ChecksScreen(backend), on_exit=gate.set)
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_checks_container_host(snap_compare: Any, tmp_path: Path) -> None:
    """The rows worst first, one line each, the marker word first."""
    backend = _backend(tmp_path, CONTAINER_HOST)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot, lambda: pilot.app.screen.report is not None)

    app = ScreenHarness(lambda: ChecksScreen(backend))
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_detail_pane(snap_compare: Any, tmp_path: Path) -> None:
    """A row's full text: summary, detail, cause, the fix and the key to copy it."""
    backend = _backend(tmp_path, CONTAINER_HOST)

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = pilot.app.screen
        await _settle(pilot, lambda: screen.report is not None)
        rows = screen.query_one(FindingList)
        rows.highlighted = [r.id for r in rows.rows].index("bwrap.sandbox")
        await pilot.press("enter")
        await _settle(pilot, lambda: isinstance(pilot.app.screen, DetailScreen))

    app = ScreenHarness(lambda: ChecksScreen(backend))
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_help_screen(snap_compare: Any, tmp_path: Path) -> None:
    """? on the checks screen: every key of that screen, then the ones everywhere."""
    backend = _backend(tmp_path, CONTAINER_HOST)

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = pilot.app.screen
        await _settle(pilot, lambda: screen.report is not None)
        await pilot.press("question_mark")
        await _settle(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))

    assert snap_compare(
        WizardHarness(lambda: ChecksScreen(backend)), run_before=run_before, terminal_size=SIZE
    )


def test_help_screen_ascii_locale(
    snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under LANG=C: the same screens in ASCII (borders, step indicator, arrows)."""
    monkeypatch.setenv("LANG", "C")
    backend = _backend(tmp_path, CONTAINER_HOST)

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = pilot.app.screen
        await _settle(pilot, lambda: screen.report is not None)
        await pilot.press("question_mark")
        await _settle(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))

    assert snap_compare(
        WizardHarness(lambda: ChecksScreen(backend)), run_before=run_before, terminal_size=SIZE
    )


def test_step_indicator(snap_compare: Any) -> None:
    """The step indicator on its own, at the review step: done ✓, current ●, to come ○."""
    assert snap_compare(StepBarHarness("review", "sandbox mode"), terminal_size=(80, 3))


def test_choose_mode_with_a_disabled_option(snap_compare: Any, tmp_path: Path) -> None:
    report = report_of(CONTAINER_HOST)
    app = ScreenHarness(lambda: ChooseModeScreen(_backend(tmp_path), report))
    assert snap_compare(app, run_before=focused, terminal_size=SIZE)


def test_details_sandbox(snap_compare: Any, tmp_path: Path) -> None:
    """The details screen as it opens: the Workspaces label in view."""
    backend = _backend(tmp_path)
    details = Answers(
        Mode.SANDBOX, inner_sandbox=InnerSandbox.STRONG, settings_scope=SettingsScope.MANAGED
    )
    app = ScreenHarness(
        lambda: DetailsScreen(backend, Mode.SANDBOX, details, InnerSandbox.STRONG, CLAUDE_HINT)
    )

    assert snap_compare(app, run_before=focused, terminal_size=SIZE)


def test_details_invalid_field(snap_compare: Any, tmp_path: Path) -> None:
    """An invalid field is marked where it is: its label, its edge, ✗ and the reason."""
    backend = _backend(tmp_path)
    details = Answers(
        Mode.SANDBOX, inner_sandbox=InnerSandbox.STRONG, settings_scope=SettingsScope.MANAGED
    )
    app = ScreenHarness(
        lambda: DetailsScreen(backend, Mode.SANDBOX, details, InnerSandbox.STRONG, CLAUDE_HINT)
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.pause()
        pilot.app.screen.query_one("#workspaces", Input).value = "relative/path"
        await pilot.press("ctrl+n")
        field = pilot.app.screen.query_one("#field-workspaces")
        await _settle(pilot, lambda: field.has_class("invalid"))

    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_details_offer_to_create_a_missing_workspace(snap_compare: Any, tmp_path: Path) -> None:
    """A workspace typed that does not exist: marked, and the offer to create it shown
    (ticked here: its owner and mode beside each other)."""
    backend = _backend(tmp_path)
    details = Answers(
        Mode.SANDBOX, inner_sandbox=InnerSandbox.STRONG, settings_scope=SettingsScope.MANAGED
    )
    app = ScreenHarness(
        lambda: DetailsScreen(backend, Mode.SANDBOX, details, InnerSandbox.STRONG, CLAUDE_HINT)
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.pause()
        pilot.app.screen.query_one("#workspaces", Input).value = "/srv/new/app"
        await pilot.press("ctrl+n")
        field = pilot.app.screen.query_one("#field-workspaces")
        await _settle(pilot, lambda: field.has_class("invalid"))
        pilot.app.screen.query_one("#create-workspace").focus()
        await pilot.press("space")
        box = pilot.app.screen.query_one("#new-workspace")
        await _settle(pilot, lambda: bool(box.display))

    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_details_tab_to_a_field_below(snap_compare: Any, tmp_path: Path) -> None:
    """Saved answers pre-filled, Tab to Loopback ports (below the first screenful):
    the form has scrolled it into view with its label, the cursor after 10100."""
    backend = _backend(tmp_path)
    details = Answers(
        Mode.SANDBOX,
        workspaces=(PurePosixPath("/srv/project"),),
        agent_user="op-agent",
        loopback_ports=(10100,),
        install_claude_shim=True,
    )
    app = ScreenHarness(
        lambda: DetailsScreen(backend, Mode.SANDBOX, details, InnerSandbox.STRONG, CLAUDE_HINT)
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.pause()
        for _ in range(5):  # agent user, reuse, network, domains, ports
            await pilot.press("tab")
        await _settle(pilot, lambda: pilot.app.focused.id == "ports")

    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_unsafe_acceptance(snap_compare: Any) -> None:
    assert snap_compare(ScreenHarness(UnsafeScreen), run_before=focused, terminal_size=SIZE)


def test_review(snap_compare: Any, tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    answers = Answers(mode=Mode.SANDBOX)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot, lambda: pilot.app.screen.plan is not None)

    app = ScreenHarness(lambda: ReviewScreen(backend, report_of(SANDBOX_HOST), answers))
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_review_refused(snap_compare: Any, tmp_path: Path) -> None:
    backend = _backend(tmp_path)

    def refuse(report: Any, answers: Any) -> Any:
        raise RuntimeError(
            "inner sandbox 'strong' was not verified on this host: bwrap.nested is skip. "
            "Choose --inner-sandbox off (what the probes verified) or fix the cause."
        )

    backend.build_plan = refuse  # type: ignore[method-assign]

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot, lambda: not pilot.app.screen.busy)

    app = ScreenHarness(lambda: ReviewScreen(backend, report_of(SANDBOX_HOST), Answers(Mode.USER)))
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_apply_in_progress(snap_compare: Any, tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    backend.gate = gate = threading.Event()

    async def run_before(pilot: Pilot[Any]) -> None:
        # Two actions done (one log line each), the third held running.
        await _settle(pilot, lambda: len(pilot.app.screen.query_one("#apply-log").lines) >= 2)

    app = ScreenHarness(lambda: ApplyScreen(backend, FAKE_PLAN), on_exit=gate.set)
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_apply_failed_rolled_back(snap_compare: Any, tmp_path: Path) -> None:
    backend = _backend(tmp_path)
    backend.fail = True

    def relabelled(pilot: Pilot[Any]) -> bool:
        # The button's new label takes one more layout pass: under load a snapshot
        # caught "Back to " in the old, narrower button.
        button = pilot.app.screen.query_one("#continue")
        label = str(button.label)  # type: ignore[attr-defined]
        return label == "Back to review" and button.region.width >= len(label) + 2

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot, lambda: not pilot.app.screen.busy and relabelled(pilot))

    app = ScreenHarness(lambda: ApplyScreen(backend, FAKE_PLAN))
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_done(snap_compare: Any) -> None:
    note = "The agent claude-agent has no Claude login yet; start Claude and type /login."
    text = done_text("sandbox", f"{CONFIG}/answers.toml", f"{CONFIG}/launcher.toml", "/", note)
    app = ScreenHarness(lambda: DoneScreen(text))
    assert snap_compare(app, run_before=focused, terminal_size=SIZE)


def test_audit_with_drift(snap_compare: Any, tmp_path: Path) -> None:
    backend = _backend(tmp_path)

    async def run_before(pilot: Pilot[Any]) -> None:
        screen = pilot.app.screen
        await _settle(pilot, lambda: screen.audit is not None)

    app = ScreenHarness(lambda: AuditScreen(backend))
    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_docs_screenshots_are_current() -> None:
    """docs/screenshots/ holds copies of these snapshots; stale copies fail."""
    from tests.tools import REPO

    snapshots = REPO / "tests/tui/__snapshots__/test_snapshots"
    docs = REPO / "docs/screenshots"
    names = sorted(p.name for p in snapshots.glob("*.svg"))
    assert names, "no snapshots"
    assert sorted(p.name for p in docs.glob("*.svg")) == names
    stale = [n for n in names if (docs / n).read_bytes() != (snapshots / n).read_bytes()]
    assert stale == [], f"copy the snapshots to docs/screenshots: {stale}"
    text = (REPO / "docs/screenshots.md").read_text()
    for name in names:
        stem = name.removesuffix(".svg")
        assert f"screenshots/{stem}." in text, f"{name} is not shown in docs/screenshots.md"
