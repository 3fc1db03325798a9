"""Render an :class:`AuditReport` as text (stdout) or JSON.

The JSON is ``AuditReport.to_json()``: it carries every field the text shows
(findings with severity, summary, detail, remedy and diff; notes; the unsafe
acceptance; the grade and its legend) plus the raw check results.
"""

from __future__ import annotations

import json
import textwrap

from wizard.audit.model import AuditReport

_INDENT = " " * 11


def _block(label: str, text: str) -> list[str]:
    lines = text.rstrip("\n").splitlines()
    if not lines:
        return []
    out = [f"{_INDENT}{label}{lines[0]}"]
    pad = _INDENT + " " * len(label)
    out += [f"{pad}{line}" for line in lines[1:]]
    return out


def render_text(report: AuditReport) -> str:
    """A readable report: header, notes, findings worst first, then the grade."""
    out = [
        f"sandbox-setup audit: {report.mode} mode, agent {report.agent_user}",
        f"  config:  {report.config_path}",
        f"  answers: {report.answers_path}",
        f"  live probes ran as: {report.probes_as or 'the operator'}",
    ]
    if report.unsafe:
        out.append(
            f"  UNSAFE mode accepted by {report.unsafe.get('accepted_by', '?')} "
            f"at {report.unsafe.get('accepted_at', '?')}"
        )
    out += [f"  note: {line}" for line in report.notes]
    out.append("")
    findings = report.worst_first()
    if not findings:
        out.append("No findings: the setup is as the saved answers describe it.")
    for finding in findings:
        tag = finding.severity.name + (" (accepted)" if finding.accepted else "")
        out.append(f"{tag:<10} {finding.id}")
        out += textwrap.wrap(
            finding.summary, width=100, initial_indent=_INDENT, subsequent_indent=_INDENT
        )
        out += _block("", finding.detail) if finding.detail else []
        out += _block("remedy: ", finding.remedy)
        out += _block("", finding.diff)
        out.append("")
    grade = report.grade
    out.append(f"→ Overall exposure level: {grade.exposure:.1f} {grade.label}")
    out.append(f"  ({grade.legend})")
    return "\n".join(out) + "\n"


def render_json(report: AuditReport) -> str:
    return json.dumps(report.to_json(), indent=2) + "\n"
