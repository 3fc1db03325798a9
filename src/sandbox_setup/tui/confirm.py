"""The one confirmation the wizard asks: quitting while an apply runs.

An apply is never abandoned halfway (each step is journaled, a failure rolls
back): "quit" then means "quit as soon as it has finished or rolled back".
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from sandbox_setup.tui.widgets import ActionButton

QUIT_WHILE_APPLYING = (
    "An apply is running. It is never stopped halfway: every step is journaled and a "
    "failure rolls back what was done.\n\nQuit as soon as it has finished (or rolled back)?"
)


class ConfirmQuit(ModalScreen[bool]):
    """Returns True to quit when the apply is done; ``y``/``n``, Escape says no."""

    BINDINGS = [
        Binding("y", "answer(True)", "Quit when done"),
        Binding("n", "answer(False)", "Keep going"),
        Binding("escape", "answer(False)", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            yield Static(Text("Quit while applying?", style="bold"), classes="modal-title")
            yield Static(QUIT_WHILE_APPLYING, id="confirm-text")
            with Horizontal(classes="buttons"):
                yield ActionButton("Quit when done (y)", id="yes", compact=True)
                yield ActionButton("Keep going (n)", id="no", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", ActionButton).focus()

    def action_answer(self, quit_: bool) -> None:
        self.dismiss(quit_)

    @on(ActionButton.Pressed, "#yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(ActionButton.Pressed, "#no")
    def _no(self) -> None:
        self.dismiss(False)
