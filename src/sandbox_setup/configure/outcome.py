"""The typed result of one undo or rollback step (what the command renders).

Whether a step failed is decided by :class:`Outcome`, never by the words of its
line: ``DONE`` (reverted, or nothing was left to revert), ``LEFT`` (deliberately not
reverted, with why: the file changed since, drift an apply fixed, a backup that no
longer matches; final, undo exits 1), ``FAILED`` (the step could not run; it stays
in the journal and the next undo retries it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.Enum):
    DONE = "done"
    LEFT = "left"
    FAILED = "failed"


class LeftWhy(enum.Enum):
    """Why an undo left a file as it is (recorded in the host record, for the audit
    and ``--status`` to explain)."""

    CHANGED = "changed"  # changed after the apply that wrote it
    PUT_THERE = "put-there"  # the apply removed it; a file was put there since
    SHARED_CHANGED = "shared-changed"  # a shared file, changed after the last apply


@dataclass(frozen=True)
class LeftFile:
    """A file an undo step left as it is: which, why, and the journal's copy of it
    from before that apply (in the state directory; None: the apply created it)."""

    path: str
    why: LeftWhy
    backup: str | None = None


@dataclass(frozen=True)
class StepResult:
    """One line of an undo: what happened and, in words, what and why."""

    outcome: Outcome
    text: str

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.FAILED

    @property
    def left(self) -> bool:
        """Not undone: left on purpose or failed (either way undo exits 1)."""
        return self.outcome is not Outcome.DONE


def done(text: str) -> StepResult:
    return StepResult(Outcome.DONE, text)


def left(text: str) -> StepResult:
    return StepResult(Outcome.LEFT, text)


def failed(text: str) -> StepResult:
    return StepResult(Outcome.FAILED, text)


def any_failed(results: list[StepResult]) -> bool:
    return any(r.failed for r in results)
