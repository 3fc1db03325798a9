"""The apply journal as data, and the apply lock.

An apply writes it through :class:`~sandbox_setup.configure.transaction.Transaction`;
:mod:`sandbox_setup.configure.undo` replays it backwards with the revert steps of
:mod:`sandbox_setup.configure.revert`. Both import this module; it imports neither.

Each line is decoded once, when the journal is read, into a frozen dataclass of its
operation (:mod:`sandbox_setup.configure.journal.entries`; :func:`read_entries`); the
strict reader is :mod:`sandbox_setup.configure.journal.check`, the undo's front door
:mod:`sandbox_setup.configure.journal.door`.

The journal (``layout.journal``, JSON lines, operator-owned 0600) records every
step of an apply *before* the step happens, fsynced, so a process killed at any
point leaves a journal that undo can replay backwards:

- ``{"txn", "op": "begin", "at"}`` starts a transaction, ``commit`` ends it;
- ``write``: target and real path, old/new sha256, backup path (None for a new
  file), old mode/uid/gid, the temp file name, and ``keep``: the restore point
  beside the target (a hard link to the old file, removed at commit);
  ``fix`` (true) when it replaced drift: the file was no longer as an earlier apply
  still in effect left it (undo keeps the fixed content);
- ``remove-file``: a file the apply removed (renamed to ``keep`` beside it, backed
  up, with its old sha256, mode and owner); undo puts it back;
- ``planned``: a file the apply planned and found already as planned (``sha256``),
  the before-image of a file no step changed;
- ``mkdir``: a directory created for a write;
- ``create-group`` / ``create-user`` / ``add-to-group``: accounts created, with a
  snapshot of the account files (``files``: each one's old sha256, backup, mode and
  owner) and, for a user, its home (``home_existed``); ``accounts-done`` (same
  ``step``) records the files' sha256 after the tool ran
  (:mod:`sandbox_setup.configure.accounts.account_files`);
- ``acl``: a snapshot (per path: mode bits, access and default ACL) of the
  workspace before the group's ACLs were added;
- ``remove-from-group``: an agent taken out of a group (the legacy shared one);
- ``set-shell``: an agent of this setup's given ``nologin`` (``shell``; ``old_shell``
  was its login shell), an account step like ``add-to-group`` (``files``, then
  ``accounts-done``);
- ``undone`` / ``rolled-back``: the transaction was reverted (``left``: what the undo
  left as it was, and why);
- ``step-undone`` (``step``: the step's index among the transaction's steps): one
  step an undo reverted, written as it succeeds, so a later undo redoes only what
  is left (and its preview shows only that);
- ``rollback-incomplete``: a failed apply's rollback could not revert everything
  (``left``); the transaction stays open and ``--undo`` finishes it;
- ``undo-incomplete``: an undo ran but some steps failed (``left``); the transaction
  stays open and the next undo retries them.

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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePosixPath

from sandbox_setup.base.errors import RefusedError, SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops
from sandbox_setup.configure.journal.check import MAX_LINE, parse_entries, torn_tail
from sandbox_setup.configure.journal.entries import (
    AccountsDone,
    Begin,
    Entry,
    Planned,
    RolledBack,
    StepUndone,
    Undone,
    Write,
    backups_named,
    decode,
)
from sandbox_setup.configure.state_trust import check_backups, check_state_dir, check_state_file


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def state_dirs(layout: Layout) -> fsops.DirSpec:
    return fsops.DirSpec(0o700, layout.operator.uid, layout.operator.gid)


def open_in(layout: Layout, target: PurePosixPath, flags: int) -> int:
    real = layout.real(target)
    dfd = fsops.open_dir(layout.root, real.parent, create=state_dirs(layout))
    assert dfd is not None
    try:
        return os.open(real.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
    finally:
        os.close(dfd)


@contextlib.contextmanager
def apply_lock(layout: Layout) -> Iterator[None]:
    """Hold the exclusive apply lock, or raise RefusedError if another run has it
    (or if the state directory fails the trust rule: nothing is created in it)."""
    check_state_dir(layout)
    missing = _missing_parents(layout)
    try:
        fd = open_in(layout, layout.lock, os.O_RDWR | os.O_CREAT)
        if missing:
            _note_created_parents(layout, missing)
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


# In the state directory: the directories above it that its first creation made, so
# that `--undo --all` can leave the operator's home as it was (JSON list of paths).
CREATED_PARENTS = "created-parents.json"


def _missing_parents(layout: Layout) -> list[str]:
    """The state directory's ancestors below the operator's home that do not exist."""
    home = PurePosixPath(layout.operator.home)
    return [
        str(p)
        for p in layout.state_dir.parents
        if home in p.parents and not os.path.lexists(layout.real(p))
    ]


def _note_created_parents(layout: Layout, created: list[str]) -> None:
    try:
        fd = open_in(
            layout, layout.state_dir / CREATED_PARENTS, os.O_WRONLY | os.O_CREAT | os.O_EXCL
        )
    except FileExistsError:
        return  # the first creation's record stands
    try:
        os.write(fd, json.dumps(created).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_entries(layout: Layout) -> list[Entry]:
    """Every journal entry, oldest first, decoded into its typed value
    (:mod:`sandbox_setup.configure.journal.entries`), read strictly (see
    :mod:`sandbox_setup.configure.journal.check`): a line that does not parse or
    validate raises :class:`JournalCorruptError` (exit 2) naming it; only a torn last
    line (a killed write) is skipped.

    A journal (or state directory) that fails the trust rule is refused (exit 3)
    before a line of it is read: root would replay whatever it says."""
    check_state_file(layout, layout.journal, "journal")
    state = fsops.read_file(layout.root, layout.real(layout.journal))
    if state is None:
        return []
    return parse_entries(state.data, layout, str(layout.real(layout.journal)))


def open_for_append(layout: Layout, *, create: bool) -> int:
    """The journal opened to append to, with a torn last line (a write killed half
    way) cut off first, so the next entry starts on a line of its own."""
    flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT if create else 0)
    fd = open_in(layout, layout.journal, flags)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - MAX_LINE - 1)
        tail = os.pread(fd, size - start, start)
        cut = torn_tail(tail)
        if cut < len(tail) and (start == 0 or b"\n" in tail[:cut]):
            os.ftruncate(fd, start + cut)
    except BaseException:
        os.close(fd)
        raise
    return fd


class JournalError(SetupError):
    """The journal cannot be opened or written (a full or read-only state dir).
    Exit 2; no step runs without its journal entry on disk."""


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
    "planned",
)
CLOSED = ("undone", "rolled-back")


def open_steps(layout: Layout) -> list[Entry]:
    """Every step, of every transaction not yet reverted, that is still in effect."""
    entries = read_entries(layout)
    found: list[Entry] = []
    for txn in open_transactions(entries):
        found += [e for _, e in pending_steps([e for e in entries if e.txn == txn])]
    return found


def last_left(layout: Layout) -> dict[str, str | None]:
    """Per file, the sha256 this setup's applies still in effect last left it with:
    what a write made it, or what an apply found already as planned (``planned``)."""
    entries = read_entries(layout)
    found: dict[str, str | None] = {}
    for txn in open_transactions(entries):
        mine = [e for e in entries if e.txn == txn]
        pending = {id(e) for _, e in pending_steps(mine)}
        for entry in mine:
            if isinstance(entry, Write) and id(entry) in pending:
                found[entry.target] = entry.new_sha256
            elif isinstance(entry, Planned):
                found[entry.target] = entry.sha256
    return found


def open_transactions(entries: list[Entry]) -> list[str]:
    """The applies of the journal no undo or rollback closed, oldest first."""
    closed = {e.txn for e in entries if isinstance(e, Undone | RolledBack)}
    return [e.txn for e in entries if isinstance(e, Begin) and e.txn not in closed]


def pending_steps(txn_entries: list[Entry]) -> list[tuple[int, Entry]]:
    """The steps of one transaction no undo has reverted yet, with their index."""
    steps = [e for e in txn_entries if e.op not in BOOKKEEPING]
    done = {e.step for e in txn_entries if isinstance(e, StepUndone)}
    return [(index, entry) for index, entry in enumerate(steps) if index not in done]


def check_backups_of(layout: Layout, entries: list[Entry]) -> None:
    """Every backup ``entries`` name passes the state directory's trust rule
    (:func:`~sandbox_setup.configure.state_trust.check_backups`)."""
    check_backups(layout, [named for entry in entries for named in backups_named(entry)])


def last_open(layout: Layout) -> tuple[str, list[Entry], dict[int, int]] | None:
    entries = read_entries(layout)
    txns = open_transactions(entries)
    if not txns:
        return None
    mine = [e for e in entries if e.txn == txns[-1]]
    index = {id(entry): number for number, entry in pending_steps(mine)}
    kept = [e for e in mine if isinstance(e, Begin | AccountsDone) or id(e) in index]
    check_backups_of(layout, kept)  # before the preview shows them or an undo reads one
    return txns[-1], kept, index


def last_transaction(layout: Layout) -> tuple[str, list[Entry]] | None:
    """The newest transaction not yet reverted, with its ``begin``, what its account
    steps left (``accounts-done``, for a byte-exact undo) and the steps still to
    undo, in journal order; or None."""
    found = last_open(layout)
    return None if found is None else (found[0], found[1])


def decoded(txn: str, entries: Sequence[Mapping[str, object]], layout: Layout) -> list[Entry]:
    """The typed entries of the lines the apply ``txn`` wrote in this process (its
    rollback and commit), decoded as the reader decodes them from the journal."""
    return [decode({**json.loads(json.dumps(dict(e))), "txn": txn}, layout) for e in entries]


def append_line(fd: int, entry: Mapping[str, object]) -> None:
    os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8"))
    os.fsync(fd)
