"""Undo: revert the newest apply that is not yet reverted.

:func:`undo_last` reverts the newest transaction of the journal
(:mod:`sandbox_setup.configure.journal`) that is not yet reverted, committed or not,
and returns what it restored or removed. A file that changed again after the apply
(neither old nor new content) is left alone and reported. A backup is written back
only when it still has the sha256 the journal recorded.

Account steps are guarded by :mod:`sandbox_setup.configure.account_undo`: the agent's
processes are stopped first, and a group another setup still uses is kept.
"""

from __future__ import annotations

import os
from typing import Any

from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import account_undo, outcome
from sandbox_setup.configure.journal import (
    append_line,
    apply_lock,
    last_open,
    now,
    open_for_append,
)
from sandbox_setup.configure.outcome import StepResult
from sandbox_setup.configure.revert import revert


def undo_last(layout: Layout) -> list[StepResult]:
    """Revert the newest apply that is not yet reverted; [] when there is none."""
    with apply_lock(layout):
        found = last_open(layout)
        if found is None:
            return []
        last, entries, index = found
        steps = [e for e in entries if id(e) in index]
        fd = open_for_append(layout, create=False)
        try:

            def mark(entry: dict[str, Any]) -> None:
                # Durable at once: an undo killed half-way keeps what it did.
                append_line(fd, {"txn": last, "op": "step-undone", "step": index[id(entry)]})

            # The agent first: nothing of it may run while its access is taken away.
            done = [outcome.done(line) for line in account_undo.stop_agents(layout, steps)]
            done += revert(layout, entries, on_done=mark, txn=last) or [
                outcome.done(f"apply {last}: nothing was left to undo (now marked undone)")
            ]
            failed = [result.text for result in done if result.failed]
            # A step that failed is never marked done: the transaction stays open and
            # the next --undo retries it (every revert step is idempotent).
            closing: dict[str, Any] = (
                {"op": "undo-incomplete", "left": failed} if failed else {"op": "undone"}
            )
            append_line(fd, {"txn": last, **closing, "at": now()})
        finally:
            os.close(fd)
        return done
