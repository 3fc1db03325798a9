"""What the plan, --dry-run and the audit say about the network, and the base URL note."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from tests.core_fixtures import make_target_root
from tests.unit.test_plan import report
from wizard.base.choices import Mode, Network
from wizard.base.paths import Layout
from wizard.configure.answers import Answers
from wizard.configure.network_plan import plan_network
from wizard.configure.plan import build_plan
from wizard.policy.network import (
    HOST_EXPOSURE,
    describe_network,
    loopback_base_url_port,
)

WS = (PurePosixPath("/srv/project"),)


@pytest.mark.parametrize(
    ("url", "port"),
    [
        ("http://127.0.0.1:8082", 8082),
        ("http://127.0.0.1:8082/v1?x=1", 8082),
        ("http://localhost", 80),
        ("https://localhost", 443),
        ("http://gateway.localhost:9000", 9000),
        ("https://[::1]:8443/", 8443),
        ("http://127.9.9.9:7", 7),
        ("http://user:pw@127.0.0.1:5000", 5000),
        ("http://0.0.0.0:5000", 5000),  # connecting to it reaches this host
        ("https://api.anthropic.com", None),
        ("http://10.0.0.5:8082", None),  # private, not loopback: the allowlist's business
        ("http://[2001:db8::1]:80", None),
        ("ftp://127.0.0.1:21", None),
        ("127.0.0.1:8082", None),  # not a URL
        ("http://127.0.0.1:99999", None),
        ("", None),
    ],
)
def test_loopback_base_url_port(url: str, port: int | None) -> None:
    assert loopback_base_url_port(url) == port


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


def test_the_base_url_note_names_the_port_to_allow() -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8082"}
    _, notes = plan_network(Mode.SANDBOX, Network.ALLOWLIST, (), (), env)
    assert notes == [
        "ANTHROPIC_BASE_URL=http://127.0.0.1:8082 is on this host's loopback: inside the "
        "sandbox Claude reaches it only with --allow-loopback-port 8082"
    ]
    assert plan_network(Mode.SANDBOX, Network.ALLOWLIST, (), (8082,), env)[1] == []
    assert "cannot reach" in plan_network(Mode.SANDBOX, Network.NONE, (), (), env)[1][0]
    assert plan_network(Mode.SANDBOX, Network.HOST, (), (), env)[1] == []
    remote = {"ANTHROPIC_BASE_URL": "https://gateway.example.com"}
    assert plan_network(Mode.SANDBOX, Network.ALLOWLIST, (), (), remote)[1] == []


def test_user_mode_shares_the_hosts_network_and_says_so() -> None:
    lines, _ = plan_network(Mode.USER, Network.HOST, (), (), {})
    assert lines == [f"host: {HOST_EXPOSURE}"]


def test_the_plan_carries_the_network_lines_and_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:4000")
    answers = Answers(Mode.SANDBOX, workspaces=WS, allowed_domains=("example.com",))
    plan = build_plan(report(), answers, layout)
    assert plan.network[0].startswith("allowlist: ")
    assert any("example.com" in line for line in plan.network)
    assert any("--allow-loopback-port 4000" in note for note in plan.notes)
    settings = next(a for a in plan.actions if "Claude settings" in a.describe())
    data = json.loads(settings.desired())  # type: ignore[attr-defined]
    assert data["sandbox"]["network"] == {"httpProxyPort": 3128, "socksProxyPort": 3128}
    host = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS, network=Network.HOST), layout)
    assert host.network == [f"host: {HOST_EXPOSURE}"]
    settings = next(a for a in host.actions if "Claude settings" in a.describe())
    assert "network" not in json.loads(settings.desired())["sandbox"]  # type: ignore[attr-defined]
