"""The status of the host, from the audit view (``s``): two tabs, Setup (what every setup
installed: agent, mode, workspaces, the claude shim, the network and its wall, the host
changes) and Sessions (running and recent sessions, the proxy's refusals by destination
with the command that allows a refused name): the same lines as ``sandbox-setup
--status`` (docs/status.md). A command stays one whole line (no re-wrap: the tab
scrolls sideways), so it can be copied whole.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from sandbox_setup.tui.widgets import ActionButton


class StatusScreen(ModalScreen[None]):
    """The host's status in two tabs; Escape closes."""

    BINDINGS = [
        Binding("escape", "close", "Close", key_display="Esc"),
        Binding("q", "close", show=False),
        Binding("ctrl+q", "app.quit_wizard", "Quit", key_display="^q"),
    ]

    def __init__(self, setup: str, sessions: str) -> None:
        super().__init__()
        self.setup_text = setup
        self.sessions_text = sessions

    def compose(self) -> ComposeResult:
        with Vertical(id="status-box", classes="modal-box"):
            yield Static(Text("Status of this host", style="bold"), classes="modal-title")
            with TabbedContent(id="status-tabs"):
                for name, text in (("setup", self.setup_text), ("sessions", self.sessions_text)):
                    with (
                        TabPane(name.title(), id=f"status-{name}"),
                        ScrollableContainer(classes="status-body"),
                    ):
                        yield Static(Text(text, no_wrap=True), id=f"status-{name}-text")
            with Horizontal(classes="buttons"):
                yield ActionButton("Close", id="close", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def action_close(self) -> None:
        self.dismiss(None)

    @on(ActionButton.Pressed, "#close")
    def _close(self) -> None:
        self.dismiss(None)
