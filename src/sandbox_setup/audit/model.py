"""The values an audit produces: severities, audit findings and the report.

An audit finding is not a check :class:`sandbox_setup.checks.model.Finding`: it judges the
*setup* (drift, what the mode needs from the host, the launcher's safety
rules), carries a severity rather than a pass/fail status, and may carry the
unified diff of a drifted file. IDs are stable and dotted (``audit.drift.settings``,
``audit.safety.sudoers``, ...) and are part of the ``--audit --json`` contract.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from sandbox_setup.checks.model import Report

SCHEMA = 1


class Severity(enum.IntEnum):
    """How much a finding matters; ordered so ``max()`` picks the worst."""

    INFO = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class AuditFinding:
    """One thing the audit found, why it matters, and the command that fixes it.

    ``accepted`` marks a risk the operator explicitly accepted (unsafe mode):
    it is always reported and weighs on the grade, but does not by itself make
    the audit exit 1.
    """

    id: str
    severity: Severity
    summary: str
    detail: str = ""
    remedy: str = ""
    diff: str = ""
    accepted: bool = False

    @property
    def counts(self) -> bool:
        """Does this finding make the audit exit 1?"""
        return self.severity > Severity.INFO and not self.accepted

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity.label,
            "summary": self.summary,
            "detail": self.detail,
            "remedy": self.remedy,
            "diff": self.diff,
            "accepted": self.accepted,
        }


# What the exposure number measures (the CLI and the TUI say it beside the number).
EXPOSURE_MEANING = "how much of this machine the agent could reach: 0.0 nothing, 10.0 all of it"
# The labels' bands (audit/grade.py's LABELS), as every face shows the scale.
EXPOSURE_BANDS = "0.0-1.9 OK, 2.0-4.9 MEDIUM, 5.0-7.9 EXPOSED, 8.0-10.0 UNSAFE"


@dataclass(frozen=True)
class Grade:
    """A posture grade in the style of ``systemd-analyze security``."""

    exposure: float  # 0.0 (nothing exposed) .. 10.0 (fully exposed)
    label: str  # OK | MEDIUM | EXPOSED | UNSAFE
    legend: str

    @property
    def meaning(self) -> str:
        return EXPOSURE_MEANING

    @property
    def bands(self) -> str:
        return EXPOSURE_BANDS

    def to_json(self) -> dict[str, Any]:
        return {"exposure": self.exposure, "label": self.label, "legend": self.legend}


@dataclass
class AuditReport:
    """Everything one audit found, in the order it is shown."""

    root: str
    config_path: str
    answers_path: str
    mode: str
    agent_user: str
    probes_as: str | None  # the user live probes ran as (None: the operator)
    findings: list[AuditFinding]
    grade: Grade
    notes: list[str] = field(default_factory=list)
    checks: list[dict[str, str]] = field(default_factory=list)
    unsafe: dict[str, str] | None = None
    # The live check report the audit judged (for a re-apply from the TUI); its
    # findings are in ``checks`` for JSON.
    report: Report | None = field(default=None, compare=False, repr=False)
    # What the agent's network is and what the egress proxy refused (sandbox_setup.audit.network).
    network: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not any(f.counts for f in self.findings)

    def worst_first(self) -> list[AuditFinding]:
        """The findings, most severe first (report order within a severity): the one
        order the CLI and the TUI show them in."""
        return sorted(self.findings, key=lambda f: -f.severity)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "root": self.root,
            "config": self.config_path,
            "answers": self.answers_path,
            "mode": self.mode,
            "agent_user": self.agent_user,
            "probes_as": self.probes_as,
            "unsafe": self.unsafe,
            "notes": list(self.notes),
            "network": list(self.network),
            "findings": [f.to_json() for f in self.findings],
            "checks": list(self.checks),
            "grade": self.grade.to_json(),
            "clean": self.clean,
        }
