"""Smaller texts an operator tripped on, judged where they are made: the plan's note on
where the sandbox checks ran says it plainly; a refusal of an address (the metadata
service among them, which a passing net.egress lists) never offers the command that
would allow it; a refused name that reaches the metadata service is not offered one."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.plan import build_plan, probes_note
from sandbox_setup.policy.network import EgressPolicy
from tests.core_fixtures import make_target_root
from tests.host_facts import plan_facts
from tests.unit.test_plan import report


def test_the_probes_note_says_plainly_who_the_checks_ran_as() -> None:
    note = probes_note("nobody", "root", "claude-agent", agent_exists=False)
    assert "live probes" not in note  # the jargon
    assert "ran as nobody, an account with no privileges" in note
    assert "standing in for the agent claude-agent (it does not exist yet)" in note
    mine = probes_note(None, "root", "claude-agent", agent_exists=True)
    assert "ran as you (root)" in mine and "can fail for the agent" in mine


def test_the_plan_carries_the_plain_note(tmp_path: Path) -> None:
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    base = report()
    probed = Report(base.host, base.findings, base.recommendation, as_user="nobody")
    answers = Answers(Mode.SANDBOX, workspaces=(PurePosixPath("/srv/project"),))
    notes = build_plan(probed, answers, layout, facts=plan_facts()).notes
    assert not any("live probes" in note for note in notes), notes
    assert any("host checks that start a test sandbox ran as nobody" in n for n in notes)


def test_a_refused_address_is_never_offered_the_command_that_allows_it() -> None:
    policy = EgressPolicy.build([])
    for host, port in (("169.254.169.254", 80), ("10.0.0.5", 443), ("203.0.113.7", 443)):
        decision = policy.decide(host, port, [])
        assert not decision.allowed
        assert "to allow it" not in decision.message and "--allow-domain" not in decision.message
    metadata_name = policy.decide("metadata.google.internal", 80, [])
    assert "--allow-domain" not in metadata_name.message, metadata_name.message
    # A plain name off the allowlist keeps its command.
    name = policy.decide("example.org", 443, [])
    assert "to allow it: sandbox-setup --headless --allow-domain example.org:443" in name.message
