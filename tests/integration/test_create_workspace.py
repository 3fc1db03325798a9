"""A workspace that does not exist: refused with the remedy that names --create-workspace;
with it, a typed step of the reviewed plan (``create-directory``) that makes it with the
owner and mode asked, journaled so ``--undo`` removes it only while it is empty."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.answers import load_answers
from tests.core_fixtures import make_target_root, run_cli
from tests.tools import require_root, require_tool

NEW = "/srv/new/app"
ARGS = ("--headless", "--mode", "sandbox", "--workspace", NEW)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    return make_target_root(tmp_path / "root")


def test_headless_refuses_a_missing_workspace_and_names_the_flag(root: Path) -> None:
    proc = run_cli(*ARGS, "--yes", "--root", str(root))
    assert proc.returncode == 2, proc.stderr
    assert f"workspace {NEW} does not exist" in proc.stderr
    assert "--create-workspace" in proc.stderr
    assert not (root / "srv" / "new").exists()  # nothing written


def test_the_plan_creates_it_and_undo_removes_it_while_empty(root: Path) -> None:
    plan = run_cli(*ARGS, "--create-workspace", "--root", str(root))
    assert plan.returncode == 0, plan.stderr
    step = [line for line in plan.stdout.splitlines() if f"create the workspace {NEW}" in line]
    assert len(step) == 1 and "[change]" in step[0], plan.stdout
    assert "owner root, mode 0750" in step[0]
    assert not (root / "srv" / "new").exists()  # a plan writes nothing

    applied = run_cli(*ARGS, "--create-workspace", "--yes", "--root", str(root))
    assert applied.returncode == 0, applied.stderr
    real = root / "srv" / "new" / "app"
    st = os.stat(real)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0
    # 0750 (the group bits of an ACL'd directory show its mask: the ACL step's rwx)
    assert stat.S_IMODE(st.st_mode) & 0o707 == 0o700
    assert stat.S_IMODE(os.stat(real.parent).st_mode) == 0o755  # a missing parent: root's
    # The saved answers replay it: the key is in answers.toml.
    saved = load_answers(Layout.for_root(root).real(Layout.for_root(root).answers))
    assert saved.create_workspaces is True

    undone = run_cli("--undo", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stderr
    assert f"removed directory {NEW}" in undone.stdout
    assert not (root / "srv" / "new").exists()
    assert (root / "srv" / "project").is_dir()  # what was there stays


def test_undo_keeps_a_created_workspace_that_is_no_longer_empty(root: Path) -> None:
    applied = run_cli(
        *ARGS,
        "--create-workspace",
        "--workspace-mode",
        "0755",
        "--yes",
        "--root",
        str(root),
    )
    assert applied.returncode == 0, applied.stderr
    real = root / "srv" / "new" / "app"
    assert stat.S_IMODE(os.stat(real).st_mode) & 0o707 == 0o705
    (real / "work.txt").write_text("the operator's\n")
    undone = run_cli("--undo", "--yes", "--root", str(root))
    assert undone.returncode == 0, undone.stderr
    assert (real / "work.txt").read_text() == "the operator's\n"  # never removed
    assert f"removed directory {NEW}" not in undone.stdout


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--workspace-mode", "0757"), "every user of the host write"),
        (("--workspace-mode", "abc"), "not three octal digits"),
        (("--workspace-owner", "claude-agent"), "cannot own its workspace"),
        (("--workspace-owner", "no-such-user"), "not an account"),
    ],
)
def test_an_owner_or_mode_that_is_refused_writes_nothing(
    root: Path, extra: tuple[str, str], says: str
) -> None:
    proc = run_cli(*ARGS, "--create-workspace", *extra, "--yes", "--root", str(root))
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr
    assert not (root / "srv" / "new").exists()


def test_owner_and_mode_need_create_workspace(root: Path) -> None:
    proc = run_cli(*ARGS, "--workspace-mode", "0755", "--root", str(root))
    assert proc.returncode == 2
    assert "add --create-workspace" in proc.stderr
