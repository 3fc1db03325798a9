"""The apply journal, the apply lock, and undo (the revert steps: :mod:`wizard.configure.revert`).

The journal (``layout.journal``, JSON lines, operator-owned 0600) records every
step of an apply *before* the step happens, fsynced, so a process killed at any
point leaves a journal that undo can replay backwards:

- ``{"txn", "op": "begin", "at"}`` starts a transaction, ``commit`` ends it;
- ``write``: target and real path, old/new sha256, backup path (None for a new
  file), old mode/uid/gid, the temp file name, and ``keep``: the restore point
  beside the target (a hard link to the old file, removed at commit);
- ``mkdir``: a directory created for a write;
- ``create-group`` / ``create-user`` / ``add-to-group``: accounts created, with a
  snapshot of the account files (``files``: each one's old sha256, backup, mode and
  owner) and, for a user, its home (``home_existed``); ``accounts-done`` (same
  ``step``) records the files' sha256 after the tool ran
  (:mod:`wizard.configure.account_files`);
- ``acl``: a snapshot (per path: mode bits, access and default ACL) of the
  workspace before the group's ACLs were added;
- ``remove-from-group``: an agent taken out of a group (the legacy shared one);
- ``undone`` / ``rolled-back``: the transaction was reverted;
- ``step-undone`` (``step``: the step's index among the transaction's steps): one
  step an undo reverted, written as it succeeds, so a later undo redoes only what
  is left (and its preview shows only that);
- ``rollback-incomplete``: a failed apply's rollback could not revert everything
  (``left``); the transaction stays open and ``--undo`` finishes it;
- ``undo-incomplete``: an undo ran but some steps failed (``left``); the transaction
  stays open and the next undo retries them.

Account steps are guarded by :mod:`wizard.configure.account_undo`: the agent's
processes are stopped first, and a group another setup still uses is kept.

:func:`undo_last` reverts the newest transaction that is not yet reverted,
committed or not, and returns what it restored or removed. A file that changed
again after the apply (neither old nor new content) is left alone and reported. A
backup is written back only when it still has the sha256 the journal recorded.
Backups live in ``layout.backups_dir/<txn>/``.

:func:`apply_lock` is an exclusive ``flock`` on ``layout.lock``: a second
concurrent apply or undo is refused (exit 3) instead of interleaving.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from wizard.base.errors import RefusedError, SetupError
from wizard.base.paths import Layout
from wizard.configure import account_undo, fsops
from wizard.configure.revert import drop_restore_points, is_failure, revert


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _state_dirs(layout: Layout) -> fsops.DirSpec:
    return fsops.DirSpec(0o700, layout.operator.uid, layout.operator.gid)


def _open_in(layout: Layout, target: PurePosixPath, flags: int) -> int:
    real = layout.real(target)
    dfd = fsops.open_dir(layout.root, real.parent, create=_state_dirs(layout))
    assert dfd is not None
    try:
        return os.open(real.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    finally:
        os.close(dfd)


@contextlib.contextmanager
def apply_lock(layout: Layout) -> Iterator[None]:
    """Hold the exclusive apply lock, or raise RefusedError if another run has it."""
    try:
        fd = _open_in(layout, layout.lock, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        # A read-only or full state directory: nothing can be journaled, so nothing runs.
        raise JournalError(
            f"cannot open the apply lock {layout.real(layout.lock)}: {exc.strerror or exc}; "
            "the state directory must be writable (nothing was changed)"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            raise RefusedError(
                f"another sandbox-setup apply or undo is running (lock {layout.lock} is held); "
                "wait for it to finish and run again"
            ) from None
        yield
    finally:
        os.close(fd)


def read_journal(layout: Layout) -> list[dict[str, Any]]:
    """Every journal entry, oldest first; a torn last line (killed write) is skipped."""
    state = fsops.read_file(layout.root, layout.real(layout.journal))
    if state is None:
        return []
    entries = []
    for line in state.data.decode("utf-8", errors="replace").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            entry = json.loads(line)
            if isinstance(entry, dict) and "txn" in entry:
                entries.append(entry)
    return entries


class JournalError(SetupError):
    """The journal cannot be opened or written (a full or read-only state dir).
    Exit 2; no step runs without its journal entry on disk."""


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

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        # Unique even for two applies in one process within a second (the TUI).
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")
        self.id = f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}"
        self.entries: list[dict[str, Any]] = []
        self._fd = -1
        try:
            self._fd = _open_in(layout, layout.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as exc:
            raise JournalError(f"cannot open the journal {layout.journal}: {exc}") from exc
        self._backups = 0
        self._steps = 0
        self._saved: dict[str, str] = {}
        try:
            self._append({"op": "begin", "at": _now(), "root": str(layout.root)})
        except JournalError:
            self.close()
            raise

    def _append(self, entry: dict[str, Any], *, reserve: bool = True) -> None:
        data = (json.dumps({"txn": self.id, **entry}, sort_keys=True) + "\n").encode("utf-8")
        try:
            if reserve:  # this line, and the reserve again after it
                fsops.reserve_space(self._fd, len(data) + JOURNAL_RESERVE)
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            # A full or read-only state dir: a clear error (exit 2), not a traceback.
            raise JournalError(f"cannot write the journal {self.layout.journal}: {exc}") from exc

    def record(self, entry: dict[str, Any]) -> None:
        """Write ``entry`` to the journal (durably) before the step it describes."""
        self._append(entry)
        # Only once it is on disk: a step whose entry could not be written never
        # runs, so a rollback must not try to revert it.
        self.entries.append(entry)

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
            dirs=_state_dirs(self.layout),
        )
        self._saved[digest] = str(target)
        return str(target)

    def keep(self, real: Path, name: str, *, move: bool = False) -> str | None:
        """A restore point of ``real`` named ``name`` (from :meth:`keep_name`, journaled
        before this is called): see :func:`wizard.configure.fsops.keep`."""
        return fsops.keep(self.layout.root, real, name, move=move)

    def keep_name(self, real: Path) -> str:
        return fsops.keep_name(real, f"{self.id}-{self.next_step()}")

    def commit(self) -> None:
        self._append({"op": "commit", "at": _now()})
        self.close()
        # Committed: the restore points beside the targets are not needed any more
        # (undo works from the backups); a failure here leaves a stray file, no harm.
        with contextlib.suppress(OSError, SetupError):
            drop_restore_points(self.layout, self.entries)

    def rollback(self) -> tuple[list[str], bool]:
        """Revert this transaction's steps (after a failure): what was done, and
        whether everything was. A rollback that could not finish is journaled as
        ``rollback-incomplete`` (with what is left), so the transaction stays open
        and ``--undo`` finishes it later."""
        done = revert(self.layout, self.entries)
        failed = [line for line in done if is_failure(line)]
        closing: dict[str, Any] = {"op": "rolled-back"}
        if failed:
            left, size = [], 0
            for line in failed:
                size += len(line)
                left.append(line if size <= _LEFT_CHARS else "...")
                if size > _LEFT_CHARS:
                    break
            closing = {"op": "rollback-incomplete", "left": left}
        try:
            self._append({**closing, "at": _now()}, reserve=False)
        except JournalError as exc:
            # Not marked rolled back: the transaction stays open and a later --undo
            # reverts what is left (every revert step is idempotent).
            done.append(f"could not mark the apply rolled back: {exc}")
            failed.append(done[-1])
        self.close()
        return done, not failed

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


# Entries about the journal itself, not steps of an apply.
BOOKKEEPING = (
    "begin",
    "commit",
    "undone",
    "rolled-back",
    "step-undone",
    "undo-incomplete",
    "rollback-incomplete",
    "accounts-done",
)
CLOSED = ("undone", "rolled-back")


def pending_steps(txn_entries: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The steps of one transaction no undo has reverted yet, with their index."""
    steps = [e for e in txn_entries if e.get("op") not in BOOKKEEPING]
    done = {e.get("step") for e in txn_entries if e.get("op") == "step-undone"}
    return [(index, entry) for index, entry in enumerate(steps) if index not in done]


def _open_transactions(entries: list[dict[str, Any]]) -> list[str]:
    closed = {e["txn"] for e in entries if e.get("op") in CLOSED}
    return [e["txn"] for e in entries if e.get("op") == "begin" and e["txn"] not in closed]


def open_steps(layout: Layout) -> list[dict[str, Any]]:
    """Every step, of every transaction not yet reverted, that is still in effect."""
    entries = read_journal(layout)
    found = []
    for txn in _open_transactions(entries):
        found += [e for _, e in pending_steps([e for e in entries if e["txn"] == txn])]
    return found


def _last_open(layout: Layout) -> tuple[str, list[dict[str, Any]], dict[int, int]] | None:
    entries = read_journal(layout)
    txns = _open_transactions(entries)
    if not txns:
        return None
    mine = [e for e in entries if e["txn"] == txns[-1]]
    index = {id(entry): number for number, entry in pending_steps(mine)}
    kept = [e for e in mine if e.get("op") in ("begin", "accounts-done") or id(e) in index]
    return txns[-1], kept, index


def last_transaction(layout: Layout) -> tuple[str, list[dict[str, Any]]] | None:
    """The newest transaction not yet reverted, with its ``begin``, what its account
    steps left (``accounts-done``, for a byte-exact undo) and the steps still to
    undo, in journal order; or None."""
    found = _last_open(layout)
    return None if found is None else (found[0], found[1])


def undo_last(layout: Layout) -> list[str]:
    """Revert the newest apply that is not yet reverted; [] when there is none."""
    with apply_lock(layout):
        found = _last_open(layout)
        if found is None:
            return []
        last, entries, index = found
        steps = [e for e in entries if id(e) in index]
        fd = _open_in(layout, layout.journal, os.O_WRONLY | os.O_APPEND)
        try:

            def mark(entry: dict[str, Any]) -> None:
                # Durable at once: an undo killed half-way keeps what it did.
                _append_line(fd, {"txn": last, "op": "step-undone", "step": index[id(entry)]})

            # The agent first: nothing of it may run while its access is taken away.
            done = account_undo.stop_agents(layout, steps)
            done += revert(layout, entries, on_done=mark) or [
                f"apply {last}: nothing was left to undo (now marked undone)"
            ]
            failed = [line for line in done if is_failure(line)]
            # A step that failed is never marked done: the transaction stays open and
            # the next --undo retries it (every revert step is idempotent).
            closing: dict[str, Any] = (
                {"op": "undo-incomplete", "left": failed} if failed else {"op": "undone"}
            )
            _append_line(fd, {"txn": last, **closing, "at": _now()})
        finally:
            os.close(fd)
        return done


def _append_line(fd: int, entry: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8"))
    os.fsync(fd)
