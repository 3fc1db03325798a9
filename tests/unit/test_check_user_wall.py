"""net.user_wall judged over canned probe output, the typed answer the plan and the
audit read, and the live probe on this host (docs/design.md invariant 16)."""

from __future__ import annotations

import os

import pytest

from sandbox_setup.base.netwall import (
    NAMESPACE_WALL,
    NO_SECOND_WALL,
    NO_WALL,
    PORTS_ONLY,
)
from sandbox_setup.checks.base import Verdict
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.checks.probe import ProbeResult, run_probe
from sandbox_setup.checks.user_net import judge_user_wall, namespace_from, netns_command


def result(stdout: str, code: int | None = 0) -> ProbeResult:
    return ProbeResult(("python3", "-c", "..."), code, stdout)


def finding(verdict: Verdict) -> Finding:
    """The finding the runner makes of ``verdict`` (its facts included)."""
    return Finding("net.user_wall", "t", verdict.status, verdict.summary, verdict.detail,
                   verdict.remedy, dict(verdict.facts))  # fmt: skip


@pytest.mark.parametrize(
    ("probe", "status", "namespace"),
    [
        (result("netns ok\n"), Status.PASS, True),
        (result("error unshare EPERM\n"), Status.WARN, False),
        (result("error loopback EPERM\n"), Status.WARN, False),
        (result("", None), Status.ERROR, None),
        (None, Status.ERROR, None),
    ],
)
def test_judge(probe: ProbeResult | None, status: Status, namespace: bool | None) -> None:
    verdict = judge_user_wall(probe)
    assert verdict.status is status
    assert namespace_from(finding(verdict)) is namespace
    if namespace is True:
        assert NAMESPACE_WALL in verdict.summary and PORTS_ONLY not in verdict.summary
    if namespace is False:
        # Said plainly, never an address wall that is not there.
        assert PORTS_ONLY in verdict.summary and NAMESPACE_WALL not in verdict.summary
        assert verdict.detail.endswith("cause: netns-refused")
        assert "CAP_SYS_ADMIN" in verdict.remedy


def test_the_answer_is_the_typed_fact_not_the_words() -> None:
    # A summary or a status that reads like the other answer changes nothing.
    assert namespace_from(Finding("net.user_wall", "t", Status.WARN, NAMESPACE_WALL)) is None
    assert namespace_from(Finding("net.user_wall", "t", Status.PASS, "netns ok")) is None
    said = Finding("net.user_wall", "t", Status.PASS, PORTS_ONLY, facts={"netns": True})
    assert namespace_from(said) is True
    assert (
        namespace_from(Finding("x", "t", Status.WARN, NAMESPACE_WALL, facts={"netns": False}))
        is False
    )
    assert namespace_from(None) is None
    # The fact survives the report's JSON (a report read back from --json).
    assert namespace_from(Finding.from_json(said.to_json())) is True


@pytest.mark.skipif(os.geteuid() != 0, reason="the probe is root's (the launcher's side)")
def test_the_live_probe_agrees_with_the_launcher() -> None:
    from sandbox_setup.launcher.egress.netns import namespace_possible

    verdict = judge_user_wall(run_probe(netns_command(), timeout=10))
    assert namespace_from(finding(verdict)) is namespace_possible().possible


def test_below_landlock_abi_4_the_namespace_is_still_the_wall() -> None:
    # The namespace does not wait on Landlock's TCP rules: on ABI 3 (Debian 12's 6.1)
    # a root that may make namespaces gives the session one, with no second wall.
    verdict = judge_user_wall(result("netns ok\n"), landlock_abi=3)
    assert verdict.status is Status.PASS
    assert NAMESPACE_WALL in verdict.summary and NO_SECOND_WALL in verdict.summary
    assert namespace_from(finding(verdict)) is True
    assert "as the second wall" in judge_user_wall(result("netns ok\n"), landlock_abi=4).summary


def test_neither_wall_says_the_hosts_network() -> None:
    # No namespace for root and Landlock ABI < 4: no wall, said plainly.
    verdict = judge_user_wall(result("error unshare EPERM\n"), landlock_abi=3)
    assert verdict.status is Status.WARN
    assert NO_WALL in verdict.summary
    assert NAMESPACE_WALL not in verdict.summary and PORTS_ONLY not in verdict.summary
    assert verdict.detail.endswith("cause: no-wall")
    assert namespace_from(finding(verdict)) is False
