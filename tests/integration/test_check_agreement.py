"""One host, one verdict: ``--check`` (as root), the wizard's checks screen and
``--audit`` probe the sandbox path the way the launcher runs it, so they agree
(issue 13: ``--check`` as root used to fail bwrap.nested where the other two passed)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_setup.commands.interactive import InteractiveCore
from tests.core_fixtures import run_cli
from tests.integration.test_audit_drift import Setup, make_setup
from tests.tools import claude_binary, require_root, require_tool

pytestmark = pytest.mark.integration

SANDBOX_PATH = (
    "userns.create",
    "proc.fresh_mount",
    "bwrap.sandbox",
    "bwrap.nested",
    "bwrap.nested_weak",
    "seccomp.available",
)


@pytest.fixture
def sandbox_setup(integration_workdir: Path) -> Iterator[Setup]:
    require_root()
    for tool in ("bwrap", "setpriv", "useradd", "setfacl"):
        require_tool(tool)
    setup = make_setup(
        integration_workdir, claude_binary(), "--mode", "sandbox", "--workspace", "/srv/project"
    )
    yield setup
    shutil.rmtree(setup.root.parent, ignore_errors=True)


def _statuses(checks: list[dict[str, str]]) -> dict[str, str]:
    return {c["id"]: c["status"] for c in checks if c["id"] in SANDBOX_PATH}


def test_check_the_wizard_and_the_audit_agree(sandbox_setup: Setup) -> None:
    check = run_cli("--check", "--json", *SANDBOX_PATH)
    check_report = json.loads(check.stdout)
    wizard_report = InteractiveCore.for_root(sandbox_setup.root).run_checks(lambda _f: None)
    audit = run_cli("--audit", "--json", "--root", str(sandbox_setup.root))
    audit_report = json.loads(audit.stdout)

    from_check = _statuses(check_report["checks"])
    from_wizard = _statuses([f.to_json() for f in wizard_report.findings])
    from_audit = _statuses(audit_report["checks"])
    assert set(from_check) == set(SANDBOX_PATH)
    assert from_check == from_wizard == from_audit, (from_check, from_wizard, from_audit)
    # All three spoke for an unprivileged agent, not for root.
    assert check_report["as_user"] == wizard_report.as_user == audit_report["probes_as"]
    assert check_report["as_user"] not in (None, "root")
    # On this healthy host that means: sandbox, strong inner sandbox, no failure.
    assert set(from_check.values()) == {"pass"}, from_check
    assert check.returncode == 0, check.stderr
    assert check_report["host"]["inner_sandbox"] == "strong"
    assert audit.returncode == 0, audit.stdout
