"""What the fake server received: requests, the tool_results in them, and how to tell
the main conversation from Claude's auxiliary requests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Headers whose values are credentials: shown redacted by RecordedRequest.redacted_headers().
SECRET_HEADERS = frozenset({"x-api-key", "authorization", "proxy-authorization", "cookie"})


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as the server received it."""

    method: str
    path: str  # without the query string
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw_body: bytes
    step: int | None = None  # the script step it got (main conversation requests only)

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path == "/v1/messages"

    @property
    def is_main(self) -> bool:
        """A Messages request of the main conversation (it offers the Bash tool)."""
        return self.is_messages and is_main_conversation(self.body)

    def redacted_headers(self) -> dict[str, str]:
        return {k: ("<redacted>" if k in SECRET_HEADERS else v) for k, v in self.headers.items()}

    def summary(self) -> str:
        """One line for failure messages: method, path, model, tools offered."""
        line = f"{self.method} {self.path}"
        if isinstance(self.body, dict):
            model = self.body.get("model")
            tools = tool_names(self.body)
            line += f" model={model} max_tokens={self.body.get('max_tokens')}"
            line += f" stream={self.body.get('stream', False)} tools={len(tools)}"
            if self.step is not None:
                line += f" step={self.step}"
        return line


@dataclass(frozen=True)
class ToolResult:
    """The ``tool_result`` Claude sent back for the ``tool_use`` of one step."""

    step: int
    tool_use_id: str
    text: str  # the text blocks of its content, joined by newlines
    is_error: bool
    content: Any  # as sent: a string or a list of content blocks


def tool_names(body: Any) -> list[str]:
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        return []
    return [t.get("name", "") for t in body["tools"] if isinstance(t, dict)]


def is_main_conversation(body: Any) -> bool:
    """The main conversation's requests offer the Bash tool; auxiliary ones do not."""
    return "Bash" in tool_names(body)


def assistant_turns(body: Any) -> int:
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def content_text(content: Any) -> str:
    """The text of a message or tool_result ``content`` (a string or blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block.get("text", "")
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""
