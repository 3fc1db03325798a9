"""Undo: revert the newest apply that is not yet reverted.

:func:`undo_last` reverts the newest transaction of the journal
(:mod:`sandbox_setup.configure.journal`) that is not yet reverted, committed or not,
and returns what it restored or removed. A file that changed again after the apply
(neither old nor new content) is left alone and reported. A backup is written back
only when it still has the sha256 the journal recorded.

Account steps are guarded by :mod:`sandbox_setup.configure.accounts.account_undo`: the agent's
processes are stopped first, and a group another setup still uses is kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import outcome
from sandbox_setup.configure.accounts import account_undo
from sandbox_setup.configure.journal import (
    append_line,
    apply_lock,
    last_open,
    now,
    open_for_append,
)
from sandbox_setup.configure.journal.entries import Entry
from sandbox_setup.configure.outcome import Outcome, StepResult
from sandbox_setup.configure.revert import revert


def undo_last(layout: Layout, *, last: Mapping[str, str | None] | None = None) -> list[StepResult]:
    """Revert the newest apply that is not yet reverted; [] when there is none.
    ``last`` (``--undo --all``): per file, what this setup's applies last left it as
    (:func:`~sandbox_setup.configure.journal.last_left`, taken before the first undo):
    a file still so is the setup's own, whichever apply wrote it.

    Without a state directory there is nothing to undo, and none is created (the lock
    lives in it)."""
    if not os.path.lexists(layout.real(layout.state_dir)):
        return []
    with apply_lock(layout):
        found = last_open(layout)
        if found is None:
            return []
        txn, entries, index = found
        steps = [e for e in entries if id(e) in index]
        fd = open_for_append(layout, create=False)
        try:

            def mark(entry: Entry) -> None:
                # Durable at once: an undo killed half-way keeps what it did.
                append_line(fd, {"txn": txn, "op": "step-undone", "step": index[id(entry)]})

            # The agent first: nothing of it may run while its access is taken away.
            done = [outcome.done(line) for line in account_undo.stop_agents(layout, steps)]
            done += revert(layout, entries, on_done=mark, txn=txn, last=last) or [
                outcome.done(f"apply {txn}: nothing was left to undo (now marked undone)")
            ]
            failed = [result.text for result in done if result.failed]
            left = [result.text for result in done if result.outcome is Outcome.LEFT]
            # A step that failed is never marked done: the transaction stays open and
            # the next --undo retries it (every revert step is idempotent). What was
            # left on purpose is recorded with the undo, for a later audit to explain.
            closing: dict[str, object] = (
                {"op": "undo-incomplete", "left": failed}
                if failed
                else {"op": "undone", **({"left": left} if left else {})}
            )
            append_line(fd, {"txn": txn, **closing, "at": now()})
        finally:
            os.close(fd)
        return done
