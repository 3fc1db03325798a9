"""Fixed data for the screenshot tests: a fake plan, apply and audit, so a
snapshot never depends on the host or on the core's current wording."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, cast

from textual.app import App, ComposeResult
from textual.filter import LineFilter
from textual.screen import Screen

from sandbox_setup.audit.grade import LEGEND
from sandbox_setup.audit.model import AuditFinding, AuditReport, Grade, Severity
from sandbox_setup.base.accounts import Account
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.launcher_config import LauncherConfig
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.model import Finding, Report
from sandbox_setup.commands.interactive import InteractiveCore
from sandbox_setup.configure.actions import Action
from sandbox_setup.configure.answers import Answers
from sandbox_setup.configure.apply import ApplyResult
from sandbox_setup.configure.plan import Plan
from sandbox_setup.tui import STYLESHEET
from sandbox_setup.tui.app import SetupApp
from sandbox_setup.tui.core import ProgressCallback
from sandbox_setup.tui.glyphs import AsciiFilter, locale_is_utf8
from sandbox_setup.tui.widgets import StepBar
from tests.tui.fake_findings import FakeProvider, fake_report

LAUNCHER_DIFF = """\
--- /dev/null
+++ /root/.config/sandbox-setup/launcher.toml (planned)
@@ -0,0 +1,9 @@
+schema = 1
+mode = "sandbox"
+claude = "/usr/local/bin/claude"
+
+[agent]
+user = "claude-agent"
+home = "/home/claude-agent"
+
+[sandbox]
"""

SETTINGS_DIFF = """\
--- /etc/claude-code/managed-settings.json (current)
+++ /etc/claude-code/managed-settings.json (planned)
@@ -1,3 +1,6 @@
 {
-  "theme": "dark"
+  "sandbox": {
+    "enabled": true
+  },
+  "theme": "dark"
 }
"""


@dataclass(eq=False)
class FakeAction(Action):
    """A plan step with fixed text: a real :class:`Action`, so screens see the core type."""

    fake_kind: str
    fake_target: str
    text: str
    diff_text: str = ""
    argv: list[list[str]] = field(default_factory=list)
    existing: bytes | None = None
    change: bool = True

    @property
    def target(self) -> str:
        return self.fake_target

    def describe(self) -> str:
        return self.text

    def is_change(self) -> bool:
        return self.change

    def diff(self) -> str:
        return self.diff_text

    def commands(self) -> list[list[str]]:
        return self.argv

    def backs_up(self) -> bool:
        return self.existing is not None


def fake_plan(layout: Layout | None = None) -> Plan:
    """A real :class:`Plan` holding the fixed actions below."""
    layout = layout or Layout(Path("/"), Account("root", 0, 0, Path("/root"), "/bin/sh"))
    config = LauncherConfig(
        Mode.SANDBOX,
        PurePosixPath("/usr/local/bin/claude"),
        "claude-agent",
        PurePosixPath("/home/claude-agent"),
        (PurePosixPath("/srv/project"),),
    )
    return Plan(Answers(Mode.SANDBOX), layout, config, list(FAKE_ACTIONS))


FAKE_ACTIONS = (
    FakeAction(
        "create-user",
        "claude-agent",
        "create user claude-agent (locked, home /home/claude-agent 0700)",
        argv=[["useradd", "--create-home", "--user-group", "claude-agent"]],
    ),
    FakeAction(
        "workspace-access",
        "/srv/project",
        "give group sandbox-ws rwX on /srv/project (ACL + default ACL)",
        argv=[["setfacl", "-R", "-m", "g:sandbox-ws:rwX", "/srv/project"]],
    ),
    FakeAction(
        "write-file",
        "/etc/claude-code/managed-settings.json",
        "update Claude settings /etc/claude-code/managed-settings.json",
        SETTINGS_DIFF,
        existing=b"{}",
    ),
    FakeAction(
        "write-file",
        "/root/.config/sandbox-setup/launcher.toml",
        "create launcher config /root/.config/sandbox-setup/launcher.toml",
        LAUNCHER_DIFF,
    ),
    FakeAction("write-file", "/x/answers.toml", "answers.toml", change=False),
)
FAKE_PLAN = fake_plan()

FAKE_AUDIT = AuditReport(
    root="/",
    config_path="/root/.config/sandbox-setup/launcher.toml",
    answers_path="/root/.config/sandbox-setup/answers.toml",
    mode="sandbox",
    agent_user="claude-agent",
    probes_as="claude-agent",
    findings=[
        AuditFinding(
            "audit.drift.settings",
            Severity.HIGH,
            "managed-settings.json differs from what the answers write",
            remedy="sandbox-setup --headless --answers ... --yes",
            diff=SETTINGS_DIFF,
        ),
        AuditFinding("audit.safety.sudoers", Severity.INFO, "no sudoers entry for claude-agent"),
    ],
    grade=Grade(3.0, "MEDIUM", LEGEND),
    checks=[],
)


class FakeCore(InteractiveCore):
    """Plans, applies and audits with fixed values; ``fail`` makes apply fail."""

    fail: bool = False
    gate: threading.Event | None = None

    def claude_lookup(self) -> tuple[PurePosixPath | None, str]:
        # Fixed: the real lookup reads this process's PATH (the screens are not the core).
        return PurePosixPath("/usr/local/bin/claude"), "looked for 'claude' in /usr/local/bin"

    def _claude_finding(self, finding: Finding, found: Any, where: str) -> Finding:
        return finding

    def build_plan(self, report: Report, answers: Answers) -> Plan:
        return fake_plan(self.layout)

    def apply(self, plan: Plan, progress: ProgressCallback) -> ApplyResult:
        for index, action in enumerate(plan.actions):
            progress(f"  running  {action.describe()}", False)
            if self.gate is not None and index == 2:
                self.gate.wait(30)
            if self.fail and index == 2:
                progress(f"   failed  {action.describe()}", True)
                raise RuntimeError("cannot write /etc/claude-code: read-only file system")
            progress(f"  changed  {action.describe()}", True)
        return ApplyResult(changed=[a.describe() for a in plan.actions])

    def audit(self) -> AuditReport:
        self.last_audit = FAKE_AUDIT
        return FAKE_AUDIT


def fake_core(root: Path, findings: list[Any]) -> FakeCore:
    return FakeCore(Layout.for_root(root), FakeProvider(findings))


def report_of(findings: list[Any]) -> Report:
    return fake_report(findings)


class ScreenHarness(App[None]):
    """Shows one screen with the wizard's stylesheet, for snapshots."""

    CSS_PATH = str(STYLESHEET)
    TITLE = "sandbox-setup"

    def __init__(
        self, make_screen: Callable[[], Screen[Any]], on_exit: Callable[[], object] | None = None
    ) -> None:
        super().__init__()
        self.make_screen = make_screen
        self.on_exit = on_exit

    def get_line_filters(self) -> Sequence[LineFilter]:
        # Drawn as the wizard draws in this locale: ASCII where it is not UTF-8.
        filters = super().get_line_filters()
        return filters if locale_is_utf8(os.environ) else [*filters, AsciiFilter()]

    def on_mount(self) -> None:
        self.push_screen(self.make_screen())

    def on_unmount(self) -> None:
        # Release a worker a test holds mid-run, so shutdown need not wait for it.
        if self.on_exit is not None:
            self.on_exit()


class WizardHarness(SetupApp):
    """One screen in the real app (its keys: help, quit, the palette), no flow."""

    def __init__(self, make_screen: Callable[[], Screen[Any]]) -> None:
        super().__init__(cast(Any, None))
        self.make_screen = make_screen

    def flow(self) -> None:  # type: ignore[override]
        """No flow: the one screen below is all there is."""

    def on_mount(self) -> None:
        self.push_screen(self.make_screen())


class StepBarHarness(App[None]):
    """The step indicator alone."""

    CSS_PATH = str(STYLESHEET)

    def __init__(self, step: str, context: str) -> None:
        super().__init__()
        self.step, self.context = step, context

    def compose(self) -> ComposeResult:
        yield StepBar(self.step, self.context)
