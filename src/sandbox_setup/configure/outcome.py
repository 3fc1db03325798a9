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
    """One line of an undo: what happened and, in words, what and why; for a step
    that failed on an OSError, its errno (what code decides by, never the words)."""

    outcome: Outcome
    text: str
    errno: int | None = None

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


def failed(text: str, exc: BaseException | None = None) -> StepResult:
    return StepResult(Outcome.FAILED, text, errno_of(exc))


def errno_of(exc: BaseException | None) -> int | None:
    """The errno of ``exc`` or of the OSError it was raised from (a SetupError wraps
    one with ``raise ... from``); None when no OSError is in the chain."""
    seen = 0
    while exc is not None and seen < 8:  # a bounded walk: chains are short
        if isinstance(exc, OSError) and exc.errno is not None:
            return exc.errno
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def any_failed(results: list[StepResult]) -> bool:
    return any(r.failed for r in results)
