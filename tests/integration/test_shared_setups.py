"""Host files several setups rely on (docs/design.md invariant 18), end to end under ``--root``.

Two setups of one tree, each with its own state and config directory (the second gets
them as ``XDG_STATE_HOME`` / ``XDG_CONFIG_HOME`` inside DIR, as two admins' XDG
directories give them on a live host). Both plan root's git include and the protected
git file; the second finds them "already as planned". The host-wide record of setups
(``/etc/sandbox-setup/setups.json``) lists both and what each relies on; undoing the
first keeps root's protection for the second (the real git, as root, with the include
mapped into DIR, says ``explicit``); undoing both leaves root's ``~/.gitconfig`` byte
for byte as before and nothing of the record behind.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.policy.git_protected import PROTECTED_FILE
from tests.core_fixtures import host_passwd_digest, make_target_root, run_cli
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

ROOT_GITCONFIG = "root/.gitconfig"
ROOT_BEFORE = b"# mine\n[user]\n\tname = Root   ; with a comment\n[alias]\n\tst = status"
RECORD = "etc/sandbox-setup/setups.json"


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "git"):
        require_tool(tool)
    before = host_passwd_digest()
    tree = make_target_root(tmp_path / "root")
    (tree / "srv/other").mkdir(parents=True)
    (tree / ROOT_GITCONFIG).write_bytes(ROOT_BEFORE)
    os.chmod(tree / ROOT_GITCONFIG, 0o600)
    yield tree
    assert host_passwd_digest() == before


def second(root: Path) -> dict[str, str]:
    """The second setup's own config and state directories, inside the tree."""
    return {
        "XDG_STATE_HOME": str(root / "srv/admin2/state"),
        "XDG_CONFIG_HOME": str(root / "srv/admin2/config"),
    }


def apply_first(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "--headless", "--root", str(root), "--mode", "user", "--workspace", "/srv/project",
        *extra,
    )  # fmt: skip


def apply_second(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "--headless", "--root", str(root), "--mode", "user", "--workspace", "/srv/other",
        "--agent-user", "agent-two", *extra, env=second(root),
    )  # fmt: skip


def protected_setting(root: Path, home: Path) -> str:
    """``git config --global --includes --get safe.bareRepository`` as root, with
    root's ``~/.gitconfig`` of the tree (its include mapped into DIR)."""
    home.mkdir(exist_ok=True)
    written = (root / ROOT_GITCONFIG).read_text()
    (home / ".gitconfig").write_text(
        written.replace(str(PROTECTED_FILE), str(root / str(PROTECTED_FILE).lstrip("/")))
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C"}
    found = subprocess.run(
        ["git", "config", "--global", "--includes", "--get", "safe.bareRepository"],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return found.stdout.strip()


def test_undoing_one_setup_keeps_the_shared_git_protection_of_the_other(
    root: Path, tmp_path: Path
) -> None:
    first = apply_first(root, "--yes")
    assert first.returncode == 0, first.stdout + first.stderr
    two = apply_second(root, "--yes")
    assert two.returncode == 0, two.stdout + two.stderr
    assert (root / "srv/admin2/state/sandbox-setup/journal.jsonl").is_file()

    record = json.loads((root / RECORD).read_text())
    states = sorted(record["setups"])
    assert states == ["/root/.local/state/sandbox-setup", "/srv/admin2/state/sandbox-setup"]
    for state in states:
        assert sorted(record["setups"][state]["relies"]) == [
            str(PROTECTED_FILE),
            "/root/.gitconfig",
        ], state

    preview = run_cli("--undo", "--all", "--dry-run", "--root", str(root))
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert "keep /root/.gitconfig: the setup whose state directory is /srv/admin2" in (
        preview.stdout
    )
    undone = run_cli("--undo", "--all", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert "kept /root/.gitconfig: the setup whose state directory is /srv/admin2" in (
        undone.stdout
    )
    assert protected_setting(root, tmp_path / "home") == "explicit", undone.stdout
    record = json.loads((root / RECORD).read_text())
    assert sorted(record["setups"]) == ["/srv/admin2/state/sandbox-setup"]

    last = run_cli("--undo", "--all", "--yes", "--root", str(root), env=second(root))
    assert last.returncode == 0, last.stdout + last.stderr
    assert (root / ROOT_GITCONFIG).read_bytes() == ROOT_BEFORE, last.stdout
    assert (root / ROOT_GITCONFIG).stat().st_mode & 0o777 == 0o600
    assert protected_setting(root, tmp_path / "home") == ""
    assert not (root / "etc/sandbox-setup").exists(), last.stdout
