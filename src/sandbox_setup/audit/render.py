"""Render an :class:`AuditReport` as text (stdout) or JSON.

The JSON is ``AuditReport.to_json()``: it carries every field the text shows
(findings with severity, summary, detail, remedy and diff; notes; the unsafe
acceptance; the grade and its legend) plus the raw check results.

The text is laid out for a width (80 on a pipe, the terminal's on a terminal,
where :func:`sandbox_setup.base.styled.emit` colours it): findings worst first (the
order the TUI shows too), then each remedy once with the findings it fixes, then
the grade with what its scale means.
"""

from __future__ import annotations

import json

from sandbox_setup.audit.model import AuditFinding, AuditReport
from sandbox_setup.base.styled import PIPE_WIDTH, Line, one_line, wrapped

INDENT = 10


def _finding_lines(finding: AuditFinding, width: int) -> list[Line]:
    style = "accepted" if finding.accepted else finding.severity.label
    head = Line().add(f"{finding.severity.name:<{INDENT - 1}} ", style).add(finding.id, "id")
    if finding.accepted:
        head.add("  (accepted)", "accepted")
    lines = [head]
    lines += wrapped([(" " * INDENT, "")], one_line(finding.summary), width, INDENT)
    if finding.detail:
        lines += wrapped([(" " * INDENT, "")], finding.detail, width, INDENT, "dim")
    for line in finding.diff.rstrip("\n").splitlines():
        # A diff keeps its lines as they are (no wrapping): they are to be read as a diff.
        kind = {"+": "pass", "-": "fail", "@": "dim"}.get(line[:1], "")
        lines.append(Line().add(" " * INDENT).add(line, kind))
    return lines


def remedy_groups(report: AuditReport) -> list[tuple[str, list[str]]]:
    """(remedy, ids of the findings it fixes), worst first, each remedy once."""
    groups: dict[str, list[str]] = {}
    for finding in report.worst_first():
        if finding.remedy.strip():
            groups.setdefault(finding.remedy.strip(), []).append(finding.id)
    return list(groups.items())


def render_lines(report: AuditReport, width: int = PIPE_WIDTH) -> list[Line]:
    """A readable report: header, notes, findings worst first, remedies, the grade."""
    out = [
        Line()
        .add("sandbox-setup audit: ", "head")
        .add(f"{report.mode} mode, agent {report.agent_user}"),
    ]
    out += wrapped([("  config:  ", "")], report.config_path, width, 11)
    out += wrapped([("  answers: ", "")], report.answers_path, width, 11)
    out.append(Line().add(f"  live probes ran as: {report.probes_as or 'the operator'}"))
    if report.unsafe:
        out += wrapped(
            [("  UNSAFE", "critical")],
            f" mode accepted by {report.unsafe.get('accepted_by', '?')} "
            f"at {report.unsafe.get('accepted_at', '?')}",
            width,
            4,
        )
    for line in report.network:
        # The egress proxy's refusals name what the agent asked for: one line each.
        out += wrapped([("  network: ", "")], line, width, 11, breaks=False)
    for note in report.notes:
        out += wrapped([("  note: ", "dim")], note, width, 8)
    out.append(Line())
    findings = report.worst_first()
    if not findings:
        out.append(
            Line().add("No findings: the setup is as the saved answers describe it.", "pass")
        )
    for finding in findings:
        out += _finding_lines(finding, width)
        out.append(Line())
    groups = remedy_groups(report)
    if groups:
        out.append(Line().add("What to fix, each remedy once:", "head"))
        for remedy, ids in groups:
            out += wrapped([("  -> ", "dim")], ", ".join(ids), width, 5, "id")
            out += wrapped([("     remedy: ", "")], remedy, width, 13, "remedy", wrap=False)
        out.append(Line())
    grade = report.grade
    label_style = {"OK": "pass", "MEDIUM": "medium", "EXPOSED": "high"}.get(grade.label, "critical")
    out.append(
        Line()
        .add("→ Overall exposure level: ", "head")
        .add(f"{grade.exposure:.1f} {grade.label}", label_style)
    )
    out += wrapped([("  ", "")], grade.meaning, width, 2, "dim")
    # The bands of the scale ("0.0-1.9 OK, ..."), on one line.
    bands = grade.bands
    out += wrapped([("  scale: ", "dim")], bands, width, 9, "dim")
    return out


def render_text(report: AuditReport, width: int = PIPE_WIDTH) -> str:
    """:func:`render_lines` as plain text."""
    return "".join(line.plain.rstrip() + "\n" for line in render_lines(report, width))


def render_json(report: AuditReport) -> str:
    return json.dumps(report.to_json(), indent=2) + "\n"
