"""Apply: progress per action and a log while the core applies in a thread
worker; on failure the core has rolled back and the screen says so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Footer, Header, ProgressBar, RichLog, Static

from screens.core import Core
from screens.step import StepScreen

if TYPE_CHECKING:
    from wizard.configure.apply import ApplyResult
    from wizard.configure.plan import Plan


class ApplyScreen(StepScreen["ApplyResult"]):
    """Returns the apply result; on failure ``Nav.BACK`` returns to the review."""

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

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Applying…", id="apply-status", classes="status-line")
        yield ProgressBar(total=max(1, len(self.plan.actions)), show_eta=False, id="progress")
        yield RichLog(id="apply-log", wrap=True, markup=False, highlight=False)
        with Horizontal(classes="buttons"):
            yield Button("Continue", id="continue", variant="primary", disabled=True, compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "apply"
        self.run_apply()

    @work(thread=True, exclusive=True, group="apply", exit_on_error=False)
    def run_apply(self) -> None:
        try:
            result = self.core.apply(
                self.plan, lambda line, done: self.post_message(self.Progress(line, done))
            )
        except Exception as exc:
            self.post_message(self.Finished(None, str(exc) or type(exc).__name__))
            return
        self.post_message(self.Finished(result, None))

    @on(Progress)
    def _progress(self, message: Progress) -> None:
        if message.finished:
            self.query_one("#progress", ProgressBar).advance(1)
        self.query_one("#apply-log", RichLog).write(Text(message.line))

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self.busy = False
        self.locked = False
        self.result = message.result
        self.error = message.error
        status = self.query_one("#apply-status", Static)
        log = self.query_one("#apply-log", RichLog)
        button = self.query_one("#continue", Button)
        bar = self.query_one("#progress", ProgressBar)
        if message.error is None:
            bar.update(progress=bar.total or 0)
            status.update(Text("Applied. Every change is in the journal.", style="bold"))
            log.write(Text("done"))
        else:
            status.update(Text("Apply failed; the changes made were rolled back.", style="bold"))
            log.write(Text("error: " + message.error))
            button.label = "Back to review"
        button.disabled = False
        button.focus()
        self.refresh_bindings()

    @on(Button.Pressed, "#continue")
    def _continue(self) -> None:
        if self.error is not None:
            self.action_back()
        elif not self.busy and self.result is not None:
            self.dismiss(self.result)
