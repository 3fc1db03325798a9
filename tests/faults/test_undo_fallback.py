"""A failed undo step still removes what this setup created (issue 26).

When a backup undo needs has been changed since the apply (its sha256 no longer
matches the journal), undo never writes it back, and it does not stay stuck on it
either: the agent account goes with ``userdel``/``groupdel`` (``--prefix`` under
``--root``), its own ACL entries come off the workspace, the line names the file
whose backup was bad and what was left as it is, and the undo exits 1. The apply is
then closed: a second ``--undo`` has nothing left to do.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    SANDBOX,
    STATE,
    group_entry,
    make_target_root,
    passwd_entry,
    run_cli,
)
from tests.faults.conftest import FaultRow
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

AGENT = "claude-agent"
GROUP = "sandbox-ws-claude-agent"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    root = make_target_root(tmp_path / "root")
    proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert proc.returncode == 0, proc.stderr
    yield root


def _acl(root: Path) -> str:
    return subprocess.run(
        ["getfacl", "-R", "--numeric", "--absolute-names", str(root / "srv/project")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def _tamper(root: Path, suffix: str) -> list[Path]:
    found = sorted((root / STATE / "backups").rglob(f"*-{suffix}"))
    assert found, f"no backup *-{suffix}"
    for backup in found:
        backup.write_bytes(backup.read_bytes() + b"evil:x:0:0::/:/bin/sh\n")
    return found


def _last_op(root: Path) -> str:
    lines = (root / STATE / "journal.jsonl").read_text().splitlines()
    return str(json.loads(lines[-1])["op"])


def test_a_tampered_account_file_backup_still_removes_the_agent(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "the backup of /etc/passwd changed after the apply, then --undo --yes",
        "exit 1 naming /etc/passwd and its bad backup; the agent user and its groups removed "
        "with userdel/groupdel --prefix; its ACL entries gone; a second --undo: nothing to undo",
    )
    gid = int((group_entry(root, GROUP) or ["", "", "-1"])[2])
    assert f"group:{gid}:" in _acl(root)
    bad = _tamper(root, "passwd")
    proc = run_cli("--undo", "--yes", "--root", str(root))
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said
    assert "Traceback" not in said
    line = next(x for x in proc.stdout.splitlines() if "does not match the journal" in x)
    assert line.startswith("left /etc/passwd"), line
    assert any(str(b.relative_to(root)) in line for b in bad), line
    assert f"removed user {AGENT}" in line and "userdel" in line, line
    assert passwd_entry(root, AGENT) is None, "the agent account is still there"
    assert group_entry(root, GROUP) is None and group_entry(root, AGENT) is None
    assert not (root / "home" / AGENT).exists()
    assert f"group:{gid}:" not in _acl(root), "the setup's ACL entries stayed"
    assert b"evil" not in (root / "etc/passwd").read_bytes(), "the bad backup was written back"
    assert _last_op(root) == "undone", "the undo is stuck on the bad backup"
    again = run_cli("--undo", "--yes", "--root", str(root))
    assert again.returncode == 0 and "Nothing to undo" in again.stdout, again.stdout
    fault.saw(f"exit 1: {line[:160]}")
    fault.saw("user, groups and ACL entries gone; second --undo: Nothing to undo")


def test_a_tampered_acl_backup_still_removes_the_setups_acl_entries(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "the workspace ACL backup changed after the apply, then --undo --yes",
        "exit 1 naming the bad backup and what stays (setgid/group bits); this setup's ACL "
        "entries removed anyway; the agent removed; a second --undo: nothing to undo",
    )
    gid = int((group_entry(root, GROUP) or ["", "", "-1"])[2])
    bad = _tamper(root, "workspace-acl.json")
    proc = run_cli("--undo", "--yes", "--root", str(root))
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said
    line = next(x for x in proc.stdout.splitlines() if "does not match the journal" in x)
    assert line.startswith("left the setgid bits"), line
    assert str(bad[0].relative_to(root)) in line, line
    assert f"removed the ACL entries of group {GROUP}" in line, line
    assert f"group:{gid}:" not in _acl(root), "the setup's ACL entries stayed"
    assert passwd_entry(root, AGENT) is None
    assert _last_op(root) == "undone"
    again = run_cli("--undo", "--yes", "--root", str(root))
    assert again.returncode == 0 and "Nothing to undo" in again.stdout, again.stdout
    fault.saw(f"exit 1: {line[:160]}")
