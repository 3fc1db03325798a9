"""A list of findings, each a collapsible row that expands to detail and remedy.

Shared by the host checks screen and the audit view. Rows can exist before
their finding (a pending check) and are filled in when it arrives.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import Collapsible, Static

from checks.model import Finding, Status

STATUS_LABEL = {
    Status.PASS: "pass",
    Status.WARN: "warn",
    Status.FAIL: "FAIL",
    Status.SKIP: "skip",
    Status.ERROR: "ERR!",
}


def _row_id(check_id: str) -> str:
    return "finding-" + check_id.replace(".", "-")


def finding_title(finding: Finding) -> str:
    # Collapsible titles are markup; probe text may contain brackets.
    return escape(f"{STATUS_LABEL[finding.status]} {finding.id}: {finding.summary}")


def finding_body(finding: Finding) -> Text:
    """Detail and remedy as plain text (no markup: probe output may contain [])."""
    body = Text()
    body.append(finding.title + "\n", style="bold")
    if finding.detail:
        body.append(finding.detail.rstrip() + "\n")
    if finding.remedy:
        body.append("Fix: ", style="bold")
        body.append(finding.remedy.rstrip())
    elif finding.status is Status.PASS:
        body.append("Nothing to fix.")
    return body


class FindingRow(Collapsible):
    """One check: ``[status] id: summary``, expands to detail and remedy."""

    def __init__(self, check_id: str, title: str) -> None:
        # Kept as an attribute: a row can be filled before it is mounted.
        self.body = Static(Text(f"{title}\nrunning…"), classes="finding-body")
        super().__init__(
            self.body,
            title=escape(f".... {check_id}: running…"),
            collapsed=True,
            id=_row_id(check_id),
            classes="finding-row pending",
        )
        self.check_id = check_id
        self.finding: Finding | None = None

    def mark_pending(self) -> None:
        self.finding = None
        self.title = escape(f".... {self.check_id}: running…")
        self.body.update(Text("running…"))
        for status in Status:
            self.remove_class(f"status-{status.value}")
        self.add_class("pending")

    def show(self, finding: Finding) -> None:
        self.finding = finding
        self.title = finding_title(finding)
        self.body.update(finding_body(finding))
        self.remove_class("pending")
        self.add_class(f"status-{finding.status.value}")


class FindingsView(VerticalScroll):
    """Findings in report order; unknown ones are appended as they arrive."""

    def __init__(self, pending: list[tuple[str, str]] | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._pending = list(pending or [])

    def compose(self) -> ComposeResult:
        for check_id, title in self._pending:
            yield FindingRow(check_id, title)

    def row(self, check_id: str) -> FindingRow | None:
        for row in self.query(FindingRow):
            if row.check_id == check_id:
                return row
        return None

    def add_finding(self, finding: Finding) -> None:
        row = self.row(finding.id)
        if row is None:
            row = FindingRow(finding.id, finding.title)
            self.mount(row)
        row.show(finding)

    def reset(self, pending: list[tuple[str, str]]) -> None:
        """Back to "running" for a re-run. Rows are kept, not remounted (no
        flicker, no duplicate ids); :meth:`prune` drops the ones that did not
        come back."""
        self._pending = list(pending)
        for row in self.query(FindingRow):
            row.mark_pending()
        for check_id, title in pending:
            if self.row(check_id) is None:
                self.mount(FindingRow(check_id, title))

    def prune(self, check_ids: set[str]) -> None:
        for row in list(self.query(FindingRow)):
            if row.check_id not in check_ids:
                row.remove()

    def findings(self) -> list[Finding]:
        return [row.finding for row in self.query(FindingRow) if row.finding is not None]
