"""The end-of-session scan, run by ``--audit`` (docs/design.md invariant 8): what in the
workspaces root's git, Claude Code or editor would run or obey.

The scan is :func:`sandbox_setup.boundary.scan.scan`, the launcher's own; this
module only judges its hits against the workspaces' trusted state, kept once for the
host (:mod:`sandbox_setup.boundary.trust_record`, docs/design.md invariant 8), the same
state every end-of-session check judges against:

- during a run of sessions, the workspace as it was when the run began: what appeared
  or changed since is ``audit.workspace.planted`` (high), whichever session wrote it
  (the last session's end moves it aside); ``audit.workspace.unfinished`` (high) names
  a session whose launcher died before its end;
- between runs, the workspace as the last end left it: what appeared since is
  ``audit.workspace.planted`` too (nothing the launcher knows of wrote it: an agent
  process outside a session, or the operator, who says which by the remedy);
- what was there then is ``audit.workspace.present`` (info: the operator's own hooks
  and filters, reported so they stay known);
- with no trusted state for a workspace (no session has run there since the setup),
  every hit is ``audit.workspace.present``, with a note;
- ``audit.workspace.untrusted`` (high): an end-of-session scan could not see a
  workspace whole and marked it (``workspace-untrusted.json``); this audit's scan,
  when it sees every workspace whole, clears the mark (docs/design.md invariant 8 (e));
- ``audit.workspace.truncated`` (high): this scan could not see a part of a
  workspace (a directory it could not open or list).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base import remedies
from sandbox_setup.boundary.scan import scan
from sandbox_setup.boundary.scan_model import Hit, Mark, Snapshot
from sandbox_setup.boundary.session import clear_untrusted, read_untrusted, untrusted_line
from sandbox_setup.boundary.trust_record import HostRecord, locked

NO_STATE_NOTE = (
    "workspace scan: no sandbox-launch session has run there since the setup, so what the "
    "scan finds is listed as present, not judged new"
)
RUNNING = "written since the current run of sessions began"
SETTLED = "written since the last session's end scan"


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


def _trusted_marks(record: HostRecord, workspace: str) -> tuple[dict[str, Mark] | None, str]:
    """The marks ``workspace`` is judged against, and since when."""
    own = record.trusted.get(workspace)
    if own is not None:
        return dict(own.marks), SETTLED if own.settled else RUNNING
    running = record.marks_for(workspace)
    if running is not None:
        return running, RUNNING
    return record.marks_for(workspace, running=False), SETTLED


def scan_findings(workspaces: Sequence[str], trust: Path) -> tuple[list[AuditFinding], list[str]]:
    """The findings and notes of the workspace scan of ``workspaces`` (host paths),
    judged against the trusted state kept in ``trust`` (the host-wide directory)."""
    findings: list[AuditFinding] = []
    notes: list[str] = []
    record = HostRecord.load(trust) if trust.is_dir() else HostRecord(trust)
    for entry in record.sessions.values():
        if entry.dead and any(entry.touches(ws) for ws in workspaces):
            findings.append(
                AuditFinding(
                    id="audit.workspace.unfinished",
                    severity=Severity.HIGH,
                    summary=f"the session of launcher pid {entry.pid} ended without its "
                    "end-of-session workspace scan (its launcher was killed)",
                    detail=f"its workspaces: {', '.join(entry.workspaces)}",
                    remedy="sandbox-launch -- --version  # each launch first scans what "
                    "such a session left, and moves aside what it wrote",
                )
            )
    judged: dict[str, dict[str, Mark]] = {}
    since: dict[str, str] = {}
    for ws in workspaces:
        marks, when = _trusted_marks(record, ws)
        if marks is not None:
            judged[ws], since[ws] = marks, when
    unjudged = [ws for ws in workspaces if ws not in judged]
    if unjudged:
        notes.append(NO_STATE_NOTE)
    marked = read_untrusted(trust)
    result = scan([ws for ws in workspaces if ws in judged], Snapshot(judged))
    if unjudged:
        plain = scan(unjudged, None)
        result.hits += [replace(h, new=False) for h in plain.hits]
        result.truncated += plain.truncated
    complete = not result.truncated
    findings += _untrusted(marked, complete)
    if marked and complete:
        real = {os.path.realpath(ws) for ws in workspaces}
        with locked(trust):
            clear_untrusted(
                trust, [ws for ws in marked if ws == "*" or os.path.realpath(ws) in real]
            )
    for hit in result.hits:
        planted = hit.new and hit.workspace in judged
        when = since.get(hit.workspace, "") if planted else "before"
        findings.append(_finding(hit, planted, when))
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
