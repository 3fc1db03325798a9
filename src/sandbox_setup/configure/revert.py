"""Reverting journal entries: what undo and a rollback do for each step.

:func:`revert` takes one transaction's entries and undoes them newest first,
returning a typed result per thing restored, removed, left alone or that failed
(:class:`~sandbox_setup.configure.outcome.StepResult`: whether a step failed is its
:class:`~sandbox_setup.configure.outcome.Outcome`, never its words). Every step is
idempotent: reverting a step twice, or a step that never ran, changes nothing, so an
interrupted or failed undo can simply be run again.

Shared host files (root's git include and protected file: docs/design.md invariant 18)
are not the journal's to put back: the host-wide record of setups
(:mod:`sandbox_setup.configure.ledger`) releases the transaction's reliance first
and puts a file back only when no setup relies on it any more; the journal's own
write of such a file is then skipped, and one another setup relies on is kept.
:func:`preview` says in words what reverting a transaction would do (the ``--undo``
preview), from the same decisions.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops, ledger, outcome
from sandbox_setup.configure.accounts import account_undo, users
from sandbox_setup.configure.accounts.account_files import (
    revert_account_step,
    settle_kept_account_files,
)
from sandbox_setup.configure.apparmor_load import revert_load
from sandbox_setup.configure.journal.entries import (
    AccountsDone,
    AccountStep,
    Acl,
    AddToGroup,
    ApparmorLoad,
    CreateGroup,
    CreateUser,
    Entry,
    Mkdir,
    RemoveFile,
    RemoveFromGroup,
    SetShell,
    Write,
)
from sandbox_setup.configure.outcome import LeftFile, LeftWhy, Outcome, StepResult
from sandbox_setup.policy.accounts import LEGACY_WORKSPACE_GROUP


def _restore_dirs(layout: Layout) -> fsops.DirSpec:
    """Parents re-created for a restored file (only when they vanished since)."""
    return fsops.DirSpec(0o700, layout.operator.uid, layout.operator.gid)


def _drop_kept(layout: Layout, real: Path, keep: str | None) -> None:
    if keep:
        fsops.remove_file(layout.root, real.parent / keep)


class WriteUndo(enum.Enum):
    """What undoing one journaled write does (the preview and the run decide it here)."""

    NOTHING = "nothing"  # the new content never landed, or is already undone
    CHANGED = "changed"  # someone changed the file since: left as it is
    KEPT_SHARED = "kept-shared"  # another setup relies on it
    KEPT_FIX = "kept-fix"  # the write replaced drift: the fixed content stays
    REMOVE = "remove"  # the apply created it
    RESTORE = "restore"  # the backup goes back


def write_decision(
    layout: Layout, entry: Write, last: Mapping[str, str | None] | None = None
) -> tuple[WriteUndo, list[str]]:
    """What undoing the write ``entry`` does, and the other setups relying on its file.
    ``last``: per file, what this setup's applies last left it as (``--undo --all``:
    a file still as this tool last wrote it counts as this apply's own)."""
    real = Path(entry.real)
    target = entry.target
    state = fsops.read_file(layout.root, real)
    current = fsops.sha256(state.data if state else None)
    attrs_only = entry.old_sha256 == entry.new_sha256  # a mode/owner repair
    old_attrs = (entry.old_mode, entry.old_uid, entry.old_gid)
    if current == entry.old_sha256 and (
        not attrs_only or (state is not None and (state.mode, state.uid, state.gid) == old_attrs)
    ):
        return WriteUndo.NOTHING, []
    ours = current == entry.new_sha256 or (last is not None and last.get(target) == current)
    if not ours:
        return WriteUndo.CHANGED, []
    others = ledger.shared_kept_by_others(layout, target)
    if others:
        return WriteUndo.KEPT_SHARED, others
    if entry.fix:
        return WriteUndo.KEPT_FIX, []
    return (WriteUndo.REMOVE if entry.backup is None else WriteUndo.RESTORE), []


def _revert_write(
    layout: Layout, entry: Write, last: Mapping[str, str | None] | None = None
) -> StepResult | None:
    real = Path(entry.real)
    target = entry.target
    keep = entry.keep  # absent in journals of older versions
    fsops.remove_file(layout.root, real.parent / entry.tmp)
    decision, others = write_decision(layout, entry, last)
    if decision is not WriteUndo.RESTORE:
        _drop_kept(layout, real, keep)
    if decision is WriteUndo.NOTHING:
        return None  # the new content never landed (or was already restored)
    if decision is WriteUndo.CHANGED:
        return outcome.left(f"left {target} as it is: it changed after that apply")
    if decision is WriteUndo.KEPT_SHARED:
        return outcome.done(_kept_line(target, others))
    if decision is WriteUndo.KEPT_FIX:
        return outcome.done(_fix_line(target))
    if decision is WriteUndo.REMOVE:
        fsops.remove_file(layout.root, real)
        return outcome.done(f"removed {target}")
    # The restore point beside the target first: a rename, which needs no free space
    # (this is what makes a rollback on a full disk possible).
    old = entry.old_sha256
    if keep and old is not None and fsops.restore_kept(layout.root, real, keep, old):
        return outcome.done(f"restored {target}")
    assert entry.backup is not None  # RESTORE: the write replaced a file it backed up
    backup = fsops.read_file(layout.root, layout.real(entry.backup))
    if backup is None:
        return outcome.failed(f"cannot restore {target}: backup {entry.backup} is missing")
    found = fsops.sha256(backup.data)
    if found != old:
        # Never write back bytes the journal did not record: a backup someone changed
        # (or a torn copy) would replace a working file with whatever it now holds.
        return outcome.failed(
            f"cannot restore {target}: its backup {entry.backup} does not match the "
            f"journal (sha256 {found}, recorded {old}); {target} left as it is"
        )
    if entry.old_mode is None or entry.old_uid is None or entry.old_gid is None:
        return outcome.failed(
            f"cannot restore {target}: the journal does not record its mode and owner; "
            f"{target} left as it is"
        )
    fsops.atomic_write(
        layout.root,
        real,
        backup.data,
        mode=entry.old_mode,
        uid=entry.old_uid,
        gid=entry.old_gid,
        dirs=_restore_dirs(layout),
    )
    return outcome.done(f"restored {target}")


def _revert_remove(layout: Layout, entry: RemoveFile) -> StepResult | None:
    """Put back a file an apply removed (``remove-file``), byte for byte, with its
    mode and owner; something else at its path since is left as it is."""
    real = Path(entry.real)
    target = entry.target
    keep = entry.keep
    state = fsops.read_file(layout.root, real)
    if state is not None:
        _drop_kept(layout, real, keep)
        if fsops.sha256(state.data) == entry.old_sha256:
            return None  # never removed, or already put back
        return outcome.left(f"left {target} as it is: a file was put there after that apply")
    if keep and fsops.restore_kept(layout.root, real, keep, entry.old_sha256):
        return outcome.done(f"put back {target}")
    backup = fsops.read_file(layout.root, layout.real(entry.backup))
    if backup is None or fsops.sha256(backup.data) != entry.old_sha256:
        return outcome.failed(
            f"cannot put back {target}: its backup {entry.backup} is missing or does "
            "not match the journal"
        )
    fsops.atomic_write(
        layout.root,
        real,
        backup.data,
        mode=entry.old_mode,
        uid=entry.old_uid,
        gid=entry.old_gid,
        dirs=_restore_dirs(layout),
    )
    return outcome.done(f"put back {target}")


def _fix_line(target: str) -> str:
    return (
        f"kept {target} as that apply left it: it replaced drift there (someone had "
        "changed it after an earlier apply), and undo never puts drift back"
    )


def _kept_line(target: str, others: list[str] | tuple[str, ...]) -> str:
    whose = ", ".join(others)
    return f"kept {target}: the setup whose state directory is {whose} still relies on it"


def _shared_line(decision: ledger.SharedDecision) -> StepResult:
    """One release decision of the host record, as the undo says it."""
    path = decision.path
    if decision.release is ledger.Release.STILL_MINE:
        return outcome.done(f"kept {path}: an earlier apply of this setup relies on it")
    if decision.release is ledger.Release.KEPT:
        return outcome.done(_kept_line(path, decision.others))
    if decision.release is ledger.Release.LEFT:
        return outcome.left(
            f"left {path} as it is: it changed after the last apply that planned it "
            "(no setup relies on it any more)"
        )
    if decision.before is None:
        return outcome.done(f"removed {path} (no setup relies on it any more)")
    return outcome.done(f"restored {path} as it was before the first setup planned it")


def drop_restore_points(layout: Layout, entries: list[Entry]) -> None:
    """After a commit: remove the restore points the steps left beside their targets
    (the account files' moved ``-`` backups go back where they were if still absent)."""
    for entry in entries:
        if isinstance(entry, Write | RemoveFile):
            _drop_kept(layout, Path(entry.real), entry.keep)
        elif isinstance(entry, AccountStep) and entry.files is not None:
            settle_kept_account_files(layout, entry.files)


def _revert_one(
    layout: Layout,
    entry: Entry,
    done_steps: Mapping[int, Mapping[str, str | None] | None],
    entries: list[Entry],
    last: Mapping[str, str | None] | None = None,
) -> StepResult | None:
    if isinstance(entry, Write):
        return _revert_write(layout, entry, last)
    if isinstance(entry, RemoveFile):
        return _revert_remove(layout, entry)
    if isinstance(entry, Mkdir):
        if fsops.remove_empty_dir(layout.root, Path(entry.real)):
            return outcome.done(f"removed directory {entry.target}")
        return None
    if isinstance(entry, CreateUser | CreateGroup | AddToGroup | SetShell):
        kept = account_undo.guard(layout, entry, entries)  # raises: retried next time
        if kept is not None:
            return outcome.done(kept)
        step = -1 if entry.step is None else entry.step
        new = entry.new if entry.new_known else done_steps.get(step)
        return revert_account_step(layout, entry, new)
    if isinstance(entry, RemoveFromGroup):
        line = account_undo.revert_step(layout, entry, entries)
        return outcome.done(line) if line else None
    if isinstance(entry, Acl):
        return _revert_acl(layout, entry, entries)
    if isinstance(entry, ApparmorLoad):
        return revert_load(layout, entry)
    return None


def _revert_acl(layout: Layout, entry: Acl, entries: list[Entry]) -> StepResult | None:
    """Take the group's ACL entries and setgid bits off the workspace, walking it by
    fd. Never ``setfacl --restore``: it follows symlinks the agent may have planted
    and would chmod/chown their targets as root."""
    saved = fsops.read_file(layout.root, layout.real(entry.backup))
    why = None
    if saved is None:
        why = f"its backup {entry.backup} is missing"
    else:
        recorded = entry.backup_sha256  # absent in journals of older versions
        if recorded is not None and fsops.sha256(saved.data) != recorded:
            why = f"its backup {entry.backup} does not match the journal"
    if why is not None or saved is None:
        return _strip_own_acls(layout, entry, entries, why or "")
    try:
        snapshot = json.loads(saved.data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        snapshot = None  # a getfacl backup from an older version
    if not isinstance(snapshot, dict) or snapshot.get("format") != users.ACL_SNAPSHOT_FORMAT:
        gid = users.group_gid(layout, LEGACY_WORKSPACE_GROUP)
        if gid is None:
            return None
        snapshot = {"gid": gid, "entries": {}}  # strip the group's entries everywhere
    top = fsops.open_dir(layout.root, layout.real(entry.target))
    if top is None:
        return None
    report = users.AclWalkReport()  # what has other hard links: never changed, counted
    try:
        changed = users.revoke_workspace(top, snapshot, report=report)
    finally:
        os.close(top)
    lines = [f"restored ACLs and setgid bits of {entry.target}"] if changed else []
    text = "; ".join(lines + report.lines(entry.target))
    return outcome.done(text) if text else None


def _own_groups(layout: Layout, entries: list[Entry]) -> dict[str, int]:
    """The groups this transaction created or put its agent in, that still exist."""
    names = [e.name for e in entries if isinstance(e, CreateGroup)]
    names += [e.group for e in entries if isinstance(e, AddToGroup)]
    found = {}
    for name in dict.fromkeys(names):
        gid = users.group_gid(layout, name)
        if gid is not None:
            found[name] = gid
    return found


def _strip_own_acls(layout: Layout, entry: Acl, entries: list[Entry], why: str) -> StepResult:
    """The ACL snapshot cannot be trusted: still take this setup's own group entries
    off every path of the workspace (the fallback), and say what stays (the setgid
    bits and group permission bits the apply set, which only the snapshot knew)."""
    target = entry.target
    groups = _own_groups(layout, entries)
    if not groups:
        return outcome.failed(
            f"could not undo the ACLs of {target}: {why}; the ACLs were left as they are"
        )
    top = fsops.open_dir(layout.root, layout.real(target))
    report = users.AclWalkReport()
    if top is not None:
        try:
            for gid in groups.values():
                users.revoke_workspace(top, {"gid": gid, "entries": {}}, report=report)
        finally:
            os.close(top)
    return outcome.left(
        "; ".join(
            [
                f"left the setgid bits and group permission bits of {target} as they are: "
                f"{why}; removed the ACL entries of group {', '.join(groups)} from it instead",
                *report.lines(target),
            ]
        )
    )


# The ops that are steps of an apply (everything else is the journal's bookkeeping).
STEP_OPS = (
    "write",
    "remove-file",
    "mkdir",
    "create-user",
    "create-group",
    "add-to-group",
    "remove-from-group",
    "set-shell",
    "acl",
    "apparmor-load",
)


def _olds(entries: list[Entry]) -> dict[str, str | None]:
    """The files the transaction's (pending) writes changed, with their old sha256."""
    return {e.target: e.old_sha256 for e in entries if isinstance(e, Write)}


def _release(
    layout: Layout, txn: str | None, entries: list[Entry]
) -> tuple[list[StepResult], set[str] | None]:
    """The host record's part of undoing ``txn``: its lines, and the shared paths it
    handled (None: the record could not be updated; the shared writes wait). A file
    whose journal write puts back its before-image is left to that write."""
    if txn is None:
        return [], set()
    try:
        decisions = ledger.release(layout, txn, _olds(entries))
    except (OSError, SetupError) as exc:
        return [outcome.failed(f"could not update the host record of setups: {exc}", exc)], None
    decisions = [d for d in decisions if d.release is not ledger.Release.JOURNAL]
    return [_shared_line(d) for d in decisions], {d.path for d in decisions}


def _left_file(entry: Entry) -> LeftFile | None:
    """The file a step that was left names, and why, from its kind (a write: changed
    since; a removal: a file put there since); None for other steps (the release
    records the shared files it left)."""
    if isinstance(entry, Write):
        return LeftFile(entry.target, LeftWhy.CHANGED, entry.backup)
    if isinstance(entry, RemoveFile):
        return LeftFile(entry.target, LeftWhy.PUT_THERE, entry.backup)
    return None


def revert(
    layout: Layout,
    entries: list[Entry],
    on_done: Callable[[Entry], None] | None = None,
    *,
    txn: str | None = None,
    last: Mapping[str, str | None] | None = None,
) -> list[StepResult]:
    """Undo ``entries`` (of transaction ``txn``) newest first; a result per thing
    restored, removed, left or failed. ``on_done(entry)`` is called for each step
    that did not fail (it is not retried)."""
    done, handled = _release(layout, txn, entries)
    left: list[LeftFile] = []
    # What each account step's tool left (recorded after it ran): undo restores the
    # account files byte for byte only when they are still exactly that.
    done_steps = {e.step: e.new for e in entries if isinstance(e, AccountsDone)}
    for entry in reversed(entries):
        if entry.op not in STEP_OPS:
            continue
        result: StepResult | None
        if isinstance(entry, Write) and handled is None:
            result = outcome.failed(
                f"could not undo {describe_entry(entry)}: the host record of setups "
                "could not be updated"
            )
        elif isinstance(entry, Write) and entry.target in (handled or set()):
            _drop_kept(layout, Path(entry.real), entry.keep)
            result = None  # the host record's release said what became of it
        else:
            try:
                result = _revert_one(layout, entry, done_steps, entries, last)
            except (OSError, SetupError) as exc:
                # Keep going: one step that cannot be reverted must not strand the rest.
                what = describe_entry(entry) or entry.op
                result = outcome.failed(f"could not undo {what}: {exc}", exc)
        if on_done is not None and not (result and result.failed):
            on_done(entry)
        if result:
            done.append(result)
            file = _left_file(entry) if result.outcome is Outcome.LEFT else None
            if file is not None:
                left.append(file)
    if txn is not None and left:
        # Recorded for a later audit and --status to explain (the release recorded the
        # shared ones). Best effort: the undo's own lines name them either way.
        with contextlib.suppress(OSError, SetupError):
            ledger.record_left(layout, txn, left)
    if txn is not None and handled is not None:
        with contextlib.suppress(OSError, SetupError):
            ledger.tidy(layout)
    return done


def preview(
    layout: Layout,
    txn: str,
    entries: list[Entry],
    last: Mapping[str, str | None] | None = None,
) -> list[str]:
    """What undoing ``entries`` of ``txn`` would do, in words: the host record's
    decisions (:func:`sandbox_setup.configure.ledger.release_plan`, which the run
    acts on) for the shared files, the journal's steps for the rest."""
    record = ledger.read_host_record(layout)
    record = ledger.as_found_by_undo_of(record, str(layout.state_dir), txn)
    decisions = ledger.release_plan(layout, record, txn, _olds(entries))
    decisions = [d for d in decisions if d.release is not ledger.Release.JOURNAL]
    handled = {d.path for d in decisions}
    lines = []
    for entry in reversed(entries):
        if isinstance(entry, Write) and entry.target in handled:
            continue
        if isinstance(entry, Write):
            line = _write_preview(layout, entry, last)
        else:
            line = describe_entry(entry)
        if line:
            lines.append(line)
    return [_shared_preview(d) for d in decisions] + lines


def _write_preview(
    layout: Layout, entry: Write, last: Mapping[str, str | None] | None
) -> str | None:
    """What undoing a write does, from :func:`write_decision` (the run's own)."""
    target = entry.target
    decision, others = write_decision(layout, entry, last)
    if decision is WriteUndo.NOTHING:
        return None
    if decision is WriteUndo.CHANGED:
        return f"leave {target} as it is: it changed after that apply"
    if decision is WriteUndo.KEPT_SHARED:
        return f"keep {target}: the setup whose state directory is {', '.join(others)} " + (
            "still relies on it"
        )
    if decision is WriteUndo.KEPT_FIX:
        return f"keep {target} as that apply left it: it replaced drift there"
    return describe_entry(entry)


def _shared_preview(decision: ledger.SharedDecision) -> str:
    """One release decision of the host record, as the preview says it."""
    path = decision.path
    if decision.release is ledger.Release.STILL_MINE:
        return f"keep {path}: an earlier apply of this setup relies on it"
    if decision.release is ledger.Release.KEPT:
        return (
            f"keep {path}: the setup whose state directory is {', '.join(decision.others)} "
            + "still relies on it"
        )
    if decision.release is ledger.Release.LEFT:
        return f"leave {path} as it is: it changed after the last apply that planned it"
    if decision.before is None:
        return f"remove {path} (no setup relies on it any more)"
    return f"restore {path} as it was before the first setup planned it"


def describe_entry(entry: Entry) -> str | None:
    """What undoing ``entry`` would do, in words (None for bookkeeping entries)."""
    if isinstance(entry, Write):
        verb = "remove" if entry.backup is None else "restore"
        return f"{verb} {entry.target}"
    if isinstance(entry, RemoveFile):
        return f"put back {entry.target}"
    if isinstance(entry, Mkdir):
        return f"remove directory {entry.target} if empty"
    if isinstance(entry, CreateUser):
        return f"remove user {entry.name}"
    if isinstance(entry, CreateGroup):
        return f"remove group {entry.name}"
    if isinstance(entry, AddToGroup):
        return f"remove {entry.user} from group {entry.group}"
    if isinstance(entry, RemoveFromGroup):
        return f"add {entry.user} back to group {entry.group}"
    if isinstance(entry, SetShell):
        return f"give {entry.user} back the shell {entry.old_shell or '(none)'}"
    if isinstance(entry, Acl):
        return f"restore ACLs of {entry.target}"
    if isinstance(entry, ApparmorLoad):
        return f"unload the AppArmor profile of {entry.target}"
    return None
