"""JSON exactly as Claude Code reads it (node's ``JSON.parse``), and written back
without changing a byte of meaning.

Python's :mod:`json` differs from node's parser in ways that break a settings file
on a round trip: it accepts ``NaN``/``Infinity`` (node does not), turns ``1e400``
into ``inf`` and writes it back as ``Infinity`` (node then refuses the whole file,
and Claude Code ignores it), refuses to convert integers of more than 4300
digits, and cannot encode a lone surrogate (``"\\ud800"``, valid JSON to node) as
UTF-8. So:

- :func:`loads` parses with :mod:`json`'s scanner but keeps every number as its
  original token (:class:`JsonNumber`), refuses ``NaN``, ``Infinity`` and
  ``-Infinity`` naming the line and column, and drops a leading BOM (Claude Code
  does too). Of duplicate keys the last one counts, as in node.
- :func:`dumps` writes ``json.dumps(indent=2, ensure_ascii=False)``'s layout,
  each number as its token and each lone surrogate as a ``\\uXXXX`` escape, so the
  text is valid UTF-8 and node reads the same strings back.
- :func:`check_strict` re-parses rendered bytes with the same rules, for a
  writer to call before anything reaches the disk.
"""

from __future__ import annotations

import json
import re
from typing import Any

BOM = "\ufeff"
_NOT_JSON = ("-Infinity", "Infinity", "NaN")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonNumber:
    """A JSON number kept as the exact token it was written as (``1e400``, ``-0.0``,
    ``1.0``, a 5000-digit integer): written back unchanged, never converted."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash((JsonNumber, self.text))

    def __repr__(self) -> str:
        return f"JsonNumber({self.text!r})"


class NotJsonError(ValueError):
    """A token node's ``JSON.parse`` refuses, at ``lineno``:``colno``."""

    def __init__(self, token: str, lineno: int, colno: int) -> None:
        super().__init__(f"{token} is not JSON")
        self.token, self.lineno, self.colno = token, lineno, colno


def _not_json_at(text: str) -> tuple[str, int, int]:
    """Where the first ``NaN``/``Infinity`` outside a string is (json's scanner hands
    the hook only the token, not where it was)."""
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
            continue
        for token in _NOT_JSON:
            if text.startswith(token, index):
                line = text.count("\n", 0, index) + 1
                return token, line, index - (text.rfind("\n", 0, index) + 1) + 1
    return "NaN", 1, 1  # not reached: the scanner found one


def _refuse_constant(token: str) -> Any:
    raise NotJsonError(token, 0, 0)


def loads(text: str) -> Any:
    """Parse ``text`` as node's ``JSON.parse`` does (see the module doc).

    Raises :class:`json.JSONDecodeError`, :class:`NotJsonError` or
    RecursionError (nested too deeply for Python, which node may still read).
    """
    if text.startswith(BOM):
        text = text[1:]
    try:
        return json.loads(
            text,
            parse_int=JsonNumber,
            parse_float=JsonNumber,
            parse_constant=_refuse_constant,
        )
    except NotJsonError:
        raise NotJsonError(*_not_json_at(text)) from None


def _string(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    # JSON syntax is ASCII, so a surrogate in the output is inside a string: write
    # it as the escape node reads back as the same UTF-16 unit.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _dump(value: Any, level: int) -> str:
    if isinstance(value, JsonNumber):
        return value.text
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int | float):
        return json.dumps(value, allow_nan=False)
    inner = "  " * (level + 1)
    if isinstance(value, list):
        if not value:
            return "[]"
        items = ",\n".join(inner + _dump(item, level + 1) for item in value)
        return "[\n" + items + "\n" + "  " * level + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = ",\n".join(
            f"{inner}{_string(key)}: {_dump(item, level + 1)}" for key, item in value.items()
        )
        return "{\n" + items + "\n" + "  " * level + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def dumps(value: Any, *, bom: bool = False) -> str:
    """``value`` as JSON text, two-space indented, ending in a newline."""
    return (BOM if bom else "") + _dump(value, 0) + "\n"


def _as_tokens(value: Any) -> Any:
    """``value`` with plain numbers (what the merge adds, e.g. a proxy port) as the
    tokens :func:`loads` gives back, so the two compare."""
    if isinstance(value, dict):
        return {key: _as_tokens(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_tokens(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return JsonNumber(json.dumps(value))
    return value


def check_strict(data: bytes, expected: Any) -> None:
    """Re-parse rendered bytes (UTF-8, node's rules) and compare with ``expected``;
    raises ValueError when they are not exactly that."""
    if loads(data.decode("utf-8")) != _as_tokens(expected):
        raise ValueError("the rendered JSON does not read back as the merged value")
