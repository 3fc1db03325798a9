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
from sandbox_setup.policy.network_words import HOST_EXPOSURE, describe_network
from tests.core_fixtures import make_target_root
from tests.host_facts import plan_facts
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
    plan = build_plan(report(), answers, layout, facts=plan_facts())
    assert plan.network[0].startswith("allowlist: ")
    assert any("example.com" in line for line in plan.network)
    # What the launcher does (base_url_port = "auto", its default): each launch exposes
    # the port for that session, so the plan does not ask to open it for good.
    assert not any("--allow-loopback-port" in note for note in plan.notes), plan.notes
    assert not any("loopback ports field" in note for note in plan.notes), plan.notes
    notes = [note for note in plan.notes if "port 4000" in note and "for that session" in note]
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
    host = build_plan(
        report(),
        Answers(Mode.SANDBOX, workspaces=WS, network=Network.HOST),
        layout,
        facts=plan_facts(),
    )
    assert host.network == [f"host: {HOST_EXPOSURE}"]
    settings = next(a for a in host.actions if "Claude settings" in a.describe())
    network = json.loads(settings.desired())["sandbox"]["network"]  # type: ignore[attr-defined]
    assert not {"httpProxyPort", "socksProxyPort"} & set(network), network  # Claude's own proxy
    assert network["strictAllowlist"] is True and network["allowedDomains"] == []


def test_with_base_url_port_off_kept_the_plan_asks_for_the_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The operator's own base_url_port = "off" (kept by every apply): the launcher will
    # not expose the port, so the plan names the remedy, as the launch line would.
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:4000")
    config = layout.real(layout.launcher_config)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('schema = 1\n[sandbox]\nbase_url_port = "off"\n')
    plan = build_plan(report(), Answers(Mode.SANDBOX, workspaces=WS), layout, facts=plan_facts())
    notes = [note for note in plan.notes if "--allow-loopback-port 4000" in note]
    assert len(notes) == 1, plan.notes


def test_user_mode_lines_say_which_landlock_wall_confines_what() -> None:
    from sandbox_setup.base.choices import Mode as M
    from sandbox_setup.base.netwall import NO_WALL
    from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
    from sandbox_setup.configure.network_plan import landlock_abi, user_mode_lines

    def report(status: Status | None, abi: int | None = None, netns: bool = False) -> Report:
        facts: dict[str, int | bool] = {} if abi is None else {"abi": abi}
        found = [] if status is None else [Finding("landlock.abi", "t", status, "", facts=facts)]
        found.append(Finding("net.user_wall", "t", Status.PASS, "", facts={"netns": netns}))
        return Report({}, found, Recommendation(M.USER, "r"))

    seven = report(Status.PASS, 7)
    assert landlock_abi(seven) == 7
    lines = "\n".join(user_mode_lines(seven, inner_sandbox_on=False))
    assert "Landlock ABI 7 files" in lines and "Landlock ABI 7: TCP connect only" in lines
    lines = "\n".join(user_mode_lines(seven, inner_sandbox_on=True))
    assert "Claude Code's own bwrap sandbox confines" in lines
    three = "\n".join(user_mode_lines(report(Status.PASS, 3), False))
    assert f"network: {NO_WALL}" in three
    none = user_mode_lines(report(Status.WARN, 0), False)
    assert "not available" in none[0] and NO_WALL in none[1]
    assert "not probed" in user_mode_lines(report(None), False)[1]


def test_the_abi_is_the_findings_typed_fact_not_its_words() -> None:
    from sandbox_setup.base.choices import Mode as M
    from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
    from sandbox_setup.configure.network_plan import landlock_abi

    def report(summary: str, facts: dict[str, int | bool]) -> Report:
        found = [Finding("landlock.abi", "t", Status.PASS, summary, facts=facts)]
        return Report({}, found, Recommendation(M.USER, "r"))

    assert landlock_abi(report("Landlock ABI 7: ...", {})) is None  # words are not read
    assert landlock_abi(report("no Landlock", {"abi": 5})) == 5
    assert landlock_abi(report("", {"abi": True})) is None  # a bool is no ABI
    read_back = Report.from_json(report("", {"abi": 6}).to_json())
    assert landlock_abi(read_back) == 6


def test_user_mode_lines_name_the_network_wall_net_user_wall_found() -> None:
    # docs/design.md invariant 16: the plan says the wall as built, from net.user_wall's
    # typed fact, never from its words.
    from sandbox_setup.base.choices import Mode as M
    from sandbox_setup.base.netwall import NAMESPACE_WALL, NO_SECOND_WALL, NO_WALL, PORTS_ONLY
    from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
    from sandbox_setup.configure.network_plan import user_mode_lines

    def report(netns: bool | None, abi: int = 7) -> Report:
        found = [Finding("landlock.abi", "t", Status.PASS, "", facts={"abi": abi})]
        if netns is not None:
            found.append(Finding("net.user_wall", "t", Status.WARN, "words never read",
                                 facts={"netns": netns}))  # fmt: skip
        return Report({}, found, Recommendation(M.USER, "r"))

    own = "\n".join(user_mode_lines(report(True), inner_sandbox_on=True))
    assert NAMESPACE_WALL in own and PORTS_ONLY not in own
    ports = "\n".join(user_mode_lines(report(False), inner_sandbox_on=True))
    assert PORTS_ONLY in ports and NAMESPACE_WALL not in ports
    unknown = "\n".join(user_mode_lines(report(None), inner_sandbox_on=True))
    assert "where root can create a network namespace" in unknown and PORTS_ONLY in unknown
    # Below ABI 4 (Debian 12) the namespace is still the wall; without it, none.
    three = "\n".join(user_mode_lines(report(True, 3), inner_sandbox_on=True))
    assert NAMESPACE_WALL in three and NO_SECOND_WALL in three and NO_WALL not in three
    none = "\n".join(user_mode_lines(report(False, 3), inner_sandbox_on=True))
    assert NO_WALL in none and NAMESPACE_WALL not in none and PORTS_ONLY not in none
    # [user] landlock = false turns off Landlock only: the namespace stays.
    off = "\n".join(user_mode_lines(report(True), True, landlock_on=False))
    assert NAMESPACE_WALL in off and "[user] landlock = false" in off
    off_none = "\n".join(user_mode_lines(report(False), True, landlock_on=False))
    assert NO_WALL in off_none and NAMESPACE_WALL not in off_none
