"""net.user_wall judged over canned probe output, the typed answer the plan and the
audit read, and the live probe on this host (DESIGN.md invariant 16)."""

from __future__ import annotations

import os

import pytest

from sandbox_setup.base.netwall import NAMESPACE_WALL, PORTS_ONLY
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.checks.probe import ProbeResult, run_probe
from sandbox_setup.checks.user_net import judge_user_wall, namespace_from, netns_command


def result(stdout: str, code: int | None = 0) -> ProbeResult:
    return ProbeResult(("python3", "-c", "..."), code, stdout)


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
    finding = Finding("net.user_wall", "t", verdict.status, verdict.summary)
    assert namespace_from(finding) is namespace
    if namespace is True:
        assert NAMESPACE_WALL in verdict.summary and PORTS_ONLY not in verdict.summary
    if namespace is False:
        # Said plainly, never an address wall that is not there.
        assert PORTS_ONLY in verdict.summary and NAMESPACE_WALL not in verdict.summary
        assert verdict.detail.endswith("cause: netns-refused")
        assert "CAP_SYS_ADMIN" in verdict.remedy


def test_the_answer_is_the_status_not_the_words() -> None:
    # A summary that reads like the other answer changes nothing.
    found = Finding("net.user_wall", "t", Status.WARN, NAMESPACE_WALL)
    assert namespace_from(found) is False
    assert namespace_from(None) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="the probe is root's (the launcher's side)")
def test_the_live_probe_agrees_with_the_launcher() -> None:
    from sandbox_setup.launcher.egress.netns import namespace_possible

    verdict = judge_user_wall(run_probe(netns_command(), timeout=10))
    assert namespace_from(Finding("x", "t", verdict.status, "")) is namespace_possible().possible


@pytest.mark.parametrize("probe", [result("netns ok\n"), None])
def test_below_landlock_abi_4_no_wall_is_claimed(probe: ProbeResult | None) -> None:
    # The namespace comes with the session's proxy (Landlock's TCP rules): on ABI 3
    # root may make namespaces, but user mode gets the host's network, and says so.
    verdict = judge_user_wall(probe, landlock_abi=3)
    assert verdict.status is Status.WARN
    assert NAMESPACE_WALL not in verdict.summary and "host's network" in verdict.summary
    assert verdict.detail.endswith("cause: no-tcp-rules")
    assert namespace_from(Finding("net.user_wall", "t", verdict.status, "")) is False
    assert judge_user_wall(result("netns ok\n"), landlock_abi=4).status is Status.PASS
