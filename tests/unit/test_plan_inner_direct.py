"""The inner-sandbox strength of user (and unsafe) mode comes from the probes of the form
Claude Code starts there, with nothing around it (``bwrap.direct``, ``bwrap.direct_weak``),
not from the launcher's own sandbox probe (issue 27).

The podman default-masks case: ``bwrap.sandbox`` and the strong form fail (a fresh /proc
cannot be mounted under the masks), the weak form works for an unprivileged agent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox_setup.base.choices import InnerSandbox, Mode
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.bwrap import judge_direct
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.checks.probe import ProbeResult
from sandbox_setup.checks.recommend import recommend
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.plan import Plan, build_plan, default_inner_sandbox
from tests.host_facts import plan_facts
from tests.unit.test_plan import WS, layout  # noqa: F401 (the fixture)

MASKED = "/proc is masked: /proc/acpi (masked); the kernel refuses a fresh /proc"
# Podman's default masks, as the checks found them in a real container.
PODMAN_DEFAULT_MASKS = {
    "bwrap.sandbox": "fail",
    "bwrap.nested": "fail",
    "bwrap.nested_weak": "fail",
    "bwrap.direct": "fail",
    "bwrap.direct_weak": "pass",
    "claude.sandbox_deps": "pass",
}


def report(statuses: dict[str, str]) -> Report:
    findings = [
        Finding(cid, cid, Status(st), MASKED if st == "fail" else f"{cid} works")
        for cid, st in statuses.items()
    ]
    return Report(host={}, findings=findings, recommendation=Recommendation(Mode.USER, "test"))


def settings_of(plan: Plan) -> dict[str, Any]:
    (action,) = [a for a in plan.actions if str(a.target).endswith("managed-settings.json")]
    data: dict[str, Any] = json.loads(action.desired())
    return data


@pytest.mark.parametrize(
    ("direct", "weak", "expected"),
    [
        ("pass", "pass", InnerSandbox.STRONG),
        ("fail", "pass", InnerSandbox.WEAK),
        ("fail", "fail", InnerSandbox.OFF),
    ],
)
def test_user_mode_strength_comes_from_the_direct_probes(
    direct: str, weak: str, expected: InnerSandbox
) -> None:
    # bwrap.sandbox says the opposite each time: it does not decide user mode's strength
    sandbox = "fail" if expected is not InnerSandbox.OFF else "pass"
    found = report({"bwrap.sandbox": sandbox, "bwrap.direct": direct, "bwrap.direct_weak": weak})
    assert default_inner_sandbox(found, Mode.USER) is expected
    assert default_inner_sandbox(found, Mode.UNSAFE) is expected


def test_a_report_without_the_direct_probes_falls_back_to_bwrap_sandbox() -> None:
    assert default_inner_sandbox(report({"bwrap.sandbox": "pass"}), Mode.USER) == "strong"
    assert default_inner_sandbox(report({"bwrap.sandbox": "fail"}), Mode.USER) == "off"


def test_podman_default_masks_user_mode_gets_the_weak_inner_sandbox(layout: Layout) -> None:  # noqa: F811
    plan = build_plan(
        report(PODMAN_DEFAULT_MASKS), Answers(Mode.USER, workspaces=WS), layout, facts=plan_facts()
    )
    assert plan.launcher_config.inner_sandbox == "weak"
    sandbox = settings_of(plan)["sandbox"]
    assert sandbox["enabled"] is True
    assert sandbox["enableWeakerNestedSandbox"] is True
    assert sandbox["failIfUnavailable"] is True
    assert not [n for n in plan.notes if "unsandboxed" in n]


def test_weak_is_accepted_by_choice_where_its_probe_passed(layout: Layout) -> None:  # noqa: F811
    answers = Answers(Mode.USER, workspaces=WS, inner_sandbox="weak")
    plan = build_plan(report(PODMAN_DEFAULT_MASKS), answers, layout, facts=plan_facts())
    assert plan.launcher_config.inner_sandbox == "weak"


def test_strong_is_refused_where_its_probe_failed_naming_what_works(layout: Layout) -> None:  # noqa: F811
    answers = Answers(Mode.USER, workspaces=WS, inner_sandbox="strong")
    with pytest.raises(RefusedError) as caught:
        build_plan(report(PODMAN_DEFAULT_MASKS), answers, layout, facts=plan_facts())
    text = str(caught.value)
    assert "inner sandbox 'strong' was not verified" in text
    assert "bwrap.direct is fail" in text and "--inner-sandbox weak" in text


def test_strong_in_user_mode_where_it_works_even_if_the_launcher_sandbox_does_not(
    layout: Layout,  # noqa: F811
) -> None:
    found = dict(PODMAN_DEFAULT_MASKS, **{"bwrap.direct": "pass"})
    plan = build_plan(report(found), Answers(Mode.USER, workspaces=WS), layout, facts=plan_facts())
    assert plan.launcher_config.inner_sandbox == "strong"
    assert settings_of(plan)["sandbox"]["enabled"] is True


def test_no_form_works_the_plan_says_bash_runs_unsandboxed_and_why(layout: Layout) -> None:  # noqa: F811
    found = dict(PODMAN_DEFAULT_MASKS, **{"bwrap.direct_weak": "fail"})
    plan = build_plan(report(found), Answers(Mode.USER, workspaces=WS), layout, facts=plan_facts())
    assert plan.launcher_config.inner_sandbox == "off"
    assert settings_of(plan)["sandbox"]["enabled"] is False
    (note,) = [n for n in plan.notes if "unsandboxed" in n]
    assert "Claude Code's Bash will run unsandboxed (as the agent" in note
    assert "bwrap.direct_weak is fail" in note and "/proc is masked" in note


def test_judge_direct_pass_and_fail_name_the_form_and_the_cause() -> None:
    facts = HostFacts()
    ok = ProbeResult(("bwrap",), 0, "", "")
    passed = judge_direct(ok, facts, weak=True, uid=1000, platform="podman")
    assert passed.status is Status.PASS
    assert "weak form" in passed.summary and "without an outer sandbox" in passed.summary
    refused = ProbeResult(
        ("bwrap",), 1, "", "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"
    )
    failed = judge_direct(refused, facts, weak=False, uid=1000, platform="podman")
    assert failed.status is Status.FAIL
    assert "no outer sandbox" in failed.detail and "cause:" in failed.detail


def test_recommend_user_mode_says_which_inner_form_works() -> None:
    findings = report(PODMAN_DEFAULT_MASKS).findings
    reason = recommend(findings, euid=0).reason
    assert "weaker form" in reason and "--inner-sandbox weak" in reason
    no_form = report(dict(PODMAN_DEFAULT_MASKS, **{"bwrap.direct_weak": "fail"})).findings
    assert "Bash would run unsandboxed" in recommend(no_form, euid=0).reason


def test_the_audit_judges_user_modes_inner_strength_by_the_direct_probes() -> None:
    from sandbox_setup.audit.mode import mode_findings
    from tests.unit.test_audit_mode import config

    masks = report(PODMAN_DEFAULT_MASKS)
    assert mode_findings(masks, config(mode="user", inner="weak")) == []
    (found,) = mode_findings(masks, config(mode="user", inner="strong"))
    assert found.id == "audit.mode.bwrap_direct" and "bwrap.direct is now fail" in found.summary
    no_form = report(dict(PODMAN_DEFAULT_MASKS, **{"bwrap.direct_weak": "fail"}))
    ids = [f.id for f in mode_findings(no_form, config(mode="user", inner="weak"))]
    assert ids == ["audit.mode.bwrap_direct_weak"]
    assert mode_findings(no_form, config(mode="user", inner="off")) == []
    # a report without the direct probes (an older version's) is not judged here
    older = report({"bwrap.sandbox": "fail", "claude.sandbox_deps": "pass"})
    assert mode_findings(older, config(mode="user")) == []
