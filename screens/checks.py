"""Host checks: findings fill in live while the probes run in a thread worker."""

from __future__ import annotations

from collections import Counter

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Footer, Header, Static

from checks.model import Finding, Report
from screens.core import Core
from screens.findings_view import FindingsView
from screens.step import StepScreen


def summarize(report: Report) -> str:
    counts = Counter(f.status.value for f in report.findings)
    parts = [f"{counts[s]} {s}" for s in ("pass", "warn", "fail", "error", "skip") if counts[s]]
    rec = report.recommendation
    return f"{len(report.findings)} checks: {', '.join(parts)}. Recommended: {rec.mode.value}."


class ChecksScreen(StepScreen[Report]):
    """Returns the :class:`Report` once the probes finished and the operator continues."""

    BINDINGS = [
        Binding("r", "rerun", "Re-run"),
        Binding("n", "next", "Next"),
    ]

    class FindingArrived(Message):
        def __init__(self, finding: Finding) -> None:
            super().__init__()
            self.finding = finding

    class ChecksFinished(Message):
        def __init__(self, report: Report | None, error: str | None = None) -> None:
            super().__init__()
            self.report = report
            self.error = error

    def __init__(self, core: Core, report: Report | None = None) -> None:
        super().__init__()
        self.core = core
        self.report = report
        self._arrived = 0

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="checks-status", classes="status-line")
        yield FindingsView(self._rows(), id="findings")
        with Horizontal(classes="buttons"):
            yield Button("Next", id="next", variant="primary", disabled=True, compact=True)
            yield Button("Re-run", id="rerun", disabled=True, compact=True)
        yield Footer()

    def _rows(self) -> list[tuple[str, str]]:
        if self.report is not None:
            return [(f.id, f.title) for f in self.report.findings]
        return list(self.core.pending)

    def on_mount(self) -> None:
        self.sub_title = "host checks"
        if self.report is None:
            self.action_rerun(force=True)
        else:  # back from a later step: keep the findings, no new probe run
            for finding in self.report.findings:
                self.query_one(FindingsView).add_finding(finding)
            self._finished(self.report)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("rerun", "next"):
            return not self.busy
        return super().check_action(action, parameters)

    def action_rerun(self, force: bool = False) -> None:
        if self.busy and not force:
            return
        self.busy = True
        self.report = None
        self._arrived = 0
        self.query_one(FindingsView).reset(list(self.core.pending))
        self.query_one("#next", Button).disabled = True
        self.query_one("#rerun", Button).disabled = True
        self.query_one("#checks-status", Static).update("Running checks…")
        self.refresh_bindings()
        self.run_probes()

    @work(thread=True, exclusive=True, group="probes", exit_on_error=False)
    def run_probes(self) -> None:
        # Runs in a thread: it only posts messages, never touches widgets.
        try:
            report = self.core.run_checks(
                lambda finding: self.post_message(self.FindingArrived(finding))
            )
        except Exception as exc:  # a crashing runner must not freeze the wizard
            self.post_message(self.ChecksFinished(None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.ChecksFinished(report))

    @on(FindingArrived)
    def _arrive(self, message: FindingArrived) -> None:
        self._arrived += 1
        self.query_one(FindingsView).add_finding(message.finding)
        total = len(self.core.pending)
        done = f"{self._arrived}/{total}" if total else str(self._arrived)
        self.query_one("#checks-status", Static).update(f"Running checks… {done} done")

    @on(ChecksFinished)
    def _done(self, message: ChecksFinished) -> None:
        self.busy = False
        self.query_one("#rerun", Button).disabled = False
        if message.report is None:
            self.query_one("#checks-status", Static).update(
                f"The checks could not run: {message.error}"
            )
            self.refresh_bindings()
            return
        view = self.query_one(FindingsView)
        for finding in message.report.findings:
            row = view.row(finding.id)
            if row is None or row.finding is None:
                view.add_finding(finding)
        view.prune({f.id for f in message.report.findings})
        self._finished(message.report)

    def _finished(self, report: Report) -> None:
        self.report = report
        self.busy = False
        self.query_one("#checks-status", Static).update(summarize(report))
        next_button = self.query_one("#next", Button)
        next_button.disabled = False
        self.query_one("#rerun", Button).disabled = False
        next_button.focus()
        self.refresh_bindings()

    def action_next(self) -> None:
        if self.report is not None and not self.busy:
            self.dismiss(self.report)

    @on(Button.Pressed, "#next")
    def _next(self) -> None:
        self.action_next()

    @on(Button.Pressed, "#rerun")
    def _rerun(self) -> None:
        self.action_rerun()
