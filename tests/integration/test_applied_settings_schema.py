"""The settings files real headless applies write, in every mode and scope, fresh
and merged into a file the user already had, validate against SchemaStore's
claude-code-settings.json (``tests/data/schemastore``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import MANAGED, host_passwd_digest, make_target_root, run_cli
from tests.settings_schema import assert_valid_settings
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration

USER_SCOPE_UNSAFE = "root/.claude/settings.json"
USER_SCOPE_AGENT = "home/claude-agent/.claude/settings.json"
USERS_OWN = {
    "model": "opus",
    "permissions": {"allow": ["Bash(make:*)"], "deny": ["Read(./secrets/**)"]},
    "sandbox": {"excludedCommands": ["docker"], "network": {"allowedDomains": ["pypi.org"]}},
    "env": {"FOO": "1"},
}
SANDBOX = ["--mode", "sandbox", "--workspace", "/srv/project"]
CASES = [
    ("sandbox", SANDBOX, MANAGED),
    ("sandbox-weak", [*SANDBOX, "--inner-sandbox", "weak"], MANAGED),
    ("sandbox-off", [*SANDBOX, "--inner-sandbox", "off"], MANAGED),
    ("user", ["--mode", "user", "--workspace", "/srv/project"], MANAGED),
    ("user-scope", ["--mode", "user", "--settings-scope", "user"], USER_SCOPE_AGENT),
    ("unsafe", ["--mode", "unsafe", "--accept-unsafe-root"], USER_SCOPE_UNSAFE),
]


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    require_root()
    for tool in ("useradd", "groupadd", "setfacl", "bwrap", "socat"):
        require_tool(tool)
    before = host_passwd_digest()
    yield make_target_root(tmp_path / "root")
    assert host_passwd_digest() == before, "the host's account files changed"


def apply(root: Path, *args: str) -> None:
    done = run_cli("--headless", "--root", str(root), "--yes", *args)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("name", "args", "settings"), CASES, ids=[c[0] for c in CASES])
def test_a_fresh_apply_writes_valid_settings(
    root: Path, name: str, args: list[str], settings: str
) -> None:
    apply(root, *args)
    data = assert_valid_settings(root / settings)
    inner_on = not name.endswith("-off")
    assert data["sandbox"]["enabled"] is inner_on
    assert data["sandbox"].get("failIfUnavailable", False) is inner_on
    assert ("bwrapPath" in data["sandbox"]) is (inner_on and settings == MANAGED)


@pytest.mark.parametrize(("name", "args", "settings"), CASES, ids=[c[0] for c in CASES])
def test_a_merge_into_the_users_settings_stays_valid(
    root: Path, name: str, args: list[str], settings: str
) -> None:
    path = root / settings
    if settings == USER_SCOPE_AGENT:
        apply(root, *args)  # the agent's home exists only after the first apply
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(USERS_OWN, indent=2))
    apply(root, *args)
    data = assert_valid_settings(path)
    assert data["model"] == "opus" and data["env"] == {"FOO": "1"}
    assert data["sandbox"]["excludedCommands"] == ["docker"]
    assert data["permissions"]["deny"][0] == "Read(./secrets/**)"
    # switching the inner sandbox off later keeps the file valid too
    base = args[: args.index("--inner-sandbox")] if "--inner-sandbox" in args else args
    apply(root, *base, "--inner-sandbox", "off")
    assert assert_valid_settings(path)["sandbox"]["enabled"] is False


def test_a_sandbox_mode_apply_pins_the_restrictive_keys_with_the_operators_domains(
    root: Path,
) -> None:
    """Managed settings of an allowlist sandbox: Claude's own sandbox denies every host
    outside the operator's domains (strictAllowlist), takes its allowlist from the
    managed settings only, refuses nested user namespaces, keeps filesystem isolation,
    and Claude itself refuses a release below the floor (the fake claude is above it)."""
    args = [*SANDBOX, "--network", "allowlist", "--allow-domain", "example.com"]
    apply(root, *args, "--allow-domain", "*.example.org:8443")
    data = assert_valid_settings(root / MANAGED)
    network = data["sandbox"]["network"]
    assert network["strictAllowlist"] is True and network["allowManagedDomainsOnly"] is True
    assert network["allowedDomains"] == ["example.com", "*.example.org:8443"]
    assert data["sandbox"]["allowNestedUserNamespaces"] is False
    assert data["sandbox"]["filesystem"]["disabled"] is False
    assert data["requiredMinimumVersion"] == "2.1.323"
    # user mode: the same keys but allowManagedDomainsOnly (no listener may bind there)
    apply(root, "--mode", "user", "--workspace", "/srv/project")
    network = assert_valid_settings(root / MANAGED)["sandbox"]["network"]
    assert network["strictAllowlist"] is True and network["allowManagedDomainsOnly"] is False
