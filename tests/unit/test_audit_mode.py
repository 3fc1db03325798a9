"""What the mode needs from the host, judged over canned check reports."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from sandbox_setup.audit.mode import claude_findings, mode_findings
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.claude_version import parse_claude_version
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status

P, F = Status.PASS, Status.FAIL


def report(**statuses: Status) -> Report:
    findings = [
        Finding(
            id=key.replace("__", "."),
            title=key,
            status=status,
            summary=f"{key} said {status}",
            remedy=f"fix {key}" if status is not P else "",
        )
        for key, status in statuses.items()
    ]
    return Report(host={}, findings=findings, recommendation=Recommendation(Mode.USER, "r"))


def config(mode: str = "sandbox", inner: str = "strong", version: str | None = None):
    return LauncherConfig(
        mode=Mode(mode),
        claude=PurePosixPath("/usr/local/bin/claude"),
        agent_user="claude-agent",
        agent_home=PurePosixPath("/home/claude-agent"),
        workspaces=(PurePosixPath("/srv/p"),),
        inner_sandbox=inner,
        claude_version=version,
    )


@pytest.mark.parametrize(
    ("mode", "inner", "statuses", "ids"),
    [
        ("sandbox", "strong", dict(bwrap__sandbox=P, bwrap__nested=P, bwrap__nested_weak=P), []),
        (
            "sandbox",
            "strong",
            dict(bwrap__sandbox=F, bwrap__nested=F, bwrap__nested_weak=F),
            ["audit.mode.bwrap_sandbox", "audit.mode.bwrap_nested"],
        ),
        (
            "sandbox",
            "strong",
            dict(bwrap__sandbox=P, bwrap__nested=F, bwrap__nested_weak=P),
            ["audit.mode.bwrap_nested"],
        ),
        ("sandbox", "weak", dict(bwrap__sandbox=P, bwrap__nested=F, bwrap__nested_weak=P), []),
        (
            "sandbox",
            "weak",
            dict(bwrap__sandbox=P, bwrap__nested=P, bwrap__nested_weak=F),
            ["audit.mode.bwrap_nested_weak"],
        ),
        ("sandbox", "off", dict(bwrap__sandbox=P, bwrap__nested=F, bwrap__nested_weak=F), []),
        ("sandbox", "strong", dict(bwrap__nested=P), ["audit.mode.bwrap_sandbox"]),  # missing
        ("user", "strong", dict(bwrap__sandbox=F, bwrap__nested=F), []),
        ("unsafe", "strong", dict(bwrap__sandbox=F), []),
    ],
)
def test_mode_needs(mode: str, inner: str, statuses: dict, ids: list[str]) -> None:
    found = mode_findings(report(claude__sandbox_deps=P, **statuses), config(mode, inner))
    assert [f.id for f in found] == ids


@pytest.mark.parametrize(
    ("mode", "inner", "ids"),
    [
        ("sandbox", "strong", ["audit.mode.sandbox_deps"]),
        ("sandbox", "weak", ["audit.mode.sandbox_deps"]),
        ("user", "strong", ["audit.mode.sandbox_deps"]),
        ("unsafe", "weak", ["audit.mode.sandbox_deps"]),
        ("sandbox", "off", []),
        ("user", "off", []),
    ],
)
def test_an_inner_sandbox_that_is_on_needs_socat_in_every_mode(
    mode: str, inner: str, ids: list[str]
) -> None:
    statuses = dict(bwrap__sandbox=P, bwrap__nested=P, bwrap__nested_weak=P)
    found = mode_findings(report(claude__sandbox_deps=F, **statuses), config(mode, inner))
    assert [f.id for f in found] == ids
    for finding in found:
        assert "claude.sandbox_deps is now fail" in finding.summary
        assert finding.remedy == "fix claude__sandbox_deps"


def test_mode_finding_carries_the_checks_cause_and_remedy() -> None:
    (found,) = mode_findings(
        report(bwrap__sandbox=F, bwrap__nested=P, claude__sandbox_deps=P), config()
    )
    assert "bwrap__sandbox said fail" in found.summary
    assert found.remedy == "fix bwrap__sandbox"


def test_strong_failing_with_weak_passing_names_the_weak_way_out() -> None:
    statuses = dict(bwrap__sandbox=P, bwrap__nested=F, bwrap__nested_weak=P)
    found = mode_findings(report(claude__sandbox_deps=P, **statuses), config())
    assert 'inner_sandbox = "weak"' in found[0].remedy


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.1.197 (Claude Code)\n", "2.1.197"),
        ("claude 1.0.3-beta.1\n", "1.0.3-beta.1"),
        ("no version here", None),
    ],
)
def test_parse_version(text: str, version: str | None) -> None:
    assert parse_claude_version(text) == version


@pytest.mark.parametrize(
    ("exists", "trusted", "recorded", "now", "ids"),
    [
        (True, True, "2.1.332", "2.1.332", []),
        (True, True, "2.1.332", "2.1.333", ["audit.claude.changed"]),
        (True, True, "2.1.332", None, ["audit.claude.changed"]),
        (True, True, None, "2.1.333", []),  # nothing recorded: nothing to compare
        (True, False, "2.1.332", None, []),  # untrusted: never run; safety rule reports it
        (False, True, "2.1.332", None, ["audit.claude.missing"]),
        # Below the release floor (policy.claude_release): reported whatever was recorded.
        (True, True, "2.1.197", "2.1.197", ["audit.claude.below_floor"]),
        (True, True, None, "2.1.197", ["audit.claude.below_floor"]),
        (True, True, "2.1.332", "2.1.197", ["audit.claude.changed", "audit.claude.below_floor"]),
        (True, True, "2.1.197", "2.1.323", ["audit.claude.changed"]),  # the floor itself
        (True, False, "2.1.197", "2.1.197", []),  # untrusted: never run
    ],
)
def test_claude(exists, trusted, recorded, now, ids) -> None:
    found = claude_findings(config(version=recorded), "/c", exists, trusted, now, "REAPPLY")
    assert [f.id for f in found] == ids
    assert all("REAPPLY" in f.remedy for f in found)
    for finding in found:
        if finding.id == "audit.claude.below_floor":
            assert f"{now}, below the release floor 2.1.323" in finding.summary
            assert "lacks" in finding.detail and "--cap-drop ALL" in finding.detail
            assert finding.remedy.startswith("npm install -g @anthropic-ai/claude-code@latest")
