"""The ``remove-file`` journal step (configure/actions.py RemoveFile): a rollback
renames the file back, an undo after the commit restores it from its backup byte for
byte with its mode, and the journal's own checks accept the line (temp roots only)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.actions import RemoveFile
from sandbox_setup.configure.journal import read_entries
from sandbox_setup.configure.journal.entries import RemoveFile as RemoveFileEntry
from sandbox_setup.configure.revert import revert
from sandbox_setup.configure.transaction import Transaction
from tests.core_fixtures import make_target_root

TARGET = PurePosixPath("/usr/local/sbin/claude")
DATA = b"#!/bin/sh\n# the shim\n\xff\n"


def _setup(tmp_path: Path) -> tuple[Layout, Path, RemoveFile]:
    layout = Layout.for_root(make_target_root(tmp_path / "root"))
    real = layout.real(TARGET)
    real.parent.mkdir(parents=True, exist_ok=True)
    real.write_bytes(DATA)
    real.chmod(0o751)
    step = RemoveFile(layout, TARGET, "claude shim", lambda data: data == DATA)
    return layout, real, step


def test_a_rollback_renames_it_back(tmp_path: Path) -> None:
    layout, real, step = _setup(tmp_path)
    assert step.is_change() and "remove claude shim" in step.describe()
    txn = Transaction(layout)
    step.apply(txn)
    assert not real.exists()
    done, complete = txn.rollback()
    assert complete, done
    assert real.read_bytes() == DATA and real.stat().st_mode & 0o7777 == 0o751
    assert sorted(os.listdir(real.parent)) == ["claude"]


def test_undo_after_the_commit_restores_it_from_the_backup(tmp_path: Path) -> None:
    layout, real, step = _setup(tmp_path)
    txn = Transaction(layout)
    step.apply(txn)
    txn.commit()
    assert sorted(os.listdir(real.parent)) == [], "the restore point goes at the commit"
    entries = [e for e in read_entries(layout) if e.txn == txn.id]  # checked lines
    assert [e.op for e in entries if isinstance(e, RemoveFileEntry)] == ["remove-file"]
    results = revert(layout, entries, txn=txn.id)
    assert [r.text for r in results] == [f"put back {TARGET}"]
    assert real.read_bytes() == DATA and real.stat().st_mode & 0o7777 == 0o751
    assert revert(layout, entries, txn=txn.id) == [], "twice changes nothing"


def test_something_else_put_there_since_is_left(tmp_path: Path) -> None:
    layout, real, step = _setup(tmp_path)
    txn = Transaction(layout)
    step.apply(txn)
    txn.commit()
    real.write_bytes(b"someone's own\n")
    entries = [e for e in read_entries(layout) if e.txn == txn.id]
    results = revert(layout, entries, txn=txn.id)
    assert [r.outcome.name for r in results] == ["LEFT"], results
    assert real.read_bytes() == b"someone's own\n"
