"""The one place the TUI calls the core: probes, plan, apply, audit.

Screens never import ``checks.runner``, ``wizard.configure.plan``, ``wizard.configure.apply`` or
``wizard.audit.runner`` themselves; they get a :class:`Backend`. If a core name
changes, only this module changes. Nothing here imports Textual, and every
method may block (screens call them from thread workers).

The report provider is injectable: the real one runs the live probes, tests
hand in fixed fake findings (the TUI is not the probe).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from checks.model import Finding, Report, Status
from wizard.base.choices import Mode
from wizard.base.paths import Layout
from wizard.configure.answers import USER_NAME_RE, Answers
from wizard.policy.system_dirs import is_system_dir

FindingCallback = Callable[[Finding], object]
ReportProvider = Callable[[FindingCallback], Report]
# (log line, whether an action just finished)
ProgressCallback = Callable[[str, bool], object]


def live_report_provider(on_finding: FindingCallback, layout: Layout | None = None) -> Report:
    """Run the real probes; each finding is reported as it is ready.

    They run as the default agent user when it exists, else as an unprivileged
    stand-in (:mod:`wizard.configure.probe_user`): the mode is not chosen yet, and a probe as
    root would not speak for the agent.
    """
    from checks.runner import run_checks
    from wizard.configure.answers import DEFAULT_AGENT_USER
    from wizard.configure.probe_user import choose_probe_user

    as_user = None
    if layout is not None:
        as_user, _ = choose_probe_user(None, DEFAULT_AGENT_USER, layout)
    return run_checks(on_finding=on_finding, as_user=as_user)


def check_titles() -> list[tuple[str, str]]:
    """(id, title) of every registered check, for placeholder rows; empty if
    the registry is not importable."""
    try:
        from checks.registry import CHECKS
    except ImportError:
        return []
    rows = []
    for check in CHECKS:
        check_id = getattr(check, "id", None) or getattr(check, "ID", None)
        title = getattr(check, "title", None) or getattr(check, "TITLE", "")
        if check_id:
            rows.append((str(check_id), str(title)))
    return rows


@dataclass(frozen=True)
class Blocker:
    """Why the host rules a mode out, and the command that fixes it."""

    reason: str
    remedy: str


def mode_blocker(report: Report, mode: Mode) -> Blocker | None:
    """Whether ``report`` rules ``mode`` out. Only ``sandbox`` depends on the
    host: it needs bubblewrap that can start a sandbox here."""
    if mode is not Mode.SANDBOX:
        return None
    for check_id in ("bwrap.installed", "bwrap.sandbox"):
        finding = report.get(check_id)
        if finding is None or finding.status is not Status.PASS:
            summary = finding.summary if finding else f"{check_id} was not checked"
            remedy = finding.remedy if finding else "sandbox-setup --check " + check_id
            return Blocker(f"{check_id}: {summary}", remedy or "see sandbox-setup --check")
    return None


def inner_sandbox_preset(report: Report, mode: Mode) -> str:
    """Claude's own sandbox strength the probes verified for ``mode``."""
    from wizard.configure.plan import default_inner_sandbox

    return default_inner_sandbox(report, mode)


def default_settings_scope(mode: Mode, operator_is_root: bool) -> str:
    if mode is Mode.UNSAFE or not operator_is_root:
        return "user"
    return "managed"


@dataclass
class Backend:
    """The core as the TUI sees it, for one root."""

    layout: Layout
    report_provider: ReportProvider = live_report_provider
    # (id, title) rows shown as "running" until their finding arrives.
    pending: list[tuple[str, str]] = field(default_factory=list)
    last_audit: Any = None

    @classmethod
    def for_root(
        cls, root: Path | str = "/", report_provider: ReportProvider | None = None
    ) -> Backend:
        layout = Layout.for_root(root)
        if report_provider is None:
            return cls(layout, partial(live_report_provider, layout=layout), check_titles())
        return cls(layout, report_provider, [])

    # -- facts for the welcome screen ------------------------------------
    @property
    def operator_is_root(self) -> bool:
        return self.layout.operator.uid == 0

    def existing_setup(self) -> bool:
        return self.layout.real(self.layout.launcher_config).is_file()

    # -- probes ------------------------------------------------------------
    def run_checks(self, on_finding: FindingCallback) -> Report:
        return self.report_provider(on_finding)

    # -- answers -----------------------------------------------------------
    def validate_workspaces(self, text: str) -> tuple[tuple[PurePosixPath, ...], str | None]:
        """Parse a comma-separated list; the error names the path and why."""
        paths: list[PurePosixPath] = []
        for raw in (part.strip() for part in text.split(",")):
            if not raw:
                continue
            path = PurePosixPath(raw)
            if not path.is_absolute():
                return (), f"workspace {raw!r} is not an absolute path"
            if ".." in path.parts:
                return (), f"workspace {raw!r} must not contain '..'"
            if is_system_dir(path):
                return (), f"workspace {raw} is a system directory; choose a project directory"
            if not self.layout.real(path).is_dir():
                where = "" if self.layout.live else f" (under {self.layout.root})"
                return (), f"workspace {raw} does not exist or is not a directory{where}"
            if path not in paths:
                paths.append(path)
        return tuple(paths), None

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

    @staticmethod
    def validate_agent_user(name: str) -> str | None:
        if name == "root":
            return "the agent user must not be root"
        if not USER_NAME_RE.match(name):
            return (
                f"agent user {name!r} is not a valid name (lowercase letters, digits, "
                "'-' and '_', at most 32, starting with a letter or '_')"
            )
        return None

    def saved_answers(self) -> Answers | None:
        """The answers of the last apply, if any (for the audit's fix)."""
        path = self.layout.real(self.layout.answers)
        if not path.is_file():
            return None
        from wizard.configure.answers import load_answers

        loaded: Answers = load_answers(path)
        return loaded

    # -- plan and apply ----------------------------------------------------
    def build_plan(self, report: Report, answers: Answers) -> Any:
        """Raises ``RefusedError``/``InputError`` (reason and remedy) when the
        report or the answers rule the plan out."""
        from wizard.configure.plan import build_plan

        return build_plan(report, answers, self.layout)

    def apply(self, plan: Any, progress: ProgressCallback) -> Any:
        """Apply ``plan``; on failure the core rolls back and re-raises."""
        from wizard.configure.apply import apply_plan

        def report_progress(action: Any, status: str) -> None:
            progress(f"{status:>9}  {action.describe()}", status != "running")

        return apply_plan(plan, progress=report_progress)

    # -- audit -------------------------------------------------------------
    def audit(self) -> Any:
        """The :class:`wizard.audit.model.AuditReport` of the setup (live probes)."""
        from wizard.audit.runner import audit

        self.last_audit = audit(self.layout)
        return self.last_audit

    @property
    def last_audit_clean(self) -> bool:
        return bool(getattr(self.last_audit, "clean", True))

    def report_for_fix(self) -> Report:
        """The report a re-apply plans from: the one the last audit probed."""
        audit = self.last_audit
        report = getattr(audit, "report", None)
        if isinstance(report, Report):
            return report
        return Report.from_json(
            {
                "checks": list(getattr(audit, "checks", [])),
                "recommendation": {"mode": getattr(audit, "mode", "user")},
            }
        )
