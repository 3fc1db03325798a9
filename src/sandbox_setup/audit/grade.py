"""The posture grade: an exposure score from 0.0 to 10.0 with a one-word label.

Modelled on ``systemd-analyze security``: the score says how much of the
machine an agent could reach, not how many things are wrong. Each mode starts
from what it exposes when everything is as set up, and every finding adds
according to its severity, capped at 10.0.

- ``sandbox``: bubblewrap with a read-only system and only the workspaces and
  agent home writable: little exposed (1.0; 1.5 with Claude's inner sandbox off).
- ``user``: a separate unprivileged user, but no filesystem confinement: it can
  read whatever is world-readable and use the network (3.5).
- ``unsafe``: root, unconfined (9.0), whatever else is found.
"""

from __future__ import annotations

from collections.abc import Iterable

from sandbox_setup.audit.model import EXPOSURE_BANDS, AuditFinding, Grade, Severity

BASELINE = {"sandbox": 1.0, "user": 3.5, "unsafe": 9.0}
INNER_OFF_PENALTY = 0.5
WEIGHT = {
    Severity.INFO: 0.0,
    Severity.LOW: 0.3,
    Severity.MEDIUM: 1.0,
    Severity.HIGH: 2.0,
    Severity.CRITICAL: 4.0,
}
# Upper bounds (exclusive) of each label, in order; the last label takes the rest.
LABELS = ((2.0, "OK"), (5.0, "MEDIUM"), (8.0, "EXPOSED"))
TOP_LABEL = "UNSAFE"
LEGEND = f"exposure 0.0-10.0: {EXPOSURE_BANDS}"


def label_for(exposure: float) -> str:
    for upper, label in LABELS:
        if exposure < upper:
            return label
    return TOP_LABEL


def grade(mode: str, findings: Iterable[AuditFinding], inner_sandbox: str = "strong") -> Grade:
    """The grade of a setup in ``mode`` with these findings (pure)."""
    score = BASELINE.get(mode, 10.0)
    if mode == "sandbox" and inner_sandbox == "off":
        score += INNER_OFF_PENALTY
    for finding in findings:
        # An accepted risk (unsafe mode) is already the mode's baseline.
        if not finding.accepted:
            score += WEIGHT[finding.severity]
    exposure = round(min(10.0, score), 1)
    return Grade(exposure=exposure, label=label_for(exposure), legend=LEGEND)
