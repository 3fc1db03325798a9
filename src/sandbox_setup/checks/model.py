"""The values checks produce: findings, the report and its recommendation."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from sandbox_setup.base import remedies
from sandbox_setup.base.choices import Mode

SCHEMA = 1


class Status(enum.StrEnum):
    """Outcome of one check. A check that raises becomes ``ERROR``."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """Worst first: the one order of severity every listing uses (CLI and TUI)."""
        return STATUS_ORDER.index(self)


# Worst first: a check that crashed, one that failed, a warning, one that could
# not run, a pass.
STATUS_ORDER = (Status.ERROR, Status.FAIL, Status.WARN, Status.SKIP, Status.PASS)


@dataclass(frozen=True)
class Finding:
    """What one check found: a verdict, why, and the command that fixes it."""

    id: str
    title: str
    status: Status
    summary: str
    detail: str = ""
    remedy: str = ""
    # What the check measured, typed, for the code that decides by it (the plan, the
    # audit): e.g. ``{"abi": 7}``. The summary and detail are words for people only.
    facts: dict[str, int | bool] = field(default_factory=dict, compare=False)
    # The named cause the check found (a key of sandbox_setup.checks.causes, or a
    # check's own), for the code that decides by it; the detail's last line says it
    # to people ("cause: KEY") and is never read back.
    cause: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        if not self.facts:
            del data["facts"]
        if self.cause is None:
            del data["cause"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(
            id=str(data["id"]),
            title=str(data.get("title", "")),
            status=Status(data["status"]),
            summary=str(data.get("summary", "")),
            detail=str(data.get("detail", "")),
            remedy=str(data.get("remedy", "")),
            facts=_facts(data.get("facts")),
            cause=data["cause"] if isinstance(data.get("cause"), str) else None,
        )


def _facts(data: object) -> dict[str, int | bool]:
    """A finding's facts as read back from JSON: ints and booleans only, the rest dropped."""
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, (int, bool))}


def worst_first(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` by :data:`STATUS_ORDER`, report order kept within a status."""
    return sorted(findings, key=lambda f: f.status.rank)


def cause_key(finding: Finding) -> str | None:
    """The named cause a check found (:attr:`Finding.cause`)."""
    return finding.cause


@dataclass(frozen=True)
class Recommendation:
    """The mode the findings point to, and why."""

    mode: Mode
    reason: str


PARTIAL_REASON = (
    f"not all checks ran: the recommendation needs the full run: {remedies.rerun_checks()}"
)


@dataclass
class Report:
    """Every finding of one run, facts about the host, and a recommendation."""

    host: dict[str, Any]
    findings: list[Finding]
    recommendation: Recommendation
    as_user: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def get(self, check_id: str) -> Finding | None:
        for finding in self.findings:
            if finding.id == check_id:
                return finding
        return None

    def status(self, check_id: str) -> Status | None:
        finding = self.get(check_id)
        return finding.status if finding else None

    def passed(self, check_id: str) -> bool:
        return self.status(check_id) is Status.PASS

    @property
    def partial(self) -> bool:
        """A run of some checks only (``--check ID ...``): no mode is recommended from it."""
        return bool(self.extra.get("partial"))

    @property
    def failed(self) -> bool:
        return any(f.status in (Status.FAIL, Status.ERROR) for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "host": self.host,
            "as_user": self.as_user,
            "checks": [f.to_json() for f in self.findings],
            "recommendation": (
                {"mode": None, "reason": PARTIAL_REASON}
                if self.partial
                else {"mode": str(self.recommendation.mode), "reason": self.recommendation.reason}
            ),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        rec = data.get("recommendation") or {}
        partial = "mode" in rec and rec["mode"] is None
        return cls(
            host=dict(data.get("host") or {}),
            findings=[Finding.from_json(c) for c in data.get("checks", [])],
            recommendation=Recommendation(
                Mode(rec.get("mode") or "user"), str(rec.get("reason", ""))
            ),
            as_user=data.get("as_user"),
            extra={"partial": True} if partial else {},
        )
