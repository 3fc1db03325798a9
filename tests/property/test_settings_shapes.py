"""Property tests over the shapes an existing Claude settings file can have: any
JSON value (objects whose owned keys have the wrong type, arrays, scalars),
invalid JSON, bytes that are not UTF-8. The merge either succeeds, keeping every
key it does not own, or refuses with a message naming the file; the CLI then
exits 2 with the file left byte for byte as it was."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sandbox_setup.base.errors import InputError
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.settings import OWNED_KEYS, SandboxKeys, merge_settings
from tests.core_fixtures import snapshot
from tests.property.conftest import (
    CLI_SETTINGS,
    PURE_SETTINGS,
    assert_clean_failure,
    assert_valid_setup,
    fresh_root,
    run_main,
)

SOURCE = "/root/.claude/settings.json"
JSON_SPACE = b" \t\n\r"  # the only bytes JSON counts as whitespace
json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
owned_shapes = st.fixed_dictionaries(
    {},
    optional={
        "sandbox": json_values | st.dictionaries(
            st.sampled_from(
                ["enabled", "enableWeakerNestedSandbox", "failIfUnavailable",
                 "allowUnsandboxedCommands", "autoAllowBashIfSandboxed", "bwrapPath", "credentials",
                 "network", "other"]
            ),
            json_values | st.fixed_dictionaries(
                {}, optional={"envVars": json_values, "httpProxyPort": json_values}
            ),
        ),
        "permissions": json_values | st.fixed_dictionaries(
            {}, optional={"deny": json_values | st.lists(st.text(max_size=12), max_size=3)}
        ),
    },
)  # fmt: skip
settings_docs = (
    owned_shapes | st.dictionaries(st.text(max_size=8), json_values, max_size=4) | json_values
)
raw_files = (
    settings_docs.map(lambda v: json.dumps(v, indent=2).encode())
    | st.binary(max_size=40)
    | st.text(max_size=40).map(str.encode)
)


# The top-level keys the merge owns (the rest are the operator's and kept as they were).
OWNED_TOP = {path[0] for path in OWNED_KEYS} | {"sandbox", "permissions"}


def foreign(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in OWNED_TOP}


sandbox_keys = st.builds(
    SandboxKeys,
    inner_sandbox=st.sampled_from(["strong", "weak", "off"]),
    managed=st.booleans(),
    bwrap_path=st.just("/usr/bin/bwrap"),
    socat_path=st.just("/usr/bin/socat"),
    proxy_port=st.none() | st.integers(1, 65535),
)


@PURE_SETTINGS
@given(raw=raw_files, keys=sandbox_keys)
def test_merge_keeps_foreign_keys_or_refuses_by_name(raw: bytes, keys: SandboxKeys) -> None:
    try:
        merged = merge_settings(raw, SOURCE, keys)
    except InputError as exc:
        assert SOURCE in str(exc)
        return
    data = json.loads(merged)
    assert isinstance(data, dict)
    assert data["sandbox"]["enabled"] is keys.on
    try:
        original = json.loads(raw) if raw.strip(JSON_SPACE) else {}
    except ValueError:
        raise AssertionError("invalid JSON was merged instead of refused") from None
    assert foreign(data) == foreign(original)
    assert merge_settings(merged, SOURCE, keys) == merged


@CLI_SETTINGS
@given(raw=raw_files)
def test_apply_over_any_existing_settings_file(real_report: Report, raw: bytes) -> None:
    with fresh_root() as root:
        settings = root / "root/.claude/settings.json"
        settings.parent.mkdir()
        settings.write_bytes(raw)
        before = snapshot(root)
        run = run_main(
            ["--headless", "--mode", "unsafe", "--accept-unsafe-root", "--yes", "--root",
             str(root)]
        )  # fmt: skip
        if run.code == 0:
            assert_valid_setup(root)
            data = json.loads(settings.read_text())
            assert foreign(data) == foreign(json.loads(raw) if raw.strip(JSON_SPACE) else {})
        else:
            assert_clean_failure(run, before, root)
            assert run.code == 2 and SOURCE in run.err, run.err
            assert settings.read_bytes() == raw
