"""What root reads and then obeys passes the trust rule (docs/design.md invariant 12,
issue 26): the journal, the state directory, the backups the journal names and an
answers file. Each case is the forgery a user other than root could make, through
the real CLI under a temp ``--root``; the command refuses with exit 3 naming the
file and the fix, and not one file under the root changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    CONFIG,
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    run_cli,
    snapshot,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

NOBODY = 65534
EVIL = b"nobody ALL=(ALL) NOPASSWD: ALL\n"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A target root after a real sandbox-mode apply (the journal has one open apply)."""
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    root = make_target_root(tmp_path / "root")
    proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    assert proc.returncode == 0, proc.stderr
    yield root
    assert host_passwd_digest() == before


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _last_txn(root: Path) -> str:
    lines = (root / STATE / "journal.jsonl").read_text().splitlines()
    return str(json.loads(lines[-1])["txn"])


def _append(root: Path, entry: dict[str, object]) -> None:
    """Forge ``entry`` as the last step of the last apply, where an apply writes it
    (before its commit, numbered in its order), so only what it names is wrong."""
    path = root / STATE / "journal.jsonl"
    lines = path.read_text().splitlines()
    commit = json.loads(lines[-1])
    assert commit["op"] == "commit", commit
    entry = {**entry, "seq": commit["seq"]}
    commit["seq"] += 1
    path.write_text("\n".join([*lines[:-1], json.dumps(entry), json.dumps(commit)]) + "\n")


def forge_delete_passwd(root: Path) -> None:
    """A step that, replayed, deletes the root's /etc/passwd (it claims to have
    created it: no backup, new sha256 = what is there now)."""
    passwd = (root / "etc/passwd").read_bytes()
    _append(
        root,
        {
            "txn": _last_txn(root),
            "op": "write",
            "target": "/etc/passwd",
            "real": str(root / "etc/passwd"),
            "tmp": ".passwd.forged.tmp",
            "old_sha256": None,
            "new_sha256": _sha(passwd),
            "backup": None,
            "old_mode": 0o644,
            "old_uid": 0,
            "old_gid": 0,
        },
    )


def forge_sudoers(root: Path, backup: Path) -> None:
    """A step that, replayed, "restores" a sudoers drop-in from ``backup``."""
    backup.write_bytes(EVIL)
    _append(
        root,
        {
            "txn": _last_txn(root),
            "op": "write",
            "target": "/etc/sudoers.d/bad-evil",
            "real": str(root / "etc/sudoers.d/bad-evil"),
            "tmp": ".bad-evil.forged.tmp",
            "old_sha256": _sha(EVIL),
            # A well-formed entry (the journal is read strictly): only its backup is wrong.
            "new_sha256": _sha(b""),
            "backup": "/" + str(backup.relative_to(root)),
            "old_mode": 0o440,
            "old_uid": 0,
            "old_gid": 0,
        },
    )


def assert_refused(root: Path, args: tuple[str, ...], names: str, fix: str) -> None:
    before = snapshot(root)
    proc = run_cli(*args, "--root", str(root))
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert names in proc.stderr, proc.stderr
    assert fix in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(root) == before, "a refused command changed nothing under the root"
    assert (root / "etc/passwd").exists()
    assert not (root / "etc/sudoers.d/bad-evil").exists()


UNDOS = [("--undo", "--yes"), ("--undo", "--dry-run")]


@pytest.mark.parametrize("args", UNDOS, ids=["undo", "dry-run"])
@pytest.mark.parametrize("tamper", ["mode", "owner"])
def test_a_journal_others_can_write_is_refused(
    root: Path, args: tuple[str, ...], tamper: str
) -> None:
    journal = root / STATE / "journal.jsonl"
    forge_delete_passwd(root)
    if tamper == "mode":
        os.chmod(journal, 0o666)
        fix = f"chmod go-w {journal}"
    else:
        os.chown(journal, NOBODY, NOBODY)
        fix = f"chown root {journal}"
    assert_refused(root, args, str(journal), fix)


@pytest.mark.parametrize("args", UNDOS, ids=["undo", "dry-run"])
@pytest.mark.parametrize("tamper", ["mode", "owner"])
def test_a_state_directory_others_can_write_is_refused(
    root: Path, args: tuple[str, ...], tamper: str
) -> None:
    state = root / STATE
    forge_delete_passwd(root)
    if tamper == "mode":
        os.chmod(state, 0o777)
        fix = f"chmod go-w {state}"
    else:
        os.chown(state, NOBODY, NOBODY)
        fix = f"chown root {state}"
    assert_refused(root, args, str(state), fix)


@pytest.mark.parametrize("args", UNDOS, ids=["undo", "dry-run"])
def test_a_backup_outside_the_backups_folder_is_refused(root: Path, args: tuple[str, ...]) -> None:
    # The journal itself is root's and 0600: only the backup path is wrong.
    forge_sudoers(root, root / "srv/project/evil")
    assert_refused(root, args, "/srv/project/evil", str(root / STATE / "backups"))


def test_a_backup_others_can_write_is_refused(root: Path) -> None:
    backups = root / STATE / "backups" / _last_txn(root)
    forged = backups / "999-evil"
    forge_sudoers(root, forged)
    os.chmod(forged, 0o666)
    assert_refused(root, ("--undo", "--yes"), str(forged), f"chmod go-w {forged}")


def test_the_audit_refuses_a_journal_others_can_write(root: Path) -> None:
    journal = root / STATE / "journal.jsonl"
    os.chmod(journal, 0o666)
    assert_refused(root, ("--audit",), str(journal), f"chmod go-w {journal}")


def test_an_apply_refuses_a_state_directory_others_can_write(root: Path) -> None:
    state = root / STATE
    os.chmod(state, 0o777)
    args = ("--headless", "--yes", "--mode", "user", "--settings-scope", "user")
    assert_refused(root, args, str(state), f"chmod go-w {state}")


@pytest.fixture
def bare_root(tmp_path: Path) -> Path:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    return make_target_root(tmp_path / "root")


ANSWERS = 'schema = 1\nmode = "user"\nworkspaces = ["/srv/project"]\n'


@pytest.mark.parametrize("tamper", ["mode", "owner"])
def test_an_answers_file_others_can_write_is_refused(
    tmp_path: Path, bare_root: Path, tamper: str
) -> None:
    answers = tmp_path / "answers.toml"
    answers.write_text(ANSWERS)
    if tamper == "mode":
        os.chmod(answers, 0o666)
        fix = f"chmod go-w {answers}"
    else:
        os.chown(answers, NOBODY, NOBODY)
        fix = f"chown root {answers}"
    args = ("--headless", "--yes", "--answers", str(answers))
    before = snapshot(bare_root)
    assert_refused(bare_root, args, str(answers), fix)
    assert not (bare_root / CONFIG).exists() and snapshot(bare_root) == before


def test_an_answers_file_in_a_directory_others_can_write_is_refused(
    tmp_path: Path, bare_root: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    answers = shared / "answers.toml"
    answers.write_text(ANSWERS)
    args = ("--headless", "--yes", "--answers", str(answers))
    assert_refused(bare_root, args, str(shared), f"chmod go-w {shared}")


def test_a_trusted_answers_file_still_applies(tmp_path: Path, bare_root: Path) -> None:
    answers = tmp_path / "answers.toml"
    answers.write_text(ANSWERS)
    os.chmod(answers, 0o644)
    proc = run_cli("--headless", "--yes", "--answers", str(answers), "--root", str(bare_root))
    assert proc.returncode == 0, proc.stderr
    undo = run_cli("--undo", "--yes", "--root", str(bare_root))
    assert undo.returncode == 0, undo.stderr
