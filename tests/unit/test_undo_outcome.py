"""Whether an undo step failed is its typed outcome, never the words of its line.

A step's line is reworded both ways (a success worded like a failure, a failure
worded like a success): the journal marking (``on_done``) and the exit code follow
the :class:`~sandbox_setup.configure.outcome.Outcome`, not the text. And a real
write step whose backup is gone is ``FAILED`` whatever it says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_setup.base.accounts import Account
from sandbox_setup.base.paths import Layout
from sandbox_setup.commands import undo as undo_command
from sandbox_setup.configure import fsops, outcome, revert
from sandbox_setup.configure.journal.entries import Entry, Mkdir, Write
from sandbox_setup.configure.outcome import Outcome, StepResult


def _layout(tmp_path: Path) -> Layout:
    (tmp_path / "etc").mkdir(exist_ok=True)
    return Layout(tmp_path.resolve(), Account("root", 0, 0, Path("/root"), "/bin/sh"))


@pytest.mark.parametrize(
    ("result", "marked"),
    [
        (outcome.done("could not restore it (worded as a failure)"), True),
        (outcome.done("cannot say: done"), True),
        (outcome.failed("restored it (worded as a success)"), False),
        (outcome.left("restored it"), True),
    ],
)
def test_a_step_is_marked_done_by_its_outcome_not_its_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, result: StepResult, marked: bool
) -> None:
    monkeypatch.setattr(revert, "_revert_one", lambda *args: result)
    entry = Mkdir(txn="t", real=str(tmp_path / "x"), target="/x")
    calls: list[Entry] = []
    got = revert.revert(_layout(tmp_path), [entry], on_done=calls.append)
    assert got == [result]
    assert (calls == [entry]) is marked


@pytest.mark.parametrize(
    ("results", "code"),
    [
        ([outcome.done("could not undo anything, it seems")], 0),
        ([outcome.done("cannot be better: restored")], 0),
        ([outcome.failed("restored /etc/x")], 1),
        ([outcome.left("removed /etc/x")], 1),
    ],
)
def test_the_exit_code_follows_the_outcomes(
    tmp_path: Path, results: list[StepResult], code: int
) -> None:
    assert undo_command._report(_layout(tmp_path), results, again="again") == code


def test_a_write_whose_backup_is_gone_is_a_failure(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    target = tmp_path / "etc/settings.json"
    target.write_bytes(b"new\n")
    old, new = fsops.sha256(b"old\n"), fsops.sha256(b"new\n")
    assert old is not None and new is not None
    entry = Write(
        txn="t",
        target="/etc/settings.json",
        real=str(target),
        tmp=".settings.json.tmp",
        old_sha256=old,
        new_sha256=new,
        old_mode=0o644,
        old_uid=0,
        old_gid=0,
        backup="/root/.local/state/sandbox-setup/backups/t/001-settings.json",
    )
    [result] = revert.revert(layout, [entry])
    assert result.outcome is Outcome.FAILED
    assert target.read_bytes() == b"new\n"
