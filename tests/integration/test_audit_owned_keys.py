"""Drift on each settings key sandbox-setup owns, through the real audit.

One real sandbox-mode setup (headless apply under a temp root, managed scope);
each test changes one owned key of the managed settings the way an agent or a
hand edit would, and the audit must report ``audit.drift.settings`` with a
summary that names that key, exit 1; replaying the saved answers clears it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_audit_drift import (
    MANAGED,
    Setup,
    assert_clean,
    audit,
    make_setup,
    reapply,
)
from tests.tools import claude_binary, require_root, require_tool

pytestmark = pytest.mark.integration

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def setup(integration_workdir: Path) -> Iterator[Setup]:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "bwrap", "setpriv", "socat"):
        require_tool(tool)
    made = make_setup(
        integration_workdir, claude_binary(), "--mode", "sandbox", "--workspace", "/srv/project"
    )
    yield made
    shutil.rmtree(made.root.parent, ignore_errors=True)


def sandbox(data: dict[str, Any]) -> dict[str, Any]:
    table: dict[str, Any] = data["sandbox"]
    return table


EDITS: list[tuple[str, Edit, str]] = [
    ("enabled", lambda d: sandbox(d).update(enabled=False), "sandbox.enabled is false"),
    (
        "enableWeakerNestedSandbox",
        lambda d: sandbox(d).update(enableWeakerNestedSandbox=True),
        "sandbox.enableWeakerNestedSandbox is true",
    ),
    (
        "failIfUnavailable",
        lambda d: sandbox(d).pop("failIfUnavailable"),
        "sandbox.failIfUnavailable is absent, should be true",
    ),
    (
        "allowUnsandboxedCommands",
        lambda d: sandbox(d).update(allowUnsandboxedCommands=True),
        "sandbox.allowUnsandboxedCommands is true, should be false",
    ),
    (
        "autoAllowBashIfSandboxed",
        lambda d: sandbox(d).pop("autoAllowBashIfSandboxed"),
        "sandbox.autoAllowBashIfSandboxed is absent, should be true",
    ),
    (
        "bwrapPath",
        lambda d: sandbox(d).update(bwrapPath="/home/claude-agent/bwrap"),
        'sandbox.bwrapPath is "/home/claude-agent/bwrap"',
    ),
    (
        "socatPath",
        lambda d: sandbox(d).pop("socatPath"),
        "sandbox.socatPath is absent",
    ),
    (
        "credentials.envVars",
        lambda d: sandbox(d)["credentials"]["envVars"].pop(0),
        'sandbox.credentials.envVars lacks [{"name": "ANTHROPIC_API_KEY"',
    ),
    (
        "permissions.deny",
        lambda d: d["permissions"]["deny"].remove("Read(~/.ssh/**)"),
        'permissions.deny lacks ["Read(~/.ssh/**)"]',
    ),
]


def test_the_setup_owns_every_key_it_is_audited_on(setup: Setup) -> None:
    data = json.loads(setup.real(MANAGED).read_text())
    owned = sandbox(data)
    assert owned["enabled"] is True and owned["failIfUnavailable"] is True
    assert owned["allowUnsandboxedCommands"] is False
    assert owned["autoAllowBashIfSandboxed"] is True
    assert owned["bwrapPath"].endswith("/bwrap") and owned["socatPath"].endswith("/socat")
    assert {"name": "ANTHROPIC_API_KEY", "mode": "deny"} in owned["credentials"]["envVars"]
    assert_clean(setup)


@pytest.mark.parametrize(("key", "edit", "named"), EDITS, ids=[key for key, _, _ in EDITS])
def test_a_change_of_each_owned_key_is_drift_that_names_it(
    setup: Setup, key: str, edit: Edit, named: str
) -> None:
    path = setup.real(MANAGED)
    original = path.read_bytes()
    data = json.loads(original)
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n")
    try:
        run = audit(setup)
        assert run.returncode == 1, run.data["findings"]
        finding = run.finding("audit.drift.settings")
        assert named in finding["summary"], finding["summary"]
        assert str(path) in finding["summary"]
        assert finding["severity"] == "high" and "--answers" in finding["remedy"]
        assert "Applied" in reapply(setup)
        assert_clean(setup)
    finally:
        path.write_bytes(original)
