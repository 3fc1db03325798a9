"""The base of every wizard step: the step indicator, Escape goes back, quitting.

Quitting is the app's (``ctrl+q``, ``ctrl+c``, ``q``; ``SetupApp.action_quit_wizard``):
it asks the step on top to end with :data:`Nav.QUIT`, or, while the step is
``locked`` (an apply is running), asks first and ends it once the work is done.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

from textual.binding import Binding
from textual.screen import Screen

from sandbox_setup.tui.draft import Nav
from sandbox_setup.tui.widgets import StepBar

ResultT = TypeVar("ResultT")


class StepScreen(Screen[ResultT | Nav], Generic[ResultT]):
    """A step returns its value with ``dismiss(value)`` or a :class:`Nav`."""

    BINDINGS = [
        Binding("escape", "back", "Back", key_display="Esc"),
        Binding("tab", "app.focus_next", "Field", key_display="Tab"),
        Binding("shift+tab", "app.focus_previous", show=False),
        Binding("q", "app.quit_wizard", "Quit", show=False),
    ]
    # Each step focuses its first control itself, without scrolling: Textual's
    # auto focus happens before the layout and scrolls a form's first field to
    # the top, its label out of view.
    AUTO_FOCUS = ""
    # Which step of the indicator this is (None: a screen outside the steps).
    STEP: ClassVar[str | None] = None
    # Steps that cannot go back (the first, a running apply) turn this off.
    can_go_back = True
    # busy: work in progress, no going back; locked: quitting must wait (an apply).
    busy = False
    locked = False

    def step_bar(self, context: str = "") -> StepBar:
        return StepBar(self.STEP, context)

    def set_context(self, context: str) -> None:
        """What this screen is about, beside the steps (as room allows)."""
        self.query_one(StepBar).set_context(context)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return self.can_go_back and not self.busy
        return True

    def action_back(self) -> None:
        self.dismiss(Nav.BACK)

    def quit_now(self) -> None:
        """End the step with :data:`Nav.QUIT` (the app calls this; never while locked)."""
        self.dismiss(Nav.QUIT)

    def quit_when_done(self) -> None:
        """Quit once the locked work has finished (a locked step overrides this)."""
        self.quit_now()
