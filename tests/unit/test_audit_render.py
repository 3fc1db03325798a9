"""Text and JSON renderings of an audit report: the JSON carries what the text shows."""

from __future__ import annotations

import json

from sandbox_setup.audit.grade import grade
from sandbox_setup.audit.model import AuditFinding, AuditReport, Severity
from sandbox_setup.audit.render import render_json, render_text

FINDINGS = [
    AuditFinding(
        id="audit.drift.settings",
        severity=Severity.HIGH,
        summary="/r/etc/claude-code/managed-settings.json differs",
        detail="write /etc/claude-code/managed-settings.json",
        remedy="sandbox-setup --headless --answers /r/answers.toml --yes",
        diff='--- a\n+++ b\n@@ -1 +1 @@\n-  "enabled": false\n+  "enabled": true\n',
    ),
    AuditFinding(
        id="audit.unsafe.accepted",
        severity=Severity.CRITICAL,
        summary="UNSAFE mode: accepted by root (uid 0) at 2026-11-30T04:00:00+00:00",
        remedy="sandbox-setup",
        accepted=True,
    ),
    AuditFinding(id="audit.claude.changed", severity=Severity.MEDIUM, summary="2.0 vs 1.0"),
]


def report(findings: list[AuditFinding]) -> AuditReport:
    return AuditReport(
        root="/r",
        config_path="/r/root/.config/sandbox-setup/launcher.toml",
        answers_path="/r/root/.config/sandbox-setup/answers.toml",
        mode="unsafe",
        agent_user="root",
        probes_as=None,
        findings=findings,
        grade=grade("unsafe", findings),
        notes=["live probes ran as the operator"],
        unsafe={
            "accepted_by": "root (uid 0)",
            "accepted_at": "2026-11-30T04:00:00+00:00",
            "statement": "I accept",
        },
    )


def test_json_carries_everything_the_text_shows() -> None:
    r = report(FINDINGS)
    text = render_text(r)
    data = json.loads(render_json(r))
    for finding, shown in zip(FINDINGS, data["findings"], strict=True):
        assert finding.id in text and shown["id"] == finding.id
        assert finding.summary in text and shown["summary"] == finding.summary
        assert shown["severity"] == finding.severity.label
        assert shown["remedy"] == finding.remedy and shown["diff"] == finding.diff
        assert shown["accepted"] is finding.accepted
        for line in finding.diff.splitlines():
            assert line in text
    for note in r.notes:
        assert note in text and note in data["notes"]
    assert f"{r.grade.exposure:.1f} {r.grade.label}" in text
    assert data["grade"] == {
        "exposure": r.grade.exposure,
        "label": r.grade.label,
        "legend": r.grade.legend,
    }
    # The legend's bands, and what the number measures.
    assert r.grade.legend.split(": ", 1)[1] in text and r.grade.meaning in text
    assert "accepted by root (uid 0) at 2026-11-30T04:00:00+00:00" in text
    assert data["unsafe"]["accepted_by"] == "root (uid 0)"
    assert data["config"] in text and data["answers"] in text
    assert data["clean"] is False


def test_worst_first_and_clean_report() -> None:
    text = render_text(report(FINDINGS))
    assert text.index("audit.unsafe.accepted") < text.index("audit.drift.settings")
    assert text.index("audit.drift.settings") < text.index("audit.claude.changed")
    accepted_only = report(FINDINGS[1:2])
    assert accepted_only.clean  # an accepted unsafe mode alone does not fail the audit
    assert "UNSAFE" in render_text(accepted_only)
    empty = report([])
    assert "No findings" in render_text(empty) and json.loads(render_json(empty))["clean"]
