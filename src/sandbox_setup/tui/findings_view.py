"""Check and audit rows: a few lines each in a list, the full text in a detail view.

Shared by the host checks screen and the audit view. A :class:`Row` is a
finding as shown: a marker word that reads without colour ("FAIL", "high"), its
line for the list (wrapped under the marker, up to :data:`ROW_LINES` lines, so a
summary is read, not cut at 80 columns), and the whole text (summary, detail, cause,
remedy, diff) for :class:`sandbox_setup.tui.detail.DetailScreen`. Rows can exist
before their finding (a pending check) and are filled in when it arrives.

A row quotes what the checks and the audit found: probe output, file names and git
keys from the workspaces, hostnames the agent asked for. Everything it shows goes
through :func:`~sandbox_setup.base.printable.printable` into a Rich ``Text`` (never
markup: ``[red]`` in a name is shown as written) when the row is made (invariant
15); only :attr:`Row.remedy`, what ``c`` copies, stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets.option_list import Option

from sandbox_setup.base.printable import printable, printable_lines
from sandbox_setup.checks.model import Finding, Status, cause_key
from sandbox_setup.tui.controls import ChoiceList
from sandbox_setup.tui.plan_view import diff_renderable
from sandbox_setup.tui.widgets import MOVE

if TYPE_CHECKING:
    from sandbox_setup.audit.model import AuditFinding

STATUS_LABEL = {
    Status.PASS: "pass",
    Status.WARN: "warn",
    Status.FAIL: "FAIL",
    Status.SKIP: "skip",
    Status.ERROR: "ERR!",
}
# Marker colours; the word itself carries the meaning (NO_COLOR, monochrome terminals).
MARK_STYLE = {
    "pass": "green",
    "warn": "yellow",
    "FAIL": "bold red",
    "ERR!": "bold red",
    "skip": "dim",
    "....": "dim",
    "critical": "bold red",
    "high": "red",
    "medium": "yellow",
    "low": "",
    "info": "dim",
    "accepted": "bold magenta",
}


# How many lines a row of the list may take (its summary wrapped); more is cut with "…".
ROW_LINES = 3
MARKER_WIDTH = 8


class RowLines:
    """A row's line wrapped to the list's width, its continuation lines indented under
    the marker, at most ``ROW_LINES`` lines (the last one cut with an ellipsis)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, MARKER_WIDTH + 8)
        inner = width - MARKER_WIDTH
        lines = list(self.text.wrap(console, inner, overflow="fold", no_wrap=False))
        if len(lines) > ROW_LINES:
            lines = lines[:ROW_LINES]
            last = lines[-1]
            last.rstrip()
            last.truncate(inner - 1)
            last.append("…")
        shown = Text("\n").join(
            line if index == 0 else Text(" " * MARKER_WIDTH) + line
            for index, line in enumerate(lines)
        )
        shown.no_wrap = True
        shown.overflow = "crop"
        yield shown


@dataclass(frozen=True)
class Row:
    """One row: what the list shows, and everything the detail view shows (printable
    already: :func:`finding_row`, :func:`audit_row`)."""

    id: str
    marker: str  # a word: FAIL, pass, high, accepted, ....
    summary: str
    title: str
    body: RenderableType
    remedy: str = ""  # exact: what the copy key puts on the clipboard

    def lines(self) -> RowLines:
        """The row in the list: :meth:`line`, wrapped (:class:`RowLines`)."""
        return RowLines(self.line())

    def line(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{self.marker:<8}", style=MARK_STYLE.get(self.marker, ""))
        text.append(self.id, style="bold")
        text.append("  " + one_line(self.summary))
        return text


def pending_row(check_id: str, title: str) -> Row:
    return Row(check_id, "....", "running…", title, Text(f"{title}\nrunning…"))


def one_line(text: str) -> str:
    """``text`` printable, on one line (a row of the list)."""
    return " ".join(part for part in printable_lines(text).replace("\n", " ").split(" ") if part)


def finding_body(finding: Finding) -> Text:
    """Summary, detail, cause and remedy as plain text (probe output may hold []),
    printable."""
    body = Text()
    body.append(printable_lines(finding.summary.rstrip()) + "\n\n")
    cause = cause_key(finding)
    detail = "\n".join(
        printable(line)
        for line in finding.detail.rstrip().split("\n")
        if cause is None or line != f"cause: {cause}"
    )
    if detail:
        body.append(detail + "\n\n")
    if cause:
        body.append("Cause: ", style="bold")
        body.append(printable(cause) + "\n\n")
    if finding.remedy:
        body.append("Fix: ", style="bold")
        body.append(printable_lines(finding.remedy.rstrip()))
    elif finding.status is Status.PASS:
        body.append("Nothing to fix.")
    return body


def finding_row(finding: Finding) -> Row:
    return Row(
        printable(finding.id),
        STATUS_LABEL[finding.status],
        finding.summary,
        printable(finding.title),
        finding_body(finding),
        finding.remedy,
    )


def audit_row(finding: AuditFinding) -> Row:
    parts: list[RenderableType] = [Text(printable_lines(finding.summary.rstrip()) + "\n")]
    if finding.detail:
        parts.append(Text(printable_lines(finding.detail.rstrip()) + "\n"))
    if finding.diff:
        parts.append(diff_renderable(printable_lines(finding.diff.rstrip("\n"))))
    if finding.remedy:
        fix = Text()
        fix.append("\nFix: ", style="bold")
        fix.append(printable_lines(finding.remedy.rstrip()))
        parts.append(fix)
    marker = "accepted" if finding.accepted else finding.severity.label
    row_id = printable(finding.id)
    return Row(row_id, marker, finding.summary, row_id, Group(*parts), finding.remedy)


class FindingList(ChoiceList):
    """Rows in order; ↑/↓ move, Enter opens the full text, ``c`` copies the fix."""

    BINDINGS = [
        Binding("up", "cursor_up", "Move", group=MOVE, key_display="↑"),
        Binding("down", "cursor_down", "Move", group=MOVE, key_display="↓"),
        Binding("enter", "select", "Open", key_display="Enter"),
        Binding("c", "copy_remedy", "Copy", key_display="c"),
    ]

    class Open(Message):
        """The operator asked for the full text of a row."""

        def __init__(self, row: Row) -> None:
            super().__init__()
            self.row = row

    class CopyRemedy(Message):
        def __init__(self, row: Row) -> None:
            super().__init__()
            self.row = row

    def __init__(self, rows: list[Row] | None = None, **kwargs: str) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rows: list[Row] = list(rows or [])

    def on_mount(self) -> None:
        self._render_rows(None)

    def _render_rows(self, keep: Row | None) -> None:
        self.clear_options()
        self.add_options([Option(row.lines(), id=row.id) for row in self.rows])
        if self.rows:
            index = next((i for i, r in enumerate(self.rows) if keep and r.id == keep.id), 0)
            self.highlighted = index

    def set_rows(self, rows: list[Row]) -> None:
        """Replace every row. The top stays on top (worst first, the first row to
        read); a row the operator moved to stays highlighted where it went (the
        rows are put worst first when the checks are done, while they read)."""
        # Of the rows as they were, before they are replaced.
        keep = self.current() if self.highlighted else None
        self.rows = list(rows)
        self._render_rows(keep)

    def put(self, row: Row) -> None:
        """Fill in (or append) the row with this id."""
        for index, old in enumerate(self.rows):
            if old.id == row.id:
                self.rows[index] = row
                self.replace_option_prompt(row.id, row.lines())
                return
        self.rows.append(row)
        self.add_option(Option(row.lines(), id=row.id))
        if self.highlighted is None:
            self.highlighted = 0

    def row(self, row_id: str) -> Row | None:
        return next((r for r in self.rows if r.id == row_id), None)

    def current(self) -> Row | None:
        if self.highlighted is None or not 0 <= self.highlighted < len(self.rows):
            return None
        return self.rows[self.highlighted]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "copy_remedy":
            row = self.current()
            return row is not None and bool(row.remedy)
        return super().check_action(action, parameters)

    def action_select(self) -> None:
        row = self.current()
        if row is not None:
            self.post_message(self.Open(row))

    def action_copy_remedy(self) -> None:
        row = self.current()
        if row is not None and row.remedy:
            self.post_message(self.CopyRemedy(row))

    def watch_highlighted(self, highlighted: int | None) -> None:
        super().watch_highlighted(highlighted)
        # The copy key is there only for a row with a remedy: the footer follows.
        self.refresh_bindings()
