"""The wizard's small widgets: the step indicator, and Textual's controls with the
keys that matter shown in the footer and their state shown by more than colour.

A control's footer keys are its own bindings with ``show=True`` (the footer shows
the focused widget's bindings first), so every screen's footer says how to move,
choose, select and toggle where the focus is.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Button, Checkbox, Input, OptionList, RadioButton, RadioSet, Static

# The wizard's steps, in order (the step indicator's words).
STEP_NAMES = ("welcome", "checks", "path", "details", "review", "apply", "done")
MOVE = Binding.Group("Move", compact=True)
SCROLL = Binding.Group("Scroll", compact=True)


class StepBar(Static):
    """One line on top: the wizard's name, its steps (done ✓, current ●, to come ○,
    so it reads without colour) and what this screen is about, as room allows."""

    DEFAULT_CSS = """
    StepBar {
        dock: top;
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    """

    def __init__(self, step: str | None, context: str = "") -> None:
        super().__init__(id="step-bar")
        self.step = step
        self.context = context

    def set_context(self, context: str) -> None:
        self.context = context
        self.refresh()

    def steps_text(self) -> Text:
        text = Text()
        if self.step is None:  # a screen outside the wizard's steps (the audit)
            text.append(self.context, style="bold")
            return text
        current = STEP_NAMES.index(self.step)
        for index, name in enumerate(STEP_NAMES):
            if index:
                text.append(" ")
            if index < current:
                text.append("✓" + name, style="dim")
            elif index == current:
                text.append("●" + name, style="bold reverse")
            else:
                text.append("○" + name)
        return text

    def render(self) -> Text:
        steps = self.steps_text()
        width = self.size.width - 2
        text = Text(no_wrap=True, overflow="ellipsis")
        if len(steps) + len("sandbox-setup  ") <= width:
            text.append("sandbox-setup  ", style="bold")
        text.append_text(steps)
        if self.step is not None and self.context and len(text) + len(self.context) + 3 <= width:
            text.append("  " + self.context, style="italic")
        return text


class ChoiceButton(RadioButton):
    """A radio option: ● when chosen, ○ when not (not only a colour)."""

    def __init__(self, label: str, value: bool = False, id: str | None = None) -> None:
        super().__init__(label, value, id=id)
        self.BUTTON_INNER = "●" if value else "○"

    def watch_value(self) -> None:
        self.BUTTON_INNER = "●" if self.value else "○"
        super().watch_value()
        self.refresh()


class ChoiceSet(RadioSet):
    """A row of options; ←/→ move, Space chooses. The highlighted option starts
    on the chosen one (Textual's starts on the first, which then disagrees)."""

    BINDINGS = [
        Binding("left", "previous_button", "Move", group=MOVE, key_display="←"),
        Binding("right", "next_button", "Move", group=MOVE, key_display="→"),
        Binding("space", "toggle_button", "Choose", key_display="Space"),
        Binding("enter", "toggle_button", "Choose", show=False),
        Binding("up", "previous_button", show=False),
        Binding("down", "next_button", show=False),
    ]

    def on_mount(self) -> None:
        # After RadioSet's own mount handler, which highlights the first option.
        self.call_later(self._highlight_pressed)

    def _highlight_pressed(self) -> None:
        if self.pressed_index >= 0:
            self._selected = self.pressed_index


class Toggle(Checkbox):
    """A checkbox showing X when ticked and nothing when not; Space toggles."""

    BINDINGS = [
        Binding("space", "toggle_button", "Toggle", key_display="Space"),
        Binding("enter", "toggle_button", "Toggle", show=False),
    ]

    def __init__(self, label: str, value: bool = False, id: str | None = None) -> None:
        super().__init__(label, value, id=id)
        self.BUTTON_INNER = "X" if value else " "

    def watch_value(self) -> None:
        self.BUTTON_INNER = "X" if self.value else " "
        super().watch_value()
        self.refresh()


class TextField(Input):
    """A one-line text field (compact); Enter goes on (the screen validates first)."""

    BINDINGS = [Binding("enter", "submit", "Next", key_display="Enter")]

    def __init__(self, value: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("compact", True)
        super().__init__(value, **kwargs)


class ActionButton(Button):
    """A button that names Enter in the footer."""

    BINDINGS = [Binding("enter", "press", "Press", key_display="Enter")]


class ChoiceList(OptionList):
    """A list to choose from: ↑/↓ move, Enter chooses."""

    BINDINGS = [
        Binding("up", "cursor_up", "Move", group=MOVE, key_display="↑"),
        Binding("down", "cursor_down", "Move", group=MOVE, key_display="↓"),
        Binding("enter", "select", "Choose", key_display="Enter"),
    ]


class ReadingPane(VerticalScroll):
    """A long text to read with the keyboard: ↑/↓ and PgUp/PgDn scroll it."""

    BINDINGS = [
        Binding("up", "scroll_up", "Scroll", group=SCROLL, key_display="↑"),
        Binding("down", "scroll_down", "Scroll", group=SCROLL, key_display="↓"),
        Binding("pageup", "page_up", "Page", show=False),
        Binding("pagedown", "page_down", "Page", show=False),
    ]
