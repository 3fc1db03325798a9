"""Host checks: findings fill in live while the probes run in a thread worker.

The list has the focus from the start, so the keys pressed while the probes run
do what they say: ↑/↓ move, Enter opens a row's full text, ``c`` copies its fix,
and Next (``n``) is remembered and taken as soon as the checks are done. When
they are, the rows are put in the one order of severity (worst first).
"""

from __future__ import annotations

from collections import Counter

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Footer, Static

from sandbox_setup.checks.model import STATUS_ORDER, Finding, Report, worst_first
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.findings_step import FindingsStep
from sandbox_setup.tui.findings_view import FindingList, Row, finding_row, pending_row
from sandbox_setup.tui.widgets import ActionButton


def summarize(report: Report) -> str:
    counts = Counter(f.status for f in report.findings)
    parts = [f"{counts[s]} {s.value}" for s in STATUS_ORDER if counts[s]]
    rec = report.recommendation
    return f"{len(report.findings)} checks: {', '.join(parts)}. Recommended: {rec.mode.value}."


class ChecksScreen(FindingsStep[Report]):
    """Returns the :class:`Report` once the probes finished and the operator continues."""

    STEP = "checks"
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
        self.next_when_done = False

    def compose(self) -> ComposeResult:
        yield self.step_bar()
        yield Static("", id="checks-status", classes="status-line")
        yield FindingList(self._rows(), id="findings")
        with Horizontal(classes="buttons"):
            yield ActionButton("Next", id="next", variant="primary", disabled=True, compact=True)
            yield ActionButton("Re-run", id="rerun", disabled=True, compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def _rows(self) -> list[Row]:
        if self.report is not None:
            return [finding_row(f) for f in worst_first(self.report.findings)]
        return [pending_row(check_id, title) for check_id, title in self.core.pending]

    def on_mount(self) -> None:
        self.query_one(FindingList).focus()
        if self.report is None:
            self.action_rerun(force=True)
        else:  # back from a later step: keep the findings, no new probe run
            self._finished(self.report)

    def action_rerun(self, force: bool = False) -> None:
        if self.busy and not force:
            return
        self.busy = True
        self.next_when_done = False
        self.report = None
        self._arrived = 0
        self.query_one(FindingList).set_rows(self._rows())
        self.query_one("#next", ActionButton).disabled = True
        self.query_one("#rerun", ActionButton).disabled = True
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

    def _status(self, text: str) -> None:
        if self.next_when_done and self.busy:
            text += "  (Next: as soon as they are done)"
        self.query_one("#checks-status", Static).update(text)

    @on(FindingArrived)
    def _arrive(self, message: FindingArrived) -> None:
        self._arrived += 1
        self.query_one(FindingList).put(finding_row(message.finding))
        total = len(self.core.pending)
        done = f"{self._arrived}/{total}" if total else str(self._arrived)
        self._status(f"Running checks… {done} done")

    @on(ChecksFinished)
    def _done(self, message: ChecksFinished) -> None:
        self.busy = False
        self.query_one("#rerun", ActionButton).disabled = False
        if message.report is None:
            self.next_when_done = False
            self._status(f"The checks could not run: {message.error}")
            self.refresh_bindings()
            return
        self._finished(message.report)

    def _finished(self, report: Report) -> None:
        self.report = report
        self.busy = False
        self.query_one(FindingList).set_rows(self._rows())
        self._status(summarize(report))
        self.query_one("#next", ActionButton).disabled = False
        self.query_one("#rerun", ActionButton).disabled = False
        self.refresh_bindings()
        if self.next_when_done:
            self.action_next()

    def action_next(self) -> None:
        if self.report is not None and not self.busy:
            self.dismiss(self.report)
        elif self.busy:  # remembered, not lost
            self.next_when_done = True
            self._status(f"Running checks… {self._arrived} done")

    @on(ActionButton.Pressed, "#next")
    def _next(self) -> None:
        self.action_next()
