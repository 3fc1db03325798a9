"""Review: the plan built from the answers, before anything is written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Footer, Static

from sandbox_setup.checks.model import Report
from sandbox_setup.configure.answers import Answers
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.plan_view import action_renderable, plan_summary
from sandbox_setup.tui.step import StepScreen
from sandbox_setup.tui.widgets import ActionButton, ReadingPane

if TYPE_CHECKING:
    from sandbox_setup.configure.plan import Plan


class ReviewScreen(StepScreen["Plan"]):
    """Returns the plan to apply; the core builds it in a thread worker. A plan
    with nothing to change cannot be applied (the review says so)."""

    STEP = "review"
    BINDINGS = [Binding("a", "apply", "Apply")]

    class Planned(Message):
        def __init__(
            self, plan: Plan | None, error: str | None, parts: list[RenderableType] | None = None
        ) -> None:
            super().__init__()
            self.plan = plan
            self.error = error
            self.parts = parts or []

    def __init__(self, core: Core, report: Report, answers: Answers) -> None:
        super().__init__()
        self.core = core
        self.report = report
        self.answers = answers
        self.plan: Plan | None = None
        self.changes = 0
        self.busy = True

    def compose(self) -> ComposeResult:
        yield self.step_bar(f"{self.answers.mode.value} mode")
        yield Static("Planning…", id="plan-summary", classes="status-line")
        yield ReadingPane(id="plan")
        with Horizontal(classes="buttons"):
            yield ActionButton("Apply", id="apply", variant="primary", disabled=True, compact=True)
            yield ActionButton("Back", id="back", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        # The plan is long: the reading pane has the focus (its border shows it), so
        # ↑/↓ and PgUp/PgDn read it first; `a` applies, Tab reaches the buttons.
        self.query_one("#plan", ReadingPane).focus()
        self.make_plan()

    @work(thread=True, exclusive=True, group="plan", exit_on_error=False)
    def make_plan(self) -> None:
        backups = str(self.core.layout.backups_dir)
        try:
            plan = self.core.build_plan(self.report, self.answers)
            # Diffs read the current files: render them here, off the UI thread.
            # What the agent's network is comes first: it is the boundary the plan
            # cannot show as a file (host: what it exposes; allowlist: what it allows).
            network = Text("Network\n", style="bold")
            for line in plan.network:
                network.append(f"  {line}\n")
            parts: list[RenderableType] = [network] if plan.network else []
            parts += [
                action_renderable(i, action, backups, self.core.describe(action))
                for i, action in enumerate(plan.actions, 1)
            ]
            parts += [Text("Note: " + note) for note in plan.notes]
            parts += [Text("Warning: " + warning) for warning in plan.warnings]
        except Exception as exc:  # RefusedError/InputError carry reason and remedy
            self.post_message(self.Planned(None, self.core.error_words(exc)))
            return
        self.post_message(self.Planned(plan, None, parts))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        self.busy = False
        summary = self.query_one("#plan-summary", Static)
        body = self.query_one("#plan", ReadingPane)
        if message.error is not None:
            summary.update(Text("This plan cannot be applied.", style="bold"))
            body.mount(Static(Text(message.error), classes="error"))
            self.query_one("#back", ActionButton).focus()
            self.refresh_bindings()
            return
        assert message.plan is not None
        self.plan = message.plan
        self.changes = len(message.plan.changes())
        summary.update(plan_summary(message.plan, str(self.core.layout.backups_dir)))
        body.mount_all(Static(part, classes="plan-action") for part in message.parts)
        self.query_one("#apply", ActionButton).disabled = not self.changes
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "apply":
            return self.plan is not None and self.changes > 0
        return super().check_action(action, parameters)

    def action_apply(self) -> None:
        if self.plan is not None and self.changes:
            self.dismiss(self.plan)

    @on(ActionButton.Pressed, "#apply")
    def _apply(self) -> None:
        self.action_apply()

    @on(ActionButton.Pressed, "#back")
    def _back(self) -> None:
        self.action_back()
