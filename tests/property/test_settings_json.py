"""Property tests: an existing Claude settings file is read and written back exactly
as Claude Code's parser (node's ``JSON.parse``) reads it, with node itself as the
oracle (:mod:`tests.property.node_json`).

The documents are generated as JSON *text*, so that they can hold what Python's
own values cannot say: number tokens such as ``1e400``, ``-0.0``, ``1.0`` or a
5000-digit integer, lone surrogate escapes (``"\\ud800"``), duplicate keys, a BOM,
and the tokens node refuses (``NaN``, ``Infinity``). The merge either refuses
exactly the files node refuses (exit 2 naming the file), or writes a file that
node reads, in which every key sandbox-setup does not own is what it was, number
tokens and string escapes included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_setup.base.errors import InputError
from sandbox_setup.checks.model import Report
from sandbox_setup.configure.settings import SandboxKeys, merge_settings, parse_settings
from tests.core_fixtures import snapshot
from tests.property.conftest import (
    CLI_SETTINGS,
    PURE_SETTINGS,
    assert_clean_failure,
    fresh_root,
    run_main,
)
from tests.property.node_json import NodeJson
from tests.tools import require_tool

SOURCE = "/etc/claude-code/managed-settings.json"
OWNED = ("sandbox", "permissions", "requiredMinimumVersion", "allowManagedHooksOnly")


@pytest.fixture(scope="module")
def node() -> Iterator[NodeJson]:
    require_tool("node")
    oracle = NodeJson()
    yield oracle
    oracle.close()


def _char(c: str) -> str:
    if c in '"\\':
        return "\\" + c
    if ord(c) < 0x20:
        return f"\\u{ord(c):04x}"
    return c


NUMBER = r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,4})?"
numbers = st.sampled_from(
    ["1e400", "-1e400", "1E+308", "4.9e-325", "-0.0", "-0", "0", "1.0", "1.50", "0.1e1",
     "1" + "0" * 5000, "-" + "9" * 4400, "123456789012345678901234567890", "2.5e-3"]
) | st.from_regex(NUMBER, fullmatch=True)  # fmt: skip
string_parts = st.one_of(
    st.characters(blacklist_categories=["Cs"]).map(_char),
    st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04x}"),  # lone surrogates
    st.sampled_from(['\\"', "\\\\", "\\/", "\\n", "\\u0000", "\\ud83d\\ude00", "é", "\u2028"]),
)
strings = st.lists(string_parts, max_size=6).map(lambda parts: '"' + "".join(parts) + '"')
keys = strings | st.sampled_from(['"model"', '"env"', '"a"', '"sandbox"', '"permissions"'])
not_json = st.sampled_from(["NaN", "Infinity", "-Infinity", "nan", "+1", "01", "1.", ".5"])
scalars = numbers | strings | st.sampled_from(["true", "false", "null"])


def _obj(pairs: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda v: "[" + ", ".join(v) + "]")
        | st.lists(st.tuples(keys, inner), max_size=3).map(_obj)
    ),
    max_leaves=10,
)
documents = st.builds(
    lambda pairs, bad, bom, space: (
        ("\ufeff" if bom else "")
        + space
        + _obj(pairs + ([('"broken"', bad)] if bad else []))
        + space
    ),
    st.lists(st.tuples(keys, values), max_size=5),
    st.none() | st.none() | st.none() | not_json,
    st.booleans(),
    st.sampled_from(["", "\n", " \t\r\n"]),
).map(lambda text: text.encode("utf-8", "surrogatepass"))


def foreign(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in OWNED}


@PURE_SETTINGS
@given(raw=documents, inner=st.sampled_from(["strong", "weak", "off"]))
def test_the_merge_reads_and_writes_json_as_node_does(
    node: NodeJson, raw: bytes, inner: str
) -> None:
    verdict = node.parse(raw)
    try:
        merged = merge_settings(raw, SOURCE, SandboxKeys(inner))
    except InputError as exc:
        assert SOURCE in str(exc), exc
        if verdict["ok"] and verdict["object"]:
            # The only files node reads that are refused: an owned key of the wrong
            # type, which the merge cannot set without replacing the user's value.
            assert "must be" in str(exc), (raw, exc)
        return
    assert verdict["ok"] and verdict["object"], f"merged a file node refuses: {raw!r}"
    after = node.parse(merged)
    assert after["ok"], f"wrote a file node refuses: {merged!r}: {after}"
    assert after["foreign"] == verdict["foreign"], "a key sandbox-setup does not own changed"
    # Token for token, not just value for value: 1e400 stays 1e400, "\ud800" stays.
    assert foreign(parse_settings(merged, SOURCE)) == foreign(parse_settings(raw, SOURCE))
    assert parse_settings(merged, SOURCE)["sandbox"]["enabled"] is (inner != "off")
    assert merge_settings(merged, SOURCE, SandboxKeys(inner)) == merged


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"model": "opus", "myNote": NaN}', "line 1, column 29"),
        ('{\n  "a": [1,\n    Infinity]\n}', "line 3, column 5"),
        ('{"s": "NaN", "x": -Infinity}', "line 1, column 19"),
    ],
)
def test_not_a_number_is_refused_with_its_position(text: str, where: str) -> None:
    with pytest.raises(InputError) as caught:
        merge_settings(text.encode(), SOURCE, SandboxKeys("strong"))
    assert SOURCE in str(caught.value) and where in str(caught.value), caught.value


@CLI_SETTINGS
@given(raw=documents)
def test_apply_over_settings_node_reads(real_report: Report, node: NodeJson, raw: bytes) -> None:
    with fresh_root() as root:
        settings = root / "etc/claude-code/managed-settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_bytes(raw)
        before = snapshot(root)
        run = run_main(["--headless", "--mode", "user", "--yes", "--root", str(root)])
        verdict = node.parse(raw)
        if run.code == 0:
            assert verdict["ok"], f"applied over a file node refuses: {raw!r}"
            after = node.parse(settings.read_bytes())
            assert after["ok"] and after["foreign"] == verdict["foreign"], after
        else:
            assert_clean_failure(run, before, root)
            assert run.code == 2 and SOURCE in run.err.replace(str(root), ""), run.err
            assert settings.read_bytes() == raw
