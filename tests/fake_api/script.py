"""The steps a test scripts the fake model's answers with, and the content each becomes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BashStep:
    """Answer with a ``tool_use`` of Claude's ``Bash`` tool running ``command``.

    ``extra_input`` adds fields to the tool input as the model would send them,
    e.g. ``{"dangerouslyDisableSandbox": True}``; ``text`` is an optional text
    block before the tool call.
    """

    command: str
    description: str | None = "Run the scripted command"
    extra_input: Mapping[str, Any] = field(default_factory=dict)
    text: str | None = None

    def tool_input(self) -> dict[str, Any]:
        data: dict[str, Any] = {"command": self.command}
        if self.description is not None:
            data["description"] = self.description
        data.update(self.extra_input)
        return data


@dataclass(frozen=True)
class ToolUseStep:
    """Answer with a ``tool_use`` of any tool (``name``) with ``input`` as given."""

    name: str
    input: Mapping[str, Any]
    text: str | None = None

    def tool_input(self) -> dict[str, Any]:
        return dict(self.input)


@dataclass(frozen=True)
class TextStep:
    """Answer with a final text message (``stop_reason: end_turn``)."""

    text: str


Step = BashStep | ToolUseStep | TextStep


def build_content(step: Step, tool_use_id: str) -> tuple[list[dict[str, Any]], str]:
    """The content blocks and stop reason of the reply to ``step``."""
    if isinstance(step, TextStep):
        return [{"type": "text", "text": step.text}], "end_turn"
    blocks: list[dict[str, Any]] = []
    if step.text:
        blocks.append({"type": "text", "text": step.text})
    name = "Bash" if isinstance(step, BashStep) else step.name
    blocks.append({"type": "tool_use", "id": tool_use_id, "name": name, "input": step.tool_input()})
    return blocks, "tool_use"
