"""Validate Claude Code settings against SchemaStore's schema (a dated copy in
``tests/data/schemastore``, see its README): the errors, as one line each."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).parent / "data" / "schemastore" / "claude-code-settings.json"


@cache
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text())
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
