"""The end-of-session scan, run by ``--audit`` (DESIGN.md invariant 8): what in the
workspaces root's git, Claude Code or editor would run or obey.

The scan is :func:`sandbox_setup.boundary.scan.scan`, the launcher's own; this
module only judges its hits against what the launcher saved in the operator's
state directory (:mod:`sandbox_setup.boundary.session`):

- a session's start snapshot (a session running now, or one whose launcher died
  before its end scan): what appeared or changed since is
  ``audit.workspace.planted`` (high): the session's end scan (or the next launch,
  for a dead one) moves it aside; ``audit.workspace.unfinished`` (high) names a
  session that ended without its scan;
- else the baseline the last end scan left: what appeared since is
  ``audit.workspace.planted`` too (nothing the launcher knows of wrote it: an agent
  process outside a session, or the operator, who says which by the remedy);
- what was there at the snapshot or the baseline is ``audit.workspace.present``
  (info: the operator's own hooks and filters, reported so they stay known);
- with no saved state at all (no session has ended since the setup), every hit is
  ``audit.workspace.present``, with a note;
- ``audit.workspace.truncated`` (low): the scan stopped at its bounds, so a part of
  a workspace was not looked at.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.boundary.scan import scan
from sandbox_setup.boundary.scan_model import Hit, Snapshot
from sandbox_setup.boundary.session import BASELINE, read_state, session_records

NO_STATE_NOTE = (
    "workspace scan: no sandbox-launch session has ended since the setup, so what the "
    "scan finds is listed as present, not judged new"
)


def _finding(hit: Hit, planted: bool, since: str) -> AuditFinding:
    if planted:
        return AuditFinding(
            id="audit.workspace.planted",
            severity=Severity.HIGH,
            summary=f"{hit.path}: {hit.what}, {since}; root's tools would run or obey it "
            f"({hit.why})",
            remedy=hit.remedy,
        )
    return AuditFinding(
        id="audit.workspace.present",
        severity=Severity.INFO,
        summary=f"{hit.path}: {hit.what} ({hit.why}); there {since}",
        remedy=hit.remedy,
    )


def scan_findings(workspaces: Sequence[str], state: Path) -> tuple[list[AuditFinding], list[str]]:
    """The findings and notes of the workspace scan of ``workspaces`` (host paths),
    judged against what the launcher saved in ``state``."""
    findings: list[AuditFinding] = []
    notes: list[str] = []
    before: Snapshot | None = None
    since = "before the last session's end"
    for record in session_records(state):
        saved = read_state(record.path)
        if saved is None:
            continue
        if not record.alive:
            findings.append(
                AuditFinding(
                    id="audit.workspace.unfinished",
                    severity=Severity.HIGH,
                    summary=f"the session of launcher pid {record.pid} ended without its "
                    "end-of-session workspace scan (its launcher was killed)",
                    detail=f"its start snapshot: {record.path}",
                    remedy="sandbox-launch -- --version  # each launch first scans what "
                    "such a session left, and moves aside what it wrote",
                )
            )
        if before is None:
            before, since = saved, f"written since the session of pid {record.pid} started"
    if before is None:
        before = read_state(state / BASELINE)
        since = "written since the last session's end scan"
    if before is None:
        notes.append(NO_STATE_NOTE)
    result = scan(workspaces, before)
    for hit in result.hits:
        planted = before is not None and hit.new
        findings.append(_finding(hit, planted, since if planted else "before"))
    for truncated in result.truncated:
        findings.append(
            AuditFinding(
                id="audit.workspace.truncated",
                severity=Severity.LOW,
                summary=f"the workspace scan stopped early: {truncated}",
                remedy="split the workspace, or move generated trees (node_modules, build "
                "output) out of it",
            )
        )
    return findings, notes
