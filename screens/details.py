"""Mode details: workspaces (validated), agent user, network, Claude's inner
sandbox strength (preset from the probes), settings scope, copying the login.

Only the fields that apply to the chosen mode are shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import (
    Button,
    Checkbox,
    Footer,
    Header,
    Input,
    Label,
    RadioButton,
    RadioSet,
    Static,
)

from screens.core import Core
from screens.draft import Details
from screens.step import StepScreen
from wizard.base.choices import InnerSandbox, Mode, Network, SettingsScope, values

INNER_HELP = {
    InnerSandbox.STRONG: "strong: Claude's own bwrap sandbox with a fresh /proc",
    InnerSandbox.WEAK: "weak: nested sandbox binds the outer /proc (enableWeakerNestedSandbox)",
    InnerSandbox.OFF: "off: no inner sandbox for Claude's Bash tool",
}


def fields_for(mode: Mode) -> set[str]:
    """Which fields the mode uses."""
    if mode is Mode.SANDBOX:
        return {"workspaces", "agent_user", "network", "inner", "scope", "copy_login"}
    if mode is Mode.USER:
        return {"workspaces", "agent_user", "inner", "scope", "copy_login"}
    return {"inner", "scope"}


NETWORK_CHOICES = values(Network)
ChoiceT = TypeVar("ChoiceT", bound=StrEnum)


def _radio(choices: Sequence[str], current: str, id: str) -> RadioSet:
    return RadioSet(
        *(RadioButton(choice, value=choice == current, id=f"{id}-{choice}") for choice in choices),
        id=id,
        classes="choice",
    )


class DetailsScreen(StepScreen[Details]):
    """Returns the filled :class:`Details` once every field is valid."""

    BINDINGS = [Binding("ctrl+n", "next", "Next", priority=True)]

    def __init__(self, core: Core, mode: Mode, details: Details, preset: InnerSandbox) -> None:
        super().__init__()
        self.core = core
        self.mode = mode
        self.details = details
        self.preset = preset
        self.fields = fields_for(mode)

    def compose(self) -> ComposeResult:
        d = self.details
        yield Header()
        # Not focusable itself: Tab goes field to field, each scrolled into view.
        with VerticalScroll(classes="step-body", id="details-form", can_focus=False):
            if "workspaces" in self.fields:
                yield Label("Workspaces: absolute directories, comma-separated", classes="field")
                yield Input(
                    ", ".join(str(w) for w in d.workspaces),
                    placeholder="/srv/project",
                    id="workspaces",
                    compact=True,
                )
            if "agent_user" in self.fields:
                yield Label(
                    "Agent user: created locked, no password"
                    if self.core.operator_is_root
                    else "Agent user: your own account or an existing one (not root)",
                    classes="field",
                )
                yield Input(d.agent_user, id="agent-user", compact=True)
            if "network" in self.fields:
                yield Label("Network inside the sandbox", classes="field")
                yield _radio(NETWORK_CHOICES, d.network, "network")
            if "inner" in self.fields:
                yield Label(
                    f"Claude's inner sandbox (the probes suggest {self.preset})", classes="field"
                )
                yield _radio(values(InnerSandbox), d.inner_sandbox, "inner")
                yield Static(INNER_HELP[d.inner_sandbox], id="inner-help", classes="hint")
            if "scope" in self.fields:
                yield Label(
                    "Claude settings scope (managed: root-owned, out of the agent's reach)",
                    classes="field",
                )
                yield _radio((SettingsScope.MANAGED, SettingsScope.USER), d.settings_scope, "scope")
            if "copy_login" in self.fields:
                yield Checkbox(
                    "Copy my Claude login to the agent user", d.copy_login, id="copy-login"
                )
            yield Label("Claude Code binary (empty: find `claude` on PATH)", classes="field")
            yield Input(
                str(d.claude or ""), placeholder="/usr/local/bin/claude", id="claude", compact=True
            )
        yield Static("", id="details-error", classes="error")
        with Horizontal(classes="buttons"):
            yield Button("Next", id="next", variant="primary", compact=True)
            yield Button("Back", id="back", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.mode.value} mode: details"
        first = self.query("Input, RadioSet")
        if first:
            first.first().focus()

    def _chosen(self, id: str, default: ChoiceT) -> ChoiceT:
        found = self.query(f"#{id}")
        if not found:
            return default
        pressed = self.query_one(f"#{id}", RadioSet).pressed_button
        return type(default)(str(pressed.label)) if pressed is not None else default

    def collect(self) -> tuple[Details | None, str | None, str | None]:
        """(details, error, id of the field at fault)."""
        d = self.details
        workspaces = d.workspaces
        if "workspaces" in self.fields:
            agent = self.query("#agent-user")
            typed_agent = (
                self.query_one("#agent-user", Input).value.strip() if agent else d.agent_user
            )
            workspaces, error = self.core.validate_workspaces(
                self.query_one("#workspaces", Input).value, self.mode, typed_agent
            )
            if error:
                return None, error, "workspaces"
            if not workspaces and self.mode is Mode.SANDBOX:
                return None, "sandbox mode needs at least one workspace directory", "workspaces"
        agent_user = d.agent_user
        if "agent_user" in self.fields:
            agent_user = self.query_one("#agent-user", Input).value.strip()
            error = self.core.validate_agent_user(agent_user, self.mode)
            if error:
                return None, error, "agent-user"
        copy_login = d.copy_login
        if "copy_login" in self.fields:
            copy_login = self.query_one("#copy-login", Checkbox).value
        claude, error = self.core.validate_claude(self.query_one("#claude", Input).value)
        if error:
            return None, error, "claude"
        details = Details(
            workspaces=workspaces,
            agent_user=agent_user,
            network=self._chosen("network", d.network),
            inner_sandbox=self._chosen("inner", d.inner_sandbox),
            settings_scope=self._chosen("scope", d.settings_scope),
            copy_login=copy_login,
            claude=claude,
        )
        return details, None, None

    def action_next(self) -> None:
        details, error, field = self.collect()
        if details is None:
            self.query_one("#details-error", Static).update(f"Cannot continue: {error}")
            if field:
                widget = self.query_one(f"#{field}")
                widget.focus(scroll_visible=False)
                # Centred, so the field's label above it stays in view.
                self.query_one("#details-form", VerticalScroll).scroll_to_center(
                    widget, animate=False
                )
            return
        self.dismiss(details)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_next()

    @on(Button.Pressed, "#next")
    def _next(self) -> None:
        self.action_next()

    @on(Button.Pressed, "#back")
    def _back(self) -> None:
        self.action_back()

    @on(RadioSet.Changed, "#inner")
    def _inner_changed(self, event: RadioSet.Changed) -> None:
        self.query_one("#inner-help", Static).update(
            INNER_HELP[InnerSandbox(str(event.pressed.label))]
        )
