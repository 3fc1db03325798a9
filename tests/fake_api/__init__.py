"""A fake Anthropic Messages API on loopback, for driving the real Claude Code.

The server answers ``POST /v1/messages`` (with or without ``?beta=true``) the way
the real API does: server-sent events when the request says ``"stream": true``
(``message_start``, ``content_block_start``, ``content_block_delta``,
``content_block_stop``, ``message_delta``, ``message_stop``; ``content-type:
text/event-stream``, chunked), one JSON message otherwise. What it answers
follows a *script*: a list of steps the test gives, e.g.::

    script = [BashStep("id -u; echo marker-123"), TextStep("done")]
    with FakeMessagesAPI(script) as api:
        run = run_claude_turn(claude, base_url=api.base_url, home=home, cwd=workspace)
    api.assert_conversation_done()
    assert "marker-123" in api.tool_result(0).text

(:func:`tests.claude_run.run_claude_turn` starts the real Claude Code.)

Only requests of the *main conversation* move the script on: those that offer
Claude's ``Bash`` tool. Anything else gets a harmless answer and leaves the
script where it is: Claude Code 2.1.197 probes ``HEAD /`` at start-up, and
unless ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` is set it also asks for a
session title (a Messages request without tools that wants JSON matching a
schema, answered with JSON that matches it). The step a main request gets is
the number of assistant turns already in its ``messages``, so a retried
request gets the same answer again instead of skipping a step.

Every request (any path) is recorded with its headers and JSON body, so tests
can assert what reached the server (the API key, the ``tool_result`` of a
step). :meth:`FakeMessagesAPI.assert_conversation_done` fails loudly when
Claude never reached the server or stopped before the end of the script: a run
that never talked to the fake API cannot pass.

Standard library only: ``http.server.ThreadingHTTPServer`` in a daemon thread.
"""

from __future__ import annotations

from tests.fake_api.records import (
    SECRET_HEADERS,
    RecordedRequest,
    ToolResult,
    content_text,
    is_main_conversation,
)
from tests.fake_api.script import BashStep, Step, TextStep, ToolUseStep
from tests.fake_api.server import FakeMessagesAPI, Pace
from tests.fake_api.wire import DEFAULT_MODEL, schema_example, sse_events

__all__ = [
    "DEFAULT_MODEL",
    "SECRET_HEADERS",
    "BashStep",
    "FakeMessagesAPI",
    "Pace",
    "RecordedRequest",
    "Step",
    "TextStep",
    "ToolResult",
    "ToolUseStep",
    "content_text",
    "is_main_conversation",
    "schema_example",
    "sse_events",
]
