"""The posture grade: baselines per mode, weights per severity, labels."""

from __future__ import annotations

import pytest

from sandbox_setup.audit.grade import LEGEND, grade, label_for
from sandbox_setup.audit.model import AuditFinding, Severity


def finding(severity: Severity, accepted: bool = False) -> AuditFinding:
    return AuditFinding(id="audit.x", severity=severity, summary="s", accepted=accepted)


@pytest.mark.parametrize(
    ("score", "label"),
    [
        (0.0, "OK"),
        (1.9, "OK"),
        (2.0, "MEDIUM"),
        (4.9, "MEDIUM"),
        (5.0, "EXPOSED"),
        (7.9, "EXPOSED"),
        (8.0, "UNSAFE"),
        (10.0, "UNSAFE"),
    ],
)
def test_labels(score: float, label: str) -> None:
    assert label_for(score) == label


def test_clean_modes_are_ordered_by_what_they_expose() -> None:
    sandbox, user, unsafe = (grade(m, []) for m in ("sandbox", "user", "unsafe"))
    assert sandbox.exposure < user.exposure < unsafe.exposure
    assert (sandbox.label, user.label, unsafe.label) == ("OK", "MEDIUM", "UNSAFE")
    assert grade("sandbox", [], inner_sandbox="off").exposure > sandbox.exposure


def test_findings_raise_the_score_by_severity_and_cap_at_ten() -> None:
    base = grade("sandbox", []).exposure
    low = grade("sandbox", [finding(Severity.LOW)]).exposure
    high = grade("sandbox", [finding(Severity.HIGH)]).exposure
    info = grade("sandbox", [finding(Severity.INFO)]).exposure
    assert info == base < low < high
    many = grade("user", [finding(Severity.CRITICAL)] * 5)
    assert many.exposure == 10.0 and many.label == "UNSAFE"


def test_accepted_unsafe_is_the_baseline_not_extra() -> None:
    accepted = grade("unsafe", [finding(Severity.CRITICAL, accepted=True)])
    assert accepted.exposure == grade("unsafe", []).exposure
    assert accepted.legend == LEGEND and "UNSAFE" in LEGEND
