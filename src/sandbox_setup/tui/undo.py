"""Undo from the audit view (``u``): the same preview as ``sandbox-setup --undo
--dry-run`` (the same lines, computed by the same code), then, on "Undo", the last
apply taken back as ``--undo --yes`` does, with its lines. Nothing changes until the
operator presses Undo."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from sandbox_setup.tui.core import Core
from sandbox_setup.tui.widgets import ActionButton


class UndoScreen(ModalScreen[bool]):
    """Returns True when an undo ran (the audit is re-run), False when cancelled."""

    BINDINGS = [
        Binding("escape", "close", "Close", key_display="Esc"),
        Binding("ctrl+q", "app.quit_wizard", "Quit", key_display="^q"),
    ]

    class Undone(Message):
        def __init__(self, lines: list[str], clean: bool) -> None:
            super().__init__()
            self.lines = lines
            self.clean = clean

    def __init__(self, core: Core, preview: list[str]) -> None:
        super().__init__()
        self.core = core
        self.preview = preview
        self.ran = False
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical(id="undo-box", classes="modal-box"):
            yield Static(
                Text("Undo the last apply: this would", style="bold"), classes="modal-title"
            )
            with VerticalScroll(id="undo-body"):
                text = "\n".join(self.preview) or "Nothing to undo."
                yield Static(Text(text, no_wrap=True), id="undo-text")
            with Horizontal(classes="buttons"):
                yield ActionButton(
                    "Undo", id="undo", variant="error", compact=True, disabled=not self.preview
                )
                yield ActionButton("Cancel", id="cancel", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#cancel", ActionButton).focus()

    def action_close(self) -> None:
        if not self.busy:
            self.dismiss(self.ran)

    @on(ActionButton.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.action_close()

    @on(ActionButton.Pressed, "#undo")
    def _undo(self) -> None:
        if self.ran or self.busy or not self.preview:
            return
        self.busy = True
        self.query_one("#undo", ActionButton).disabled = True
        self.query_one("#undo-text", Static).update("Undoing…")
        self.run_undo()

    @work(thread=True, exclusive=True, group="undo", exit_on_error=False)
    def run_undo(self) -> None:
        try:
            lines, clean = self.core.undo_last()
        except Exception as exc:
            said = self.core.error_words(exc)
            self.post_message(self.Undone([f"The undo could not run: {said}"], False))
            return
        self.post_message(self.Undone(lines, clean))

    @on(Undone)
    def _undone(self, message: Undone) -> None:
        self.busy = False
        self.ran = True
        head = "Undone." if message.clean else "The undo did not finish cleanly (see below)."
        self.query_one("#undo-text", Static).update(
            Text("\n".join([head, *message.lines]), no_wrap=True)
        )
        cancel = self.query_one("#cancel", ActionButton)
        cancel.label = "Close"
        cancel.focus()
