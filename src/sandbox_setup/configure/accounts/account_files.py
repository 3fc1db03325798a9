"""The account databases shadow-utils rewrites, kept so that undo is byte for byte.

``groupadd``, ``useradd`` and ``usermod`` (``--prefix DIR`` under ``--root``) write
``/etc/passwd``, ``shadow``, ``group`` and ``gshadow`` (and ``subuid``/``subgid``
where they exist) as ``NAME+`` renamed over ``NAME``, after copying the old content
into the ``NAME-`` backup, which they truncate and rewrite in place. Undoing with
``userdel``/``groupdel`` alone removes the lines but leaves every ``-`` backup
changed, and without ``/etc/login.defs`` ``userdel`` keeps the user's own group (the
next ``useradd --user-group`` then fails: "group ... exists").

So before each tool runs, :func:`account_step` snapshots every one of these files
(content into the transaction's backups, mode and owner into the journal entry), and
missing parents of a new home are journaled as ``mkdir`` entries; after the tool it
records the files' new sha256 (``accounts-done``). :func:`revert_account_step`
then writes the old bytes back and removes what the tool created (the home
included) when every file is still as the tool left it. If the accounts changed
since (another tool added a user), it falls back to ``userdel``/``groupdel``/
``usermod``, which remove just this setup's entries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol

from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops, interrupts, outcome
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.journal.entries import (
    AddToGroup,
    CreateGroup,
    CreateUser,
    FileSnapshot,
    SetShell,
)
from sandbox_setup.configure.outcome import StepResult

# The account steps an undo reverts (with their account files' snapshot).
Undoable = CreateUser | CreateGroup | AddToGroup | SetShell


class StepJournal(Protocol):
    """What an account step needs of the apply's transaction
    (:class:`~sandbox_setup.configure.transaction.Transaction`, which imports the revert
    steps of this module: named here by what it does, so no import goes back up)."""

    def record(self, entry: Mapping[str, object]) -> None: ...
    def next_step(self) -> int: ...
    def backup(self, data: bytes, name: str) -> str: ...
    def keep(self, real: Path, name: str, *, move: bool = False) -> str | None: ...
    def keep_name(self, real: Path) -> str: ...


DATABASES = ("passwd", "shadow", "group", "gshadow", "subuid", "subgid")
ACCOUNT_FILES: tuple[PurePosixPath, ...] = tuple(
    PurePosixPath("/etc") / f"{name}{suffix}" for name in DATABASES for suffix in ("", "-")
)


def _snapshot(txn: StepJournal, layout: Layout) -> tuple[FileSnapshot, ...]:
    files = []
    for target in ACCOUNT_FILES:
        real = layout.real(target)
        state = fsops.read_file(layout.root, real)
        files.append(
            FileSnapshot(
                target=str(target),
                real=str(real),
                old_sha256=fsops.sha256(state.data) if state else None,
                backup=txn.backup(state.data, target.name) if state else None,
                keep=txn.keep_name(real) if state else None,
                old_mode=state.mode if state else None,
                old_uid=state.uid if state else None,
                old_gid=state.gid if state else None,
            )
        )
    return tuple(files)


def _is_dash_backup(item: FileSnapshot) -> bool:
    return item.target.endswith("-")


def _make_restore_points(txn: StepJournal, files: Sequence[FileSnapshot]) -> None:
    """Restore points beside each file (see :func:`sandbox_setup.configure.fsops.keep`): the
    databases are replaced by a rename, so a hard link keeps the old one; the ``-``
    backups are truncated and rewritten in place, so they are moved aside."""
    for item in files:
        if item.keep:
            txn.keep(Path(item.real), item.keep, move=_is_dash_backup(item))


def _restore_kept(layout: Layout, real: Path, item: FileSnapshot) -> bool:
    """Put ``item``'s restore point back over ``real`` (False: there is none)."""
    if not item.keep:
        return False
    if item.old_sha256 is None:
        return False
    return fsops.restore_kept(layout.root, real, item.keep, item.old_sha256)


def settle_kept_account_files(layout: Layout, files: Sequence[FileSnapshot]) -> None:
    """Drop the restore points of ``files``; a ``-`` backup moved aside goes back
    where it was when the tool did not write a new one."""
    for item in files:
        if not item.keep:
            continue
        real = Path(item.real)
        if _is_dash_backup(item) and fsops.read_file(layout.root, real) is None:
            _restore_kept(layout, real, item)
        else:
            fsops.remove_file(layout.root, real.parent / item.keep)


def _digests(layout: Layout, files: Sequence[FileSnapshot]) -> dict[str, str | None]:
    found = {}
    for item in files:
        state = fsops.read_file(layout.root, Path(item.real))
        found[item.target] = fsops.sha256(state.data) if state else None
    return found


def _untouched_before_the_tool(
    files: Sequence[FileSnapshot], new: Mapping[str, str | None]
) -> bool:
    """True when nobody changed a database between the snapshot and the tool: for each
    file the tool rewrote, its ``-`` backup (the tool's copy of what it found) holds
    exactly the bytes that were snapshotted."""
    old = {item.target: item.old_sha256 for item in files}
    for target in old:
        if target.endswith("-") or new[target] == old[target]:
            continue
        if new.get(target + "-") != old[target]:
            return False
    return True


def _missing_parents(layout: Layout, home: PurePosixPath) -> list[Path]:
    missing = []
    for parent in reversed(home.parents):
        if str(parent) == "/":
            continue
        if not os.path.lexists(layout.real(parent)):
            missing.append(layout.real(parent))
    return missing


@contextlib.contextmanager
def account_step(txn: StepJournal, layout: Layout, entry: Mapping[str, str]) -> Iterator[None]:
    """Journal ``entry`` (``create-group``/``create-user``/``add-to-group``/``set-shell``) with a
    snapshot of the account files, run the body (the tool), then record the files'
    new digests. A ``create-user`` entry carries ``home``; its missing parents are
    journaled first (useradd creates them) so undo removes them after the home."""
    # A signal waits until the step is whole: the tool is never killed half way
    # through its rewrite, and what it left is recorded before the rollback starts.
    with interrupts.deferred():
        yield from _account_step(txn, layout, entry)


def _account_step(txn: StepJournal, layout: Layout, entry: Mapping[str, str]) -> Iterator[None]:
    step: dict[str, object] = dict(entry)
    home = entry.get("home")
    if home is not None:
        for path in _missing_parents(layout, PurePosixPath(home)):
            target = "/" + str(path.relative_to(layout.root)) if not layout.live else str(path)
            txn.record({"op": "mkdir", "real": str(path), "target": target})
        step["home_existed"] = os.path.lexists(layout.real(home))
    number = txn.next_step()
    files = _snapshot(txn, layout)
    step.update(step=number, files=[dataclasses.asdict(item) for item in files])
    txn.record(step)
    try:
        _make_restore_points(txn, files)
        yield
    finally:
        # A "-" backup the tool did not rewrite goes back at once (a rename).
        for item in files:
            real = Path(item.real)
            if _is_dash_backup(item) and fsops.read_file(layout.root, real) is None:
                _restore_kept(layout, real, item)
        # In memory first: a rollback in this process knows the new state even if
        # the journal line below cannot be written.
        now = _digests(layout, files)
        new = now if _untouched_before_the_tool(files, now) else None
        step["new"] = new
    txn.record({"op": "accounts-done", "step": number, "new": new})


def _remove_home(layout: Layout, home: str) -> None:
    real = layout.real(home)
    dfd = fsops.open_dir(layout.root, real.parent)
    if dfd is None:
        return
    try:
        try:
            st = os.lstat(real.name, dir_fd=dfd)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            # By fd, never following a symlink the agent planted in its home.
            shutil.rmtree(real.name, dir_fd=dfd)
    finally:
        os.close(dfd)


def _restore_file(layout: Layout, item: FileSnapshot) -> None:
    real = Path(item.real)
    if item.old_sha256 is None:
        fsops.remove_file(layout.root, real)
        return
    # The restore point first: a rename, no free space needed (a rollback on a full
    # disk); the backup in the state dir after a commit removed it.
    if _restore_kept(layout, real, item):
        return
    if item.backup is None:
        raise SetupError(f"the journal names no backup of {item.target}")
    backup = fsops.read_file(layout.root, layout.real(item.backup))
    if backup is None:
        raise SetupError(f"backup {item.backup} of {item.target} is missing")
    if fsops.sha256(backup.data) != item.old_sha256:
        raise SetupError(f"backup {item.backup} of {item.target} does not match the journal")
    if item.old_mode is None or item.old_uid is None or item.old_gid is None:
        raise SetupError(f"the journal does not record the mode and owner of {item.target}")
    fsops.atomic_write(
        layout.root,
        real,
        backup.data,
        mode=item.old_mode,
        uid=item.old_uid,
        gid=item.old_gid,
        dirs=fsops.DirSpec(0o755, 0, 0),
    )


def _what(entry: Undoable) -> str:
    if isinstance(entry, CreateUser):
        return f"removed user {entry.name} and its home"
    if isinstance(entry, CreateGroup):
        return f"removed group {entry.name}"
    if isinstance(entry, SetShell):
        return f"gave {entry.user} back the shell {entry.old_shell or '(none)'}"
    return f"removed {entry.user} from group {entry.group}"


def _pid_alive(text: str) -> bool:
    try:
        pid = int(text.strip("\0 \n\t") or "0")  # shadow-utils writes "PID\0"
    except ValueError:
        return True  # not a lock of shadow-utils' making: leave it
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed tool whose parent died too can stay a zombie for a while (nobody
    # reaps it yet): it holds nothing.
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat_line.rsplit(b")", 1)[-1].split()[:1] != [b"Z"]


def remove_stale_locks(layout: Layout) -> list[str]:
    """The lock files a shadow-utils tool killed half way left in ``/etc``: ``NAME.lock``
    and ``NAME.PID`` whose process is gone, and ``NAME+`` (its new copy, never renamed)
    once no live lock is left. Returns the target paths removed."""
    etc = layout.real("/etc")
    dfd = fsops.open_dir(layout.root, etc)
    if dfd is None:
        return []
    removed = []
    try:
        names = set(os.listdir(dfd))
        for db in DATABASES:
            pids = [n for n in names if n.startswith(db + ".") and n[len(db) + 1 :].isdigit()]
            locks = [n for n in [f"{db}.lock", *pids] if n in names]
            live = False
            for name in locks:
                text = _read_small(dfd, name)
                if text is None:
                    continue
                alive = _pid_alive(name[len(db) + 1 :] if name in pids else text)
                if alive:
                    live = True
                    continue
                os.unlink(name, dir_fd=dfd)
                removed.append(f"/etc/{name}")
            if not live and f"{db}+" in names and _read_small(dfd, f"{db}+") is not None:
                os.unlink(f"{db}+", dir_fd=dfd)
                removed.append(f"/etc/{db}+")
    finally:
        os.close(dfd)
    return removed


def _read_small(dfd: int, name: str) -> str | None:
    """The text of the regular file ``name`` (never through a symlink), else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, 4096).decode("ascii", "replace")
    finally:
        os.close(fd)


def revert_account_step(
    layout: Layout, entry: Undoable, new: Mapping[str, str | None] | None
) -> StepResult | None:
    """Undo one account step; ``new`` is what the tool left (None: unknown)."""
    files = entry.files
    if files is not None:
        # A tool killed half way (kill -9) left its locks: they would stop every later
        # account change, and the root is not as before while they are there.
        remove_stale_locks(layout)
        now = _digests(layout, files)
        # A "-" backup still moved aside (killed while the tool ran) counts as unchanged.
        changed = [
            item
            for item in files
            if now[item.target] != item.old_sha256
            and not (_is_dash_backup(item) and now[item.target] is None and item.keep)
        ]
        if new is None:
            # Killed while the tool ran (no accounts-done line): what it left counts as
            # its own when nobody changed the files before it (its "-" copies say so).
            new = now if _untouched_before_the_tool(files, now) else None
        ours = isinstance(entry, CreateUser) and _home_is_ours(layout, entry)
        if not changed and not ours:
            settle_kept_account_files(layout, files)
            return None  # the tool never ran (or a previous undo restored it)
        if new is not None and all(now[item.target] == new[item.target] for item in changed):
            bad = [(item, why) for item in changed if (why := _unrestorable(layout, item))]
            if bad:
                return outcome.left(_fallback(layout, entry, files, bad))
            for item in changed:
                _restore_file(layout, item)
            settle_kept_account_files(layout, files)
            if isinstance(entry, CreateUser) and ours and entry.home is not None:
                _remove_home(layout, entry.home)
            return outcome.done(_what(entry))
        line = _revert_with_tools(layout, entry)
        settle_kept_account_files(layout, files)
        return outcome.done(line) if line else None
    line = _revert_with_tools(layout, entry)
    return outcome.done(line) if line else None


def _unrestorable(layout: Layout, item: FileSnapshot) -> str | None:
    """Why ``item`` cannot be put back byte for byte (None: it can): neither its
    restore point nor its backup holds the bytes the journal recorded."""
    if item.old_sha256 is None:
        return None  # it did not exist: removing it needs no backup
    real = Path(item.real)
    if item.keep:
        kept = fsops.read_file(layout.root, real.parent / item.keep)
        if kept is not None:
            if fsops.sha256(kept.data) == item.old_sha256:
                return None
            return f"its restore point {real.parent / item.keep} does not match the journal"
    if item.backup is None:
        return "the journal names no backup of it"
    backup = fsops.read_file(layout.root, layout.real(item.backup))
    if backup is None:
        return f"its backup {item.backup} is missing"
    if fsops.sha256(backup.data) != item.old_sha256:
        return f"its backup {item.backup} does not match the journal"
    return None


def _fallback(
    layout: Layout,
    entry: Undoable,
    files: Sequence[FileSnapshot],
    bad: list[tuple[FileSnapshot, str]],
) -> str:
    """A backup of the account files is bad: never write it back, and never stay stuck
    on it either. The tools remove what this step created (``userdel --remove``,
    ``groupdel``, ``usermod --remove``, with ``--prefix`` under ``--root``); the files
    are then as the tools leave them, and the line says which and why (undo exits 1)."""
    done = _revert_with_tools(layout, entry)
    settle_kept_account_files(layout, files)
    item, why = bad[0]
    names = ", ".join(i.target for i, _ in bad)
    tool = (
        "userdel"
        if isinstance(entry, CreateUser)
        else "groupdel"
        if isinstance(entry, CreateGroup)
        else "usermod"
    )
    return (
        f"left {names} as {tool} leaves {'it' if len(bad) == 1 else 'them'}, not byte for "
        f"byte as before: {item.target}: {why}; "
        + (f"{done} with {tool} instead" if done else "nothing of this step was left to remove")
    )


def _home_is_ours(layout: Layout, entry: CreateUser) -> bool:
    return (
        entry.home_existed is False
        and entry.home is not None
        and os.path.lexists(layout.real(entry.home))
    )


def _revert_with_tools(layout: Layout, entry: Undoable) -> str | None:
    """The accounts changed since the apply (or an older journal): remove only this
    setup's entries with the tools; the ``-`` backups stay as the tools leave them."""
    if isinstance(entry, CreateUser):
        name = entry.name
        if not users.user_exists(layout, name):
            return None
        users.run_tool(users.userdel_argv(layout, name))
        # useradd --user-group made the group; userdel removes it only when
        # login.defs says USERGROUPS_ENAB yes (absent: it stays behind).
        if users.group_gid(layout, name) is not None:
            with contextlib.suppress(users.CommandError):
                users.run_tool(users.groupdel_argv(layout, name))
        return _what(entry)
    if isinstance(entry, CreateGroup):
        if users.group_gid(layout, entry.name) is None:
            return None
        users.run_tool(users.groupdel_argv(layout, entry.name))
        return _what(entry)
    if isinstance(entry, SetShell):
        account = lookup_user(entry.user, layout.root)
        if account is None or account.shell != entry.shell:
            return None  # gone, or its shell changed since: not this step's to put back
        users.run_tool(users.set_shell_argv(layout, entry.user, entry.old_shell))
        return _what(entry)
    members = users.group_members(entry.group, layout.root) or []
    if entry.user not in members:
        return None
    users.run_tool(users.remove_from_group_argv(layout, entry.user, entry.group))
    return _what(entry)


__all__ = ["ACCOUNT_FILES", "account_step", "revert_account_step"]
