"""What the plan, --dry-run and the audit say about the network, and the base URL note."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode, Network
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.network_plan import plan_network
from sandbox_setup.configure.plan import build_plan
from sandbox_setup.policy.network import HOST_EXPOSURE, describe_network
from tests.core_fixtures import make_target_root
from tests.unit.test_plan import report

WS = (PurePosixPath("/srv/project"),)


def test_describe_network_says_what_each_choice_exposes() -> None:
    assert describe_network(Network.HOST, (), ()) == [f"host: {HOST_EXPOSURE}"]
    assert describe_network(Network.NONE, (), ()) == [
        "none: no network at all: Claude cannot reach its API"
    ]
    lines = describe_network(Network.ALLOWLIST, ("example.com", "*.pypi.org"), (8082,))
    assert lines[0].startswith("allowlist: a network namespace of its own")
    assert "api.anthropic.com:443" in lines[1]
    assert lines[2] == "allowed by you (--allow-domain): example.com, *.pypi.org"
    assert lines[3].endswith("(--allow-loopback-port): 8082")


def test_the_network_lines_carry_no_base_url_note_of_their_own() -> None:
    # The note is the policy's loopback_port_hint (one rule; never the URL, which may
    # carry a token): plan_network adds none.
    env = {"ANTHROPIC_BASE_URL": "http://user:tok@127.0.0.1:8082"}
    for network in Network:
        assert plan_network(Mode.SANDBOX, network, (), (), env)[1] == []


def test_user_mode_shares_the_hosts_network_and_says_so() -> None:
    lines, _ = plan_network(Mode.USER, Network.HOST, (), (), {})
    assert lines == [f"host: {HOST_EXPOSURE}"]


def test_the_plan_carries_the_network_lines_and_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://user:s3cret-token@localhost:4000")
    answers = Answers(Mode.SANDBOX, workspaces=WS, allowed_domains=("example.com",))
    plan = build_plan(report(), answers, layout)
    assert plan.network[0].startswith("allowlist: ")
    assert any("example.com" in line for line in plan.network)
    notes = [note for note in plan.notes if "--allow-loopback-port 4000" in note]
    assert len(notes) == 1, plan.notes  # said once
    assert not any("s3cret-token" in note for note in plan.notes)  # never the URL
    settings = next(a for a in plan.actions if "Claude settings" in a.describe())
    data = json.loads(settings.desired())  # type: ignore[attr-defined]
    assert data["sandbox"]["network"] == {
        "strictAllowlist": True,
        "allowManagedDomainsOnly": True,
        "allowedDomains": ["example.com"],  # the operator's, Claude's only allowlist
        "httpProxyPort": 3128,
        "socksProxyPort": 3128,
    }
    host = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS, network=Network.HOST), layout)
    assert host.network == [f"host: {HOST_EXPOSURE}"]
    settings = next(a for a in host.actions if "Claude settings" in a.describe())
    network = json.loads(settings.desired())["sandbox"]["network"]  # type: ignore[attr-defined]
    assert not {"httpProxyPort", "socksProxyPort"} & set(network), network  # Claude's own proxy
    assert network["strictAllowlist"] is True and network["allowedDomains"] == []


def test_user_mode_lines_say_which_landlock_wall_confines_what() -> None:
    from sandbox_setup.base.choices import Mode as M
    from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
    from sandbox_setup.configure.network_plan import landlock_abi, user_mode_lines

    def report(status: Status | None, summary: str = "") -> Report:
        found = [] if status is None else [Finding("landlock.abi", "t", status, summary)]
        return Report({}, found, Recommendation(M.USER, "r"))

    seven = report(Status.PASS, "Landlock ABI 7: has files, ...")
    assert landlock_abi(seven) == 7
    lines = "\n".join(user_mode_lines(seven, inner_sandbox_on=False))
    assert "Landlock ABI 7 files" in lines and "Landlock ABI 7 network" in lines
    lines = "\n".join(user_mode_lines(seven, inner_sandbox_on=True))
    assert "Claude Code's own bwrap sandbox confines" in lines
    three = "\n".join(user_mode_lines(report(Status.PASS, "Landlock ABI 3: ..."), False))
    assert "network: the host's" in three
    none = user_mode_lines(report(Status.WARN, "no Landlock here"), False)
    assert "not available" in none[0]
    assert "not probed" in user_mode_lines(report(None), False)[-1]
