"""The one seam between the screens and the core: a typed :class:`Core` protocol.

Screens never import the probes, the plan, the apply, the audit or the rules of
``sandbox_setup.policy`` themselves (every field is validated here, by the headless
path's rules, and every message comes in the wizard's words, never a CLI flag);
they get a ``Core`` and call it (from thread workers: every method may block).
:class:`sandbox_setup.commands.interactive.InteractiveCore` is the real one; tests hand
in one with fixed findings, plans and audits. Every value crossing the seam is
a real core type (:class:`~sandbox_setup.checks.model.Report`,
:class:`~sandbox_setup.configure.plan.Plan`, :class:`~sandbox_setup.configure.apply.ApplyResult`,
:class:`~sandbox_setup.audit.model.AuditReport`),
so a renamed field is a type error here, not a blank row on a screen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Protocol

from sandbox_setup.base.choices import InnerSandbox, Mode, Network, SettingsScope
from sandbox_setup.base.limits import Limits
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Report

if TYPE_CHECKING:
    from sandbox_setup.audit.model import AuditReport
    from sandbox_setup.configure.actions import Action
    from sandbox_setup.configure.answers import Answers
    from sandbox_setup.configure.apply import ApplyResult
    from sandbox_setup.configure.plan import Blocker, Plan

FindingCallback = Callable[[Finding], object]
# (log line, whether an action just finished)
ProgressCallback = Callable[[str, bool], object]


class Core(Protocol):
    """What the wizard asks of the core, for one target root."""

    @property
    def layout(self) -> Layout: ...

    @property
    def operator_is_root(self) -> bool: ...

    @property
    def pending(self) -> list[tuple[str, str]]:
        """(id, title) of every check, shown as "running" until its finding arrives."""
        ...

    def existing_setup(self) -> bool: ...

    def other_setups(self) -> list[str]:
        """The state directories of the host's other setups (the host-wide record)."""
        ...

    def applies_in_effect(self) -> int:
        """How many applies of this setup an undo could take back (after an apply: >= 1)."""
        ...

    def run_checks(self, on_finding: FindingCallback) -> Report: ...

    def mode_blocker(self, report: Report, mode: Mode) -> Blocker | None: ...

    def inner_sandbox_preset(self, report: Report, mode: Mode) -> InnerSandbox: ...

    def default_settings_scope(self, mode: Mode) -> SettingsScope: ...

    def apparmor_restricted(self, report: Report) -> bool:
        """Did the probes find Ubuntu's AppArmor user-namespace restriction stopping
        bwrap? (Then the details offer the AppArmor profile for the probed bwrap.)"""
        ...

    def validate_workspaces(
        self, text: str, mode: Mode, agent_user: str, create: bool = False
    ) -> tuple[tuple[PurePosixPath, ...], str | None]:
        """(paths, error); ``create``: a missing one is created by the plan."""
        ...

    def validate_new_workspace(
        self, owner: str, mode_text: str, mode: Mode, agent_user: str
    ) -> tuple[str, int, str | None, str | None]:
        """(owner, mode, error, field at fault: "new-ws-owner" or "new-ws-mode") of the
        workspaces the plan creates."""
        ...

    def validate_agent_user(
        self, name: str, mode: Mode, reuse: bool = False
    ) -> tuple[str | None, str | None]:
        """(why ``name`` cannot be the agent (an existing account: the reasons it was
        refused), the field at fault: "agent-user" or "reuse-account"), or (None, None)."""
        ...

    def validate_claude(self, text: str) -> tuple[PurePosixPath | None, str | None]: ...

    def claude_lookup(self) -> tuple[PurePosixPath | None, str]:
        """(the Claude Code the plan uses when no path is entered, where it looked)."""
        ...

    def validate_network(
        self, mode: Mode, network: Network, domains: str, ports: str
    ) -> tuple[tuple[str, ...], tuple[int, ...], str | None, str | None]:
        """(patterns, ports, error, field at fault: "domains" or "ports")."""
        ...

    def validate_pass_env(self, text: str, mode: Mode) -> tuple[tuple[str, ...], str | None]: ...

    def validate_limits(
        self, tasks: str, memory: str, tmpfs: str
    ) -> tuple[Limits | None, str | None, str | None]:
        """(limits, error, field at fault: "tasks", "memory" or "tmpfs")."""
        ...

    def acceptance_label(self) -> str: ...

    def saved_answers(self) -> Answers | None: ...

    def build_plan(self, report: Report, answers: Answers) -> Plan:
        """The plan; its notes (and errors) come in the wizard's words."""
        ...

    def describe(self, action: Action) -> str:
        """What a plan step does, in the wizard's words (the review and the apply log)."""
        ...

    def apply(self, plan: Plan, progress: ProgressCallback) -> ApplyResult: ...

    def error_words(self, exc: BaseException) -> str:
        """What a screen shows for ``exc`` (a core error in the wizard's words)."""
        ...

    def login_note(self, answers: Answers) -> str | None:
        """Said on the done screen when the agent has no Claude login (and how to
        give it one)."""
        ...

    def audit(self) -> AuditReport: ...

    def status_text(self, width: int) -> tuple[str, str]:
        """``sandbox-setup --status`` as text: the Setup tab's and the Sessions tab's."""
        ...

    def undo_preview(self) -> list[str]:
        """What ``sandbox-setup --undo --dry-run`` shows ([]: nothing to undo)."""
        ...

    def undo_last(self) -> tuple[list[str], bool]:
        """Take back the last apply (``--undo --yes``): its lines, and whether it was clean."""
        ...

    def report_for_fix(self) -> Report:
        """The report a re-apply plans from: the one the last audit probed."""
        ...
