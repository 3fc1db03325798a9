"""The apply journal, the apply lock, and undo.

The journal (``layout.journal``, JSON lines, operator-owned 0600) records every
step of an apply *before* the step happens, fsynced, so a process killed at any
point leaves a journal that undo can replay backwards:

- ``{"txn", "op": "begin", "at"}`` starts a transaction, ``commit`` ends it;
- ``write``: target and real path, old/new sha256, backup path (None for a new
  file), old mode/uid/gid, the temp file name;
- ``mkdir``: a directory created for a write;
- ``create-group`` / ``create-user`` / ``add-to-group``: accounts created;
- ``acl``: a snapshot (per path: mode bits, access and default ACL) of the
  workspace before the group's ACLs were added;
- ``remove-from-group``: an agent taken out of a group (the legacy shared one);
- ``undone`` / ``rolled-back``: the transaction was reverted;
- ``step-undone`` (``step``: the step's index among the transaction's steps): one
  step an undo reverted. An undo marks each step as it succeeds and marks the
  transaction ``undone`` only when every step did, so a step that failed (a
  ``userdel`` refused while the agent still ran) is retried by the next ``--undo``.

Account steps (users, groups) are reverted by :mod:`wizard.configure.account_undo`:
it stops the agent's processes first and keeps what another setup still uses.

:func:`undo_last` reverts the newest transaction that is not yet reverted,
committed or not, and returns what it restored or removed. A file that changed
again after the apply (neither old nor new content) is left alone and reported.
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
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from wizard.base.errors import RefusedError, SetupError
from wizard.base.paths import Layout
from wizard.configure import account_undo, fsops, users
from wizard.policy.accounts import LEGACY_WORKSPACE_GROUP


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
    fd = _open_in(layout, layout.lock, os.O_RDWR | os.O_CREAT)
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


class Transaction:
    """One apply: journal entries written ahead of each step, plus backups."""

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
        try:
            self._append({"op": "begin", "at": _now(), "root": str(layout.root)})
        except JournalError:
            self.close()
            raise

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps({"txn": self.id, **entry}, sort_keys=True) + "\n"
        try:
            os.write(self._fd, line.encode("utf-8"))
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

    def backup(self, data: bytes, name: str) -> str:
        """Save ``data`` under the backups dir; returns the backup's target path."""
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
        return str(target)

    def commit(self) -> None:
        self._append({"op": "commit", "at": _now()})
        self.close()

    def rollback(self) -> list[str]:
        """Revert this transaction's steps (after a failure); returns what was done."""
        done = revert(self.layout, self.entries)
        try:
            self._append({"op": "rolled-back", "at": _now()})
        except JournalError as exc:
            # Everything was reverted; a later --undo finds nothing left to revert.
            done.append(f"could not mark the apply rolled back: {exc}")
        self.close()
        return done

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _revert_write(layout: Layout, entry: dict[str, Any]) -> str | None:
    real = Path(entry["real"])
    target = entry["target"]
    fsops.remove_file(layout.root, real.parent / entry["tmp"])
    state = fsops.read_file(layout.root, real)
    current = fsops.sha256(state.data if state else None)
    attrs_only = entry["old_sha256"] == entry["new_sha256"]  # a mode/owner repair
    if current == entry["old_sha256"] and not attrs_only:
        return None  # the new content never landed
    if current != entry["new_sha256"]:
        return f"left {target} as it is: it changed after that apply"
    if entry["backup"] is None:
        fsops.remove_file(layout.root, real)
        return f"removed {target}"
    backup = fsops.read_file(layout.root, layout.real(entry["backup"]))
    if backup is None:
        return f"cannot restore {target}: backup {entry['backup']} is missing"
    fsops.atomic_write(
        layout.root,
        real,
        backup.data,
        mode=entry["old_mode"],
        uid=entry["old_uid"],
        gid=entry["old_gid"],
        dirs=_state_dirs(layout),
    )
    return f"restored {target}"


def _revert_one(layout: Layout, entry: dict[str, Any]) -> str | None:
    op = entry["op"]
    if op == "write":
        return _revert_write(layout, entry)
    if op == "mkdir":
        if fsops.remove_empty_dir(layout.root, Path(entry["real"])):
            return f"removed directory {entry['target']}"
        return None
    if op == "add-to-group":
        members = users.group_members(entry["group"], layout.root) or []
        if entry["user"] in members:
            users.run_tool(users.remove_from_group_argv(layout, entry["user"], entry["group"]))
            return f"removed {entry['user']} from group {entry['group']}"
        return None
    if op == "acl":
        return _revert_acl(layout, entry)
    return None


def _revert_acl(layout: Layout, entry: dict[str, Any]) -> str | None:
    """Take the group's ACL entries and setgid bits off the workspace, walking it by
    fd. Never ``setfacl --restore``: it follows symlinks the agent may have planted
    and would chmod/chown their targets as root."""
    saved = fsops.read_file(layout.root, layout.real(entry["backup"]))
    if saved is None:
        return f"could not undo the ACLs of {entry['target']}: backup {entry['backup']} is missing"
    try:
        snapshot = json.loads(saved.data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        snapshot = None  # a getfacl backup from an older version
    if not isinstance(snapshot, dict) or snapshot.get("format") != users.ACL_SNAPSHOT_FORMAT:
        gid = users.group_gid(layout, LEGACY_WORKSPACE_GROUP)
        if gid is None:
            return None
        snapshot = {"gid": gid, "entries": {}}  # strip the group's entries everywhere
    top = fsops.open_dir(layout.root, layout.real(entry["target"]))
    if top is None:
        return None
    try:
        changed = users.revoke_workspace(top, snapshot)
    finally:
        os.close(top)
    return f"restored ACLs and setgid bits of {entry['target']}" if changed else None


def revert(
    layout: Layout,
    entries: list[dict[str, Any]],
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> list[str]:
    """Undo ``entries`` newest first; returns a line per thing restored or removed.
    ``on_done(entry)`` is called for each step that did not fail."""
    done = []
    for entry in reversed(entries):
        if entry.get("op") in BOOKKEEPING:
            continue
        try:
            if entry.get("op") in account_undo.OPS:
                line = account_undo.revert_step(layout, entry, entries)
            else:
                line = _revert_one(layout, entry)
        except (OSError, SetupError) as exc:
            # Keep going: one step that cannot be reverted must not strand the rest.
            line = f"could not undo {describe_entry(entry) or entry.get('op')}: {exc}"
        else:
            if on_done is not None:
                on_done(entry)
        if line:
            done.append(line)
    return done


# Entries about the journal itself, not steps of an apply.
BOOKKEEPING = ("begin", "commit", "undone", "rolled-back", "step-undone")
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


def last_transaction(layout: Layout) -> tuple[str, list[dict[str, Any]]] | None:
    """The newest transaction not yet reverted, with its entries (only the steps
    still to undo, after its ``begin``), or None."""
    entries = read_journal(layout)
    txns = _open_transactions(entries)
    if not txns:
        return None
    mine = [e for e in entries if e["txn"] == txns[-1]]
    begin = [e for e in mine if e.get("op") == "begin"]
    return txns[-1], begin + [e for _, e in pending_steps(mine)]


def describe_entry(entry: dict[str, Any]) -> str | None:
    """What undoing ``entry`` would do, in words (None for bookkeeping entries)."""
    op = entry.get("op")
    if op == "write":
        verb = "remove" if entry.get("backup") is None else "restore"
        return f"{verb} {entry['target']}"
    if op == "mkdir":
        return f"remove directory {entry['target']} if empty"
    if op in ("create-user", "create-group"):
        return f"remove {op.split('-')[1]} {entry['name']}"
    if op == "add-to-group":
        return f"remove {entry['user']} from group {entry['group']}"
    if op == "remove-from-group":
        return f"add {entry['user']} back to group {entry['group']}"
    if op == "acl":
        return f"restore ACLs of {entry['target']}"
    return None


# Lines of :func:`revert` that report something left as it was (undo exits 1).
LEFT_PREFIXES = ("left ", "could not ", "cannot ")


def is_left(line: str) -> bool:
    """True when a :func:`revert` line reports something it did not undo."""
    return line.startswith(LEFT_PREFIXES)


def undo_last(layout: Layout) -> list[str]:
    """Revert the newest apply that is not yet reverted; [] when there is none."""
    with apply_lock(layout):
        entries = read_journal(layout)
        txns = _open_transactions(entries)
        if not txns:
            return []
        last = txns[-1]
        pending = pending_steps([e for e in entries if e["txn"] == last])
        index = {id(entry): number for number, entry in pending}
        steps = [entry for _, entry in pending]
        fd = _open_in(layout, layout.journal, os.O_WRONLY | os.O_APPEND)

        def mark(entry: dict[str, Any]) -> None:
            # Durable at once: an undo killed half-way keeps what it did.
            _append_line(fd, {"txn": last, "op": "step-undone", "step": index[id(entry)]})

        try:
            # The agent first: nothing of it may run while its access is taken away.
            done = account_undo.stop_agents(layout, steps)
            reverted: list[dict[str, Any]] = []

            def step_done(entry: dict[str, Any]) -> None:
                mark(entry)
                reverted.append(entry)

            done += revert(layout, steps, on_done=step_done)
            if len(reverted) == len(steps):
                _append_line(fd, {"txn": last, "op": "undone", "at": _now()})
            else:
                left = len(steps) - len(reverted)
                done.append(
                    f"could not undo {left} step(s) of apply {last}; they stay recorded and "
                    "the next --undo retries them"
                )
        finally:
            os.close(fd)
        return done


def _append_line(fd: int, entry: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8"))
    os.fsync(fd)
