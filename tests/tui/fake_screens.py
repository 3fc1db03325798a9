"""Fixed data for the screenshot tests: a fake plan, apply and audit, so a
snapshot never depends on the host or on the core's current wording."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.app import App
from textual.screen import Screen

from assets import ASSETS_DIR
from checks.model import Report
from screens.backend import Backend, ProgressCallback
from tests.tui.fake_findings import FakeProvider, fake_report
from wizard.audit.model import AuditFinding, AuditReport, Grade, Severity
from wizard.base.paths import Layout
from wizard.configure.answers import Answers

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


@dataclass
class FakeAction:
    kind: str
    target: str
    text: str
    diff_text: str = ""
    argv: list[list[str]] = field(default_factory=list)
    existing: bytes | None = None
    change: bool = True

    def describe(self) -> str:
        return self.text

    def is_change(self) -> bool:
        return self.change

    def diff(self) -> str:
        return self.diff_text

    def commands(self) -> list[list[str]]:
        return self.argv

    def current(self) -> bytes | None:
        return self.existing


@dataclass
class FakePlan:
    actions: list[FakeAction]
    notes: list[str] = field(default_factory=list)


FAKE_PLAN = FakePlan(
    [
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
    ]
)

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
    grade=Grade(3.0, "MEDIUM", "0 = nothing exposed, 10 = the whole machine"),
    checks=[],
)


class FakeBackend(Backend):
    """Plans, applies and audits with fixed values; ``fail`` makes apply fail."""

    fail: bool = False
    gate: threading.Event | None = None

    def build_plan(self, report: Report, answers: Answers) -> Any:
        return FAKE_PLAN

    def apply(self, plan: Any, progress: ProgressCallback) -> Any:
        for index, action in enumerate(plan.actions):
            progress(f"  running  {action.describe()}", False)
            if self.fail and index == 2:
                progress(f"   failed  {action.describe()}", True)
                raise RuntimeError("cannot write /etc/claude-code: read-only file system")
            if self.gate is not None and index == 2:
                self.gate.wait(30)
            progress(f"  changed  {action.describe()}", True)
        return {"changed": len(plan.actions)}

    def audit(self) -> Any:
        self.last_audit = FAKE_AUDIT
        return FAKE_AUDIT


def fake_backend(root: Path, findings: list[Any]) -> FakeBackend:
    layout = Layout.for_root(root)
    backend = FakeBackend(layout, FakeProvider(findings))
    return backend


def report_of(findings: list[Any]) -> Report:
    return fake_report(findings)


class ScreenHarness(App[None]):
    """Shows one screen with the wizard's stylesheet, for snapshots."""

    CSS_PATH = str(ASSETS_DIR / "wizard.tcss")
    TITLE = "sandbox-setup"
    ENABLE_COMMAND_PALETTE = False  # as in wizard.app.SetupApp

    def __init__(
        self, make_screen: Callable[[], Screen[Any]], on_exit: Callable[[], object] | None = None
    ) -> None:
        super().__init__()
        self.make_screen = make_screen
        self.on_exit = on_exit

    def on_mount(self) -> None:
        self.push_screen(self.make_screen())

    def on_unmount(self) -> None:
        # Release a worker a test holds mid-run, so shutdown need not wait for it.
        if self.on_exit is not None:
            self.on_exit()
