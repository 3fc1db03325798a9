"""``?`` / F1: every key of the screen underneath, read from its live bindings.

The list is what Textual would dispatch right now (the focused widget's keys, the
screen's, the app's), so it cannot drift from the bindings it describes; keys
Textual itself handles without a binding (typing, Tab between fields) are named
in a short section of their own.
"""

from __future__ import annotations

import re
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from sandbox_setup.tui.widgets import ActionButton

# Keys that work everywhere without being one screen's binding.
ALWAYS = (
    ("Tab / Shift+Tab", "next / previous field or button"),
    ("↑ ↓", "move in a list; scroll"),
    ("Enter", "choose, press, or go on from a text field"),
    ("Space", "choose an option, tick a box"),
    ("Ctrl+P", "the command palette: every action of this screen by name"),
    ("Ctrl+Q Ctrl+C", "quit (asks first only while an apply runs)"),
)


def screen_keys(screen: Screen[Any]) -> list[tuple[str, str]]:
    """(keys, what they do) for every binding with a description that is active on
    ``screen`` now, one row per description ("↑ ↓  Move"), the footer's first."""
    shown: dict[str, list[str]] = {}
    more: dict[str, list[str]] = {}
    app = screen.app
    for active in screen.active_bindings.values():
        binding = active.binding
        if not binding.description or not active.enabled:
            continue
        # The footer's keys first, then the rest (Home, End, PgUp in a list...).
        keys = (shown if binding.show else more).setdefault(binding.description, [])
        display = app.get_key_display(binding)
        if display not in keys:
            keys.append(display)
    rows = [(" ".join(keys), what) for what, keys in shown.items()]
    return rows + [(" ".join(keys), what) for what, keys in more.items() if what not in shown]


def screen_name(screen: Screen[Any]) -> str:
    """The name of ``screen`` as the operator reads it: a step's name in the step bar
    (``STEP``: "path", "checks"), else its class name in words ("finding detail")."""
    step = getattr(screen, "STEP", None)
    if isinstance(step, str) and step:
        return step
    name = type(screen).__name__.removesuffix("Screen")
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return " ".join(word.lower() for word in words) or "screen"


def help_table(keys: list[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, what in keys:
        table.add_row(key, what)
    return table


class HelpScreen(ModalScreen[None]):
    """The keys of the screen below; Escape, Enter, ``?`` or F1 close it."""

    BINDINGS = [
        Binding("escape", "close", "Close", key_display="Esc"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("f1", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, keys: list[tuple[str, str]], title: str) -> None:
        super().__init__()
        self.keys = keys
        self.heading = title

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="modal-box"):
            yield Static(Text(f"Keys: {self.heading}", style="bold"), classes="modal-title")
            with VerticalScroll(id="help-body", can_focus=False):
                yield Static(help_table(self.keys), id="help-keys")
                yield Static(Text("Everywhere", style="bold"), classes="section")
                yield Static(help_table(list(ALWAYS)), id="help-always")
            yield ActionButton("Close", id="close", compact=True)

    def on_mount(self) -> None:
        self.query_one("#close", ActionButton).focus()

    def action_close(self) -> None:
        self.dismiss(None)

    @on(ActionButton.Pressed, "#close")
    def _close(self) -> None:
        self.dismiss(None)
