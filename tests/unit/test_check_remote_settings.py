"""claude.remote_settings on made-up home trees: a server-managed settings cache in
root's or the agent's ~/.claude is named, with "these settings may be overridden"."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.checks import runner
from sandbox_setup.checks.claude import judge_remote_settings
from sandbox_setup.checks.model import Status
from sandbox_setup.configure.launcher_toml import render_launcher_config
from sandbox_setup.configure.probes import run_live_checks
from sandbox_setup.policy.claude_remote import (
    MAY_BE_OVERRIDDEN,
    REMOTE_SETTINGS_CACHE,
    remote_settings_caches,
)

AGENT_HOME = "home/claude-agent"


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\n"
        "claude-agent:x:990:990::/home/claude-agent:/usr/sbin/nologin\n"
    )
    for home in ("root", AGENT_HOME):
        (root / home / ".claude").mkdir(parents=True)
        (root / home / ".claude/settings.json").write_text("{}")  # not the cache
    return root


def remote(tmp_path: Path) -> tuple[Status, str, str]:
    report = runner.run_checks(["claude.remote_settings"], root=tmp_path / "root")
    (finding,) = report.findings
    return finding.status, finding.summary, finding.remedy


def test_no_cache_passes(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the operator of the made-up tree is root (uid 0): run as root")
    tree(tmp_path)
    status, summary, _ = remote(tmp_path)
    assert status is Status.PASS and "claude-agent" in summary, summary


@pytest.mark.parametrize(("home", "who"), [("root", "root ("), (AGENT_HOME, "claude-agent (")])
def test_a_cache_in_roots_or_the_agents_home_is_named(tmp_path: Path, home: str, who: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("the operator of the made-up tree is root (uid 0): run as root")
    root = tree(tmp_path)
    (root / home / REMOTE_SETTINGS_CACHE).write_text('{"sandbox": {"enabled": false}}')
    status, summary, remedy = remote(tmp_path)
    assert status is Status.WARN, summary
    assert MAY_BE_OVERRIDDEN in summary and who in summary, summary
    assert f"/{home}/.claude/remote-settings.json" in summary
    assert "API key" in remedy and "remote-settings.json" in remedy


def test_the_policy_names_each_home_once() -> None:
    homes = [("root", PurePosixPath("/root")), ("op", PurePosixPath("/root")),
             ("agent", PurePosixPath("/home/a"))]  # fmt: skip
    there = {PurePosixPath("/root/.claude/remote-settings.json")}
    assert remote_settings_caches(homes, there.__contains__) == [
        ("root", PurePosixPath("/root/.claude/remote-settings.json"))
    ]
    verdict = judge_remote_settings([], ["root"])
    assert verdict.status is Status.PASS


def test_the_agent_launcher_toml_names_is_looked_at_not_the_default(tmp_path: Path) -> None:
    """A setup whose agent is not ``claude-agent``: its cache is what Claude reads."""
    if os.geteuid() != 0:
        pytest.skip("the operator of the made-up tree is root (uid 0): run as root")
    root = tree(tmp_path)
    with (root / "etc/passwd").open("a") as passwd:
        passwd.write("op-agent:x:991:991::/home/op-agent:/usr/sbin/nologin\n")
    (root / "home/op-agent/.claude").mkdir(parents=True)
    (root / "home/op-agent" / REMOTE_SETTINGS_CACHE).write_text("{}")
    (root / "root/.config/sandbox-setup").mkdir(parents=True)
    config = LauncherConfig(
        mode=Mode.SANDBOX,
        claude=PurePosixPath("/usr/local/bin/claude"),
        agent_user="op-agent",
        agent_home=PurePosixPath("/home/op-agent"),
        workspaces=(PurePosixPath("/srv/app"),),
    )
    (root / "root/.config/sandbox-setup/launcher.toml").write_text(render_launcher_config(config))
    report = run_live_checks(["claude.remote_settings"], as_user=None, root=root)
    (finding,) = report.findings
    assert finding.status is Status.WARN, finding.summary
    assert "op-agent (" in finding.summary and "/home/op-agent/.claude" in finding.summary
