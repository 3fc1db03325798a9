"""A settings file the agent cannot read: Claude Code (run as the agent) would
silently start without the sandbox settings and deny rules that apply wrote.

An apply over a managed-settings.json of mode 0000 or 0600 leaves it 0644 (root's,
readable by everyone: the agent is not root); user-scope settings owned by the
agent may stay 0600. An audit that finds the file unreadable as the agent (its
mode changed afterwards, or a directory on its path closed) reports
``audit.safety.settings_unreadable`` and exits 1.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    MANAGED,
    SANDBOX,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
)
from tests.faults.conftest import FaultRow
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

USER_SCOPE = ("--settings-scope", "user")


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == host, "the host's account files changed"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def audit_ids(root: Path) -> tuple[int, list[str]]:
    proc = run_cli("--audit", "--json", "--root", str(root))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, [f["id"] for f in json.loads(proc.stdout)["findings"]]


@pytest.mark.parametrize("old_mode", [0o000, 0o600])
def test_managed_settings_the_agent_cannot_read_become_readable(
    root: Path, old_mode: int, fault: FaultRow
) -> None:
    fault.expect(
        f"an existing managed-settings.json of mode {old_mode:04o}, then apply",
        "written mode 0644 (readable by the agent); audit clean; chmod back to "
        f"{old_mode:04o} -> audit.safety.settings_unreadable, exit 1",
    )
    managed = root / MANAGED
    managed.parent.mkdir(parents=True)
    managed.write_text('{"model": "opus"}\n')
    os.chmod(managed, old_mode)
    proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert proc.returncode == 0, proc.stderr
    assert mode(managed) == 0o644, f"{mode(managed):04o}"
    code, ids = audit_ids(root)
    assert code == 0 and "audit.safety.settings_unreadable" not in ids, ids
    fault.saw("written 0644; audit exit 0")
    os.chmod(managed, old_mode)
    code, ids = audit_ids(root)
    assert code == 1 and "audit.safety.settings_unreadable" in ids, (code, ids)
    fault.saw(f"chmod {old_mode:04o}: audit exit 1, audit.safety.settings_unreadable")


def test_a_closed_directory_above_the_managed_settings_is_found(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "/etc/claude-code made 0700 after a clean apply",
        "audit.safety.settings_unreadable (the agent cannot reach the file), exit 1",
    )
    assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    os.chmod(root / "etc/claude-code", 0o700)
    code, ids = audit_ids(root)
    assert code == 1 and "audit.safety.settings_unreadable" in ids, (code, ids)
    fault.saw("audit exit 1: audit.safety.settings_unreadable")


def test_user_scope_settings_owned_by_the_agent_may_stay_private(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "user-scope settings owned by the agent, mode 0600, then apply again",
        "stays 0600 (the agent owns it); audit clean; mode 0000 -> settings_unreadable",
    )
    args = ("--headless", "--root", str(root), "--yes", *SANDBOX, *USER_SCOPE)
    assert run_cli(*args).returncode == 0
    entry = passwd_entry(root, "claude-agent")
    assert entry is not None
    settings = root / entry[5].lstrip("/") / ".claude/settings.json"
    os.chmod(settings, 0o600)
    assert run_cli(*args).returncode == 0
    assert mode(settings) == 0o600
    code, ids = audit_ids(root)
    assert code == 0, ids
    fault.saw("stays 0600; audit exit 0")
    os.chmod(settings, 0o000)
    code, ids = audit_ids(root)
    assert code == 1 and "audit.safety.settings_unreadable" in ids, (code, ids)
    fault.saw("mode 0000: audit exit 1, audit.safety.settings_unreadable")
