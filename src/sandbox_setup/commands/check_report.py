"""The readable ``--check`` report: a row per check, then each cause once.

Apart from :mod:`sandbox_setup.commands.check` so the command can start its live
experiments before this (dataclasses, the check model, the styled output) is
imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

from sandbox_setup.base.styled import Line, emit, one_line, output_width, wrapped
from sandbox_setup.checks.model import (
    PARTIAL_REASON,
    Finding,
    Report,
    Status,
    cause_key,
    worst_first,
)

LABEL = {
    Status.PASS: "PASS",
    Status.WARN: "WARN",
    Status.FAIL: "FAIL",
    Status.SKIP: "SKIP",
    Status.ERROR: "ERROR",
}


@dataclass
class CauseGroup:
    """One cause and every check it breaks: its remedy is printed once."""

    label: str
    remedy: str
    ids: list[str] = field(default_factory=list)


def cause_groups(findings: list[Finding]) -> list[CauseGroup]:
    """The non-passing findings with a remedy, grouped by the cause they name (or,
    without one, by their remedy), worst first: a masked /proc is one entry listing
    proc.fresh_mount, bwrap.sandbox, ..., not the same remedy five times."""
    groups: dict[str, CauseGroup] = {}
    for finding in worst_first(findings):
        if finding.status is Status.PASS or not finding.remedy.strip():
            continue
        key = cause_key(finding) or "remedy:" + finding.remedy.strip()
        group = groups.setdefault(key, CauseGroup(finding.summary, finding.remedy.strip()))
        group.ids.append(finding.id)
    return list(groups.values())


def report_lines(report: Report, width: int) -> list[Line]:
    """The --check report for ``width`` columns: a row per check (worst first),
    then each cause once with the checks it breaks and its remedy."""
    host = report.host
    probe = f"as {report.as_user}" if report.as_user else f"as uid {host.get('probe_uid')}"
    lines = wrapped(
        [("sandbox-setup --check: ", "head")],
        f"kernel {host.get('kernel')}, container: {host.get('container')}, live probes {probe}",
        width,
        2,
    )
    lines.append(Line())
    findings = worst_first(report.findings)
    id_width = min(max((len(f.id) for f in findings), default=0), 22)
    indent = 5 + 2 + id_width + 2
    for finding in findings:
        head = [(f"{LABEL[finding.status]:<5}", finding.status.value), ("  ", "")]
        head.append((f"{finding.id:<{id_width}}  ", "id"))
        lines += wrapped(head, one_line(finding.summary), width, indent)
    groups = cause_groups(report.findings)
    if groups:
        lines += [Line(), Line().add("What to fix, each cause once:", "head")]
    for number, group in enumerate(groups):
        if number:
            lines.append(Line())
        lines += wrapped([("  ", "")], one_line(group.label), width, 4)
        lines += wrapped([("    -> ", "dim")], ", ".join(group.ids), width, 7, "id")
        lines += wrapped([("    remedy: ", "")], group.remedy, width, 12, "remedy", wrap=False)
    notes = host.get("probe_notes") or []
    if notes:
        lines.append(Line())
    for note in notes:
        lines += wrapped([("note: ", "dim")], note, width, 6)
    rec = report.recommendation
    if report.partial:
        lines += [Line(), Line().add("Recommended: ", "head").add("no mode from a partial run", "")]
        lines += wrapped([("  ", "")], PARTIAL_REASON, width, 2)
        return lines
    inner = host.get("inner_sandbox")
    suffix = f" (inner sandbox: {inner})" if rec.mode == "sandbox" and inner else ""
    lines += [Line(), Line().add("Recommended: ", "head").add(f"{rec.mode}{suffix}", "pass")]
    lines += wrapped([("  ", "")], rec.reason, width, 2)
    return lines


def render_report(report: Report, out: TextIO) -> None:
    """The readable report: coloured on a terminal (Rich), plain on a pipe."""
    emit(report_lines(report, output_width(out)), out)
