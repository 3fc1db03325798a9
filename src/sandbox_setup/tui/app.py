"""The interactive wizard: the only module outside ``src/sandbox_setup/tui/`` that imports Textual.

:func:`run_app` is what ``sandbox-setup`` runs without an action flag. The
app takes a :class:`sandbox_setup.tui.core.Core` (the real one is
:class:`sandbox_setup.commands.interactive.InteractiveCore`), so tests drive it under a
temp root with fixed findings.

Keys that work on every screen: ``?`` and F1 (the keys of this screen), Ctrl+Q
and Ctrl+C (quit: at once before anything is applied, after a question while an
apply runs), Ctrl+P (the command palette: the same actions as the keys, found by
name). A deliberate quit exits 0 and says on stderr that nothing was changed;
130 is left for a real interrupt (a signal).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.filter import LineFilter
from textual.screen import Screen
from textual.widgets import Input

from sandbox_setup.base.errors import InputError
from sandbox_setup.base.exitcodes import ExitCode
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.tui import STYLESHEET
from sandbox_setup.tui.confirm import ConfirmQuit
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.flow import run_flow
from sandbox_setup.tui.glyphs import AsciiFilter, locale_is_utf8
from sandbox_setup.tui.help import HelpScreen, screen_keys, screen_name
from sandbox_setup.tui.step import StepScreen


class SetupApp(App[int]):
    """Runs :func:`sandbox_setup.tui.flow.run_flow` and exits with its code."""

    CSS_PATH = str(STYLESHEET)
    TITLE = "sandbox-setup"
    COMMAND_PALETTE_DISPLAY = "^p"
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        # Shown where ? is typed into a text field instead.
        Binding("f1", "help", "Help", key_display="F1"),
        Binding("ctrl+q", "quit_wizard", "Quit", key_display="^q", priority=True),
        # Priority: Ctrl+C quits from a text field too (copying, when text is selected).
        Binding("ctrl+c", "ctrl_c", "Quit", show=False, priority=True),
    ]

    def __init__(self, core: Core, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.core = core
        # What to say on stderr once the terminal is back (run_app prints it).
        self.farewell: str | None = None
        # A locale that is not UTF-8 gets every glyph drawn in ASCII (tui/glyphs.py).
        self.ascii_filter = None if locale_is_utf8(os.environ) else AsciiFilter()

    def get_line_filters(self) -> Sequence[LineFilter]:
        filters = super().get_line_filters()
        return filters if self.ascii_filter is None else [*filters, self.ascii_filter]

    def on_mount(self) -> None:
        self.flow()

    @work(exclusive=True, group="flow")
    async def flow(self) -> None:
        outcome = await run_flow(self, self.core)
        self.farewell = outcome.message
        self.exit(outcome.code)

    # -- keys everywhere ----------------------------------------------------
    def _step(self) -> StepScreen[Any] | None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, StepScreen):
                return screen
        return None

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        below = self.screen
        self.push_screen(HelpScreen(screen_keys(below), screen_name(below)))

    async def action_quit_wizard(self) -> None:
        step = self._step()
        if step is None:
            self.exit(int(ExitCode.OK))
            return
        if step.locked:
            if not isinstance(self.screen, ConfirmQuit):

                def answered(quit_: bool | None) -> None:
                    if quit_:
                        step.quit_when_done()

                self.push_screen(ConfirmQuit(), answered)
            return
        while self.screen is not step:  # help, a detail view, the palette
            await self.pop_screen()
        step.quit_now()

    async def action_ctrl_c(self) -> None:
        focused = self.focused
        if isinstance(focused, Input) and focused.selected_text:
            self.copy_to_clipboard(focused.selected_text)
            return
        await self.action_quit_wizard()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette: this screen's keys by name, then help and quit (no themes,
        no screenshots: nothing that is not the wizard's)."""
        seen = {"help", "quit_wizard", "ctrl_c", "command_palette"}
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.description or not active.enabled or binding.action in seen:
                continue
            seen.add(binding.action)
            key = self.get_key_display(binding)
            yield SystemCommand(
                binding.description,
                f"the {key} key on this screen",
                # Default arguments bind this binding, not the loop's last one.
                lambda action=binding.action, node=active.node: self.call_later(
                    self.run_action, action, node
                ),
            )
        yield SystemCommand("Help", "every key of this screen (? or F1)", self.action_help)
        yield SystemCommand("Quit", "leave the wizard (Ctrl+Q)", self.action_quit_wizard)


def run_app(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InputError(
            "the interactive wizard needs a terminal; use --check, --audit or --headless"
        )

    app = SetupApp(InteractiveCore.for_root(args.root))
    code = app.run()
    if app.farewell:
        print(app.farewell, file=sys.stderr)
    return int(ExitCode.INTERRUPTED) if code is None else int(code)
