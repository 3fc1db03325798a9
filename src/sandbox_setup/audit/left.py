"""What an undo left as it is: the files the host record keeps under ``left``
(:func:`sandbox_setup.configure.ledger.left_files`), each with why and what to do.

An undo never puts back a file someone changed since the apply it takes back; it
leaves it, names it, and records it (typed: which file, why, its copy from before).
The audit and ``--status`` read that record, so what was left is still explained
after the undo's own output is gone: :func:`left_views` decides the words from the
record's typed fields (never from the undo's lines), :func:`left_findings` makes them
audit findings. An entry is named while the file still holds what the undo left there.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from sandbox_setup.audit.model import AuditFinding, Severity
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure.ledger import LeftRecord, left_files
from sandbox_setup.configure.outcome import LeftWhy


@dataclass(frozen=True)
class LeftView:
    """One left file as the audit and ``--status`` say it."""

    path: str  # as the host knows it (under the root: the root's own path)
    where: str  # the path to look at and paste (``--root``: the real one)
    setup: str  # the state directory of the setup whose undo left it
    txn: str  # the apply that undo took back
    why: LeftWhy
    copy: str | None  # a copy of the file from before, where it still exists
    reason: str  # why it was left, in words
    todo: str  # what to do, in words (commands whole)


def _copy(layout: Layout, entry: LeftRecord) -> str | None:
    """The file's copy from before: the shared file's before-image (the host record's)
    or the journal's backup (in the state directory), if it is still there."""
    saved = entry.before.copy if entry.before is not None else entry.backup
    if saved is None:
        return None
    real = layout.real(PurePosixPath(saved))
    return str(real) if real.is_file() else None


def _reason(entry: LeftRecord) -> str:
    if entry.why is LeftWhy.PUT_THERE:
        return (
            f"apply {entry.txn} had removed it and a file was put there since, so its undo "
            "left that file as it is"
        )
    if entry.why is LeftWhy.SHARED_CHANGED:
        return (
            f"it changed after the last apply that planned it ({entry.txn}); no setup relies "
            "on it any more, and the undo left it as it is instead of putting back its "
            "state from before the first setup"
        )
    return (
        f"it changed after apply {entry.txn} wrote it, so the undo of that apply left it as "
        "it is (an undo never puts back a file someone changed since)"
    )


def _todo(entry: LeftRecord, where: str, copy: str | None) -> str:
    path = shlex.quote(where)
    if copy is not None:
        saved = shlex.quote(copy)
        what = (
            "its state before the first setup"
            if entry.why is LeftWhy.SHARED_CHANGED
            else "the file as it was before that apply"
        )
        return (
            f"{what} is saved at {copy}; compare them (diff -- {saved} {path}), then keep "
            f"yours or put that back (cp -- {saved} {path})"
        )
    created = entry.before is None if entry.why is LeftWhy.SHARED_CHANGED else entry.backup is None
    if created:
        return (
            "it did not exist before sandbox-setup wrote it: keep it if it is yours now, "
            f"else remove it (rm -- {path})"
        )
    return (
        "its copy from before is gone (the state directory was removed): keep it, or "
        "edit it by hand"
    )


def left_views(layout: Layout, *, setup: str | None = None) -> list[LeftView]:
    """The files undos left that still hold what was left there (``setup``: only
    those of the setup with that state directory, and the shared ones every setup
    relies on). Raises ``SetupError``/``OSError`` when the host record is unreadable."""
    views = []
    for entry in left_files(layout):
        if setup is not None and entry.setup != setup and entry.why is not LeftWhy.SHARED_CHANGED:
            continue
        where = str(layout.real(PurePosixPath(entry.path)))
        copy = _copy(layout, entry)
        reason, todo = _reason(entry), _todo(entry, where, copy)
        views.append(
            LeftView(entry.path, where, entry.setup, entry.txn, entry.why, copy, reason, todo)
        )
    return views


def left_findings(layout: Layout) -> list[AuditFinding]:
    """One finding per file an undo of this setup left (or a shared one), low: the host
    is not as it was before, but nothing of the setup's security rests on it."""
    try:
        views = left_views(layout, setup=str(layout.state_dir))
    except (SetupError, OSError) as exc:
        return [
            AuditFinding(
                id="audit.left.unreadable",
                severity=Severity.LOW,
                summary="what earlier undos left could not be read",
                detail=str(exc),
            )
        ]
    return [
        AuditFinding(
            id="audit.left",
            severity=Severity.LOW,
            summary=f"an undo left {view.where} as it is",
            detail=view.reason,
            remedy=view.todo,
        )
        for view in views
    ]
