"""The audit view: the grade, what the audit found (drift with its diff), the
host checks; ``f`` fixes by re-applying the saved answers."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.message import Message
from textual.widgets import Button, Collapsible, Footer, Header, Static

from screens.core import Core
from screens.findings_view import FindingRow
from screens.plan_view import diff_renderable
from screens.step import StepScreen

if TYPE_CHECKING:
    from wizard.audit.model import AuditFinding, AuditReport


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
    if audit.unsafe:
        text.append(
            f"\nUnsafe mode accepted by {audit.unsafe.get('accepted_by', '?')} "
            f"at {audit.unsafe.get('accepted_at', '?')}"
        )
    return text


def audit_finding_body(finding: AuditFinding) -> RenderableType:
    parts: list[RenderableType] = []
    if finding.detail:
        parts.append(Text(finding.detail.rstrip()))
    if finding.diff:
        parts.append(diff_renderable(finding.diff))
    if finding.remedy:
        parts.append(Text("Fix: " + finding.remedy.rstrip()))
    return Group(*parts) if parts else Text("Nothing more to say.")


class AuditScreen(StepScreen[AuditChoice]):
    """Returns :attr:`AuditChoice.FIX` (re-apply), :attr:`AuditChoice.WIZARD` (start
    over) or ``Nav.QUIT``; :attr:`audit` holds the last audit shown."""

    can_go_back = False
    BINDINGS = [
        Binding("f", "fix", "Fix (re-apply)"),
        Binding("r", "rerun", "Re-run"),
        Binding("w", "wizard", "Wizard"),
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
        yield Header()
        yield Static("Auditing…", id="audit-status", classes="status-line")
        yield VerticalScroll(id="audit-body")
        with Horizontal(classes="buttons"):
            yield Button("Fix", id="fix", variant="primary", disabled=True, compact=True)
            yield Button("Re-run", id="rerun", disabled=True, compact=True)
            yield Button("Wizard", id="wizard", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "audit"
        self.action_rerun()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "fix":
            return self.audit is not None and not self.busy
        if action == "rerun":
            return not self.busy
        return super().check_action(action, parameters)

    def action_rerun(self) -> None:
        self.busy = True
        self.audit = None
        self.query_one("#audit-status", Static).update("Auditing… (running the host checks)")
        self.query_one("#fix", Button).disabled = True
        self.query_one("#rerun", Button).disabled = True
        self.refresh_bindings()
        self.run_audit()

    @work(thread=True, exclusive=True, group="audit", exit_on_error=False)
    def run_audit(self) -> None:
        try:
            audit = self.core.audit()
        except Exception as exc:
            self.post_message(self.Audited(None, str(exc) or type(exc).__name__))
            return
        self.post_message(self.Audited(audit, None))

    @on(Audited)
    async def _audited(self, message: Audited) -> None:
        try:
            await self._show(message)
        finally:
            # only now: until the rows are mounted the screen is still busy
            self.busy = False
            self.refresh_bindings()

    async def _show(self, message: Audited) -> None:
        body = self.query_one("#audit-body", VerticalScroll)
        await body.remove_children()
        self.query_one("#rerun", Button).disabled = False
        status = self.query_one("#audit-status", Static)
        if message.error is not None:
            status.update(Text("The audit could not run: " + message.error))
            return
        assert message.audit is not None
        self.audit = audit = message.audit
        status.update(grade_text(audit))
        rows: list[Collapsible] = []
        for finding in audit.findings:
            marker = "accepted" if finding.accepted else finding.severity.label
            rows.append(
                Collapsible(
                    Static(audit_finding_body(finding)),
                    title=escape(f"{marker} {finding.id}: {finding.summary}"),
                    collapsed=True,
                    classes=f"audit-row severity-{finding.severity.label}",
                )
            )
        checks = audit.report.findings if audit.report is not None else []
        await body.mount_all(rows)
        if checks:
            await body.mount(Static(Text("Host checks", style="bold"), classes="section"))
            check_rows = [FindingRow(f.id, f.title) for f in checks]
            await body.mount_all(check_rows)
            for row, check in zip(check_rows, checks, strict=True):
                row.show(check)
        fix = self.query_one("#fix", Button)
        fix.disabled = False
        fix.focus()

    def action_fix(self) -> None:
        if self.audit is not None and not self.busy:
            self.dismiss(AuditChoice.FIX)

    def action_wizard(self) -> None:
        self.dismiss(AuditChoice.WIZARD)

    @on(Button.Pressed, "#fix")
    def _fix(self) -> None:
        self.action_fix()

    @on(Button.Pressed, "#rerun")
    def _rerun(self) -> None:
        self.action_rerun()

    @on(Button.Pressed, "#wizard")
    def _wizard(self) -> None:
        self.action_wizard()
