"""The audit's network findings, the grade they give, and the decision log summary."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.audit.grade import grade
from sandbox_setup.audit.model import Severity
from sandbox_setup.audit.network import (
    network_findings,
    network_lines,
    read_log_tail,
    refusal_lines,
)
from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.netwall import NAMESPACE_WALL, NO_SECOND_WALL, NO_WALL, PORTS_ONLY
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.policy.network_words import HOST_EXPOSURE

ANSWERS = "/root/.config/sandbox-setup/answers.toml"
REAPPLY = f"sandbox-setup --headless --answers {ANSWERS} --yes"


def config(mode: Mode = Mode.SANDBOX, network: Network = Network.ALLOWLIST) -> LauncherConfig:
    return LauncherConfig(
        mode, PurePosixPath("/usr/bin/claude"), "claude-agent",
        PurePosixPath("/home/claude-agent"), (PurePosixPath("/srv/p"),), network=network,
        allowed_domains=("example.com",), loopback_ports=(8082,),
    )  # fmt: skip


def report(egress: str | None = "pass") -> Report:
    findings = [] if egress is None else [
        Finding("net.egress", "net", Status(egress), f"net.egress {egress}", remedy="fix it")
    ]  # fmt: skip
    return Report(host={}, findings=findings, recommendation=Recommendation(Mode.USER, "t"))


def ids(found: list) -> list[str]:  # type: ignore[type-arg]
    return [f.id for f in found]


def test_sandbox_on_the_hosts_network_is_a_medium_exposure_with_the_reapply() -> None:
    (finding,) = network_findings(config(network=Network.HOST), report(), ANSWERS, REAPPLY)
    assert finding.id == "audit.network.host" and finding.severity is Severity.MEDIUM
    assert HOST_EXPOSURE in finding.summary
    assert 'network = "allowlist"' in finding.remedy and REAPPLY in finding.remedy
    assert "--network allowlist" in finding.remedy
    assert grade("sandbox", [finding]).label == "MEDIUM"  # 1.0 + 1.0
    assert grade("sandbox", []).label == "OK"


def test_the_allowlist_is_reported_with_what_it_allows_and_is_no_finding() -> None:
    assert network_findings(config(), report(), ANSWERS, REAPPLY) == []
    lines = network_lines(config())
    assert lines[0].startswith("allowlist: a network namespace of its own")
    assert "api.anthropic.com:443" in lines[1] and "example.com" in lines[2]
    assert lines[3].endswith(": 8082")


@pytest.mark.parametrize("status", ["fail", "error", None])
def test_the_allowlist_without_a_working_egress_proxy_is_high(status: str | None) -> None:
    (finding,) = network_findings(config(), report(status), ANSWERS, REAPPLY)
    assert finding.id == "audit.network.egress" and finding.severity is Severity.HIGH
    assert finding.counts
    if status is not None:
        assert finding.remedy == "fix it"


def test_none_and_the_other_modes_are_described_not_found() -> None:
    assert network_findings(config(network=Network.NONE), report(), ANSWERS, REAPPLY) == []
    assert network_lines(config(network=Network.NONE)) == [
        "none: no network at all: Claude cannot reach its API"
    ]
    unsafe = config(Mode.UNSAFE, Network.HOST)
    assert network_findings(unsafe, report(), ANSWERS, REAPPLY) == []
    assert network_lines(unsafe) == [f"unsafe mode: {HOST_EXPOSURE}"]
    user = config(Mode.USER, Network.HOST)
    assert network_findings(user, report(), ANSWERS, REAPPLY) == []
    # Nothing probed: a namespace where root can make one, else Landlock's ports where
    # the launch finds ABI >= 4, else none: never a wall claimed as known.
    unknown = network_lines(user)[0]
    assert "where root can create a network namespace" in unknown
    assert unknown.endswith(f"else {NO_WALL}")


def decision(host: str, allowed: bool, port: int = 443, rule: str = "not allowlisted") -> str:
    return json.dumps({"event": "decision", "host": host, "port": port, "allowed": allowed,
                       "rule": rule})  # fmt: skip


def test_the_refusals_in_the_log_are_summarized(tmp_path: Path) -> None:
    log = tmp_path / "egress.log"
    log.write_text("\n".join([
        json.dumps({"event": "session start"}),
        decision("0.0.0.0", False, 9, "unspecified"),  # the launcher's own probe
        decision("api.anthropic.com", True),
        decision("evil.test", False), decision("evil.test", False),
        decision("metadata.example", False, 80, "cloud metadata"),
        "not json",
    ]) + "\n")  # fmt: skip
    first, *rest = refusal_lines(read_log_tail(log), str(log))
    assert "refused 3 connection(s) to 2 destination(s) and allowed 1" in first
    assert rest == [
        "  2x evil.test:443: not on the allowlist",
        "  1x metadata.example:80: a cloud metadata address",
        "  by session, with the command that allows a refused name: sandbox-setup --status",
    ]


def test_only_the_end_of_a_large_log_is_read_and_a_cut_line_skipped(tmp_path: Path) -> None:
    log = tmp_path / "egress.log"
    log.write_text("\n".join(decision(f"h{i}.test", False) for i in range(100)) + "\n")
    entries = read_log_tail(log, limit=200)
    assert entries and all(e["host"] != "h0.test" for e in entries)
    assert entries[-1]["host"] == "h99.test"


def test_a_log_that_is_a_symlink_or_missing_gives_nothing(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text(decision("x.test", False) + "\n")
    (tmp_path / "egress.log").symlink_to(real)
    assert read_log_tail(tmp_path / "egress.log") == []
    assert read_log_tail(tmp_path / "missing") == []
    assert refusal_lines([], "log") == []


def landlock_report(abi: int, netns: Status | None = None) -> Report:
    found = [Finding("landlock.abi", "t", Status.PASS, "words never read", facts={"abi": abi})]
    if netns is not None:
        fact: dict[str, int | bool] = {"netns": netns is Status.PASS}
        found.append(Finding("net.user_wall", "t", netns, "words never matched", facts=fact))
    return Report(host={}, findings=found, recommendation=Recommendation(Mode.USER, "t"))


def test_user_mode_shows_its_lists_and_where_they_apply() -> None:
    # Issue 29's Landlock network wall takes the operator's lists in user mode: the audit
    # says so, and says where they change nothing (ABI < 4, or Landlock off).
    user = config(Mode.USER, Network.HOST)
    lines = network_lines(user, landlock_report(7))
    assert "Landlock ABI 7 network: TCP connect only" in lines[0]
    assert (
        "where root can create a network namespace (probed at each launch; "
        "net.user_wall not probed)" in lines[0]
    )
    assert HOST_EXPOSURE not in "\n".join(lines)
    assert "allowed by you (--allow-domain), through the session's proxy: example.com" in lines
    assert any(line.endswith("(--allow-loopback-port): 8082") for line in lines)
    assert not any("change nothing" in line for line in lines)  # Landlock ABI 7 takes them
    # Below ABI 4, or Landlock off, and no namespace for root: no wall; said plainly.
    for low in (network_lines(user, landlock_report(3, Status.WARN)),
                network_lines(replace(user, user_landlock=False),
                              landlock_report(7, Status.WARN))):  # fmt: skip
        assert low[0].startswith(f"user mode: {NO_WALL}")
        assert low[-1].startswith("they change nothing on this host")
    # With a namespace for root the lists apply whatever Landlock gives.
    for own in (network_lines(user, landlock_report(3, Status.PASS)),
                network_lines(replace(user, user_landlock=False),
                              landlock_report(7, Status.PASS))):  # fmt: skip
        assert NAMESPACE_WALL in own[0] and NO_SECOND_WALL in own[0]
        assert not own[-1].startswith("they change nothing")


def test_user_mode_names_the_wall_net_user_wall_found() -> None:
    # docs/design.md invariant 16: the audit says the wall as built, from the check's status.
    user = config(Mode.USER, Network.HOST)
    own = network_lines(user, landlock_report(7, Status.PASS))[0]
    assert NAMESPACE_WALL in own and PORTS_ONLY not in own
    ports = network_lines(user, landlock_report(7, Status.WARN))[0]
    assert PORTS_ONLY in ports and NAMESPACE_WALL not in ports
