"""The recommendation: one mode with its reason, from the findings alone."""

from __future__ import annotations

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.checks.recommend import inner_strength, recommend

P, F = Status.PASS, Status.FAIL


def findings(**statuses: Status) -> list[Finding]:
    return [
        Finding(check_id.replace("__", "."), "t", status, f"{check_id} summary")
        for check_id, status in statuses.items()
    ]


@pytest.mark.parametrize(
    ("nested", "weak", "strength"),
    [(P, P, "strong"), (F, P, "weak"), (F, F, "off"), (P, F, "strong"), (None, None, "off")],
)
def test_inner_strength(nested, weak, strength) -> None:
    given = {}
    if nested is not None:
        given["bwrap__nested"] = nested
    if weak is not None:
        given["bwrap__nested_weak"] = weak
    assert inner_strength(findings(**given)) == strength


def test_sandbox_when_bwrap_sandbox_passes() -> None:
    rec = recommend(
        findings(bwrap__sandbox=P, bwrap__nested=P, bwrap__nested_weak=P), as_user="claude-agent"
    )
    assert rec.mode is Mode.SANDBOX
    assert "claude-agent" in rec.reason and "strong" in rec.reason
    assert "--as-user" not in rec.reason


def test_sandbox_probed_as_root_says_to_recheck_as_the_agent() -> None:
    rec = recommend(findings(bwrap__sandbox=P, bwrap__nested=F, bwrap__nested_weak=P), euid=0)
    assert rec.mode is Mode.SANDBOX and "weaker nested" in rec.reason
    assert "--as-user" in rec.reason


def test_user_when_the_sandbox_does_not_start() -> None:
    rec = recommend(findings(bwrap__sandbox=F, bwrap__nested=F), euid=0)
    assert rec.mode is Mode.USER
    assert "bwrap.sandbox fail" in rec.reason and "bwrap__sandbox summary" in rec.reason
    assert "created" in rec.reason
    nonroot = recommend(findings(bwrap__sandbox=F), euid=1000)
    assert nonroot.mode is Mode.USER and "your own account" in nonroot.reason


@pytest.mark.parametrize("sandbox", [P, F, Status.ERROR, Status.SKIP, None])
def test_unsafe_is_never_recommended_only_explained(sandbox) -> None:
    given = {} if sandbox is None else {"bwrap__sandbox": sandbox}
    rec = recommend(findings(**given), euid=0)
    assert rec.mode is not Mode.UNSAFE
    assert "unsafe" in rec.reason and "never recommended" in rec.reason


def test_a_missing_socat_is_named_before_the_inner_sandbox_is_promised() -> None:
    given = findings(bwrap__sandbox=P, bwrap__nested=P, claude__sandbox_deps=F)
    rec = recommend(given, as_user="claude-agent")
    assert rec.mode is Mode.SANDBOX
    assert "claude.sandbox_deps" in rec.reason and "--inner-sandbox off" in rec.reason
    fine = recommend(findings(bwrap__sandbox=P, bwrap__nested=P, claude__sandbox_deps=P))
    assert "claude.sandbox_deps" not in fine.reason


def test_user_with_landlock_where_namespaces_are_refused() -> None:
    given = findings(bwrap__sandbox=F, userns__create=F, landlock__abi=P)
    rec = recommend(given, euid=0)
    assert rec.mode is Mode.USER
    assert "user namespaces are refused here, so User mode with Landlock" in rec.reason
    assert "landlock__abi summary" in rec.reason
    # No Landlock (or a warning): the reason claims none.
    for status in (Status.WARN, None):
        others = findings(bwrap__sandbox=F, userns__create=F)
        if status is not None:
            others += findings(landlock__abi=status)
        assert "Landlock" not in recommend(others, euid=0).reason


def test_user_mode_where_root_cannot_switch_to_the_agent_says_every_launch_is_refused() -> None:
    """docker run --cap-drop SETUID: user mode is all that is left, but its launch drops
    to the agent too; the reason says so and names what allows it."""
    switch = Finding(
        "bwrap.sandbox",
        "t",
        F,
        "root lacks CAP_SETUID here",
        "$ bwrap ...\ncause: root-cannot-switch-user",
        "docker run --cap-add SETUID ... (restart the container)",
        cause="root-cannot-switch-user",
    )
    rec = recommend([switch, *findings(bwrap__direct=F, bwrap__direct_weak=F)], euid=0)
    assert rec.mode is Mode.USER
    assert rec.reason.startswith("Nothing can launch here yet")
    assert "docker run --cap-add SETUID" in rec.reason
    plain = recommend(findings(bwrap__sandbox=F, bwrap__direct=F), euid=0)
    assert "Nothing can launch" not in plain.reason


def test_sandbox_mode_says_when_its_default_allowlist_network_would_be_refused() -> None:
    """net.egress failed: the apply refuses sandbox mode's default network, so the
    recommendation says so before anyone applies it."""
    given = findings(bwrap__sandbox=P, bwrap__nested=P, launch__path=P, net__egress=F)
    rec = recommend(given, as_user="claude-agent")
    assert rec.mode is Mode.SANDBOX
    assert "allowlist network would be refused" in rec.reason
    assert "net__egress summary" in rec.reason and "--network none" in rec.reason
    fine = recommend(
        findings(bwrap__sandbox=P, bwrap__nested=P, net__egress=P), as_user="claude-agent"
    )
    assert "would be refused" not in fine.reason
