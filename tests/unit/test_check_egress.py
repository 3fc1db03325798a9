"""net.egress: judging (pure, table-tested), the route parser, and the plan's refusal."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.errors import RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.facts import HostFacts
from sandbox_setup.checks.model import Finding, Status
from sandbox_setup.checks.net import NETNS_PROBE, EgressFacts, judge_egress, routes_out
from sandbox_setup.checks.probe import ProbeResult
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.plan import build_plan
from tests.core_fixtures import make_target_root
from tests.host_facts import plan_facts
from tests.unit.test_plan import report

V4_HEADER = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"
V6_LO = (
    "00000000000000000000000000000001 80 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000000 00000001 00000000 00000001       lo"
)
V4_DEFAULT = "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0"
V6_ETH = (
    "20010db8000000000000000000000000 40 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0"
)
OK_PROXY = {
    "uid": 65534,
    "proxy": "ok",
    "refused": {"0.0.0.0:9": "refused", "169.254.169.254:80": "refused 169.254.169.254:80"},
}


def netns(rc: int = 0, out: str = f"{V4_HEADER}\n{V6_LO}\n", err: str = "") -> ProbeResult:
    return ProbeResult(NETNS_PROBE, rc, out, err)


def facts(**changes: object) -> EgressFacts:
    values: dict[str, object] = {
        "netns": netns(),
        "proxy": OK_PROXY,
        "proxy_run": ProbeResult(("python3", "-m", "sandbox_setup.launcher.egress.probe"), 0, "{}"),
        "proxy_user": "nobody (uid 65534)",
    }
    values.update(changes)
    return EgressFacts(**values)  # type: ignore[arg-type]


def judge(value: EgressFacts) -> tuple[Status, str, str]:
    verdict = judge_egress(value, HostFacts(), uid=65534, platform="none")
    return verdict.status, verdict.summary, verdict.remedy


@pytest.mark.parametrize(
    ("changes", "status", "words"),
    [
        ({}, Status.PASS, "only loopback; the egress proxy runs as nobody"),
        ({"netns": netns(out=f"{V4_HEADER}\n{V4_DEFAULT}\n{V6_LO}\n")}, Status.FAIL,
         "routes that leave loopback"),
        ({"netns": netns(out=f"{V4_HEADER}\n{V6_LO}\n{V6_ETH}\n")}, Status.FAIL,
         "routes that leave loopback"),
        ({"netns": netns(1, "", "bwrap: No permissions to creating new namespace")},
         Status.FAIL, "does not start here"),
        ({"proxy": None, "proxy_run": None}, Status.WARN, "was not tried"),
        ({"proxy": None, "proxy_run": ProbeResult(("python3",), 1, "", "Traceback")},
         Status.FAIL, "did not report"),
        ({"proxy": {"proxy": "the egress proxy did not start", "refused": {}}}, Status.FAIL,
         "cannot run as nobody (uid 65534): the egress proxy did not start"),
    ],
)  # fmt: skip
def test_judge_egress(changes: dict[str, object], status: Status, words: str) -> None:
    got, summary, remedy = judge(facts(**changes))
    assert got is status
    assert words in summary
    if status is Status.FAIL:
        assert remedy  # every failure says what to do


def test_routes_out_reads_both_tables() -> None:
    assert routes_out(f"{V4_HEADER}\n{V6_LO}\n") == []
    assert routes_out(f"{V4_HEADER}\n{V4_DEFAULT}\n{V6_ETH}\n") == [V4_DEFAULT, V6_ETH.strip()]


def test_the_probe_only_reads_routes_in_a_namespace_of_its_own() -> None:
    assert "--unshare-net" in NETNS_PROBE
    assert NETNS_PROBE[-3:] == ("cat", "/proc/net/route", "/proc/net/ipv6_route")


def test_the_plan_refuses_the_allowlist_where_net_egress_failed(tmp_path: Path) -> None:
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    failed = report()
    failed.findings.append(
        Finding("net.egress", "net", Status.FAIL, "the proxy did not start", remedy="fix it")
    )
    ws = (PurePosixPath("/srv/project"),)
    with pytest.raises(RefusedError, match=r"net\.egress failed: the proxy did not start"):
        build_plan(failed, Answers(Mode.SANDBOX, workspaces=ws), layout, facts=plan_facts())
    # the other networks do not need the proxy
    build_plan(
        failed,
        Answers(Mode.SANDBOX, workspaces=ws, network=Network.NONE),
        layout,
        facts=plan_facts(),
    )
