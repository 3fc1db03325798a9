"""The fake Messages API on its own, spoken to over HTTP as Claude Code speaks to it.

The e2e tests drive it with the real Claude Code; these pin the wire format
(SSE event order and framing, the JSON form), the script's rules (only main
conversation requests advance it, a retry gets the same step) and the records.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fake_api import (
    BashStep,
    FakeMessagesAPI,
    Pace,
    Step,
    TextStep,
    ToolUseStep,
    schema_example,
)

BASH_TOOL = {"name": "Bash", "description": "run", "input_schema": {"type": "object"}}
USER = {"role": "user", "content": [{"type": "text", "text": "run it"}]}


def post(api: FakeMessagesAPI, body: Any, path: str = "/v1/messages?beta=true",
         headers: dict[str, str] | None = None) -> http.client.HTTPResponse:  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    connection.request(
        "POST",
        path,
        body=json.dumps(body),
        headers={"content-type": "application/json", "x-api-key": "sk-test", **(headers or {})},
    )
    return connection.getresponse()


def sse(response: http.client.HTTPResponse) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) pairs of a server-sent event stream, checking its framing."""
    text = response.read().decode()
    assert text.endswith("\n\n")
    events = []
    for frame in text.strip("\n").split("\n\n"):
        lines = frame.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: ")
        event, data = lines[0][len("event: ") :], json.loads(lines[1][len("data: ") :])
        assert data["type"] == event
        events.append((event, data))
    return events


def request_body(messages: list[dict[str, Any]], stream: bool = True, **extra: Any) -> Any:
    return {"model": "claude-test", "max_tokens": 100, "stream": stream,
            "tools": [BASH_TOOL], "messages": messages, **extra}  # fmt: skip


def after_tool_use(api: FakeMessagesAPI, step: int, output: str, is_error: bool = False) -> Any:
    """The messages of the request that carries the tool_result of ``step``."""
    tool_use = {"type": "tool_use", "id": api.tool_use_id(step), "name": "Bash", "input": {}}
    result = {"type": "tool_result", "tool_use_id": api.tool_use_id(step),
              "content": [{"type": "text", "text": output}], "is_error": is_error}  # fmt: skip
    return [
        USER,
        {"role": "assistant", "content": [tool_use]},
        {"role": "user", "content": [result]},
    ]


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    script: list[Step] = [
        BashStep("id -u", extra_input={"dangerouslyDisableSandbox": True}, text="Running it."),
        TextStep("all done"),
    ]
    with FakeMessagesAPI(script) as server:
        yield server


def test_a_bash_step_streams_a_tool_use_in_the_real_event_order(api: FakeMessagesAPI) -> None:
    response = post(api, request_body([USER]))
    assert response.status == 200
    assert response.getheader("content-type", "").startswith("text/event-stream")
    assert response.getheader("transfer-encoding") == "chunked"
    events = sse(response)
    assert [e for e, _ in events] == [
        "message_start", "ping",
        "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    start = events[0][1]["message"]
    assert (
        start["role"] == "assistant" and start["content"] == [] and start["model"] == "claude-test"
    )
    assert events[2][1]["content_block"] == {"type": "text", "text": ""}
    assert events[3][1]["delta"] == {"type": "text_delta", "text": "Running it."}
    block = events[5][1]["content_block"]
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["input"] == {}
    assert block["id"] == api.tool_use_id(0)
    assert events[6][1]["delta"]["type"] == "input_json_delta"
    assert json.loads(events[6][1]["delta"]["partial_json"]) == {
        "command": "id -u",
        "description": "Run the scripted command",
        "dangerouslyDisableSandbox": True,
    }
    assert [d["index"] for e, d in events if e.startswith("content_block")] == [0, 0, 0, 1, 1, 1]
    assert events[8][1]["delta"]["stop_reason"] == "tool_use"


def test_a_paced_answer_streams_in_pieces_and_takes_its_time() -> None:
    # bench/session.py paces the answers as a model's come: the same content, in deltas.
    script: list[Step] = [BashStep("id -u", text="Running it."), TextStep("all done")]
    pace = Pace(first_token=0.2, delta_chars=4, interval=0.01)
    with FakeMessagesAPI(script, pace=pace) as paced:
        start = time.monotonic()
        events = sse(post(paced, request_body([USER])))
        elapsed = time.monotonic() - start
    texts = [
        d["delta"]["text"] for e, d in events if d.get("delta", {}).get("type") == "text_delta"
    ]
    assert texts == ["Runn", "ing ", "it."]
    parts = [d["delta"]["partial_json"] for e, d in events
             if d.get("delta", {}).get("type") == "input_json_delta"]  # fmt: skip
    assert len(parts) > 1 and json.loads("".join(parts))["command"] == "id -u"
    assert elapsed >= 0.2 + 0.01 * (len(texts) + len(parts) - 1)


def test_the_next_request_records_the_tool_result_and_gets_the_final_text(
    api: FakeMessagesAPI,
) -> None:
    sse(post(api, request_body([USER])))
    events = sse(post(api, request_body(after_tool_use(api, 0, "65534\nmarker"))))
    assert events[3][1]["delta"] == {"type": "text_delta", "text": "all done"}
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    result = api.tool_result(0)
    assert (result.text, result.is_error, result.tool_use_id) == (
        "65534\nmarker",
        False,
        api.tool_use_id(0),
    )
    api.assert_conversation_done()


def test_a_retried_request_gets_the_same_step_again(api: FakeMessagesAPI) -> None:
    first = sse(post(api, request_body([USER])))
    again = sse(post(api, request_body([USER])))
    assert first[5][1]["content_block"]["id"] == again[5][1]["content_block"]["id"]
    assert [r.step for r in api.main_requests] == [0, 0]


def test_auxiliary_requests_get_text_and_leave_the_script_alone(api: FakeMessagesAPI) -> None:
    quota = {"model": "claude-haiku", "max_tokens": 1, "messages": [USER]}
    reply = json.loads(post(api, quota).read())
    assert (
        reply["content"] == [{"type": "text", "text": "ok"}] and reply["stop_reason"] == "end_turn"
    )
    title = {"model": "claude-haiku", "max_tokens": 100, "stream": True, "messages": [USER],
             "output_config": {"format": {"type": "json_schema", "schema": {
                 "type": "object", "properties": {"title": {"type": "string"}}}}}}  # fmt: skip
    text = sse(post(api, title))[3][1]["delta"]["text"]
    assert json.loads(text) == {"title": "ok"}
    assert len(api.auxiliary_requests) == 2 and api.main_requests == []
    events = sse(post(api, request_body([USER])))
    assert events[5][1]["content_block"]["name"] == "Bash"  # still step 0


def test_a_non_streaming_request_gets_one_json_message(api: FakeMessagesAPI) -> None:
    response = post(api, request_body([USER], stream=False), path="/v1/messages")
    assert response.getheader("content-type") == "application/json"
    message = json.loads(response.read())
    assert message["type"] == "message" and message["stop_reason"] == "tool_use"
    assert message["content"][1]["input"]["command"] == "id -u"
    assert api.requests[0].query == {}


def test_every_request_is_recorded_with_headers_and_body(api: FakeMessagesAPI) -> None:
    post(api, {"model": "m", "messages": []}, path="/v1/messages/count_tokens?beta=true").read()
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
    connection.request("GET", "/api/oauth/profile")
    assert json.loads(connection.getresponse().read()) == {}
    count, probe = api.requests
    assert count.path == "/v1/messages/count_tokens" and count.query == {"beta": ["true"]}
    assert count.headers["x-api-key"] == "sk-test"
    assert count.redacted_headers()["x-api-key"] == "<redacted>"
    assert count.body == {"model": "m", "messages": []}
    assert (probe.method, probe.path, probe.body) == ("GET", "/api/oauth/profile", None)


def test_past_the_script_main_requests_get_the_final_text() -> None:
    with FakeMessagesAPI([ToolUseStep("Read", {"file_path": "/etc/hostname"})]) as api:
        sse(post(api, request_body([USER])))
        events = sse(post(api, request_body(after_tool_use(api, 0, "host"))))
        assert events[3][1]["delta"]["text"] == api.final_text
        assert api.tool_result(0).text == "host"


def test_assertions_fail_loudly_when_nothing_arrived(api: FakeMessagesAPI) -> None:
    with pytest.raises(AssertionError, match="never sent a main conversation request"):
        api.assert_reached()
    with pytest.raises(AssertionError, match="no tool_result for step 0"):
        api.tool_result(0)
    sse(post(api, request_body([USER])))
    with pytest.raises(AssertionError, match=r"script steps never served: \[1\]"):
        api.assert_conversation_done()


def test_schema_example_fills_what_the_schema_asks_for() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"},
              "b": {"type": "boolean"}, "l": {"type": "array"}}}  # fmt: skip
    assert schema_example(schema) == {"a": "ok", "n": 0, "b": False, "l": []}
