"""The smaller texts of the wizard an operator tripped on: the help's title names the
screen as the step bar does, the apply log keeps every character where it wraps, the
Claude Code field's placeholder is no made-up path, and the done screen's login note is
not said when a key is in use. Pilot at 80x24, fake findings."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, RichLog

from sandbox_setup.base.choices import Mode
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.apply import ApplyResult
from sandbox_setup.configure.plan import Plan
from sandbox_setup.tui.apply import ApplyScreen
from sandbox_setup.tui.core import ProgressCallback
from sandbox_setup.tui.help import HelpScreen
from tests.tui.fake_findings import SANDBOX_HOST, FakeProvider
from tests.tui.fake_screens import FAKE_PLAN, FakeCore, ScreenHarness
from tests.tui.helpers import make_app, make_root, screen_lines, wait_for, wait_until
from tests.tui.test_habits import fake_app, to_details
from tests.tui.test_steps import _to_mode_screen

SIZE = (80, 24)


async def test_the_help_title_is_the_screens_name_in_the_step_bar(tmp_path: Path) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await _to_mode_screen(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, HelpScreen)
        shown = "\n".join(screen_lines(app))
        assert "Keys: path" in shown, shown  # the step bar's name of the step
        assert "choosemode" not in shown, shown


class LongLines(FakeCore):
    """An apply that reports many long finished steps: the log fills and scrolls."""

    def apply(self, plan: Plan, progress: ProgressCallback) -> ApplyResult:
        for index in range(30):
            progress(f"  changed  step {index:02d} " + "abcdefghij" * 9 + f" end{index:02d}", True)
        return ApplyResult(changed=["x"])


async def test_the_apply_log_keeps_every_character_where_it_wraps(tmp_path: Path) -> None:
    core = LongLines.for_root(make_root(tmp_path), FakeProvider(SANDBOX_HOST))
    app = ScreenHarness(lambda: ApplyScreen(core, FAKE_PLAN))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for(pilot, ApplyScreen)
        await wait_until(pilot, lambda: not screen.busy)
        await pilot.pause()
        log = screen.query_one("#apply-log", RichLog)
        width = log.scrollable_content_region.width
        assert log.max_scroll_y > 0  # it scrolls: the vertical scrollbar is there
        # Every wrapped piece fits the width the log shows now (a line wrapped before
        # the scrollbar came would lose its last characters under it).
        too_wide = [s.text for s in log.lines if s.cell_length > width]
        assert too_wide == [], (width, too_wide[:3])
        text = "".join(s.text.rstrip() for s in log.lines)
        for index in range(30):
            assert f"end{index:02d}" in text


async def test_the_claude_field_placeholder_is_the_path_found_or_says_none(
    tmp_path: Path,
) -> None:
    app = fake_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot, Mode.SANDBOX)
        field = details.query_one("#claude", Input)
        # FakeCore's lookup finds /usr/local/bin/claude: the placeholder says it is the
        # one an empty field means, not a value typed in.
        assert field.placeholder == "empty: /usr/local/bin/claude", field.placeholder
    app = make_app(make_root(tmp_path / "none"), SANDBOX_HOST)  # nothing installed there
    async with app.run_test(size=SIZE) as pilot:
        details = await to_details(pilot, Mode.SANDBOX)
        placeholder = details.query_one("#claude", Input).placeholder
        assert placeholder == "empty: none found; enter its path", placeholder


def test_no_login_note_when_a_key_the_launcher_passes_is_in_use(tmp_path: Path) -> None:
    core = InteractiveCore.for_root(make_root(tmp_path), FakeProvider([]))
    answers = Answers(Mode.SANDBOX, agent_user="claude-agent")
    assert core.login_note(answers, environ={}) is not None  # no login, no key
    key = {"ANTHROPIC_API_KEY": "sk-ant-api03-x"}
    assert core.login_note(answers, environ=key) is None  # Claude uses the key
    token = {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-x"}
    assert core.login_note(answers, environ=token) is None
    assert core.login_note(answers, environ={"ANTHROPIC_API_KEY": " "}) is not None  # empty
