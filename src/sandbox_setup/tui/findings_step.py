"""The base of the steps whose body is a list of findings: the host checks and the audit.

Both fill a :class:`~sandbox_setup.tui.findings_view.FindingList` from a thread
worker and offer the same things on it, handled here once: Enter opens a row in
full (:class:`~sandbox_setup.tui.detail.DetailScreen`), ``c`` copies its fix, and
Re-run (the ``#rerun`` button, or the step's ``rerun`` binding) starts the work
again, never while it runs (``busy``). A step defines :meth:`FindingsStep.action_rerun`.
"""

from __future__ import annotations

from typing import Generic

from textual import on

from sandbox_setup.tui.detail import DetailScreen, copy_remedy
from sandbox_setup.tui.findings_view import FindingList
from sandbox_setup.tui.step import ResultT, StepScreen
from sandbox_setup.tui.widgets import ActionButton


class FindingsStep(StepScreen[ResultT], Generic[ResultT]):
    """A step showing a :class:`FindingList` that a worker fills (``busy`` meanwhile)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "rerun":
            return not self.busy
        return super().check_action(action, parameters)

    def action_rerun(self) -> None:
        """Start the worker again (each step says how)."""
        raise NotImplementedError

    @on(ActionButton.Pressed, "#rerun")
    def _rerun(self) -> None:
        self.action_rerun()

    @on(FindingList.Open)
    def _open(self, message: FindingList.Open) -> None:
        self.app.push_screen(DetailScreen(message.row))

    @on(FindingList.CopyRemedy)
    def _copy(self, message: FindingList.CopyRemedy) -> None:
        copy_remedy(self, message.row)
