"""``sandbox-setup`` with every undo and rollback line reworded: ``python
reworded_setup.py ARGS``. Tests only.

Each step result's text (:class:`~sandbox_setup.configure.outcome.StepResult`, what
an undo or a rollback prints and journals as ``left``) is rewritten as it is made: it
starts with ``cannot (reworded)`` and its own "could not", "cannot", "failed" and
"left" become other words. So a step that succeeded reads as a failure and one that
failed reads as done: any behaviour that went by the words would change, and the
fault tests compare (tests/faults/test_undo_reworded.py).
"""

from __future__ import annotations

import sys

from sandbox_setup.cli import main
from sandbox_setup.configure import outcome

MARK = "cannot (reworded)"
_SWAPS = (("could not", "did"), ("cannot", "did"), ("failed", "worked"), ("left", "kept"))


def reword(text: str) -> str:
    for old, new in _SWAPS:
        text = text.replace(old, new)
    return f"{MARK} {text}"


_made = outcome.StepResult.__init__


def _reworded(
    self: outcome.StepResult, kind: outcome.Outcome, text: str, errno: int | None = None
) -> None:
    _made(self, kind, reword(text), errno)


outcome.StepResult.__init__ = _reworded  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main())
