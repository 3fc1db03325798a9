"""The Claude settings merge: owned keys only, order and foreign keys kept."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wizard.base.errors import InputError
from wizard.configure.settings import CREDENTIAL_DENY_RULES, merge_settings

SOURCE = "/home/a/.claude/settings.json"


def merged(existing: object, inner: str = "strong") -> dict:
    raw = None if existing is None else json.dumps(existing, indent=4).encode()
    return json.loads(merge_settings(raw, SOURCE, inner_sandbox=inner))


def test_new_file_gets_sandbox_and_deny_rules() -> None:
    data = merged(None)
    assert data["sandbox"] == {"enabled": True}
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
    assert data["sandbox"] == {"enableWeakerNestedSandbox": False, "enabled": True}


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
    assert data["sandbox"] == {
        "excludedCommands": ["docker"],
        "enabled": True,
        "enableWeakerNestedSandbox": True,
    }


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
    once = merge_settings(json.dumps(foreign).encode(), SOURCE, inner_sandbox=inner)
    # Reformat (different indentation): semantically equal, so bytes are kept as they are.
    reformatted = json.dumps(json.loads(once), indent=8).encode()
    assert merge_settings(reformatted, SOURCE, inner_sandbox=inner) == reformatted
    assert merge_settings(once, SOURCE, inner_sandbox=inner) == once
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
        merge_settings(text.encode(), SOURCE, inner_sandbox="strong")
    assert SOURCE in str(err.value) and where in str(err.value)
    assert "invalid JSON" in str(err.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2]", "top level must be a JSON object"),
        ('{"sandbox": true}', "key 'sandbox' must be an object"),
        ('{"permissions": {"deny": "all"}}', "'permissions.deny' must be a list"),
    ],
)
def test_wrong_shapes_are_refused(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        merge_settings(text.encode(), SOURCE, inner_sandbox="strong")
