"""An undo with nothing to undo changes nothing (not even the state directory), and
the lines after an undo never name a journal or backups that are not there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import (
    SANDBOX,
    STATE,
    host_passwd_digest,
    make_target_root,
    run_cli,
    snapshot,
)
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "userdel", "groupadd", "setfacl", "getfacl"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before


def cli(root: Path, *args: str) -> str:
    proc = run_cli(*args, "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize(
    "args",
    [("--undo", "--yes"), ("--undo", "--all", "--yes"), ("--undo",), ("--undo", "--dry-run")],
    ids=["undo", "undo-all", "preview", "dry-run"],
)
def test_an_undo_with_no_state_creates_no_state_directory(
    root: Path, args: tuple[str, ...]
) -> None:
    before = snapshot(root)
    out = cli(root, *args)
    assert out.strip() == "Nothing to undo.", out
    assert not (root / STATE).exists(), sorted(p.name for p in (root / STATE).iterdir())
    assert not (root / "root/.local").exists(), "the undo created the state's parents"
    assert snapshot(root) == before


def test_nothing_to_undo_names_no_journal_the_undo_all_removed(root: Path) -> None:
    """After ``--undo --all`` kept the state directory for the quarantine, the journal
    and backups are gone: a later ``--undo`` does not say they are left there."""
    cli(root, "--headless", "--yes", *SANDBOX)
    moved = root / STATE / "quarantine/session-1/hooks/post-checkout"
    moved.parent.mkdir(parents=True)
    moved.write_text("#!/bin/sh\n")
    cli(root, "--undo", "--all", "--yes")
    assert sorted(p.name for p in (root / STATE).iterdir()) == ["quarantine"]
    for args in (("--undo", "--yes"), ("--undo",)):
        out = cli(root, *args)
        assert out.strip() == "Nothing to undo.", out
        assert "journal and backups are left" not in out
        # (the lock may be taken: a no-op undo still waits for an apply that runs)
        left = {p.name for p in (root / STATE).iterdir()} - {"apply.lock"}
        assert left == {"quarantine"}, left


def test_after_the_last_undo_the_journal_left_is_named(root: Path) -> None:
    """The line stays where it is true: one ``--undo`` of the only apply keeps its
    journal and backups, and says so with the command that removes them."""
    cli(root, "--headless", "--yes", *SANDBOX)
    out = cli(root, "--undo", "--yes")
    assert f"its journal and backups are left in /{STATE}" in out
    assert (root / STATE / "journal.jsonl").exists()
    again = cli(root, "--undo", "--yes")
    assert f"its journal and backups are left in /{STATE}" in again
