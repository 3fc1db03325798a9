"""The core as the interactive wizard sees it: :class:`InteractiveCore` implements
:class:`screens.core.Core` for one target root.

Nothing here imports Textual; every method may block (the screens call them
from thread workers). The report provider is injectable: the real one runs the
live probes, tests hand in fixed fake findings (the TUI is not the probe).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath

from checks.model import Finding, Report
from checks.registry import CHECKS
from wizard.audit.model import AuditReport
from wizard.base.accounts import DEFAULT_AGENT_USER
from wizard.base.choices import InnerSandbox, Mode, SettingsScope
from wizard.base.paths import Layout
from wizard.configure.actions import Action
from wizard.configure.answers import Answers, load_answers, workspace_problem
from wizard.configure.apply import ApplyResult
from wizard.configure.plan import (
    Blocker,
    Plan,
    default_inner_sandbox,
    default_settings_scope,
    mode_blocker,
)
from wizard.configure.probes import choose_probe_user, run_live_checks
from wizard.policy.names import agent_name_problem
from wizard.policy.unsafe import acceptance_label

FindingCallback = Callable[[Finding], object]
ReportProvider = Callable[[FindingCallback], Report]
ProgressCallback = Callable[[str, bool], object]


def live_report_provider(on_finding: FindingCallback, layout: Layout | None = None) -> Report:
    """Run the real probes; each finding is reported as it is ready.

    They run as the default agent user when it exists, else as an unprivileged
    stand-in (:mod:`wizard.configure.probes`): the mode is not chosen yet, and a
    probe as root would not speak for the agent.
    """
    as_user = None
    if layout is not None:
        as_user, _ = choose_probe_user(None, DEFAULT_AGENT_USER, layout)
    return run_live_checks(on_finding=on_finding, as_user=as_user)


def check_titles() -> list[tuple[str, str]]:
    """(id, title) of every registered check, for placeholder rows."""
    return [(check.id, check.title) for check in CHECKS]


@dataclass
class InteractiveCore:
    """The core for one root (see :class:`screens.core.Core`)."""

    layout: Layout
    report_provider: ReportProvider = live_report_provider
    pending: list[tuple[str, str]] = field(default_factory=list)
    last_audit: AuditReport | None = None

    @classmethod
    def for_root(
        cls, root: Path | str = "/", report_provider: ReportProvider | None = None
    ) -> InteractiveCore:
        layout = Layout.for_root(root)
        if report_provider is None:
            return cls(layout, partial(live_report_provider, layout=layout), check_titles())
        return cls(layout, report_provider, [])

    @property
    def operator_is_root(self) -> bool:
        return self.layout.operator.uid == 0

    def existing_setup(self) -> bool:
        return self.layout.real(self.layout.launcher_config).is_file()

    # -- probes and what they allow --------------------------------------
    def run_checks(self, on_finding: FindingCallback) -> Report:
        return self.report_provider(on_finding)

    def mode_blocker(self, report: Report, mode: Mode) -> Blocker | None:
        return mode_blocker(report, mode)

    def inner_sandbox_preset(self, report: Report, mode: Mode) -> InnerSandbox:
        return default_inner_sandbox(report, mode)

    def default_settings_scope(self, mode: Mode) -> SettingsScope:
        return default_settings_scope(mode, self.operator_is_root)

    # -- answers (the same rules as the headless path) -------------------
    def validate_workspaces(
        self, text: str, mode: Mode, agent_user: str
    ) -> tuple[tuple[PurePosixPath, ...], str | None]:
        """Parse a comma-separated list; the error names the path and why."""
        paths: list[PurePosixPath] = []
        for raw in (part.strip() for part in text.split(",")):
            if not raw:
                continue
            path = PurePosixPath(raw)
            problem = workspace_problem(path, self.layout, mode, agent_user)
            if problem is not None:
                return (), problem
            if path not in paths:
                paths.append(path)
        return tuple(paths), None

    def validate_agent_user(self, name: str, mode: Mode) -> str | None:
        return agent_name_problem(name, unsafe=mode is Mode.UNSAFE)

    def validate_claude(self, text: str) -> tuple[PurePosixPath | None, str | None]:
        raw = text.strip()
        if not raw:
            return None, None
        path = PurePosixPath(raw)
        if not path.is_absolute():
            return None, f"Claude binary {raw!r} is not an absolute path"
        if not self.layout.real(path).is_file():
            where = "" if self.layout.live else f" (under {self.layout.root})"
            return None, f"Claude binary {raw} is not a file{where}"
        return path, None

    def acceptance_label(self) -> str:
        operator = self.layout.operator
        return acceptance_label(operator.name, operator.uid, os.environ)

    def saved_answers(self) -> Answers | None:
        """The answers of the last apply, if any (for the audit's fix)."""
        path = self.layout.real(self.layout.answers)
        if not path.is_file():
            return None
        return load_answers(path)

    # -- plan and apply --------------------------------------------------
    def build_plan(self, report: Report, answers: Answers) -> Plan:
        """Raises ``RefusedError``/``InputError`` (reason and remedy) when the
        report or the answers rule the plan out."""
        from wizard.configure.plan import build_plan

        return build_plan(report, answers, self.layout)

    def apply(self, plan: Plan, progress: ProgressCallback) -> ApplyResult:
        """Apply ``plan``; on failure the core rolls back and re-raises."""
        from wizard.configure.apply import apply_plan

        def report_progress(action: Action, status: str) -> None:
            progress(f"{status:>9}  {action.describe()}", status != "running")

        return apply_plan(plan, progress=report_progress)

    # -- audit -----------------------------------------------------------
    def audit(self) -> AuditReport:
        from wizard.audit.runner import audit

        self.last_audit = audit(self.layout)
        return self.last_audit

    def report_for_fix(self) -> Report:
        if self.last_audit is None or self.last_audit.report is None:
            raise RuntimeError("report_for_fix before an audit")
        return self.last_audit.report
