"""Apply: progress per action and a log while the core applies in a thread
worker; on failure the core has rolled back and the screen says so.

The log has one line per action, written when it has finished; the status line
names the one running. The screen is ``locked`` while applying: quitting then
asks first and happens once the apply has finished (:meth:`quit_when_done`).
After a successful apply there is no way back to the review (it would show a
plan with nothing left to do): Continue goes on to the done screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Footer, ProgressBar, RichLog, Static

from sandbox_setup.base.printable import printable_lines
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.step import StepScreen
from sandbox_setup.tui.widgets import ActionButton

if TYPE_CHECKING:
    from sandbox_setup.configure.apply import ApplyResult
    from sandbox_setup.configure.plan import Plan


class ApplyScreen(StepScreen["ApplyResult"]):
    """Returns the apply result; on failure ``Nav.BACK`` returns to the review;
    ``Nav.QUIT`` when the operator asked to quit while it ran (:attr:`result`
    then says whether it was applied)."""

    STEP = "apply"

    class Progress(Message):
        def __init__(self, line: str, finished: bool) -> None:
            super().__init__()
            self.line = line
            self.finished = finished

    class Finished(Message):
        def __init__(self, result: ApplyResult | None, error: str | None) -> None:
            super().__init__()
            self.result = result
            self.error = error

    def __init__(self, core: Core, plan: Plan) -> None:
        super().__init__()
        self.core = core
        self.plan = plan
        self.result: ApplyResult | None = None
        self.error: str | None = None
        self.busy = True
        self.locked = True  # a half-done apply must not be abandoned by a keypress
        self.quit_requested = False

    def compose(self) -> ComposeResult:
        yield self.step_bar(f"{self.plan.answers.mode.value} mode")
        yield Static("Applying…", id="apply-status", classes="status-line")
        yield ProgressBar(total=max(1, len(self.plan.actions)), show_eta=False, id="progress")
        # min_width: RichLog renders every line at least 78 cells wide (its default),
        # wider than the log at 80 columns: a wrapped line lost its last characters.
        yield RichLog(id="apply-log", wrap=True, markup=False, highlight=False, min_width=1)
        with Horizontal(classes="buttons"):
            yield ActionButton(
                "Continue", id="continue", variant="primary", disabled=True, compact=True
            )
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.run_apply()

    @work(thread=True, exclusive=True, group="apply", exit_on_error=False)
    def run_apply(self) -> None:
        try:
            result = self.core.apply(
                self.plan, lambda line, done: self.post_message(self.Progress(line, done))
            )
        except Exception as exc:
            self.post_message(self.Finished(None, self.core.error_words(exc)))
            return
        self.post_message(self.Finished(result, None))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return not self.busy and self.error is not None  # only back to a failed plan
        return super().check_action(action, parameters)

    def quit_when_done(self) -> None:
        if not self.busy:
            self.quit_now()
            return
        self.quit_requested = True
        self.query_one("#apply-status", Static).update(
            "Applying… the wizard quits as soon as the apply has finished."
        )

    @on(Progress)
    def _progress(self, message: Progress) -> None:
        if not message.finished:
            if not self.quit_requested:
                line = Text("Applying: " + printable_lines(message.line))  # not markup
                self.query_one("#apply-status", Static).update(line)
            return
        self.query_one("#progress", ProgressBar).advance(1)
        self.query_one("#apply-log", RichLog).write(Text(printable_lines(message.line)))

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self.busy = False
        self.locked = False
        self.result = message.result
        self.error = message.error
        if self.quit_requested:
            self.quit_now()
            return
        status = self.query_one("#apply-status", Static)
        log = self.query_one("#apply-log", RichLog)
        button = self.query_one("#continue", ActionButton)
        bar = self.query_one("#progress", ProgressBar)
        if message.error is None:
            self.can_go_back = False
            bar.update(progress=bar.total or 0)
            status.update(Text("Applied. Every change is in the journal.", style="bold"))
        else:
            status.update(Text("Apply failed; the changes made were rolled back.", style="bold"))
            log.write(Text("error: " + message.error))
            button.label = "Back to review"
        button.disabled = False
        button.focus()
        self.refresh_bindings()

    @on(ActionButton.Pressed, "#continue")
    def _continue(self) -> None:
        if self.error is not None:
            self.action_back()
        elif not self.busy and self.result is not None:
            self.dismiss(self.result)
