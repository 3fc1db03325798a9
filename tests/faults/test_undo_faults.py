"""Faults around ``--undo``: a preview that must not write, a tampered backup, and
a target without ``/etc/login.defs`` where undo must still remove exactly what the
apply added (compared byte for byte over the whole tree)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    MANAGED,
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
    snapshot,
    system_state,
)
from tests.faults.conftest import FaultRow
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

OLD_SETTINGS = '{"model": "opus",   "permissions": {"deny": []}}'


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    host = host_passwd_digest()
    root = make_target_root(tmp_path / "root")
    managed = root / MANAGED
    managed.parent.mkdir(parents=True)
    managed.write_text(OLD_SETTINGS)
    os.chmod(managed, 0o600)
    yield root
    assert host_passwd_digest() == host, "the host's account files changed"


def journal_ops(root: Path) -> list[str]:
    path = root / STATE / "journal.jsonl"
    return [json.loads(line)["op"] for line in path.read_text().splitlines()]


def test_undo_yes_dry_run_only_previews(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "--undo --yes --dry-run after an apply",
        "a preview only (exit 0, 'would'): no file, account or journal entry changes",
    )
    assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    applied = snapshot(root)
    proc = run_cli("--undo", "--yes", "--dry-run", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "would" in proc.stdout, proc.stdout
    assert snapshot(root) == applied, "--dry-run undid something"
    assert passwd_entry(root, "claude-agent") is not None
    fault.saw(f"exit {proc.returncode}, preview printed; tree (journal included) unchanged")
    assert run_cli("--undo", "--yes", "--root", str(root)).returncode == 0
    fault.saw("the real --undo --yes afterwards still undoes it")


def test_undo_refuses_a_tampered_backup(root: Path, fault: FaultRow) -> None:
    fault.expect(
        "a backup changed after the apply (tampered), then --undo --yes",
        "exit 1 naming the file; the current file left as it is; the apply stays open in the "
        "journal, so a second --undo after the backup is put right restores all",
    )
    before = system_state(root)
    assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    applied = (root / MANAGED).read_bytes()
    backups = [p for p in (root / STATE / "backups").rglob("*managed-settings.json")]
    assert len(backups) == 1, backups
    backup = backups[0]
    original = backup.read_bytes()
    assert original == OLD_SETTINGS.encode()
    backup.write_text('{"permissions": {"allow": ["Bash(*)"]}}')
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    said = proc.stdout + proc.stderr
    assert "/etc/claude-code/managed-settings.json" in said and "does not match" in said, said
    assert (root / MANAGED).read_bytes() == applied, "the tampered backup was written back"
    assert passwd_entry(root, "claude-agent") is None, "the other steps were still undone"
    assert journal_ops(root)[-1] != "undone", "a failed undo step was marked done"
    line = next(x for x in said.splitlines() if "does not match" in x)
    fault.saw(f"exit 1: {line.strip()[:160]}; settings left as the apply wrote them")
    backup.write_bytes(original)
    again = run_cli("--undo", "--yes", "--root", str(root))
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "restored /etc/claude-code/managed-settings.json" in again.stdout
    assert system_state(root) == before
    assert "Nothing to undo" in run_cli("--undo", "--yes", "--root", str(root)).stdout
    fault.saw("backup put right: the second --undo restored it (exit 0), state as before")


def whole_tree(root: Path) -> dict[str, object]:
    """Every file, link and directory under ``root`` (content, mode, owner) and the
    workspace ACLs; only the operator's own state dir (journal, backups) is left out."""
    state: dict[str, object] = {
        path: value for path, value in snapshot(root).items() if not path.startswith("root/.local/")
    }
    state["<acl srv>"] = system_state(root)["<acl srv>"]
    return state


@pytest.mark.parametrize(
    "variant", ["no-login-defs", "no-login-defs-no-home", "dash-backups-present"]
)
def test_undo_is_byte_exact_over_the_whole_tree(root: Path, variant: str, fault: FaultRow) -> None:
    fault.expect(
        {
            "no-login-defs": "target without /etc/login.defs: apply, undo",
            "no-login-defs-no-home": "target without /etc/login.defs and without /home: "
            "apply, undo",
            "dash-backups-present": "target with shadow-utils' passwd-/group-/shadow-/gshadow- "
            "backups: apply, undo",
        }[variant],
        "undo removes exactly what the apply added: the whole tree byte for byte as before "
        "(account files, their '-' backups, /home); the same apply then runs again",
    )
    if variant.startswith("no-login-defs"):
        (root / "etc/login.defs").unlink()
    if variant == "no-login-defs-no-home":
        (root / "home").rmdir()
    if variant == "dash-backups-present":
        for name in ("passwd", "group", "shadow", "gshadow"):
            dash = root / "etc" / f"{name}-"
            dash.write_text("# an older copy kept by shadow-utils\n")
            os.chmod(dash, 0o600)
    before = whole_tree(root)
    first = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert first.returncode == 0, first.stderr
    out = run_cli("--undo", "--yes", "--root", str(root))
    assert out.returncode == 0, (out.stdout, out.stderr)
    after = whole_tree(root)
    differ = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert differ == [], f"undo left differences: {differ}"
    fault.saw(f"undo exit 0; whole tree identical ({len(before)} entries compared)")
    again = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert again.returncode == 0, again.stderr
    fault.saw("second apply exit 0")


def test_undo_after_another_account_change_removes_only_this_setups(
    root: Path, fault: FaultRow
) -> None:
    fault.expect(
        "no /etc/login.defs; another user added after the apply, then undo",
        "the account files are not rolled back over the other change: the agent, its own "
        "group and the workspace group are removed with the tools, the other user stays; "
        "the same apply then runs again",
    )
    (root / "etc/login.defs").unlink()
    assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    subprocess.run(["useradd", "--prefix", str(root), "fl-other"], check=True)
    out = run_cli("--undo", "--yes", "--root", str(root))
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert passwd_entry(root, "claude-agent") is None
    assert passwd_entry(root, "fl-other") is not None, "undo dropped a user it did not add"
    groups = (root / "etc/group").read_text()
    assert "claude-agent:" not in groups and "sandbox-ws:" not in groups, groups
    fault.saw("agent, its group and sandbox-ws removed by the tools; fl-other kept")
    again = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert again.returncode == 0, again.stderr
    fault.saw("second apply exit 0 (no 'group claude-agent exists')")
