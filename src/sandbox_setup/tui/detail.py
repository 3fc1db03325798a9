"""The full text of one check or audit row: summary, detail, cause, remedy, diff.

A list row is one line cut at the terminal's width; this is where the rest of it
is read. ``c`` copies the remedy to the clipboard with OSC 52
(:meth:`textual.app.App.copy_to_clipboard`: the terminal, also over SSH, puts it
on the system clipboard where it supports that).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from sandbox_setup.tui.findings_view import MARK_STYLE, Row
from sandbox_setup.tui.widgets import ActionButton


def copy_remedy(screen: Screen[Any], row: Row) -> None:
    """Put ``row``'s remedy on the clipboard and say so (OSC 52)."""
    screen.app.copy_to_clipboard(row.remedy)
    screen.notify(
        f"The fix for {row.id} was sent to the clipboard (OSC 52; where the terminal allows it).",
        timeout=4,
    )


class DetailScreen(ModalScreen[None]):
    """One row in full; ↑/↓ scroll, ``c`` copies the fix, Escape closes."""

    BINDINGS = [
        Binding("escape", "close", "Close", key_display="Esc"),
        Binding("c", "copy_remedy", "Copy fix", key_display="c"),
        Binding("up", "scroll('up')", "Scroll", key_display="↑↓"),
        Binding("down", "scroll('down')", "Scroll", show=False),
        Binding("pageup", "scroll('page_up')", show=False),
        Binding("pagedown", "scroll('page_down')", show=False),
        Binding("q", "close", show=False),
        # The app's Ctrl+Q works here too (a priority binding); the footer says so.
        Binding("ctrl+q", "app.quit_wizard", "Quit", key_display="^q"),
    ]

    def __init__(self, row: Row) -> None:
        super().__init__()
        self.row = row

    def compose(self) -> ComposeResult:
        row = self.row
        heading = Text()
        heading.append(row.marker, style=MARK_STYLE.get(row.marker, "") or "bold")
        heading.append(f"  {row.id}", style="bold")
        if row.title and row.title != row.id:
            heading.append(f"  {row.title}")
        with Vertical(id="detail-box", classes="modal-box"):
            yield Static(heading, classes="modal-title", id="detail-title")
            with VerticalScroll(id="detail-body", can_focus=False):
                yield Static(row.body, id="detail-text")
            with Horizontal(classes="buttons"):
                yield ActionButton("Copy fix", id="copy", compact=True, disabled=not row.remedy)
                yield ActionButton("Close", id="close", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#close", ActionButton).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "copy_remedy":
            return bool(self.row.remedy)
        return True

    def action_close(self) -> None:
        self.dismiss(None)

    def action_copy_remedy(self) -> None:
        if self.row.remedy:
            copy_remedy(self, self.row)

    def action_scroll(self, where: str) -> None:
        body = self.query_one("#detail-body", VerticalScroll)
        {
            "up": body.scroll_up,
            "down": body.scroll_down,
            "page_up": body.scroll_page_up,
            "page_down": body.scroll_page_down,
        }[where](animate=False)

    @on(ActionButton.Pressed, "#copy")
    def _copy(self) -> None:
        self.action_copy_remedy()

    @on(ActionButton.Pressed, "#close")
    def _close(self) -> None:
        self.dismiss(None)
