"""One apply as a journal transaction: entries written ahead of each step, backups,
restore points, and the rollback of a failed apply (the journal's format:
:mod:`sandbox_setup.configure.journal`)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path

from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops, outcome
from sandbox_setup.configure.journal import (
    JournalError,
    decoded,
    last_left,
    now,
    open_for_append,
    state_dirs,
)
from sandbox_setup.configure.journal.entries import EntryProblem
from sandbox_setup.configure.outcome import StepResult
from sandbox_setup.configure.revert import drop_restore_points, revert

# Room kept allocated past the journal's end (fallocate) for the lines a rollback
# writes: it must be able to say what it did, and what it could not do, on a full disk.
JOURNAL_RESERVE = 8192
_LEFT_CHARS = 3000  # rollback-incomplete names what is left within the reserve


class Transaction:
    """One apply: journal entries written ahead of each step, plus backups.

    Everything a rollback needs is in place before the step that needs it runs: the
    journal has :data:`JOURNAL_RESERVE` bytes allocated past its end, and a file about
    to be replaced has a restore point beside it (:meth:`keep`), so undoing a step is
    a rename of a file already written, never a write that needs free space.
    """

    def __init__(
        self,
        layout: Layout,
        *,
        before_rename: Callable[[Path], None] | None = None,
        apparmor_parser: str | None = None,
    ) -> None:
        self.layout = layout
        # Passed to the write of each file the plan writes (see fsops.atomic_write).
        self.before_rename = before_rename
        # A test's stand-in parser that loads the AppArmor profile (configure.apparmor).
        self.apparmor_parser = apparmor_parser
        # Unique even for two applies in one process within a second (the TUI).
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
        self.id = f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}"
        # What this apply journaled, in memory (an account step adds what its tool
        # left before that line is written): its rollback and commit decode it.
        self.entries: list[Mapping[str, object]] = []
        self._fd = -1
        try:
            self._fd = open_for_append(layout, create=True)
        except OSError as exc:
            raise JournalError(f"cannot open the journal {layout.journal}: {exc}") from exc
        # What this setup's applies still in effect left each file as (drift check).
        self._left = last_left(layout)
        self._backups = 0
        self._steps = 0
        self._seq = 0  # each line's place in this apply: a moved or lost line shows
        self._saved: dict[str, str] = {}
        try:
            self._append({"op": "begin", "at": now(), "root": str(layout.root)})
        except JournalError:
            self.close()
            raise

    def _append(self, entry: Mapping[str, object], *, reserve: bool = True) -> None:
        line = {"txn": self.id, **entry, "seq": self._seq}
        data = (json.dumps(line, sort_keys=True) + "\n").encode("utf-8")
        size = -1
        try:
            size = os.fstat(self._fd).st_size
            if reserve:  # this line, and the reserve again after it
                fsops.reserve_space(self._fd, len(data) + JOURNAL_RESERVE)
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            if size >= 0:
                # A line written in part would be a torn line in the middle of the
                # journal once the rollback appends its own: cut it off again.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, size)
            # A full or read-only state dir: a clear error (exit 2), not a traceback.
            raise JournalError(f"cannot write the journal {self.layout.journal}: {exc}") from exc
        self._seq += 1

    def record(self, entry: Mapping[str, object]) -> None:
        """Write ``entry`` to the journal (durably) before the step it describes."""
        self._append(entry)
        # Only once it is on disk: a step whose entry could not be written never
        # runs, so a rollback must not try to revert it.
        self.entries.append(entry)

    def is_fix(self, target: str, old_sha256: str | None, new_sha256: str | None) -> bool:
        """Whether writing ``target`` now replaces drift: an earlier apply still in
        effect left it otherwise (someone changed it since)."""
        if target not in self._left or old_sha256 == new_sha256:
            return False
        return old_sha256 != self._left[target]

    def plan_seen(self, target: str, sha256: str | None) -> None:
        """Record a file the apply planned and found already as planned."""
        self.record({"op": "planned", "target": target, "sha256": sha256})

    def next_step(self) -> int:
        """A number for an entry that a later entry refers back to (``accounts-done``)."""
        self._steps += 1
        return self._steps

    def backup(self, data: bytes, name: str) -> str:
        """Save ``data`` under the backups dir; returns the backup's target path.
        The same bytes are saved once per transaction (the account files of
        successive steps are mostly alike)."""
        digest = fsops.sha256(data)
        assert digest is not None
        if digest in self._saved:
            return self._saved[digest]
        self._backups += 1
        target = self.layout.backups_dir / self.id / f"{self._backups:03d}-{name}"
        op = self.layout.operator
        fsops.atomic_write(
            self.layout.root,
            self.layout.real(target),
            data,
            mode=0o600,
            uid=op.uid,
            gid=op.gid,
            dirs=state_dirs(self.layout),
        )
        self._saved[digest] = str(target)
        return str(target)

    def keep(self, real: Path, name: str, *, move: bool = False) -> str | None:
        """A restore point of ``real`` named ``name`` (from :meth:`keep_name`, journaled
        before this is called): see :func:`sandbox_setup.configure.fsops.keep`."""
        return fsops.keep(self.layout.root, real, name, move=move)

    def keep_name(self, real: Path) -> str:
        return fsops.keep_name(real, f"{self.id}-{self.next_step()}")

    def commit(self) -> None:
        """Mark the apply done. The line goes into the room the previous line reserved
        (no new reserve: on a full disk asking for more fails after every step has
        run); if it still cannot be written this raises, and the caller rolls back."""
        self._append({"op": "commit", "at": now()}, reserve=False)
        self.close()
        # Committed: the restore points beside the targets are not needed any more
        # (undo works from the backups); a failure here leaves a stray file, no harm.
        with contextlib.suppress(OSError, SetupError, EntryProblem):
            drop_restore_points(self.layout, decoded(self.id, self.entries, self.layout))

    def rollback(self) -> tuple[list[StepResult], bool]:
        """Revert this transaction's steps (after a failure): what was done, and
        whether everything was. A rollback that could not finish is journaled as
        ``rollback-incomplete`` (with what is left), so the transaction stays open
        and ``--undo`` finishes it later."""
        # Decoded as an undo decodes the journal (the steps are on disk as written).
        try:
            steps = decoded(self.id, self.entries, self.layout)
        except EntryProblem as exc:  # a writer's bug: the apply stays open for --undo
            done = [outcome.failed(f"could not roll back: a line of this apply is wrong: {exc}")]
        else:
            done = revert(self.layout, steps, txn=self.id)
        failed = [result.text for result in done if result.failed]
        closing: dict[str, object] = {"op": "rolled-back"}
        if failed:
            left, size = [], 0
            for line in failed:
                size += len(line)
                left.append(line if size <= _LEFT_CHARS else "...")
                if size > _LEFT_CHARS:
                    break
            closing = {"op": "rollback-incomplete", "left": left}
        try:
            self._append({**closing, "at": now()}, reserve=False)
        except JournalError as exc:
            # Not marked rolled back: the transaction stays open and a later --undo
            # reverts what is left (every revert step is idempotent).
            done.append(outcome.failed(f"could not mark the apply rolled back: {exc}", exc))
            failed.append(done[-1].text)
        self.close()
        return done, not failed

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
