"""Validate Claude Code settings against SchemaStore's schema (a dated copy in
``tests/data/schemastore``, see its README) plus the keys it lacks that the
releases' binaries read (:data:`BEYOND_SCHEMASTORE`): the errors, as one line each."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).parent / "data" / "schemastore" / "claude-code-settings.json"

# The per-release table of keys sandbox-setup writes that the dated SchemaStore copy
# lacks: (path of object keys, JSON schema of the value, first release whose binary's
# own settings schema has it). Each is read from the binary's zod schema
# (tests/unit/test_settings_schema.py::test_keys_beyond_schemastore_are_in_the_binary
# checks the newest release has each, with the type given here). A release older than
# ``since`` does not know the key and ignores it (2.1.197 ignores unknown keys:
# tests/e2e/test_claude_managed_settings.py shows it).
BEYOND_SCHEMASTORE: tuple[tuple[tuple[str, ...], dict[str, Any], str], ...] = (
    (("sandbox", "allowNestedUserNamespaces"), {"type": "boolean"}, "2.1.304"),
)


@cache
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text())
    for path, value, _since in BEYOND_SCHEMASTORE:
        table = schema
        for key in path[:-1]:
            table = table["properties"][key]
        assert path[-1] not in table["properties"], f"SchemaStore has {path} now: drop it here"
        table["properties"][path[-1]] = value
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def schema_errors(settings: Any) -> list[str]:
    """Every way ``settings`` (parsed JSON) breaks the schema: ``path: message``."""
    found = []
    for error in sorted(validator().iter_errors(settings), key=lambda e: list(e.path)):
        where = ".".join(str(part) for part in error.absolute_path) or "(top level)"
        found.append(f"{where}: {error.message}")
    return found


def assert_valid_settings(path: Path) -> dict[str, Any]:
    """The file at ``path`` is a settings object the schema accepts; returns it."""
    data: dict[str, Any] = json.loads(path.read_text())
    errors = schema_errors(data)
    assert not errors, f"{path} breaks SchemaStore's claude-code-settings.json:\n" + "\n".join(
        errors
    )
    return data
