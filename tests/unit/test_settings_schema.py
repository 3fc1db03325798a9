"""Every settings file the merge can write validates against SchemaStore's
claude-code-settings.json, and the validation can fail."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from sandbox_setup.configure.settings import SandboxKeys, merge_settings
from tests.settings_schema import BEYOND_SCHEMASTORE, SCHEMA, schema_errors
from tests.tools import claude_release, release_tuple

SOURCE = "/etc/claude-code/managed-settings.json"
# Existing files a user may have, with keys sandbox-setup does not own.
EXISTING: list[dict[str, Any] | None] = [
    None,
    {},
    {
        "model": "opus",
        "env": {"FOO": "1"},
        "permissions": {"allow": ["Bash(make:*)"], "deny": ["Read(./secrets/**)"]},
        "sandbox": {
            "excludedCommands": ["docker"],
            "network": {"allowedDomains": ["pypi.org"]},
            "credentials": {"envVars": [{"name": "GITHUB_TOKEN", "mode": "deny"}]},
        },
    },
    {"sandbox": {"enabled": True, "enableWeakerNestedSandbox": True, "failIfUnavailable": True}},
]
KEYS = [
    SandboxKeys(inner, managed=managed, **paths, proxy_port=port)  # type: ignore[arg-type]
    for inner, (managed, paths), port in itertools.product(
        ("strong", "weak", "off"),
        (
            (False, {}),
            (
                True,
                {
                    "bwrap_path": "/usr/bin/bwrap",
                    "socat_path": "/usr/bin/socat",
                    "allowed_domains": ("example.com", "*.example.org:8443", "[2001:db8::7]"),
                    "managed_domains_only": True,
                    "minimum_version": "2.1.323",
                },
            ),
        ),
        (None, 3128),
    )
]


@pytest.mark.parametrize("existing", EXISTING, ids=["new", "empty", "foreign", "weak-before"])
@pytest.mark.parametrize(
    "keys", KEYS, ids=[f"{k.inner_sandbox}-{'managed' if k.managed else 'user'}-{k.proxy_port}"
                       for k in KEYS]
)  # fmt: skip
def test_every_merge_validates(existing: dict[str, Any] | None, keys: SandboxKeys) -> None:
    raw = None if existing is None else json.dumps(existing).encode()
    merged = json.loads(merge_settings(raw, SOURCE, keys))
    assert schema_errors(merged) == []


@pytest.mark.parametrize(
    ("settings", "where"),
    [
        ({"sandbox": {"failIfUnavailable": "yes"}}, "sandbox.failIfUnavailable"),
        ({"sandbox": {"failIfUnavailible": True}}, "sandbox"),  # a misspelled owned key
        ({"sandbox": {"credentials": {"envVars": [{"name": "K", "mode": "hide"}]}}}, "mode"),
        ({"sandbox": {"network": {"httpProxyPort": 0}}}, "sandbox.network.httpProxyPort"),
        ({"permissions": {"deny": ["Reed(~/.ssh/**)"]}}, "permissions.deny.0"),
    ],
)
def test_the_schema_rejects_what_claude_would_not_take(
    settings: dict[str, Any], where: str
) -> None:
    errors = schema_errors(settings)
    assert errors and any(where in error for error in errors), errors


# How the binary's zod schema spells a value's type (a bundled build: the names are
# minified, so each is learnt from a key SchemaStore agrees is of that type).
_TYPE_WITNESS = {"boolean": "failIfUnavailable"}


def test_keys_beyond_schemastore_are_in_the_binary() -> None:
    """Each key the per-release table adds to SchemaStore's schema is in the newest
    release's own settings schema, with the type the table gives; the oldest release
    (2.1.197, below each key's ``since``) does not know it."""
    import re
    import subprocess

    latest, oldest = claude_release("latest"), claude_release("oldest")
    if latest.binary is None:
        pytest.skip("Claude Code latest is not installed (tests/run.sh installs it)")

    def strings(binary: str) -> str:
        done = subprocess.run(
            ["strings", "-n", "8", binary], capture_output=True, text=True, check=True
        )
        return done.stdout

    newest = strings(latest.binary)
    for path, value, since in BEYOND_SCHEMASTORE:
        witness = re.search(rf"\b{_TYPE_WITNESS[value['type']]}:(\w+)\(\)", newest)
        assert witness is not None
        assert release_tuple(latest.version) >= release_tuple(since)
        assert f"{path[-1]}:{witness.group(1)}().optional()" in newest, path
        if oldest.binary is not None and release_tuple(oldest.version) < release_tuple(since):
            assert path[-1] not in strings(oldest.binary), path


def test_the_hook_policy_is_a_top_level_boolean_both_releases_read() -> None:
    """``allowManagedHooksOnly`` (which managed settings carry where the inner sandbox
    is on) is a top-level boolean of SchemaStore's schema and of each release's own
    settings schema: written, as in SchemaStore, next to ``allowManagedPermissionRulesOnly``
    (a top-level key of both) with the same type (not the plugin option of the same
    name in 2.1.332's built-in ``sec-default`` plugin)."""
    import re
    import subprocess

    schema = json.loads(SCHEMA.read_text())["properties"]
    assert schema["allowManagedHooksOnly"]["type"] == "boolean"
    assert schema["allowManagedPermissionRulesOnly"]["type"] == "boolean"
    releases = [r for r in (claude_release("latest"), claude_release("oldest")) if r.binary]
    if not releases:
        pytest.skip("no Claude Code release is installed (tests/run.sh installs them)")
    for release in releases:
        assert release.binary is not None
        text = subprocess.run(
            ["strings", "-n", "8", release.binary], capture_output=True, text=True, check=True
        ).stdout
        found = {
            m.group(1): (m.start(), m.group(2))
            for m in re.finditer(
                r"\b(allowManagedHooksOnly|allowManagedPermissionRulesOnly):(?:\(\)=>)?"
                r"([\w.$]+)\(\)\.optional\(\)\.describe\(\"When true \(and set in managed",
                text,
            )
        }
        assert set(found) == {"allowManagedHooksOnly", "allowManagedPermissionRulesOnly"}, (
            release.version
        )
        (hooks, hooks_type), (rules, rules_type) = (
            found["allowManagedHooksOnly"],
            found["allowManagedPermissionRulesOnly"],
        )
        assert hooks_type == rules_type and 0 < rules - hooks < 4000, (release.version, found)
