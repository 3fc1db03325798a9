"""A finding's cause is a typed value the plan, the audit and the recommendation
decide by; the ``cause: KEY`` line that ends its detail is for people and is never
read back (rewording or dropping it changes nothing)."""

from __future__ import annotations

import dataclasses

from sandbox_setup.base.choices import Mode
from sandbox_setup.checks.base import Verdict
from sandbox_setup.checks.causes import SWITCH_CAUSE, Cause
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status, cause_key
from sandbox_setup.checks.recommend import recommend


def _switch(detail: str, cause: str | None) -> Finding:
    return Finding(
        "bwrap.sandbox", "t", Status.FAIL, "root lacks CAP_SETUID", detail, "r", cause=cause
    )


def _rest() -> list[Finding]:
    return [
        Finding(cid, "t", Status.FAIL, "no")
        for cid in ("bwrap.direct", "bwrap.direct_weak", "bwrap.nested", "bwrap.nested_weak")
    ]


def test_the_typed_cause_decides_not_the_line() -> None:
    said_only = _switch(f"$ bwrap ...\ncause: {SWITCH_CAUSE}", None)
    typed_only = _switch("$ bwrap ... (the line reworded away)", SWITCH_CAUSE)
    assert cause_key(said_only) is None
    assert cause_key(typed_only) == SWITCH_CAUSE
    assert recommend([typed_only, *_rest()], euid=0).reason.startswith("Nothing can launch")
    assert not recommend([said_only, *_rest()], euid=0).reason.startswith("Nothing can launch")


def test_a_verdict_names_its_cause_once_for_people_and_keeps_it_typed() -> None:
    verdict = Verdict.from_cause(Cause("proc-masked", "masked", "fix"), "probe output")
    assert verdict.cause == "proc-masked"
    assert verdict.detail == "probe output\ncause: proc-masked"
    again = dataclasses.replace(verdict, summary="other words")
    assert again.detail == verdict.detail and again.cause == "proc-masked"
    assert Verdict(Status.WARN, "s", cause="tiocsti-enabled").detail == "cause: tiocsti-enabled"


def test_the_cause_survives_json_and_is_absent_when_there_is_none() -> None:
    finding = _switch("d", SWITCH_CAUSE)
    findings = [finding, Finding("x", "t", Status.PASS, "ok")]
    report = Report(host={}, findings=findings, recommendation=Recommendation(Mode.USER, "r"))
    data = report.to_json()
    assert data["checks"][0]["cause"] == SWITCH_CAUSE and "cause" not in data["checks"][1]
    assert cause_key(Report.from_json(data).findings[0]) == SWITCH_CAUSE
