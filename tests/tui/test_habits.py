"""The habits of well-loved terminal tools (issue 17), each shown with Pilot at 80x24
(the details screen also at 60x20), fake findings and a temp root.

Help on ? and F1, the command palette, footers with the keys that matter, the step
indicator, the details form (label in view, state without colour, the selected and
highlighted option agreeing, invalid fields marked where they are, Ctrl+N after
typing), the new settings validated by the core, a row's full text and the key that
copies its fix, visible focus on every Tab stop, quitting.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual import events
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, Input, RadioSet, Static

from sandbox_setup.audit.model import AuditFinding, AuditReport, Grade, Severity
from sandbox_setup.base.choices import InnerSandbox, Mode
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.answers import Answers
from sandbox_setup.tui.app import SetupApp
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.checks import ChecksScreen
from sandbox_setup.tui.choose_mode import ChooseModeScreen
from sandbox_setup.tui.confirm import ConfirmQuit
from sandbox_setup.tui.detail import DetailScreen
from sandbox_setup.tui.details import DetailsScreen
from sandbox_setup.tui.done import DoneScreen, done_text
from sandbox_setup.tui.findings_view import FindingList
from sandbox_setup.tui.flow import NOTHING_CHANGED
from sandbox_setup.tui.form import Field
from sandbox_setup.tui.help import HelpScreen, help_table, screen_keys
from sandbox_setup.tui.review import ReviewScreen
from sandbox_setup.tui.unsafe import UnsafeScreen
from sandbox_setup.tui.welcome import WelcomeScreen, welcome_text
from sandbox_setup.tui.widgets import StepBar
from tests.tui.fake_findings import CONTAINER_HOST, SANDBOX_HOST, FakeProvider
from tests.tui.fake_screens import (
    FAKE_AUDIT,
    FAKE_PLAN,
    FakeAction,
    FakeCore,
    ScreenHarness,
    WizardHarness,
    fake_core,
    fake_plan,
    report_of,
)
from tests.tui.helpers import make_root, plain, screen_lines, type_text, wait_for, wait_until
from tests.tui.test_steps import _to_mode_screen

SIZE = (80, 24)


def fake_app(root: Path, findings: list[Any] = SANDBOX_HOST) -> SetupApp:
    return SetupApp(FakeCore(Layout.for_root(root), FakeProvider(findings)))


async def to_details(pilot: Pilot[Any], mode: Mode = Mode.SANDBOX) -> DetailsScreen:
    screen = await _to_mode_screen(pilot, pilot.app)
    screen.query_one("#modes").highlighted = list(Mode).index(mode)  # type: ignore[attr-defined]
    await pilot.press("enter")
    return await wait_for(pilot, DetailsScreen)  # type: ignore[no-any-return]


def footer_text(app: Any) -> str:
    return screen_lines(app)[-1]


def look(app: Any, widget: Widget) -> list[list[tuple[str, Any]]]:
    """How ``widget`` looks on the terminal now: the text and style of its cells."""
    strips = app.screen._compositor.render_strips()
    region = widget.region.intersection(app.screen.region)
    return [
        [(segment.text, segment.style) for segment in strips[y].crop(region.x, region.right)]
        for y in range(region.y, region.bottom)
    ]


async def settle(pilot: Pilot[Any]) -> None:
    """Until scrolling into view and repainting are done."""
    for _ in range(3):
        await pilot.wait_for_scheduled_animations()
        await pilot.pause(0.05)


async def burst(pilot: Pilot[Any], *keys: str) -> None:
    """Keys as a fast typist or a paste sends them: all queued before the app
    handles the first (Pilot.press waits for the app after every key)."""
    app = pilot.app
    for key in keys:
        char = key if len(key) == 1 else None
        name = {"/": "slash", "-": "minus", ".": "full_stop", "_": "underscore"}.get(key, key)
        event = events.Key(name, char)
        event.set_sender(app)
        app._driver.send_message(event)  # type: ignore[union-attr]
    await pilot.pause()


# -- help, palette, footer, step indicator ------------------------------------


async def test_help_lists_every_key_of_the_screen_on_question_mark_and_f1(
    tmp_path: Path,
) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, WelcomeScreen)
        for key in ("question_mark", "f1"):
            shown = screen_keys(app.screen)
            await pilot.press(key)
            help_screen = await wait_for(pilot, HelpScreen)
            listed = plain(help_table(help_screen.keys))
            for keys, what in shown:
                assert what in listed and keys in listed, (keys, what, listed)
            assert "Start host checks" not in listed  # a button, not a key
            await pilot.press("escape")
            await wait_for(pilot, WelcomeScreen)
        await pilot.press("enter")
        checks = await wait_for(pilot, ChecksScreen)
        await wait_until(pilot, lambda: checks.report is not None)
        await pilot.press("question_mark")
        help_screen = await wait_for(pilot, HelpScreen)
        listed = plain(help_table(help_screen.keys))
        for what in ("Re-run", "Next", "Copy", "Open", "Back", "Field", "Quit", "Help"):
            assert what in listed, (what, listed)
        assert "Keys: checks" in "\n".join(screen_lines(app))
        await pilot.press("f1")  # F1 (like ?) closes it again
        await wait_for(pilot, ChecksScreen)


async def test_question_mark_types_into_a_text_field_and_f1_still_helps(tmp_path: Path) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot)
        await type_text(pilot, "/a?q")  # neither ? nor q leaves a text field
        assert details.query_one("#workspaces", Input).value == "/a?q"
        assert isinstance(app.screen, DetailsScreen)
        assert "F1 Help" in footer_text(app)  # where ? is typed, the footer says F1
        await pilot.press("f1")
        help_screen = await wait_for(pilot, HelpScreen)
        assert "Next" in plain(help_table(help_screen.keys))


async def test_command_palette_has_the_screens_actions(tmp_path: Path) -> None:
    provider = FakeProvider(SANDBOX_HOST)
    app = SetupApp(FakeCore(Layout.for_root(make_root(tmp_path)), provider))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, WelcomeScreen)
        await pilot.press("enter")
        checks = await wait_for(pilot, ChecksScreen)
        await wait_until(pilot, lambda: checks.report is not None)
        titles = [command.title for command in app.get_system_commands(checks)]
        assert {"Re-run", "Next", "Open", "Help", "Quit"} <= set(titles), titles
        assert not any("theme" in title.lower() for title in titles)  # only the wizard's
        await pilot.press("ctrl+p")
        await wait_for(pilot, CommandPalette)
        await type_text(pilot, "Re-run")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(pilot, lambda: provider.runs == 2)


async def test_every_screen_has_a_footer_with_the_keys_that_matter(tmp_path: Path) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, WelcomeScreen)
        assert all(k in footer_text(app) for k in ("Enter", "Tab", "^q Quit", "? Help"))
        await pilot.press("enter")
        checks = await wait_for(pilot, ChecksScreen)
        await wait_until(pilot, lambda: checks.report is not None)
        footer = footer_text(app)
        assert all(k in footer for k in ("↑↓ Move", "Enter Open", "Tab", "^q Quit", "? Help"))
        await pilot.press("n")
        await wait_for(pilot, ChooseModeScreen)
        footer = footer_text(app)
        assert all(k in footer for k in ("↑↓ Move", "Enter Choose", "Esc Back", "^q Quit"))
        await pilot.press("enter")
        details = await wait_for(pilot, DetailsScreen)
        footer = footer_text(app)
        assert all(k in footer for k in ("Enter Next", "^n Next", "Tab", "^q Quit", "F1 Help"))
        details.query_one("#network").focus()
        await pilot.pause()
        assert all(k in footer_text(app) for k in ("←→ Move", "Space Choose", "^q Quit"))
        details.query_one("#copy-login").focus()
        await pilot.pause()
        assert "Space Toggle" in footer_text(app)


async def test_the_step_indicator_follows_the_steps(tmp_path: Path) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        seen = []
        await wait_for(pilot, WelcomeScreen)
        seen.append(app.screen.query_one(StepBar).step)
        await pilot.press("enter")
        checks = await wait_for(pilot, ChecksScreen)
        seen.append(app.screen.query_one(StepBar).step)
        await wait_until(pilot, lambda: checks.report is not None)
        await pilot.press("n")
        await wait_for(pilot, ChooseModeScreen)
        seen.append(app.screen.query_one(StepBar).step)
        assert "✓welcome ✓checks ●path ○details" in screen_lines(app)[0]
        await pilot.press("enter")
        details = await wait_for(pilot, DetailsScreen)
        seen.append(app.screen.query_one(StepBar).step)
        await type_text(pilot, "/srv/project")
        await pilot.press("ctrl+n")
        review = await wait_for(pilot, ReviewScreen)
        seen.append(app.screen.query_one(StepBar).step)
        await wait_until(pilot, lambda: not review.busy)
        await pilot.press("a")
        applying = await wait_for(pilot, ApplyScreen)
        seen.append(app.screen.query_one(StepBar).step)
        await wait_until(pilot, lambda: not applying.busy)
        await pilot.press("enter")
        await wait_for(pilot, DoneScreen)
        seen.append(app.screen.query_one(StepBar).step)
        assert "●done" in screen_lines(app)[0]
        assert details.mode is Mode.SANDBOX
    assert seen == ["welcome", "checks", "path", "details", "review", "apply", "done"]


# -- the details form -----------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (60, 20)], ids=["80x24", "60x20"])
async def test_details_opens_with_the_workspaces_label_and_keeps_labels_in_view(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=size) as pilot:
        details = await to_details(pilot)
        await pilot.pause(0.2)
        lines = screen_lines(app)
        assert any(line.strip().startswith("Workspaces:") for line in lines), "\n".join(lines)
        assert app.focused is details.query_one("#workspaces")
        # Every field, reached with Tab, comes into view with its label above it (the
        # offer to create a missing workspace is not shown until one is typed).
        shown_fields = [f for f in details.query(Field) if f.control in details.focus_chain]
        assert len(shown_fields) == len(details.query(Field)) - 3
        for _ in range(len(shown_fields)):
            field = next(f for f in details.query(Field) if f.control is app.focused)
            shown = "\n".join(screen_lines(app))
            assert field.label[:16] in shown, (field.label, shown)
            await pilot.press("tab")
            await pilot.pause(0.05)


def text_of(app: Any, widget: Widget) -> str:
    return "\n".join("".join(text for text, _ in row) for row in look(app, widget))


async def test_options_show_their_state_by_more_than_colour(tmp_path: Path) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot)
        inner = details.query_one("#inner")
        inner.focus()
        await pilot.pause()
        shown = text_of(app, inner)
        assert "●▌ strong" in shown and "○▌ weak" in shown and "○▌ off" in shown, shown
        await pilot.press("right", "space")
        shown = text_of(app, inner)
        assert "○▌ strong" in shown and "●▌ weak" in shown, shown
        toggle = details.query_one("#copy-login")
        toggle.focus()
        await pilot.pause()
        assert "▐ ▌" in text_of(app, toggle)
        await pilot.press("space")
        assert "▐X▌" in text_of(app, toggle)


def highlighted_label(app: Any, choices: RadioSet) -> str:
    """The option drawn highlighted: the one label on another background than the
    rest of the control."""
    labels: dict[str, Any] = {}
    blank = None
    for row in look(app, choices):
        for text, style in row:
            if not text.strip():
                blank = style.bgcolor if style else None
            elif text.strip() not in "●○▐▌":
                labels[text.strip()] = style.bgcolor if style else None
    odd = [label for label, bg in labels.items() if bg != blank]
    assert len(odd) == 1, (labels, blank)
    return odd[0]


@pytest.mark.parametrize("size", [(80, 24), (60, 20)], ids=["80x24", "60x20"])
async def test_unsafe_details_selected_and_highlighted_option_agree(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=size) as pilot:
        details = await to_details(pilot, Mode.UNSAFE)
        scope = details.query_one("#scope", RadioSet)
        pressed = scope.pressed_button
        assert pressed is not None and str(pressed.label) == "user"  # unsafe: user scope
        assert scope._selected == scope.pressed_index  # the highlight is on it too
        while app.focused is not scope:  # as the operator gets there: Tab
            await pilot.press("tab")
        await settle(pilot)
        assert "●▌ user" in text_of(app, scope)  # chosen...
        assert highlighted_label(app, scope) == "user"  # ...and drawn highlighted
        await pilot.press("space")  # choosing the highlighted option keeps "user"
        assert str(scope.pressed_button.label) == "user"  # type: ignore[union-attr]
        await pilot.press("left")
        await settle(pilot)
        assert highlighted_label(app, scope) == "managed"  # the highlight shows, and moves


async def test_ctrl_n_right_after_typing_validates_what_was_typed(tmp_path: Path) -> None:
    """50 times: type a path and press Ctrl+N at once; the message names that path.

    Fails with ``priority=True`` on the Ctrl+N binding (checked): a priority binding
    runs before the typed keys have reached the field.
    """
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot)
        field = details.query_one("#field-workspaces", Field)
        for attempt in range(50):
            details.query_one("#workspaces", Input).value = ""
            path = f"/srv/nc-does-not-exist-{attempt}"
            await burst(pilot, *path, "ctrl+n")
            await wait_until(pilot, lambda: field.error is not None, tries=200)
            assert f"workspace {path} does not exist" in field.error, (attempt, field.error)
            field.set_error(None)


async def test_invalid_fields_are_marked_where_they_are(tmp_path: Path) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot)
        details.query_one("#workspaces", Input).value = "srv/project"
        details.query_one("#ports", Input).value = "70000"
        details.query_one("#pass-env", Input).value = "LD_PRELOAD"
        await pilot.press("ctrl+n")
        await pilot.pause()
        marked = {f.control.id: f.error for f in details.query(Field) if f.has_class("invalid")}
        assert set(marked) == {"workspaces", "ports", "pass-env"}, marked
        for field in details.query(Field):
            shown = str(field.query_one(".field-error", Static).render())
            assert (field.error is None) == (shown == ""), (field.label, shown)
            if field.error:
                assert shown.startswith("✗ ") and field.control.has_class("invalid")
        assert "3 fields need attention" in str(details.query_one("#details-error").render())
        assert app.focused is details.query_one("#workspaces")  # the first one
        details.query_one("#workspaces", Input).value = "/srv/project"
        details.query_one("#ports", Input).value = "8080"
        details.query_one("#pass-env", Input).value = "MY_TOKEN"
        await pilot.press("ctrl+n")
        review = await wait_for(pilot, ReviewScreen)
        assert review.answers.loopback_ports == (8080,)
        assert review.answers.pass_env == ("MY_TOKEN",)


# -- the new settings, validated by the core with the flags' rules -----------------


def _headless_error(root: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    from sandbox_setup.cli import main

    code = main(["--headless", "--mode", "sandbox", "--workspace", "/srv/project", *flags,
                 "--root", str(root)])  # fmt: skip
    assert code == 2
    return capsys.readouterr().err


async def test_new_settings_are_validated_with_the_flags_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_root(tmp_path)
    cases = [  # field id, what is typed, the flag with the same value
        ("ports", "70000", ("--allow-loopback-port", "70000")),
        ("ports", "3128", ("--allow-loopback-port", "3128")),
        ("domains", "exa mple..com", ("--allow-domain", "exa")),
        ("pass-env", "LD_PRELOAD", ("--pass-env", "LD_PRELOAD")),
        ("pass-env", "IS_SANDBOX", ("--pass-env", "IS_SANDBOX")),
    ]
    # What the headless path says for the same values (before the app owns stderr).
    headless = {flags: _headless_error(root, capsys, *flags) for _, _, flags in cases}
    app = fake_app(root)
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot)
        details.query_one("#workspaces", Input).value = "/srv/project"
        for field_id, typed, flags in cases:
            for other in ("ports", "domains", "pass-env"):
                details.query_one(f"#{other}", Input).value = ""
            details.query_one(f"#{field_id}", Input).value = typed
            await pilot.press("ctrl+n")
            await pilot.pause()
            error = details.query_one(f"#field-{field_id}", Field).error
            assert error is not None, (field_id, typed)
            assert "--" not in error, error  # the wizard's words, not a flag
            # The same rule as the flag: the reason after the name is the flag's.
            if field_id != "domains":
                reason = error.split(": ", 1)[-1].split(" is ", 1)[-1]
                assert reason in headless[flags], (error, reason, headless[flags])
        # Limits: tasks, memory, tmpfs, each named where it is.
        details.query_one("#pass-env", Input).value = ""
        for field_id, typed, words in (
            ("tasks", "5", "out of range"),
            ("memory", "lots", "not a size"),
            ("tmpfs", "0", "more than 0"),
        ):
            details.query_one(f"#{field_id}", Input).value = typed
            await pilot.press("ctrl+n")
            await pilot.pause()
            error = details.query_one(f"#field-{field_id}", Field).error
            assert error is not None and words in error, (field_id, error)
            details.query_one(f"#{field_id}", Input).value = {"tasks": "512"}.get(
                field_id, "2G" if field_id == "memory" else "256M"
            )
        # The network choice: without the allowlist the domain and port fields are off.
        details.query_one("#network").focus()
        await pilot.press("right", "space")  # host
        assert details.query_one("#domains", Input).disabled
        await pilot.press("left", "space")  # allowlist again
        assert not details.query_one("#domains", Input).disabled
        details.query_one("#domains", Input).value = "example.com, *.example.org:8443"
        for toggle in ("#include-private", "#install-shim"):
            details.query_one(toggle).focus()
            await pilot.press("space")
        await pilot.press("ctrl+n")
        review = await wait_for(pilot, ReviewScreen)
        answers = review.answers
        assert answers.allowed_domains == ("example.com", "*.example.org:8443")
        assert answers.include_private and answers.install_claude_shim
        assert answers.limits is not None and answers.limits.tasks == 512
        assert (answers.limits.memory, answers.limits.tmpfs) == ("2G", "256M")


async def test_an_existing_account_is_reused_only_when_asked_and_refusals_say_why(
    tmp_path: Path,
) -> None:
    root = make_root(tmp_path)
    (root / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\nbob:x:1001:1001:Bob:/home/bob:/bin/bash\n"
    )
    (root / "etc/group").write_text("root:x:0:\nbob:x:1001:\n")
    (root / "etc/shadow").write_text("root:*:1:0:99999:7:::\nbob:$6$salt$hash:1:0:99999:7:::\n")
    app = fake_app(root)
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot, Mode.USER)
        details.query_one("#agent-user", Input).value = "bob"
        await pilot.press("ctrl+n")
        await pilot.pause()
        reuse = details.query_one("#field-reuse-account", Field)
        assert reuse.error is not None and "already exists" in reuse.error
        assert "Reuse an existing account" in reuse.error
        details.query_one("#reuse-account").focus()
        await pilot.press("space")
        await pilot.press("ctrl+n")
        await pilot.pause()
        agent = details.query_one("#field-agent-user", Field)
        assert agent.error is not None and "usable password" in agent.error, agent.error
        assert "usermod" in agent.error  # the reason comes with its fix
        assert "--agent-user" not in agent.error  # and in the wizard's words


# -- rows: full text, the fix copied ------------------------------------------------


async def test_a_check_row_opens_its_full_text_and_copies_its_fix(tmp_path: Path) -> None:
    long_summary = "Can't mount proc on /newroot/proc " + "because of a long reason " * 6
    findings = [
        f if f.id != "bwrap.sandbox" else type(f)(**{**f.__dict__, "summary": long_summary})
        for f in CONTAINER_HOST
    ]
    app = fake_app(make_root(tmp_path), findings)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, WelcomeScreen)
        await pilot.press("enter")
        checks = await wait_for(pilot, ChecksScreen)
        await wait_until(pilot, lambda: checks.report is not None)
        rows = checks.query_one(FindingList)
        lines = screen_lines(app)
        at = next(i for i, line in enumerate(lines) if "bwrap.sandbox" in line)
        # The row wraps under its marker (never cut at the width on its first line)...
        assert "…" not in lines[at]
        assert lines[at + 1].startswith(" " * 8) and "long reason" in lines[at + 1], lines
        rows.highlighted = [r.id for r in rows.rows].index("bwrap.sandbox")
        await pilot.press("enter")
        detail = await wait_for(pilot, DetailScreen)
        shown = "\n".join(screen_lines(app))
        # ...and its full text is here: summary, detail and fix.
        assert "long reason" in shown and "fake detail of bwrap.sandbox" in shown
        assert "systempaths=unconfined" in shown
        await pilot.press("c")
        assert app.clipboard == detail.row.remedy != ""
        await pilot.press("escape")
        await wait_for(pilot, ChecksScreen)
        rows.highlighted = [r.id for r in rows.rows].index("tty.tiocsti")
        await pilot.press("c")  # from the list too
        assert app.clipboard == "sysctl -w dev.tty.legacy_tiocsti=0"


async def test_audit_rows_open_with_the_diff_and_fix_needs_something_to_fix(
    tmp_path: Path,
) -> None:
    core = fake_core(tmp_path, SANDBOX_HOST)
    app = WizardHarness(lambda: AuditScreen(core))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: screen.audit is not None)
        assert app.focused is screen.query_one(FindingList)  # the rows, not Fix
        assert not screen.query_one("#fix", Button).disabled  # there is drift to fix
        await pilot.press("enter")
        await wait_for(pilot, DetailScreen)
        shown = "\n".join(screen_lines(app))
        assert '+  "sandbox": {' in shown and "sandbox-setup --headless" in shown
    clean = AuditReport(**{**FAKE_AUDIT.__dict__, "findings": FAKE_AUDIT.findings[1:]})
    core = fake_core(tmp_path, SANDBOX_HOST)
    core.audit = lambda: clean  # type: ignore[method-assign]
    app = WizardHarness(lambda: AuditScreen(core))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: screen.audit is not None and not screen.busy)
        fix = screen.query_one("#fix", Button)
        assert fix.disabled and app.focused is not fix  # nothing to fix: no Fix
        await pilot.press("f")
        await pilot.pause()
        assert app.screen is screen


async def test_audit_explains_its_scale_and_lists_worst_first_like_the_cli(
    tmp_path: Path,
) -> None:
    from sandbox_setup.audit.render import render_text

    findings = [
        AuditFinding("audit.a.low", Severity.LOW, "low one"),
        AuditFinding("audit.b.medium", Severity.MEDIUM, "medium one"),
        AuditFinding("audit.c.info", Severity.INFO, "info one"),
        AuditFinding("audit.d.high", Severity.HIGH, "high one"),
    ]
    legend = "exposure 0.0-10.0: 0.0-1.9 OK, 2.0-4.9 MEDIUM, 5.0-7.9 EXPOSED, 8.0-10.0 UNSAFE"
    audit = AuditReport(**{**FAKE_AUDIT.__dict__, "findings": findings})
    audit.grade = Grade(4.3, "MEDIUM", legend)
    core = fake_core(tmp_path, SANDBOX_HOST)
    core.audit = lambda: audit  # type: ignore[method-assign]
    app = WizardHarness(lambda: AuditScreen(core))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for(pilot, AuditScreen)
        await wait_until(pilot, lambda: screen.audit is not None)
        ids = [r.id for r in screen.query_one(FindingList).rows if r.id.startswith("audit.")]
        status = str(screen.query_one("#audit-status", Static).render())
    text = render_text(audit)
    assert ids == sorted(ids, key=text.index)  # the CLI's order
    assert ids == ["audit.d.high", "audit.b.medium", "audit.a.low", "audit.c.info"]
    assert audit.grade.meaning in status and "0.0-1.9 OK" in status


# -- focus --------------------------------------------------------------------------


async def assert_focus_shows(pilot: Pilot[Any]) -> list[str]:
    """Tab through every stop of the screen; each looks different with the focus."""
    app = pilot.app
    checked = []
    chain = list(app.screen.focus_chain)
    assert chain, "nothing to focus"
    for widget in chain:
        widget.focus()
        await settle(pilot)
        focused, where = look(app, widget), widget.region
        assert focused, f"{widget!r} is not on the screen with the focus"
        app.screen.set_focus(None)  # no focus (and no scrolling): the same place
        await settle(pilot)
        assert widget.region == where
        assert look(app, widget) != focused, f"{widget!r} shows no focus"
        checked.append(widget.id or type(widget).__name__)
    return checked


async def test_every_tab_stop_shows_focus(tmp_path: Path) -> None:
    core = fake_core(tmp_path, SANDBOX_HOST)
    (tmp_path / "srv/project").mkdir(parents=True, exist_ok=True)
    report = report_of(SANDBOX_HOST)
    screens: list[Any] = [
        lambda: WelcomeScreen(welcome_text("root", 0, None, "/", None)),
        lambda: ChecksScreen(core, report),
        lambda: DetailsScreen(
            core, Mode.SANDBOX, Answers(Mode.SANDBOX), InnerSandbox.STRONG, "hint"
        ),
        lambda: DetailsScreen(
            core, Mode.UNSAFE, Answers(Mode.SANDBOX), InnerSandbox.STRONG, "hint"
        ),
        UnsafeScreen,
        lambda: ReviewScreen(core, report, Answers(Mode.SANDBOX)),
        lambda: DoneScreen(done_text("sandbox", "/a", "/b", "/")),
        lambda: AuditScreen(core),
    ]
    stops: list[str] = []
    for make in screens:
        app = ScreenHarness(make)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            await wait_until(pilot, lambda: not getattr(pilot.app.screen, "busy", False))
            stops += await assert_focus_shows(pilot)
    for stop in ("start", "findings", "workspaces", "network", "copy-login", "claude", "plan"):
        assert stop in stops, stops


async def test_the_review_opens_with_visible_focus_on_the_plan(tmp_path: Path) -> None:
    core = fake_core(tmp_path, SANDBOX_HOST)
    app = ScreenHarness(lambda: ReviewScreen(core, report_of(SANDBOX_HOST), Answers(Mode.SANDBOX)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: pilot.app.screen.plan is not None)
        await pilot.pause()
        assert app.focused is app.screen.query_one("#plan")
        assert "┏" in screen_lines(app)[4]  # the heavy border of the focused pane


# -- plan, apply, going back --------------------------------------------------------


async def test_the_apply_log_has_each_action_once_and_there_is_no_way_back(
    tmp_path: Path,
) -> None:
    core = fake_core(tmp_path, SANDBOX_HOST)
    app = ScreenHarness(lambda: ApplyScreen(core, FAKE_PLAN))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not screen.busy)
        log = [str(line.text) for line in screen.query_one("#apply-log").lines]  # type: ignore[attr-defined]
        for action in FAKE_PLAN.actions:
            assert sum(action.describe() in line for line in log) == 1, (action.describe(), log)
        await pilot.press("escape")  # applied: no going back to a plan with nothing to do
        await pilot.pause()
        assert app.screen is screen


async def test_a_plan_with_nothing_to_change_cannot_be_applied(tmp_path: Path) -> None:
    core = fake_core(tmp_path, SANDBOX_HOST)
    done = [FakeAction(a.fake_kind, a.fake_target, a.text, change=False) for a in FAKE_PLAN.actions]
    core.build_plan = lambda report, answers: type(FAKE_PLAN)(  # type: ignore[method-assign]
        FAKE_PLAN.answers, FAKE_PLAN.layout, FAKE_PLAN.launcher_config, list(done)
    )
    app = ScreenHarness(lambda: ReviewScreen(core, report_of(SANDBOX_HOST), Answers(Mode.SANDBOX)))
    async with app.run_test(size=SIZE) as pilot:
        review = await wait_for(pilot, ReviewScreen)
        await wait_until(pilot, lambda: review.plan is not None)
        assert review.query_one("#apply", Button).disabled
        assert "Nothing to change" in str(review.query_one("#plan-summary", Static).render())
        assert "0 change" not in str(review.query_one("#plan-summary", Static).render())
        await pilot.press("a")
        await pilot.pause()
        assert app.screen is review


def test_plan_view_never_says_create_unchanged() -> None:
    from sandbox_setup.tui.plan_view import action_renderable

    plan = fake_plan()
    existing = FakeAction("create-user", "claude-agent", "user claude-agent already exists")
    existing.change = False
    text = plain(action_renderable(1, existing, "/b"))
    assert "already exists" in text and "unchanged" not in text
    assert plan.actions


# -- quitting -------------------------------------------------------------------------


async def test_ctrl_c_and_ctrl_q_quit_with_exit_0_before_applying(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    for key in ("ctrl+c", "ctrl+q", "q"):
        app = fake_app(root)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, WelcomeScreen)
            await pilot.press(key)
            await wait_until(pilot, lambda: app.return_value is not None)  # noqa: B023
        assert app.return_value == 0, key
        assert app.farewell == NOTHING_CHANGED
    app = fake_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await to_details(pilot)
        await type_text(pilot, "/srv/q")  # q types into the field
        assert isinstance(app.screen, DetailsScreen)
        await pilot.press("ctrl+c")  # from a text field too
        await wait_until(pilot, lambda: app.return_value is not None)
    assert app.return_value == 0 and app.farewell == NOTHING_CHANGED


async def test_quitting_while_applying_asks_and_waits_for_the_apply(tmp_path: Path) -> None:
    core = FakeCore(Layout.for_root(make_root(tmp_path)), FakeProvider(SANDBOX_HOST))
    core.gate = gate = threading.Event()
    app = SetupApp(core)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await to_details(pilot)
            await type_text(pilot, "/srv/project")
            await pilot.press("ctrl+n")
            review = await wait_for(pilot, ReviewScreen)
            await wait_until(pilot, lambda: not review.busy)
            await pilot.press("a")
            applying = await wait_for(pilot, ApplyScreen)
            await pilot.press("ctrl+q")
            await wait_for(pilot, ConfirmQuit)
            await pilot.press("n")  # keep going
            await wait_for(pilot, ApplyScreen)
            await pilot.press("ctrl+c")
            await wait_for(pilot, ConfirmQuit)
            await pilot.press("y")  # quit when done
            await wait_for(pilot, ApplyScreen)
            assert app.return_value is None and applying.busy  # still applying
            gate.set()
            await wait_until(pilot, lambda: app.return_value is not None)
    finally:
        gate.set()
    assert app.return_value == 0
    assert app.farewell is None  # it was applied: nothing to take back


# -- the done screen -------------------------------------------------------------------


def test_the_done_screen_says_when_the_agent_has_no_claude_login(tmp_path: Path) -> None:
    from sandbox_setup.commands.interactive import InteractiveCore

    root = make_root(tmp_path)
    core = InteractiveCore.for_root(root, FakeProvider([]))
    answers = Answers(Mode.SANDBOX, agent_user="claude-agent")
    note = core.login_note(answers)
    assert note is not None and "no Claude login" in note and "/login" in note
    assert "--" not in note  # no CLI flags on a screen
    text = done_text("sandbox", "/a", "/b", str(root), note)
    plain_text = Text.assemble(text).plain
    assert "Before the first launch" in plain_text and "has no Claude login yet" in plain_text
    assert plain_text.count("no Claude login") == 1  # said once
    login = root / "home/claude-agent/.claude/.credentials.json"
    login.parent.mkdir(parents=True)
    login.write_text("{}")
    assert core.login_note(answers) is None
    assert core.login_note(Answers(Mode.UNSAFE)) is None  # root's own login
