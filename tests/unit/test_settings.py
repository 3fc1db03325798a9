"""The Claude settings merge: owned keys only, order and foreign keys kept."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError
from sandbox_setup.configure.settings import (
    CREDENTIAL_DENY_RULES,
    CREDENTIAL_ENV_VARS,
    SandboxKeys,
    managed_domains_only,
    merge_settings,
    owned_changes,
)

SOURCE = "/home/a/.claude/settings.json"
BWRAP, SOCAT = "/usr/bin/bwrap", "/usr/bin/socat"
ENV_DENY = [{"name": name, "mode": "deny"} for name in CREDENTIAL_ENV_VARS]


def keys(inner: str = "strong", managed: bool = False, **more: object) -> SandboxKeys:
    paths = {"bwrap_path": BWRAP, "socat_path": SOCAT} if managed else {}
    return SandboxKeys(inner, managed=managed, **{**paths, **more})  # type: ignore[arg-type]


def merged(existing: object, inner: str = "strong", **options: object) -> dict:
    raw = None if existing is None else json.dumps(existing, indent=4).encode()
    return json.loads(merge_settings(raw, SOURCE, keys(inner, **options)))  # type: ignore[arg-type]


def test_new_file_gets_sandbox_and_deny_rules() -> None:
    data = merged(None)
    assert data["sandbox"] == {
        "enabled": True,
        "failIfUnavailable": True,
        "allowUnsandboxedCommands": False,
        "autoAllowBashIfSandboxed": True,
        "allowNestedUserNamespaces": False,
        "filesystem": {"disabled": False},
        "network": {"strictAllowlist": True},
        "credentials": {"envVars": ENV_DENY},
    }
    assert "requiredMinimumVersion" not in data
    assert data["permissions"]["deny"] == list(CREDENTIAL_DENY_RULES)
    assert any("~/.ssh" in r for r in data["permissions"]["deny"])
    assert any(".env" in r for r in data["permissions"]["deny"])
    assert any(".aws" in r for r in data["permissions"]["deny"])


@pytest.mark.parametrize(
    ("inner", "enabled", "weak"),
    [("strong", True, None), ("weak", True, True), ("off", False, None)],
)
def test_inner_strength_sets_owned_keys(inner: str, enabled: bool, weak: bool | None) -> None:
    data = merged({}, inner)
    assert data["sandbox"]["enabled"] is enabled
    assert data["sandbox"].get("enableWeakerNestedSandbox") is weak


def test_weaker_nested_is_turned_off_only_where_present() -> None:
    data = merged({"sandbox": {"enableWeakerNestedSandbox": True}}, "strong")
    assert data["sandbox"]["enableWeakerNestedSandbox"] is False
    assert "enableWeakerNestedSandbox" not in merged({}, "strong")["sandbox"]


@pytest.mark.parametrize("inner", ["strong", "weak"])
def test_an_inner_sandbox_that_is_on_cannot_vanish_or_be_bypassed(inner: str) -> None:
    sandbox = merged(
        {"sandbox": {"failIfUnavailable": False, "allowUnsandboxedCommands": True}}, inner
    )["sandbox"]
    assert sandbox["failIfUnavailable"] is True
    assert sandbox["allowUnsandboxedCommands"] is False


@pytest.mark.parametrize("inner", ["strong", "weak"])
def test_auto_allow_is_written_where_the_inner_sandbox_is_on(inner: str) -> None:
    # Its default moved (true up to 2.1.197, a server flag in 2.1.332): always written.
    sandbox = merged({"sandbox": {"autoAllowBashIfSandboxed": False}}, inner)["sandbox"]
    assert sandbox["autoAllowBashIfSandboxed"] is True
    # off: no sandbox to auto-allow in; what was there stays (the user's, or harmless)
    assert "autoAllowBashIfSandboxed" not in merged({}, "off")["sandbox"]


def test_off_sets_the_sandbox_only_keys_back_where_present() -> None:
    on = merged({}, "strong", managed=True)
    off = merged(on, "off", managed=True)["sandbox"]
    assert off["enabled"] is False
    assert off["failIfUnavailable"] is False and off["allowUnsandboxedCommands"] is True
    assert "bwrapPath" not in off and "socatPath" not in off
    # the deny entries stay: harmless without a sandbox, and maybe the user's
    assert off["credentials"]["envVars"] == ENV_DENY
    assert merged({}, "off")["sandbox"] == {"enabled": False}


def test_managed_scope_names_the_probed_binaries() -> None:
    sandbox = merged({}, "weak", managed=True)["sandbox"]
    assert (sandbox["bwrapPath"], sandbox["socatPath"]) == (BWRAP, SOCAT)
    replaced = merged({"sandbox": {"bwrapPath": "/tmp/evil/bwrap"}}, "strong", managed=True)
    assert replaced["sandbox"]["bwrapPath"] == BWRAP


def test_user_scope_leaves_binary_paths_alone() -> None:
    # Claude ignores them outside managed settings; they are the user's there.
    mine = {"sandbox": {"bwrapPath": "/opt/bwrap"}}
    assert merged(mine, "strong")["sandbox"]["bwrapPath"] == "/opt/bwrap"
    assert merged(mine, "off")["sandbox"]["bwrapPath"] == "/opt/bwrap"
    assert "bwrapPath" not in merged({}, "strong")["sandbox"]


def test_managed_on_without_binaries_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="both binaries"):
        SandboxKeys("strong", managed=True, bwrap_path=BWRAP)
    with pytest.raises(ValueError, match="inner_sandbox"):
        SandboxKeys("medium")


def test_credential_env_vars_are_appended_once_next_to_the_users() -> None:
    mine = {"name": "GITHUB_TOKEN", "mode": "deny"}
    existing = {"sandbox": {"credentials": {"files": [], "envVars": [mine, ENV_DENY[0]]}}}
    credentials = merged(existing)["sandbox"]["credentials"]
    assert credentials["files"] == []
    assert credentials["envVars"] == [mine, *ENV_DENY]


def test_proxy_port_sets_both_ports_and_none_leaves_them() -> None:
    network = merged({"sandbox": {"network": {"allowedDomains": ["x.org"]}}}, proxy_port=3128)
    assert network["sandbox"]["network"] == {
        "allowedDomains": ["x.org"],
        "strictAllowlist": True,
        "httpProxyPort": 3128,
        "socksProxyPort": 3128,
    }
    mine = {"sandbox": {"network": {"httpProxyPort": 8080}}}
    assert merged(mine)["sandbox"]["network"] == {"httpProxyPort": 8080, "strictAllowlist": True}


def _drop(path: str) -> Callable[[dict], None]:
    *tables, key = path.split(".")

    def change(data: dict) -> None:
        for table in tables:
            data = data[table]
        del data[key]

    return change


def _set(path: str, value: object) -> Callable[[dict], None]:
    *tables, key = path.split(".")

    def change(data: dict) -> None:
        for table in tables:
            data = data[table]
        data[key] = value

    return change


# What the agent (or anyone) could do to a file an apply wrote, and how drift names it.
EDITS = [
    (_set("sandbox.enabled", False), "sandbox.enabled is false, should be true"),
    (
        _set("sandbox.enableWeakerNestedSandbox", True),
        "sandbox.enableWeakerNestedSandbox is true, should be false",
    ),
    (
        _set("sandbox.failIfUnavailable", False),
        "sandbox.failIfUnavailable is false, should be true",
    ),
    (_drop("sandbox.failIfUnavailable"), "sandbox.failIfUnavailable is absent, should be true"),
    (
        _set("sandbox.allowUnsandboxedCommands", True),
        "sandbox.allowUnsandboxedCommands is true, should be false",
    ),
    (
        _set("sandbox.autoAllowBashIfSandboxed", False),
        "sandbox.autoAllowBashIfSandboxed is false, should be true",
    ),
    (
        _set("sandbox.bwrapPath", "/tmp/bwrap"),
        'sandbox.bwrapPath is "/tmp/bwrap", should be "/usr/bin/bwrap"',
    ),
    (_drop("sandbox.socatPath"), 'sandbox.socatPath is absent, should be "/usr/bin/socat"'),
    (_set("allowManagedHooksOnly", False), "allowManagedHooksOnly is false, should be true"),
    (
        _set("sandbox.credentials.envVars", ENV_DENY[1:]),
        'sandbox.credentials.envVars lacks [{"name": "ANTHROPIC_API_KEY", "mode": "deny"}]',
    ),
    (_set("permissions.deny", []), 'permissions.deny lacks ["Read(~/.ssh/**)"'),
]


@pytest.mark.parametrize(("edit", "line"), EDITS, ids=[line.split()[0] for _, line in EDITS])
def test_owned_changes_name_each_key(edit: Callable[[dict], None], line: str) -> None:
    written = merge_settings(None, SOURCE, keys("strong", managed=True))
    current = json.loads(written)
    edit(current)
    raw = json.dumps(current).encode()
    desired = merge_settings(raw, SOURCE, keys("strong", managed=True))  # what the audit does
    changes = owned_changes(raw, desired)
    assert len(changes) == 1 and changes[0].startswith(line), changes
    assert owned_changes(written, written) == []


def test_owned_changes_ignore_foreign_keys_and_survive_garbage() -> None:
    desired = merge_settings(None, SOURCE, keys())
    current = json.loads(desired) | {"model": "opus"}
    assert owned_changes(json.dumps(current).encode(), desired) == []
    assert "sandbox.enabled is absent, should be true" in owned_changes(b"{nope", desired)
    assert owned_changes(None, desired)


def test_foreign_keys_values_and_order_are_kept() -> None:
    existing = {
        "model": "opus",
        "permissions": {
            "allow": ["Bash(ls:*)"],
            "deny": ["Read(./secrets/**)", "Read(~/.ssh/**)"],
            "disableBypassPermissionsMode": "disable",
        },
        "env": {"FOO": "1"},
        "sandbox": {"excludedCommands": ["docker"], "enabled": False},
        "zzz": [1, 2, {"nested": None}],
    }
    data = merged(existing, "weak")
    assert list(data) == ["model", "permissions", "env", "sandbox", "zzz"]
    assert list(data["sandbox"])[:2] == ["excludedCommands", "enabled"]
    assert (
        data["model"] == "opus" and data["env"] == {"FOO": "1"} and data["zzz"] == existing["zzz"]
    )
    perms = data["permissions"]
    assert list(perms) == ["allow", "deny", "disableBypassPermissionsMode"]
    assert perms["disableBypassPermissionsMode"] == "disable"
    assert perms["allow"] == ["Bash(ls:*)"]
    # Existing rules first, in order; ours appended once.
    assert perms["deny"][:2] == ["Read(./secrets/**)", "Read(~/.ssh/**)"]
    assert perms["deny"].count("Read(~/.ssh/**)") == 1
    assert set(CREDENTIAL_DENY_RULES) <= set(perms["deny"])
    assert data["sandbox"]["excludedCommands"] == ["docker"]
    assert data["sandbox"]["enableWeakerNestedSandbox"] is True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    foreign=st.dictionaries(
        st.text(max_size=8).filter(lambda k: k not in ("sandbox", "permissions")),
        json_values,
        max_size=5,
    ),
    inner=st.sampled_from(["strong", "weak", "off"]),
)
def test_merge_is_idempotent_and_keeps_bytes_when_nothing_changes(foreign, inner) -> None:
    once = merge_settings(json.dumps(foreign).encode(), SOURCE, keys(inner))
    # Reformat (different indentation): semantically equal, so bytes are kept as they are.
    reformatted = json.dumps(json.loads(once), indent=8).encode()
    assert merge_settings(reformatted, SOURCE, keys(inner)) == reformatted
    assert merge_settings(once, SOURCE, keys(inner)) == once
    data = json.loads(once)
    assert {k: v for k, v in data.items() if k in foreign} == foreign


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "a": 1,\n  "b": \n}', "line 4, column 1"),
        ('{"a": 1,}', "line 1, column 9"),
        ("{\n\n   nope", "line 3, column 4"),
    ],
)
def test_invalid_json_names_file_line_and_column(text: str, where: str) -> None:
    with pytest.raises(InputError) as err:
        merge_settings(text.encode(), SOURCE, keys())
    assert SOURCE in str(err.value) and where in str(err.value)
    assert "invalid JSON" in str(err.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2]", "top level must be a JSON object"),
        ('{"sandbox": true}', "key 'sandbox' must be an object"),
        ('{"permissions": {"deny": "all"}}', "'permissions.deny' must be a list"),
        ('{"sandbox": {"credentials": []}}', "'sandbox.credentials' must be an object"),
        (
            '{"sandbox": {"credentials": {"envVars": {}}}}',
            "'sandbox.credentials.envVars' must be a list",
        ),
    ],
)
def test_wrong_shapes_are_refused(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        merge_settings(text.encode(), SOURCE, keys())


@pytest.mark.parametrize("inner", ["strong", "weak"])
def test_the_restrictive_keys_are_pinned_where_the_inner_sandbox_is_on(inner: str) -> None:
    """Nested user namespaces refused, filesystem isolation on, a host outside the
    allowlist denied (never offered): whatever the file said before."""
    loose = {
        "sandbox": {
            "allowNestedUserNamespaces": True,
            "filesystem": {"disabled": True, "allowWrite": ["/srv"]},
            "network": {"strictAllowlist": False, "allowedDomains": ["mine.example"]},
        }
    }
    sandbox = merged(loose, inner)["sandbox"]
    assert sandbox["allowNestedUserNamespaces"] is False
    assert sandbox["filesystem"] == {"disabled": False, "allowWrite": ["/srv"]}
    assert sandbox["network"]["strictAllowlist"] is True
    # user scope: Claude honours allowManagedDomainsOnly only from managed settings
    assert "allowManagedDomainsOnly" not in sandbox["network"]
    assert sandbox["network"]["allowedDomains"] == ["mine.example"]
    # off: nothing to pin; nothing added
    assert merged({}, "off")["sandbox"] == {"enabled": False}


def test_managed_scope_allows_only_the_operators_domains() -> None:
    existing = {"sandbox": {"network": {"allowedDomains": ["a.example", "*.b.example:8443"]}}}
    domains = ("*.b.example:8443", "c.example")
    data = merged(
        existing, "strong", managed=True, allowed_domains=domains, managed_domains_only=True
    )
    network = data["sandbox"]["network"]
    assert network["allowManagedDomainsOnly"] is True and network["strictAllowlist"] is True
    assert network["allowedDomains"] == ["a.example", "*.b.example:8443", "c.example"]
    # user mode (no listener may bind there): set back, the allowlist left as it is
    user_mode = merged(data, "strong", managed=True, allowed_domains=domains)
    assert user_mode["sandbox"]["network"]["allowManagedDomainsOnly"] is False
    assert "allowManagedDomainsOnly" not in merged({}, "strong", managed=True)["sandbox"]["network"]


def test_required_minimum_version_is_managed_only_and_never_removed() -> None:
    data = merged({}, "strong", managed=True, minimum_version="2.1.323")
    assert data["requiredMinimumVersion"] == "2.1.323"
    assert "requiredMinimumVersion" not in merged({}, "strong", minimum_version="2.1.323")
    # none to write (a release below the floor): what is there stays, Claude refusing it
    assert merged(data, "strong", managed=True)["requiredMinimumVersion"] == "2.1.323"


def test_managed_hooks_only_where_the_inner_sandbox_is_on_in_managed_scope() -> None:
    """A hook runs outside Claude's Bash sandbox: managed settings with the sandbox on
    let only managed hooks run (the operator's own managed hooks are kept); the user's
    file never gets the key (Claude reads it from managed settings only); with the
    sandbox off it is set back to false where present, never added."""
    own = {"hooks": {"Stop": []}, "allowManagedHooksOnly": False}
    data = merged(own, "strong", managed=True)
    assert data["allowManagedHooksOnly"] is True and data["hooks"] == {"Stop": []}
    assert merged({}, "weak", managed=True)["allowManagedHooksOnly"] is True
    assert "allowManagedHooksOnly" not in merged({}, "strong")
    assert merged({"allowManagedHooksOnly": True}, "strong")["allowManagedHooksOnly"] is True
    assert "allowManagedHooksOnly" not in merged({}, "off", managed=True)
    assert merged(data, "off", managed=True)["allowManagedHooksOnly"] is False


def test_the_restrictive_keys_are_owned_for_drift() -> None:
    desired = merge_settings(
        None,
        SOURCE,
        keys("strong", managed=True, allowed_domains=("x.example",), managed_domains_only=True),
    )
    current = json.loads(desired)
    current["sandbox"]["allowNestedUserNamespaces"] = True
    current["sandbox"]["network"]["strictAllowlist"] = False
    current["sandbox"]["network"]["allowedDomains"] = []
    del current["sandbox"]["filesystem"]
    lines = owned_changes(json.dumps(current).encode(), desired)
    assert "sandbox.allowNestedUserNamespaces is true, should be false" in lines
    assert "sandbox.filesystem.disabled is absent, should be false" in lines
    assert "sandbox.network.strictAllowlist is false, should be true" in lines
    assert 'sandbox.network.allowedDomains lacks ["x.example"]' in lines


def test_only_sandbox_mode_writes_managed_domains_only() -> None:
    """The decision the e2e test ``test_user_mode_leaves_managed_domains_only_off_...``
    measures: 2.1.332 fails every Bash command of a user-mode session with the key (its
    own proxy cannot listen under the session's Landlock domain)."""
    assert managed_domains_only(Mode.SANDBOX) is True
    assert managed_domains_only(Mode.USER) is False
    assert managed_domains_only(Mode.UNSAFE) is False
