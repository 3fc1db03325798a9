"""Gathering for the safety rules, on real files in a temp tree (no kernel tricks)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.audit.safety import (
    agent_can_write,
    agent_findings,
    claude_facts,
    config_findings,
    managed_settings_findings,
)
from sandbox_setup.base.account_files import agent_groups
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.pathfacts import path_facts
from sandbox_setup.base.paths import Layout

AGENT = Account("agent", 4001, 4001, Path("/home/agent"), "/bin/sh")


def tree(tmp_path: Path) -> Layout:
    root = tmp_path / "root"
    (root / "etc/sudoers.d").mkdir(parents=True)
    (root / "etc/group").write_text("root:x:0:\nagent:x:4001:\nws:x:4002:agent,bob\n")
    (root / "etc/shadow").write_text("root:*:1::::::\nagent:!:1::::::\n")
    (root / "etc/sudoers").write_text("root ALL=(ALL:ALL) ALL\n#includedir /etc/sudoers.d\n")
    home = root / "home/agent"
    home.mkdir(parents=True)
    os.chown(home, 4001, 4001)
    home.chmod(0o700)
    ws = root / "srv/p"
    ws.mkdir(parents=True)
    os.chown(ws, 0, 4002)
    ws.chmod(0o2770)
    return Layout.for_root(root)


def config(**kw: object) -> LauncherConfig:
    values: dict = dict(
        mode=Mode.USER,
        claude=PurePosixPath("/usr/local/bin/claude"),
        agent_user="agent",
        agent_home=PurePosixPath("/home/agent"),
        workspaces=(PurePosixPath("/srv/p"),),
    )
    values.update(kw)
    return LauncherConfig(**values)


def ids(found: list) -> list[str]:
    return [f.id for f in found]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    if os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")
    return tree(tmp_path)


def test_clean_agent_has_no_findings(layout: Layout) -> None:
    assert agent_findings(layout, config(), AGENT) == []


def test_agent_groups_reads_the_tree(layout: Layout) -> None:
    assert agent_groups(layout, AGENT) == {"agent": 4001, "ws": 4002}


def test_each_agent_rule_fires_on_the_real_tree(layout: Layout) -> None:
    (layout.real("/home/agent")).chmod(0o755)
    layout.real("/srv/p").chmod(0o2777)
    layout.real("/etc/sudoers.d/agent").write_text("agent ALL=(ALL) NOPASSWD: ALL\n")
    layout.real("/etc/sudoers.d/ignored.bak").write_text("agent ALL=(ALL) ALL\n")  # sudo skips
    layout.real("/etc/shadow").write_text("agent:$y$j9T$salt$hash:1::::::\n")
    found = agent_findings(layout, config(), AGENT)
    assert ids(found) == [
        "audit.safety.agent_home",
        "audit.safety.workspace_mode",
        "audit.safety.sudoers",
        "audit.safety.password",
    ]
    assert str(layout.real("/etc/sudoers.d/agent")) in found[2].summary
    assert f"--prefix {layout.root}" in found[3].remedy


def test_missing_agent(layout: Layout) -> None:
    found = agent_findings(layout, config(), None)
    assert ids(found) == ["audit.safety.agent_missing"]
    assert f"--root {layout.root}" in found[0].remedy


def test_workspace_access_through_group(layout: Layout) -> None:
    ws = layout.real("/srv/p")
    facts = path_facts(ws)
    assert agent_can_write(facts, ws, 4001, {4001, 4002})
    assert not agent_can_write(facts, ws, 4001, {4001})  # not in the ws group
    ws.chmod(0o2750)
    assert not agent_can_write(path_facts(ws), ws, 4001, {4001, 4002})
    # Access through an ACL needs the real setfacl: tests/integration/test_audit_acl.py.


def test_resolve_in_root_keeps_absolute_links_inside(layout: Layout) -> None:
    real_bin = layout.real("/opt/claude/bin")
    real_bin.mkdir(parents=True)
    (real_bin / "claude.exe").write_text("#!/bin/sh\n")
    layout.real("/usr/local/bin").mkdir(parents=True)
    layout.real("/usr/local/bin/claude").symlink_to("/opt/claude/bin/claude.exe")
    layout.real("/usr/local/bin/rel").symlink_to("../../../opt/claude/bin/claude.exe")
    want = PurePosixPath("/opt/claude/bin/claude.exe")
    assert layout.resolve(PurePosixPath("/usr/local/bin/claude")) == want
    assert layout.resolve(PurePosixPath("/usr/local/bin/rel")) == want


def test_claude_facts(layout: Layout) -> None:
    binary = layout.real("/usr/local/bin/claude")
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\necho 1.2.3\n")
    binary.chmod(0o755)
    assert claude_facts(layout, config()).trusted
    binary.chmod(0o777)
    facts = claude_facts(layout, config())
    assert not facts.trusted and ids(list(facts.findings)) == ["audit.safety.claude_binary_mode"]
    binary.chmod(0o755)
    binary.parent.chmod(0o777)
    assert ids(list(claude_facts(layout, config()).findings)) == ["audit.safety.claude_dir"]
    binary.unlink()
    assert not claude_facts(layout, config()).exists


def test_config_findings(layout: Layout) -> None:
    cfg = layout.real(layout.launcher_config)
    cfg.parent.mkdir(parents=True)
    cfg.write_text("schema = 1\n")
    layout.real(layout.answers).write_text("schema = 1\n")
    assert config_findings(layout) == []
    cfg.chmod(0o666)
    assert ids(config_findings(layout)) == ["audit.safety.config_mode"]
    cfg.chmod(0o600)
    os.chown(cfg, 4001, 4001)
    assert ids(config_findings(layout)) == ["audit.safety.config_owner"]
    os.chown(cfg, 0, 0)
    cfg.parent.chmod(0o777)
    assert ids(config_findings(layout)) == ["audit.safety.config_dir"]


def test_the_chain_stops_at_the_root(layout: Layout) -> None:
    _leaf, dirs = layout.chain(PurePosixPath("/a/b/c"))
    shown = [f.shown for f in dirs]
    assert shown == [str(layout.root), str(layout.real("/a")), str(layout.real("/a/b"))]


def test_managed_settings_only_root_may_write(layout: Layout) -> None:
    assert managed_settings_findings(layout) == []  # none written: nothing to judge
    managed = layout.real(layout.managed_settings)
    managed.parent.mkdir(parents=True)
    managed.write_text("{}\n")
    assert managed_settings_findings(layout) == []
    managed.chmod(0o664)
    assert ids(managed_settings_findings(layout)) == ["audit.safety.settings_mode"]
    managed.chmod(0o644)
    os.chown(managed, 4001, 4001)  # the agent could turn its own sandbox off
    assert ids(managed_settings_findings(layout)) == ["audit.safety.settings_owner"]
    os.chown(managed, 0, 0)
    os.chown(managed.parent, 4001, 4001)
    assert ids(managed_settings_findings(layout)) == ["audit.safety.settings_dir"]


def test_managed_settings_drop_ins_only_root_may_write(layout: Layout) -> None:
    folder = layout.real(layout.managed_settings).parent / "managed-settings.d"
    folder.mkdir(parents=True)
    assert managed_settings_findings(layout) == []
    dropin = folder / "50-planted.json"
    dropin.write_text('{"permissions": {"defaultMode": "bypassPermissions"}}\n')
    assert managed_settings_findings(layout) == []
    os.chown(dropin, 65534, 65534)
    assert ids(managed_settings_findings(layout)) == ["audit.safety.settings_dropin_owner"]
    os.chown(dropin, 0, 0)
    dropin.chmod(0o666)
    assert ids(managed_settings_findings(layout)) == ["audit.safety.settings_dropin_mode"]
    dropin.chmod(0o644)
    folder.chmod(0o777)  # anyone could add a drop-in
    assert ids(managed_settings_findings(layout)) == ["audit.safety.settings_dropin_dir"]
