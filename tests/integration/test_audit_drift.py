"""The audit against real setups under temp roots: each kind of drift, named by
its ID with exit 1, and cleared by the fix path (replaying the saved answers).

A setup is made the way an operator makes one: the real headless apply
(``python -m sandbox_setup --headless --mode ... --root DIR --yes``, users through
``useradd --prefix DIR``) over the configuration core's fake target tree, with
the real Claude Code from npm hard-linked in as ``/usr/local/bin/claude`` (its
own inode is never written: tests that change the binary replace the link).
Roots live under the integration workdir in /var/tmp so a runc container (whose
/tmp is a tmpfs) sees them too.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base.paths import Layout
from tests.core_fixtures import host_passwd_digest, make_target_root, run_cli, snapshot
from tests.tools import claude_binary, require_root, require_tool

pytestmark = pytest.mark.integration
MANAGED = "/etc/claude-code/managed-settings.json"


@dataclass(frozen=True)
class Setup:
    """One applied setup under ``root``."""

    root: Path

    @property
    def layout(self) -> Layout:
        return Layout.for_root(self.root)

    @property
    def config(self) -> Path:
        return self.layout.real(self.layout.launcher_config)

    @property
    def answers(self) -> Path:
        return self.layout.real(self.layout.answers)

    @property
    def claude(self) -> Path:
        return self.root / "usr/local/bin/claude"

    def real(self, target: str) -> Path:
        return self.layout.real(target)


def link_real_claude(root: Path, claude: str) -> None:
    """Replace the fake tree's claude with the real one (a hard link, or a copy)."""
    target = root / "usr/local/bin/claude"
    target.unlink(missing_ok=True)
    source = os.path.realpath(claude)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def make_setup(base: Path, claude: str, *mode_args: str) -> Setup:
    """A fresh tree under ``base`` with the headless apply of ``mode_args`` done."""
    workdir = Path(tempfile.mkdtemp(prefix="audit-", dir=base))
    workdir.chmod(0o755)
    root = make_target_root(workdir / "root")
    link_real_claude(root, claude)
    done = run_cli("--headless", "--root", str(root), "--yes", *mode_args)
    assert done.returncode == 0, done.stderr
    return Setup(root)


@dataclass(frozen=True)
class AuditRun:
    """What one ``--audit --json`` printed and returned."""

    returncode: int
    data: dict[str, Any]
    stderr: str

    @property
    def ids(self) -> list[str]:
        return [f["id"] for f in self.data["findings"]]

    def finding(self, finding_id: str) -> dict[str, Any]:
        for finding in self.data["findings"]:
            if finding["id"] == finding_id:
                return finding
        raise AssertionError(f"{finding_id} not in {self.ids}")


def parse_audit(done: subprocess.CompletedProcess[str] | Any) -> AuditRun:
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"audit printed no JSON (exit {done.returncode}): {done.stdout!r} {done.stderr!r}"
        ) from None
    return AuditRun(done.returncode, data, done.stderr)


def audit(setup: Setup) -> AuditRun:
    return parse_audit(run_cli("--audit", "--json", "--root", str(setup.root)))


def reapply(setup: Setup) -> str:
    """The fix path: replay the saved answers."""
    done = run_cli(
        "--headless", "--answers", str(setup.answers), "--yes", "--root", str(setup.root)
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_clean(setup: Setup) -> AuditRun:
    run = audit(setup)
    assert run.returncode == 0, run.data["findings"]
    assert [f for f in run.data["findings"] if not f["accepted"]] == []
    assert run.data["clean"] is True
    return run


def assert_found(setup: Setup, finding_id: str) -> AuditRun:
    run = audit(setup)
    assert run.returncode == 1, run.data["findings"]
    assert finding_id in run.ids
    finding = run.finding(finding_id)
    assert finding["summary"] and finding["remedy"]
    assert run.data["clean"] is False
    return run


def fixed_by_reapply(setup: Setup) -> None:
    assert "Applied" in reapply(setup)
    assert_clean(setup)


def refused_until_fixed(setup: Setup, fix: Callable[[], object]) -> None:
    """A file someone else could write is never laundered by a re-apply (docs/design.md
    invariant 12): the re-apply refuses (exit 3) and changes nothing until the
    finding's remedy is done; then it runs and the audit is clean."""
    before = snapshot(setup.root)
    done = run_cli(
        "--headless", "--answers", str(setup.answers), "--yes", "--root", str(setup.root)
    )
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert snapshot(setup.root) == before
    fix()
    reapply(setup)
    assert_clean(setup)


@pytest.fixture(scope="module")
def tools() -> dict[str, str]:
    require_root()
    names = ("useradd", "userdel", "groupadd", "setfacl", "bwrap", "setpriv")
    found = {name: require_tool(name) for name in names}
    found["claude"] = claude_binary()
    return found


@pytest.fixture
def sandbox_setup(integration_workdir: Path, tools: dict[str, str]) -> Iterator[Setup]:
    before = host_passwd_digest()
    setup = make_setup(
        integration_workdir, tools["claude"], "--mode", "sandbox", "--workspace", "/srv/project"
    )
    yield setup
    shutil.rmtree(setup.root.parent, ignore_errors=True)
    assert host_passwd_digest() == before, "the host's account files changed"


def settings(setup: Setup) -> dict[str, Any]:
    return json.loads(setup.real(MANAGED).read_text())


def write_settings(setup: Setup, data: dict[str, Any]) -> None:
    setup.real(MANAGED).write_text(json.dumps(data, indent=2) + "\n")


def test_fresh_setup_is_clean_and_graded(sandbox_setup: Setup) -> None:
    run = assert_clean(sandbox_setup)
    assert run.data["mode"] == "sandbox" and run.data["agent_user"] == "claude-agent"
    assert run.data["grade"]["label"] == "OK"
    # The agent exists only in DIR/etc/passwd: probes ran as an unprivileged stand-in,
    # and it says so.
    assert run.data["probes_as"] == "nobody"
    assert any("only in" in note and "stand-in" in note for note in run.data["notes"])
    ids = {c["id"] for c in run.data["checks"]}
    assert {"bwrap.sandbox", "bwrap.nested", "bwrap.nested_weak"} <= ids
    text = run_cli("--audit", "--root", str(sandbox_setup.root))
    assert text.returncode == 0
    assert "No findings" in text.stdout and "Overall exposure level" in text.stdout


def test_as_user_overrides_the_probe_user(sandbox_setup: Setup) -> None:
    done = run_cli("--audit", "--json", "--as-user", "nobody", "--root", str(sandbox_setup.root))
    run = parse_audit(done)
    assert run.data["probes_as"] == "nobody"
    assert any("--as-user" in note for note in run.data["notes"])
    unknown = run_cli("--audit", "--as-user", "no-such-user-x", "--root", str(sandbox_setup.root))
    assert unknown.returncode == 2 and "no-such-user-x" in unknown.stderr


def test_managed_key_edited(sandbox_setup: Setup) -> None:
    data = settings(sandbox_setup)
    data["sandbox"]["enabled"] = False
    write_settings(sandbox_setup, data)
    run = assert_found(sandbox_setup, "audit.drift.settings")
    diff = run.finding("audit.drift.settings")["diff"]
    assert re.search(r'^-\s*"enabled": false', diff, re.M)
    assert re.search(r'^\+\s*"enabled": true', diff, re.M)
    assert "--answers" in run.finding("audit.drift.settings")["remedy"]
    text = run_cli("--audit", "--root", str(sandbox_setup.root))
    assert text.returncode == 1 and "audit.drift.settings" in text.stdout
    assert '"enabled": true' in text.stdout  # the diff is in the text report too
    fixed_by_reapply(sandbox_setup)
    assert settings(sandbox_setup)["sandbox"]["enabled"] is True


def test_deny_rule_removed(sandbox_setup: Setup) -> None:
    data = settings(sandbox_setup)
    removed = data["permissions"]["deny"].pop(0)
    write_settings(sandbox_setup, data)
    run = assert_found(sandbox_setup, "audit.drift.settings")
    added = [
        line
        for line in run.finding("audit.drift.settings")["diff"].splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert any(removed in line for line in added)
    fixed_by_reapply(sandbox_setup)
    assert removed in settings(sandbox_setup)["permissions"]["deny"]


def test_foreign_keys_are_not_drift(sandbox_setup: Setup) -> None:
    data = settings(sandbox_setup)
    data["model"] = "opus"
    data["permissions"]["allow"] = ["Bash(make:*)"]
    write_settings(sandbox_setup, data)
    assert_clean(sandbox_setup)
    # With real drift beside it, the diff never proposes removing the foreign keys.
    data["sandbox"]["enabled"] = False
    write_settings(sandbox_setup, data)
    diff = assert_found(sandbox_setup, "audit.drift.settings").finding("audit.drift.settings")[
        "diff"
    ]
    removed = [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert not any("opus" in ln or "make:*" in ln for ln in removed)
    fixed_by_reapply(sandbox_setup)
    assert settings(sandbox_setup)["model"] == "opus"


def test_config_made_world_writable(sandbox_setup: Setup) -> None:
    sandbox_setup.config.chmod(0o666)
    run = assert_found(sandbox_setup, "audit.safety.config_mode")
    assert "0666" in run.finding("audit.safety.config_mode")["summary"]
    assert run.finding("audit.safety.config_mode")["severity"] == "high"
    assert run.finding("audit.safety.config_mode")["remedy"] == (
        f"chmod go-w {sandbox_setup.config}"
    )
    refused_until_fixed(sandbox_setup, lambda: sandbox_setup.config.chmod(0o644))
    assert sandbox_setup.config.stat().st_mode & 0o022 == 0


def test_managed_settings_given_to_the_agent(sandbox_setup: Setup) -> None:
    managed = sandbox_setup.real(MANAGED)
    agent = sandbox_setup.layout.real("/home/claude-agent").stat()
    os.chown(managed, agent.st_uid, agent.st_gid)  # the agent could turn its sandbox off
    run = assert_found(sandbox_setup, "audit.safety.settings_owner")
    assert run.finding("audit.safety.settings_owner")["severity"] == "high"
    refused_until_fixed(sandbox_setup, lambda: os.chown(managed, 0, 0))
    assert managed.stat().st_uid == 0


def test_launcher_config_edited(sandbox_setup: Setup) -> None:
    text = sandbox_setup.config.read_text()
    assert 'network = "allowlist"' in text  # sandbox mode's default
    sandbox_setup.config.write_text(text.replace('network = "allowlist"', 'network = "host"'))
    run = assert_found(sandbox_setup, "audit.drift.launcher_config")
    assert 'network = "allowlist"' in run.finding("audit.drift.launcher_config")["diff"]
    fixed_by_reapply(sandbox_setup)


def test_the_text_audits_remedy_is_one_whole_line_that_fixes_the_drift_when_pasted(
    sandbox_setup: Setup,
) -> None:
    """At 80 columns (a pipe) the remedy of a drifted launcher.toml is one line: the
    product never wraps a command to paste (pasting a first half was exit 2)."""
    text = sandbox_setup.config.read_text()
    sandbox_setup.config.write_text(text.replace('network = "allowlist"', 'network = "host"'))
    report = run_cli("--audit", "--root", str(sandbox_setup.root))
    assert report.returncode == 1 and "audit.drift.launcher_config" in report.stdout
    lines = report.stdout.splitlines()
    remedies = [line.split("remedy: ", 1)[1] for line in lines if "remedy: " in line]
    assert remedies, report.stdout
    command = next(r for r in remedies if r.startswith("sandbox-setup --headless"))
    # Nothing of it continues on the next line: the line after is another entry.
    after = lines[lines.index(next(line for line in lines if command in line)) + 1 :]
    assert not after or not after[0].startswith(" " * 13), report.stdout
    argv = shlex.split(command)
    assert argv[0] == "sandbox-setup" and "--yes" in argv, command
    pasted = run_cli(*argv[1:], timeout=240)
    assert pasted.returncode == 0, (command, pasted.stdout, pasted.stderr)
    assert 'network = "allowlist"' in sandbox_setup.config.read_text()
    assert_clean(sandbox_setup)


def test_agent_user_deleted(sandbox_setup: Setup, tools: dict[str, str]) -> None:
    subprocess.run(
        [tools["userdel"], "--prefix", str(sandbox_setup.root), "claude-agent"],
        check=True,
        capture_output=True,
    )
    run = assert_found(sandbox_setup, "audit.safety.agent_missing")
    assert run.finding("audit.safety.agent_missing")["severity"] == "high"
    assert "--answers" in run.finding("audit.safety.agent_missing")["remedy"]
    fixed_by_reapply(sandbox_setup)


def test_claude_binary_changed(sandbox_setup: Setup) -> None:
    recorded = tomllib.loads(sandbox_setup.config.read_text())["claude_version"]
    major, minor, patch = (int(p) for p in recorded.split("."))
    newer = f"{major}.{minor}.{patch + 1}"
    # Replace the link (never write through it: it shares the npm binary's inode).
    sandbox_setup.claude.unlink()
    sandbox_setup.claude.write_text(f'#!/bin/sh\necho "{newer} (Claude Code)"\n')
    sandbox_setup.claude.chmod(0o755)
    run = assert_found(sandbox_setup, "audit.claude.changed")
    summary = run.finding("audit.claude.changed")["summary"]
    assert newer in summary and recorded in summary
    fixed_by_reapply(sandbox_setup)
    assert tomllib.loads(sandbox_setup.config.read_text())["claude_version"] == newer


def test_claude_binary_writable_is_not_run(sandbox_setup: Setup) -> None:
    sandbox_setup.claude.unlink()
    marker = sandbox_setup.root / "ran"
    sandbox_setup.claude.write_text(f"#!/bin/sh\ntouch {marker}\necho 0.0.1\n")
    sandbox_setup.claude.chmod(0o777)
    run = assert_found(sandbox_setup, "audit.safety.claude_binary_mode")
    # An untrusted binary is never executed: not for its version, not by the plan.
    assert "audit.claude.changed" not in run.ids
    assert "audit.drift.unavailable" in run.ids
    assert not marker.exists()
    assert run.finding("audit.safety.claude_binary_mode")["severity"] == "high"


def test_sudoers_entry_and_password(sandbox_setup: Setup) -> None:
    sudoers_d = sandbox_setup.real("/etc/sudoers.d")
    sudoers_d.mkdir(parents=True, exist_ok=True)
    (sudoers_d / "agent").write_text("claude-agent ALL=(ALL) NOPASSWD: ALL\n")
    shadow = sandbox_setup.real("/etc/shadow")
    original = shadow.read_text()
    shadow.write_text(re.sub(r"^claude-agent:!?[^:]*:", "claude-agent::", original, flags=re.M))
    run = assert_found(sandbox_setup, "audit.safety.sudoers")
    assert run.finding("audit.safety.sudoers")["severity"] == "critical"
    assert "NOPASSWD" in run.finding("audit.safety.sudoers")["summary"]
    assert run.finding("audit.safety.password")["severity"] == "critical"
    assert run.data["grade"]["label"] in ("EXPOSED", "UNSAFE")
    (sudoers_d / "agent").unlink()
    shadow.write_text(original)
    assert_clean(sandbox_setup)


def test_agent_home_opened(sandbox_setup: Setup) -> None:
    home = sandbox_setup.real("/home/claude-agent")
    home.chmod(0o755)
    run = assert_found(sandbox_setup, "audit.safety.agent_home")
    assert "0755" in run.finding("audit.safety.agent_home")["summary"]
    home.chmod(0o700)
    assert_clean(sandbox_setup)


def test_unsafe_mode_is_always_reported(integration_workdir: Path, tools: dict[str, str]) -> None:
    setup = make_setup(
        integration_workdir, tools["claude"], "--mode", "unsafe", "--accept-unsafe-root"
    )
    try:
        run = audit(setup)
        accepted = run.finding("audit.unsafe.accepted")
        recorded = tomllib.loads(setup.config.read_text())["unsafe"]
        assert recorded["accepted_by"] in accepted["summary"]
        assert recorded["accepted_at"] in accepted["summary"]
        assert accepted["accepted"] is True and accepted["severity"] == "critical"
        assert run.data["unsafe"]["accepted_by"] == recorded["accepted_by"]
        assert run.data["grade"]["label"] == "UNSAFE"
        # Accepted as recorded: reported, but not a finding that fails the audit.
        assert run.returncode == 0
        text = run_cli("--audit", "--root", str(setup.root)).stdout
        assert f"accepted by {recorded['accepted_by']} at {recorded['accepted_at']}" in text
    finally:
        shutil.rmtree(setup.root.parent, ignore_errors=True)


def test_user_mode_clean_and_graded_medium(
    integration_workdir: Path, tools: dict[str, str]
) -> None:
    setup = make_setup(
        integration_workdir, tools["claude"], "--mode", "user", "--workspace", "/srv/project"
    )
    try:
        run = assert_clean(setup)
        assert run.data["grade"]["label"] == "MEDIUM"
        setup.real("/srv/project").chmod(0o2777)
        assert_found(setup, "audit.safety.workspace_mode")
    finally:
        shutil.rmtree(setup.root.parent, ignore_errors=True)


def test_sandbox_on_the_hosts_network_is_an_exposure_fixed_by_the_allowlist(
    integration_workdir: Path, tools: dict[str, str]
) -> None:
    setup = make_setup(
        integration_workdir, tools["claude"], "--mode", "sandbox", "--workspace",
        "/srv/project", "--network", "host",
    )  # fmt: skip
    try:
        run = assert_found(setup, "audit.network.host")
        finding = run.finding("audit.network.host")
        assert finding["severity"] == "medium"
        assert "169.254.169.254" in finding["summary"]
        assert 'network = "allowlist"' in finding["remedy"]
        assert run.data["grade"]["label"] == "MEDIUM"
        assert run.data["network"][0].startswith("host: the agent shares the host's network")
        text = setup.answers.read_text().replace('network = "host"', 'network = "allowlist"')
        setup.answers.write_text(text)
        reapply(setup)
        clean = assert_clean(setup)
        assert clean.data["network"][0].startswith("allowlist: ")
        assert clean.data["grade"]["label"] == "OK"
    finally:
        shutil.rmtree(setup.root.parent, ignore_errors=True)
