"""``--undo`` and the journal: byte-identical restore for each mode, a SIGKILLed
apply (each file old or new, then undo), the lock against concurrent applies, and
rollback when a step fails half-way (real failures: an immutable directory)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    CONFIG,
    FILES,
    MANAGED,
    REPO,
    SANDBOX,
    host_passwd_digest,
    make_target_root,
    passwd_entry,
    run_cli,
    system_state,
)
from tests.seams import SETUP_WITH_SEAMS
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "bwrap"):
        require_tool(tool)
    before = host_passwd_digest()
    root = make_target_root(tmp_path / "root")
    # Files that exist before the apply, to be restored byte for byte.
    managed = root / MANAGED
    managed.parent.mkdir(parents=True)
    managed.write_text('{"model": "opus",   "permissions": {"deny": []}}')
    os.chmod(managed, 0o600)
    (root / "root/.claude").mkdir()
    (root / "root/.claude/settings.json").write_text('{"theme": "dark"}\n')
    yield root
    assert host_passwd_digest() == before


def undo(root: Path) -> str:
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        SANDBOX,
        ("--mode", "user", "--settings-scope", "user", "--workspace", "/srv/project"),
        ("--mode", "unsafe", "--accept-unsafe-root"),
    ],
    ids=["sandbox", "user", "unsafe"],
)
def test_undo_restores_byte_identical_files_and_removes_what_was_created(
    root: Path, args: tuple[str, ...]
) -> None:
    before = system_state(root)
    proc = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert proc.returncode == 0, proc.stderr
    assert system_state(root) != before
    preview = run_cli("--undo", "--root", str(root))
    assert preview.returncode == 0 and "would" in preview.stdout
    assert system_state(root) != before, "--undo without --yes changes nothing"
    out = undo(root)
    assert "removed" in out or "restored" in out
    assert system_state(root) == before
    assert passwd_entry(root, "claude-agent") is None
    assert "Nothing to undo" in undo(root)


def test_undo_goes_back_one_apply_at_a_time(root: Path) -> None:
    original = system_state(root)
    assert run_cli("--headless", "--root", str(root), "--yes", "--mode", "user").returncode == 0
    after_first = system_state(root)
    assert run_cli("--headless", "--root", str(root), "--yes", *SANDBOX).returncode == 0
    undo(root)
    assert system_state(root) == after_first
    undo(root)
    assert system_state(root) == original


# What an apply writes besides FILES: root's protected git settings and the include,
# after the settings and before the launcher config.
GIT_FILES = ("etc/sandbox-setup/git-protected.gitconfig", "root/.gitconfig")
# The sandbox apply's changes, in order: group, user, ACLs, settings, the owned git file,
# root's include, launcher.toml, ...; the files changed when the kill lands after the n-th.
FILES_CHANGED_AFTER = {2: 0, 4: 1, 5: 2, 7: 4}


def new_contents(tmp_path: Path, args: tuple[str, ...]) -> dict[str, bytes]:
    """The files a complete apply writes, from a twin root prepared the same way."""
    twin = make_target_root(tmp_path / "twin")
    managed = twin / MANAGED
    managed.parent.mkdir(parents=True)
    managed.write_text('{"model": "opus",   "permissions": {"deny": []}}')
    proc = run_cli("--headless", "--root", str(twin), "--yes", *args)
    assert proc.returncode == 0, proc.stderr
    return {rel: (twin / rel).read_bytes() for rel in FILES + GIT_FILES}


@pytest.mark.parametrize("pause_after", sorted(FILES_CHANGED_AFTER))
def test_sigkill_mid_apply_leaves_old_or_new_files_and_undo_restores(
    tmp_path: Path, root: Path, pause_after: int
) -> None:
    new = new_contents(tmp_path, SANDBOX)
    old = {
        rel: (root / rel).read_bytes() if (root / rel).exists() else None
        for rel in FILES + GIT_FILES
    }
    before = system_state(root)
    child = subprocess.Popen(
        [
            sys.executable,
            str(SETUP_WITH_SEAMS),
            f"--seam-pause-after={pause_after}",
            "--headless",
            "--root",
            str(root),
            "--yes",
            *SANDBOX,
        ],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stderr is not None
        seen = []
        for line in child.stderr:
            seen.append(line)
            if "test pause" in line:
                break
        else:
            pytest.fail(f"apply ended without pausing: {''.join(seen)}")
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    changed = 0
    for rel in FILES + GIT_FILES:
        current = (root / rel).read_bytes() if (root / rel).exists() else None
        assert current in (old[rel], new[rel]), f"{rel} is neither old nor new"
        changed += current != old[rel]
    assert changed == FILES_CHANGED_AFTER[pause_after], "the kill landed where the hook paused"
    leftovers = [p for p in root.rglob("*.sandbox-setup-*.tmp")]
    assert leftovers == []
    out = undo(root)
    assert system_state(root) == before, out


def test_a_second_concurrent_apply_is_refused(root: Path) -> None:
    lock = root / "root/.local/state/sandbox-setup/apply.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        before = system_state(root)
        proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
        assert proc.returncode == 3, proc.stderr
        assert "another sandbox-setup apply or undo is running" in proc.stderr
        assert system_state(root) == before
        assert run_cli("--undo", "--yes", "--root", str(root)).returncode == 3


def test_a_failing_step_rolls_back_everything_before_it(root: Path) -> None:
    require_tool("chattr")
    config = root / CONFIG
    config.mkdir(parents=True)
    before = system_state(root)
    # An immutable directory: the launcher config write fails for real, after the
    # user, group, ACLs and settings were done.
    subprocess.run(["chattr", "+i", str(config)], check=True)
    try:
        proc = run_cli("--headless", "--root", str(root), "--yes", *SANDBOX)
    finally:
        subprocess.run(["chattr", "-i", str(config)], check=True)
    assert proc.returncode == 2, proc.stderr
    assert "launcher config" in proc.stderr and "failed" in proc.stderr
    assert "rolled back" in proc.stderr and "removed user claude-agent" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert system_state(root) == before
    journal = (root / "root/.local/state/sandbox-setup/journal.jsonl").read_text()
    assert json.loads(journal.splitlines()[-1])["op"] == "rolled-back"
    assert "Nothing to undo" in undo(root)


def test_undo_leaves_a_file_edited_after_the_apply_alone(root: Path) -> None:
    assert run_cli("--headless", "--root", str(root), "--yes", "--mode", "user").returncode == 0
    managed = root / MANAGED
    managed.write_text('{"edited": "by hand after the apply"}\n')
    proc = run_cli("--undo", "--yes", "--root", str(root))
    assert proc.returncode == 1, "something was left as it is: exit 1, not 0"
    out = proc.stdout
    assert "left /etc/claude-code/managed-settings.json as it is" in out
    assert managed.read_text() == '{"edited": "by hand after the apply"}\n'
    assert passwd_entry(root, "claude-agent") is None, "the rest was still undone"


def test_undo_restores_a_repaired_mode_and_owner(root: Path) -> None:
    assert run_cli("--headless", "--root", str(root), "--yes", "--mode", "user").returncode == 0
    managed = root / MANAGED  # the agent must be able to read it: 0600 becomes 0644
    managed.chmod(0o600)
    os.chown(managed, 0, 4242)
    before = system_state(root)
    assert run_cli("--headless", "--root", str(root), "--yes", "--mode", "user").returncode == 0
    st = managed.stat()
    assert (st.st_mode & 0o777, st.st_uid, st.st_gid) == (0o644, 0, 4242)
    assert "restored /etc/claude-code/managed-settings.json" in undo(root)
    assert system_state(root) == before


def test_a_reapply_refuses_a_config_another_uid_could_write(root: Path) -> None:
    """Not repaired: refused, so nothing someone else wrote is kept as root's
    (docs/design.md invariant 12)."""
    assert run_cli("--headless", "--root", str(root), "--yes", "--mode", "user").returncode == 0
    config = root / CONFIG / "launcher.toml"
    config.chmod(0o666)
    os.chown(config, 4242, 4242)
    before = system_state(root)
    proc = run_cli("--headless", "--root", str(root), "--yes", "--mode", "user")
    assert proc.returncode == 3, proc.stderr
    assert system_state(root) == before
