"""The Messages API's response shapes: one JSON message, or its server-sent events."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

DEFAULT_MODEL = "claude-sonnet-4-5-20250929"
AUXILIARY_REPLY = "ok"


def schema_example(schema: Any) -> Any:
    """A small value that satisfies a JSON schema of the kinds Claude asks for.

    Auxiliary requests may ask for structured output (``output_config.format``
    of type ``json_schema``; 2.1.197's session-title request wants
    ``{"title": string}``); answering with valid JSON keeps Claude from logging
    a parse error.
    """
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: schema_example(sub) for name, sub in properties.items()}
    if kind == "string":
        return AUXILIARY_REPLY
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    return None


def auxiliary_text(body: Any) -> str:
    """The text answer to a request outside the main conversation."""
    output = body.get("output_config") if isinstance(body, dict) else None
    wanted = output.get("format") if isinstance(output, dict) else None
    if isinstance(wanted, dict) and wanted.get("type") == "json_schema":
        return json.dumps(schema_example(wanted.get("schema")))
    return AUXILIARY_REPLY


def _message_id() -> str:
    return "msg_fake_" + uuid.uuid4().hex[:24]


def _usage(output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def message_json(content: list[dict[str, Any]], stop_reason: str, model: str) -> dict[str, Any]:
    """A complete (non-streaming) Messages API response."""
    return {
        "id": _message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(5),
    }


def _pieces(text: str, size: int | None) -> list[str]:
    if not size or not text:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_events(
    content: list[dict[str, Any]], stop_reason: str, model: str, delta_chars: int | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of a streamed response, in the real API's order.

    Each block's text (or tool input JSON) comes in one delta, or, with ``delta_chars``,
    in deltas of that many characters, as the real API streams it token by token.
    """
    start = message_json([], stop_reason, model) | {"stop_reason": None, "usage": _usage(1)}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(content):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _pieces(block["text"], delta_chars):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
        else:  # tool_use: the input arrives as partial JSON, the block starts empty
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    },
                },
            )
            for piece in _pieces(json.dumps(block["input"]), delta_chars):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}
