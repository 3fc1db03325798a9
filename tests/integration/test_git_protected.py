"""Root's protected git settings (issue 24, layer 1), end to end with the real git as root.

- The headless apply under ``--root`` writes the owned file and merges the include into
  root's and the workspace owner's ``~/.gitconfig`` (the plan and ``--dry-run`` show
  both), and ``--undo`` restores every byte.
- The protection works: a bare-repository layout planted in a root-owned workspace
  directory makes root's ``git status`` run the plant's ``core.fsmonitor`` without it,
  and fail with "cannot use bare repository" (no marker) with the include the apply
  wrote. git runs with a temp ``HOME`` and ``GIT_CONFIG_NOSYSTEM=1``: root's real
  ``~/.gitconfig`` and ``/etc/gitconfig`` are never read or written.
- The audit: a clean setup has no ``audit.git.*`` finding; a removed include or an
  edited owned file does.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.policy.git_protected import PROTECTED_FILE
from tests.core_fixtures import host_passwd_digest, make_target_root, run_cli, system_state
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

OWNED = str(PROTECTED_FILE).lstrip("/")
ROOT_GITCONFIG = "root/.gitconfig"
# Root's own config, as a user might have it: odd spacing, a comment, no final newline.
ROOT_BEFORE = b"# mine\n[user]\n\tname = Root   ; with a comment\n[alias]\n\tst = status"
# The workspace's owner, another account with its own global config.
ALICE = "alice:x:1500:1500:Alice:/home/alice:/bin/bash\n"
ALICE_BEFORE = b"[core]\n\teditor = vim\n"
USER_MODE = ("--mode", "user", "--workspace", "/srv/project")


def prepare(root: Path) -> Path:
    make_target_root(root)
    with open(root / "etc/passwd", "a") as passwd:
        passwd.write(ALICE)
    with open(root / "etc/group", "a") as group:
        group.write("alice:x:1500:\n")
    home = root / "home/alice"
    home.mkdir(mode=0o750)
    os.chown(home, 1500, 1500)
    (home / ".gitconfig").write_bytes(ALICE_BEFORE)
    os.chown(home / ".gitconfig", 1500, 1500)
    for path in (root / "srv/project", *(root / "srv/project").rglob("*")):
        os.chown(path, 1500, 1500)
    (root / ROOT_GITCONFIG).write_bytes(ROOT_BEFORE)
    os.chmod(root / ROOT_GITCONFIG, 0o600)
    return root


def apply(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("--headless", "--root", str(root), *USER_MODE, *extra)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl", "git"):
        require_tool(tool)
    before = host_passwd_digest()
    yield prepare(tmp_path / "root")
    assert host_passwd_digest() == before


def test_apply_writes_the_owned_file_and_the_includes_and_undo_restores_them(
    root: Path,
) -> None:
    before = system_state(root)
    plan = apply(root)
    assert plan.returncode == 0, plan.stderr
    for shown in (str(PROTECTED_FILE), "/root/.gitconfig", "/home/alice/.gitconfig"):
        assert shown in plan.stdout
    assert "git --git-dir=" in plan.stdout + plan.stderr, "the plan says how to name one"
    dry = apply(root, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "+\tbareRepository = explicit" in dry.stdout
    assert f"+\tpath = {PROTECTED_FILE}" in dry.stdout
    assert system_state(root) == before, "plan and --dry-run write nothing"

    done = apply(root, "--yes")
    assert done.returncode == 0, done.stderr
    owned = root / OWNED
    st = owned.stat()
    assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o644)
    assert (owned.parent.stat().st_uid, owned.parent.stat().st_mode & 0o777) == (0, 0o755)
    assert b"bareRepository = explicit" in owned.read_bytes()
    for rel, old, uid in (
        (ROOT_GITCONFIG, ROOT_BEFORE, 0),
        ("home/alice/.gitconfig", ALICE_BEFORE, 1500),
    ):
        new = (root / rel).read_bytes()
        assert new.startswith(old), f"{rel}: everything the user had is kept"
        assert f"[include]\n\tpath = {PROTECTED_FILE}\n".encode() in new
        assert (root / rel).stat().st_uid == uid
    assert (root / ROOT_GITCONFIG).stat().st_mode & 0o777 == 0o600, "its mode is kept"

    again = apply(root, "--yes")
    assert "No change" in again.stdout, again.stdout

    undone = run_cli("--undo", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert system_state(root) == before, undone.stdout
    assert (root / ROOT_GITCONFIG).read_bytes() == ROOT_BEFORE


def test_a_malformed_gitconfig_is_an_input_error_and_nothing_is_written(root: Path) -> None:
    (root / ROOT_GITCONFIG).write_bytes(b"[user]\n\tname = Root\n[unterminated\n")
    before = system_state(root)
    done = apply(root, "--yes")
    assert done.returncode == 2, done.stderr
    assert f"{root}/root/.gitconfig: line 3" in done.stderr
    assert system_state(root) == before


# --- the protection, with the real git as root --------------------------------------

FSMONITOR = "#!/bin/sh\nid -u > {marker}\n"


def plant_bare_layout(workspace: Path, real_repo: Path, variant: str, marker: Path) -> Path:
    """The issue's plant in ``workspace``: ``app/`` looks like a bare repository whose
    config names the workspace as its work tree and a program as its fsmonitor.
    Returns ``app/lib``, where root then runs git."""
    program = workspace / ".p/run.sh"
    program.parent.mkdir(parents=True)
    program.write_text(FSMONITOR.format(marker=marker))
    program.chmod(0o755)
    app = workspace / "app"
    (app / "lib").mkdir(parents=True)
    (app / "HEAD").write_text("ref: refs/heads/main\n")
    for name in ("objects", "refs"):
        if variant == "symlinks":
            (app / name).symlink_to(real_repo / ".git" / name)
        else:  # git only asks access(X_OK): empty executable files pass
            (app / name).touch(mode=0o755)
            (app / name).chmod(0o755)
    # repositoryformatversion: without it git 2.39 ignores core.worktree here.
    (app / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
        f"\tfsmonitor = {program}\n"
    )
    return app / "lib"


def root_git_status(cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C"}
    return subprocess.run(
        ["git", "status"], cwd=cwd, env=env, capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize("variant", ["symlinks", "empty-files"])
def test_root_git_refuses_a_planted_bare_layout_with_the_include_the_apply_wrote(
    root: Path, tmp_path: Path, variant: str
) -> None:
    assert os.geteuid() == 0
    done = apply(root, "--yes")
    assert done.returncode == 0, done.stderr
    # The apply's include names the target path; under --root the file is in DIR.
    written = (root / ROOT_GITCONFIG).read_text()
    assert f"path = {PROTECTED_FILE}\n" in written
    protected_home = tmp_path / "home-protected"
    protected_home.mkdir()
    (protected_home / ".gitconfig").write_text(
        written.replace(str(PROTECTED_FILE), str(root / OWNED))
    )
    plain_home = tmp_path / "home-plain"
    plain_home.mkdir()
    (plain_home / ".gitconfig").write_bytes(ROOT_BEFORE)

    real_repo = tmp_path / "real"
    subprocess.run(["git", "init", "-q", str(real_repo)], check=True, env={"HOME": "/nonexistent"})
    workspace = tmp_path / "ws"
    marker = tmp_path / "marker"
    lib = plant_bare_layout(workspace, real_repo, variant, marker)

    unprotected = root_git_status(lib, plain_home)
    assert marker.exists(), (
        "the plant must work on this git without the protection: " + unprotected.stderr
    )
    assert marker.read_text().strip() == "0", "it ran as root"
    marker.unlink()

    protected = root_git_status(lib, protected_home)
    assert protected.returncode != 0
    assert "cannot use bare repository" in protected.stderr, protected.stderr
    assert not marker.exists(), "the plant's fsmonitor never ran"


# --- the audit ------------------------------------------------------------------------


def git_ids(root: Path) -> list[str]:
    done = run_cli("--audit", "--json", "--root", str(root))
    assert done.returncode in (0, 1), done.stderr
    return [f["id"] for f in json.loads(done.stdout)["findings"] if f["id"].startswith("audit.git")]


def test_the_audit_reports_a_removed_include_and_an_edited_owned_file(root: Path) -> None:
    done = apply(root, "--yes")
    assert done.returncode == 0, done.stderr
    assert git_ids(root) == [], "a clean setup has no audit.git finding"

    config = root / ROOT_GITCONFIG
    applied = config.read_bytes()
    config.write_bytes(ROOT_BEFORE)
    assert git_ids(root) == ["audit.git.include"]
    config.write_bytes(applied)

    owned = root / OWNED
    original = owned.read_bytes()
    owned.write_bytes(original.replace(b"explicit", b"all"))
    assert git_ids(root) == ["audit.git.protected"]
    owned.unlink()
    assert git_ids(root) == ["audit.git.protected"], "a missing file (git skips it silently)"
    owned.write_bytes(original)
    owned.chmod(0o644)
    assert git_ids(root) == []

    owned.parent.chmod(0o777)  # whoever can write the directory can swap the file
    assert git_ids(root) == ["audit.git.protected_dir"]
    owned.parent.chmod(0o755)
    assert git_ids(root) == []
