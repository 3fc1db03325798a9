"""A form field: its label, its control, a hint, and its error right below it.

An invalid field is marked where it is: the ``invalid`` class on the field (the
stylesheet draws the control's left edge in the error colour) and the message,
starting with ✗ so it reads without colour, under the control. When the control
gets focus the screen scrolls the whole field into view, in the same frame, so its
label is never cut off above it (``DetailsScreen.set_focus``).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Label, Static


class Field(Vertical):
    """``label`` over ``control`` (and an optional ``hint``); :meth:`set_error`."""

    def __init__(self, label: str, control: Widget, hint: str = "", *, id: str) -> None:
        super().__init__(id=f"field-{id}", classes="field")
        self.label = label
        self.control = control
        self.hint = hint
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Label(self.label, classes="field-label")
        yield self.control
        if self.hint:
            yield Static(self.hint, classes="hint")
        yield Static("", classes="field-error")

    def set_error(self, message: str | None) -> None:
        self.error = message
        self.set_class(message is not None, "invalid")
        self.control.set_class(message is not None, "invalid")
        text = Text("✗ " + message) if message else Text("")
        self.query_one(".field-error", Static).update(text)

    def set_hint(self, hint: str) -> None:
        self.hint = hint
        found = self.query(".hint")
        if found:
            found.first(Static).update(hint)
