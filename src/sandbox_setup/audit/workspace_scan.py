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
- ``audit.workspace.untrusted`` (high): an end-of-session scan could not see a
  workspace whole and marked it (``workspace-untrusted.json``); this audit's scan,
  when it sees every workspace whole, clears the mark (DESIGN invariant 8 (e));
- ``audit.workspace.truncated`` (high): this scan could not see a part of a
  workspace (a directory it could not open or list).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base import remedies
from sandbox_setup.boundary.scan import scan
from sandbox_setup.boundary.scan_model import Hit, Snapshot
from sandbox_setup.boundary.session import (
    BASELINE,
    clear_untrusted,
    read_state,
    read_untrusted,
    session_records,
    untrusted_line,
)

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
    marked = read_untrusted(state)
    result = scan(workspaces, before)
    complete = not result.truncated
    findings += _untrusted(marked, complete)
    if marked and complete:
        real = {os.path.realpath(ws) for ws in workspaces}
        clear_untrusted(state, [ws for ws in marked if ws == "*" or os.path.realpath(ws) in real])
    for hit in result.hits:
        planted = before is not None and hit.new
        findings.append(_finding(hit, planted, since if planted else "before"))
    for truncated in result.truncated:
        findings.append(
            AuditFinding(
                id="audit.workspace.truncated",
                severity=Severity.HIGH,
                summary=f"the workspace scan could not see all of a workspace: {truncated}; "
                "what it did not see may hold what root's git would run",
                remedy="make the part it could not read readable to root (until then do not "
                f"run git there as root), then run: {remedies.audit()}",
            )
        )
    return findings, notes


def _untrusted(marked: dict[str, dict[str, object]], complete: bool) -> list[AuditFinding]:
    found = []
    for ws, entry in sorted(marked.items()):
        why = entry.get("why")
        reasons = [str(w) for w in why] if isinstance(why, list) else []
        found.append(
            AuditFinding(
                id="audit.workspace.untrusted",
                severity=Severity.HIGH,
                summary=untrusted_line(ws, str(entry.get("since") or ""), reasons),
                detail="this audit's scan saw every workspace whole, so the mark is cleared: "
                "what it lists below (planted or present) is all there is; what a session "
                "wrote where the end scan could not see may be listed as present"
                if complete
                else "this audit's scan could not see all of it either "
                "(audit.workspace.truncated); the mark stays",
                remedy="review every finding below for this workspace (move aside what you "
                "did not put there) before you run git there as root",
            )
        )
    return found
