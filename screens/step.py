"""The base of every wizard step: Escape goes back, ``q`` quits, a footer shows keys."""

from __future__ import annotations

from typing import Generic, TypeVar

from textual.binding import Binding
from textual.screen import Screen

from screens.draft import Nav

ResultT = TypeVar("ResultT")


class StepScreen(Screen[ResultT | Nav], Generic[ResultT]):
    """A step returns its value with ``dismiss(value)`` or a :class:`Nav`."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("q", "quit_wizard", "Quit"),
    ]
    # Steps that cannot go back (the first, a running apply) turn this off.
    can_go_back = True
    # busy: work in progress, no going back; locked: not even quitting (an apply).
    busy = False
    locked = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":
            return self.can_go_back and not self.busy
        if action == "quit_wizard":
            return not self.locked
        return True

    def action_back(self) -> None:
        self.dismiss(Nav.BACK)

    def action_quit_wizard(self) -> None:
        self.dismiss(Nav.QUIT)
