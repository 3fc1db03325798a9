"""launch.path (issue 27): check, apply and launch agree. The judging over what the
launcher's start-up probe reported, as the real one reported it in Podman containers
with ``unmask=/proc/*`` and default capabilities (then with SYS_PTRACE, then with
SYS_ADMIN too); the recommendation and the plan never offer a sandbox mode that a
launch would refuse, and both name the flag that would allow it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.base import Verdict
from sandbox_setup.checks.launch import judge_launch_path
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.checks.probe import ProbeResult
from sandbox_setup.checks.recommend import recommend
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.plan import build_plan, mode_blocker
from tests.core_fixtures import make_target_root
from tests.host_facts import plan_facts
from tests.unit.test_plan import WS

OK = {"uid": 65534, "sandbox": "ok", "verify": "ok", "network": "ok"}
# What the probe printed in real rootful Podman 4.3.1 containers with unmask=/proc/*.
DEFAULT_CAPS = dict(
    OK,
    verify="cannot read the sandbox's namespaces: [Errno 13] Permission denied: '/proc/24/ns/user'",
    network="cannot open the sandbox's network namespace: [Errno 13] Permission denied: "
    "'/proc/7/ns/net'",
)
WITH_PTRACE = dict(
    OK,
    network="cannot listen inside the sandbox's network namespace: [Errno 1] setns(the "
    "sandbox's network namespace): Operation not permitted; refusing to launch",
)
WITH_PTRACE_ADMIN = dict(
    OK,
    network="cannot check which network namespace a socket made in the sandbox is in: "
    "ioctl(SIOCGSKNS): Operation not permitted",
)
RAN = ProbeResult(("python3",), 0, "{}", "")


def judge(report: dict[str, object], platform: str = "podman") -> Verdict:
    return judge_launch_path(report, RAN, user="uid 65534", platform=platform)


def test_a_launch_that_gets_through_passes() -> None:
    assert judge(OK).status is Status.PASS


@pytest.mark.parametrize(
    ("report", "flag", "cause"),
    [
        (DEFAULT_CAPS, "--cap-add SYS_PTRACE", "launch-verify"),
        (WITH_PTRACE, "--cap-add SYS_ADMIN", "launch-network"),
        (WITH_PTRACE_ADMIN, "--cap-add NET_ADMIN", "launch-network"),
    ],
)
def test_a_refused_step_names_the_capability_and_the_container_flag(
    report: dict[str, object], flag: str, cause: str
) -> None:
    verdict = judge(report)
    assert verdict.status is Status.FAIL
    assert flag.split()[-1] in verdict.summary  # CAP_SYS_PTRACE, ...
    assert f"podman run {flag}" in verdict.remedy
    assert "--mode user" in verdict.remedy
    assert verdict.detail.endswith(f"cause: {cause}")
    # the network steps name the launch options that skip them
    assert ("--network none" in verdict.remedy) is (cause == "launch-network")


def test_outside_a_known_runtime_the_capability_is_named() -> None:
    verdict = judge(DEFAULT_CAPS, platform="none")
    assert "CAP_SYS_PTRACE" in verdict.remedy and "--cap-add" not in verdict.remedy


def test_a_probe_that_did_not_report_fails_and_one_not_given_skips() -> None:
    broken = ProbeResult(("python3",), 1, "", "Traceback ...")
    assert judge_launch_path(None, broken, user="u", platform="podman").status is Status.FAIL
    assert judge_launch_path(None, None, user="u", platform="podman").status is Status.SKIP


def findings(launch: Verdict | None) -> list[Finding]:
    found = [
        Finding("bwrap.sandbox", "t", Status.PASS, "ok"),
        Finding("bwrap.nested", "t", Status.PASS, "ok"),
        Finding("bwrap.direct", "t", Status.PASS, "ok"),
        Finding("claude.sandbox_deps", "t", Status.PASS, "ok"),
    ]
    if launch is not None:
        found.append(
            Finding(
                "launch.path",
                "t",
                launch.status,
                launch.summary,
                launch.detail,
                launch.remedy,
                cause=launch.cause,
            )
        )
    return found


def test_sandbox_mode_is_not_recommended_where_a_launch_would_be_refused() -> None:
    assert recommend(findings(judge(OK))).mode is Mode.SANDBOX
    assert recommend(findings(None)).mode is Mode.SANDBOX  # an older report
    refused = recommend(findings(judge(DEFAULT_CAPS)))
    assert refused.mode is Mode.USER
    assert "launch.path" in refused.reason and "--cap-add SYS_PTRACE" in refused.reason


def report(launch: Verdict | None) -> Report:
    return Report({}, findings(launch), Recommendation(Mode.USER, "test"))


def test_the_plan_refuses_the_sandbox_mode_a_launch_would_refuse(tmp_path: Path) -> None:
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    with pytest.raises(RefusedError, match=r"launch\.path is fail") as caught:
        build_plan(
            report(judge(DEFAULT_CAPS)),
            Answers(Mode.SANDBOX, workspaces=WS),
            layout,
            facts=plan_facts(),
        )
    assert "--cap-add SYS_PTRACE" in str(caught.value)
    build_plan(report(judge(OK)), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())


def test_a_network_only_refusal_blocks_only_the_allowlist_network() -> None:
    network_only = report(judge(WITH_PTRACE))
    assert mode_blocker(network_only, Mode.SANDBOX) is not None
    assert mode_blocker(network_only, Mode.SANDBOX, Network.ALLOWLIST) is not None
    assert mode_blocker(network_only, Mode.SANDBOX, Network.HOST) is None
    assert mode_blocker(network_only, Mode.SANDBOX, Network.NONE) is None
    verify = report(judge(DEFAULT_CAPS))
    assert mode_blocker(verify, Mode.SANDBOX, Network.HOST) is not None
    assert mode_blocker(verify, Mode.USER) is None


def test_the_audit_names_a_launch_that_would_be_refused() -> None:
    from dataclasses import replace

    from sandbox_setup.audit.mode import mode_findings
    from tests.unit.test_audit_mode import config

    sandbox = replace(config(), network=Network.ALLOWLIST)
    assert [f.id for f in mode_findings(report(judge(OK)), sandbox)] == []
    (found,) = mode_findings(report(judge(DEFAULT_CAPS)), sandbox)
    assert found.id == "audit.mode.launch_path"
    assert "--cap-add SYS_PTRACE" in found.remedy
    network_only = report(judge(WITH_PTRACE))
    assert [f.id for f in mode_findings(network_only, sandbox)] == ["audit.mode.launch_path"]
    host = replace(sandbox, network=Network.HOST)
    assert mode_findings(network_only, host) == []
    assert mode_findings(report(judge(DEFAULT_CAPS)), config(mode="user", inner="off")) == []


# What the probe printed in real rootful Podman 4.3.1 with --cap-drop SETUID (and SETGID).
NO_SETUID = dict(
    OK,
    sandbox="bwrap did not start the sandbox: setpriv: setresuid failed: Operation not permitted",
    verify=None,
    network=None,
)
NO_SETGID = dict(NO_SETUID, sandbox=NO_SETUID["sandbox"].replace("setresuid", "setresgid"))


@pytest.mark.parametrize(("probed", "capability"), [(NO_SETUID, "SETUID"), (NO_SETGID, "SETGID")])
def test_a_root_that_cannot_become_the_agent_names_the_flag_and_not_user_mode(
    probed: dict[str, object], capability: str
) -> None:
    verdict = judge(probed)
    assert verdict.status is Status.FAIL
    assert f"CAP_{capability}" in verdict.summary
    assert f"podman run --cap-add {capability} ..." in verdict.remedy
    assert "--mode user" not in verdict.remedy  # user mode needs the id change too
    assert verdict.detail.endswith("cause: root-cannot-switch-user")
    assert "--cap-add" not in judge(probed, platform="none").remedy


def test_no_mode_is_applied_where_root_cannot_become_the_agent(tmp_path: Path) -> None:
    """Sandbox and user mode both refused by the plan, the flag named; the
    recommendation says so first, with the flag."""
    blocked = report(judge(NO_SETUID))
    for mode in (Mode.SANDBOX, Mode.USER):
        blocker = mode_blocker(blocked, mode)
        assert blocker is not None and "--cap-add SETUID" in blocker.remedy, mode
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    with pytest.raises(RefusedError, match="user mode needs a root that can become") as caught:
        build_plan(blocked, Answers(Mode.USER, workspaces=WS), layout, facts=plan_facts())
    assert "podman run --cap-add SETUID" in str(caught.value)
    found = findings(judge(NO_SETUID))
    found[0] = Finding("bwrap.sandbox", "t", Status.FAIL, "setpriv failed")
    advice = recommend(found)
    assert advice.mode is not Mode.SANDBOX
    assert advice.reason.startswith("Nothing can launch here yet")
    assert "podman run --cap-add SETUID" in advice.reason
    assert not recommend(findings(judge(OK))).reason.startswith("Nothing")


def test_the_audit_of_a_user_mode_setup_names_a_root_that_cannot_become_the_agent() -> None:
    from sandbox_setup.audit.mode import mode_findings
    from tests.unit.test_audit_mode import config

    user = config(mode="user", inner="off")
    assert mode_findings(report(judge(OK)), user) == []
    (found,) = mode_findings(report(judge(NO_SETUID)), user)
    assert found.id == "audit.mode.launch_path"
    assert "podman run --cap-add SETUID" in found.remedy
