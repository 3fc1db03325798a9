"""Form controls: Textual's, with the keys that matter in the footer and their
state shown by more than colour (● / ○ for options, X for a ticked box)."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.binding import Binding
from textual.widgets import Checkbox, Input, OptionList, RadioButton, RadioSet

from sandbox_setup.tui.widgets import MOVE


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
    """A one-line text field (compact); Enter goes on (the screen validates first).

    Focus puts the cursor at the end of what is there, never selects it all: a
    pre-filled value (``op-agent``, a saved answer) is kept when the first key is
    typed, not replaced by it."""

    BINDINGS = [Binding("enter", "submit", "Next", key_display="Enter")]

    def __init__(self, value: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("compact", True)
        kwargs.setdefault("select_on_focus", False)
        super().__init__(value, **kwargs)

    def on_focus(self, event: events.Focus) -> None:
        self.cursor_position = len(self.value)


class ChoiceList(OptionList):
    """A list to choose from: ↑/↓ move, Enter chooses."""

    BINDINGS = [
        Binding("up", "cursor_up", "Move", group=MOVE, key_display="↑"),
        Binding("down", "cursor_down", "Move", group=MOVE, key_display="↓"),
        Binding("enter", "select", "Choose", key_display="Enter"),
    ]
