"""The Python API the TUI drives: apply_plan with a progress callback, two applies
in one process, undo_last step by step (real useradd --prefix and setfacl)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.apply import apply_plan
from sandbox_setup.configure.host_facts import gather_host_facts
from sandbox_setup.configure.plan import build_plan
from sandbox_setup.configure.undo import undo_last
from tests.core_fixtures import host_passwd_digest, make_target_root, passwd_entry, system_state
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


def passing_report() -> Report:
    findings = [
        Finding(cid, cid, Status.PASS, "ok")
        for cid in ("bwrap.sandbox", "bwrap.nested", "bwrap.nested_weak", "claude.sandbox_deps")
    ]
    return Report(host={}, findings=findings, recommendation=Recommendation(Mode.SANDBOX, "ok"))


def test_progress_two_applies_in_one_process_and_stepwise_undo(tmp_path: Path) -> None:
    require_root()
    for tool in ("useradd", "setfacl"):
        require_tool(tool)
    host = host_passwd_digest()
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    original = system_state(layout.root)
    seen: list[tuple[str, str]] = []
    first = apply_plan(
        build_plan(
            passing_report(),
            Answers(Mode.USER),
            layout,
            facts=gather_host_facts(passing_report(), layout, Answers(Mode.USER)),
        ),
        progress=lambda action, status, _: seen.append((action.kind, status)),
    )
    assert seen[0] == ("create-user", "running") and seen[1] == ("create-user", "changed")
    assert [s for _, s in seen].count("running") == len(first.changed) + len(first.unchanged)
    assert passwd_entry(layout.root, "claude-agent") is not None
    after_first = system_state(layout.root)
    answers = Answers(Mode.SANDBOX, workspaces=(PurePosixPath("/srv/project"),))
    second = apply_plan(
        build_plan(
            passing_report(),
            answers,
            layout,
            facts=gather_host_facts(passing_report(), layout, answers),
        )
    )
    assert second.transaction and second.transaction != first.transaction
    assert any("sandbox-ws" in line for line in second.changed)
    again = apply_plan(
        build_plan(
            passing_report(),
            answers,
            layout,
            facts=gather_host_facts(passing_report(), layout, answers),
        )
    )
    assert again.changed == [] and again.transaction is None
    assert any("restored" in result.text for result in undo_last(layout))
    assert system_state(layout.root) == after_first
    assert any("removed user claude-agent" in result.text for result in undo_last(layout))
    assert system_state(layout.root) == original
    assert undo_last(layout) == []
    assert host_passwd_digest() == host
