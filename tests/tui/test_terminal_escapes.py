"""The audit view shows what the agent named escaped, and as text, never as markup
(docs/design.md invariant 15): a finding whose file name sets the window title, clears
the screen, paints a fake green line, reverses the text or carries ``[red]``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sandbox_setup.audit.model import AuditFinding, AuditReport, Severity
from sandbox_setup.tui.audit import AuditScreen
from sandbox_setup.tui.detail import DetailScreen
from sandbox_setup.tui.findings_view import FindingList
from tests.tui.fake_findings import SANDBOX_HOST
from tests.tui.fake_screens import FAKE_AUDIT, FakeCore, ScreenHarness, fake_core
from tests.tui.helpers import make_root, plain, screen_lines, wait_for, wait_until

NAME = (
    "/srv/project/.claude/hooks/\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J"
    "\x1b[32mnothing to report\x1b[0m\u202eexe\rx\u009b31m[red]markup[/red]"
)
SHOWN = (
    "\\x1b]0;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J"
    "\\x1b[32mnothing to report\\x1b[0m\\u202eexe\\rx\\u009b31m[red]markup[/red]"
)
REMEDY = f"if you did not put it there, move it out of the workspace: mv -- '{NAME}' <dir>"
BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def _core(tmp_path: Path) -> FakeCore:
    planted = AuditFinding(
        "audit.workspace.planted",
        Severity.HIGH,
        f"{NAME}: a Claude Code hook script, written since the last session's end scan",
        detail=f"first line\n{NAME}",
        remedy=REMEDY,
    )
    report: AuditReport = dataclasses.replace(FAKE_AUDIT, findings=[planted, *FAKE_AUDIT.findings])

    class Core(FakeCore):
        def audit(self) -> AuditReport:
            self.last_audit = report
            return report

    core = fake_core(make_root(tmp_path), SANDBOX_HOST)
    core.__class__ = Core
    return core


def _assert_printable(lines: list[str]) -> None:
    for line in lines:
        bad = [hex(ord(c)) for c in line if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in BIDI]
        assert not bad, (bad, line)


async def test_the_audit_view_shows_agent_names_escaped_and_never_as_markup(
    tmp_path: Path,
) -> None:
    app = ScreenHarness(lambda: AuditScreen(_core(tmp_path)))
    async with app.run_test(size=(200, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, AuditScreen)
        await wait_until(pilot, lambda: screen.audit is not None)
        await pilot.pause()
        rows = screen.query_one(FindingList)
        row = rows.row("audit.workspace.planted")
        assert row is not None
        assert SHOWN in row.line().plain and "\x1b" not in row.line().plain
        assert row.remedy == REMEDY  # what the copy key sends stays exact
        shown = "\n".join(screen_lines(app))
        _assert_printable(screen_lines(app))
        assert "\\x1b]0;pwned" in shown  # visible, not acted on
        rows.highlighted = 0
        await pilot.press("enter")
        detail = await wait_for(pilot, DetailScreen)
        await pilot.pause()
        _assert_printable(screen_lines(app))
        assert "[red]markup[/red]" in "\n".join(screen_lines(app))
        text = plain(detail.row.body, width=400)
        assert SHOWN in text and "[red]markup[/red]" in text  # literally, not styled red
        assert "\x1b" not in text and "\u202e" not in text
