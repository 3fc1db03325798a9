"""The plan and Claude's own sandbox: refused without its dependencies, written so it
cannot vanish or be bypassed, with the probed binaries in managed scope."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from sandbox_setup.base.choices import InnerSandbox, Mode, SettingsScope
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.host_facts import SandboxBinary, gather_host_facts
from sandbox_setup.configure.plan import Plan, build_plan
from tests.core_fixtures import make_target_root
from tests.host_facts import NO_BWRAP, plan_facts

WS = (PurePosixPath("/srv/project"),)
SANDBOX = Answers(Mode.SANDBOX, workspaces=WS)
DEPS_MISSING = Finding(
    "claude.sandbox_deps",
    "socat and ripgrep",
    Status.FAIL,
    "missing for Claude Code's sandbox: socat",
    "socat: missing\ncause: sandbox-deps-missing",
    "apt-get install -y socat",
    cause="sandbox-deps-missing",
)


def report(deps: Finding | None = None, host: dict[str, Any] | None = None) -> Report:
    findings = [
        Finding(cid, cid, Status.PASS, "ok")
        for cid in ("bwrap.sandbox", "bwrap.nested", "bwrap.nested_weak", "claude.sandbox_deps")
    ]
    if deps is not None:
        findings = [f for f in findings if f.id != deps.id] + [deps]
    return Report(host or {}, findings, Recommendation(Mode.SANDBOX, "test"))


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(make_target_root(tmp_path / "root"))


def settings_of(plan: Plan) -> dict[str, Any]:
    action = next(a for a in plan.actions if "Claude settings" in a.describe())
    data: dict[str, Any] = json.loads(action.desired())
    return data


MODES = [
    (Mode.SANDBOX, {"workspaces": WS}),
    (Mode.USER, {}),
    (Mode.UNSAFE, {"accept_unsafe_root": True}),
]


@pytest.mark.parametrize(("mode", "extra"), MODES, ids=[m for m, _ in MODES])
def test_missing_socat_refuses_the_inner_sandbox_with_the_remedy(
    layout: Layout, mode: Mode, extra: dict[str, Any]
) -> None:
    with pytest.raises(RefusedError) as err:
        build_plan(report(DEPS_MISSING), Answers(mode, **extra), layout, facts=plan_facts())
    text = str(err.value)
    assert "claude.sandbox_deps is fail" in text and "apt-get install -y socat" in text
    assert "--inner-sandbox off" in text
    for strength in (InnerSandbox.STRONG, InnerSandbox.WEAK):
        with pytest.raises(RefusedError):
            build_plan(
                report(DEPS_MISSING),
                Answers(mode, inner_sandbox=strength, **extra),
                layout,
                facts=plan_facts(),
            )


@pytest.mark.parametrize(("mode", "extra"), MODES, ids=[m for m, _ in MODES])
def test_inner_sandbox_off_is_allowed_without_socat(
    layout: Layout, mode: Mode, extra: dict[str, Any]
) -> None:
    answers = Answers(mode, inner_sandbox=InnerSandbox.OFF, **extra)
    plan = build_plan(report(DEPS_MISSING), answers, layout, facts=plan_facts())
    assert plan.launcher_config.inner_sandbox == "off"
    assert settings_of(plan)["sandbox"] == {"enabled": False}


def test_an_unrun_dependency_check_refuses_too(layout: Layout) -> None:
    bare = report()
    bare.findings = [f for f in bare.findings if f.id != "claude.sandbox_deps"]
    with pytest.raises(RefusedError, match=r"claude\.sandbox_deps was not run"):
        build_plan(bare, Answers(Mode.USER), layout, facts=plan_facts())


@pytest.mark.parametrize("strength", [InnerSandbox.STRONG, InnerSandbox.WEAK])
def test_managed_settings_carry_the_fail_closed_keys_and_probed_binaries(
    layout: Layout, strength: InnerSandbox
) -> None:
    # The binaries the probes found are facts handed in: no bwrap or socat needed here.
    facts = plan_facts(
        bwrap=SandboxBinary("bwrap", "/opt/probed/bwrap"),
        socat=SandboxBinary("socat", "/opt/probed/socat"),
    )
    plan = build_plan(
        report(), Answers(Mode.SANDBOX, workspaces=WS, inner_sandbox=strength), layout, facts=facts
    )
    assert plan.answers.settings_scope == SettingsScope.MANAGED
    sandbox = settings_of(plan)["sandbox"]
    assert sandbox["enabled"] is True
    assert sandbox["failIfUnavailable"] is True
    assert sandbox["allowUnsandboxedCommands"] is False
    assert sandbox["autoAllowBashIfSandboxed"] is True
    assert sandbox["bwrapPath"] == "/opt/probed/bwrap"
    assert sandbox["socatPath"] == "/opt/probed/socat"
    assert sandbox.get("enableWeakerNestedSandbox", False) is (strength == InnerSandbox.WEAK)


def test_user_scope_settings_name_no_binaries(layout: Layout) -> None:
    plan = build_plan(
        report(), Answers(Mode.UNSAFE, accept_unsafe_root=True), layout, facts=plan_facts()
    )
    assert plan.answers.settings_scope == SettingsScope.USER
    sandbox = settings_of(plan)["sandbox"]
    assert sandbox["failIfUnavailable"] is True and "bwrapPath" not in sandbox


def test_a_bwrap_others_can_change_is_refused(layout: Layout, tmp_path: Path) -> None:
    writable = tmp_path / "bin"
    writable.mkdir()
    bwrap = writable / "bwrap"
    bwrap.write_text("#!/bin/sh\n")
    bwrap.chmod(0o777)
    binaries = {"bwrap": str(bwrap), "socat": "/usr/bin/socat", "rg": None}
    probed = report(host={"binaries": binaries})
    # The edge judges the recorded binaries once; the plan refuses with its reason.
    facts = gather_host_facts(probed, layout, SANDBOX)
    assert facts.bwrap.path == str(bwrap) and facts.bwrap.untrusted is not None
    with pytest.raises(RefusedError) as err:
        build_plan(probed, SANDBOX, layout, facts=facts)
    assert "sandbox.bwrapPath" in str(err.value) and "world-writable" in str(err.value)


def test_no_bwrap_on_the_path_is_refused_in_managed_scope(layout: Layout) -> None:
    binaries = {"bwrap": None, "socat": "/usr/bin/socat", "rg": None}
    probed = report(host={"binaries": binaries})
    assert gather_host_facts(probed, layout, SANDBOX).bwrap == NO_BWRAP
    with pytest.raises(RefusedError, match=r"sandbox\.bwrapPath: no bwrap"):
        build_plan(probed, SANDBOX, layout, facts=plan_facts(bwrap=NO_BWRAP))
