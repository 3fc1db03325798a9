"""Drift findings from a plan's actions (stand-in actions: the judging is pure),
and whom the live probes run as."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.audit.drift import drift_id, findings_from_plan
from sandbox_setup.audit.model import Severity
from sandbox_setup.audit.runner import probe_user, reapply_command
from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.actions import Action


class StandIn(Action):
    """The Action surface the audit reads (kind, target, is_change, describe, diff)."""

    def __init__(self, kind: str, target: str, changed: bool, text: str = "") -> None:
        self.kind = kind
        self._target = target
        self.changed = changed
        self.text = text

    @property
    def target(self) -> str:
        return self._target

    def is_change(self) -> bool:
        return self.changed

    def describe(self) -> str:
        return f"do {self.kind} {self.target}"

    def diff(self) -> str:
        return self.text


class WriteStandIn(StandIn):
    writes_file = True

    def desired(self) -> bytes:
        return b""


@dataclass
class PlanStandIn:
    actions: list[StandIn]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(tmp_path)


@pytest.mark.parametrize(
    ("kind", "target", "expected"),
    [
        ("write-file", "/etc/claude-code/managed-settings.json", "audit.drift.settings"),
        ("write-file", "/home/a/.claude/settings.json", "audit.drift.settings"),
        ("install-claude", "/usr/local/lib/sandbox-setup/claude", "audit.drift.claude_binary"),
        ("copy-login", "/home/a/.claude.json", "audit.drift.copy_login"),
        ("write-file", "/etc/other", "audit.drift.file"),
        ("workspace-access", "/srv/p", "audit.drift.workspace_access"),
        ("create-user", "claude-agent", "audit.drift.create_user"),
    ],
)
def test_drift_id(layout: Layout, kind: str, target: str, expected: str) -> None:
    assert drift_id(layout, kind, target) == expected


def test_config_and_answers_ids(layout: Layout) -> None:
    assert drift_id(layout, "write-file", str(layout.launcher_config)) == (
        "audit.drift.launcher_config"
    )
    assert drift_id(layout, "write-file", str(layout.answers)) == "audit.drift.answers"


def test_only_changes_are_drift_and_files_carry_their_diff(layout: Layout) -> None:
    plan = PlanStandIn(
        [
            StandIn("create-user", "claude-agent", True),
            StandIn("workspace-access", "/srv/p", True),
            WriteStandIn("write-file", "/etc/claude-code/managed-settings.json", True, "-a\n+b\n"),
            WriteStandIn("write-file", str(layout.answers), False, ""),
        ]
    )
    found = findings_from_plan(plan, layout, "REAPPLY", agent_missing=False)
    assert [f.id for f in found] == [
        "audit.drift.create_user",
        "audit.drift.workspace_access",
        "audit.drift.settings",
    ]
    settings = found[2]
    assert settings.diff == "-a\n+b\n" and settings.severity is Severity.HIGH
    assert str(layout.root) in settings.summary  # the real path, to act on
    assert all(f.remedy == "REAPPLY" for f in found)
    assert found[0].diff == "" and "do create-user" in found[0].summary
    # A missing agent is reported once, as audit.safety.agent_missing, not again as drift.
    again = findings_from_plan(plan, layout, "REAPPLY", agent_missing=True)
    assert "audit.drift.create_user" not in [f.id for f in again]


def config(agent: str, mode: Mode = Mode.USER) -> LauncherConfig:
    return LauncherConfig(
        mode=mode,
        claude=PurePosixPath("/usr/bin/claude"),
        agent_user=agent,
        agent_home=PurePosixPath("/nonexistent"),
    )


def test_probes_run_as_a_live_agent() -> None:
    layout = Layout.for_root("/")
    nobody = lookup_user("nobody")
    assert nobody is not None
    as_user, notes = probe_user(layout, config("nobody"), nobody)
    if os.geteuid() == 0:
        assert (as_user, notes) == ("nobody", [])
    else:
        assert as_user is None and "not root" in notes[0]
    assert probe_user(layout, config("nobody", Mode.UNSAFE), nobody) == (None, [])
    assert probe_user(layout, config("nobody"), None) == (None, [])


def test_probes_as_a_stand_in_when_the_agent_is_only_in_the_tree(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("ghost-agent:x:4711:4711::/home/g:/bin/sh\n")
    layout = Layout.for_root(tmp_path)
    agent = lookup_user("ghost-agent", tmp_path)
    as_user, notes = probe_user(layout, config("ghost-agent"), agent)
    if os.geteuid() == 0:
        assert as_user == "nobody"
        assert "ghost-agent exists only in" in notes[0] and "stand-in" in notes[0]
    else:
        assert as_user is None and "not root" in notes[0]
    assert reapply_command(layout).endswith(f"--yes --root {tmp_path.resolve()}")
    assert reapply_command(Layout.for_root("/")).endswith("--yes")
