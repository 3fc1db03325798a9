"""Mode details: workspaces, the agent account, the network, Claude's inner sandbox,
the AppArmor profile for bwrap (where the probes found Ubuntu's restriction), the
settings scope, the login, private files, variables, limits, the claude shim,
the Claude Code binary. Only the fields that apply to the chosen mode are shown.

Every field is validated by the core (the headless path's rules and messages, in
the wizard's words); all of them at once on Ctrl+N or Enter, each invalid one
marked where it is. Ctrl+N is an ordinary binding, not a priority one: a
priority binding runs before the keys typed just before it have reached the
field, and would validate what was there a moment earlier.

A mark says what was wrong with the answer it judged: once that answer changes
(or one judged with it: the agent and "Reuse", the network and its lists) the
mark goes, and Ctrl+N judges again; a ✗ never stays beside a new answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Checkbox, Footer, Input, RadioSet, Static

from sandbox_setup.base.answer_fields import ANSWER_FIELDS, AnswerField
from sandbox_setup.base.apparmor import PROFILE_FILE
from sandbox_setup.base.choices import (
    SCOPE_REACH,
    InnerSandbox,
    Mode,
    Network,
    SettingsScope,
    values,
)
from sandbox_setup.base.limits import Limits
from sandbox_setup.base.printable import printable_lines
from sandbox_setup.configure.answers import DEFAULT_WORKSPACE_MODE, Answers
from sandbox_setup.tui.controls import ChoiceButton, ChoiceSet, TextField, Toggle
from sandbox_setup.tui.core import Core
from sandbox_setup.tui.form import Field
from sandbox_setup.tui.step import StepScreen
from sandbox_setup.tui.widgets import ActionButton

INNER_HELP = {
    InnerSandbox.STRONG: "strong: Claude's own bwrap sandbox with a fresh /proc",
    InnerSandbox.WEAK: "weak: nested sandbox binds the outer /proc (enableWeakerNestedSandbox)",
    InnerSandbox.OFF: "off: no inner sandbox for Claude's Bash tool",
}
NETWORK_HELP = {
    Network.ALLOWLIST: "allowlist: Claude's endpoints and the domains below, through the "
    "launcher's proxy",
    Network.HOST: "host: the host's whole network, no filter",
    Network.NONE: "none: no network at all (Claude cannot reach its API)",
}
USER_LISTS_HINT = (
    "user mode: through the session's proxy where Landlock ABI >= 4 confines the network; "
    "below it the agent has the host's network anyway"
)
# Which fields each mode uses (ids as on the screen).
SEPARATE_AGENT = (
    "workspaces",
    "create-workspace",
    "new-ws-owner",
    "new-ws-mode",
    "agent-user",
    "reuse-account",
    "inner",
    "scope",
    "copy-login",
    "include-private",
    "pass-env",
    "tasks",
    "memory",
    "install-shim",
    "claude",
)
FIELDS = {
    Mode.SANDBOX: {*SEPARATE_AGENT, "network", "domains", "ports", "tmpfs"},
    # User mode has no network choice (the host's, narrowed by Landlock where ABI >= 4),
    # but its allowed domains and loopback ports (sandbox_setup.policy.network).
    Mode.USER: {*SEPARATE_AGENT, "domains", "ports"},
    Mode.UNSAFE: {"inner", "scope", "pass-env", "claude"},
}
# Fields judged together: a change to one clears the other's mark too.
JUDGED_WITH = {
    "agent-user": ("reuse-account", "workspaces", "new-ws-owner"),
    "create-workspace": ("workspaces", "new-ws-owner", "new-ws-mode"),
    "reuse-account": ("agent-user",),
    "network": ("domains", "ports"),
}
# Shown in the modes with an agent of its own, where the probes found the restriction
# (or the profile is on already): what it installs and what it weakens.
APPARMOR_FIELD = "apparmor-profile"
APPARMOR_HINT = (
    f"installs {PROFILE_FILE}: the probed bwrap (only it) may create user "
    "namespaces; any local user can run bwrap, so any user gets one through it"
)
# The Claude Code field, empty: what it means (never a path that looks like a value).
CLAUDE_PLACEHOLDER = "empty: the claude the checks found"
NEW_WORKSPACE_HINT = "the agent gets in by its group's ACLs; an undo removes it while empty"
ChoiceT = TypeVar("ChoiceT", bound=StrEnum)
# The tick boxes the form lays out by hand, in its own order (a declared one not among
# them is added at the end of the form).
PLACED = frozenset(
    (
        "reuse_account",
        "apparmor_bwrap_profile",
        "copy_login",
        "include_private",
        "create_workspaces",
        "install_claude_shim",
    )
)


def tick_boxes() -> tuple[AnswerField, ...]:
    """The answers that are a tick box on this step (their declarations)."""
    return tuple(f for f in ANSWER_FIELDS if f.tick is not None and f.form_id is not None)


def fields_for(mode: Mode) -> set[str]:
    """Which fields the mode uses."""
    return set(FIELDS[mode])


def _choices(choices: Sequence[str], current: str, id: str) -> ChoiceSet:
    return ChoiceSet(
        *(ChoiceButton(choice, choice == current, id=f"{id}-{choice}") for choice in choices),
        id=id,
        classes="choice",
    )


def _listed(items: Sequence[object]) -> str:
    return ", ".join(str(item) for item in items)


class DetailsScreen(StepScreen[Answers]):
    """Returns the filled :class:`~sandbox_setup.configure.answers.Answers` once every
    field is valid (the draft keeps of them what the mode holds)."""

    STEP = "details"
    BINDINGS = [Binding("ctrl+n", "next", "Next", key_display="^n")]

    def __init__(
        self,
        core: Core,
        mode: Mode,
        details: Answers,
        preset: InnerSandbox,
        claude_hint: str = "",
        apparmor: bool = False,
        claude_placeholder: str = CLAUDE_PLACEHOLDER,
    ) -> None:
        """``apparmor``: the probes found Ubuntu's AppArmor user-namespace restriction
        stopping bwrap, so the AppArmor profile is offered (as root, in the modes with an
        agent of its own)."""
        super().__init__()
        self.core = core
        self.mode = mode
        self.details = details
        self.preset = preset
        # What the answers leave to the defaults, as the fields show it.
        self.network = details.network or Network.ALLOWLIST
        self.inner = details.inner_sandbox or preset
        self.scope = details.settings_scope or SettingsScope.MANAGED
        self.limits = details.limits or Limits()
        self.claude_hint = claude_hint
        self.claude_placeholder = claude_placeholder
        self.fields = fields_for(mode) | {
            f.form_id or "" for f in tick_boxes() if f.key not in PLACED and mode in f.modes
        }
        offered = apparmor or details.apparmor_bwrap_profile
        if offered and core.operator_is_root and mode is not Mode.UNSAFE:
            self.fields.add(APPARMOR_FIELD)
        # Each control's value when the fields were last judged (Ctrl+N).
        self.judged: dict[str, object] = {}

    def _field(self, id: str, label: str, control: Widget, hint: str = "") -> Field | None:
        return Field(label, control, hint, id=id) if id in self.fields else None

    def _tick(self, key: str, hint: str = "") -> Field | None:
        """The tick box of the answer ``key``, as its declaration words it."""
        f = next(f for f in tick_boxes() if f.key == key)
        assert f.form_id is not None and f.title is not None and f.tick is not None
        box = Toggle(f.tick, bool(getattr(self.details, key)), id=f.form_id)
        return self._field(f.form_id, f.title, box, hint)

    def _all_fields(self) -> list[Widget | None]:
        d = self.details
        agent_label = (
            "Agent user: created locked, no password"
            if self.core.operator_is_root
            else "Agent user: your own account or an existing one (not root)"
        )
        allowlist = self.network is Network.ALLOWLIST or self.mode is Mode.USER
        user = self.mode is Mode.USER
        return [
            self._field(
                "workspaces",
                "Workspaces: absolute directories, comma-separated",
                TextField(_listed(d.workspaces), placeholder="/srv/project", id="workspaces"),
            ),
            self._create_field(),
            self._new_workspace_fields(),
            self._field("agent-user", agent_label, TextField(d.agent_user, id="agent-user")),
            self._tick("reuse_account"),
            self._field(
                "network",
                "Network inside the sandbox",
                _choices(values(Network), self.network, "network"),
                NETWORK_HELP[self.network],
            ),
            self._field(
                "domains",
                "Allowed domains beyond Claude's own (example.com, *.example.com, :PORT)",
                TextField(
                    _listed(d.allowed_domains),
                    placeholder="none",
                    id="domains",
                    disabled=not allowlist,
                ),
                USER_LISTS_HINT if user else "",
            ),
            self._field(
                "ports",
                "Loopback ports of the host the agent may connect to (127.0.0.1:PORT)"
                if user
                else "Loopback ports of the host, reachable inside at 127.0.0.1:PORT",
                TextField(
                    _listed(d.loopback_ports),
                    placeholder="none",
                    id="ports",
                    disabled=not allowlist,
                ),
            ),
            self._field(
                "inner",
                f"Claude's inner sandbox (the probes suggest {self.preset})",
                _choices(values(InnerSandbox), self.inner, "inner"),
                INNER_HELP[self.inner],
            ),
            self._tick("apparmor_bwrap_profile", APPARMOR_HINT),
            self._field(
                "scope",
                "Claude settings scope",
                _choices((SettingsScope.MANAGED, SettingsScope.USER), self.scope, "scope"),
                f"{self.scope}: {SCOPE_REACH[self.scope]}",
            ),
            self._tick("copy_login"),
            self._tick("include_private"),
            self._field(
                "pass-env",
                "Variables to pass to Claude beyond the defaults (names, comma-separated)",
                TextField(_listed(d.pass_env), placeholder="none", id="pass-env"),
            ),
        ]

    def _create_field(self) -> Field | None:
        """The offer to create a missing workspace: shown once a workspace typed does
        not exist (or when it was ticked before), so the usual form does not grow."""
        field = self._tick("create_workspaces", NEW_WORKSPACE_HINT)
        if field is not None:
            field.display = self.details.create_workspaces
        return field

    def _new_workspace_fields(self) -> Horizontal | None:
        """Owner and mode of a workspace the plan creates, side by side (shown while
        the offer is ticked)."""
        d = self.details
        owner = self._field(
            "new-ws-owner",
            "Its owner (never the agent)",
            TextField(d.workspace_owner or self.core.layout.operator.name, id="new-ws-owner"),
        )
        mode = self._field(
            "new-ws-mode",
            "Its mode (0750 keeps others out)",
            TextField(f"{d.workspace_mode or DEFAULT_WORKSPACE_MODE:04o}", id="new-ws-mode"),
        )
        if owner is None or mode is None:
            return None
        box = Horizontal(owner, mode, id="new-workspace")
        box.display = d.create_workspaces
        return box

    def _later_fields(self) -> list[Field | None]:
        d = self.details
        return [
            self._tick("install_claude_shim"),
            self._field(
                "claude",
                "Claude Code binary",
                TextField(str(d.claude or ""), placeholder=self.claude_placeholder, id="claude"),
                self.claude_hint,
            ),
            *(self._tick(f.key) for f in tick_boxes() if f.key not in PLACED),
        ]

    def _limit_fields(self) -> list[Field]:
        limits = self.limits
        found = [
            self._field("tasks", "Tasks", TextField(str(limits.tasks), id="tasks")),
            self._field("memory", "Memory (4G, 50%)", TextField(limits.memory, id="memory")),
            self._field("tmpfs", "Each tmpfs", TextField(limits.tmpfs, id="tmpfs")),
        ]
        return [f for f in found if f is not None]

    def compose(self) -> ComposeResult:
        yield self.step_bar(f"{self.mode.value} mode")
        # Not focusable itself: Tab goes field to field, each scrolled into view.
        with VerticalScroll(classes="step-body", id="details-form", can_focus=False):
            yield from (f for f in self._all_fields() if f is not None)
            limits = self._limit_fields()
            if limits:
                yield Static(
                    "Session limits: tasks (processes and threads), memory (a size or a "
                    "share of the RAM), the size of each tmpfs (/tmp, /run, /dev/shm)",
                    classes="field-label section",
                )
                with Horizontal(id="limits"):
                    yield from limits
            yield from (f for f in self._later_fields() if f is not None)
        yield Static("", id="details-error", classes="error")
        with Horizontal(classes="buttons"):
            yield ActionButton("Next", id="next", variant="primary", compact=True)
            yield ActionButton("Back", id="back", compact=True)
        yield Footer(compact=True, show_command_palette=False)

    def set_focus(
        self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False
    ) -> None:
        """Focus ``widget``; a form control's whole field (label, control, hint, error)
        is scrolled into view at once, in the same frame as the focus. Textual's own
        scroll comes a frame later and animated, to the centre (Tab showed the focus
        below the form, then jumped twice: typed blind at 80x24), then the field's."""
        field = next((a for a in getattr(widget, "ancestors", ()) if isinstance(a, Field)), None)
        ours = scroll_visible and field is not None and widget is not self.focused
        if ours and field is not None and widget is not None and widget.focusable:
            self.query_one("#details-form", VerticalScroll).scroll_to_widget(
                field, animate=False, immediate=True
            )
        super().set_focus(widget, scroll_visible and not ours, from_app_focus)

    def on_mount(self) -> None:
        form = self.query_one("#details-form", VerticalScroll)
        first = form.query("Input, RadioSet, Checkbox")
        if first:
            first.first().focus(scroll_visible=False)
        form.scroll_home(animate=False)

    # -- reading the fields ---------------------------------------------
    def _text(self, id: str, default: str = "") -> str:
        found = self.query(f"#{id}")
        return self.query_one(f"#{id}", Input).value if found else default

    def _flag(self, id: str, default: bool) -> bool:
        found = self.query(f"#{id}")
        return bool(self.query_one(f"#{id}", Toggle).value) if found else default

    def _chosen(self, id: str, default: ChoiceT) -> ChoiceT:
        if not self.query(f"#{id}"):
            return default
        pressed = self.query_one(f"#{id}", RadioSet).pressed_button
        return type(default)(str(pressed.label)) if pressed is not None else default

    def collect(self) -> tuple[Answers | None, dict[str, str]]:
        """(details, {field id: error}); details is None when any field is invalid."""
        d = self.details
        errors: dict[str, str] = {}
        agent_user = self._text("agent-user", d.agent_user).strip()
        reuse = self._flag("reuse-account", d.reuse_account)
        workspaces = d.workspaces
        create = self._flag("create-workspace", d.create_workspaces)
        new_owner, new_mode = d.workspace_owner, d.workspace_mode
        if "workspaces" in self.fields:
            workspaces, error = self.core.validate_workspaces(
                self._text("workspaces"), self.mode, agent_user, create
            )
            if error is not None and not create:
                self._offer_creation(agent_user)
            if error is None and not workspaces and self.mode is Mode.SANDBOX:
                error = "sandbox mode needs at least one workspace directory"
            if error:
                errors["workspaces"] = error
        if create and "new-ws-owner" in self.fields:
            owner, mode, error, at = self.core.validate_new_workspace(
                self._text("new-ws-owner"), self._text("new-ws-mode"), self.mode, agent_user
            )
            new_owner, new_mode = owner, mode
            if error:
                errors[at or "new-ws-owner"] = error
        if "agent-user" in self.fields:
            error, at = self.core.validate_agent_user(agent_user, self.mode, reuse)
            if error:
                errors[at or "agent-user"] = error
        network = self._chosen("network", self.network)
        domains, ports = d.allowed_domains, d.loopback_ports
        if "network" in self.fields:
            # The domain and port fields are off (greyed) without the allowlist.
            allowlist = network is Network.ALLOWLIST
            domains, ports, error, at = self.core.validate_network(
                self.mode,
                network,
                self._text("domains") if allowlist else "",
                self._text("ports") if allowlist else "",
            )
            if error:
                errors[at or "domains"] = error
        elif "domains" in self.fields:
            # User mode: no network choice; Landlock's network wall takes the lists.
            domains, ports, error, at = self.core.validate_network(
                self.mode, Network.HOST, self._text("domains"), self._text("ports")
            )
            if error:
                errors[at or "domains"] = error
        pass_env = d.pass_env
        if "pass-env" in self.fields:
            pass_env, error = self.core.validate_pass_env(self._text("pass-env"), self.mode)
            if error:
                errors["pass-env"] = error
        limits: Limits | None = self.limits
        if "tasks" in self.fields:
            limits, error, at = self.core.validate_limits(
                self._text("tasks"), self._text("memory"), self._text("tmpfs", self.limits.tmpfs)
            )
            if error:
                errors[at or "tasks"] = error
        claude, error = self.core.validate_claude(self._text("claude"))
        if error:
            errors["claude"] = error
        if errors or limits is None:
            return None, errors
        ticked: dict[str, Any] = {
            f.key: self._flag(f.form_id or "", getattr(d, f.key)) for f in tick_boxes()
        }
        return (
            replace(
                d,
                mode=self.mode,
                workspaces=workspaces,
                agent_user=agent_user,
                network=network,
                allowed_domains=domains,
                loopback_ports=ports,
                inner_sandbox=self._chosen("inner", self.inner),
                settings_scope=self._chosen("scope", self.scope),
                pass_env=pass_env,
                limits=limits,
                claude=claude,
                workspace_owner=new_owner if create else None,
                workspace_mode=new_mode if create else None,
                **ticked,
            ),
            {},
        )

    def _offer_creation(self, agent_user: str) -> None:
        """Show the offer to create a workspace when all that is wrong with the typed
        ones is that some do not exist (judged again as if creating: no words read)."""
        _paths, error = self.core.validate_workspaces(
            self._text("workspaces"), self.mode, agent_user, True
        )
        found = self.query("#field-create-workspace")
        if error is None and found:
            found.first().display = True

    @on(Checkbox.Changed, "#create-workspace")
    def _create_changed(self, event: Checkbox.Changed) -> None:
        found = self.query("#new-workspace")
        if found:
            found.first().display = bool(event.value)

    @staticmethod
    def _value(control: Widget) -> object:
        if isinstance(control, Input):
            return control.value
        if isinstance(control, RadioSet):
            return control.pressed_index
        if isinstance(control, Checkbox):
            return control.value
        return None

    def _say_errors(self) -> Field | None:
        """The line under the form: what the first marked field says (and how many
        are marked), or nothing once none is. Returns that field."""
        marked = [f for f in self.query(Field) if f.error is not None]
        line = self.query_one("#details-error", Static)
        if not marked:
            line.update("")
            return None
        more = f" ({len(marked)} fields need attention)" if len(marked) > 1 else ""
        # The operator's own words come back in the error: text, never markup.
        line.update(Text(f"Cannot continue{more}: {printable_lines(marked[0].error or '')}"))
        return marked[0]

    def action_next(self) -> None:
        details, errors = self.collect()
        self.judged = {}
        for field in self.query(Field):
            id = field.control.id or ""
            self.judged[id] = self._value(field.control)
            field.set_error(errors.get(id))
        first = self._say_errors()
        if details is None:
            assert first is not None
            first.control.focus(scroll_visible=False)
            self.call_after_refresh(first.scroll_visible, animate=False)
            return
        self.dismiss(details)

    @on(Input.Changed)
    @on(Checkbox.Changed)
    @on(RadioSet.Changed)
    def _answer_changed(self, event: Input.Changed | Checkbox.Changed | RadioSet.Changed) -> None:
        id = event.control.id or ""
        if id not in self.judged or self._value(event.control) == self.judged[id]:
            return  # not judged yet, or still the judged answer (a late message)
        cleared = (id, *JUDGED_WITH.get(id, ()))
        for field in self.query(Field):
            if field.control.id in cleared and field.error is not None:
                field.set_error(None)
        self._say_errors()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_next()

    @on(ActionButton.Pressed, "#next")
    def _next(self) -> None:
        self.action_next()

    @on(ActionButton.Pressed, "#back")
    def _back(self) -> None:
        self.action_back()

    @on(RadioSet.Changed, "#inner")
    def _inner_changed(self, event: RadioSet.Changed) -> None:
        self.query_one("#field-inner", Field).set_hint(
            INNER_HELP[InnerSandbox(str(event.pressed.label))]
        )

    @on(RadioSet.Changed, "#scope")
    def _scope_changed(self, event: RadioSet.Changed) -> None:
        scope = str(event.pressed.label)
        self.query_one("#field-scope", Field).set_hint(f"{scope}: {SCOPE_REACH[scope]}")

    @on(RadioSet.Changed, "#network")
    def _network_changed(self, event: RadioSet.Changed) -> None:
        network = Network(str(event.pressed.label))
        self.query_one("#field-network", Field).set_hint(NETWORK_HELP[network])
        for id in ("domains", "ports"):
            self.query_one(f"#{id}", Input).disabled = network is not Network.ALLOWLIST
