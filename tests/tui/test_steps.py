"""Pilot tests of single steps: live findings, disabled modes, the unsafe phrase,
back navigation, validation. Fake findings, a temp root, 80x24."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.widgets import Button, Input, OptionList, RadioSet, Static

from sandbox_setup.base.choices import Mode
from sandbox_setup.tui.checks import ChecksScreen
from sandbox_setup.tui.choose_mode import ChooseModeScreen
from sandbox_setup.tui.detail import DetailScreen
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.findings_view import FindingList
from sandbox_setup.tui.review import ReviewScreen
from sandbox_setup.tui.unsafe import UNSAFE_PHRASE, UnsafeScreen
from sandbox_setup.tui.welcome import WelcomeScreen
from tests.tui.fake_findings import CONTAINER_HOST, SANDBOX_HOST, FakeProvider
from tests.tui.helpers import make_app, make_root, plain, type_text, wait_for, wait_until


async def _to_mode_screen(pilot, app) -> ChooseModeScreen:  # type: ignore[no-untyped-def]
    await wait_for(pilot, WelcomeScreen)
    await pilot.press("enter")
    checks = await wait_for(pilot, ChecksScreen)
    await wait_until(pilot, lambda: checks.report is not None)
    await pilot.press("n")
    return await wait_for(pilot, ChooseModeScreen)  # type: ignore[no-any-return]


async def test_findings_fill_in_while_probes_run(tmp_path: Path) -> None:
    provider = FakeProvider(SANDBOX_HOST)
    provider.gate = threading.Event()
    app = make_app(make_root(tmp_path), [])
    app.core.report_provider = provider  # type: ignore[attr-defined]
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, WelcomeScreen)
        await pilot.press("enter")
        screen = await wait_for(pilot, ChecksScreen)
        rows = screen.query_one(FindingList)
        # The provider is blocked after its first finding: one row shown, no Next.
        await wait_until(pilot, lambda: len(rows.rows) == 1)
        assert screen.query_one("#next", Button).disabled
        assert "1 done" in str(screen.query_one("#checks-status", Static).render())
        # The list has the focus from the start: the keys work while the probes run.
        assert app.focused is rows
        await pilot.press("enter")
        detail = await wait_for(pilot, DetailScreen)
        assert detail.row.id == SANDBOX_HOST[0].id
        await pilot.press("escape")
        await wait_for(pilot, ChecksScreen)
        # Next pressed while they run is remembered, not lost...
        await pilot.press("n")
        assert isinstance(app.screen, ChecksScreen)
        assert "as soon as" in str(screen.query_one("#checks-status", Static).render())
        provider.gate.set()
        # ...and taken as soon as the checks are done.
        await wait_for(pilot, ChooseModeScreen)
        assert screen.report is not None
        assert len(rows.rows) == len(SANDBOX_HOST)
        # Back on the checks, Re-run runs the provider again.
        await pilot.press("escape")
        screen = await wait_for(pilot, ChecksScreen)
        await pilot.press("r")
        await wait_until(pilot, lambda: provider.runs == 2 and screen.report is not None)


async def test_failing_check_shows_remedy(tmp_path: Path) -> None:
    app = make_app(make_root(tmp_path), CONTAINER_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, WelcomeScreen)
        await pilot.press("enter")
        screen = await wait_for(pilot, ChecksScreen)
        await wait_until(pilot, lambda: screen.report is not None)
        row = screen.query_one(FindingList).row("bwrap.sandbox")
        assert row is not None and row.marker == "FAIL"
        assert "systempaths=unconfined" in plain(row.body)


async def test_disabled_mode_cannot_be_chosen(tmp_path: Path) -> None:
    app = make_app(make_root(tmp_path), CONTAINER_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _to_mode_screen(pilot, app)
        modes = screen.query_one("#modes", OptionList)
        sandbox = modes.get_option("sandbox")
        assert sandbox.disabled
        # The recommended, available mode is highlighted first.
        assert modes.highlighted == list(Mode).index(Mode.USER)
        # Keys cannot reach the disabled option...
        await pilot.press("home")
        assert modes.highlighted == list(Mode).index(Mode.USER)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailsScreen)
        assert app.screen.mode is Mode.USER
        await pilot.press("escape")
        screen = await wait_for(pilot, ChooseModeScreen)
        # ...and forcing the highlight onto it and selecting does nothing.
        modes = screen.query_one("#modes", OptionList)
        modes.highlighted = 0
        modes.action_select()
        await pilot.pause()
        assert isinstance(app.screen, ChooseModeScreen)
        assert "systempaths=unconfined" in str(sandbox.prompt)


async def test_sandbox_host_recommends_sandbox(tmp_path: Path) -> None:
    app = make_app(make_root(tmp_path), SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _to_mode_screen(pilot, app)
        modes = screen.query_one("#modes", OptionList)
        assert not any(modes.get_option(m.value).disabled for m in Mode)
        assert "recommended" in str(modes.get_option("sandbox").prompt)
        await pilot.press("enter")
        details = await wait_for(pilot, DetailsScreen)
        assert details.mode is Mode.SANDBOX
        # Inner sandbox preset from the probes: nested bwrap passed -> strong.
        pressed = details.query_one("#inner", RadioSet).pressed_button
        assert pressed is not None and str(pressed.label) == "strong"


async def test_unsafe_cannot_complete_without_the_phrase(tmp_path: Path) -> None:
    app = make_app(make_root(tmp_path), SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _to_mode_screen(pilot, app)
        screen.query_one("#modes", OptionList).highlighted = list(Mode).index(Mode.UNSAFE)
        await pilot.press("enter")
        await wait_for(pilot, DetailsScreen)
        await pilot.press("ctrl+n")
        unsafe = await wait_for(pilot, UnsafeScreen)
        phrase = unsafe.query_one("#phrase", Input)
        assert phrase.value == ""  # never a default
        assert unsafe.query_one("#accept", Button).disabled
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, UnsafeScreen)
        await type_text(pilot, "yes")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, UnsafeScreen)
        assert "does not match" in str(unsafe.query_one("#unsafe-error", Static).render())
        # Pressing the (disabled) button does nothing either.
        unsafe.query_one("#accept", Button).press()
        await pilot.pause()
        assert isinstance(app.screen, UnsafeScreen)
        phrase.value = ""
        await type_text(pilot, UNSAFE_PHRASE)
        assert not unsafe.query_one("#accept", Button).disabled
        await pilot.press("enter")
        await wait_for(pilot, ReviewScreen)
        # Going back shows the phrase empty again: acceptance is typed every time.
        await pilot.press("escape")
        unsafe = await wait_for(pilot, UnsafeScreen)
        assert unsafe.query_one("#phrase", Input).value == ""
        assert unsafe.query_one("#accept", Button).disabled


async def test_back_navigation_keeps_answers(tmp_path: Path) -> None:
    root = make_root(tmp_path, ("/srv/a", "/srv/b"))
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode_screen(pilot, app)
        await pilot.press("down", "enter")  # user mode
        details = await wait_for(pilot, DetailsScreen)
        assert details.mode is Mode.USER
        await type_text(pilot, "/srv/a, /srv/b")
        await pilot.press("tab")
        agent = details.query_one("#agent-user", Input)
        agent.value = ""
        await type_text(pilot, "bot")
        details.query_one("#scope-user").value = True
        await pilot.press("ctrl+n")
        await wait_for(pilot, ReviewScreen)
        await pilot.press("escape")
        details = await wait_for(pilot, DetailsScreen)
        assert details.query_one("#workspaces", Input).value == "/srv/a, /srv/b"
        assert details.query_one("#agent-user", Input).value == "bot"
        pressed = details.query_one("#scope", RadioSet).pressed_button
        assert pressed is not None and str(pressed.label) == "user"
        await pilot.press("escape")
        modes = await wait_for(pilot, ChooseModeScreen)
        assert modes.query_one("#modes", OptionList).highlighted == 1  # user kept
        await pilot.press("escape")
        checks = await wait_for(pilot, ChecksScreen)
        assert checks.report is not None  # no new probe run on the way back
        await pilot.press("n")
        await wait_for(pilot, ChooseModeScreen)
        await pilot.press("enter")
        details = await wait_for(pilot, DetailsScreen)
        assert details.query_one("#agent-user", Input).value == "bot"


async def test_details_validation_names_the_problem(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = make_app(root, SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode_screen(pilot, app)
        await pilot.press("enter")  # sandbox
        details = await wait_for(pilot, DetailsScreen)
        error = details.query_one("#details-error", Static)
        cases = [
            ("", "needs at least one workspace"),
            ("srv/project", "not an absolute path"),
            ("/etc", "system directory"),
            ("/srv/missing", "does not exist"),
        ]
        for value, message in cases:
            details.query_one("#workspaces", Input).value = value
            await pilot.press("ctrl+n")
            await pilot.pause()
            assert isinstance(app.screen, DetailsScreen)
            assert message in str(error.render()), (value, str(error.render()))
        details.query_one("#workspaces", Input).value = "/srv/project"
        details.query_one("#agent-user", Input).value = "Root!"
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert "not a valid user name" in str(error.render())
        assert app.focused is details.query_one("#agent-user", Input)
        # Nothing was written while validating.
        assert sorted(p.name for p in root.iterdir()) == ["etc", "srv"]


async def test_no_color_is_respected(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With NO_COLOR the screen is monochrome, and status still reads in words."""
    import re

    # The window buttons and default foreground of the SVG template are not the app.
    chrome = {"ff5f57", "febc2e", "28c840", "c5c8c6"}
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(make_root(tmp_path), CONTAINER_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _to_mode_screen(pilot, app)
        svg = app.export_screenshot()
        colors = set(re.findall(r"#([0-9a-f]{6})\b", svg)) - chrome
        assert colors
        assert all(c[0:2] == c[2:4] == c[4:6] for c in colors), " ".join(sorted(colors))
        prompt = str(screen.query_one("#modes", OptionList).get_option("sandbox").prompt)
        assert "not available here" in prompt
    monkeypatch.delenv("NO_COLOR")
    app = make_app(make_root(tmp_path), CONTAINER_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode_screen(pilot, app)
        colors = set(re.findall(r"#([0-9a-f]{6})\b", app.export_screenshot())) - chrome
        assert not all(c[0:2] == c[2:4] == c[4:6] for c in colors)  # the check can fail


async def test_tab_reaches_every_field_then_the_buttons(tmp_path: Path) -> None:
    app = make_app(make_root(tmp_path), SANDBOX_HOST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode_screen(pilot, app)
        await pilot.press("enter")  # sandbox
        details = await wait_for(pilot, DetailsScreen)
        expected = [
            "workspaces",
            "agent-user",
            "reuse-account",
            "network",
            "domains",
            "ports",
            "inner",
            "scope",
            "copy-login",
            "include-private",
            "pass-env",
            "tasks",
            "memory",
            "tmpfs",
            "install-shim",
            "claude",
            "next",
            "back",
        ]
        order = []
        for _ in range(len(expected) + 1):
            order.append(app.focused.id if app.focused else None)
            await pilot.press("tab")
        assert order[:-1] == expected
        assert order[-1] == "workspaces"  # wraps around
        assert details.query_one("#next", Button).has_class("-textual-compact")


async def test_live_probes_fill_the_checks_screen(tmp_path: Path) -> None:
    """The real probe suite (no fake) drives the screen: every registered check
    gets a row, first "running", then its finding."""
    from sandbox_setup.checks.registry import CHECKS
    from sandbox_setup.commands.interactive import InteractiveCore
    from sandbox_setup.tui.app import SetupApp

    app = SetupApp(InteractiveCore.for_root(make_root(tmp_path)))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, WelcomeScreen)
        await pilot.press("enter")
        screen = await wait_for(pilot, ChecksScreen)
        rows = screen.query_one(FindingList)
        # A row for every check from the start ("running" until its finding comes).
        assert [check_id for check_id, _ in app.core.pending] == [c.id for c in CHECKS]
        assert sorted(r.id for r in rows.rows) == sorted(c.id for c in CHECKS)
        await wait_until(pilot, lambda: screen.report is not None, tries=3000)
        assert sorted(r.id for r in rows.rows) == sorted(c.id for c in CHECKS)
        assert all(row.marker != "...." for row in rows.rows)
        # Worst first, the one order of severity.
        ranks = [screen.report.get(r.id).status.rank for r in rows.rows]  # type: ignore[union-attr]
        assert ranks == sorted(ranks)
        assert screen.report.get("identity.root") is not None


async def test_non_root_operator_defaults(tmp_path: Path) -> None:
    """A non-root operator: their own account is the agent, settings scope user."""
    from sandbox_setup.base.accounts import Account
    from sandbox_setup.base.paths import Layout
    from sandbox_setup.commands.interactive import InteractiveCore
    from sandbox_setup.tui.app import SetupApp

    root = make_root(tmp_path)
    alice = Account("alice", 1000, 1000, Path("/home/alice"), "/bin/sh")
    app = SetupApp(InteractiveCore(Layout(root.resolve(), alice), FakeProvider(SANDBOX_HOST)))
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode_screen(pilot, app)
        await pilot.press("enter")
        details = await wait_for(pilot, DetailsScreen)
        assert details.query_one("#agent-user", Input).value == "alice"
        pressed = details.query_one("#scope", RadioSet).pressed_button
        assert pressed is not None and str(pressed.label) == "user"
