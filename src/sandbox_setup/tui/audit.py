"""The audit view: the grade and its scale, what the audit found (worst first, the
same order as ``sandbox-setup --audit``), the host checks; Enter opens a row's
full text (with a drift's diff), ``f`` fixes by re-applying the saved answers.

The list has the focus: Fix is a button among others and is enabled only when
there is something to fix.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Footer, Static

from sandbox_setup.base.printable import printable, printable_lines
from sandbox_setup.checks.model import worst_first
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.findings_step import FindingsStep
from sandbox_setup.tui.findings_view import FindingList, Row, audit_row, finding_row
from sandbox_setup.tui.status import StatusScreen
from sandbox_setup.tui.undo import UndoScreen
from sandbox_setup.tui.widgets import ActionButton

if TYPE_CHECKING:
    from sandbox_setup.audit.model import AuditReport


class AuditChoice(enum.StrEnum):
    """What the operator chose on the audit view."""

    FIX = "fix"  # re-apply the saved answers
    WIZARD = "wizard"  # start the wizard over


def grade_text(audit: AuditReport) -> Text:
    text = Text()
    grade = audit.grade
    text.append(f"Mode: {audit.mode}", style="bold")
    text.append(f"   exposure {grade.exposure:.1f}/10 {grade.label}", style="bold")
    text.append("   no drift or problems" if audit.clean else "   needs attention")
    # The scale, so "1.0/10 OK" means something (the CLI says the same).
    bands = grade.bands
    text.append(f"\n{grade.meaning}; {bands}", style="dim")
    if audit.unsafe:
        text.append(
            f"\nUnsafe mode accepted by {printable(str(audit.unsafe.get('accepted_by', '?')))} "
            f"at {printable(str(audit.unsafe.get('accepted_at', '?')))}"
        )
    return text


def audit_rows(audit: AuditReport) -> list[Row]:
    """The audit's findings worst first, then the host checks worst first."""
    rows = [audit_row(finding) for finding in audit.worst_first()]
    checks = audit.report.findings if audit.report is not None else []
    rows += [finding_row(finding) for finding in worst_first(checks)]
    return rows


class AuditScreen(FindingsStep[AuditChoice]):
    """Returns :attr:`AuditChoice.FIX` (re-apply), :attr:`AuditChoice.WIZARD` (start
    over) or ``Nav.QUIT``; :attr:`audit` holds the last audit shown."""

    can_go_back = False
    BINDINGS = [
        Binding("f", "fix", "Fix (re-apply)"),
        Binding("r", "rerun", "Re-run"),
        Binding("w", "wizard", "Wizard"),
        Binding("s", "status", "Status"),
        Binding("u", "undo", "Undo"),
    ]

    class Audited(Message):
        def __init__(self, audit: AuditReport | None, error: str | None) -> None:
            super().__init__()
            self.audit = audit
            self.error = error

    def __init__(self, core: Core) -> None:
        super().__init__()
        self.core = core
        self.audit: AuditReport | None = None

    def compose(self) -> ComposeResult:
        yield self.step_bar("audit of the existing setup")
        yield Static("Auditing…", id="audit-status", classes="status-line")
        yield FindingList(id="audit-body")
        with Horizontal(classes="buttons"):
            yield ActionButton("Fix", id="fix", variant="primary", disabled=True, compact=True)
            yield ActionButton("Re-run", id="rerun", disabled=True, compact=True)
            yield ActionButton("Wizard", id="wizard", compact=True)
            yield ActionButton("Status", id="status", compact=True)
            yield ActionButton("Undo", id="undo", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one(FindingList).focus()
        self.action_rerun()

    @property
    def fixable(self) -> bool:
        return self.audit is not None and not self.audit.clean and not self.busy

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "fix":
            return self.fixable
        return super().check_action(action, parameters)

    def action_rerun(self) -> None:
        self.busy = True
        self.audit = None
        self.query_one("#audit-status", Static).update("Auditing… (running the host checks)")
        self.query_one("#fix", ActionButton).disabled = True
        self.query_one("#rerun", ActionButton).disabled = True
        self.refresh_bindings()
        self.run_audit()

    @work(thread=True, exclusive=True, group="audit", exit_on_error=False)
    def run_audit(self) -> None:
        try:
            audit = self.core.audit()
        except Exception as exc:
            self.post_message(self.Audited(None, self.core.error_words(exc)))
            return
        self.post_message(self.Audited(audit, None))

    @on(Audited)
    def _audited(self, message: Audited) -> None:
        self.busy = False
        self.query_one("#rerun", ActionButton).disabled = False
        status = self.query_one("#audit-status", Static)
        rows = self.query_one(FindingList)
        if message.error is not None:
            status.update(Text("The audit could not run: " + printable_lines(message.error)))
            rows.set_rows([])
        else:
            assert message.audit is not None
            self.audit = message.audit
            status.update(grade_text(message.audit))
            rows.set_rows(audit_rows(message.audit))
        self.query_one("#fix", ActionButton).disabled = not self.fixable
        if self.focused is None or self.focused.disabled:
            rows.focus()
        self.refresh_bindings()

    def action_fix(self) -> None:
        if self.fixable:
            self.dismiss(AuditChoice.FIX)

    def action_wizard(self) -> None:
        self.dismiss(AuditChoice.WIZARD)

    def action_status(self) -> None:
        """The host's setups and sessions (the same as ``sandbox-setup --status``)."""
        try:
            setup, sessions = self.core.status_text(max(40, self.app.size.width - 12))
        except Exception as exc:  # shown, not a crash: the audit view stays
            self.notify(
                f"The status could not be read: {printable(self.core.error_words(exc))}",
                severity="error",
            )
            return
        self.app.push_screen(StatusScreen(setup, sessions))

    def action_undo(self) -> None:
        """The last apply's undo: the ``--undo --dry-run`` preview, then Undo or Cancel."""
        if self.busy:
            return
        try:
            lines = self.core.undo_preview()
        except Exception as exc:  # shown, not a crash: the audit view stays
            self.notify(
                f"The undo preview failed: {printable(self.core.error_words(exc))}",
                severity="error",
            )
            return

        def undone(ran: bool | None) -> None:
            if ran:
                self.action_rerun()

        self.app.push_screen(UndoScreen(self.core, lines), undone)

    @on(ActionButton.Pressed, "#undo")
    def _undo(self) -> None:
        self.action_undo()

    @on(ActionButton.Pressed, "#status")
    def _status(self) -> None:
        self.action_status()

    @on(ActionButton.Pressed, "#fix")
    def _fix(self) -> None:
        self.action_fix()

    @on(ActionButton.Pressed, "#wizard")
    def _wizard(self) -> None:
        self.action_wizard()
