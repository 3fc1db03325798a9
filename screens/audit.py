"""The audit view: the grade, what the audit found (drift with its diff), the
host checks; ``f`` fixes by re-applying the saved answers."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.message import Message
from textual.widgets import Button, Collapsible, Footer, Header, Static

from checks.model import Finding
from screens.backend import Backend
from screens.findings_view import FindingRow
from screens.plan_view import diff_renderable
from screens.step import StepScreen


def _label(value: Any) -> str:
    label = getattr(value, "label", value)
    return str(label)


def grade_text(audit: Any) -> Text:
    text = Text()
    grade = getattr(audit, "grade", None)
    mode = getattr(audit, "mode", "?")
    text.append(f"Mode: {mode}", style="bold")
    if grade is not None:
        text.append(f"   exposure {grade.exposure:.1f}/10 {grade.label}", style="bold")
    clean = getattr(audit, "clean", True)
    text.append("   no drift or problems" if clean else "   needs attention")
    unsafe = getattr(audit, "unsafe", None)
    if unsafe:
        text.append(
            f"\nUnsafe mode accepted by {unsafe.get('accepted_by', '?')} "
            f"at {unsafe.get('accepted_at', '?')}"
        )
    return text


def audit_finding_body(finding: Any) -> RenderableType:
    parts: list[RenderableType] = []
    if finding.detail:
        parts.append(Text(finding.detail.rstrip()))
    if finding.diff:
        parts.append(diff_renderable(finding.diff))
    if finding.remedy:
        parts.append(Text("Fix: " + finding.remedy.rstrip()))
    return Group(*parts) if parts else Text("Nothing more to say.")


class AuditScreen(StepScreen[str]):
    """Returns ``"fix"`` (re-apply), ``"wizard"`` (start over) or ``Nav.QUIT``."""

    can_go_back = False
    BINDINGS = [
        Binding("f", "fix", "Fix (re-apply)"),
        Binding("r", "rerun", "Re-run"),
        Binding("w", "wizard", "Wizard"),
    ]

    class Audited(Message):
        def __init__(self, audit: Any, error: str | None) -> None:
            super().__init__()
            self.audit = audit
            self.error = error

    def __init__(self, backend: Backend) -> None:
        super().__init__()
        self.backend = backend
        self.audit: Any = None

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
            audit = self.backend.audit()
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
        self.audit = audit = message.audit
        status.update(grade_text(audit))
        rows: list[Collapsible] = []
        for finding in getattr(audit, "findings", []):
            marker = "accepted" if finding.accepted else _label(finding.severity)
            rows.append(
                Collapsible(
                    Static(audit_finding_body(finding)),
                    title=escape(f"{marker} {finding.id}: {finding.summary}"),
                    collapsed=True,
                    classes=f"audit-row severity-{_label(finding.severity)}",
                )
            )
        checks = [Finding.from_json(c) for c in getattr(audit, "checks", [])]
        await body.mount_all(rows)
        if checks:
            await body.mount(Static(Text("Host checks", style="bold"), classes="section"))
            check_rows = [FindingRow(f.id, f.title) for f in checks]
            await body.mount_all(check_rows)
            for row, finding in zip(check_rows, checks, strict=True):
                row.show(finding)
        fix = self.query_one("#fix", Button)
        fix.disabled = False
        fix.focus()

    def action_fix(self) -> None:
        if self.audit is not None and not self.busy:
            self.dismiss("fix")

    def action_wizard(self) -> None:
        self.dismiss("wizard")

    @on(Button.Pressed, "#fix")
    def _fix(self) -> None:
        self.action_fix()

    @on(Button.Pressed, "#rerun")
    def _rerun(self) -> None:
        self.action_rerun()

    @on(Button.Pressed, "#wizard")
    def _wizard(self) -> None:
        self.action_wizard()
